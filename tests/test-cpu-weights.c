/* SPDX-License-Identifier: MIT */
/* test-cpu-weights.c: the CPU plugin's repacked-weights buffer type
 * (plugins/cpu/weights.c, layout in plugins/cpu/repack.h), through the
 * public API on the kernel path the plugin chose (tests/test-cpu-isa.sh runs
 * it under every path the machine has): what the type accepts, the
 * whole-tensor set/get round trip, refusals (partial writes, memset, uses
 * other than src[0] of MUL_MAT, views), RT_CPU_WEIGHTS=0, and MUL_MAT with
 * repacked Q8_0/Q4_0 weights on seeded random data with M no multiple of
 * the 16-row interleave, K from one block to thousands, N 1..9 and
 * larger (several passes of 8 activation rows, with a partial last one).
 *
 * Tolerance: the reference runs in double on the dequantised weights and
 * on the activations rounded through Q8_0 by rt_quantize_block_q8_0, the
 * rule the kernels' f32_to_q8_0 follows bit for bit (scale amax/127, q the
 * product with its reciprocal rounded half away from zero), so only the
 * F32 sums' rounding counts. tu_nmse_error is a relative RMS (a square
 * root), so float rounding reads in ulps: at most 5.1e-7 measured over
 * every case on the scalar, AVX2, AVX-512 and VNNI paths (K up to 4160:
 * 130 scaled block sums a result). TOL_DOT = 2e-6 leaves 4x that; one
 * activation rounded to a neighbouring quant (one step of d in one
 * element of one of 9 rows) costs 5e-5 or more at K = 4160, so a change
 * in the rounding rule fails. */
#include "testutil.h"

#include "../abi/rt_quant.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOL_DOT 2e-6

static rt_device_t *dev;
static rt_queue_t *queue;

/* Buffer type 1 of the CPU device, the weights type; fails when absent. */
static rt_buffer_type_t *weights_buft(void) {
    if (rt_device_buffer_type_count(dev) < 2) fail_msg("cpuw-1.1 the CPU offers no weights type");
    rt_buffer_type_t *b = rt_device_buffer_type(dev, 1);
    assert_non_null(b);
    return b;
}

/* A no_alloc context for a handful of tensors. */
static rt_context_t *context(void) {
    rt_context_t *ctx = NULL;
    const rt_context_params_t p = {.struct_size = sizeof p, .mem_size = 1 << 20, .no_alloc = true};
    assert_int_equal(rt_context_create(&p, &ctx), RT_OK);
    return ctx;
}

static size_t block_bytes(rt_type_t t) {
    return t == RT_TYPE_Q8_0 ? sizeof(rt_block_q8_0_t) : sizeof(rt_block_q4_0_t);
}

/* M random rows of K in the GGUF layout of t; their values in deq. */
static char *gguf_weights(rt_type_t t, int64_t M, int64_t K, double *deq) {
    char *a = malloc((size_t)(M * K / 32) * block_bytes(t));
    float x[32], y[32];
    for (int64_t b = 0; b < M * K / 32; b++) {
        tu_fill(x, 32, -1.0f, 1.0f);
        char *blk = a + (size_t)b * block_bytes(t);
        if (t == RT_TYPE_Q8_0) {
            rt_quantize_block_q8_0(x, (rt_block_q8_0_t *)blk);
            rt_dequantize_block_q8_0((rt_block_q8_0_t *)blk, y);
        } else {
            rt_quantize_block_q4_0(x, (rt_block_q4_0_t *)blk);
            rt_dequantize_block_q4_0((rt_block_q4_0_t *)blk, y);
        }
        for (int i = 0; i < 32 && deq; i++) deq[b * 32 + i] = y[i];
    }
    return a;
}

/* A 2-D weight tensor of ctx placed alone in the weights type. */
static rt_tensor_t *placed_weights(rt_context_t *ctx, rt_type_t t, int64_t M, int64_t K,
                                   rt_buffer_t **out_buf) {
    rt_tensor_t *w = rt_new_tensor_2d(ctx, t, K, M);
    const rt_status_t st = rt_alloc_ctx_tensors(ctx, weights_buft(), out_buf);
    if (st != RT_OK) fail_msg("placing weights: %s: %s", rt_status_name(st), rt_last_error());
    return w;
}

