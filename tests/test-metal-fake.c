/* SPDX-License-Identifier: MIT */
/* test-metal-fake.c: the Metal plugin's host code run on Linux, against a
 * stand-in for Metal.framework (tests/plugins/metal_fake.c: buffers in host
 * memory, blits run at commit, dispatches counted but no kernel run). The
 * plugin is loaded as a file through the registry, once as an Apple
 * silicon device (unified memory: Shared buffers by default) and once as a
 * discrete one (Private by default, every transfer a blit):
 *
 *   metal-fake-1  the device: name, kind, capabilities, both buffer types,
 *                 every embedded shader compiled at start
 *   metal-fake-2  transfers: whole and partial set/get at odd offsets,
 *                 memset and clear, in both buffer types
 *   metal-fake-3  a graph: one dispatch with the Vulkan plugin's threadgroup,
 *                 function constants (op, binding types), push words at
 *                 buffer 4 and bindings at 16-byte aligned offsets
 *   metal-fake-4  host memory wrapped without a copy (unified only)
 *   metal-fake-5  no Metal object leaks: after the registry goes (and the
 *                 autoreleased objects with it) none is left alive
 *   metal-fake-6  the async extension, as the scheduler calls it: transfers
 *                 in the queue's order, a copy between two tensors of the
 *                 device, events recorded, waited for on the GPU and by the
 *                 host, and recorded again
 *   metal-fake-7  FLASH_ATTN is not claimed (its shader never ran on
 *                 Metal), while an ADD beside it is
 *
 * What this cannot check: that Apple's Metal answers as the stand-in does
 * (tests/device/metal.sh does, on a Mac). */
#include "testutil.h"

#include "plugins/metal_fake.h"

#include "../runtime/device_impl.h" /* the adopted async table and plugin handles */
#include "../runtime/queue_impl.h"
#include "../runtime/registry_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct fixture {
    bool unified;
    rt_registry_t *reg;
    rt_device_t *dev;
} fixture_t;

static int fixture_setup(void **state) {
    fixture_t *f = *state;
    rt_fake_metal_set_unified(f->unified);
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/plugins/metalfake/rt-plugin-metal.so", tu_build_dir_abs());
    rt_registry_options_t o = { .struct_size = sizeof o, .no_scan = true };
    if (rt_registry_create(&o, &f->reg) != RT_OK) return -1;
    if (rt_registry_load_plugin(f->reg, path) != RT_OK) {
        printf("cannot load %s: %s\n", path, rt_last_error());
        return -1;
    }
    f->dev = rt_registry_device_by_name(f->reg, "metal0");
    return f->dev ? 0 : -1;
}

static int fixture_teardown(void **state) {
    fixture_t *f = *state;
    rt_registry_destroy(f->reg);
    f->reg = NULL;
    f->dev = NULL;
    rt_fake_metal_drain();
    return 0;
}

static rt_context_t *no_alloc_context(void) {
    rt_context_params_t p = { .struct_size = sizeof p, .no_alloc = true,
                              .mem_size = 16 * rt_tensor_overhead() + rt_graph_overhead(16) };
    rt_context_t *ctx = NULL;
    assert_int_equal(rt_context_create(&p, &ctx), RT_OK);
    return ctx;
}

//===--- metal-fake-1: the device ---===//

static void test_device(void **state) {
    fixture_t *f = *state;
    rt_device_props_t p = { .struct_size = sizeof p };
    assert_int_equal(rt_device_get_props(f->dev, &p), RT_OK);
    assert_string_equal(p.name, "Fake Metal GPU");                            /* metal-fake-1.1 */
    assert_int_equal(p.kind, f->unified ? RT_DEVICE_KIND_IGPU : RT_DEVICE_KIND_GPU);
    assert_true(p.caps & RT_DEVICE_CAP_ASYNC && p.caps & RT_DEVICE_CAP_EVENTS);
    assert_int_equal(!!(p.caps & RT_DEVICE_CAP_BUFFER_FROM_HOST_PTR), f->unified);
    assert_int_equal(p.memory_total, (uint64_t)1 << 30);                      /* metal-fake-1.2 */
    assert_int_equal(rt_device_buffer_type_count(f->dev), 2);                  /* metal-fake-1.3 */
    rt_buffer_type_t *t0 = rt_device_buffer_type(f->dev, 0), *t1 = rt_device_buffer_type(f->dev, 1);
    assert_string_equal(rt_buffer_type_name(t0), "Metal0");
    assert_string_equal(rt_buffer_type_name(t1), f->unified ? "Metal0_Private" : "Metal0_Shared");
    assert_int_equal(rt_buffer_type_is_host(t0), f->unified);
    assert_int_equal(rt_buffer_type_is_host(t1), !f->unified);
    assert_true(rt_fake_metal_stats()->libraries >= 10);                        /* metal-fake-1.4 */
}

