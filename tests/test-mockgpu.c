/* SPDX-License-Identifier: MIT */
/* test-mockgpu.c: the test plugin mockgpu follows the rules a real plugin
 * must: no state outside the objects it creates, so registries on several
 * threads at once share nothing (run it under ThreadSanitizer too:
 * `ninja check-threads`), and a configuration that names mockgpu as its
 * own CPU plugin is refused with a message instead of recursing until the
 * stack runs out.
 *
 *   mockgpu-1  4 threads, a registry each, graphs on mockgpu0 checked
 *   mockgpu-2  RT_MOCKGPU_CPU_PLUGIN = mockgpu itself: mockgpu refused, cpu0 loads */
#include "testutil.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 256 /* elements of y = x + x */

static char plugin_path[2 * PATH_MAX + 64];

static rt_registry_t *mock_registry(void) {
    const rt_registry_options_t o = {.struct_size = sizeof o, .plugin_path = plugin_path};
    rt_registry_t *reg = NULL;
    return rt_registry_create(&o, &reg) == RT_OK ? reg : NULL;
}

/* 8 graphs of y = x + x on dev; false on any failure or wrong value. */
static bool add_on(rt_device_t *dev, float seed) {
    const rt_context_params_t p = {.struct_size = sizeof p, .mem_size = 1 << 16, .no_alloc = true};
    rt_context_t *ctx = NULL;
    rt_buffer_t *buf = NULL;
    rt_queue_t *q = NULL;
    bool ok = rt_context_create(&p, &ctx) == RT_OK;
    rt_tensor_t *x = ok ? rt_new_tensor_1d(ctx, RT_TYPE_F32, N) : NULL;
    rt_tensor_t *y = ok ? rt_add(ctx, x, x) : NULL;
    rt_graph_t *g = ok ? rt_graph_create(ctx, 8) : NULL;
    if (ok) rt_graph_build_forward_expand(g, y);
    ok = ok && rt_alloc_ctx_tensors(ctx, rt_device_buffer_type(dev, 0), &buf) == RT_OK;
    ok = ok && rt_queue_create(dev, NULL, &q) == RT_OK;
    float in[N], out[N];
    for (int r = 0; ok && r < 8; r++) {
        for (int i = 0; i < N; i++) in[i] = seed + (float)(i + r);
        ok = rt_tensor_set(x, in, 0, sizeof in) == RT_OK && rt_queue_compute(q, g) == RT_OK &&
             rt_tensor_get(y, out, 0, sizeof out) == RT_OK;
        for (int i = 0; ok && i < N; i++) ok = out[i] == 2 * in[i];
    }
    rt_queue_destroy(q);
    rt_buffer_free(buf);
    rt_context_destroy(ctx);
    return ok;
}

//===--- mockgpu-1 ---===//

typedef struct job {
    float seed;
    bool ok;
} job_t;

static void *run_job(void *arg) {
    job_t *j = arg;
    for (int round = 0; round < 3; round++) {
        rt_registry_t *reg = mock_registry();
        rt_device_t *dev = reg ? rt_registry_device_by_name(reg, "mockgpu0") : NULL;
        j->ok = dev != NULL && add_on(dev, j->seed);
        rt_registry_destroy(reg);
        if (!j->ok) break;
    }
    return NULL;
}

static void test_registry_per_thread(void **state) {
    (void)state;
    enum { T = 4 };
    pthread_t th[T];
    job_t jobs[T];
    /* The machine's topology is loaded once per process, by the first
     * queue: loaded here, so that hwloc (whose libudev races with itself
     * when two threads load at once) is not what this test measures. */
    job_t warm = {0, false};
    run_job(&warm);
    if (!warm.ok) fail_msg("mockgpu-1: one thread alone: %s", rt_last_error());
    for (int i = 0; i < T; i++) {
        jobs[i] = (job_t){(float)(100 * i), false};
        assert_int_equal(pthread_create(&th[i], NULL, run_job, &jobs[i]), 0);
    }
    for (int i = 0; i < T; i++) assert_int_equal(pthread_join(th[i], NULL), 0);
    for (int i = 0; i < T; i++)
        if (!jobs[i].ok) fail_msg("mockgpu-1: thread %d: %s", i, rt_last_error());
}

//===--- mockgpu-2 ---===//

static void test_self_as_cpu_plugin(void **state) {
    (void)state;
    char self[PATH_MAX + 64];
    snprintf(self, sizeof self, "%s/tests/plugins/mockgpu/rt-plugin-mockgpu.so", tu_build_dir_abs());
    setenv("RT_MOCKGPU_CPU_PLUGIN", self, 1);
    rt_registry_t *reg = mock_registry();
    assert_non_null(reg);
    assert_non_null(rt_registry_device_by_name(reg, "cpu0"));
    assert_null(rt_registry_device_by_name(reg, "mockgpu0")); /* starts it: the variable is read */
    unsetenv("RT_MOCKGPU_CPU_PLUGIN");
    bool said = false;
    for (int32_t i = 0; i < rt_registry_plugin_count(reg); i++) {
        const rt_plugin_info_t *p = rt_registry_plugin(reg, i);
        said = said || (p->status != RT_OK && strstr(p->message, "is mockgpu itself") != NULL);
    }
    rt_registry_destroy(reg);
    if (!said) fail_msg("mockgpu-2: no plugin record says why mockgpu was refused");
}

int main(void) {
    snprintf(plugin_path, sizeof plugin_path, "%s/tests/plugins/mockgpu:%s/lib/rt-plugins",
             tu_build_dir_abs(), tu_build_dir_abs());
    setenv("RT_PLUGINS", "cpu,mockgpu", 1);
    setenv("RT_MOCKGPU_COUNT", "2", 1);
    unsetenv("RT_PLUGIN_PATH");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_registry_per_thread),
        cmocka_unit_test(test_self_as_cpu_plugin),
    };
    return cmocka_run_group_tests_name("mockgpu", tests, NULL, NULL);
}
