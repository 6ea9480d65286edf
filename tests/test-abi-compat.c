/* SPDX-License-Identifier: MIT */
/* test-abi-compat.c: the compatibility promise of abi/rt_base.h, tested
 * with plugins of other ABI versions than the runtime's. The frozen plugin
 * (tests/abi/oldplugin.c, built from the frozen 1.0 headers) must load and
 * compute; the plugin from the future (tests/abi/newplugin.c, one minor
 * newer, larger structs, unknown extension records) must load with what the
 * runtime does not know ignored; structs smaller than their 1.0 layout and
 * malformed extension chains are refused with a message naming the file,
 * the struct and both sizes. The plugins are in build/tests/plugins/abi. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PATH_SIZE 4096
#define SIZE_THROUGH(type, field) (offsetof(type, field) + sizeof(((type *)0)->field))

//===--- helpers ---===//

/* Absolute path of build/tests/plugins/abi, or of rt-plugin-<name>.so in
 * it when name is not NULL. */
static const char *plugin_path(char *buf, const char *name) {
    char dir[PATH_SIZE];
    assert_non_null(realpath(tu_build_dir(), dir));
    const int n = name != NULL
                      ? snprintf(buf, PATH_SIZE, "%s/tests/plugins/abi/rt-plugin-%s.so", dir, name)
                      : snprintf(buf, PATH_SIZE, "%s/tests/plugins/abi", dir);
    if (n < 0 || n >= PATH_SIZE) fail_msg("the build directory's path is too long");
    return buf;
}

static rt_registry_t *empty_registry(void) {
    rt_registry_options_t opt = {.struct_size = sizeof opt, .no_scan = true};
    rt_registry_t *reg = NULL;
    assert_int_equal(rt_registry_create(&opt, &reg), RT_OK);
    return reg;
}

/* Warnings the runtime logs, for refusals that are logged, not returned. */
static char warnings[8192];

static void keep_warnings(rt_log_level_t level, const char *message, void *user_data) {
    (void)user_data;
    if (level < RT_LOG_WARN) return;
    strncat(warnings, message, sizeof warnings - strlen(warnings) - 2);
    strcat(warnings, "\n");
}

static int capture_warnings(void **state) {
    (void)state;
    warnings[0] = '\0';
    rt_log_set(keep_warnings, NULL);
    return 0;
}

static int release_warnings(void **state) {
    (void)state;
    rt_log_set(NULL, NULL);
    return 0;
}

/* c = (a + b) * a on dev, or a + b when the device has no MUL; compared
 * with the same arithmetic in float, so equality is exact. */
static void compute_on(rt_device_t *dev, bool with_mul) {
    rt_context_t *ctx = tu_context(1, true);
    rt_tensor_t *a = rt_new_tensor_2d(ctx, RT_TYPE_F32, 16, 4);
    rt_tensor_t *b = rt_new_tensor_2d(ctx, RT_TYPE_F32, 16, 4);
    rt_tensor_t *s = rt_add(ctx, a, b);
    rt_tensor_t *c = with_mul ? rt_mul(ctx, s, a) : s;
    rt_graph_t *g = rt_graph_create(ctx, 16);
    rt_graph_build_forward_expand(g, c);
    assert_true(rt_device_supports_op(dev, c));
    rt_buffer_t *buf = NULL;
    assert_int_equal(rt_alloc_ctx_tensors(ctx, rt_device_buffer_type(dev, 0), &buf), RT_OK);
    float xa[64], xb[64], xc[64];
    tu_fill(xa, 64, -2, 2);
    tu_fill(xb, 64, -2, 2);
    assert_int_equal(rt_tensor_set(a, xa, 0, sizeof xa), RT_OK);
    assert_int_equal(rt_tensor_set(b, xb, 0, sizeof xb), RT_OK);
    rt_queue_t *q = NULL;
    assert_int_equal(rt_queue_create(dev, NULL, &q), RT_OK);
    assert_int_equal(rt_queue_compute(q, g), RT_OK);
    assert_int_equal(rt_tensor_get(c, xc, 0, sizeof xc), RT_OK);
    for (int i = 0; i < 64; i++) {
        const float sum = xa[i] + xb[i];
        assert_true(xc[i] == (with_mul ? sum * xa[i] : sum));
    }
    rt_queue_destroy(q);
    rt_buffer_free(buf);
    rt_context_destroy(ctx);
}

/* Loads name into reg and returns its record, which must be loaded. */
static const rt_plugin_info_t *load_ok(rt_registry_t *reg, const char *name) {
    char path[PATH_SIZE];
    if (rt_registry_load_plugin(reg, plugin_path(path, name)) != RT_OK)
        fail_msg("%s: %s", name, rt_last_error());
    const rt_plugin_info_t *p = rt_registry_plugin(reg, rt_registry_plugin_count(reg) - 1);
    assert_int_equal(p->status, RT_OK);
    assert_string_equal(p->message, "");
    return p;
}

//===--- compat-1: the frozen 1.0 plugin in this runtime ---===//

