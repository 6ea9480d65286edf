/* SPDX-License-Identifier: MIT */
/* test-abi-negotiate.c: the version rules of abi/rt_plugin.h and rule 8 of
 * abi/rt_base.h, seen from both sides. The shipped CPU plugin and the
 * manual's minimal plugin answer min(max_abi, their own) and then behave
 * as that version (a 1.0 core never sees CPU_Weights or SET_ROWS); the
 * core never hands a plugin an op its version does not define, even in a
 * graph submitted by hand; an application that declares 1.0 (or declares
 * nothing) never sees a weights buffer type; a plugin file that fails does
 * not shadow a good one of the same name later on the path. The release
 * matrix (tests/abi/matrix.sh) does the same with real builds of older
 * releases. */
#include "testutil.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PATH_SIZE 4096
#define V(major, minor) RT_ABI_MAKE_VERSION(major, minor)

//===--- helpers ---===//

static const char *build_path(char *buf, const char *rel) {
    const int n = snprintf(buf, PATH_SIZE, "%s/%s", tu_build_dir_abs(), rel);
    if (n < 0 || n >= PATH_SIZE) fail_msg("the build directory's path is too long");
    return buf;
}

static rt_plugin_query_fn open_query(const char *rel, void **out_dl) {
    char path[PATH_SIZE];
    void *dl = dlopen(build_path(path, rel), RTLD_NOW | RTLD_LOCAL);
    if (dl == NULL) fail_msg("%s: %s", path, dlerror());
    void *sym = dlsym(dl, RT_PLUGIN_QUERY_SYMBOL);
    assert_non_null(sym);
    rt_plugin_query_fn fn;
    memcpy(&fn, &sym, sizeof fn);
    *out_dl = dl;
    return fn;
}

/* The version a plugin answers to a core offering max_abi (0: declined). */
static uint32_t answer(rt_plugin_query_fn query, uint32_t max_abi) {
    const rt_plugin_t *p = query(max_abi, NULL);
    return p != NULL ? p->abi_version : 0;
}

static void expect_negotiation(const char *rel) {
    void *dl = NULL;
    rt_plugin_query_fn q = open_query(rel, &dl);
    assert_int_equal(answer(q, V(1, 0)), V(1, 0));                          /* neg-1.1 */
    assert_int_equal(answer(q, V(1, 1)), V(1, 1));
    assert_int_equal(answer(q, RT_ABI_VERSION), RT_ABI_VERSION);
    assert_int_equal(answer(q, V(1, 0xfff)), RT_ABI_VERSION);               /* neg-1.2 */
    assert_int_equal(answer(q, V(2, 0)), 0);                                /* neg-1.3 */
    assert_int_equal(answer(q, V(0, 9)), 0);
    dlclose(dl);
}

//===--- a host table of an older core ---===//

static void host_log(rt_log_level_t level, const char *fmt, ...) {
    (void)level;
    (void)fmt;
}

static rt_status_t host_set_error(rt_status_t status, const char *fmt, ...) {
    (void)fmt;
    return status;
}

static void *host_buffer_state(const struct rt_buffer *b) {
    (void)b;
    return NULL;
}

static bool host_buffer_is_host(const struct rt_buffer *b) {
    (void)b;
    return true;
}

static const rt_buffer_type_desc_t *host_buffer_type(const struct rt_buffer *b) {
    (void)b;
    return NULL;
}

/* What a core of version abi hands a plugin (its 1.0 table). */
static rt_host_t old_host(uint32_t abi) {
    rt_host_t h = {0};
    h.struct_size = sizeof h;
    h.abi_version = abi;
    h.allocator.realloc = tu_realloc;
    h.log = host_log;
    h.set_error = host_set_error;
    h.type_traits = rt_type_traits;
    h.tensor_nbytes = rt_nbytes;
    h.tensor_is_contiguous = rt_is_contiguous;
    h.row_size = rt_row_size;
    h.buffer_state = host_buffer_state;
    h.buffer_is_host = host_buffer_is_host;
    h.buffer_type = host_buffer_type;
    return h;
}

/* The CPU plugin started by a core of version abi: how many buffer types
 * it offers and whether it claims SET_ROWS. */
