/* SPDX-License-Identifier: MIT */
/* test-threads.c: the runtime's concurrent paths, written to be run under
 * ThreadSanitizer (the CI's TSan step builds and runs this program alone)
 * and cheap enough to run in every build. The CPU plugin's thread pool
 * runs many small graphs in a row (wake, barriers, scratch); several
 * application threads drive their own queues on one device at once, and
 * allocate and free buffers meanwhile (the registry's lists); and the
 * scheduler runs graphs across the mock GPUs and the CPU with pipeline
 * copies, asynchronously, from two threads with a scheduler each. Every
 * result is compared with a reference computed here, so a race that
 * changes numbers fails even without TSan.
 *
 *   threads-1  one queue, 4 threads, 40 graphs in a row
 *   threads-2  3 application threads, a queue each, buffers churned
 *   threads-3  2 schedulers in 2 threads, async compute with 2 copies
 *   threads-4  a pool of 4 threads per processor (its barriers must back off
 *              to sleeping), graphs back to back and after pauses */
#include "testutil.h"
#include "conform/rng.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../abi/rt_sched.h"

#define PATH_SIZE 4096
#define N_IN 48   /* y = rms_norm(silu(w x) + x') : w is N_OUT x N_IN */
#define N_OUT 32
#define N_TOK 8

//===--- a small graph and its reference ---===//

/* Data for one thread's graph: testutil's generator has one global state,
 * which threads would share, so each work item draws from its own state of
 * the same generator (conform/rng.h). */
static void fill(float *x, size_t n, uint64_t *state, float lo, float hi) {
    for (size_t i = 0; i < n; i++) x[i] = cf_rng_uniform(state, lo, hi);
}

typedef struct work {
    rt_context_t *ctx;
    rt_tensor_t *w, *x, *y;
    rt_graph_t *g;
    rt_buffer_t *buf;        /* NULL when a scheduler places the tensors */
    float w_data[N_OUT * N_IN], x_data[N_IN * N_TOK];
    double ref[N_OUT * N_TOK];
} work_t;

static void reference(work_t *k) {
    for (int t = 0; t < N_TOK; t++) {
        double row[N_OUT], ss = 0;
        for (int o = 0; o < N_OUT; o++) {
            double acc = 0;
            for (int i = 0; i < N_IN; i++) acc += (double)k->w_data[o * N_IN + i] * k->x_data[t * N_IN + i];
            row[o] = acc / (1 + exp(-acc)) + k->x_data[t * N_IN + o];
            ss += row[o] * row[o];
        }
        const double scale = 1 / sqrt(ss / N_OUT + 1e-6);
        for (int o = 0; o < N_OUT; o++) k->ref[t * N_OUT + o] = row[o] * scale;
    }
}

/* Builds the graph in a no_alloc context; with buft, also places it. */
static void work_init(work_t *k, uint64_t seed, rt_buffer_type_t *buft) {
    memset(k, 0, sizeof *k);
    k->ctx = tu_context(1, true);
    k->w = rt_new_tensor_2d(k->ctx, RT_TYPE_F32, N_IN, N_OUT);
    k->x = rt_new_tensor_2d(k->ctx, RT_TYPE_F32, N_IN, N_TOK);
    rt_set_input(k->x);
    rt_tensor_t *h = rt_silu(k->ctx, rt_mul_mat(k->ctx, k->w, k->x));
    rt_tensor_t *skip = rt_view_2d(k->ctx, k->x, N_OUT, N_TOK, k->x->nb[1], 0);
    k->y = rt_rms_norm(k->ctx, rt_add(k->ctx, h, rt_cont(k->ctx, skip)), 1e-6f);
    rt_set_output(k->y);
    k->g = rt_graph_create(k->ctx, 64);
    rt_graph_build_forward_expand(k->g, k->y);
    seed = cf_rng_init(seed);
    fill(k->w_data, N_OUT * N_IN, &seed, -0.5f, 0.5f);
    fill(k->x_data, N_IN * N_TOK, &seed, -1, 1);
    reference(k);
    if (buft != NULL) assert_int_equal(rt_alloc_ctx_tensors(k->ctx, buft, &k->buf), RT_OK);
}

static void work_set(const work_t *k) {
    assert_int_equal(rt_tensor_set(k->w, k->w_data, 0, sizeof k->w_data), RT_OK);
    assert_int_equal(rt_tensor_set(k->x, k->x_data, 0, sizeof k->x_data), RT_OK);
}

/* Fails (from any thread: cmocka's fail is not thread-safe, so threads
 * return the verdict) when y is off the reference. */
