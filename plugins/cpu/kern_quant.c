/* SPDX-License-Identifier: MIT */
/* kern_quant.c: products with Q8_0 and Q4_0 weights, compiled per variant.
 * Activations are quantised to Q8_0 once per row (quantize_q8a, the layout
 * of kern.h), and each block pair is an integer dot product scaled by the
 * two F16 scales, accumulated in F32:
 *
 *   Q8_0 x Q8_0: |w| times a with w's sign (so the unsigned-by-signed
 *                multiply of x86 applies): VNNI vpdpbusd, or vpmaddubsw
 *                then vpmaddwd (no saturation: |w|*|a| <= 128*127, pairs
 *                <= 32512);
 *   Q4_0 x Q8_0: the nibbles q (0..15) times a, with the row's stored
 *                -8*sum(a) lane corrections as the accumulator's start, so
 *                the lanes hold sum((q - 8)*a).
 *
 * The scalar and NEON variants compute the same integer sums in C. The
 * result differs from the F32 product by the rounding of the activations
 * to Q8_0 only (and the order of the F32 sums); roundtrip_q8 gives that
 * rounding in F32 so the blocked F32 path (gemm) computes the same sums. */
#include "kern.h"
#include "simd.h"

#include "../../abi/rt_quant.h"

#ifdef RT_SIMD_ON

#if defined(RT_SIMD_AVX512) || defined(RT_SIMD_AVX2)
#  define QK_X86 1
#  include <immintrin.h>
#endif

/* The row kernels of the same variant (the VNNI one shares AVX-512's). */
#if defined(RT_CPU_KERN_AVX512VNNI)
#  define QK_VEC() rt_cpu_kern_vec_avx512()
#else
#  define QK_VEC() RT_KS(rt_cpu_kern_vec)()
#endif

#define QK_NB 4 /* activation rows per pass */
#define QK_RM 2 /* weight rows per pass */

//===--- the activation rows ---===//

typedef struct q8a_row {
    const int8_t *qs;     /* 32 per block */
    const float *d;       /* one per block */
    const int32_t *corr;  /* 8 per block */
} q8a_row_t;

static q8a_row_t q8a_view(const char *row, int64_t K) {
    const size_t nb = (size_t)(K / 32);
    return (q8a_row_t){ (const int8_t *)row, (const float *)(row + nb * 32),
                        (const int32_t *)(row + nb * 36) };
}

static void quantize_q8a(const float *x, int64_t K, void *row) {
    const rt_cpu_kern_vec_t *v = QK_VEC();
    const size_t nb = (size_t)(K / 32);
    int8_t *qs = row;
    float *d = (float *)((char *)row + nb * 32);
    int32_t *corr = (int32_t *)((char *)row + nb * 36);
    for (size_t b = 0; b < nb; b++) {
        rt_block_q8_0_t blk;
        v->f32_to_q8_0(x + b * 32, &blk, 32);
        memcpy(qs + b * 32, blk.qs, sizeof blk.qs);
        d[b] = rt_fp16_to_fp32(blk.d);
        for (int l = 0; l < 8; l++) {
            const int8_t *q = blk.qs + 4 * l;
            corr[b * 8 + (size_t)l] = -8 * (q[0] + q[1] + q[2] + q[3]);
        }
    }
}

static void roundtrip_q8(const float *x, int64_t K, float *out) {
    const rt_cpu_kern_vec_t *v = QK_VEC();
    for (int64_t b = 0; b < K / 32; b++) {
        rt_block_q8_0_t blk;
        v->f32_to_q8_0(x + b * 32, &blk, 32);
        v->q8_0_to_f32(&blk, out + b * 32, 32);
    }
}

//===--- block dot products ---===//

#ifdef QK_X86

/* Eight int32 lanes whose sum is the block's integer dot product. */
RT_INLINE __m256i dot_q8(__m256i w_abs, __m256i w, __m256i a) {
    const __m256i sa = _mm256_sign_epi8(a, w);
#if defined(RT_CPU_KERN_AVX512VNNI)
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), w_abs, sa);
#else
    return _mm256_madd_epi16(_mm256_maddubs_epi16(w_abs, sa), _mm256_set1_epi16(1));
#endif
}

RT_INLINE __m256i dot_q4(__m256i q, __m256i a, __m256i corr) {
#if defined(RT_CPU_KERN_AVX512VNNI)
    return _mm256_dpbusd_epi32(corr, q, a);
#else
    return _mm256_add_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(q, a), _mm256_set1_epi16(1)),
                            corr);
#endif
}

/* A weight block as dot_q8/dot_q4 take it: Q8_0 bytes (and their absolute
 * values), or Q4_0 nibbles in element order (low nibbles, then high). */
typedef struct wblk {
    __m256i q, q_abs;
    float d;
} wblk_t;

RT_INLINE wblk_t w_load(rt_type_t t, const char *row, int64_t b) {
    wblk_t w;
    if (t == RT_TYPE_Q8_0) {
        const rt_block_q8_0_t *blk = (const rt_block_q8_0_t *)row + b;
        w.q = _mm256_loadu_si256((const __m256i *)blk->qs);
        w.q_abs = _mm256_sign_epi8(w.q, w.q);
        w.d = _cvtsh_ss(blk->d);
    } else {
        const rt_block_q4_0_t *blk = (const rt_block_q4_0_t *)row + b;
        const __m128i p = _mm_loadu_si128((const __m128i *)blk->qs), m4 = _mm_set1_epi8(15);
        w.q = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(p, 4), m4), _mm_and_si128(p, m4));
        w.q_abs = w.q;
        w.d = _cvtsh_ss(blk->d);
    }
    return w;
}

