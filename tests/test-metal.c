/* SPDX-License-Identifier: MIT */
/* test-metal.c: what of the Metal plugin can be checked without Apple
 * hardware (tests/device/metal.sh runs the rest on a Mac). Linked with the
 * plugin's objects, a Metal of no devices (tests/plugins/metal_none.c) and
 * the Vulkan plugin's SPIR-V table:
 *
 *   metal-1  every SPIR-V module the Vulkan plugin embeds has an MSL twin
 *            of the same name, in the same order, with the entry point and
 *            the binding convention of mtl_impl.h (push words at buffer 4);
 *   metal-2  the plugin starts and reports zero devices on a system without
 *            Metal, called directly and loaded as a plugin file;
 *   metal-3  the op table equals the Vulkan plugin's: supports_op of a
 *            Metal device (its ops view, no Metal needed) and of the Vulkan
 *            device give the same answer for every op, every type of the
 *            node and its sources, over several shapes and layouts. Needs a
 *            Vulkan device (lavapipe in CI): skipped without one. */
#include "testutil.h"

#include "mtl_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//===--- a host table, for calling the plugin directly ---===//

static void host_log(rt_log_level_t level, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("log %d: ", (int)level);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
}

static char host_error[512];

static rt_status_t host_set_error(rt_status_t st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(host_error, sizeof host_error, fmt, ap);
    va_end(ap);
    return st;
}

static const rt_host_t test_host = {
    .struct_size = sizeof(rt_host_t),
    .abi_version = RT_ABI_VERSION,
    .allocator = { .realloc = tu_realloc, .user_data = NULL },
    .log = host_log,
    .set_error = host_set_error,
    .type_traits = rt_type_traits,
    .tensor_nbytes = rt_nbytes,
    .tensor_is_contiguous = rt_is_contiguous,
    .row_size = rt_row_size,
};

//===--- metal-1: one MSL twin per SPIR-V module ---===//

static void test_shaders_translated(void **state) {
    (void)state;
    assert_true(rt_vk_spirv_count > 0);
    assert_int_equal(rt_mtl_msl_count, rt_vk_spirv_count);                      /* metal-1.1 */
    for (size_t i = 0; i < rt_mtl_msl_count; i++) {
        const rt_mtl_msl_t *m = &rt_mtl_msl_table[i];
        assert_string_equal(m->name, rt_vk_spirv_table[i].name);               /* metal-1.2 */
        assert_int_equal(strlen(m->source), m->size);
        assert_non_null(strstr(m->source, "#include <metal_stdlib>"));         /* metal-1.3 */
        const char *sig = strstr(m->source, "kernel void main0(");
        assert_non_null(sig);                                                  /* metal-1.4 */
        const char *end = strchr(sig, '\n');
        assert_non_null(end);
        /* The push words, where ops.c sets them: buffer 4, constant. */
        char want[32];
        snprintf(want, sizeof want, "[[buffer(%d)]]", RT_MTL_PUSH_INDEX);
        const char *push = strstr(sig, want);
        if (!push || push > end) fail_msg("%s: no push constants at buffer %d", m->name,
                                          RT_MTL_PUSH_INDEX);     /* metal-1.5 */
    }
}

//===--- metal-2: zero devices without Metal ---===//

static void test_no_devices_direct(void **state) {
    (void)state;
    const rt_plugin_t *p = rt_plugin_query(RT_ABI_VERSION, &test_host);
    assert_non_null(p);                                                        /* metal-2.1 */
    assert_string_equal(p->name, "metal");
    assert_null(rt_plugin_query(RT_ABI_MAKE_VERSION(RT_ABI_VERSION_MAJOR + 1, 0), &test_host));
    void *plugin = NULL;
    assert_int_equal(p->vtable->create(&test_host, &plugin), RT_OK);           /* metal-2.2 */
    assert_non_null(plugin);
    assert_int_equal(p->vtable->device_count(plugin), 0);                      /* metal-2.3 */
    void *dev = NULL;
    const rt_device_vtable_t *vt = NULL;
    assert_int_equal(p->vtable->device_get(plugin, 0, &dev, &vt), RT_ERR_INVALID_ARGUMENT);
    assert_null(dev);
    p->vtable->destroy(plugin);
}

static void test_no_devices_loaded(void **state) {
    (void)state;
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/plugins/metal/rt-plugin-metal.so", tu_build_dir_abs());
    rt_registry_options_t o = { .struct_size = sizeof o, .no_scan = true };
    rt_registry_t *reg = NULL;
    assert_int_equal(rt_registry_create(&o, &reg), RT_OK);
    assert_int_equal(rt_registry_load_plugin(reg, path), RT_OK);               /* metal-2.4 */
    assert_int_equal(rt_registry_plugin_count(reg), 1);
    const rt_plugin_info_t *info = rt_registry_plugin(reg, 0);
    assert_string_equal(info->name, "metal");
    assert_int_equal(info->status, RT_OK);
    assert_int_equal(info->n_devices, 0);                                      /* metal-2.5 */
    assert_int_equal(rt_registry_device_count(reg), 0);
    rt_registry_destroy(reg);
}

//===--- metal-3: the op table is the Vulkan plugin's ---===//

/* Shapes the nodes and sources take: rows of 256 (whole blocks of every
 * quantised type), broadcast rows, index vectors, a mat-mul's N. */