//===--- cpuw-1: what the type is and takes ---===//

static bool takes(rt_type_t t, int64_t ne0, int64_t ne1, int64_t ne2) {
    rt_context_t *ctx = context();
    const bool ok = rt_buffer_type_supports_tensor(weights_buft(),
                                                   rt_new_tensor_3d(ctx, t, ne0, ne1, ne2));
    rt_context_destroy(ctx);
    return ok;
}

static void test_type(void **state) {
    (void)state;
    rt_buffer_type_t *b = weights_buft();
    assert_true(rt_buffer_type_is_weights(b));
    assert_false(rt_buffer_type_is_host(b));
    assert_false(rt_buffer_type_is_weights(rt_device_buffer_type(dev, 0)));
    assert_string_equal(rt_buffer_type_name(b), "CPU_Weights");
    if (!takes(RT_TYPE_Q8_0, 64, 17, 1) || !takes(RT_TYPE_Q4_0, 4096, 1, 1))
        fail_msg("cpuw-1.2 2-D q8_0/q4_0 weights refused");
    if (takes(RT_TYPE_F32, 64, 17, 1) || takes(RT_TYPE_F16, 64, 17, 1) ||
        takes(RT_TYPE_Q8_0, 64, 17, 2))
        fail_msg("cpuw-1.3 a float or 3-D tensor accepted");
    /* room for the padded 16-row groups */
    rt_context_t *ctx = context();
    rt_tensor_t *w = rt_new_tensor_2d(ctx, RT_TYPE_Q8_0, 96, 17);
    if (rt_buffer_type_alloc_size(b, w) < rt_nbytes(w) * 32 / 17)
        fail_msg("cpuw-1.4 alloc_size %zu for 17 rows padded to 32", rt_buffer_type_alloc_size(b, w));
    rt_context_destroy(ctx);
}

//===--- cpuw-2: set, get, refusals ---===//

static void round_trip(rt_type_t t, int64_t M, int64_t K) {
    rt_context_t *ctx = context();
    rt_buffer_t *buf = NULL;
    rt_tensor_t *w = placed_weights(ctx, t, M, K, &buf);
    const size_t n = rt_nbytes(w);
    char *a = gguf_weights(t, M, K, NULL), *back = malloc(n);
    assert_int_equal(rt_tensor_set(w, a, 0, n), RT_OK);
    memset(back, 0x5a, n);
    assert_int_equal(rt_tensor_get(w, back, 0, n), RT_OK);
    if (memcmp(a, back, n) != 0)
        fail_msg("cpuw-2.1 %s %lld x %lld: get_tensor differs from what set_tensor took",
                 rt_type_name(t), (long long)M, (long long)K);
    if (rt_tensor_set(w, a, 0, n - 1) != RT_ERR_UNSUPPORTED ||
        rt_tensor_set(w, a, 1, n - 1) != RT_ERR_UNSUPPORTED ||
        rt_tensor_get(w, back, n / 2, n / 2) != RT_ERR_UNSUPPORTED)
        fail_msg("cpuw-2.2 a partial set or get of a repacked tensor was not refused");
    if (rt_tensor_memset(w, 0, 0, n) != RT_ERR_UNSUPPORTED)
        fail_msg("cpuw-2.3 memset of a repacked tensor was not refused");
    assert_int_equal(rt_tensor_get(w, back, 0, n), RT_OK); /* still intact */
    assert_memory_equal(a, back, n);
    free(a), free(back);
    rt_buffer_free(buf);
    rt_context_destroy(ctx);
}

static void test_set_get(void **state) {
    (void)state;
    tu_seed(0x3e16);
    static const int64_t shapes[][2] = {{1, 32}, {17, 96}, {37, 4096}, {64, 160}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        round_trip(RT_TYPE_Q8_0, shapes[i][0], shapes[i][1]);
        round_trip(RT_TYPE_Q4_0, shapes[i][0], shapes[i][1]);
    }
}