static void cpu_as(uint32_t abi, uint32_t *out_bufts, bool *out_set_rows) {
    void *dl = NULL;
    rt_plugin_query_fn q = open_query("lib/rt-plugins/rt-plugin-cpu.so", &dl);
    const rt_host_t host = old_host(abi);
    const rt_plugin_t *p = q(abi, &host);
    assert_non_null(p);
    assert_int_equal(p->abi_version, abi);
    void *plugin = NULL, *device = NULL;
    const rt_device_vtable_t *dvt = NULL;
    assert_int_equal(p->vtable->create(&host, &plugin), RT_OK);
    assert_int_equal(p->vtable->device_get(plugin, 0, &device, &dvt), RT_OK);
    *out_bufts = dvt->buffer_type_count(device);
    for (uint32_t i = 0; i < *out_bufts; i++)
        if (abi < V(1, 1)) assert_int_equal(dvt->buffer_type(device, i)->flags &
                                                RT_BUFT_FLAG_WEIGHTS, 0);
    rt_context_t *ctx = tu_context(1, true);
    rt_tensor_t *a = rt_new_tensor_2d(ctx, RT_TYPE_F32, 16, 4);
    rt_tensor_t *set = rt_set_rows(ctx, a, rt_new_tensor_2d(ctx, RT_TYPE_F32, 16, 2),
                                   rt_new_tensor_1d(ctx, RT_TYPE_I32, 2));
    *out_set_rows = dvt->supports_op(device, set);
    rt_context_destroy(ctx);
    p->vtable->destroy(plugin);
    dlclose(dl);
}

//===--- neg-1: the shipped plugins answer min(max_abi, their own) ---===//

static void test_shipped_plugins_negotiate(void **state) {
    (void)state;
    expect_negotiation("lib/rt-plugins/rt-plugin-cpu.so");
    expect_negotiation("tests/plugins/abi/rt-plugin-mine.so"); /* the manual's example */
    char path[PATH_SIZE];
    if (access(build_path(path, "lib/rt-plugins/rt-plugin-vulkan.so"), F_OK) == 0)
        expect_negotiation("lib/rt-plugins/rt-plugin-vulkan.so");
    if (access(build_path(path, "lib/rt-plugins/rt-plugin-cuda.so"), F_OK) == 0)
        expect_negotiation("lib/rt-plugins/rt-plugin-cuda.so");
}

//===--- neg-2: and then behave as that version ---===//

static void test_cpu_plugin_behaves_as_negotiated(void **state) {
    (void)state;
    uint32_t n_bufts = 0;
    bool set_rows = true;
    cpu_as(V(1, 0), &n_bufts, &set_rows);
    assert_int_equal(n_bufts, 1);               /* no CPU_Weights for a 1.0 core, neg-2.1 */
    assert_false(set_rows);                     /* no op of 1.1, neg-2.2 */
    cpu_as(V(1, 1), &n_bufts, &set_rows);
    assert_true(set_rows);                      /* neg-2.3 */
    const char *env = getenv("RT_CPU_WEIGHTS");
    if (env == NULL || strcmp(env, "0") != 0) assert_int_equal(n_bufts, 2);
    cpu_as(RT_ABI_VERSION, &n_bufts, &set_rows);
    assert_true(set_rows);
}

//===--- neg-3: applications see what the version they declared defines ---===//

static bool has_weights_type(const rt_device_t *dev) {
    for (int32_t i = 0; i < rt_device_buffer_type_count(dev); i++)
        if (rt_buffer_type_is_weights(rt_device_buffer_type(dev, i))) return true;
    return false;
}

static rt_registry_t *registry_for(uint32_t app_abi) {
    rt_registry_t *reg = NULL;
    assert_int_equal(rt_registry_create_v2(NULL, app_abi, &reg), RT_OK);
    return reg;
}

