/* SPDX-License-Identifier: MIT */
/* test-neon.c: the CPU plugin's NEON path, run, not only compiled: built for
 * arm64 by the cross compiler (aarch64-linux-gnu-gcc, statically, with the
 * plugin's kernel objects and isa.c and nothing else: no cmocka, no core,
 * which the cross toolchain lacks) and run under qemu-aarch64 by
 * tests/test-neon-qemu.sh. Each check compares the NEON table with the
 * scalar one (the reference path, itself checked against abi/rt_quant.h by
 * test-cpu-kernels and test-cpu-blocks on the build machine) on seeded
 * random data:
 *
 *   neon-1  conversions (F16, BF16, Q8_0, Q4_0 and every ABI 1.2 block
 *           type to F32): bit for bit (a NaN from F16 need only be a NaN:
 *           fcvt quiets signalling ones).
 *   neon-2  F32 gemm and matvec, odd M, N and K: normalised error <= 1e-5.
 *   neon-3  Q8_0/Q4_0 mat-vec with activations quantised by each path.
 *   neon-4  every ABI 1.2 block type: activations (roundtrip_act) bit for
 *           bit, mat-vec (quantize_act + matvec) <= 1e-5.
 *   neon-5  FLASH_ATTN's attend (kern_attn.c) in both layouts (rows or keys
 *           in the lanes), F32 and F16 keys and values, grouped rows, odd
 *           D and Dv, a partial last tile, a mask tile that no query sees,
 *           soft-capping: softmax(s) V <= 1e-5.
 *
 * Prints "ok"/"FAIL" per check and exits 1 on any failure. */
#include "conform/rng.h"
#include "../plugins/cpu/kern.h"

#include "../abi/rt_quant.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int n_failed, n_checked;
static uint64_t rng = 0x9e3779b97f4a7c15ull; /* conform/rng.h's generator */

static float uniform(void) { return cf_rng_uniform(&rng, -1.0f, 1.0f); }

static void check(bool ok, const char *id, const char *what) {
    n_checked++;
    if (!ok) n_failed++;
    printf("%s %s %s\n", ok ? "ok  " : "FAIL", id, what);
}

static double nmse(const float *ref, const float *got, int64_t n) {
    double e = 0, r = 0;
    for (int64_t i = 0; i < n; i++) {
        e += ((double)got[i] - ref[i]) * ((double)got[i] - ref[i]);
        r += (double)ref[i] * ref[i];
    }
    return r > 0 ? sqrt(e / r) : sqrt(e);
}

static const rt_type_t blocks[] = {
    RT_TYPE_Q4_1, RT_TYPE_Q5_0, RT_TYPE_Q5_1, RT_TYPE_IQ4_NL, RT_TYPE_Q2_K,
    RT_TYPE_Q3_K, RT_TYPE_Q4_K, RT_TYPE_Q5_K, RT_TYPE_Q6_K,   RT_TYPE_IQ4_XS,
};

/* M rows of K of type t, quantised from random floats by the reference. */
static void *weights(rt_type_t t, int64_t M, int64_t K) {
    const int64_t blck = t == RT_TYPE_Q8_0 || t == RT_TYPE_Q4_0 ? 32 : rt_cpu_act_is_q8k(t) ? RT_QK_K : 32;
    const size_t bsize = t == RT_TYPE_Q8_0 ? sizeof(rt_block_q8_0_t)
                         : t == RT_TYPE_Q4_0 ? sizeof(rt_block_q4_0_t) : rt_cpu_block_bytes(t);
    char *q = malloc((size_t)(M * K / blck) * bsize);
    float x[RT_QK_K];
    for (int64_t b = 0; b < M * K / blck; b++) {
        for (int64_t i = 0; i < blck; i++) x[i] = uniform();
        void *dst = q + (size_t)b * bsize;
        switch (t) {
        case RT_TYPE_Q8_0: rt_quantize_block_q8_0(x, dst); break;
        case RT_TYPE_Q4_0: rt_quantize_block_q4_0(x, dst); break;
        case RT_TYPE_Q4_1: rt_quantize_block_q4_1(x, dst); break;
        case RT_TYPE_Q5_0: rt_quantize_block_q5_0(x, dst); break;
        case RT_TYPE_Q5_1: rt_quantize_block_q5_1(x, dst); break;
        case RT_TYPE_IQ4_NL: rt_quantize_block_iq4_nl(x, dst); break;
        case RT_TYPE_Q2_K: rt_quantize_block_q2_k(x, dst); break;
        case RT_TYPE_Q3_K: rt_quantize_block_q3_k(x, dst); break;
        case RT_TYPE_Q4_K: rt_quantize_block_q4_k(x, dst); break;
        case RT_TYPE_Q5_K: rt_quantize_block_q5_k(x, dst); break;
        case RT_TYPE_Q6_K: rt_quantize_block_q6_k(x, dst); break;
        case RT_TYPE_IQ4_XS: rt_quantize_block_iq4_xs(x, dst); break;
        default: break;
        }
    }
    return q;
}