static void test_frozen_plugin(void **state) {
    (void)state;
    rt_registry_t *reg = empty_registry();
    const rt_plugin_info_t *p = load_ok(reg, "frozen");                     /* compat-1.1 */
    assert_string_equal(p->name, "frozen");
    assert_int_equal(p->abi_version, RT_ABI_MAKE_VERSION(1, 0));            /* compat-1.2 */
    assert_int_equal(p->n_devices, 1);
    rt_device_t *dev = rt_registry_device_by_name(reg, "frozen0");
    assert_non_null(dev);                                                   /* compat-1.3 */
    rt_device_props_t props = {.struct_size = sizeof props};
    assert_int_equal(rt_device_get_props(dev, &props), RT_OK);
    assert_string_equal(props.name, "Frozen 1.0 device");
    assert_int_equal(props.kind, RT_DEVICE_KIND_SOFTWARE);
    assert_string_equal(rt_buffer_type_name(rt_device_buffer_type(dev, 0)), "Frozen");
    compute_on(dev, true);                                                  /* compat-1.4 */
    rt_context_t *ctx = tu_context(1, true);                                /* compat-1.5 */
    rt_tensor_t *a = rt_new_tensor_2d(ctx, RT_TYPE_F32, 16, 4);
    rt_tensor_t *set = rt_set_rows(ctx, a, rt_new_tensor_2d(ctx, RT_TYPE_F32, 16, 2),
                                   rt_new_tensor_1d(ctx, RT_TYPE_I32, 2));
    assert_false(rt_device_supports_op(dev, set)); /* an op of 1.1: not asked */
    rt_context_destroy(ctx);
    rt_registry_destroy(reg);
}

//===--- compat-2: a plugin one minor version newer than the runtime ---===//

/* An application newer than the library: its props struct is larger. */
typedef struct newer_app_props {
    rt_device_props_t props;
    uint64_t newer_field;
} newer_app_props_t;

static void test_future_plugin(void **state) {
    (void)state;
    rt_registry_t *reg = empty_registry();
    const rt_plugin_info_t *p = load_ok(reg, "future");                     /* compat-2.1 */
    assert_int_equal(p->abi_version, RT_ABI_VERSION); /* min(max_abi, its own) */
    assert_int_equal(p->n_devices, 1);                                      /* compat-2.2 */
    rt_device_t *dev = rt_registry_device_by_name(reg, "future0");
    assert_non_null(dev);
    assert_string_equal(rt_buffer_type_name(rt_device_buffer_type(dev, 0)), "Future");
    newer_app_props_t big;
    memset(&big, 0x77, sizeof big);
    big.props.struct_size = sizeof big;
    assert_int_equal(rt_device_get_props(dev, &big.props), RT_OK);
    assert_string_equal(big.props.name, "Frozen 1.0 device");               /* compat-2.3 */
    assert_int_equal(big.newer_field, 0);     /* beyond the library's struct: zero */
    /* The async record is larger than the runtime's struct and follows an
     * unknown one: it is read; events are not promised by it. */
    assert_true((big.props.caps & RT_DEVICE_CAP_ASYNC) != 0);               /* compat-2.4 */
    assert_true((big.props.caps & RT_DEVICE_CAP_EVENTS) == 0);
    compute_on(dev, true);                                                  /* compat-2.5 */
    rt_registry_destroy(reg);
}

/* A plugin that answers its own newer version, whatever the core offered,
 * is loaded all the same: the core reads what it knows (rt_plugin.h). */
static void test_eager_plugin(void **state) {
    (void)state;
    rt_registry_t *reg = empty_registry();
    const rt_plugin_info_t *p = load_ok(reg, "eager");                      /* compat-2.6 */
    assert_int_equal(p->abi_version,
                     RT_ABI_MAKE_VERSION(RT_ABI_VERSION_MAJOR, RT_ABI_VERSION_MINOR + 1));
    compute_on(rt_registry_device_by_name(reg, "eager0"), true);
    rt_registry_destroy(reg);
}

//===--- compat-3: what is refused, and how it is said ---===//

static void expect_refused(rt_registry_t *reg, const char *name, const char *needle) {
    char path[PATH_SIZE];
    const rt_status_t st = rt_registry_load_plugin(reg, plugin_path(path, name));
    const rt_plugin_info_t *p = rt_registry_plugin(reg, rt_registry_plugin_count(reg) - 1);
    if (st != RT_ERR_FORMAT || p->status != RT_ERR_FORMAT)
        fail_msg("%s: status %s, record %s (%s)", name, rt_status_name(st),
                 rt_status_name(p->status), p->message);
    tu_expect_contains(p->message, path, name);      /* names the file */
    tu_expect_contains(p->message, needle, name);    /* and what is wrong with it */
    assert_int_equal(p->n_devices, 0);
}