//===--- metal-fake-2: transfers ---===//

static void check_transfers(rt_buffer_type_t *buft) {
    rt_context_t *ctx = no_alloc_context();
    rt_tensor_t *t = rt_new_tensor_1d(ctx, RT_TYPE_F32, 1000);
    rt_buffer_t *buf = NULL;
    assert_int_equal(rt_alloc_ctx_tensors(ctx, buft, &buf), RT_OK);
    float in[1000], out[1000];
    tu_seed(20);
    tu_fill(in, 1000, -1.0f, 1.0f);
    assert_int_equal(rt_tensor_set(t, in, 0, sizeof in), RT_OK);
    assert_int_equal(rt_tensor_get(t, out, 0, sizeof out), RT_OK);
    assert_memory_equal(in, out, sizeof in);                                  /* metal-fake-2.1 */
    /* Part of it, at an odd offset. */
    const uint8_t part[13] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13 };
    uint8_t back[13];
    assert_int_equal(rt_tensor_set(t, part, 101, sizeof part), RT_OK);
    assert_int_equal(rt_tensor_get(t, back, 101, sizeof back), RT_OK);
    assert_memory_equal(part, back, sizeof part);                             /* metal-fake-2.2 */
    assert_int_equal(rt_tensor_get(t, out, 0, 100), RT_OK);
    assert_memory_equal(in, out, 100);                                        /* the bytes before */
    assert_int_equal(rt_tensor_memset(t, 0xab, 7, 9), RT_OK);
    assert_int_equal(rt_tensor_get(t, back, 6, 11), RT_OK);
    for (int i = 1; i < 10; i++) assert_int_equal(back[i], 0xab);             /* metal-fake-2.3 */
    assert_int_not_equal(back[10], 0xab);
    assert_int_equal(rt_buffer_clear(buf, 0x5a), RT_OK);
    assert_int_equal(rt_tensor_get(t, back, 500, 13), RT_OK);
    for (int i = 0; i < 13; i++) assert_int_equal(back[i], 0x5a);             /* metal-fake-2.4 */
    rt_buffer_free(buf);
    rt_context_destroy(ctx);
}

static void test_transfers(void **state) {
    fixture_t *f = *state;
    const long blits = rt_fake_metal_stats()->blits;
    check_transfers(rt_device_buffer_type(f->dev, 0));
    check_transfers(rt_device_buffer_type(f->dev, 1));
    assert_true(rt_fake_metal_stats()->blits > blits); /* the Private type went through blits */
}

//===--- metal-fake-3: a graph ---===//

