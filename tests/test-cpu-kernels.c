/* SPDX-License-Identifier: MIT */
/* test-cpu-kernels.c: every kernel path of the CPU plugin that this machine
 * can run (scalar, avx2, avx512, avx512vnni, neon: plugins/cpu/kern.h),
 * called directly on seeded random data, against references written here
 * in double precision from the formats of abi/rt_quant.h. Sizes are odd on
 * purpose (tails of every vector width, lone quantised blocks), pointers
 * misaligned, row strides padded, in-place calls included. The plugin's
 * kernel objects are linked in; the ops around them are tested through the
 * public API by test-ops (run under each path by test-cpu-isa.sh).
 *
 * Tolerances (max over elements of |got - ref| / (|ref| + floor)):
 *   exact       conversions and quantisation: the bits of the reference.
 *   TOL_ELEM    2e-6, floor 1e-6: one F32 op, or exp through a 1-ulp polynomial.
 *   TOL_ROW     4e-6, floor 1e-6: rms_norm, softmax, rope (a few roundings per
 *               element); NORM's x - mean cancels, so it is measured as a
 *               normalised error over the row (tu_nmse_error) against TOL_ROW.
 *   dot products: normalised error (tu_nmse_error) <= 2e-6 over each result;
 *   quantised products against the reference with the activations rounded
 *   through Q8_0 (rt_quantize_block_q8_0, then its dequantisation), as the
 *   kernels do, so only the F32 sums differ. */
#include "testutil.h"

#include "../plugins/cpu/kern.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOL_ELEM 2e-6
#define TOL_ROW 4e-6
#define TOL_DOT 2e-6


/* Max relative error of got against ref (infinities must match). */
static double rel_err(const double *ref, const float *got, int64_t n, double floor_) {
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        if (isinf(ref[i]) || isinf(got[i])) {
            if (ref[i] != got[i]) return INFINITY;
            continue;
        }
        const double e = fabs(got[i] - ref[i]) / (fabs(ref[i]) + floor_);
        if (!(e <= worst)) worst = isnan(e) ? INFINITY : e;
    }
    return worst;
}

static float *frand(int64_t n, float lo, float hi) {
    float *x = malloc((size_t)(n + 16) * sizeof *x);
    tu_fill(x, (size_t)n + 16, lo, hi);
    return x;
}

/* Every runnable path, for the test bodies to loop over. */
typedef void (*path_fn)(const rt_cpu_kernels_t *k);

static void each_path(path_fn fn) {
    int n_run = 0;
    tu_n_failed = 0;
    for (int i = 0; i < RT_CPU_ISA_COUNT; i++) {
        const rt_cpu_kernels_t *k = rt_cpu_kernels_for((rt_cpu_isa_t)i);
        if (k == NULL) continue;
        tu_seed(0xc0ffee00u + (uint64_t)i);
        fn(k);
        n_run++;
    }
    assert_true(n_run > 0);
    if (tu_n_failed) fail_msg("%d failing check(s), listed above", tu_n_failed);
}

//===--- cpuk-1: conversions ---===//

/* Values the conversions must get exactly right: ties, subnormals, edges. */
static float special(int i) {
    static const float v[] = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65520.0f, 1e-8f, -3e-7f,
                              6.1e-5f, 1.0009765625f, 1.00048828125f, 3.4e38f, -1e-40f,
                              1.00390625f, 1.005859375f, 2.5f};
    return v[i % 16];
}