//===--- cpuw-3: MUL_MAT ---===//


static void mul_mat_case(rt_type_t t, int64_t M, int64_t K, int64_t N) {
    rt_context_t *ctx = context();
    rt_buffer_t *wbuf = NULL, *buf = NULL;
    rt_tensor_t *w = placed_weights(ctx, t, M, K, &wbuf);
    rt_tensor_t *x = rt_new_tensor_2d(ctx, RT_TYPE_F32, K, N);
    rt_tensor_t *c = rt_mul_mat(ctx, w, x);
    rt_graph_t *g = rt_graph_create(ctx, 8);
    rt_graph_build_forward_expand(g, c);
    assert_int_equal(rt_alloc_ctx_tensors(ctx, rt_device_buffer_type(dev, 0), &buf), RT_OK);
    double *wd = malloc((size_t)(M * K) * sizeof *wd), *xr = malloc((size_t)(N * K) * sizeof *xr);
    double *ref = malloc((size_t)(M * N) * sizeof *ref);
    float *xs = malloc((size_t)(N * K) * sizeof *xs), *got = malloc((size_t)(M * N) * sizeof *got);
    char *a = gguf_weights(t, M, K, wd);
    tu_fill(xs, (size_t)(N * K), -1.0f, 1.0f);
    for (int64_t n = 0; n < N; n++) tu_q8_round(xs + n * K, K, xr + n * K);
    for (int64_t n = 0; n < N; n++)
        for (int64_t m = 0; m < M; m++) {
            double s = 0;
            for (int64_t k = 0; k < K; k++) s += wd[m * K + k] * xr[n * K + k];
            ref[n * M + m] = s;
        }
    assert_int_equal(rt_tensor_set(w, a, 0, rt_nbytes(w)), RT_OK);
    assert_int_equal(rt_tensor_set(x, xs, 0, rt_nbytes(x)), RT_OK);
    if (!rt_device_supports_op(dev, c)) fail_msg("cpuw-3.1 MUL_MAT of repacked weights refused");
    rt_status_t st = rt_queue_compute(queue, g);
    if (st == RT_OK) st = rt_tensor_get(c, got, 0, rt_nbytes(c));
    const double e = st == RT_OK ? tu_nmse_error(ref, got, (size_t)(M * N)) : INFINITY;
    if (!(e <= TOL_DOT)) {
        tu_report("cpuw-3.2 %s M %lld K %lld N %lld: %s, nmse %.3g", rt_type_name(t), (long long)M,
                  (long long)K, (long long)N, rt_status_name(st), e);
    }
    free(wd), free(xr), free(ref), free(xs), free(got), free(a);
    rt_buffer_free(buf);
    rt_buffer_free(wbuf);
    rt_context_destroy(ctx);
}

/* Mat-vec: every N up to one past the mat-vec limit, K from one block to
 * thousands, M around the interleave and past it (250: n = 1's tile of 4
 * groups ending in a partial group, then the 2- and 1-group tails). */
static void test_matvec(void **state) {
    (void)state;
    tu_seed(0x3e17);
    tu_n_failed = 0;
    static const int64_t ms[] = {1, 17, 37, 100, 250}, ks[] = {32, 96, 544, 4160};
    for (int t = 0; t < 2; t++)
        for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++)
            for (size_t j = 0; j < sizeof ks / sizeof ks[0]; j++)
                for (int64_t n = 1; n <= 9; n++)
                    mul_mat_case(t ? RT_TYPE_Q4_0 : RT_TYPE_Q8_0, ms[i], ks[j], n);
    if (tu_n_failed) fail_msg("%d failing case(s), listed above", tu_n_failed);
}

/* Larger N: passes of 8 activation rows over each work item, the last one
 * partial, and M and K odd for the gemm that once served here. */
