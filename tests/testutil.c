/* SPDX-License-Identifier: MIT */
/* testutil.c: see testutil.h. */
#include "testutil.h"

#include "../abi/rt_quant.h"
#include "conform/nmse.h"
#include "conform/rng.h"

#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static uint64_t rng_state = 0;

void tu_seed(uint64_t seed) { rng_state = cf_rng_init(seed); }

uint64_t tu_next(void) {
    if (rng_state == 0) rng_state = cf_rng_init(0);
    return cf_rng_next(&rng_state);
}

float tu_uniform(float lo, float hi) {
    if (rng_state == 0) rng_state = cf_rng_init(0);
    return cf_rng_uniform(&rng_state, lo, hi);
}

void tu_fill(float *x, size_t n, float lo, float hi) {
    for (size_t i = 0; i < n; i++) x[i] = tu_uniform(lo, hi);
}

void tu_q8_round(const float *x, int64_t K, double *out) {
    for (int64_t b = 0; b < K / 32; b++) {
        rt_block_q8_0_t q;
        float y[32];
        rt_quantize_block_q8_0(x + b * 32, &q);
        rt_dequantize_block_q8_0(&q, y);
        for (int i = 0; i < 32; i++) out[b * 32 + i] = y[i];
    }
}

double tu_nmse_error(const double *ref, const float *got, size_t n) { return cf_nmse(ref, got, n); }

double tu_nmse_error_f32(const float *ref, const float *got, size_t n) {
    double *r = malloc(n * sizeof r[0]);
    if (r == NULL) return INFINITY;
    for (size_t i = 0; i < n; i++) r[i] = ref[i];
    const double e = cf_nmse(r, got, n);
    free(r);
    return e;
}

rt_registry_t *tu_registry_open(const char *plugins, int n_mock) {
    char path[2 * PATH_MAX + 64], count[8];
    snprintf(count, sizeof count, "%d", n_mock);
    setenv("RT_MOCKGPU_COUNT", count, 1);
    setenv("RT_MOCKGPU_MEMORY", "1G", 1);
    setenv("RT_PLUGINS", plugins, 1);
    snprintf(path, sizeof path, "%s/tests/plugins/mockgpu:%s/lib/rt-plugins", tu_build_dir_abs(),
             tu_build_dir_abs());
    const rt_registry_options_t o = {.struct_size = sizeof o, .plugin_path = path};
    rt_registry_t *reg = NULL;
    if (rt_registry_create(&o, &reg) != RT_OK) fail_msg("rt_registry_create: %s", rt_last_error());
    return reg;
}

rt_registry_t *tu_registry_vulkan(const char *id) {
    rt_registry_t *reg = tu_registry_open("cpu,vulkan", 0);
    if (rt_registry_device_by_name(reg, "vulkan0") != NULL) return reg;
    rt_registry_destroy(reg);
    if (tu_plugin_built("vulkan")) fail_msg("%s: rt-plugin-vulkan.so is built but no vulkan0 loaded", id);
    print_message("%s: the Vulkan plugin was not built (no loader or glslc): skipped\n", id);
    skip();
    return NULL;
}

bool tu_plugin_built(const char *name) {
    char path[PATH_MAX + 128];
    snprintf(path, sizeof path, "%s/lib/rt-plugins/rt-plugin-%s.so", tu_build_dir_abs(), name);
    return access(path, F_OK) == 0;
}

double tu_max_abs_error(const double *ref, const float *got, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        const double d = fabs((double)got[i] - ref[i]);
        if (!(d <= m)) m = d; /* NaN propagates */
    }
    return m;
}

const char *tu_build_dir(void) {
    const char *b = getenv("RT_TEST_BUILD_DIR");
    return b != NULL && *b ? b : "build";
}

const char *tu_build_dir_abs(void) {
    static char path[PATH_MAX];
    if (path[0] == 0 && realpath(tu_build_dir(), path) == NULL)
        fail_msg("no build directory %s", tu_build_dir());
    return path;
}

char *tu_model_path(const char *file, char *buf, size_t size) {
    const char *d = getenv("RT_TEST_MODELS_DIR");
    snprintf(buf, size, "%s/%s", d != NULL && *d ? d : "models", file);
    return buf;
}

char *tu_arch_model_path(const char *name, char *buf, size_t size) {
    snprintf(buf, size, "tests/arch/models/random-%s.gguf", name);
    return buf;
}

int tu_n_failed;

void tu_report(const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    print_error("%s\n", msg);
    tu_n_failed++;
}

void *tu_realloc(void *user_data, void *ptr, size_t old_size, size_t new_size) {
    (void)user_data;
    (void)old_size;
    if (new_size == 0) {
        free(ptr);
        return NULL;
    }
    return realloc(ptr, new_size);
}

int tu_tmpdir_make(char *dir, size_t size, const char *prefix) {
    const int n = snprintf(dir, size, "/tmp/%s-XXXXXX", prefix);
    return n > 0 && (size_t)n < size && mkdtemp(dir) != NULL ? 0 : -1;
}