static void conv_f16(const rt_cpu_kernels_t *k, int64_t n) {
    float *x = frand(n + 1, -70000.0f, 70000.0f);
    uint16_t *h = malloc((size_t)(n + 1) * 2);
    float *back = malloc((size_t)(n + 1) * sizeof *back);
    for (int64_t i = 0; i < n; i += 3) x[i + 1] = special((int)i) * (i % 2 ? 1.0f : 1e-3f);
    if (n > 5) x[5] = NAN, x[4] = INFINITY;
    k->vec->f32_to_f16(x + 1, h + 1, n);
    for (int64_t i = 0; i < n; i++)
        if (h[i + 1] != rt_fp32_to_fp16(x[i + 1]))
            tu_report("cpuk-1.1 %s f32->f16 n %lld [%lld] %.9g: 0x%04x, want 0x%04x", k->name,
                   (long long)n, (long long)i, x[i + 1], h[i + 1], rt_fp32_to_fp16(x[i + 1]));
    k->vec->f16_to_f32(h + 1, back, n);
    for (int64_t i = 0; i < n; i++)
        if (memcmp(&back[i], &(float){rt_fp16_to_fp32(h[i + 1])}, 4) != 0)
            tu_report("cpuk-1.2 %s f16->f32 n %lld [%lld] 0x%04x", k->name, (long long)n, (long long)i,
                   h[i + 1]);
    k->vec->f32_to_bf16(x + 1, h + 1, n);
    for (int64_t i = 0; i < n; i++)
        if (h[i + 1] != rt_fp32_to_bf16(x[i + 1]))
            tu_report("cpuk-1.3 %s f32->bf16 n %lld [%lld] %.9g", k->name, (long long)n, (long long)i,
                   x[i + 1]);
    k->vec->bf16_to_f32(h + 1, back, n);
    for (int64_t i = 0; i < n; i++)
        if (back[i] != rt_bf16_to_fp32(h[i + 1]) && !isnan(back[i]))
            tu_report("cpuk-1.4 %s bf16->f32 n %lld [%lld]", k->name, (long long)n, (long long)i);
    free(x), free(h), free(back);
}

static void conv_quant(const rt_cpu_kernels_t *k, int64_t n) {
    float *x = frand(n, -3.0f, 3.0f), *y = malloc((size_t)n * sizeof *y), ref[32];
    rt_block_q8_0_t *q = malloc((size_t)(n / 32) * sizeof *q), r8;
    rt_block_q4_0_t *q4 = malloc((size_t)(n / 32) * sizeof *q4), r4;
    if (n >= 64) memset(x + 32, 0, 32 * sizeof x[0]); /* an all-zero block */
    k->vec->f32_to_q8_0(x, q, n);
    k->vec->q8_0_to_f32(q, y, n);
    for (int64_t b = 0; b < n / 32; b++) {
        rt_quantize_block_q8_0(x + b * 32, &r8);
        rt_dequantize_block_q8_0(&r8, ref);
        if (memcmp(&r8, &q[b], sizeof r8) != 0 || memcmp(ref, y + b * 32, sizeof ref) != 0)
            tu_report("cpuk-1.5 %s q8_0 block %lld of %lld differs from the reference", k->name,
                   (long long)b, (long long)n / 32);
        rt_quantize_block_q4_0(x + b * 32, &q4[b]);
    }
    k->vec->q4_0_to_f32(q4, y, n);
    for (int64_t b = 0; b < n / 32; b++) {
        r4 = q4[b];
        rt_dequantize_block_q4_0(&r4, ref);
        if (memcmp(ref, y + b * 32, sizeof ref) != 0)
            tu_report("cpuk-1.6 %s q4_0 block %lld dequantised differently", k->name, (long long)b);
    }
    free(x), free(y), free(q), free(q4);
}

static void conversions(const rt_cpu_kernels_t *k) {
    static const int64_t ns[] = {1, 7, 8, 15, 16, 17, 33, 100};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) conv_f16(k, ns[i]);
    conv_quant(k, 32);
    conv_quant(k, 96);
    conv_quant(k, 320);
    uint16_t all[65536];
    float got[65536];
    for (int i = 0; i < 65536; i++) all[i] = (uint16_t)i;
    k->vec->f16_to_f32(all, got, 65536);
    for (int i = 0; i < 65536; i++) {
        const float want = rt_fp16_to_fp32((uint16_t)i);
        if (memcmp(&got[i], &want, 4) != 0 && !(isnan(got[i]) && isnan(want))) {
            tu_report("cpuk-1.7 %s f16 0x%04x -> %.9g, want %.9g", k->name, i, got[i], want);
            break;
        }
    }
}