static void test_graph(void **state) {
    fixture_t *f = *state;
    rt_context_t *ctx = no_alloc_context();
    rt_tensor_t *pad = rt_new_tensor_1d(ctx, RT_TYPE_F16, 3); /* b and c off 16-byte lines */
    rt_tensor_t *a = rt_new_tensor_2d(ctx, RT_TYPE_F16, 300, 3);
    rt_tensor_t *b = rt_new_tensor_2d(ctx, RT_TYPE_F16, 300, 1);
    rt_tensor_t *c = rt_add(ctx, a, b);
    (void)pad;
    rt_graph_t *g = rt_graph_create(ctx, 16);
    rt_graph_build_forward_expand(g, c);
    rt_buffer_t *buf = NULL;
    assert_int_equal(rt_alloc_ctx_tensors(ctx, rt_device_buffer_type(f->dev, 0), &buf), RT_OK);
    rt_queue_t *q = NULL;
    assert_int_equal(rt_queue_create(f->dev, NULL, &q), RT_OK);
    rt_fake_metal_stats_t *s = rt_fake_metal_stats();
    const long dispatches = s->dispatches, pipelines = s->pipelines;
    assert_int_equal(rt_queue_compute(q, g), RT_OK);
    assert_int_equal(s->dispatches, dispatches + 1);                          /* metal-fake-3.1 */
    assert_int_equal(s->threads, 128);                                        /* the Vulkan plugin's */
    assert_int_equal(s->groups, (900 + 127) / 128);
    assert_int_equal(s->spec[0], 128);                                        /* metal-fake-3.2 */
    assert_int_equal(s->spec[1], 0);                                          /* ADD */
    assert_int_equal(s->spec[2], RT_TYPE_F16);
    assert_int_equal(s->spec[3], RT_TYPE_F16);
    assert_int_equal(s->spec[4], 0);                                          /* no third source */
    assert_int_equal(s->spec[5], RT_TYPE_F16);
    assert_int_equal(s->push_bytes, 128);                                     /* metal-fake-3.3 */
    const uintptr_t base = (uintptr_t)rt_buffer_base(buf);
    const rt_tensor_t *bound[4] = { a, b, c, c };
    for (int i = 0; i < 4; i++) {
        const size_t off = (size_t)((uintptr_t)bound[i]->data - base);
        assert_int_equal(s->offsets[i] % 16, 0);                              /* metal-fake-3.4 */
        assert_int_equal(s->offsets[i] + s->push[i], off);
    }
    assert_ptr_equal(s->buffers[0], s->buffers[3]);
    /* Again: the pipeline is cached. */
    assert_int_equal(rt_queue_compute(q, g), RT_OK);
    assert_int_equal(s->pipelines, pipelines + 1);                            /* metal-fake-3.5 */
    rt_queue_destroy(q);
    rt_buffer_free(buf);
    rt_context_destroy(ctx);
}

//===--- metal-fake-7: ops left to other plugins ---===//

static void test_unclaimed(void **state) {
    fixture_t *f = *state;
    rt_context_t *ctx = no_alloc_context();
    rt_tensor_t *q = rt_new_tensor_3d(ctx, RT_TYPE_F32, 64, 1, 4);
    rt_tensor_t *k = rt_new_tensor_3d(ctx, RT_TYPE_F16, 64, 32, 2);
    rt_tensor_t *v = rt_new_tensor_3d(ctx, RT_TYPE_F16, 64, 32, 2);
    rt_tensor_t *m = rt_new_tensor_2d(ctx, RT_TYPE_F16, 32, 1);
    rt_tensor_t *fa = rt_flash_attn(ctx, q, k, v, m, 0.125f, 0.0f);
    rt_tensor_t *a = rt_new_tensor_2d(ctx, RT_TYPE_F32, 64, 4);
    assert_true(rt_device_supports_op(f->dev, rt_add(ctx, a, a)));
    assert_false(rt_device_supports_op(f->dev, fa)); /* metal-fake-7 */
    rt_context_destroy(ctx);
}

//===--- metal-fake-4: host memory without a copy ---===//

static void test_host_ptr(void **state) {
    fixture_t *f = *state;
    unsigned char *mem = aligned_alloc(4096, 3 * 4096);
    assert_non_null(mem);
    memset(mem, 0, 3 * 4096);
    rt_buffer_t *buf = NULL;
    const rt_status_t st = rt_device_buffer_from_host_ptr(f->dev, mem + 100, 5000, &buf);
    if (!f->unified) {
        assert_int_equal(st, RT_ERR_UNSUPPORTED);                            /* metal-fake-4.1 */
        free(mem);
        return;
    }
    assert_int_equal(st, RT_OK);
    assert_ptr_equal(rt_buffer_base(buf), mem + 100);                         /* metal-fake-4.2 */
    rt_context_t *ctx = no_alloc_context();
    rt_tensor_t *t = rt_new_tensor_1d(ctx, RT_TYPE_I32, 1000);
    assert_int_equal(rt_tensor_alloc(buf, t, mem + 100), RT_OK);
    const int32_t v[3] = { 7, -8, 9 };
    assert_int_equal(rt_tensor_set(t, v, 40, sizeof v), RT_OK);
    assert_memory_equal(mem + 140, v, sizeof v);                              /* metal-fake-4.3 */
    rt_buffer_free(buf);
    rt_context_destroy(ctx);
    free(mem);
}

