/* SPDX-License-Identifier: MIT */
/* test-cpu-blocks.c: the CPU plugin's products and row reads for the block
 * types of ABI 1.2 (plugins/cpu/kern_blocks.c), through the public API on
 * the kernel path the plugin chose (tests/test-cpu-isa.sh runs it under
 * every path the machine has, and under qemu for arm64's NEON). Weights are
 * seeded random rows quantised by the reference codecs; shapes cover one
 * block, a few and thousands of elements, M no multiple of any step, N on
 * both sides of the mat-vec/gemm switch, and activations whose rows are
 * padded (a strided view).
 *
 *   cpub-1  MUL_MAT against a double-precision reference on the weights
 *           dequantised by rt_dequantize and the activations rounded as the
 *           plugin's integer path rounds them (per 256 through Q8_K for the
 *           super-block types, per 32 likewise for the others): only F32
 *           rounding counts, normalised error (tu_nmse_error) <= 1e-5.
 *   cpub-2  GET_ROWS: the rows are rt_dequantize's, bit for bit.
 *   cpub-3  each column of a mat-vec of 2..9 columns is, bit for bit, its
 *           product alone (one column): how many rows share a pass changes
 *           no result. */
#include "testutil.h"

#include "../abi/rt_quant.h"
#include "conform/act_round.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOL_DOT 1e-5
/* Q4_1/Q5_1: the offsets' term m * s uses b's per-block sums s = d * sum(q)
 * stored in F16, as ggml's Q8_1 (kern_blocks.c), which act_round cannot
 * express: measured ~6e-4. */
#define TOL_Q8_1_SUMS 2e-3

static rt_device_t *dev;
static rt_queue_t *queue;

static const rt_type_t types[] = {
    RT_TYPE_Q4_1, RT_TYPE_Q5_0, RT_TYPE_Q5_1, RT_TYPE_IQ4_NL, RT_TYPE_Q2_K,
    RT_TYPE_Q3_K, RT_TYPE_Q4_K, RT_TYPE_Q5_K, RT_TYPE_Q6_K,   RT_TYPE_IQ4_XS,
};
#define N_TYPES (sizeof types / sizeof types[0])

static rt_context_t *context(void) {
    rt_context_t *ctx = NULL;
    const rt_context_params_t p = {.struct_size = sizeof p, .mem_size = 1 << 20, .no_alloc = true};
    assert_int_equal(rt_context_create(&p, &ctx), RT_OK);
    return ctx;
}

/* M random rows of K in type t (the reference quantiser's bytes); their
 * values, dequantised, in deq. */
static void *weights(rt_type_t t, int64_t M, int64_t K, double *deq) {
    const size_t n = rt_row_size(t, K) * (size_t)M;
    float *x = malloc((size_t)(M * K) * sizeof *x), *y = malloc((size_t)(M * K) * sizeof *y);
    void *q = malloc(n);
    tu_fill(x, (size_t)(M * K), -1.0f, 1.0f);
    rt_quantize(t, x, q, M * K);
    rt_dequantize(t, q, y, M * K);
    for (int64_t i = 0; i < M * K; i++) deq[i] = y[i];
    free(x), free(y);
    return q;
}

/* x rounded as the plugin's activation rows round it (conform/act_round.h): int8 levels of
 * max|x|/127 per group of 256 (super-block weights) or 32. */
static void act_round(rt_type_t t, const float *x, int64_t K, double *out) {
    const int64_t g = rt_blck_size(t) == RT_QK_K ? RT_QK_K : 32;
    float b[RT_QK_K];
    for (int64_t k = 0; k < K; k += g) {
        memcpy(b, x + k, (size_t)g * sizeof b[0]);
        if (g == 32)
            cf_round_block_q8_f16(b);
        else
            cf_round_block_q8_f32(b, g);
        for (int64_t i = 0; i < g; i++) out[k + i] = b[i];
    }
}

//===--- cpub-1: MUL_MAT ---===//

/* c = w x on the plugin: M rows of K in type t (bytes a), N activation
 * rows of K in rows of K + pad floats (xv); c into got (M * N). */