static void test_conversions(void **state) {
    (void)state;
    each_path(conversions);
}

//===--- cpuk-2: elementwise ---===//

static double silu_d(double x) { return x / (1 + exp(-x)); }

static double bin_ref(int op, double x, double y) {
    switch (op) {
    case RT_CPU_BIN_ADD: return x + y;
    case RT_CPU_BIN_SUB: return x - y;
    case RT_CPU_BIN_MUL: return x * y;
    case RT_CPU_BIN_DIV: return x / y;
    default: return silu_d(x) * y;
    }
}

/* op over n elements, out of place (misaligned) and in place. */
static void binary_case(const rt_cpu_kernels_t *k, int op, int64_t n, bool scalar_y) {
    float *x = frand(n + 1, -8.0f, 8.0f), *y = frand(n, 0.5f, 2.0f);
    float *d = malloc((size_t)(n + 1) * sizeof *d);
    double *ref = malloc((size_t)n * sizeof *ref);
    for (int64_t i = 0; i < n; i++) ref[i] = bin_ref(op, x[i + 1], scalar_y ? y[0] : y[i]);
    for (int inplace = 0; inplace < 2; inplace++) {
        float *out = inplace ? x + 1 : d + 1;
        if (inplace) memcpy(d, x, (size_t)(n + 1) * sizeof *d); /* keep x for nothing */
        if (scalar_y)
            k->vec->vs[op](out, x + 1, y[0], n);
        else
            k->vec->vv[op](out, x + 1, y, n);
        const double e = rel_err(ref, out, n, 1e-6);
        if (!(e <= TOL_ELEM))
            tu_report("cpuk-2.1 %s binary op %d n %lld %s%s: error %.3g", k->name, op, (long long)n,
                   scalar_y ? "scalar y" : "vector y", inplace ? " in place" : "", e);
    }
    free(x), free(y), free(d), free(ref);
}

static void unary_case(const rt_cpu_kernels_t *k, int64_t n) {
    float *x = frand(n, -12.0f, 12.0f), *d = malloc((size_t)n * sizeof *d);
    double *ref = malloc((size_t)n * sizeof *ref);
    if (n > 3) x[0] = -100.0f, x[1] = 90.0f, x[2] = 0.0f;
    for (int which = 0; which < 2; which++) {
        for (int64_t i = 0; i < n; i++) {
            const double v = x[i];
            ref[i] = which ? silu_d(v)
                           : 0.5 * v * (1 + tanh(sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
        }
        (which ? k->vec->silu : k->vec->gelu)(d, x, n);
        const double e = rel_err(ref, d, n, 1e-6);
        if (!(e <= TOL_ELEM))
            tu_report("cpuk-2.2 %s %s n %lld: error %.3g", k->name, which ? "silu" : "gelu",
                   (long long)n, e);
    }
    free(x), free(d), free(ref);
}

static void elementwise(const rt_cpu_kernels_t *k) {
    static const int64_t ns[] = {1, 3, 8, 16, 17, 31, 64, 100};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
        for (int op = 0; op < RT_CPU_BIN_COUNT; op++) {
            binary_case(k, op, ns[i], false);
            binary_case(k, op, ns[i], true);
        }
        unary_case(k, ns[i]);
    }
}

static void test_elementwise(void **state) {
    (void)state;
    each_path(elementwise);
}

//===--- cpuk-3: rows ---===//

static void norm_case(const rt_cpu_kernels_t *k, int64_t n) {
    float *x = frand(n, -3.0f, 5.0f), *d = malloc((size_t)n * sizeof *d);
    double *ref = malloc((size_t)n * sizeof *ref), s = 0, s2 = 0;
    for (int64_t i = 0; i < n; i++) s += x[i], s2 += (double)x[i] * x[i];
    const double mean = s / n;
    double var = 0;
    for (int64_t i = 0; i < n; i++) var += (x[i] - mean) * (x[i] - mean);
    for (int64_t i = 0; i < n; i++) ref[i] = (x[i] - mean) / sqrt(var / n + 1e-5);
    k->vec->norm(d, x, n, 1e-5f);
    /* x - mean cancels: the error is absolute, at the row's scale */
    double e = tu_nmse_error(ref, d, (size_t)n);
    if (!(e <= TOL_ROW)) tu_report("cpuk-3.1 %s norm n %lld: error %.3g", k->name, (long long)n, e);
    for (int64_t i = 0; i < n; i++) ref[i] = x[i] / sqrt(s2 / n + 1e-6);
    k->vec->rms_norm(x, x, n, 1e-6f); /* in place */
    e = rel_err(ref, x, n, 1e-6);
    if (!(e <= TOL_ROW)) tu_report("cpuk-3.2 %s rms_norm n %lld: error %.3g", k->name, (long long)n, e);
    free(x), free(d), free(ref);
}

/* With a mask holding -inf from column `cut` on (all of it when cut is 0). */
static void soft_max_case(const rt_cpu_kernels_t *k, int64_t n, bool masked, int64_t cut) {
    float *x = frand(n, -6.0f, 6.0f), *m = frand(n, -1.0f, 0.0f), *d = malloc((size_t)n * sizeof *d);
    double *ref = malloc((size_t)n * sizeof *ref), mx = -INFINITY, sum = 0;
    for (int64_t i = cut; masked && i < n; i++) m[i] = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        ref[i] = x[i] * 0.3 + (masked ? m[i] : 0);
        mx = fmax(mx, ref[i]);
    }
    for (int64_t i = 0; i < n; i++) sum += ref[i] = mx == -INFINITY ? 0 : exp(ref[i] - mx);
    for (int64_t i = 0; i < n; i++) ref[i] = sum > 0 ? ref[i] / sum : 0;
    k->vec->soft_max(d, x, masked ? m : NULL, 0.3f, n);
    const double e = rel_err(ref, d, n, 1e-7);
    if (!(e <= TOL_ROW))
        tu_report("cpuk-3.3 %s soft_max n %lld mask %d cut %lld: error %.3g", k->name, (long long)n,
               masked, (long long)cut, e);
    free(x), free(m), free(d), free(ref);
}

