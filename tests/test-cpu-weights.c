/* SPDX-License-Identifier: MIT */
/* test-cpu-weights.c: the CPU plugin's repacked-weights buffer type
 * (plugins/cpu/weights.c, layout in plugins/cpu/repack.h), through the
 * public API on the kernel path the plugin chose (tests/test-cpu-isa.sh runs
 * it under every path the machine has): what the type accepts, the
 * whole-tensor set/get round trip, refusals (partial writes, memset, uses
 * other than src[0] of MUL_MAT, views), RT_CPU_WEIGHTS=0, and MUL_MAT with
 * repacked Q8_0/Q4_0/Q4_1 weights on seeded random data with M no multiple of
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
 * in the rounding rule fails. Q4_1's reference is its blocks' own sum,
 * d_w d_a sum(q_w q_a) + m_w s_a, with b's Q8_1 blocks (conform/act_round.h:
 * s is rounded to F16, which no rounding of the activations expresses);
 * the same bound. cpuw-3.3: each column of a product of several is, bit
 * for bit, that column's product alone, as rt-server's batched sequences
 * need (a sequence's tokens do not depend on the others'). */
#include "testutil.h"

#include "../abi/rt_quant.h"
#include "conform/act_round.h"

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

static const rt_type_t TYPES[] = {RT_TYPE_Q8_0, RT_TYPE_Q4_0, RT_TYPE_Q4_1};
#define N_TYPES (sizeof TYPES / sizeof TYPES[0])