static void test_smaller_than_1_0(void **state) {
    (void)state;
    char want[256];
    rt_registry_t *reg = empty_registry();
    snprintf(want, sizeof want, "rt_plugin_t is %zu bytes, smaller than the 1.0 layout's %zu",
             offsetof(rt_plugin_t, vtable), SIZE_THROUGH(rt_plugin_t, vtable));
    expect_refused(reg, "short_plugin", want);                              /* compat-3.1 */
    snprintf(want, sizeof want, "rt_plugin_vtable_t is %zu bytes, smaller than the 1.0 "
             "layout's %zu", offsetof(rt_plugin_vtable_t, device_get),
             SIZE_THROUGH(rt_plugin_vtable_t, device_get));
    expect_refused(reg, "short_vtable", want);                              /* compat-3.2 */
    expect_refused(reg, "bad_ext", "smaller than its 16-byte header");      /* compat-3.3 */
    expect_refused(reg, "loop_ext", "a loop?");                             /* compat-3.4 */
    assert_int_equal(rt_registry_device_count(reg), 0);
    rt_registry_destroy(reg);
}

/* A device whose table is too small is skipped with a warning; the plugin
 * stays, with no device. */
/* The plugin loads with no device, and says why: the warning, and its
 * record's message (what rt-devices prints as the reason). */
static void expect_device_skipped(const char *name, const char *needle) {
    rt_registry_t *reg = empty_registry();
    warnings[0] = '\0';
    char path[PATH_SIZE];
    assert_int_equal(rt_registry_load_plugin(reg, plugin_path(path, name)), RT_OK);
    const rt_plugin_info_t *p = rt_registry_plugin(reg, rt_registry_plugin_count(reg) - 1);
    assert_int_equal(p->status, RT_OK);
    assert_int_equal(p->n_devices, 0);
    assert_int_equal(rt_registry_device_count(reg), 0);
    tu_expect_contains(warnings, needle, name);
    tu_expect_contains(p->message, needle, name);
    rt_registry_destroy(reg);
}

static void test_device_tables_smaller_than_1_0(void **state) {
    (void)state;
    char want[256];
    snprintf(want, sizeof want, "rt_device_vtable_t is %zu bytes, smaller than the 1.0 "
             "layout's %zu", offsetof(rt_device_vtable_t, next),
             SIZE_THROUGH(rt_device_vtable_t, next));
    expect_device_skipped("short_device", want);                            /* compat-3.5 */
    snprintf(want, sizeof want, "rt_buffer_type_desc_t is %zu bytes, smaller than the 1.0 "
             "layout's %zu", offsetof(rt_buffer_type_desc_t, buffer_vtable),
             SIZE_THROUGH(rt_buffer_type_desc_t, buffer_vtable));
    expect_device_skipped("short_buft", want);                              /* compat-3.6 */
}

/* A struct_size that ends inside a slot: the slot is absent, not half a
 * pointer (a crash fuzz-plugin found). Here get_tensor_async is cut, so the
 * async extension is incomplete and its capability dropped. */
static void test_slot_cut_by_struct_size(void **state) {
    (void)state;
    rt_registry_t *reg = empty_registry();
    load_ok(reg, "half_slot");
    rt_device_t *dev = rt_registry_device_by_name(reg, "half_slot0");
    assert_non_null(dev);                                                   /* compat-3.7 */
    rt_device_props_t props = {.struct_size = sizeof props};
    assert_int_equal(rt_device_get_props(dev, &props), RT_OK);
    assert_true((props.caps & RT_DEVICE_CAP_ASYNC) == 0);
    compute_on(dev, true);
    rt_registry_destroy(reg);
}

//===--- compat-4: old and new side by side, with the CPU plugin ---===//

static void test_side_by_side(void **state) {
    (void)state;
    char path[PATH_SIZE];
    rt_registry_options_t opt = {.struct_size = sizeof opt, .plugin_path = plugin_path(path, NULL)};
    rt_registry_t *reg = NULL;
    assert_int_equal(rt_registry_create(&opt, &reg), RT_OK); /* refusals do not stop the scan */
    assert_non_null(rt_registry_device_by_name(reg, "cpu0"));               /* compat-4.1 */
    rt_device_t *frozen = rt_registry_device_by_name(reg, "frozen0");
    rt_device_t *future = rt_registry_device_by_name(reg, "future0");
    assert_non_null(frozen);
    assert_non_null(future);
    compute_on(frozen, false);                                              /* compat-4.2 */
    compute_on(future, false);
    rt_registry_destroy(reg);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frozen_plugin),
        cmocka_unit_test(test_future_plugin),
        cmocka_unit_test(test_eager_plugin),
        cmocka_unit_test(test_smaller_than_1_0),
        cmocka_unit_test_setup_teardown(test_device_tables_smaller_than_1_0, capture_warnings,
                                        release_warnings),
        cmocka_unit_test(test_slot_cut_by_struct_size),
        cmocka_unit_test_setup_teardown(test_side_by_side, capture_warnings, release_warnings),
    };
    tu_seed(20240601);
    return cmocka_run_group_tests_name("abi-compat", tests, NULL, NULL);
}