/* The table layout of kern.h for angles 0.37 i + 0.5, into cs; ref gets
 * row x rotated by it. */
static void rope_ref(const float *x, int64_t n_dims, int64_t n, bool neox, float *cs, double *ref) {
    const int64_t h = n_dims / 2;
    for (int64_t i = 0; i < h; i++) {
        const double th = 0.37 * (double)i + 0.5;
        const float c = (float)cos(th), s = (float)sin(th);
        const int64_t u = neox ? i : 2 * i, v = neox ? i + h : 2 * i + 1;
        ref[u] = x[u] * (double)c - x[v] * (double)s;
        ref[v] = x[u] * (double)s + x[v] * (double)c;
        if (neox) {
            cs[i] = c, cs[h + i] = s;
        } else {
            cs[2 * i] = cs[2 * i + 1] = c;
            cs[n_dims + 2 * i] = -s, cs[n_dims + 2 * i + 1] = s;
        }
    }
    for (int64_t i = n_dims; i < n; i++) ref[i] = x[i];
}

/* Worst error of n_rows rows of d (stride dd) against ref (stride n). A
 * rotated pair can cancel to near 0 while its roundings stay those of
 * |x| <= 2, so the floor is at that scale (1e-6 absolute: a few ulp of 2). */
static double rope_err(const double *ref, const float *d, int64_t dd, int64_t n_rows, int64_t n) {
    double e = 0;
    for (int64_t r = 0; r < n_rows; r++) {
        const double er = rel_err(ref + r * n, d + r * dd, n, 0.25);
        if (!(er <= e)) e = er;
    }
    return e;
}

/* n_rows rows under one table, x's rows n + 3 floats apart and d's n + 5
 * (misaligned, distinct strides), then in place. */
