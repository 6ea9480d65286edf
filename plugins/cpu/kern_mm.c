/* SPDX-License-Identifier: MIT */
/* kern_mm.c: the F32-arithmetic matrix products of the kernel table, in
 * simd.h's vocabulary, compiled per variant.
 *
 * gemm (any N, any a type) is blocked and packed in the manner of BLIS.
 * c[n][m] is computed in tiles of MM_MR rows of b by MM_P = MM_NV*RT_W rows
 * of a, the tile held in MM_MR*MM_NV vector registers. For each depth block
 * of MM_KC, the rows of a of one work block (MM_MC of them) are converted
 * to F32 and transposed into panels of MM_P lanes per k (the packed block,
 * sized for L2); b needs no packing: each of the MM_MR rows is read in
 * place and broadcast one element per k (its 4*MM_KC bytes stay in L1 while
 * the tile walks the block's panels). So the weights are converted and
 * transposed once per product, whatever N is, and the activations (b) may
 * be any strided view with unit stride along k (attention's permuted Q, docs/memory.md §2.5).
 *
 * matvec (small N, F32/F16/BF16 a) streams the rows of a once per NB rows of
 * b, converting on the fly, prefetching the next rows, and keeps an RM x NB
 * grid of dot products along k in registers. */
#include "kern.h"
#include "simd.h"

#include "../../abi/rt_quant.h"

#ifdef RT_SIMD_ON

#if defined(MM_NV) /* tile sizes set on the command line, for tuning */
#  define MV_RM 4
#elif defined(RT_SIMD_AVX512)
#  define MM_NV 3  /* vectors of a per tile row: 48 rows of a */
#  define MM_MR 8  /* rows of b per tile: 24 accumulators of 32 registers */
#  define MV_RM 4
#elif defined(RT_SIMD_AVX2)
#  define MM_NV 2  /* 16 rows of a, 6 of b: 12 accumulators of 16 registers */
#  define MM_MR 6
#  define MV_RM 2
#elif defined(RT_SIMD_NEON)
#  define MM_NV 3
#  define MM_MR 8
#  define MV_RM 4
#else
#  define MM_NV 4
#  define MM_MR 4
#  define MV_RM 2
#endif
#define MM_P (MM_NV * RT_W)   /* rows of a per packed panel */
#ifndef MM_KC
#  define MM_KC 512           /* depth per packed block: a multiple of 32 and of RT_W */
#endif
#ifndef MM_PANELS
#  define MM_PANELS 4         /* panels per work block */
#endif
#define MM_MC (MM_PANELS * MM_P)
#define MV_NB 4               /* rows of b per matvec pass */

/* Scratch per thread: the packed block, RT_W converted rows, a zero row. */
#define MM_WSIZE ((size_t)(MM_MC + RT_W + 1) * MM_KC * sizeof(float))

//===--- packing a ---===//

/* Bytes from a row's start to element k (k a multiple of 32 for blocks). */
static size_t row_offset(rt_type_t t, int64_t k) {
    switch (t) {
    case RT_TYPE_F16:
    case RT_TYPE_BF16: return (size_t)k * 2;
    case RT_TYPE_Q8_0: return (size_t)(k / RT_QK8_0) * sizeof(rt_block_q8_0_t);
    case RT_TYPE_Q4_0: return (size_t)(k / RT_QK4_0) * sizeof(rt_block_q4_0_t);
    case RT_TYPE_F32: return (size_t)k * 4;
    default: { /* the block types of kern_blocks.c */
        const int64_t blck = rt_cpu_act_is_q8k(t) ? RT_QK_K : 32;
        return (size_t)(k / blck) * rt_cpu_block_bytes(t);
    }
    }
}

static void row_to_f32(rt_type_t t, const char *src, float *dst, int64_t n) {
    const rt_cpu_kern_vec_t *v = RT_KS(rt_cpu_kern_vec)();
    switch (t) {
    case RT_TYPE_F16: v->f16_to_f32((const uint16_t *)src, dst, n); return;
    case RT_TYPE_BF16: v->bf16_to_f32((const uint16_t *)src, dst, n); return;
    case RT_TYPE_Q8_0: v->q8_0_to_f32(src, dst, n); return;
    case RT_TYPE_Q4_0: v->q4_0_to_f32(src, dst, n); return;
    case RT_TYPE_F32: memcpy(dst, src, (size_t)n * sizeof dst[0]); return;
    default: RT_KS(rt_cpu_kern_blocks)()->to_f32(t, src, dst, n); return;
    }
}