static rt_status_t run_mul_mat(rt_type_t t, const void *a, int64_t M, int64_t K, const float *xv,
                               int64_t N, int64_t pad, float *got) {
    rt_context_t *ctx = context();
    rt_buffer_t *buf = NULL;
    rt_tensor_t *w = rt_new_tensor_2d(ctx, t, K, M);
    rt_tensor_t *xs = rt_new_tensor_2d(ctx, RT_TYPE_F32, K + pad, N);
    rt_tensor_t *x = pad ? rt_view_2d(ctx, xs, K, N, xs->nb[1], 0) : xs;
    rt_tensor_t *c = rt_mul_mat(ctx, w, x);
    rt_graph_t *g = rt_graph_create(ctx, 8);
    rt_graph_build_forward_expand(g, c);
    assert_int_equal(rt_alloc_ctx_tensors(ctx, rt_device_buffer_type(dev, 0), &buf), RT_OK);
    assert_int_equal(rt_tensor_set(w, a, 0, rt_nbytes(w)), RT_OK);
    assert_int_equal(rt_tensor_set(xs, xv, 0, rt_nbytes(xs)), RT_OK);
    rt_status_t st = rt_device_supports_op(dev, c) ? RT_OK : RT_ERR_UNSUPPORTED;
    if (st == RT_OK) st = rt_queue_compute(queue, g);
    if (st == RT_OK) st = rt_tensor_get(c, got, 0, rt_nbytes(c));
    rt_buffer_free(buf);
    rt_context_destroy(ctx);
    return st;
}

static void mul_mat_case(rt_type_t t, int64_t M, int64_t K, int64_t N, int64_t pad) {
    double *wd = malloc((size_t)(M * K) * sizeof *wd), *xr = malloc((size_t)(N * K) * sizeof *xr);
    double *ref = malloc((size_t)(M * N) * sizeof *ref);
    float *xv = malloc((size_t)(N * (K + pad)) * sizeof *xv), *got = malloc((size_t)(M * N) * sizeof *got);
    void *a = weights(t, M, K, wd);
    tu_fill(xv, (size_t)(N * (K + pad)), -1.0f, 1.0f);
    for (int64_t n = 0; n < N; n++) act_round(t, xv + n * (K + pad), K, xr + n * K);
    for (int64_t n = 0; n < N; n++)
        for (int64_t m = 0; m < M; m++) {
            double s = 0;
            for (int64_t k = 0; k < K; k++) s += wd[m * K + k] * xr[n * K + k];
            ref[n * M + m] = s;
        }
    const rt_status_t st = run_mul_mat(t, a, M, K, xv, N, pad, got);
    const double e = st == RT_OK ? tu_nmse_error(ref, got, (size_t)(M * N)) : INFINITY;
    const double tol = t == RT_TYPE_Q4_1 || t == RT_TYPE_Q5_1 ? TOL_Q8_1_SUMS : TOL_DOT;
    if (!(e <= tol))
        tu_report("cpub-1 %s M %lld K %lld N %lld pad %lld: %s, nmse %.3g", rt_type_name(t),
                  (long long)M, (long long)K, (long long)N, (long long)pad, rt_status_name(st), e);
    free(wd), free(xr), free(ref), free(xv), free(got), free(a);
}

static void test_mul_mat(void **state) {
    (void)state;
    tu_seed(0x1312);
    tu_n_failed = 0;
    static const int64_t blocks[] = {1, 3, 16}; /* K in blocks of the type */
    static const int64_t ns[] = {1, 2, 5, 9, 16, 32, 33}; /* 1..32: mat-vec; 33 on: gemm */
    for (size_t i = 0; i < N_TYPES; i++)
        for (size_t j = 0; j < sizeof blocks / sizeof blocks[0]; j++)
            for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++)
                mul_mat_case(types[i], 37, blocks[j] * rt_blck_size(types[i]), ns[k],
                             (int64_t)(k % 2) * 7);
    /* past the 128 blocks of 32 for which the AVX-512 mat-vec pairs its
       rows (kern_blocks.c: AQ_MAX_BLOCKS) */
    for (size_t i = 0; i < N_TYPES; i++) mul_mat_case(types[i], 37, 160 * rt_blck_size(types[i]), 5, 7);
    if (tu_n_failed) fail_msg("%d failing case(s), listed above", tu_n_failed);
}

//===--- cpub-3: a column alone ---===//

/* Each of the N columns of a mat-vec, bit for bit, the same column's
 * product computed alone: a sequence's logits do not depend on how many
 * others share its batch (rt-server's slots). */