static void rope_case(const rt_cpu_kernels_t *k, int64_t n_dims, int64_t n, int64_t n_rows,
                      bool neox) {
    const int64_t dx = n + 3, dd = n + 5;
    float *x = frand(n_rows * dx, -2.0f, 2.0f), *d = malloc((size_t)(n_rows * dd) * sizeof *d);
    float *cs = malloc((size_t)(2 * n_dims + 1) * sizeof *cs);
    double *ref = malloc((size_t)(n_rows * n) * sizeof *ref);
    for (int64_t r = 0; r < n_rows; r++) rope_ref(x + r * dx, n_dims, n, neox, cs, ref + r * n);
    k->vec->rope(d, dd, x, dx, n_rows, cs, n_dims, neox, n);
    const double e = rope_err(ref, d, dd, n_rows, n);
    k->vec->rope(x, dx, x, dx, n_rows, cs, n_dims, neox, n); /* in place */
    const double e2 = rope_err(ref, x, dx, n_rows, n);
    if (!(e <= TOL_ROW) || !(e2 <= TOL_ROW))
        tu_report("cpuk-3.4 %s rope %s n_dims %lld n %lld rows %lld: error %.3g (in place %.3g)",
               k->name, neox ? "neox" : "normal", (long long)n_dims, (long long)n,
               (long long)n_rows, e, e2);
    free(x), free(d), free(cs), free(ref);
}

/* |x| <= pi/4, the range ROPE's reduction leaves. */
static void sincos_case(const rt_cpu_kernels_t *k, int64_t n) {
    float *x = frand(n, -0.78539816f, 0.78539816f), *s = malloc((size_t)n * 4), *c = malloc((size_t)n * 4);
    double *rs = malloc((size_t)n * sizeof *rs), *rc = malloc((size_t)n * sizeof *rc);
    if (n > 2) x[0] = 0.0f, x[1] = 0.78539816f, x[2] = -0.78539816f;
    for (int64_t i = 0; i < n; i++) rs[i] = sin(x[i]), rc[i] = cos(x[i]);
    k->vec->sincos(x, s, c, n);
    const double es = rel_err(rs, s, n, 1e-7), ec = rel_err(rc, c, n, 1e-7);
    if (!(es <= TOL_ELEM) || !(ec <= TOL_ELEM))
        tu_report("cpuk-3.5 %s sincos n %lld: error sin %.3g, cos %.3g", k->name, (long long)n, es, ec);
    free(x), free(s), free(c), free(rs), free(rc);
}

static void rows(const rt_cpu_kernels_t *k) {
    sincos_case(k, 1);
    sincos_case(k, 37);
    sincos_case(k, 1000);
    static const int64_t ns[] = {1, 2, 7, 16, 33, 100, 4096};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
        norm_case(k, ns[i]);
        soft_max_case(k, ns[i], false, 0);
        soft_max_case(k, ns[i], true, ns[i] / 2 + 1);
        soft_max_case(k, ns[i], true, 0); /* all -inf: zeros */
    }
    static const int64_t dims[][2] = {{2, 2}, {6, 10}, {8, 16}, {16, 16}, {34, 40}, {128, 128}};
    static const int64_t n_rows[] = {1, 3, 32};
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) {
        for (size_t r = 0; r < sizeof n_rows / sizeof n_rows[0]; r++) {
            rope_case(k, dims[i][0], dims[i][1], n_rows[r], false);
            rope_case(k, dims[i][0], dims[i][1], n_rows[r], true);
        }
    }
}

static void test_rows(void **state) {
    (void)state;
    each_path(rows);
}

//===--- cpuk-4: matrix products ---===//

static size_t row_bytes(rt_type_t t, int64_t K) {
    switch (t) {
    case RT_TYPE_F16:
    case RT_TYPE_BF16: return (size_t)K * 2;
    case RT_TYPE_Q8_0: return (size_t)(K / 32) * sizeof(rt_block_q8_0_t);
    case RT_TYPE_Q4_0: return (size_t)(K / 32) * sizeof(rt_block_q4_0_t);
    default: return (size_t)K * 4;
    }
}

/* M rows of K random weights of type t, lda bytes apart (padded); their
 * values as doubles in w. */