static void test_application_abi(void **state) {
    (void)state;
    const char *env = getenv("RT_CPU_WEIGHTS");
    const bool weights_on = env == NULL || strcmp(env, "0") != 0;
    rt_registry_t *reg = registry_for(V(1, 0));
    assert_int_equal(rt_registry_app_abi_version(reg), V(1, 0));            /* neg-3.1 */
    rt_device_t *cpu = rt_registry_device_by_name(reg, "cpu0");
    assert_non_null(cpu);
    assert_false(has_weights_type(cpu));        /* a 1.0 application never sees it, neg-3.2 */
    assert_int_equal(rt_device_buffer_type_count(cpu), 1);
    rt_registry_destroy(reg);

    reg = NULL; /* the 1.0 entry point: an application that declared nothing */
    assert_int_equal((rt_registry_create)(NULL, &reg), RT_OK);
    assert_int_equal(rt_registry_app_abi_version(reg), V(1, 0));            /* neg-3.3 */
    assert_false(has_weights_type(rt_registry_device_by_name(reg, "cpu0")));
    rt_registry_destroy(reg);

    reg = registry_for(V(1, 1));
    assert_true(has_weights_type(rt_registry_device_by_name(reg, "cpu0")) == weights_on);
    rt_registry_destroy(reg);                                               /* neg-3.4 */

    reg = NULL; /* this file's own declaration, through the rt.h macro */
    assert_int_equal(rt_registry_create(NULL, &reg), RT_OK);
    assert_int_equal(rt_registry_app_abi_version(reg), RT_ABI_VERSION);     /* neg-3.5 */
    rt_registry_destroy(reg);

    reg = registry_for(V(1, 0xfff)); /* newer than the core: served what the core has */
    assert_int_equal(rt_registry_app_abi_version(reg), RT_ABI_VERSION);     /* neg-3.6 */
    rt_registry_destroy(reg);
    reg = NULL;
    assert_int_equal(rt_registry_create_v2(NULL, V(2, 0), &reg), RT_ERR_INCOMPATIBLE);
    assert_null(reg);                                                       /* neg-3.7 */
}

//===--- neg-4: graph_compute never carries an op the plugin cannot know ---===//

static void test_gate_at_graph_compute(void **state) {
    (void)state;
    char path[PATH_SIZE];
    rt_registry_options_t opt = {.struct_size = sizeof opt, .no_scan = true};
    rt_registry_t *reg = NULL;
    assert_int_equal(rt_registry_create(&opt, &reg), RT_OK);
    assert_int_equal(rt_registry_load_plugin(
                         reg, build_path(path, "tests/plugins/abi/rt-plugin-frozen.so")),
                     RT_OK);
    rt_device_t *dev = rt_registry_device_by_name(reg, "frozen0");
    assert_non_null(dev);
    rt_context_t *ctx = tu_context(1, true);
    rt_tensor_t *a = rt_new_tensor_2d(ctx, RT_TYPE_F32, 16, 4);
    rt_tensor_t *b = rt_new_tensor_2d(ctx, RT_TYPE_F32, 16, 2);
    rt_tensor_t *rows = rt_new_tensor_1d(ctx, RT_TYPE_I32, 2);
    rt_tensor_t *set = rt_set_rows(ctx, a, b, rows);
    rt_graph_t *g = rt_graph_create(ctx, 16);
    rt_graph_build_forward_expand(g, set);
    rt_buffer_t *buf = NULL;
    assert_int_equal(rt_alloc_ctx_tensors(ctx, rt_device_buffer_type(dev, 0), &buf), RT_OK);
    rt_queue_t *q = NULL;
    assert_int_equal(rt_queue_create(dev, NULL, &q), RT_OK);
    assert_false(rt_device_supports_op(dev, set));                          /* neg-4.1 */
    assert_int_equal(rt_queue_compute(q, g), RT_ERR_UNSUPPORTED);           /* neg-4.2 */
    if (strstr(rt_last_error(), "SET_ROWS is defined by ABI 1.1, the plugin speaks 1.0") == NULL)
        fail_msg("neg-4.2: %s", rt_last_error());
    rt_queue_destroy(q);
    rt_buffer_free(buf);
    rt_context_destroy(ctx);
    rt_registry_destroy(reg);
}