static float *frand(int64_t n) {
    float *x = malloc((size_t)n * sizeof *x);
    for (int64_t i = 0; i < n; i++) x[i] = uniform();
    return x;
}

//===--- neon-1 ---===//

/* Bit for bit, except that a NaN need only stay a NaN: the hardware's
 * conversion quiets a signalling NaN, which the reference keeps as is. */
static bool same_bits(const float *a, const float *b, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (isnan(a[i]) ? !isnan(b[i]) : memcmp(&a[i], &b[i], sizeof a[i]) != 0) return false;
    return true;
}

static void conversions(const rt_cpu_kernels_t *s, const rt_cpu_kernels_t *v) {
    enum { N = 4096 + 256 };
    uint16_t *h = malloc(N * sizeof *h);
    float *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
    for (int i = 0; i < N; i++) h[i] = (uint16_t)(rng = rng * 6364136223846793005ull + 1, rng >> 48);
    s->vec->f16_to_f32(h, a, N), v->vec->f16_to_f32(h, b, N);
    check(same_bits(a, b, N), "neon-1.1", "f16 -> f32");
    s->vec->bf16_to_f32(h, a, N), v->vec->bf16_to_f32(h, b, N);
    check(memcmp(a, b, N * sizeof *a) == 0, "neon-1.2", "bf16 -> f32");
    void *q8 = weights(RT_TYPE_Q8_0, 1, N), *q4 = weights(RT_TYPE_Q4_0, 1, N);
    s->vec->q8_0_to_f32(q8, a, N), v->vec->q8_0_to_f32(q8, b, N);
    check(memcmp(a, b, N * sizeof *a) == 0, "neon-1.3", "q8_0 -> f32");
    s->vec->q4_0_to_f32(q4, a, N), v->vec->q4_0_to_f32(q4, b, N);
    check(memcmp(a, b, N * sizeof *a) == 0, "neon-1.4", "q4_0 -> f32");
    for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++) {
        void *w = weights(blocks[i], 1, 4096);
        s->blocks->to_f32(blocks[i], w, a, 4096), v->blocks->to_f32(blocks[i], w, b, 4096);
        check(memcmp(a, b, 4096 * sizeof *a) == 0, "neon-1.5", "block type -> f32 (all ten)");
        free(w);
    }
    free(h), free(a), free(b), free(q8), free(q4);
}

//===--- neon-2, neon-3, neon-4: products ---===//

typedef void (*mm_fn)(const rt_cpu_mm_t *g, int64_t m0, int64_t m1);

/* c of both paths for the same a and b; c row stride M floats. */
static bool same_product(const rt_cpu_mm_t *gs, const rt_cpu_mm_t *gv, mm_fn fs, mm_fn fv,
                         void *scratch_s, void *scratch_v, const rt_cpu_kernels_t *s,
                         const rt_cpu_kernels_t *v) {
    if (fs == NULL) {
        s->mm->gemm(gs, 0, gs->M, scratch_s);
        v->mm->gemm(gv, 0, gv->M, scratch_v);
    } else {
        fs(gs, 0, gs->M);
        fv(gv, 0, gv->M);
    }
    const double e = nmse((const float *)gs->c, (const float *)gv->c, gs->M * gs->N);
    return e <= 1e-5;
}

static void products_f32(const rt_cpu_kernels_t *s, const rt_cpu_kernels_t *v) {
    const int64_t M = 37, K = 777, N = 11;
    float *a = frand(M * K), *b = frand(N * K), *cs = calloc((size_t)(M * N), 4), *cv = calloc((size_t)(M * N), 4);
    rt_cpu_mm_t g = {.a = (const char *)a, .lda = (size_t)K * 4, .atype = RT_TYPE_F32, .M = M, .K = K,
                     .b = (const char *)b, .ldb = (size_t)K * 4, .N = N, .ldc = (size_t)M * 4};
    rt_cpu_mm_t gs = g, gv = g;
    gs.c = (char *)cs, gv.c = (char *)cv;
    void *ws = malloc(s->mm->gemm_wsize), *wv = malloc(v->mm->gemm_wsize);
    check(same_product(&gs, &gv, NULL, NULL, ws, wv, s, v), "neon-2.1", "f32 gemm 37 x 777 x 11");
    gs.N = gv.N = 3;
    check(same_product(&gs, &gv, s->mm->matvec, v->mm->matvec, NULL, NULL, s, v), "neon-2.2",
          "f32 matvec 37 x 777 x 3");
    free(a), free(b), free(cs), free(cv), free(ws), free(wv);
}