static char *weights(rt_type_t t, int64_t M, int64_t K, size_t lda, double *w) {
    char *a = calloc((size_t)M * lda + 64, 1);
    float *row = frand(K, -1.0f, 1.0f), blk[32];
    for (int64_t m = 0; m < M; m++, tu_fill(row, (size_t)K, -1.0f, 1.0f)) {
        char *r = a + (size_t)m * lda;
        for (int64_t i = 0; i < K; i++) {
            switch (t) {
            case RT_TYPE_F16: ((uint16_t *)r)[i] = rt_fp32_to_fp16(row[i]); break;
            case RT_TYPE_BF16: ((uint16_t *)r)[i] = rt_fp32_to_bf16(row[i]); break;
            case RT_TYPE_F32: ((float *)r)[i] = row[i]; break;
            default: break;
            }
        }
        for (int64_t b = 0; b < K / 32 && (t == RT_TYPE_Q8_0 || t == RT_TYPE_Q4_0); b++) {
            if (t == RT_TYPE_Q8_0) {
                rt_quantize_block_q8_0(row + b * 32, (rt_block_q8_0_t *)r + b);
                rt_dequantize_block_q8_0((rt_block_q8_0_t *)r + b, blk);
            } else {
                rt_quantize_block_q4_0(row + b * 32, (rt_block_q4_0_t *)r + b);
                rt_dequantize_block_q4_0((rt_block_q4_0_t *)r + b, blk);
            }
            for (int i = 0; i < 32; i++) w[m * K + b * 32 + i] = blk[i];
        }
        for (int64_t i = 0; i < K && (t == RT_TYPE_F32 || t == RT_TYPE_F16 || t == RT_TYPE_BF16); i++)
            w[m * K + i] = t == RT_TYPE_F16 ? rt_fp16_to_fp32(((uint16_t *)r)[i])
                         : t == RT_TYPE_BF16 ? rt_bf16_to_fp32(((uint16_t *)r)[i])
                                             : row[i];
    }
    free(row);
    return a;
}

typedef enum { MM_GEMM, MM_MATVEC, MM_MATVEC_Q } mm_kind_t;

typedef struct mm_case {
    rt_type_t t;
    int64_t M, N, K;
    int64_t m0, m1;   /* rows computed; the others must stay untouched */
} mm_case_t;

/* b: N rows of K floats, ldb floats apart; prepared for matvec_q. */
static char *activations(const rt_cpu_kernels_t *k, mm_kind_t kind, rt_type_t t, const float *x,
                         int64_t N, int64_t K, size_t ldb, size_t *out_ld) {
    if (kind != MM_MATVEC_Q) {
        *out_ld = ldb * sizeof(float);
        return NULL;
    }
    const size_t rs = rt_cpu_q8a_size(K);
    char *q = malloc(rs * (size_t)N);
    for (int64_t n = 0; n < N; n++) k->quant->quantize_q8a(x + (size_t)n * ldb, K, t, q + rs * (size_t)n);
    *out_ld = rs;
    return q;
}