static void test_gemm(void **state) {
    (void)state;
    tu_seed(0x3e18);
    tu_n_failed = 0;
    static const int64_t shapes[][3] = {{37, 96, 33}, {200, 1056, 17}, {50, 64, 64}, {16, 4096, 12}};
    for (int t = 0; t < 2; t++)
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
            mul_mat_case(t ? RT_TYPE_Q4_0 : RT_TYPE_Q8_0, shapes[i][0], shapes[i][1], shapes[i][2]);
    if (tu_n_failed) fail_msg("%d failing case(s), listed above", tu_n_failed);
}

//===--- cpuw-4: no other use ---===//

static void test_other_uses(void **state) {
    (void)state;
    rt_context_t *ctx = context();
    rt_buffer_t *wbuf = NULL, *buf = NULL;
    rt_tensor_t *w = placed_weights(ctx, RT_TYPE_Q8_0, 48, 64, &wbuf);
    rt_tensor_t *x = rt_new_tensor_2d(ctx, RT_TYPE_F32, 64, 3);
    rt_tensor_t *ids = rt_new_tensor_1d(ctx, RT_TYPE_I32, 2);
    rt_tensor_t *mm = rt_mul_mat(ctx, w, x);
    rt_tensor_t *rows = rt_get_rows(ctx, w, ids);
    rt_tensor_t *cont = rt_cont(ctx, w);
    rt_tensor_t *view = rt_view_2d(ctx, w, 64, 16, w->nb[1], 16 * w->nb[1]);
    rt_tensor_t *mm_view = rt_mul_mat(ctx, view, x);
    rt_tensor_t *cpy = rt_cpy(ctx, x, rt_new_tensor_2d(ctx, RT_TYPE_F32, 64, 3));
    assert_int_equal(rt_alloc_ctx_tensors(ctx, rt_device_buffer_type(dev, 0), &buf), RT_OK);
    if (!rt_device_supports_op(dev, mm)) fail_msg("cpuw-4.1 MUL_MAT refused");
    if (rt_device_supports_op(dev, rows)) fail_msg("cpuw-4.2 GET_ROWS of repacked weights accepted");
    if (rt_device_supports_op(dev, cont)) fail_msg("cpuw-4.3 CONT of repacked weights accepted");
    if (rt_device_supports_op(dev, mm_view))
        fail_msg("cpuw-4.4 MUL_MAT of a view of repacked weights accepted");
    if (!rt_device_supports_op(dev, cpy)) fail_msg("cpuw-4.5 an unrelated CPY refused");
    rt_buffer_free(buf);
    rt_buffer_free(wbuf);
    rt_context_destroy(ctx);
}

//===--- cpuw-5: RT_CPU_WEIGHTS=0 ---===//

/* A second registry starts the plugin again, reading the variable anew. */
static void test_env_off(void **state) {
    (void)state;
    setenv("RT_CPU_WEIGHTS", "0", 1);
    rt_registry_t *reg = NULL;
    const rt_status_t st = rt_registry_create(NULL, &reg);
    assert_int_equal(st, RT_OK);
    rt_device_t *cpu = rt_registry_device_by_name(reg, "cpu0"); /* starts the plugin */
    unsetenv("RT_CPU_WEIGHTS");
    assert_non_null(cpu);
    for (int32_t i = 0; i < rt_device_buffer_type_count(cpu); i++)
        if (rt_buffer_type_is_weights(rt_device_buffer_type(cpu, i)))
            fail_msg("cpuw-5.1 RT_CPU_WEIGHTS=0 but buffer type %d is a weights type", (int)i);
    rt_registry_destroy(reg);
}

static int setup(void **state) {
    (void)state;
    dev = tu_cpu_device();
    return rt_queue_create(dev, NULL, &queue) == RT_OK ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    rt_queue_destroy(queue);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_type),       cmocka_unit_test(test_set_get),
        cmocka_unit_test(test_matvec),     cmocka_unit_test(test_gemm),
        cmocka_unit_test(test_other_uses), cmocka_unit_test(test_env_off),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