static bool work_matches(const work_t *k) {
    float y[N_OUT * N_TOK];
    if (rt_tensor_get(k->y, y, 0, sizeof y) != RT_OK) return false;
    return tu_max_abs_error(k->ref, y, N_OUT * N_TOK) < 1e-4;
}

static void work_deinit(work_t *k) {
    rt_buffer_free(k->buf);
    rt_context_destroy(k->ctx);
}

static rt_queue_t *queue(rt_device_t *dev, int32_t n_threads) {
    rt_queue_options_t o = {.struct_size = sizeof o, .n_threads = n_threads};
    rt_queue_t *q = NULL;
    assert_int_equal(rt_queue_create(dev, &o, &q), RT_OK);
    return q;
}

//===--- threads-1: the pool, graph after graph ---===//

static void test_pool(void **state) {
    (void)state;
    rt_device_t *cpu = tu_cpu_device();
    work_t k;
    work_init(&k, 1, rt_device_buffer_type(cpu, 0));
    rt_queue_t *q = queue(cpu, 4);
    for (int i = 0; i < 40; i++) {
        work_set(&k);
        assert_int_equal(rt_queue_compute(q, k.g), RT_OK);
        if (!work_matches(&k)) fail_msg("threads-1: graph %d is off", i);
    }
    rt_queue_destroy(q);
    work_deinit(&k);
}

//===--- threads-2: queues of one device from several threads ---===//

typedef struct app_thread {
    rt_device_t *dev;
    uint64_t seed;
    bool ok;
} app_thread_t;

static void *app_main(void *arg) {
    app_thread_t *a = arg;
    rt_buffer_type_t *bt = rt_device_buffer_type(a->dev, 0);
    work_t k;
    work_init(&k, a->seed, bt);
    rt_queue_options_t o = {.struct_size = sizeof o, .n_threads = 2};
    rt_queue_t *q = NULL;
    a->ok = rt_queue_create(a->dev, &o, &q) == RT_OK;
    for (int i = 0; a->ok && i < 12; i++) {
        rt_buffer_t *churn = NULL;
        a->ok = rt_buffer_alloc(bt, 4096, &churn) == RT_OK;
        work_set(&k);
        a->ok = a->ok && rt_queue_compute(q, k.g) == RT_OK && work_matches(&k);
        rt_buffer_free(churn);
    }
    rt_queue_destroy(q);
    work_deinit(&k);
    return NULL;
}

static void test_app_threads(void **state) {
    (void)state;
    enum { N = 3 };
    pthread_t th[N];
    app_thread_t a[N];
    for (int i = 0; i < N; i++) {
        a[i] = (app_thread_t){tu_cpu_device(), 100 + (uint64_t)i, false};
        assert_int_equal(pthread_create(&th[i], NULL, app_main, &a[i]), 0);
    }
    for (int i = 0; i < N; i++) assert_int_equal(pthread_join(th[i], NULL), 0);
    for (int i = 0; i < N; i++)
        if (!a[i].ok) fail_msg("threads-2: application thread %d failed", i);
}

//===--- threads-3: schedulers, async, with pipeline copies ---===//

static rt_registry_t *mock_registry(void) {
    char dir[PATH_SIZE], path[2 * PATH_SIZE + 64];
    assert_non_null(realpath(tu_build_dir(), dir));
    snprintf(path, sizeof path, "%s/tests/plugins/mockgpu:%s/lib/rt-plugins", dir, dir);
    setenv("RT_MOCKGPU_COUNT", "2", 1);
    const rt_registry_options_t o = {.struct_size = sizeof o, .plugin_path = path};
    rt_registry_t *reg = NULL;
    assert_int_equal(rt_registry_create(&o, &reg), RT_OK);
    return reg;
}

typedef struct sched_thread {
    rt_device_t *devs[3];
    uint64_t seed;
    bool ok;
} sched_thread_t;

static void *sched_main(void *arg) {
    sched_thread_t *t = arg;
    const rt_sched_options_t o = {.struct_size = sizeof o, .devices = t->devs, .n_devices = 3,
                                  .graph_size = 64, .n_copies = 2, .n_threads = 2};
    rt_sched_t *s = NULL;
    t->ok = rt_sched_create(&o, &s) == RT_OK;
    for (int i = 0; t->ok && i < 6; i++) {
        work_t k;
        work_init(&k, t->seed + (uint64_t)i, NULL);
        /* the matrix product on mockgpu0, the rest where the scheduler puts it */
        rt_sched_set_tensor_device(s, rt_graph_node(k.g, 0), t->devs[0]);
        t->ok = rt_sched_alloc_graph(s, k.g) == RT_OK;
        if (t->ok) work_set(&k);
        t->ok = t->ok && rt_sched_graph_compute_async(s, k.g) == RT_OK &&
                rt_sched_synchronize(s) == RT_OK && work_matches(&k);
        rt_sched_reset(s);
        work_deinit(&k);
    }
    rt_sched_destroy(s);
    return NULL;
}