static void alone_case(rt_type_t t, int64_t M, int64_t K, int64_t N) {
    double *wd = malloc((size_t)(M * K) * sizeof *wd);
    float *xv = malloc((size_t)(N * K) * sizeof *xv), *got = malloc((size_t)(M * N) * sizeof *got);
    float *one = malloc((size_t)M * sizeof *one);
    void *a = weights(t, M, K, wd);
    tu_fill(xv, (size_t)(N * K), -1.0f, 1.0f);
    rt_status_t st = run_mul_mat(t, a, M, K, xv, N, 0, got);
    int64_t bad = st == RT_OK ? -1 : 0;
    for (int64_t n = 0; n < N && st == RT_OK && bad < 0; n++) {
        st = run_mul_mat(t, a, M, K, xv + n * K, 1, 0, one);
        for (int64_t m = 0; m < M && st == RT_OK && bad < 0; m++)
            if (memcmp(&one[m], &got[n * M + m], sizeof one[m]) != 0) bad = n * M + m;
    }
    if (bad >= 0)
        tu_report("cpub-3 %s M %lld K %lld N %lld: %s, element %lld differs from its column alone",
                  rt_type_name(t), (long long)M, (long long)K, (long long)N, rt_status_name(st),
                  (long long)bad);
    free(wd), free(xv), free(got), free(one), free(a);
}

static void test_column_alone(void **state) {
    (void)state;
    tu_seed(0x1314);
    tu_n_failed = 0;
    static const int64_t ns[] = {2, 4, 7, 9}; /* passes of 8: full, short, and one over */
    for (size_t i = 0; i < N_TYPES; i++)
        for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
            alone_case(types[i], 19, 3 * rt_blck_size(types[i]), ns[k]);
            if (ns[k] == 4) alone_case(types[i], 19, 160 * rt_blck_size(types[i]), ns[k]); /* no pairs */
        }
    if (tu_n_failed) fail_msg("%d failing case(s), listed above", tu_n_failed);
}

//===--- cpub-2: GET_ROWS ---===//

static void get_rows_case(rt_type_t t, int64_t M, int64_t K) {
    rt_context_t *ctx = context();
    rt_buffer_t *buf = NULL;
    rt_tensor_t *w = rt_new_tensor_2d(ctx, t, K, M);
    rt_tensor_t *ids = rt_new_tensor_1d(ctx, RT_TYPE_I32, 3);
    rt_tensor_t *r = rt_get_rows(ctx, w, ids);
    rt_graph_t *g = rt_graph_create(ctx, 8);
    rt_graph_build_forward_expand(g, r);
    assert_int_equal(rt_alloc_ctx_tensors(ctx, rt_device_buffer_type(dev, 0), &buf), RT_OK);
    double *wd = malloc((size_t)(M * K) * sizeof *wd);
    float *got = malloc((size_t)(3 * K) * sizeof *got);
    void *a = weights(t, M, K, wd);
    const int32_t iv[3] = {(int32_t)M - 1, 0, (int32_t)M / 2};
    assert_int_equal(rt_tensor_set(w, a, 0, rt_nbytes(w)), RT_OK);
    assert_int_equal(rt_tensor_set(ids, iv, 0, sizeof iv), RT_OK);
    rt_status_t st = rt_device_supports_op(dev, r) ? RT_OK : RT_ERR_UNSUPPORTED;
    if (st == RT_OK) st = rt_queue_compute(queue, g);
    if (st == RT_OK) st = rt_tensor_get(r, got, 0, rt_nbytes(r));
    int64_t bad = st == RT_OK ? -1 : 0;
    for (int64_t i = 0; i < 3 && st == RT_OK; i++)
        for (int64_t k = 0; k < K && bad < 0; k++)
            if ((double)got[i * K + k] != wd[iv[i] * K + k]) bad = i * K + k;
    if (bad >= 0)
        tu_report("cpub-2 %s M %lld K %lld: %s, element %lld differs", rt_type_name(t),
                  (long long)M, (long long)K, rt_status_name(st), (long long)bad);
    free(wd), free(got), free(a);
    rt_buffer_free(buf);
    rt_context_destroy(ctx);
}

static void test_get_rows(void **state) {
    (void)state;
    tu_seed(0x1313);
    tu_n_failed = 0;
    for (size_t i = 0; i < N_TYPES; i++) get_rows_case(types[i], 11, 2 * rt_blck_size(types[i]));
    if (tu_n_failed) fail_msg("%d failing case(s), listed above", tu_n_failed);
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
        cmocka_unit_test(test_mul_mat),
        cmocka_unit_test(test_get_rows),
        cmocka_unit_test(test_column_alone),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