static const int64_t shapes[][RT_MAX_DIMS] = {
    { 256, 4, 2, 1 }, { 256, 1, 1, 1 }, { 4, 2, 1, 1 }, { 4, 1, 1, 1 }, { 256, 3, 2, 1 },
    { 2, 1, 1, 1 },
};
#define N_SHAPES (sizeof shapes / sizeof shapes[0])

/* A header of type `type` and shape s; contiguous, or with dims 1 and 2
 * swapped (a permuted view) when permuted. */
static bool header_init(rt_tensor_t *t, rt_type_t type, const int64_t s[RT_MAX_DIMS], bool permuted) {
    const rt_type_traits_t *tr = rt_type_traits(type);
    if (!tr || s[0] % tr->block_size != 0) return false;
    memset(t, 0, sizeof *t);
    t->type = type;
    memcpy(t->ne, s, sizeof t->ne);
    t->nb[0] = tr->type_size;
    t->nb[1] = rt_row_size(type, s[0]);
    for (int i = 2; i < RT_MAX_DIMS; i++) t->nb[i] = t->nb[i - 1] * (size_t)s[i - 1];
    if (permuted) {
        const int64_t ne = t->ne[1];
        const size_t nb = t->nb[1];
        t->ne[1] = t->ne[2];
        t->nb[1] = t->nb[2];
        t->ne[2] = ne;
        t->nb[2] = nb;
    }
    snprintf(t->name, sizeof t->name, "t%d", (int)type);
    return true;
}

static rt_device_t *vulkan_device(void) {
    rt_registry_t *reg = tu_registry();
    return reg ? rt_registry_device_by_name(reg, "vulkan0") : NULL;
}

typedef struct op_case {
    rt_tensor_t node, src[3];
} op_case_t;

/* Op params that make each op's case meaningful (ROPE: 64 dims, normal). */
static void op_params_init(rt_tensor_t *n) {
    if (n->op == RT_OP_ROPE) n->op_params[0] = 64;
}

typedef struct op_counts {
    long compared, supported, differ;
} op_counts_t;

static void compare_one(rt_device_t *vk, const rt_mtl_device_t *mtl, op_case_t *c, op_counts_t *k) {
    for (int i = 0; i < 3; i++) c->node.src[i] = c->src[i].type || c->src[i].ne[0] ? &c->src[i] : NULL;
    const bool want = rt_device_supports_op(vk, &c->node);
    const bool got = rt_mtl_supports_op((void *)mtl, &c->node);
    k->compared++;
    k->supported += want;
    if (want != got && k->differ++ < 10)
        tu_report("op %d: node type %d {%lld,%lld} src types %d %d: vulkan %d, metal %d",
                  (int)c->node.op, (int)c->node.type, (long long)c->node.ne[0],
                  (long long)c->node.ne[1], (int)c->src[0].type,
                  c->node.src[1] ? (int)c->src[1].type : -1, want, got);
}

/* Every source-1 and index variant for one node and source 0. */
static void compare_sources(rt_device_t *vk, const rt_mtl_device_t *mtl, op_case_t *c,
                            op_counts_t *k) {
    memset(&c->src[1], 0, sizeof c->src[1]);
    memset(&c->src[2], 0, sizeof c->src[2]);
    compare_one(vk, mtl, c, k); /* no second source */
    for (int tb = 0; tb < RT_TYPE_COUNT; tb++)
        for (size_t sb = 0; sb < N_SHAPES; sb++) {
            if (!header_init(&c->src[1], (rt_type_t)tb, shapes[sb], false)) continue;
            memset(&c->src[2], 0, sizeof c->src[2]);
            compare_one(vk, mtl, c, k);
            if (c->node.op != RT_OP_SET_ROWS) continue;
            for (size_t sc = 0; sc < N_SHAPES; sc++)
                if (header_init(&c->src[2], RT_TYPE_I32, shapes[sc], false)) compare_one(vk, mtl, c, k);
        }
}

static void test_op_table(void **state) {
    (void)state;
    rt_device_t *vk = vulkan_device();
    if (!vk) skip(); /* no Vulkan device here to compare with (CI has lavapipe) */
    rt_mtl_device_t *mtl = calloc(1, sizeof *mtl);
    assert_non_null(mtl);
    rt_mtl_ops_view_init(&mtl->ops, &test_host, (size_t)1 << 32);
    op_counts_t k = { 0, 0, 0 };
    tu_n_failed = 0;
    op_case_t c;
    for (int op = RT_OP_NONE; op < RT_OP_COUNT; op++)
        for (int tn = 0; tn < RT_TYPE_COUNT; tn++)
            for (size_t sn = 0; sn < N_SHAPES; sn++)
                for (int ta = 0; ta < RT_TYPE_COUNT; ta++)
                    for (int perm = 0; perm < 2; perm++) {
                        if (!header_init(&c.node, (rt_type_t)tn, shapes[sn], false)) continue;
                        if (!header_init(&c.src[0], (rt_type_t)ta, shapes[0], perm)) continue;
                        c.node.op = (rt_op_t)op;
                        op_params_init(&c.node);
                        compare_sources(vk, mtl, &c, &k);
                    }
    printf("%ld cases compared, %ld supported by the Vulkan device, %ld differ\n", k.compared,
           k.supported, k.differ);
    free(mtl);
    assert_int_equal(k.differ, 0);                                             /* metal-3.1 */
    /* Not a vacuous comparison: many cases run on both. */
    assert_true(k.supported > 1000);                                           /* metal-3.2 */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shaders_translated),
        cmocka_unit_test(test_no_devices_direct),
        cmocka_unit_test(test_no_devices_loaded),
        cmocka_unit_test(test_op_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