/* A type of 1.2 is never put in a 1.0 plugin's buffer nor asked about. */
static void test_gate_for_types(void **state) {
    (void)state;
    char path[PATH_SIZE];
    rt_registry_options_t opt = {.struct_size = sizeof opt, .no_scan = true};
    rt_registry_t *reg = NULL;
    assert_int_equal(rt_registry_create(&opt, &reg), RT_OK);
    assert_int_equal(rt_registry_load_plugin(
                         reg, build_path(path, "tests/plugins/abi/rt-plugin-frozen.so")),
                     RT_OK);
    rt_device_t *dev = rt_registry_device_by_name(reg, "frozen0");
    assert_non_null(dev);
    assert_int_equal(rt_type_abi_version(RT_TYPE_Q4_K), V(1, 2));
    rt_context_t *ctx = tu_context(1, true);
    rt_tensor_t *w = rt_new_tensor_2d(ctx, RT_TYPE_Q4_K, 256, 4);
    rt_tensor_t *rows = rt_get_rows(ctx, w, rt_new_tensor_1d(ctx, RT_TYPE_I32, 2));
    assert_false(rt_device_supports_op(dev, rows));                         /* neg-4.3 */
    rt_buffer_t *buf = NULL;
    assert_int_equal(rt_alloc_ctx_tensors(ctx, rt_device_buffer_type(dev, 0), &buf),
                     RT_ERR_UNSUPPORTED);                                    /* neg-4.4 */
    if (strstr(rt_last_error(), "does not define type q4_K") == NULL)
        fail_msg("neg-4.4: %s", rt_last_error());
    assert_null(buf);
    rt_context_destroy(ctx);
    rt_registry_destroy(reg);
}

//===--- neg-5: a file that fails shadows nothing ---===//

static void copy_file(const char *from, const char *to) {
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    assert_non_null(in);
    assert_non_null(out);
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, in)) > 0) assert_int_equal(fwrite(chunk, 1, n, out), n);
    fclose(in);
    assert_int_equal(fclose(out), 0);
}

static void test_failed_plugin_shadows_nothing(void **state) {
    (void)state;
    char tmpl[64], a[PATH_SIZE], b[PATH_SIZE], from[PATH_SIZE];
    char dirs[2 * PATH_SIZE + 2];
    assert_int_equal(tu_tmpdir_make(tmpl, sizeof tmpl, "rt-negotiate"), 0);
    snprintf(a, sizeof a, "%s/a", tmpl);
    snprintf(b, sizeof b, "%s/b", tmpl);
    assert_int_equal(mkdir(a, 0755), 0);
    assert_int_equal(mkdir(b, 0755), 0);
    char fa[PATH_SIZE + 32], fb[PATH_SIZE + 32];
    snprintf(fa, sizeof fa, "%s/rt-plugin-fake.so", a);
    snprintf(fb, sizeof fb, "%s/rt-plugin-fake.so", b);
    copy_file(build_path(from, "tests/plugins/initfail/rt-plugin-initfail.so"), fa);
    copy_file(build_path(from, "tests/plugins/rt-plugin-fake.so"), fb);
    snprintf(dirs, sizeof dirs, "%s:%s", a, b);
    rt_registry_options_t opt = {.struct_size = sizeof opt, .plugin_path = dirs};
    rt_registry_t *reg = NULL;
    assert_int_equal(rt_registry_create(&opt, &reg), RT_OK);
    int loaded = 0, failed = 0;
    for (int32_t i = 0; i < rt_registry_plugin_count(reg); i++) {
        const rt_plugin_info_t *p = rt_registry_plugin(reg, i);
        if (strcmp(p->path, fb) == 0 && p->status == RT_OK) loaded++;
        if (strcmp(p->path, fa) == 0 && p->status != RT_OK) failed++;
        if (strstr(p->message, "shadowed") != NULL) fail_msg("neg-5.1: %s", p->message);
    }
    assert_int_equal(failed, 1);                                            /* neg-5.1 */
    assert_int_equal(loaded, 1);                                            /* neg-5.2 */
    assert_non_null(rt_registry_device_by_name(reg, "fake0"));
    rt_registry_destroy(reg);
    assert_int_equal(tu_tmpdir_remove(tmpl), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shipped_plugins_negotiate),
        cmocka_unit_test(test_cpu_plugin_behaves_as_negotiated),
        cmocka_unit_test(test_application_abi),
        cmocka_unit_test(test_gate_at_graph_compute),
        cmocka_unit_test(test_gate_for_types),
        cmocka_unit_test(test_failed_plugin_shadows_nothing),
    };
    return cmocka_run_group_tests_name("abi-negotiate", tests, NULL, NULL);
}