/* M random rows of K in the GGUF layout of t; their values in deq. */
static char *gguf_weights(rt_type_t t, int64_t M, int64_t K, double *deq) {
    char *a = malloc((size_t)(M * K / 32) * rt_type_size(t));
    float x[32], y[32];
    for (int64_t b = 0; b < M * K / 32; b++) {
        tu_fill(x, 32, -1.0f, 1.0f);
        char *blk = a + (size_t)b * rt_type_size(t);
        if (t == RT_TYPE_Q8_0) {
            rt_quantize_block_q8_0(x, (rt_block_q8_0_t *)blk);
            rt_dequantize_block_q8_0((rt_block_q8_0_t *)blk, y);
        } else if (t == RT_TYPE_Q4_0) {
            rt_quantize_block_q4_0(x, (rt_block_q4_0_t *)blk);
            rt_dequantize_block_q4_0((rt_block_q4_0_t *)blk, y);
        } else {
            rt_quantize_block_q4_1(x, (rt_block_q4_1_t *)blk);
            rt_dequantize_block_q4_1((rt_block_q4_1_t *)blk, y);
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
    if (!takes(RT_TYPE_Q8_0, 64, 17, 1) || !takes(RT_TYPE_Q4_0, 4096, 1, 1) ||
        !takes(RT_TYPE_Q4_1, 576, 49, 1))
        fail_msg("cpuw-1.2 2-D q8_0/q4_0/q4_1 weights refused");
    if (takes(RT_TYPE_F32, 64, 17, 1) || takes(RT_TYPE_F16, 64, 17, 1) ||
        takes(RT_TYPE_Q8_0, 64, 17, 2) || takes(RT_TYPE_Q5_0, 64, 17, 1))
        fail_msg("cpuw-1.3 a float, 3-D or q5_0 tensor accepted");
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
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (size_t t = 0; t < N_TYPES; t++) round_trip(TYPES[t], shapes[i][0], shapes[i][1]);
}

//===--- cpuw-3: MUL_MAT ---===//

/* c = w x on the device, w's M rows of K in t given in the GGUF layout
 * (a) and placed in the weights type (plain: the plain one), x N rows of K
 * (xs); c into got. */
static rt_status_t run_product_in(bool plain, rt_type_t t, const char *a, int64_t M, int64_t K,
                                  const float *xs, int64_t N, float *got) {
    rt_context_t *ctx = context();
    rt_buffer_t *wbuf = NULL, *buf = NULL;
    rt_tensor_t *w = plain ? rt_new_tensor_2d(ctx, t, K, M) : placed_weights(ctx, t, M, K, &wbuf);
    rt_tensor_t *x = rt_new_tensor_2d(ctx, RT_TYPE_F32, K, N);
    rt_tensor_t *c = rt_mul_mat(ctx, w, x);
    rt_graph_t *g = rt_graph_create(ctx, 8);
    rt_graph_build_forward_expand(g, c);
    assert_int_equal(rt_alloc_ctx_tensors(ctx, rt_device_buffer_type(dev, 0), &buf), RT_OK);
    assert_int_equal(rt_tensor_set(w, a, 0, rt_nbytes(w)), RT_OK);
    assert_int_equal(rt_tensor_set(x, xs, 0, rt_nbytes(x)), RT_OK);
    if (!rt_device_supports_op(dev, c)) fail_msg("cpuw-3.1 MUL_MAT of repacked weights refused");
    rt_status_t st = rt_queue_compute(queue, g);
    if (st == RT_OK) st = rt_tensor_get(c, got, 0, rt_nbytes(c));
    rt_buffer_free(buf);
    rt_buffer_free(wbuf);
    rt_context_destroy(ctx);
    return st;
}

static rt_status_t run_product(rt_type_t t, const char *a, int64_t M, int64_t K, const float *xs,
                               int64_t N, float *got) {
    return run_product_in(false, t, a, M, K, xs, N, got);
}

/* Q4_1's reference for one result: row m of a (GGUF blocks) by x's Q8_1
 * blocks, d_w d_a sum(q_w q_a) + m_w s_a a block. */
static double q4_1_dot(const char *a, int64_t m, int64_t K, const float *x) {
    double sum = 0;
    for (int64_t b = 0; b < K / 32; b++) {
        const rt_block_q4_1_t *w = (const rt_block_q4_1_t *)a + m * (K / 32) + b;
        int8_t q[32];
        float d, s;
        cf_block_q8_1(x + b * 32, q, &d, &s);
        int64_t isum = 0;
        for (int j = 0; j < 16; j++) isum += (w->qs[j] & 15) * q[j] + (w->qs[j] >> 4) * q[j + 16];
        sum += (double)rt_fp16_to_fp32(w->d) * d * (double)isum + (double)rt_fp16_to_fp32(w->m) * s;
    }
    return sum;
}

/* The double reference c[n][m]: the dequantised weights wd by b rounded
 * through Q8_0, or for Q4_1 q4_1_dot. */
static void reference(rt_type_t t, const char *a, const double *wd, const float *xs, int64_t M,
                      int64_t K, int64_t N, double *ref) {
    double *xr = malloc((size_t)(N * K) * sizeof *xr);
    for (int64_t n = 0; n < N && t != RT_TYPE_Q4_1; n++) tu_q8_round(xs + n * K, K, xr + n * K);
    for (int64_t n = 0; n < N; n++)
        for (int64_t m = 0; m < M; m++) {
            double s = 0;
            if (t == RT_TYPE_Q4_1)
                s = q4_1_dot(a, m, K, xs + n * K);
            else
                for (int64_t k = 0; k < K; k++) s += wd[m * K + k] * xr[n * K + k];
            ref[n * M + m] = s;
        }
    free(xr);
}

static void mul_mat_case(rt_type_t t, int64_t M, int64_t K, int64_t N) {
    double *wd = malloc((size_t)(M * K) * sizeof *wd), *ref = malloc((size_t)(M * N) * sizeof *ref);
    float *xs = malloc((size_t)(N * K) * sizeof *xs), *got = malloc((size_t)(M * N) * sizeof *got);
    char *a = gguf_weights(t, M, K, wd);
    tu_fill(xs, (size_t)(N * K), -1.0f, 1.0f);
    reference(t, a, wd, xs, M, K, N, ref);
    const rt_status_t st = run_product(t, a, M, K, xs, N, got);
    const double e = st == RT_OK ? tu_nmse_error(ref, got, (size_t)(M * N)) : INFINITY;
    if (!(e <= TOL_DOT)) {
        tu_report("cpuw-3.2 %s M %lld K %lld N %lld: %s, nmse %.3g", rt_type_name(t), (long long)M,
                  (long long)K, (long long)N, rt_status_name(st), e);
    }
    free(wd), free(ref), free(xs), free(got), free(a);
}

/* Mat-vec: every N up to one past the mat-vec limit, K from one block to
 * thousands, M around the interleave and past it (250: n = 1's tile of 4
 * groups ending in a partial group, then the 2- and 1-group tails). */
static void test_matvec(void **state) {
    (void)state;
    tu_seed(0x3e17);
    tu_n_failed = 0;
    static const int64_t ms[] = {1, 17, 37, 100, 250}, ks[] = {32, 96, 544, 4160};
    for (size_t t = 0; t < N_TYPES; t++)
        for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++)
            for (size_t j = 0; j < sizeof ks / sizeof ks[0]; j++)
                for (int64_t n = 1; n <= 9; n++) mul_mat_case(TYPES[t], ms[i], ks[j], n);
    if (tu_n_failed) fail_msg("%d failing case(s), listed above", tu_n_failed);
}

/* Larger N: passes of 8 activation rows over each work item, the last one
 * partial, and M and K odd for the gemm that once served here. */
static void test_gemm(void **state) {
    (void)state;
    tu_seed(0x3e18);
    tu_n_failed = 0;
    static const int64_t shapes[][3] = {{37, 96, 33}, {200, 1056, 17}, {50, 64, 64}, {16, 4096, 12}};
    for (size_t t = 0; t < N_TYPES; t++)
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
            mul_mat_case(TYPES[t], shapes[i][0], shapes[i][1], shapes[i][2]);
    if (tu_n_failed) fail_msg("%d failing case(s), listed above", tu_n_failed);
}

/* cpuw-3.3: columns 1..N of a product (N up to one past a pass of 8, a
 * tile of every width) are each their product alone, bit for bit; and
 * cpuw-3.4, Q4_1's are the GGUF layout's bit for bit (the order of its
 * sums, which SmolLM2's parity with llama.cpp rests on, kern_quant.c). */
static void test_columns_alone(void **state) {
    (void)state;
    tu_seed(0x3e19);
    const int64_t M = 100, K = 576, N = 9;
    float *xs = malloc((size_t)(N * K) * sizeof *xs), *all = malloc((size_t)(M * N) * sizeof *all);
    float *one = malloc((size_t)M * sizeof *one);
    for (size_t t = 0; t < N_TYPES; t++) {
        char *a = gguf_weights(TYPES[t], M, K, NULL);
        tu_fill(xs, (size_t)(N * K), -1.0f, 1.0f);
        for (int64_t n = 1; n <= N; n++) {
            assert_int_equal(run_product(TYPES[t], a, M, K, xs, n, all), RT_OK);
            for (int64_t j = 0; j < n; j++) {
                assert_int_equal(run_product(TYPES[t], a, M, K, xs + j * K, 1, one), RT_OK);
                if (memcmp(one, all + j * M, (size_t)M * sizeof *one) != 0)
                    fail_msg("cpuw-3.3 %s: column %lld of %lld differs from its product alone",
                             rt_type_name(TYPES[t]), (long long)j, (long long)n);
            }
            if (TYPES[t] != RT_TYPE_Q4_1) continue;
            float *plain = malloc((size_t)(M * n) * sizeof *plain);
            assert_int_equal(run_product_in(true, TYPES[t], a, M, K, xs, n, plain), RT_OK);
            if (memcmp(plain, all, (size_t)(M * n) * sizeof *plain) != 0)
                fail_msg("cpuw-3.4 q4_1 N %lld: the repacked product differs from the GGUF layout's",
                         (long long)n);
            free(plain);
        }
        free(a);
    }
    free(xs), free(all), free(one);
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
        cmocka_unit_test(test_columns_alone),
        cmocka_unit_test(test_other_uses), cmocka_unit_test(test_env_off),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