static void mm_case(const rt_cpu_kernels_t *k, mm_kind_t kind, const mm_case_t *c) {
    const int64_t M = c->M, N = c->N, K = c->K;
    const size_t lda = row_bytes(c->t, K) + 64, ldb = (size_t)K + 5, ldc = (size_t)M + 3;
    double *w = malloc((size_t)(M * K) * sizeof *w), *xr = malloc((size_t)(N * K) * sizeof *xr);
    char *a = weights(c->t, M, K, lda, w);
    float *x = frand((int64_t)ldb * N, -1.0f, 1.0f), *cm = malloc(ldc * (size_t)N * sizeof *cm);
    for (int64_t n = 0; n < N; n++) {
        if (kind == MM_MATVEC_Q)
            tu_q8_round(x + (size_t)n * ldb, K, xr + n * K);
        else
            for (int64_t i = 0; i < K; i++) xr[n * K + i] = x[(size_t)n * ldb + (size_t)i];
    }
    size_t ld;
    char *q = activations(k, kind, c->t, x, N, K, ldb, &ld);
    for (size_t i = 0; i < ldc * (size_t)N; i++) cm[i] = -7.0f;
    const rt_cpu_mm_t g = {a, lda, c->t, M, K, q ? q : (const char *)x, ld, N, (char *)cm, ldc * 4, false};
    void *scratch = aligned_alloc(64, (k->mm->gemm_wsize + 63) / 64 * 64);
    if (kind == MM_GEMM) k->mm->gemm(&g, c->m0, c->m1, scratch);
    else if (kind == MM_MATVEC) k->mm->matvec(&g, c->m0, c->m1);
    else k->quant->matvec_q(&g, c->m0, c->m1);
    double *ref = malloc((size_t)(N * M) * sizeof *ref);
    float *got = malloc((size_t)(N * M) * sizeof *got);
    int64_t untouched = 0;
    for (int64_t n = 0; n < N; n++)
        for (int64_t m = 0; m < M; m++) {
            const bool in = m >= c->m0 && m < c->m1;
            double s = 0;
            for (int64_t i = 0; in && i < K; i++) s += w[m * K + i] * xr[n * K + i];
            ref[n * M + m] = in ? s : -7.0;
            got[n * M + m] = cm[(size_t)n * ldc + (size_t)m];
        }
    for (int64_t n = 0; n < N; n++)
        for (size_t m = (size_t)M; m < ldc; m++) untouched += cm[(size_t)n * ldc + m] != -7.0f;
    const double e = tu_nmse_error(ref, got, (size_t)(N * M));
    static const char *const kinds[] = {"gemm", "matvec", "matvec_q"};
    if (!(e <= TOL_DOT) || untouched)
        tu_report("cpuk-4.%d %s %s %s M %lld N %lld K %lld rows [%lld, %lld): nmse %.3g, %lld "
               "padding elements written", kind + 1, k->name, kinds[kind], rt_type_name(c->t),
               (long long)M, (long long)N, (long long)K, (long long)c->m0, (long long)c->m1, e,
               (long long)untouched);
    free(w), free(xr), free(a), free(x), free(cm), free(q), free(scratch), free(ref), free(got);
}

static const rt_type_t float_types[] = {RT_TYPE_F32, RT_TYPE_F16, RT_TYPE_BF16};
static const rt_type_t all_types[] = {RT_TYPE_F32, RT_TYPE_F16, RT_TYPE_BF16, RT_TYPE_Q8_0,
                                      RT_TYPE_Q4_0};

/* Tails of every panel and tile size, depth blocks and their remainders,
 * sub-ranges of rows (another thread's share left alone). */
static void gemm(const rt_cpu_kernels_t *k) {
    static const int64_t shapes[][5] = {
        {1, 9, 32, 0, 1},      {47, 9, 64, 0, 47},     {48, 8, 512, 0, 48},
        {97, 17, 544, 0, 97},  {200, 33, 1056, 0, 200}, {130, 5, 96, 16, 130},
        {400, 12, 160, 192, 384}, {64, 64, 32, 0, 64},
    };
    for (size_t t = 0; t < sizeof all_types / sizeof all_types[0]; t++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            const int64_t *v = shapes[s];
            mm_case(k, MM_GEMM, &(mm_case_t){all_types[t], v[0], v[1], v[2], v[3], v[4]});
        }
    /* depths that are no multiple of a block, for the float types */
    static const int64_t odd[][3] = {{5, 3, 1}, {50, 10, 37}, {49, 9, 515}};
    for (size_t t = 0; t < 3; t++)
        for (size_t s = 0; s < 3; s++)
            mm_case(k, MM_GEMM, &(mm_case_t){float_types[t], odd[s][0], odd[s][1], odd[s][2], 0, odd[s][0]});
}

/* N from 1 to 32, the small batches the mat-vec kernels take (every tail
 * of their passes of 4 and 8 rows of b); b's rows are K + 5 floats apart. */
static const int64_t mv_ns[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 17, 31, 32};