/* Rows [r, r + RT_W) of a over [k0, k0 + kc) as F32: F32 rows in place,
 * others converted into tmp; rows past M read zeros. */
static void a_rows(const rt_cpu_mm_t *g, int64_t r, int64_t k0, int64_t kc, float *tmp,
                   const float *zeros, const float *rows[RT_W]) {
    for (int64_t i = 0; i < RT_W; i++) {
        const int64_t m = r + i;
        const char *src = g->a + (size_t)m * g->lda + row_offset(g->atype, k0);
        if (m >= g->M) {
            rows[i] = zeros;
        } else if (g->atype == RT_TYPE_F32) {
            rows[i] = (const float *)src;
        } else {
            row_to_f32(g->atype, src, tmp + i * MM_KC, kc);
            rows[i] = tmp + i * MM_KC;
        }
    }
}

/* ap[k*MM_P + i] = a[m + i][k0 + k]: RT_W x RT_W blocks transposed in registers. */
static void pack_panel(const rt_cpu_mm_t *g, int64_t m, int64_t k0, int64_t kc, float *ap,
                       float *tmp, const float *zeros) {
    for (int64_t v = 0; v < MM_NV; v++) {
        const float *rows[RT_W];
        a_rows(g, m + v * RT_W, k0, kc, tmp, zeros, rows);
        int64_t k = 0;
        for (; k + RT_W <= kc; k += RT_W) {
            rt_vf t[RT_W];
            RT_UNROLL(16)
            for (int i = 0; i < RT_W; i++) t[i] = vf_load(rows[i] + k);
            vf_transpose(t);
            RT_UNROLL(16)
            for (int j = 0; j < RT_W; j++) vf_store(ap + (k + j) * MM_P + v * RT_W, t[j]);
        }
        for (; k < kc; k++)
            for (int i = 0; i < RT_W; i++) ap[k * MM_P + v * RT_W + i] = rows[i][k];
    }
}

//===--- the micro-kernel ---===//

/* c[j][0..mvalid) (+)= sum_k b[j][k] * ap[k][..] for j < nr: the whole tile
 * in registers, one broadcast of b per row and k, fused multiply-adds. */
static void tile(int64_t kc, const float *restrict ap, const float *const bp[MM_MR], float *c,
                 size_t ldc, int64_t nr, int64_t mvalid, bool accumulate) {
    rt_vf acc[MM_MR][MM_NV];
    const float *b[MM_MR];
    RT_UNROLL(16)
    for (int j = 0; j < MM_MR; j++) {
        b[j] = bp[j];
        RT_UNROLL(16)
        for (int v = 0; v < MM_NV; v++) acc[j][v] = vf_zero();
    }
    for (int64_t k = 0; k < kc; k++, ap += MM_P) {
        rt_vf a[MM_NV];
        RT_UNROLL(16)
        for (int v = 0; v < MM_NV; v++) a[v] = vf_load(ap + v * RT_W);
        RT_UNROLL(16)
        for (int j = 0; j < MM_MR; j++) {
            const rt_vf bj = vf_set1(b[j][k]);
            RT_UNROLL(16)
            for (int v = 0; v < MM_NV; v++) acc[j][v] = vf_fma(a[v], bj, acc[j][v]);
        }
    }
    for (int64_t j = 0; j < nr; j++) {
        float *cj = c + (size_t)j * ldc;
        for (int64_t v = 0; v < MM_NV && v * RT_W < mvalid; v++) {
            rt_vf r = acc[j][v];
            if (accumulate) r = vf_add(r, vf_load_n(cj, v * RT_W, mvalid));
            vf_store_n(cj, v * RT_W, mvalid, r);
        }
    }
}

//===--- gemm ---===//

/* The MM_MR rows of b from n0 (the last one repeated past N: computed, not
 * stored), each from column k0. */
static void b_rows(const rt_cpu_mm_t *g, int64_t n0, int64_t k0, const float *bp[MM_MR]) {
    for (int64_t j = 0; j < MM_MR; j++) {
        const int64_t n = n0 + j < g->N ? n0 + j : g->N - 1;
        bp[j] = (const float *)(g->b + (size_t)n * g->ldb) + k0;
    }
}

