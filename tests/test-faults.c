/* SPDX-License-Identifier: MIT */
/* test-faults.c: every allocation failing in turn. An allocator that fails
 * its Nth call once it is armed is handed to the registry (and through it
 * to the plugins, the gallocr and the scheduler), to contexts and to the
 * GGUF reader; each stage below runs with N = 0, 1, 2, ... until it
 * completes without reaching the failure. Every failure must come back as
 * RT_ERR_OUT_OF_MEMORY with a fresh, non-empty rt_last_error(); after the
 * teardown no byte may be left allocated (counted here; LeakSanitizer
 * covers memory that bypasses the allocator in the sanitizer build); and
 * the same stage must then run to the end with the allocator disarmed, so
 * a failure leaves the runtime usable.
 *
 *   faults-1  registry creation (CPU plugin) and an explicit plugin load
 *   faults-2  context, graph, gallocr, queue, compute, results
 *   faults-3  the scheduler over the same graph
 *   faults-4  rt_gguf_open of models/stories260K.gguf
 *   faults-5  sizes past the largest graph (rt-plan --n-layer 100000000) are
 *             an error with a message from rt_graph_overhead_v2, not an abort
 *
 * Runs from the repository root, with only the CPU plugin scanned. */
#include "testutil.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../abi/rt_alloc.h"
#include "../abi/rt_gguf.h"
#include "../abi/rt_sched.h"

#define PATH_SIZE 4096
#define MAX_FAULTS 20000 /* a stage needing more allocations fails the test */
/* The bundled model (models/, or RT_TEST_MODELS_DIR). */
static const char *model_path(void) {
    static char path[1024];
    return tu_model_path("stories260K.gguf", path, sizeof path);
}

//===--- the faulty allocator ---===//

/* Counts only while armed; fails call fail_at (counted from 0) once. Live
 * bytes are counted always, so a block allocated before a failure and
 * never freed shows up. The CPU plugin's workers may allocate: a lock. */
typedef struct faulty {
    pthread_mutex_t lock;
    bool armed;
    long calls;          /* allocations while armed */
    long fail_at;        /* -1: never */
    bool failed;         /* the failure happened */
    long long live;      /* bytes allocated and not freed */
} faulty_t;

static void *faulty_realloc(void *ud, void *ptr, size_t old_size, size_t new_size) {
    faulty_t *f = ud;
    pthread_mutex_lock(&f->lock);
    void *p = NULL;
    if (new_size == 0) {
        free(ptr);
        f->live -= (long long)old_size;
    } else if (f->armed && f->calls++ == f->fail_at) {
        f->failed = true;
    } else if ((p = realloc(ptr, new_size)) != NULL) {
        f->live += (long long)new_size - (long long)old_size;
    }
    pthread_mutex_unlock(&f->lock);
    return p;
}

static faulty_t g_faulty = {.lock = PTHREAD_MUTEX_INITIALIZER, .fail_at = -1};
static const rt_allocator_t g_alloc = {faulty_realloc, &g_faulty};

static void arm(long fail_at) {
    pthread_mutex_lock(&g_faulty.lock);
    g_faulty.armed = fail_at >= 0;
    g_faulty.calls = 0;
    g_faulty.fail_at = fail_at;
    g_faulty.failed = false;
    pthread_mutex_unlock(&g_faulty.lock);
}

static void disarm(void) { arm(-1); }

//===--- checking one failure ---===//

/* rt_last_error() is per thread and kept until the next failure, so a
 * known message is put there first: a failure must replace it. */
static const char *set_sentinel(void) {
    rt_gguf_t *g = NULL;
    rt_gguf_parse(NULL, 1, "fault-sentinel", NULL, &g);
    return rt_last_error();
}

/* st is what a step returned while call fail_at was to fail. */
static bool step_ok(rt_status_t st, const char *sentinel_copy, const char *step, long n) {
    if (st == RT_OK) return true;
    if (st != RT_ERR_OUT_OF_MEMORY || !g_faulty.failed)
        fail_msg("%s: allocation %ld failing gave %s (%s)", step, n, rt_status_name(st),
                 rt_last_error());
    if (rt_last_error()[0] == '\0' || strcmp(rt_last_error(), sentinel_copy) == 0)
        fail_msg("%s: allocation %ld failing gave no message of its own", step, n);
    return false;
}