static void matvec(const rt_cpu_kernels_t *k) {
    static const int64_t ks[] = {1, 15, 33, 100, 2100, 4096};
    for (size_t t = 0; t < 3; t++)
        for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++)
            for (size_t n = 0; n < sizeof mv_ns / sizeof mv_ns[0]; n++)
                mm_case(k, MM_MATVEC, &(mm_case_t){float_types[t], 13, mv_ns[n], ks[i], 1, 13});
    static const int64_t qks[] = {32, 64, 96, 128, 160, 224, 4096};
    for (size_t t = 3; t < 5; t++)
        for (size_t i = 0; i < sizeof qks / sizeof qks[0]; i++)
            for (size_t n = 0; n < sizeof mv_ns / sizeof mv_ns[0]; n++)
                mm_case(k, MM_MATVEC_Q, &(mm_case_t){all_types[t], 11, mv_ns[n], qks[i], 2, 11});
}

/* The F32 rounding the gemm path feeds quantised weights: exactly Q8_0's. */
static void roundtrip(const rt_cpu_kernels_t *k) {
    float *x = frand(96, -4.0f, 4.0f), got[96];
    double want[96];
    k->quant->roundtrip_q8(x, 96, got);
    tu_q8_round(x, 96, want);
    for (int i = 0; i < 96; i++)
        if (got[i] != (float)want[i]) {
            tu_report("cpuk-4.4 %s roundtrip_q8 [%d]: %.9g, want %.9g", k->name, i, got[i], want[i]);
            break;
        }
    free(x);
}

static void test_gemm(void **state) {
    (void)state;
    each_path(gemm);
}

static void test_matvec(void **state) {
    (void)state;
    each_path(matvec);
}

static void test_roundtrip(void **state) {
    (void)state;
    each_path(roundtrip);
}

//===--- cpuk-5: the dispatcher ---===//

/* Scalar always runs; every runnable path has a whole table; the chosen
 * one (RT_CPU_ISA or the best) is one of them. */
static void test_dispatch(void **state) {
    (void)state;
    char why[160] = "";
    const bool ok = rt_cpu_isa_init(why, sizeof why);
    const char *want = getenv("RT_CPU_ISA");
    if (!ok) {
        if (want == NULL || *want == '\0') fail_msg("cpuk-5.1 no path chosen: %s", why);
        print_message("RT_CPU_ISA=%s refused as expected: %s\n", want, why);
        return;
    }
    assert_true(rt_cpu_isa_runnable(RT_CPU_ISA_SCALAR));
    for (int i = 0; i < RT_CPU_ISA_COUNT; i++) {
        const rt_cpu_kernels_t *k = rt_cpu_kernels_for((rt_cpu_isa_t)i);
        if (k == NULL) continue;
        if (!k->vec || !k->mm || !k->quant || strcmp(k->name, rt_cpu_isa_name((rt_cpu_isa_t)i)) != 0)
            fail_msg("cpuk-5.2 path %s has an incomplete table", rt_cpu_isa_name((rt_cpu_isa_t)i));
    }
    assert_non_null(rt_cpu_k);
    if (want && *want && strcmp(want, "auto") != 0 && strcmp(rt_cpu_k->name, want) != 0)
        fail_msg("cpuk-5.3 RT_CPU_ISA=%s but the plugin chose %s", want, rt_cpu_k->name);
    char desc[160];
    rt_cpu_isa_describe(desc, sizeof desc);
    print_message("kernel paths: %s\n", desc);
}

/* --list-paths: the paths this machine runs, for tests/test-cpu-isa.sh. */
static int list_paths(void) {
    for (int i = 0; i < RT_CPU_ISA_COUNT; i++)
        if (rt_cpu_isa_runnable((rt_cpu_isa_t)i)) printf("%s ", rt_cpu_isa_name((rt_cpu_isa_t)i));
    printf("\n");
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--list-paths") == 0) return list_paths();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dispatch),   cmocka_unit_test(test_conversions),
        cmocka_unit_test(test_elementwise), cmocka_unit_test(test_rows),
        cmocka_unit_test(test_gemm),       cmocka_unit_test(test_matvec),
        cmocka_unit_test(test_roundtrip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