//===--- metal-fake-6: the async extension ---===//

/* Calls the table the core adopted, with the plugin's handles, as the
 * scheduler does (the extension has no public entry points). */
static void test_async(void **state) {
    fixture_t *f = *state;
    const rt_device_ext_async_t *as = &f->dev->async;
    assert_int_equal(as->header.type, RT_EXT_DEVICE_ASYNC);                   /* metal-fake-6.1 */
    rt_queue_t *q = NULL;
    assert_int_equal(rt_queue_create(f->dev, NULL, &q), RT_OK);
    for (int k = 0; k < 2; k++) { /* both buffer types */
        rt_context_t *ctx = no_alloc_context();
        rt_tensor_t *x = rt_new_tensor_1d(ctx, RT_TYPE_F32, 300);
        rt_tensor_t *y = rt_new_tensor_1d(ctx, RT_TYPE_F32, 300);
        rt_buffer_t *buf = NULL;
        assert_int_equal(rt_alloc_ctx_tensors(ctx, rt_device_buffer_type(f->dev, k), &buf), RT_OK);
        float in[300], out[300];
        tu_seed(60 + (uint64_t)k);
        tu_fill(in, 300, -2.0f, 2.0f);
        assert_int_equal(as->set_tensor_async(q->handle, x, in, 0, sizeof in), RT_OK);
        assert_int_equal(as->get_tensor_async(q->handle, x, out, 0, sizeof out), RT_OK);
        assert_memory_equal(in, out, sizeof in);                              /* metal-fake-6.2 */
        assert_int_equal(as->cpy_tensor_async(q->handle, q->handle, x, y), RT_OK);
        assert_int_equal(rt_queue_synchronize(q), RT_OK);
        assert_int_equal(rt_tensor_get(y, out, 0, sizeof out), RT_OK);
        assert_memory_equal(in, out, sizeof in);                              /* metal-fake-6.3 */
        rt_buffer_free(buf);
        rt_context_destroy(ctx);
    }
    void *ev = NULL;
    assert_int_equal(as->event_create(f->dev->handle, &ev), RT_OK);
    assert_int_equal(as->event_synchronize(ev), RT_OK);                        /* metal-fake-6.4 */
    for (int rep = 0; rep < 2; rep++) {
        assert_int_equal(as->event_record(ev, q->handle), RT_OK);              /* metal-fake-6.5 */
        assert_int_equal(as->event_wait(q->handle, ev), RT_OK);
        assert_int_equal(as->event_synchronize(ev), RT_OK);
    }
    as->event_destroy(ev);
    rt_queue_destroy(q);
}

//===--- metal-fake-5: nothing leaks ---===//

static void test_no_leaks(void **state) {
    fixture_t *f = *state;
    assert_int_equal(fixture_teardown(state), 0);
    assert_int_equal(rt_fake_metal_stats()->live, 0);                         /* metal-fake-5.1 */
    assert_int_equal(fixture_setup(state), 0);
    (void)f;
}

/* Every test, on one fixture. */
#define METAL_FAKE_TESTS(fx)                                                          \
    cmocka_unit_test_prestate_setup_teardown(test_device, fixture_setup, fixture_teardown, fx),    \
    cmocka_unit_test_prestate_setup_teardown(test_transfers, fixture_setup, fixture_teardown, fx), \
    cmocka_unit_test_prestate_setup_teardown(test_graph, fixture_setup, fixture_teardown, fx),     \
    cmocka_unit_test_prestate_setup_teardown(test_host_ptr, fixture_setup, fixture_teardown, fx),  \
    cmocka_unit_test_prestate_setup_teardown(test_async, fixture_setup, fixture_teardown, fx),     \
    cmocka_unit_test_prestate_setup_teardown(test_unclaimed, fixture_setup, fixture_teardown, fx), \
    cmocka_unit_test_prestate_setup_teardown(test_no_leaks, fixture_setup, fixture_teardown, fx)

int main(void) {
    static fixture_t unified = { .unified = true }, discrete = { .unified = false };
    const struct CMUnitTest tests[] = { METAL_FAKE_TESTS(&unified), METAL_FAKE_TESTS(&discrete) };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