#define STEP(call)                                                         \
    do {                                                                   \
        char sentinel_[1024];                                              \
        snprintf(sentinel_, sizeof sentinel_, "%s", set_sentinel());       \
        if (!step_ok((call), sentinel_, #call, n)) goto out;               \
    } while (0)

//===--- the stages ---===//

static const char *build_path(char *buf, const char *rel) {
    char dir[PATH_SIZE];
    assert_non_null(realpath(tu_build_dir(), dir));
    const int n = snprintf(buf, PATH_SIZE, "%s/%s", dir, rel);
    if (n < 0 || n >= PATH_SIZE) fail_msg("%s/%s is too long", dir, rel);
    return buf;
}

/* A lookup starts the plugin the name points at and cannot return a
 * status: a device lost to a failure must come with a message of its own. */
static rt_status_t found(const rt_registry_t *reg, const char *name) {
    return rt_registry_device_by_name(reg, name) != NULL ? RT_OK : RT_ERR_OUT_OF_MEMORY;
}

static rt_registry_t *registry_unarmed(void) {
    rt_registry_options_t opt = {.struct_size = sizeof opt, .allocator = &g_alloc};
    rt_registry_t *reg = NULL;
    assert_int_equal(rt_registry_create(&opt, &reg), RT_OK);
    assert_non_null(rt_registry_device_by_name(reg, "cpu0"));
    return reg;
}

/* faults-1. Returns whether it ran to the end. */
static bool stage_registry(long n) {
    char fake[PATH_SIZE];
    rt_registry_options_t opt = {.struct_size = sizeof opt, .allocator = &g_alloc};
    rt_registry_t *reg = NULL;
    bool done = false;
    build_path(fake, "tests/plugins/rt-plugin-fake.so");
    arm(n);
    STEP(rt_registry_create(&opt, &reg));
    STEP(found(reg, "cpu0")); /* starts the CPU plugin: faults-1.1 */
    STEP(rt_registry_load_plugin(reg, fake));
    assert_non_null(rt_registry_device_by_name(reg, "fake0"));
    done = true;
out:
    disarm();
    rt_registry_destroy(reg);
    return done;
}

/* y = soft_max(w x + b): a few nodes of different kinds. */
typedef struct model {
    rt_context_t *ctx;
    rt_tensor_t *w, *x, *b, *y;
    rt_graph_t *g;
} model_t;

static rt_status_t model_build(model_t *m) {
    rt_context_params_t p = {.struct_size = sizeof p, .mem_size = 1 << 20, .no_alloc = true,
                             .allocator = &g_alloc};
    rt_status_t st = rt_context_create(&p, &m->ctx);
    if (st != RT_OK) return st;
    m->w = rt_new_tensor_2d(m->ctx, RT_TYPE_F32, 32, 16);
    m->x = rt_new_tensor_2d(m->ctx, RT_TYPE_F32, 32, 4);
    m->b = rt_new_tensor_1d(m->ctx, RT_TYPE_F32, 16);
    rt_set_input(m->x);
    m->y = rt_soft_max(m->ctx, rt_add(m->ctx, rt_mul_mat(m->ctx, m->w, m->x), m->b));
    rt_set_output(m->y);
    m->g = rt_graph_create(m->ctx, 64);
    rt_graph_build_forward_expand(m->g, m->y);
    return RT_OK;
}

static rt_status_t model_set_inputs(const model_t *m) {
    float w[32 * 16], x[32 * 4], b[16];
    tu_seed(7);
    tu_fill(w, 32 * 16, -1, 1);
    tu_fill(x, 32 * 4, -1, 1);
    tu_fill(b, 16, -1, 1);
    rt_status_t st = rt_tensor_set(m->w, w, 0, sizeof w);
    if (st == RT_OK) st = rt_tensor_set(m->x, x, 0, sizeof x);
    if (st == RT_OK) st = rt_tensor_set(m->b, b, 0, sizeof b);
    return st;
}

/* Each row of a softmax sums to 1: the graph really ran. */
static void model_check(const model_t *m) {
    float y[16 * 4];
    assert_int_equal(rt_tensor_get(m->y, y, 0, sizeof y), RT_OK);
    for (int r = 0; r < 4; r++) {
        double sum = 0;
        for (int i = 0; i < 16; i++) sum += y[r * 16 + i];
        assert_true(sum > 0.999 && sum < 1.001);
    }
}

/* faults-2 */
static bool stage_graph(long n) {
    rt_registry_t *reg = registry_unarmed();
    rt_device_t *cpu = rt_registry_device_by_name(reg, "cpu0");
    model_t m = {0};
    rt_gallocr_t *ga = NULL;
    rt_queue_t *q = NULL;
    bool done = false;
    arm(n);
    STEP(model_build(&m));
    STEP(rt_gallocr_create(rt_device_buffer_type(cpu, 0), &ga));
    STEP(rt_gallocr_alloc_graph(ga, m.g));
    STEP(model_set_inputs(&m));
    STEP(rt_queue_create(cpu, &(rt_queue_options_t){.struct_size = sizeof(rt_queue_options_t),
                                                     .n_threads = 2}, &q));
    STEP(rt_queue_compute(q, m.g));
    model_check(&m);
    done = true;
out:
    disarm();
    rt_queue_destroy(q);
    rt_gallocr_destroy(ga);
    rt_context_destroy(m.ctx);
    rt_registry_destroy(reg);
    return done;
}

/* faults-3 */
static bool stage_sched(long n) {
    rt_registry_t *reg = registry_unarmed();
    rt_device_t *cpu = rt_registry_device_by_name(reg, "cpu0");
    model_t m = {0};
    rt_sched_t *s = NULL;
    bool done = false;
    assert_int_equal(model_build(&m), RT_OK);
    arm(n);
    rt_sched_options_t o = {.struct_size = sizeof o, .devices = &cpu, .n_devices = 1,
                            .graph_size = 64, .n_threads = 2};
    STEP(rt_sched_create(&o, &s));
    STEP(rt_sched_alloc_graph(s, m.g));
    STEP(model_set_inputs(&m));
    STEP(rt_sched_graph_compute(s, m.g));
    model_check(&m);
    done = true;
out:
    disarm();
    rt_sched_destroy(s);
    rt_context_destroy(m.ctx);
    rt_registry_destroy(reg);
    return done;
}

/* faults-4 */
static bool stage_gguf(long n) {
    rt_gguf_options_t opt = {.struct_size = sizeof opt, .allocator = &g_alloc};
    rt_gguf_t *g = NULL;
    const char *arch = NULL;
    bool done = false;
    arm(n);
    STEP(rt_gguf_open(model_path(), &opt, &g));
    assert_int_equal(rt_gguf_get_str(g, "general.architecture", &arch), RT_OK);
    assert_string_equal(arch, "llama");
    assert_true(rt_gguf_n_tensors(g) > 0);
    done = true;
out:
    disarm();
    rt_gguf_destroy(g);
    return done;
}

//===--- the loop ---===//

/* Runs stage with allocation 0, 1, 2, ... failing until it completes
 * without reaching the failure, and after every failure runs it again
 * unarmed. Returns how many allocations the stage makes. */
static long every_failure(bool (*stage)(long), const char *name) {
    long n = 0;
    for (; n < MAX_FAULTS; n++) {
        const bool done = stage(n);
        if (g_faulty.live != 0)
            fail_msg("%s: %lld bytes leaked when allocation %ld failed", name, g_faulty.live, n);
        if (done && !g_faulty.failed) return n;
        /* done after a failure: handled inside (a fallback), results checked. */
        if (!stage(-1)) fail_msg("%s: unusable after allocation %ld failed", name, n);
    }
    fail_msg("%s: more than %d allocations", name, MAX_FAULTS);
    return n;
}

static void test_registry(void **state) {
    (void)state;
    const long n = every_failure(stage_registry, "faults-1");
    print_message("faults-1: %ld allocation failures handled\n", n);
}

static void test_graph(void **state) {
    (void)state;
    const long n = every_failure(stage_graph, "faults-2");
    print_message("faults-2: %ld allocation failures handled\n", n);
}

static void test_sched(void **state) {
    (void)state;
    const long n = every_failure(stage_sched, "faults-3");
    print_message("faults-3: %ld allocation failures handled\n", n);
}

static void test_gguf(void **state) {
    (void)state;
    FILE *f = fopen(model_path(), "rb");
    if (f == NULL) fail_msg("faults-4: %s is missing (models/, bundled in the repository)", model_path());
    fclose(f);
    const long n = every_failure(stage_gguf, "faults-4");
    print_message("faults-4: %ld allocation failures handled\n", n);
}

static void test_graph_sizes(void **state) {
    (void)state;
    const size_t bad[] = {(size_t)100000000 * 16, SIZE_MAX / 2, SIZE_MAX};
    size_t bytes = 1;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(rt_graph_overhead_v2(bad[i], &bytes), RT_ERR_INVALID_ARGUMENT);
        assert_int_equal(bytes, 0);
        assert_non_null(strstr(rt_last_error(), "is above the largest"));
    }
    assert_int_equal(rt_graph_overhead_v2(16, &bytes), RT_OK); /* faults-5.2: the same as before */
    assert_int_equal(bytes, rt_graph_overhead(16));
    assert_int_equal(rt_graph_overhead_v2(16, NULL), RT_ERR_MISUSE);
}

static void quiet(rt_log_level_t level, const char *message, void *user_data) {
    (void)level, (void)message, (void)user_data;
}

int main(void) {
    /* Only the CPU plugin, and the refusal warnings of every failure off. */
    setenv("RT_PLUGINS", "cpu", 1);
    unsetenv("RT_PLUGIN_PATH");
    rt_log_set(quiet, NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_registry),
        cmocka_unit_test(test_graph),
        cmocka_unit_test(test_sched),
        cmocka_unit_test(test_gguf),
        cmocka_unit_test(test_graph_sizes),
    };
    return cmocka_run_group_tests_name("faults", tests, NULL, NULL);
}