/* Activation rows by a path's own quantiser, then its mat-vec. */
static void quant_case(const rt_cpu_kernels_t *s, const rt_cpu_kernels_t *v, rt_type_t t,
                       const char *id, const char *what) {
    const int64_t M = 37, K = 32 * 36, N = 3;
    void *w = weights(t, M, K);
    float *b = frand(N * K), *cs = calloc((size_t)(M * N), 4), *cv = calloc((size_t)(M * N), 4);
    const size_t row = rt_cpu_q8a_size(K);
    char *as = calloc((size_t)N, row), *av = calloc((size_t)N, row);
    for (int64_t n = 0; n < N; n++) {
        s->quant->quantize_q8a(b + n * K, K, t, as + n * row);
        v->quant->quantize_q8a(b + n * K, K, t, av + n * row);
    }
    const size_t lda = (size_t)(K / 32) * (t == RT_TYPE_Q8_0 ? sizeof(rt_block_q8_0_t) : sizeof(rt_block_q4_0_t));
    rt_cpu_mm_t gs = {.a = w, .lda = lda, .atype = t, .M = M, .K = K, .b = as, .ldb = row, .N = N,
                      .c = (char *)cs, .ldc = (size_t)M * 4};
    rt_cpu_mm_t gv = gs;
    gv.b = av, gv.c = (char *)cv;
    check(same_product(&gs, &gv, s->quant->matvec_q, v->quant->matvec_q, NULL, NULL, s, v), id, what);
    free(w), free(b), free(cs), free(cv), free(as), free(av);
}

static void blocks_case(const rt_cpu_kernels_t *s, const rt_cpu_kernels_t *v, rt_type_t t) {
    const int64_t M = 19, K = 3 * RT_QK_K, N = 2;
    void *w = weights(t, M, K);
    float *b = frand(N * K), *cs = calloc((size_t)(M * N), 4), *cv = calloc((size_t)(M * N), 4);
    float *rs = malloc((size_t)K * 4), *rv = malloc((size_t)K * 4);
    s->blocks->roundtrip_act(b, K, t, rs), v->blocks->roundtrip_act(b, K, t, rv);
    check(memcmp(rs, rv, (size_t)K * 4) == 0, "neon-4.1", "activation rounding (all ten types)");
    const size_t row = rt_cpu_act_size(t, K);
    char *as = malloc((size_t)N * row), *av = malloc((size_t)N * row);
    for (int64_t n = 0; n < N; n++) {
        s->blocks->quantize_act(b + n * K, K, t, as + n * row);
        v->blocks->quantize_act(b + n * K, K, t, av + n * row);
    }
    rt_cpu_mm_t gs = {.a = w, .lda = (size_t)(K / (rt_cpu_act_is_q8k(t) ? RT_QK_K : 32)) * rt_cpu_block_bytes(t),
                      .atype = t, .M = M, .K = K, .b = as, .ldb = row, .N = N, .c = (char *)cs,
                      .ldc = (size_t)M * 4};
    rt_cpu_mm_t gv = gs;
    gv.b = av, gv.c = (char *)cv;
    check(same_product(&gs, &gv, s->blocks->matvec, v->blocks->matvec, NULL, NULL, s, v), "neon-4.2",
          "block type mat-vec (all ten types)");
    free(w), free(b), free(cs), free(cv), free(rs), free(rv), free(as), free(av);
}

//===--- neon-5 ---===//

/* Up to 2 queries x 3 heads over 101 keys, the keys 32..63 masked for both
 * queries (a tile attend skips) and a few more. R = 6 takes the layout of
 * rows in the lanes, R = 3 that of keys in the lanes (fewer rows than 4). */
enum { FA_RMAX = 6, FA_RPQ = 3, FA_D = 42, FA_DV = 27, FA_KV = 101 };