/* One depth block of one work block: pack a, then every tile. */
static void gemm_block(const rt_cpu_mm_t *g, int64_t mb, int64_t mc, int64_t k0, int64_t kc,
                       float *ablk, float *tmp, const float *zeros) {
    const int64_t n_panels = (mc + MM_P - 1) / MM_P;
    const size_t ldc = g->ldc / sizeof(float);
    for (int64_t p = 0; p < n_panels; p++)
        pack_panel(g, mb + p * MM_P, k0, kc, ablk + p * MM_KC * MM_P, tmp, zeros);
    for (int64_t n0 = 0; n0 < g->N; n0 += MM_MR) {
        const float *bp[MM_MR];
        b_rows(g, n0, k0, bp);
        const int64_t nr = g->N - n0 < MM_MR ? g->N - n0 : MM_MR;
        float *crow = (float *)(g->c + (size_t)n0 * g->ldc);
        for (int64_t p = 0; p < n_panels; p++) {
            const int64_t m = mb + p * MM_P, left = mb + mc - m;
            tile(kc, ablk + p * MM_KC * MM_P, bp, crow + m, ldc, nr, left < MM_P ? left : MM_P,
                 k0 > 0);
        }
    }
}

static void mm_gemm(const rt_cpu_mm_t *g, int64_t m0, int64_t m1, void *scratch) {
    float *ablk = scratch, *tmp = ablk + MM_MC * MM_KC, *zeros = tmp + RT_W * MM_KC;
    memset(zeros, 0, MM_KC * sizeof zeros[0]);
    for (int64_t mb = m0; mb < m1; mb += MM_MC) {
        const int64_t mc = m1 - mb < MM_MC ? m1 - mb : MM_MC;
        for (int64_t k0 = 0; k0 < g->K; k0 += MM_KC) {
            const int64_t kc = g->K - k0 < MM_KC ? g->K - k0 : MM_KC;
            gemm_block(g, mb, mc, k0, kc, ablk, tmp, zeros);
        }
    }
}

//===--- matvec ---===//

/* RT_W elements of a row of a from k, as F32 (n < RT_W: a partial block). */
RT_INLINE rt_vf a_load(rt_type_t t, const char *row, int64_t k, int64_t n) {
#if RT_W > 1
    if (n < RT_W && t != RT_TYPE_F32) {
        float part[RT_W] = {0};
        row_to_f32(t, row + row_offset(t, k), part, n);
        return vf_load(part);
    }
#endif
    if (t == RT_TYPE_F16) return vf_load_f16((const uint16_t *)row + k);
    if (t == RT_TYPE_BF16) return vf_load_bf16((const uint16_t *)row + k);
    return n < RT_W ? vf_load_part((const float *)row + k, n) : vf_load((const float *)row + k);
}

/* One RT_W-block of the RM x NB dot products, k to k + n (n <= RT_W). */
RT_INLINE void mv_step(rt_type_t t, const char *const *ar, const float *const *br, int64_t k,
                       int64_t n, int RM, int NB, rt_vf acc[MV_RM][MV_NB]) {
    rt_vf x[MV_NB];
    RT_UNROLL(4)
    for (int j = 0; j < NB; j++) x[j] = n < RT_W ? vf_load_part(br[j] + k, n) : vf_load(br[j] + k);
    RT_UNROLL(4)
    for (int i = 0; i < RM; i++) {
        const rt_vf w = a_load(t, ar[i], k, n);
        RT_UNROLL(4)
        for (int j = 0; j < NB; j++) acc[i][j] = vf_fma(w, x[j], acc[i][j]);
    }
}

/* Bytes of a's row per element. */
RT_INLINE size_t mv_esize(rt_type_t t) { return t == RT_TYPE_F32 ? 4 : 2; }

/* Whole cache lines of the tile's RM rows a step at a time, each line
 * prefetched once: the same bytes of the rows the next tile reads (into
 * L2), which the hardware prefetchers do not follow when RM rows are read
 * side by side a line at a time (F16, m = k = 4096, n = 1, 2 threads, with
 * work items of 256 KiB: 2.65 -> 1.48 ms, medians of 5 on a loaded
 * machine), or for the last tile of a range, whose next rows may be
 * another thread's, MV_PREFETCH bytes ahead in its own rows. */
#define MV_LINE 64
#define MV_PREFETCH 1536
RT_INLINE void mv_lines(rt_type_t t, const char *const *ar, const char *const *pf,
                        const float *const *br, int64_t k, int RM, int NB,
                        rt_vf acc[MV_RM][MV_NB]) {
    const int64_t per_line = MV_LINE / (int64_t)mv_esize(t);
    RT_UNROLL(4)
    for (int i = 0; i < RM; i++) __builtin_prefetch(pf[i] + (size_t)k * mv_esize(t), 0, 2);
    RT_UNROLL(4)
    for (int64_t s = 0; s < per_line; s += RT_W) mv_step(t, ar, br, k + s, RT_W, RM, NB, acc);
}