RT_INLINE __m256 blk_dot(rt_type_t t, const wblk_t *w, const q8a_row_t *a, int64_t b, __m256 acc) {
    const __m256i av = _mm256_loadu_si256((const __m256i *)(a->qs + b * 32));
    const __m256i s = t == RT_TYPE_Q8_0
                          ? dot_q8(w->q_abs, w->q, av)
                          : dot_q4(w->q, av, _mm256_loadu_si256((const __m256i *)(a->corr + b * 8)));
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(w->d * a->d[b]), acc);
}

/* c[n0 + j][m + i], i < RM, j < NB. */
RT_INLINE void q_tile(const rt_cpu_mm_t *g, rt_type_t t, int64_t m, int64_t n0, int RM, int NB) {
    const char *wr[QK_RM];
    q8a_row_t ar[QK_NB];
    __m256 acc[QK_RM][QK_NB];
    RT_UNROLL(2)
    for (int i = 0; i < RM; i++) {
        wr[i] = g->a + (size_t)(m + i) * g->lda;
        RT_UNROLL(4)
        for (int j = 0; j < NB; j++) acc[i][j] = _mm256_setzero_ps();
    }
    RT_UNROLL(4)
    for (int j = 0; j < NB; j++) ar[j] = q8a_view(g->b + (size_t)(n0 + j) * g->ldb, g->K);
    for (int64_t b = 0; b < g->K / 32; b++) {
        RT_UNROLL(2)
        for (int i = 0; i < RM; i++) {
            const wblk_t w = w_load(t, wr[i], b);
            RT_UNROLL(4)
            for (int j = 0; j < NB; j++) acc[i][j] = blk_dot(t, &w, &ar[j], b, acc[i][j]);
        }
    }
    for (int j = 0; j < NB; j++) {
        float *c = (float *)(g->c + (size_t)(n0 + j) * g->ldc);
        for (int i = 0; i < RM; i++) {
            const __m256 v = acc[i][j];
            __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
            s = _mm_add_ps(s, _mm_movehl_ps(s, s));
            c[m + i] = _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
        }
    }
}

#else /* scalar and NEON: the same integer sums in C */

RT_INLINE int32_t blk_isum(rt_type_t t, const char *row, int64_t b, const int8_t *a, float *out_d) {
    int32_t s = 0;
    if (t == RT_TYPE_Q8_0) {
        const rt_block_q8_0_t *w = (const rt_block_q8_0_t *)row + b;
        for (int i = 0; i < 32; i++) s += w->qs[i] * a[i];
        *out_d = rt_fp16_to_fp32(w->d);
    } else {
        const rt_block_q4_0_t *w = (const rt_block_q4_0_t *)row + b;
        for (int i = 0; i < 16; i++)
            s += ((w->qs[i] & 15) - 8) * a[i] + ((w->qs[i] >> 4) - 8) * a[i + 16];
        *out_d = rt_fp16_to_fp32(w->d);
    }
    return s;
}

RT_INLINE void q_tile(const rt_cpu_mm_t *g, rt_type_t t, int64_t m, int64_t n0, int RM, int NB) {
    for (int j = 0; j < NB; j++) {
        const q8a_row_t a = q8a_view(g->b + (size_t)(n0 + j) * g->ldb, g->K);
        float *c = (float *)(g->c + (size_t)(n0 + j) * g->ldc);
        for (int i = 0; i < RM; i++) {
            const char *row = g->a + (size_t)(m + i) * g->lda;
            float acc = 0.0f, dw;
            for (int64_t b = 0; b < g->K / 32; b++) {
                const int32_t s = blk_isum(t, row, b, a.qs + b * 32, &dw);
                acc += (float)s * (dw * a.d[b]);
            }
            c[m + i] = acc;
        }
    }
}

#endif

//===--- matvec_q ---===//

#define QK_CASE(T, RM)                                              \
    switch (nb) {                                                   \
    case 1: q_tile(g, T, m, n0, RM, 1); break;                      \
    case 2: q_tile(g, T, m, n0, RM, 2); break;                      \
    case 3: q_tile(g, T, m, n0, RM, 3); break;                      \
    default: q_tile(g, T, m, n0, RM, 4); break;                     \
    }

#define QK_TYPE(T)                                                  \
    static void q_rows_##T(const rt_cpu_mm_t *g, int64_t m0, int64_t m1, int64_t n0, int nb) { \
        int64_t m = m0;                                             \
        for (; m + QK_RM <= m1; m += QK_RM) QK_CASE(RT_TYPE_##T, QK_RM) \
        for (; m < m1; m++) QK_CASE(RT_TYPE_##T, 1)                 \
    }

QK_TYPE(Q8_0)
QK_TYPE(Q4_0)

static void matvec_q(const rt_cpu_mm_t *g, int64_t m0, int64_t m1) {
    for (int64_t n0 = 0; n0 < g->N; n0 += QK_NB) {
        const int nb = (int)(g->N - n0 < QK_NB ? g->N - n0 : QK_NB);
        if (g->atype == RT_TYPE_Q8_0)
            q_rows_Q8_0(g, m0, m1, n0, nb);
        else
            q_rows_Q4_0(g, m0, m1, n0, nb);
    }
}

static const rt_cpu_kern_quant_t kern_quant = {
    .quantize_q8a = quantize_q8a,
    .roundtrip_q8 = roundtrip_q8,
    .matvec_q = matvec_q,
};

#endif /* RT_SIMD_ON */

const rt_cpu_kern_quant_t *RT_KS(rt_cpu_kern_quant)(void) {
#ifdef RT_SIMD_ON
    return &kern_quant;
#else
    return NULL;
#endif
}