/* The attention of each row, acc / l, through path k. */
static void attend_rows(const rt_cpu_kernels_t *k, const rt_cpu_fa_t *a, float *out) {
    const int64_t dvp = RT_CPU_FA_PAD(FA_DV);
    float m[RT_CPU_FA_PAD(FA_RMAX)], l[RT_CPU_FA_PAD(FA_RMAX)], *acc = calloc((size_t)(a->R * dvp), sizeof *acc);
    float *scratch = malloc((size_t)rt_cpu_fa_scratch(a->R, FA_RPQ, FA_D, FA_DV) * sizeof *scratch);
    for (int r = 0; r < RT_CPU_FA_PAD(FA_RMAX); r++) m[r] = -INFINITY, l[r] = 0.0f;
    k->attn->attend(a, 0, 40, m, l, acc, scratch); /* two calls: state carried across */
    k->attn->attend(a, 40, FA_KV, m, l, acc, scratch);
    for (int r = 0; r < a->R; r++)
        for (int e = 0; e < FA_DV; e++) out[r * FA_DV + e] = l[r] > 0 ? acc[r * dvp + e] / l[r] : 0.0f;
    free(acc), free(scratch);
}

static void attention_case(const rt_cpu_kernels_t *s, const rt_cpu_kernels_t *v, int R, bool f16, float cap,
                           const char *id, const char *what) {
    float *q = frand(R * FA_D), *kf = frand(FA_KV * FA_D), *vf = frand(FA_KV * FA_DV);
    uint16_t *kh = malloc(FA_KV * FA_D * sizeof *kh), *vh = malloc(FA_KV * FA_DV * sizeof *vh);
    uint16_t mask[2 * FA_KV];
    for (int i = 0; i < FA_KV * FA_D; i++) kh[i] = rt_fp32_to_fp16(kf[i]);
    for (int i = 0; i < FA_KV * FA_DV; i++) vh[i] = rt_fp32_to_fp16(vf[i]);
    for (int i = 0; i < 2 * FA_KV; i++) {
        const int j = i % FA_KV;
        mask[i] = (j >= 32 && j < 64) || j % 7 == 3 ? 0xfc00 : rt_fp32_to_fp16(uniform());
    }
    const rt_cpu_fa_t a = {
        .q = q, .R = R, .rpq = FA_RPQ, .D = FA_D, .Dv = FA_DV,
        .k = f16 ? (const char *)kh : (const char *)kf, .ldk = FA_D * (f16 ? 2 : 4),
        .v = f16 ? (const char *)vh : (const char *)vf, .ldv = FA_DV * (f16 ? 2 : 4),
        .f16 = f16, .mask = (const char *)mask, .ldm = FA_KV * 2, .mask_f16 = true, .softcap = cap,
    };
    float os[FA_RMAX * FA_DV], ov[FA_RMAX * FA_DV];
    attend_rows(s, &a, os);
    attend_rows(v, &a, ov);
    check(nmse(os, ov, R * FA_DV) <= 1e-5, id, what);
    free(q), free(kf), free(vf), free(kh), free(vh);
}

int main(void) {
    const rt_cpu_kernels_t *s = rt_cpu_kernels_for(RT_CPU_ISA_SCALAR);
    const rt_cpu_kernels_t *v = rt_cpu_kernels_for(RT_CPU_ISA_NEON);
    if (s == NULL || v == NULL) {
        printf("FAIL neon-0 the %s path is not runnable here\n", s ? "neon" : "scalar");
        return 1;
    }
    conversions(s, v);
    products_f32(s, v);
    quant_case(s, v, RT_TYPE_Q8_0, "neon-3.1", "q8_0 mat-vec");
    quant_case(s, v, RT_TYPE_Q4_0, "neon-3.2", "q4_0 mat-vec");
    for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++) blocks_case(s, v, blocks[i]);
    attention_case(s, v, 6, false, 0.0f, "neon-5.1", "attend, f32 keys and values, rows in the lanes");
    attention_case(s, v, 6, true, 0.0f, "neon-5.2", "attend, f16 keys and values, rows in the lanes");
    attention_case(s, v, 6, true, 2.5f, "neon-5.3", "attend, f16, soft-capped, rows in the lanes");
    attention_case(s, v, 3, false, 0.0f, "neon-5.4", "attend, f32 keys and values, keys in the lanes");
    attention_case(s, v, 3, true, 2.5f, "neon-5.5", "attend, f16, soft-capped, keys in the lanes");
    printf("test-neon: %d checks, %d failures\n", n_checked, n_failed);
    return n_failed ? 1 : 0;
}