/* c[n0 + j][m + i] for i < RM, j < NB: RM*NB dot products over K at once,
 * each of a's RT_W-blocks loaded (and converted) once for the NB rows of b;
 * rows [m, m + RM) are rows of the range that ends at m1. */
RT_INLINE void mv_tile(const rt_cpu_mm_t *g, rt_type_t t, int64_t m, int64_t m1, int64_t n0,
                       int RM, int NB) {
    const char *ar[MV_RM], *pf[MV_RM];
    const float *br[MV_NB];
    rt_vf acc[MV_RM][MV_NB];
    RT_UNROLL(4)
    for (int i = 0; i < RM; i++) {
        ar[i] = g->a + (size_t)(m + i) * g->lda;
        pf[i] = m + RM + i < m1 ? ar[i] + (size_t)RM * g->lda : ar[i] + MV_PREFETCH;
        RT_UNROLL(4)
        for (int j = 0; j < NB; j++) acc[i][j] = vf_zero();
    }
    RT_UNROLL(4)
    for (int j = 0; j < NB; j++) br[j] = (const float *)(g->b + (size_t)(n0 + j) * g->ldb);
    const int64_t per_line = MV_LINE / (int64_t)mv_esize(t);
    const int64_t kl = RT_W > 1 ? g->K - g->K % per_line : 0, kf = g->K - g->K % RT_W;
    int64_t k = 0;
    for (; k < kl; k += per_line) mv_lines(t, ar, pf, br, k, RM, NB, acc);
    for (; k < kf; k += RT_W) mv_step(t, ar, br, k, RT_W, RM, NB, acc);
    if (kf < g->K) mv_step(t, ar, br, kf, g->K - kf, RM, NB, acc);
    for (int j = 0; j < NB; j++) {
        float *c = (float *)(g->c + (size_t)(n0 + j) * g->ldc);
        for (int i = 0; i < RM; i++) c[m + i] = vf_hsum(acc[i][j]);
    }
}

/* Constant tile sizes and type, so each call is specialised. */
#define MV_CASE(T, RM)                                              \
    switch (nb) {                                                   \
    case 1: mv_tile(g, T, m, m1, n0, RM, 1); break;                 \
    case 2: mv_tile(g, T, m, m1, n0, RM, 2); break;                 \
    case 3: mv_tile(g, T, m, m1, n0, RM, 3); break;                 \
    default: mv_tile(g, T, m, m1, n0, RM, 4); break;                \
    }

/* One row of b: a's rows one at a time, each a single stream the hardware
 * prefetchers follow, its next row prefetched; RM rows side by side pay
 * for sharing b's loads, which one row of b does not need: TinyLlama's F16
 * decode (8 layers, 2 threads, Zen 5) 41-51 -> 51-53 tokens/s. */
#define MV_TYPE(T)                                                  \
    static void mv_rows_##T(const rt_cpu_mm_t *g, int64_t m0, int64_t m1, int64_t n0, int nb) { \
        int64_t m = m0;                                             \
        if (nb > 1)                                                 \
            for (; m + MV_RM <= m1; m += MV_RM) MV_CASE(RT_TYPE_##T, MV_RM) \
        for (; m < m1; m++) MV_CASE(RT_TYPE_##T, 1)                 \
    }

MV_TYPE(F32)
MV_TYPE(F16)
MV_TYPE(BF16)

static void mm_matvec(const rt_cpu_mm_t *g, int64_t m0, int64_t m1) {
    for (int64_t n0 = 0; n0 < g->N; n0 += MV_NB) {
        const int nb = (int)(g->N - n0 < MV_NB ? g->N - n0 : MV_NB);
        switch (g->atype) {
        case RT_TYPE_F16: mv_rows_F16(g, m0, m1, n0, nb); break;
        case RT_TYPE_BF16: mv_rows_BF16(g, m0, m1, n0, nb); break;
        default: mv_rows_F32(g, m0, m1, n0, nb); break;
        }
    }
}

static const rt_cpu_kern_mm_t kern_mm = {
    .gemm_rows = MM_MC,
    .gemm_wsize = MM_WSIZE,
    .gemm = mm_gemm,
    .matvec = mm_matvec,
};

const rt_cpu_kern_mm_t *RT_KS(rt_cpu_kern_mm)(void) {
    return &kern_mm;
}

#else

const rt_cpu_kern_mm_t *RT_KS(rt_cpu_kern_mm)(void) {
    return NULL;
}

#endif