static void test_sched_threads(void **state) {
    (void)state;
    rt_registry_t *reg = mock_registry();
    rt_device_t *cpu = rt_registry_device_by_name(reg, "cpu0");
    rt_device_t *g0 = rt_registry_device_by_name(reg, "mockgpu0");
    rt_device_t *g1 = rt_registry_device_by_name(reg, "mockgpu1");
    assert_non_null(cpu);
    assert_non_null(g0);
    assert_non_null(g1);
    sched_thread_t t[2] = {{{g0, g1, cpu}, 200, false}, {{g1, g0, cpu}, 300, false}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&th[i], NULL, sched_main, &t[i]), 0);
    for (int i = 0; i < 2; i++) assert_int_equal(pthread_join(th[i], NULL), 0);
    for (int i = 0; i < 2; i++)
        if (!t[i].ok) fail_msg("threads-3: scheduler thread %d failed", i);
    rt_registry_destroy(reg);
}

//===--- threads-4: more threads than processors ---===//

#define OV_K 192 /* y = w x: big enough that the pool splits it */
#define OV_M 160
#define OV_N 6

static void sleep_ms(long ms) {
    const struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

/* Each thread that cannot get a processor makes the others wait at every
 * barrier: the waiters must yield and sleep rather than spin forever, and
 * a pause between graphs sends the workers to sleep, which the next graph
 * must wake them from. Results are checked graph by graph. */
static void test_oversubscribed(void **state) {
    (void)state;
    const long n_cpus = sysconf(_SC_NPROCESSORS_ONLN);
    const int32_t n_threads = (int32_t)(n_cpus > 0 && n_cpus < 4 ? 4 * n_cpus : 16);
    rt_device_t *cpu = tu_cpu_device();
    rt_context_t *ctx = tu_context(1, true);
    rt_tensor_t *w = rt_new_tensor_2d(ctx, RT_TYPE_F32, OV_K, OV_M);
    rt_tensor_t *x = rt_new_tensor_2d(ctx, RT_TYPE_F32, OV_K, OV_N);
    rt_tensor_t *y = rt_mul_mat(ctx, w, rt_scale(ctx, x, 0.5f));
    rt_set_output(y);
    rt_graph_t *g = rt_graph_create(ctx, 16);
    rt_graph_build_forward_expand(g, y);
    rt_buffer_t *buf = NULL;
    assert_int_equal(rt_alloc_ctx_tensors(ctx, rt_device_buffer_type(cpu, 0), &buf), RT_OK);
    static float wd[OV_K * OV_M], xd[OV_K * OV_N], yd[OV_M * OV_N];
    static double ref[OV_M * OV_N];
    uint64_t seed = cf_rng_init(400);
    fill(wd, OV_K * OV_M, &seed, -1, 1);
    fill(xd, OV_K * OV_N, &seed, -1, 1);
    for (int n = 0; n < OV_N; n++)
        for (int m = 0; m < OV_M; m++) {
            double acc = 0;
            for (int k = 0; k < OV_K; k++) acc += (double)wd[m * OV_K + k] * 0.5 * xd[n * OV_K + k];
            ref[n * OV_M + m] = acc;
        }
    assert_int_equal(rt_tensor_set(w, wd, 0, sizeof wd), RT_OK);
    rt_queue_t *q = queue(cpu, n_threads);
    for (int i = 0; i < 24; i++) {
        assert_int_equal(rt_tensor_set(x, xd, 0, sizeof xd), RT_OK);
        assert_int_equal(rt_queue_compute(q, g), RT_OK);
        assert_int_equal(rt_tensor_get(y, yd, 0, sizeof yd), RT_OK);
        if (tu_max_abs_error(ref, yd, OV_M * OV_N) > 1e-3)
            fail_msg("threads-4: graph %d of %d threads is off", i, (int)n_threads);
        if (i % 8 == 7) sleep_ms(5);
    }
    rt_queue_destroy(q);
    rt_buffer_free(buf);
    rt_context_destroy(ctx);
}

int main(void) {
    /* Only what is tested: the TSan step rebuilds no other plugin, and a
     * plugin left from another sanitizer build cannot be loaded. */
    setenv("RT_PLUGINS", "cpu,mockgpu", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pool),
        cmocka_unit_test(test_app_threads),
        cmocka_unit_test(test_sched_threads),
        cmocka_unit_test(test_oversubscribed),
    };
    return cmocka_run_group_tests_name("threads", tests, NULL, NULL);
}