int tu_tmpdir_remove(const char *dir) {
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

int32_t tu_argmax(const float *x, int32_t n) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

char *tu_run_capture(const char *cmd, int *out_status) {
    char line[1024];
    size_t len = 0, cap = 1 << 16;
    char *out = calloc(1, cap);
    FILE *p = popen(cmd, "r");
    assert_true(out != NULL && p != NULL);
    while (fgets(line, sizeof line, p) != NULL) {
        const size_t n = strlen(line);
        while (len + n + 1 > cap) out = realloc(out, cap *= 2);
        assert_non_null(out);
        memcpy(out + len, line, n + 1);
        len += n;
    }
    *out_status = pclose(p);
    return out;
}

char *tu_tool(int *out_code, const char *tool, const char *fmt, ...) {
    char args[2 * PATH_MAX], cmd[4 * PATH_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "RT_PLUGINS=cpu %s/bin/%s %s 2>&1", tu_build_dir_abs(), tool, args);
    int status = -1;
    char *out = tu_run_capture(cmd, &status);
    *out_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return out;
}

void tu_need_file(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) {
        print_message("skipped: no %s\n", path);
        skip();
    }
}

bool tu_pip_model(int index, char *buf, size_t size) {
    int status = 0;
    char *out = tu_run_capture("python3 tests/pip_models.py 2>/dev/null", &status);
    const char *line = out;
    for (int i = 0; line != NULL && i < index; i++) {
        line = strchr(line, '\n');
        if (line != NULL) line++;
    }
    buf[0] = 0;
    if (line != NULL && status == 0) snprintf(buf, size, "%.*s", (int)strcspn(line, "\n"), line);
    free(out);
    if (buf[0] != 0 && access(buf, R_OK) == 0) return true;
    buf[0] = 0;
    return false;
}

char *tu_pip_models(char *buf, size_t size) {
    int status = 0;
    char *out = tu_run_capture("python3 tests/pip_models.py 2>/dev/null", &status);
    buf[0] = 0;
    if (out != NULL && status == 0) {
        for (char *line = strtok(out, "\n"); line != NULL; line = strtok(NULL, "\n"))
            if (line[0] != 0 && strlen(buf) + strlen(line) + 2 < size) {
                strcat(buf, " ");
                strcat(buf, line);
            }
    }
    free(out);
    return buf;
}

const mockgpu_ext_counters_t *tu_mock_counters(void) {
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/tests/plugins/mockgpu/rt-plugin-mockgpu.so", tu_build_dir_abs());
    void *dl = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    assert_non_null(dl);
    rt_plugin_query_fn query = (rt_plugin_query_fn)dlsym(dl, RT_PLUGIN_QUERY_SYMBOL);
    const rt_plugin_t *p = query != NULL ? query(RT_ABI_VERSION, NULL) : NULL;
    const rt_ext_header_t *h = p != NULL ? p->next : NULL;
    while (h != NULL && h->type != MOCKGPU_EXT_COUNTERS) h = h->next;
    dlclose(dl); /* the registry keeps it loaded */
    assert_non_null(h);
    return (const mockgpu_ext_counters_t *)h;
}

static rt_registry_t *registry;

static void destroy_registry(void) {
    rt_registry_destroy(registry);
    registry = NULL;
}

rt_registry_t *tu_registry(void) {
    if (registry == NULL) {
        rt_status_t st = rt_registry_create(NULL, &registry);
        if (st != RT_OK) {
            fprintf(stderr, "rt_registry_create: %s: %s\n", rt_status_name(st), rt_last_error());
            return NULL;
        }
        atexit(destroy_registry);
    }
    return registry;
}

rt_device_t *tu_cpu_device(void) {
    rt_registry_t *reg = tu_registry();
    assert_non_null(reg);
    rt_device_t *dev = rt_registry_device_by_name(reg, "cpu0");
    if (dev == NULL) fail_msg("the CPU plugin's device cpu0 is not loaded");
    return dev;
}

jmp_buf *tu_abort_target;
char tu_abort_message[2048];

void tu_abort_hook(const char *message, void *user_data) {
    (void)user_data;
    snprintf(tu_abort_message, sizeof tu_abort_message, "%s", message);
    if (tu_abort_target != NULL) longjmp(*tu_abort_target, 1);
}

rt_context_t *tu_context(size_t mb, bool no_alloc) {
    rt_context_t *ctx = NULL;
    rt_context_params_t p = {.struct_size = sizeof p, .mem_size = mb << 20, .no_alloc = no_alloc};
    assert_int_equal(rt_context_create(&p, &ctx), RT_OK);
    return ctx;
}

void tu_expect_contains(const char *haystack, const char *needle, const char *check) {
    if (haystack == NULL || strstr(haystack, needle) == NULL)
        fail_msg("%s: no \"%s\" in:\n%s", check, needle, haystack ? haystack : "(null)");
}

const int tu_queue_threads[TU_N_QUEUES] = {0, 1, 3};

int tu_queues_create(rt_device_t *dev, rt_queue_t *out[TU_N_QUEUES]) {
    for (int q = 0; q < TU_N_QUEUES; q++) {
        const rt_queue_options_t opt = {.struct_size = sizeof opt, .n_threads = tu_queue_threads[q]};
        const rt_status_t st = dev != NULL ? rt_queue_create(dev, q == 0 ? NULL : &opt, &out[q]) : RT_ERR_NOT_FOUND;
        if (st != RT_OK) {
            print_error("rt_queue_create(%d threads): %s: %s\n", tu_queue_threads[q], rt_status_name(st),
                        dev != NULL ? rt_last_error() : "no device");
            return -1;
        }
    }
    return 0;
}

void tu_queues_destroy(rt_queue_t *q[TU_N_QUEUES]) {
    for (int k = 0; k < TU_N_QUEUES; k++) {
        rt_queue_destroy(q[k]);
        q[k] = NULL;
    }
}
