/* SPDX-License-Identifier: MIT */
/* kern_quant.c: products with Q8_0 and Q4_0 weights (and Q4_1 ones in the
 * r16 layout, below), compiled per variant.
 * Activations are quantised to Q8_0 once per row (quantize_q8a), and each
 * block is an integer dot product scaled by the two F16 scales, summed in
 * F32. x86 multiplies unsigned bytes by signed ones, so the weights are
 * made unsigned and the activation row carries the lane corrections:
 *
 *   Q4_0: its nibbles q (0..15) as they are, from the c8 lanes:
 *         the lanes end as sums of (q - 8)*a.
 *   Q8_0: with VNNI, w + 128 (w xor 0x80) from the c128 lanes; without,
 *         |w| times a with w's sign (vpmaddubsw cannot overflow: a pair of
 *         products is at most 2*128*127).
 *
 * The layouts of an activation row, by variant (offsets in bytes):
 *
 *   per block (AVX2, scalar, NEON): block b at 128*b: qs[32], d x 8 (F32),
 *       c8[8], c128[8]; lane l covers bytes 4l..4l+3.
 *   AVX-512 pairs: blocks 2p, 2p+1 at 256*p: qs[64], d x 8 for each (16),
 *       c8[16], c128[16]: one 512-bit register per part.
 *   VNNI quads: blocks 4p..4p+3 at 512*p: elements 0..15 of the four
 *       (64 bytes), then 16..31, then at +128 d and at +192 the correction
 *       for the weights' type (c8 for Q4_0, c128 for Q8_0), 4 lanes for
 *       each block; lane l of a block covers bytes 4l..4l+3 of both its
 *       halves. A step is 4 blocks of a weight row put in this order by
 *       word permutations (w_load), so that the scales are converted and
 *       applied once per 4 blocks.
 *
 * A row ends in a whole pair (quad with VNNI) whose missing blocks are
 * zero. The scalar and
 * NEON variants compute the same integer sums in C. A result differs from
 * the F32 product by the activations' rounding to Q8_0 and the order of the
 * F32 sums only; roundtrip_q8 gives that rounding in F32 so that the
 * blocked F32 path (gemm) computes the same products.
 *
 * Weights in the CPU_Weights buffer type are in the r16 layout (repack.h:
 * 16 rows interleaved 4 bytes at a time; Q4_1 too) and take matvec_r, with their own
 * activation rows (quantize_q8r, one 40-byte block per 32 elements): a
 * 64-byte load of weights and a broadcast 4 bytes of activation make one
 * vpdpbusd of 16 rows' sums in 16 lanes (two vpmaddubsw steps of 8 rows
 * without VNNI; one row a step in C on scalar and NEON), so nothing is
 * permuted or reduced, and each block's scales are applied once for 16
 * rows. Measured on Zen 4 (2 cores) against the GGUF-layout kernel: n = 1
 * weights in L3 0.31-0.45x -> 0.6-0.65x of the read bandwidth (Q8_0),
 * 0.27 -> 0.5-0.55x (Q4_0); n = 4 2-3x faster. */
#include "kern.h"
#include "repack.h"
#include "simd.h"

#include "../../abi/rt_quant.h"

#ifdef RT_SIMD_ON

#if defined(RT_SIMD_AVX512) || defined(RT_SIMD_AVX2)
#  include <immintrin.h>
#endif

/* The row kernels of the same variant (the VNNI one shares AVX-512's). */
#if defined(RT_CPU_KERN_AVX512VNNI)
#  define QK_VEC() rt_cpu_kern_vec_avx512()
#  define QK_VNNI 1
#else
#  define QK_VEC() RT_KS(rt_cpu_kern_vec)()
#endif

/* Blocks of a weight row per step, and per layout unit of the activation
 * row (128 bytes a block). */
#if defined(QK_VNNI)
#  define QK_STEP_OF(t) 4
#elif defined(RT_SIMD_AVX512)
#  define QK_STEP_OF(t) 2
#else
#  define QK_STEP_OF(t) 1
#endif

#define QK_RM 4 /* most weight rows per pass */
/* Prefetch: the rows of a pass are read a few blocks at a time, side by
 * side, which the hardware prefetchers follow badly, so each step fetches
 * the same bytes of the pass's next rows (a whole pass ahead, into L2:
 * into L1 it would evict what is being read; weights in DRAM went from
 * 14 to 25 GB/s a core). The last pass of a range, whose next rows may be
 * another thread's, prefetches QK_PREFETCH bytes ahead in its own rows. */
#define QK_PREFETCH 1536
#define QK_NB 4 /* most activation rows per pass */

//===--- activation rows ---===//

/* Block b (of a row's blocks) placed in the variant's layout. */
static void q8a_place(char *row, int64_t b, rt_type_t atype, const int8_t q[32], float d) {
    int32_t s[8];
    for (int l = 0; l < 8; l++) s[l] = q[4 * l] + q[4 * l + 1] + q[4 * l + 2] + q[4 * l + 3];
#if defined(QK_VNNI)
    /* Q8_0's weights come as w + 128: its correction is -128 times the sums. */
    const int32_t k = atype == RT_TYPE_Q4_0 ? -8 : -128;
    char *u = row + (b / 4) * 512;
    const int j = (int)(b % 4);
    memcpy(u + 16 * j, q, 16);
    memcpy(u + 64 + 16 * j, q + 16, 16);
    for (int l = 0; l < 4; l++) {
        const int32_t c = k * (s[l] + s[l + 4]);
        memcpy(u + 128 + 16 * j + 4 * l, &d, 4);
        memcpy(u + 192 + 16 * j + 4 * l, &c, 4);
    }
#else
    (void)atype;
    const int step = QK_STEP_OF(atype);
    char *u = row + (b / step) * 128 * step + (b % step) * 32;
    memcpy(u, q, 32);
    for (int l = 0; l < 8; l++) {
        const int32_t c8 = -8 * s[l], c128 = -128 * s[l];
        memcpy(u + 32 * step + 4 * l, &d, 4);
        memcpy(u + 64 * step + 4 * l, &c8, 4);
        memcpy(u + 96 * step + 4 * l, &c128, 4);
    }
#endif
}

static void quantize_q8a(const float *x, int64_t K, rt_type_t atype, void *row) {
    const rt_cpu_kern_vec_t *v = QK_VEC();
    memset(row, 0, rt_cpu_q8a_size(K)); /* the missing blocks of a short last step */
    for (int64_t b = 0; b < K / 32; b++) {
        rt_block_q8_0_t blk;
        v->f32_to_q8_0(x + b * 32, &blk, 32);
        q8a_place(row, b, atype, blk.qs, rt_fp16_to_fp32(blk.d));
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

//===--- AVX-512 with VNNI: whole steps per 512-bit register ---===//
#if defined(QK_VNNI)

typedef __m512 qacc_t;

/* A step's weights come in as overlapping 64-byte windows, and word
 * permutations put the quants in the activation's order (elements 0..15
 * of 4 blocks, then 16..31) and the scales over their blocks' 4 lanes:
 * per-block loads, inserts and scale broadcasts cost more vector slots than
 * the dot products they feed (Zen 4 has 4 of 256 bits a cycle), and with 4
 * blocks a register the scale work is done once per 4 blocks. Q4_0 (18-byte
 * blocks) reads windows at 0 and 8; Q8_0 (34) at 0 and 56 for elements
 * 0..15 and the scales, 8 and 72 for 16..31. Index 32 + i is word i of the
 * second window of a pair. */
static const uint16_t q4_qs_idx[32] __attribute__((aligned(64))) = {
    1,  2,  3,  4,  5,  6,  7,  8,  10, 11, 12, 13, 14, 15, 16, 17,
    19, 20, 21, 22, 23, 24, 25, 26, 56, 57, 58, 59, 60, 61, 62, 63,
};
static const uint16_t q4_d_idx[32] __attribute__((aligned(64))) = {
    0, 0, 0, 0, 9, 9, 9, 9, 18, 18, 18, 18, 27, 27, 27, 27,
};
static const uint16_t q8_lo_idx[32] __attribute__((aligned(64))) = {
    1,  2,  3,  4,  5,  6,  7,  8,  18, 19, 20, 21, 22, 23, 24, 25,
    39, 40, 41, 42, 43, 44, 45, 46, 56, 57, 58, 59, 60, 61, 62, 63,
};
static const uint16_t q8_hi_idx[32] __attribute__((aligned(64))) = {
    5,  6,  7,  8,  9,  10, 11, 12, 22, 23, 24, 25, 26, 27, 28, 29,
    39, 40, 41, 42, 43, 44, 45, 46, 56, 57, 58, 59, 60, 61, 62, 63,
};
static const uint16_t q8_d_idx[32] __attribute__((aligned(64))) = {
    0, 0, 0, 0, 17, 17, 17, 17, 38, 38, 38, 38, 55, 55, 55, 55,
};

typedef struct wblk {
    __m512i lo, hi;  /* elements 0..15, 16..31 of 4 blocks: nibbles, or w + 128 */
    __m512 d;        /* the blocks' scales, 4 lanes each */
} wblk_t;

RT_INLINE __mmask32 words_below(int n) {
    return n >= 32 ? (__mmask32)~0u : n <= 0 ? 0 : (__mmask32)((1u << n) - 1u);
}

/* The 64-byte window at p + off of a step of `bytes`, words past it zero
 * (masked loads do not fault): a short last step needs no other code and
 * reads nothing past the row. */
RT_INLINE __m512i w_window(const char *p, int off, int bytes) {
    return _mm512_maskz_loadu_epi16(words_below((bytes - off) / 2), p + off);
}

RT_INLINE __m512i w_idx(const uint16_t *idx) { return _mm512_load_si512(idx); }

/* nv (1..4) blocks from block b. */
RT_INLINE wblk_t w_load(rt_type_t t, const char *row, int64_t b, int nv) {
    wblk_t w;
    if (t == RT_TYPE_Q4_0) {
        const char *p = row + (size_t)b * 18;
        const __m512i x0 = w_window(p, 0, 18 * nv), x1 = w_window(p, 8, 18 * nv);
        const __m512i qs = _mm512_permutex2var_epi16(x0, w_idx(q4_qs_idx), x1);
        const __m512i m4 = _mm512_set1_epi8(15);
        w.lo = _mm512_and_si512(qs, m4);
        w.hi = _mm512_and_si512(_mm512_srli_epi16(qs, 4), m4);
        const __m512i d = _mm512_permutexvar_epi16(w_idx(q4_d_idx), x0);
        w.d = _mm512_cvtph_ps(_mm512_castsi512_si256(d));
    } else {
        const char *p = row + (size_t)b * 34;
        const __m512i x0 = w_window(p, 0, 34 * nv), x1 = w_window(p, 56, 34 * nv);
        const __m512i x2 = w_window(p, 8, 34 * nv), x3 = w_window(p, 72, 34 * nv);
        const __m512i flip = _mm512_set1_epi8((char)0x80);
        w.lo = _mm512_xor_si512(_mm512_permutex2var_epi16(x0, w_idx(q8_lo_idx), x1), flip);
        w.hi = _mm512_xor_si512(_mm512_permutex2var_epi16(x2, w_idx(q8_hi_idx), x3), flip);
        const __m512i d = _mm512_permutex2var_epi16(x0, w_idx(q8_d_idx), x1);
        w.d = _mm512_cvtph_ps(_mm512_castsi512_si256(d));
    }
    return w;
}

/* The layout (q8a_place): lo[64] hi[64] d[64], then c8 or c128[64]. */
RT_INLINE qacc_t blk_dot(rt_type_t t, const wblk_t *w, const char *a, qacc_t acc) {
    (void)t;
    __m512i s = _mm512_dpbusd_epi32(_mm512_loadu_si512(a + 192), w->lo, _mm512_loadu_si512(a));
    s = _mm512_dpbusd_epi32(s, w->hi, _mm512_loadu_si512(a + 64));
    const __m512 sc = _mm512_mul_ps(w->d, _mm512_loadu_ps((const float *)(a + 128)));
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), sc, acc);
}

RT_INLINE qacc_t acc_zero(void) { return _mm512_setzero_ps(); }
RT_INLINE float acc_sum(qacc_t v) { return _mm512_reduce_add_ps(v); }

//===--- AVX-512 without VNNI: a pair per 512-bit register ---===//
#elif defined(RT_SIMD_AVX512)

typedef __m512 qacc_t;

typedef struct wblk {
    __m512i q;       /* unsigned bytes (|w| or nibbles), in element order */
    __mmask64 neg;   /* Q8_0: where w < 0 */
    __m512 d;        /* the two scales, 8 lanes each */
} wblk_t;

RT_INLINE __m512 w_scales(uint16_t d0, uint16_t d1) {
    const __m256i h = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_set1_epi16((short)d0)),
                                              _mm_set1_epi16((short)d1), 1);
    return _mm512_cvtph_ps(h);
}

RT_INLINE wblk_t w_load(rt_type_t t, const char *row, int64_t b, int nv) {
    const bool two = nv > 1;
    wblk_t w = { .neg = 0 };
    if (t == RT_TYPE_Q8_0) {
        const rt_block_q8_0_t *x = (const rt_block_q8_0_t *)row + b;
        const __m256i hi = two ? _mm256_loadu_si256((const __m256i *)x[1].qs) : _mm256_setzero_si256();
        w.q = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)x[0].qs)), hi, 1);
        w.neg = _mm512_movepi8_mask(w.q);
        w.q = _mm512_abs_epi8(w.q);
        w.d = w_scales(x[0].d, two ? x[1].d : 0);
    } else {
        const rt_block_q4_0_t *x = (const rt_block_q4_0_t *)row + b;
        const __m128i p1 = two ? _mm_loadu_si128((const __m128i *)x[1].qs) : _mm_setzero_si128();
        const __m256i p = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)x[0].qs)), p1, 1);
        const __m256i m4 = _mm256_set1_epi8(15);
        const __m256i lo = _mm256_and_si256(p, m4), hi = _mm256_and_si256(_mm256_srli_epi16(p, 4), m4);
        /* [lo0 lo1 hi0 hi1] -> [lo0 hi0 lo1 hi1]: each block's elements in order */
        const __m512i z = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
        w.q = _mm512_shuffle_i64x2(z, z, _MM_SHUFFLE(3, 1, 2, 0));
        w.d = w_scales(x[0].d, two ? x[1].d : 0);
    }
    return w;
}

RT_INLINE qacc_t blk_dot(rt_type_t t, const wblk_t *w, const char *a, qacc_t acc) {
    const __m512i av = _mm512_loadu_si512(a), ones = _mm512_set1_epi16(1);
    __m512i s;
    if (t == RT_TYPE_Q8_0) {
        const __m512i sa = _mm512_mask_sub_epi8(av, w->neg, _mm512_setzero_si512(), av);
        s = _mm512_madd_epi16(_mm512_maddubs_epi16(w->q, sa), ones);
    } else {
        s = _mm512_add_epi32(_mm512_madd_epi16(_mm512_maddubs_epi16(w->q, av), ones),
                             _mm512_loadu_si512(a + 128));
    }
    const __m512 sc = _mm512_mul_ps(w->d, _mm512_loadu_ps((const float *)(a + 64)));
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), sc, acc);
}

RT_INLINE qacc_t acc_zero(void) { return _mm512_setzero_ps(); }
RT_INLINE float acc_sum(qacc_t v) { return _mm512_reduce_add_ps(v); }

//===--- AVX2: one block per register ---===//
#elif defined(RT_SIMD_AVX2)

typedef __m256 qacc_t;

typedef struct wblk {
    __m256i q, q_abs;   /* Q8_0: w and |w|; Q4_0: the nibbles (both) */
    __m256 d;
} wblk_t;

RT_INLINE wblk_t w_load(rt_type_t t, const char *row, int64_t b, int nv) {
    (void)nv;
    wblk_t w;
    if (t == RT_TYPE_Q8_0) {
        const rt_block_q8_0_t *x = (const rt_block_q8_0_t *)row + b;
        w.q = _mm256_loadu_si256((const __m256i *)x->qs);
        w.q_abs = _mm256_sign_epi8(w.q, w.q);
        w.d = _mm256_set1_ps(_cvtsh_ss(x->d));
    } else {
        const rt_block_q4_0_t *x = (const rt_block_q4_0_t *)row + b;
        const __m128i p = _mm_loadu_si128((const __m128i *)x->qs), m4 = _mm_set1_epi8(15);
        w.q = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(p, 4), m4), _mm_and_si128(p, m4));
        w.q_abs = w.q;
        w.d = _mm256_set1_ps(_cvtsh_ss(x->d));
    }
    return w;
}

RT_INLINE qacc_t blk_dot(rt_type_t t, const wblk_t *w, const char *a, qacc_t acc) {
    const __m256i av = _mm256_loadu_si256((const __m256i *)a), ones = _mm256_set1_epi16(1);
    __m256i s;
    if (t == RT_TYPE_Q8_0) {
        s = _mm256_madd_epi16(_mm256_maddubs_epi16(w->q_abs, _mm256_sign_epi8(av, w->q)), ones);
    } else {
        s = _mm256_add_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(w->q, av), ones),
                             _mm256_loadu_si256((const __m256i *)(a + 64)));
    }
    const __m256 sc = _mm256_mul_ps(w->d, _mm256_loadu_ps((const float *)(a + 32)));
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), sc, acc);
}

RT_INLINE qacc_t acc_zero(void) { return _mm256_setzero_ps(); }
RT_INLINE float acc_sum(qacc_t v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

//===--- scalar and NEON: the same integer sums in C ---===//
#else

typedef float qacc_t;

typedef struct wblk {
    int8_t q[32];  /* signed weights: Q4_0's q - 8 */
    float d;
} wblk_t;

RT_INLINE wblk_t w_load(rt_type_t t, const char *row, int64_t b, int nv) {
    (void)nv;
    wblk_t w;
    if (t == RT_TYPE_Q8_0) {
        const rt_block_q8_0_t *x = (const rt_block_q8_0_t *)row + b;
        memcpy(w.q, x->qs, sizeof w.q);
        w.d = rt_fp16_to_fp32(x->d);
    } else {
        const rt_block_q4_0_t *x = (const rt_block_q4_0_t *)row + b;
        for (int i = 0; i < 16; i++) {
            w.q[i] = (int8_t)((x->qs[i] & 15) - 8);
            w.q[i + 16] = (int8_t)((x->qs[i] >> 4) - 8);
        }
        w.d = rt_fp16_to_fp32(x->d);
    }
    return w;
}

RT_INLINE qacc_t blk_dot(rt_type_t t, const wblk_t *w, const char *a, qacc_t acc) {
    (void)t;
    const int8_t *q = (const int8_t *)a;
    float d;
    memcpy(&d, a + 32, sizeof d);
    int32_t s = 0;
    for (int i = 0; i < 32; i++) s += w->q[i] * q[i];
    return acc + (float)s * (w->d * d);
}

RT_INLINE qacc_t acc_zero(void) { return 0.0f; }
RT_INLINE float acc_sum(qacc_t v) { return v; }

#endif

//===--- matvec_q ---===//

/* c[n0 + j][m + i], i < RM, j < NB: each weight step loaded once for the NB
 * activation rows, QK_STEP_OF(t) blocks a step, then a short last step. */
RT_INLINE void q_tile(const rt_cpu_mm_t *g, rt_type_t t, int64_t m, int64_t m1, int64_t n0,
                      int RM, int NB) {
    const char *wr[QK_RM], *pf[QK_RM], *ar[QK_NB];
    qacc_t acc[QK_RM][QK_NB];
    RT_UNROLL(4)
    for (int i = 0; i < RM; i++) {
        wr[i] = g->a + (size_t)(m + i) * g->lda;
        pf[i] = m + RM + i < m1 ? wr[i] + (size_t)RM * g->lda : wr[i] + QK_PREFETCH;
        RT_UNROLL(4)
        for (int j = 0; j < NB; j++) acc[i][j] = acc_zero();
    }
    RT_UNROLL(4)
    for (int j = 0; j < NB; j++) ar[j] = g->b + (size_t)(n0 + j) * g->ldb;
    const int64_t nb = g->K / 32;
    const int step = QK_STEP_OF(t);
    const size_t bs = t == RT_TYPE_Q8_0 ? 34 : 18, unit = 128 * (size_t)step;
    int64_t b = 0;
    size_t u = 0;
    for (; b + step <= nb; b += step, u += unit) {
        RT_UNROLL(4)
        for (int i = 0; i < RM; i++) {
            RT_UNROLL(3)
            for (size_t o = 0; o < (size_t)step * bs; o += 64)
                __builtin_prefetch(pf[i] + (size_t)b * bs + o, 0, 2); /* prefetcht1 */
            const wblk_t w = w_load(t, wr[i], b, step);
            RT_UNROLL(4)
            for (int j = 0; j < NB; j++) acc[i][j] = blk_dot(t, &w, ar[j] + u, acc[i][j]);
        }
    }
    /* Unrolled like the loop above, or the accumulators go to the stack. */
    if (b < nb) {
        RT_UNROLL(4)
        for (int i = 0; i < RM; i++) {
            const wblk_t w = w_load(t, wr[i], b, (int)(nb - b));
            RT_UNROLL(4)
            for (int j = 0; j < NB; j++) acc[i][j] = blk_dot(t, &w, ar[j] + u, acc[i][j]);
        }
    }
    RT_UNROLL(4)
    for (int j = 0; j < NB; j++) {
        float *c = (float *)(g->c + (size_t)(n0 + j) * g->ldc);
        RT_UNROLL(4)
        for (int i = 0; i < RM; i++) c[m + i] = acc_sum(acc[i][j]);
    }
}

/* Tile shapes by the activation rows of the pass: four weight rows when
 * there are one or two (a weight step then serves four); with three or
 * four, four where 32 vector registers hold the 16 sums and the weights
 * (AVX-512: each activation step then serves four rows too, a batch of
 * four sequences' decode step 12% faster), else two. */
#if defined(RT_SIMD_AVX512)
#  define QK_RM_WIDE 4
#else
#  define QK_RM_WIDE 2
#endif
#define QK_ROWS(T, RM, NB)                                                      \
    do {                                                                        \
        int64_t m = m0;                                                         \
        for (; m + (RM) <= m1; m += (RM)) q_tile(g, T, m, m1, n0, RM, NB);      \
        for (; m < m1; m++) q_tile(g, T, m, m1, n0, 1, NB);                     \
    } while (0)

#define QK_TYPE(T)                                                              \
    static void q_rows_##T(const rt_cpu_mm_t *g, int64_t m0, int64_t m1, int64_t n0, int nb) { \
        switch (nb) {                                                           \
        case 1: QK_ROWS(RT_TYPE_##T, 4, 1); break;                              \
        case 2: QK_ROWS(RT_TYPE_##T, 4, 2); break;                              \
        case 3: QK_ROWS(RT_TYPE_##T, QK_RM_WIDE, 3); break;                     \
        default: QK_ROWS(RT_TYPE_##T, QK_RM_WIDE, 4); break;                    \
        }                                                                       \
    }

QK_TYPE(Q8_0)
QK_TYPE(Q4_0)

/* Rows [m0, m1) of c for every activation row, nb_max of them a pass, by
 * the pass function f of the weights' type (both layouts' drivers). */
typedef void (*q_pass_fn)(const rt_cpu_mm_t *g, int64_t m0, int64_t m1, int64_t n0, int nb);

static void q_passes(const rt_cpu_mm_t *g, int64_t m0, int64_t m1, int nb_max, q_pass_fn f) {
    for (int64_t n0 = 0; n0 < g->N; n0 += nb_max) {
        const int nb = (int)(g->N - n0 < nb_max ? g->N - n0 : nb_max);
        f(g, m0, m1, n0, nb);
    }
}

static void matvec_q(const rt_cpu_mm_t *g, int64_t m0, int64_t m1) {
    q_passes(g, m0, m1, QK_NB, g->atype == RT_TYPE_Q8_0 ? q_rows_Q8_0 : q_rows_Q4_0);
}

//===--- repacked weights (repack.h) ---===//

/* A unit is the rows one vector covers, RP_RU of a group's 16; a weight
 * chunk of a unit is RP_RU lanes of 4 bytes (the unit's part of one 64-byte
 * chunk), and rp_dot adds their 4 products with the activation's 4 bytes
 * at a4 into the unit's int32 lanes. RP_Q8_CORR is the correction the
 * activation row carries for Q8_0 (repack.h). */
#if defined(QK_VNNI)

#define RP_RU 16
#define RP_Q8_CORR (-128)
typedef __m512 rp_f;
typedef __m512i rp_i;
typedef __m512i rp_w;

/* Virtual chunk k (repack.h). Q4_0's high nibbles stay where they are, as
 * 16 times their value (x & 0xf0: one op where a shift and a mask were two;
 * the nibble work, not the loads, bounds Q4_0 in L2), and rp_join divides
 * their sums by 16: exact, as every product is a multiple of 16. */
RT_INLINE rp_w rp_wload(rt_type_t t, const char *q, int k) {
    if (t == RT_TYPE_Q8_0) return _mm512_loadu_si512(q + 64 * k);
    const __m512i x = _mm512_loadu_si512(q + 64 * (k & 3));
    if (t == RT_TYPE_Q4_1) /* its chunks' sums are kept apart: each its true value */
        return _mm512_and_si512(k < 4 ? x : _mm512_srli_epi16(x, 4), _mm512_set1_epi8(0x0f));
    return _mm512_and_si512(x, _mm512_set1_epi8(k < 4 ? 0x0f : (char)0xf0));
}

RT_INLINE rp_i rp_join(rt_type_t t, rp_i lo, rp_i hi) {
    return _mm512_add_epi32(lo, t == RT_TYPE_Q4_0 ? _mm512_srai_epi32(hi, 4) : hi);
}

RT_INLINE rp_i rp_dot(rt_type_t t, rp_i s, rp_w w, const char *a4) {
    (void)t;
    int32_t v;
    memcpy(&v, a4, 4);
    return _mm512_dpbusd_epi32(s, w, _mm512_set1_epi32(v)); /* an embedded broadcast */
}

RT_INLINE rp_i rp_iset(int32_t x) { return _mm512_set1_epi32(x); }
RT_INLINE rp_f rp_zero(void) { return _mm512_setzero_ps(); }
RT_INLINE rp_f rp_scales(const uint16_t *p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
}
RT_INLINE rp_f rp_acc(rp_i s, rp_f wd, float ad, rp_f acc) {
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(wd, _mm512_set1_ps(ad)), acc);
}
RT_INLINE rp_f rp_set1(float x) { return _mm512_set1_ps(x); }
RT_INLINE rp_f rp_cvt(rp_i s) { return _mm512_cvtepi32_ps(s); }
RT_INLINE rp_f rp_add(rp_f a, rp_f b) { return _mm512_add_ps(a, b); }
RT_INLINE rp_f rp_mul(rp_f a, rp_f b) { return _mm512_mul_ps(a, b); }
RT_INLINE rp_f rp_fmadd(rp_f a, rp_f b, rp_f c) { return _mm512_fmadd_ps(a, b, c); }
RT_INLINE void rp_store(float *c, rp_f v, int64_t n) {
    _mm512_mask_storeu_ps(c, n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1u), v);
}

#elif defined(RT_SIMD_AVX2) || defined(RT_SIMD_AVX512)

/* Without VNNI, vpmaddubsw: Q8_0 as |w| times a with w's sign (w + 128
 * would overflow its 16-bit pair sums), so no correction. */
#define RP_RU 8
#define RP_Q8_CORR 0
typedef __m256 rp_f;
typedef __m256i rp_i;
typedef struct rp_w {
    __m256i u, s; /* the unsigned factor; for Q8_0 the signed weights too */
} rp_w;

RT_INLINE rp_w rp_wload(rt_type_t t, const char *q, int k) {
    rp_w w;
    if (t == RT_TYPE_Q8_0) {
        w.s = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(q + 64 * k)),
                               _mm256_set1_epi8((char)0x80));
        w.u = _mm256_sign_epi8(w.s, w.s);
    } else {
        const __m256i x = _mm256_loadu_si256((const __m256i *)(q + 64 * (k & 3)));
        w.u = _mm256_and_si256(k < 4 ? x : _mm256_srli_epi16(x, 4), _mm256_set1_epi8(15));
        w.s = w.u;
    }
    return w;
}

RT_INLINE rp_i rp_dot(rt_type_t t, rp_i s, rp_w w, const char *a4) {
    int32_t v;
    memcpy(&v, a4, 4);
    __m256i a = _mm256_set1_epi32(v);
    if (t == RT_TYPE_Q8_0) a = _mm256_sign_epi8(a, w.s);
    const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(w.u, a), _mm256_set1_epi16(1));
    return _mm256_add_epi32(s, p);
}

RT_INLINE rp_i rp_join(rt_type_t t, rp_i lo, rp_i hi) {
    (void)t;
    return _mm256_add_epi32(lo, hi);
}

RT_INLINE rp_i rp_iset(int32_t x) { return _mm256_set1_epi32(x); }
RT_INLINE rp_f rp_zero(void) { return _mm256_setzero_ps(); }
RT_INLINE rp_f rp_scales(const uint16_t *p) {
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}
RT_INLINE rp_f rp_acc(rp_i s, rp_f wd, float ad, rp_f acc) {
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(wd, _mm256_set1_ps(ad)), acc);
}
RT_INLINE rp_f rp_set1(float x) { return _mm256_set1_ps(x); }
RT_INLINE rp_f rp_cvt(rp_i s) { return _mm256_cvtepi32_ps(s); }
RT_INLINE rp_f rp_add(rp_f a, rp_f b) { return _mm256_add_ps(a, b); }
RT_INLINE rp_f rp_mul(rp_f a, rp_f b) { return _mm256_mul_ps(a, b); }
RT_INLINE rp_f rp_fmadd(rp_f a, rp_f b, rp_f c) { return _mm256_fmadd_ps(a, b, c); }
RT_INLINE void rp_store(float *c, rp_f v, int64_t n) {
    if (n >= 8) {
        _mm256_storeu_ps(c, v);
        return;
    }
    float tmp[8];
    _mm256_storeu_ps(tmp, v);
    memcpy(c, tmp, (size_t)n * sizeof tmp[0]);
}

#else /* scalar and NEON: one row a unit, in C */

#define RP_RU 1
#define RP_Q8_CORR (-128)
typedef float rp_f;
typedef int32_t rp_i;
typedef struct rp_w {
    uint8_t u[4];
} rp_w;

RT_INLINE rp_w rp_wload(rt_type_t t, const char *q, int k) {
    rp_w w;
    memcpy(w.u, q + 64 * (t == RT_TYPE_Q8_0 ? k : k & 3), 4);
    for (int i = 0; i < 4 && t != RT_TYPE_Q8_0; i++)
        w.u[i] = (uint8_t)(k < 4 ? w.u[i] & 15 : w.u[i] >> 4);
    return w;
}

RT_INLINE rp_i rp_dot(rt_type_t t, rp_i s, rp_w w, const char *a4) {
    (void)t;
    for (int i = 0; i < 4; i++) s += w.u[i] * (int8_t)a4[i];
    return s;
}

RT_INLINE rp_i rp_join(rt_type_t t, rp_i lo, rp_i hi) {
    (void)t;
    return lo + hi;
}

RT_INLINE rp_i rp_iset(int32_t x) { return x; }
RT_INLINE rp_f rp_zero(void) { return 0.0f; }
RT_INLINE rp_f rp_scales(const uint16_t *p) { return rt_fp16_to_fp32(*p); }
RT_INLINE rp_f rp_acc(rp_i s, rp_f wd, float ad, rp_f acc) {
    return acc + (float)s * (wd * ad);
}
RT_INLINE rp_f rp_set1(float x) { return x; }
RT_INLINE rp_f rp_mul(rp_f a, rp_f b) { return a * b; }
RT_INLINE void rp_store(float *c, rp_f v, int64_t n) {
    if (n > 0) *c = v;
}

#endif

#define RP_UPG (RT_CPU_RP_ROWS / RP_RU) /* units per group */
#define RP_G 4                          /* most units per pass */
#define RP_NB 8                         /* most activation rows per pass */
/* Software prefetch into L1 in each unit's stream, RP_PF / G blocks ahead
 * for a pass of G units (Q8_0: 8 KB ahead over the 4 streams of n = 1, as
 * over the 2 of n = 2): the hardware prefetchers alone left one core at
 * 40 GB/s on weights in L3, 64 GB/s with it (a standalone single-core
 * bench). What matters is the total ahead per core: a fixed 4096 bytes a
 * stream (the old distance) at 4 units kept 16 KB in flight, half of L1,
 * all at one 4K offset (groups are multiples of 4096 bytes apart): Q4_0 in
 * L2 fell from 82 to 64 GB/s. Measured (one core, Q8_0 k = 4096 in L3):
 * n = 2 at 4 blocks 0.72-0.79x of the read bandwidth, at 8 blocks
 * 0.81-0.84x; n = 1 (4 units) best at 4. With 2 threads, Q4_0 n = 1: 2
 * blocks helped k = 4096 (0.071 -> 0.066 ms) but cost k = 14336 (a 33 MB
 * matrix, half out of L3: 0.56 -> 0.70 ms). */
#ifndef RP_PF
#  define RP_PF 16
#endif
#ifndef RP_PF_HINT
#  define RP_PF_HINT 3
#endif

/* Q4_1's activation blocks: the Q8_1 blocks of the GGUF-layout kernels
 * (kern_blocks.c's rounding, which follows llama.cpp's), placed here. */
static void quantize_q8r_q8_1(const float *x, int64_t K, void *row) {
    const rt_cpu_kern_blocks_t *kb = RT_KS(rt_cpu_kern_blocks)();
    for (int64_t b = 0; b < K / 32; b++) {
        rt_cpu_q8s_t q;
        kb->quantize_act(x + b * 32, 32, RT_TYPE_Q4_1, &q);
        char *o = (char *)row + b * RT_CPU_Q8R_BLOCK;
        memcpy(o, q.qs, 32);
        memcpy(o + 32, &q.d, 4);
        memcpy(o + 36, &q.s, 4);
    }
}

static void quantize_q8r(const float *x, int64_t K, rt_type_t atype, void *row) {
    if (atype == RT_TYPE_Q4_1) {
        quantize_q8r_q8_1(x, K, row);
        return;
    }
    const rt_cpu_kern_vec_t *v = QK_VEC();
    const int32_t k = atype == RT_TYPE_Q4_0 ? -8 : RP_Q8_CORR;
    for (int64_t b = 0; b < K / 32; b++) {
        rt_block_q8_0_t blk;
        v->f32_to_q8_0(x + b * 32, &blk, 32);
        int32_t sum = 0;
        for (int i = 0; i < 32; i++) sum += blk.qs[i];
        const float d = rt_fp16_to_fp32(blk.d);
        const int32_t c = k * sum;
        char *o = (char *)row + b * RT_CPU_Q8R_BLOCK;
        memcpy(o, blk.qs, 32);
        memcpy(o + 32, &d, 4);
        memcpy(o + 36, &c, 4);
    }
}

/* Unit u's quants and scales in its group of the packed a. */
RT_INLINE void rp_unit(const rt_cpu_mm_t *g, int64_t u, size_t sat, const char **wq, const uint16_t **ws) {
    const char *grp = g->a + (size_t)(u / RP_UPG) * g->lda;
    const int part = (int)(u % RP_UPG);
    *wq = grp + 4 * RP_RU * part;
    *ws = (const uint16_t *)(grp + sat) + RP_RU * part;
}

/* c[n0 + j][rows of units u .. u + G), j < NB: each weight chunk loaded
 * once for the NB activation rows, each activation group of 4 bytes once
 * for the G units; the integer sums of a block start from the
 * activation's correction and are scaled once per block. A block's sums
 * are two chains, chunks 0..3 and 4..7 (for Q4_0 the low and high nibbles
 * of the same 4 loads), joined before the scaling: chains of 4 dependent
 * vpdpbusd, not 8. */
RT_INLINE void rp_tile(const rt_cpu_mm_t *g, rt_type_t t, int64_t u, int64_t m1, int64_t n0,
                       int G, int NB) {
    const size_t qb = RT_CPU_RP_ROWS * rt_cpu_rp_qbytes(t), sat = rt_cpu_rp_scales_at(t, g->K);
    const char *wq[RP_G], *ar[RP_NB];
    const uint16_t *ws[RP_G];
    rp_f acc[RP_G][RP_NB];
    RT_UNROLL(4)
    for (int i = 0; i < G; i++) {
        rp_unit(g, u + i, sat, &wq[i], &ws[i]);
        RT_UNROLL(8)
        for (int j = 0; j < NB; j++) acc[i][j] = rp_zero();
    }
    RT_UNROLL(8)
    for (int j = 0; j < NB; j++) ar[j] = g->b + (size_t)(n0 + j) * g->ldb;
    for (int64_t b = 0; b < g->K / 32; b++) {
        rp_i s[RP_G][RP_NB], h[RP_G][RP_NB]; /* sums of chunks 0..3 and 4..7 */
        RT_UNROLL(8)
        for (int j = 0; j < NB; j++) {
            int32_t corr;
            memcpy(&corr, ar[j] + b * RT_CPU_Q8R_BLOCK + 36, 4);
            RT_UNROLL(4)
            for (int i = 0; i < G; i++) s[i][j] = rp_iset(corr), h[i][j] = rp_iset(0);
        }
        RT_UNROLL(4)
        for (int i = 0; i < G; i++) {
            RT_UNROLL(8)
            for (size_t o = 0; o < qb; o += 64)
                __builtin_prefetch(wq[i] + (size_t)(b + RP_PF / G) * qb + o, 0, RP_PF_HINT);
            __builtin_prefetch(ws[i] + RT_CPU_RP_ROWS * (b + RP_PF / G), 0, RP_PF_HINT);
        }
        RT_UNROLL(4)
        for (int k = 0; k < 4; k++) {
            RT_UNROLL(4)
            for (int i = 0; i < G; i++) {
                const char *q = wq[i] + (size_t)b * qb;
                const rp_w lo = rp_wload(t, q, k), hi = rp_wload(t, q, k + 4);
                RT_UNROLL(8)
                for (int j = 0; j < NB; j++) {
                    const char *a = ar[j] + b * RT_CPU_Q8R_BLOCK + 4 * k;
                    s[i][j] = rp_dot(t, s[i][j], lo, a);
                    h[i][j] = rp_dot(t, h[i][j], hi, a + 16);
                }
            }
        }
        RT_UNROLL(4)
        for (int i = 0; i < G; i++) {
            const rp_f wd = rp_scales(ws[i] + RT_CPU_RP_ROWS * b);
            RT_UNROLL(8)
            for (int j = 0; j < NB; j++) {
                float ad;
                memcpy(&ad, ar[j] + b * RT_CPU_Q8R_BLOCK + 32, 4);
                acc[i][j] = rp_acc(rp_join(t, s[i][j], h[i][j]), wd, ad, acc[i][j]);
            }
        }
    }
    RT_UNROLL(8)
    for (int j = 0; j < NB; j++) {
        float *c = (float *)(g->c + (size_t)(n0 + j) * g->ldc);
        RT_UNROLL(4)
        for (int i = 0; i < G; i++) {
            const int64_t m = (u + i) * RP_RU;
            rp_store(c + m, acc[i][j], m1 - m);
        }
    }
}

/* Q4_1 (rp_tile's layout and loop) sums in the order of the GGUF-layout
 * kernel (kern_blocks.c), so that both layouts give the same bits: on x86
 * llama.cpp's, in which each of a row's 8 lanes takes its 4 elements'
 * products of a block (virtual chunk k is lane k), scaled by d_w d_a and
 * summed across blocks apart, the lanes added at the end as hsum_ps adds
 * them, and m s summed alone (SmolLM2's greedy decode follows llama.cpp's
 * near-ties in that order only, kern_blocks.c); in C (scalar, NEON) a
 * block's whole sum is scaled and added with its m s, as dot32. Eight
 * accumulators a row keep a pass to two activation rows (RP41_NB). */
#define RP41_NB 2
#if RP_RU > 1
#  define RP41_LANES 8
#else
#  define RP41_LANES 1
#endif
RT_INLINE void rp_tile_q4_1(const rt_cpu_mm_t *g, int64_t u, int64_t m1, int64_t n0, int G, int NB) {
    const rt_type_t t = RT_TYPE_Q4_1;
    const size_t qb = RT_CPU_RP_ROWS * rt_cpu_rp_qbytes(t), sat = rt_cpu_rp_scales_at(t, g->K);
    const int64_t ss = RT_CPU_RP_ROWS * rt_cpu_rp_nscales(t); /* a block's F16 d, then its m */
    const char *wq[RP_G], *ar[RP41_NB];
    const uint16_t *ws[RP_G];
    rp_f acc[RP_G][RP41_NB][RP41_LANES];
#if RP_RU > 1
    rp_f accm[RP_G][RP41_NB]; /* the m_w s_a sum, apart from the lanes */
#endif
    RT_UNROLL(2)
    for (int i = 0; i < G; i++) {
        rp_unit(g, u + i, sat, &wq[i], &ws[i]);
        RT_UNROLL(2)
        for (int j = 0; j < NB; j++) {
#if RP_RU > 1
            accm[i][j] = rp_zero();
#endif
            RT_UNROLL(8)
            for (int k = 0; k < RP41_LANES; k++) acc[i][j][k] = rp_zero();
        }
    }
    RT_UNROLL(2)
    for (int j = 0; j < NB; j++) ar[j] = g->b + (size_t)(n0 + j) * g->ldb;
    for (int64_t b = 0; b < g->K / 32; b++) {
        rp_f dd[RP_G][RP41_NB], ms[RP_G][RP41_NB]; /* the block's d_w d_a and m_w s_a */
        RT_UNROLL(2)
        for (int i = 0; i < G; i++) {
            for (size_t o = 0; o < qb; o += 64)
                __builtin_prefetch(wq[i] + (size_t)(b + RP_PF / G) * qb + o, 0, RP_PF_HINT);
            __builtin_prefetch(ws[i] + ss * (b + RP_PF / G), 0, RP_PF_HINT);
            const rp_f wd = rp_scales(ws[i] + ss * b), wm = rp_scales(ws[i] + ss * b + RT_CPU_RP_ROWS);
            RT_UNROLL(2)
            for (int j = 0; j < NB; j++) {
                float ad, as;
                memcpy(&ad, ar[j] + b * RT_CPU_Q8R_BLOCK + 32, 4);
                memcpy(&as, ar[j] + b * RT_CPU_Q8R_BLOCK + 36, 4);
                dd[i][j] = rp_mul(wd, rp_set1(ad));
                ms[i][j] = rp_mul(wm, rp_set1(as));
#if RP_RU > 1
                accm[i][j] = rp_add(accm[i][j], ms[i][j]);
#endif
            }
        }
#if RP_RU > 1
        RT_UNROLL(8)
        for (int k = 0; k < 8; k++) {
            RT_UNROLL(2)
            for (int i = 0; i < G; i++) {
                const rp_w w = rp_wload(t, wq[i] + (size_t)b * qb, k);
                RT_UNROLL(2)
                for (int j = 0; j < NB; j++) {
                    const rp_i p = rp_dot(t, rp_iset(0), w, ar[j] + b * RT_CPU_Q8R_BLOCK + 4 * k);
                    acc[i][j][k] = rp_fmadd(dd[i][j], rp_cvt(p), acc[i][j][k]);
                }
            }
        }
#else
        RT_UNROLL(2)
        for (int i = 0; i < G; i++)
            RT_UNROLL(2)
            for (int j = 0; j < NB; j++) {
                rp_i p = 0;
                for (int k = 0; k < 8; k++)
                    p = rp_dot(t, p, rp_wload(t, wq[i] + (size_t)b * qb, k), ar[j] + b * RT_CPU_Q8R_BLOCK + 4 * k);
                acc[i][j][0] = acc[i][j][0] + (dd[i][j] * (float)p + ms[i][j]);
            }
#endif
    }
    RT_UNROLL(2)
    for (int j = 0; j < NB; j++) {
        float *c = (float *)(g->c + (size_t)(n0 + j) * g->ldc);
        RT_UNROLL(2)
        for (int i = 0; i < G; i++) {
            const int64_t m = (u + i) * RP_RU;
#if RP_RU > 1
            const rp_f *a = acc[i][j];
            const rp_f v = rp_add(rp_add(rp_add(a[0], a[4]), rp_add(a[2], a[6])),
                                  rp_add(rp_add(a[1], a[5]), rp_add(a[3], a[7])));
            rp_store(c + m, rp_add(v, accm[i][j]), m1 - m);
#else
            rp_store(c + m, acc[i][j][0], m1 - m);
#endif
        }
    }
}

/* Units G at a time, then two, then one at a time; G by the activation
 * rows so that the int32 sums and the accumulators (3 G NB vectors) stay
 * in registers. n = 1 takes 4 units: its passes share each activation
 * broadcast 4 ways and give 8 independent sums; measured (one core, 4096
 * rows, k = 4096) against 2: Q8_0 in L2 102 -> 108 GB/s and in L3 0.85 ->
 * 0.95x of the read bandwidth, Q4_0 in L2 77 -> 82 GB/s. 1 unit: slower
 * still (Q4_0 62 GB/s). n = 2 with 4 units: no faster than with 2. */
#define RP_ROWS(T, G, NB)                                                        \
    do {                                                                         \
        int64_t u = m0 / RP_RU;                                                  \
        const int64_t u1 = (m1 + RP_RU - 1) / RP_RU;                             \
        for (; u + (G) <= u1; u += (G)) rp_tile(g, T, u, m1, n0, G, NB);         \
        for (; (G) > 2 && u + 2 <= u1; u += 2) rp_tile(g, T, u, m1, n0, 2, NB);  \
        for (; u < u1; u++) rp_tile(g, T, u, m1, n0, 1, NB);                     \
    } while (0)

#define RP_TYPE(T)                                                                  \
    static void rp_rows_##T(const rt_cpu_mm_t *g, int64_t m0, int64_t m1, int64_t n0, int nb) { \
        switch (nb) {                                                               \
        case 1: RP_ROWS(RT_TYPE_##T, 4, 1); break;                                  \
        case 2: RP_ROWS(RT_TYPE_##T, 2, 2); break;                                  \
        case 3: RP_ROWS(RT_TYPE_##T, 2, 3); break;                                  \
        case 4: RP_ROWS(RT_TYPE_##T, 2, 4); break;                                  \
        case 5: RP_ROWS(RT_TYPE_##T, 1, 5); break;                                  \
        case 6: RP_ROWS(RT_TYPE_##T, 1, 6); break;                                  \
        case 7: RP_ROWS(RT_TYPE_##T, 1, 7); break;                                  \
        default: RP_ROWS(RT_TYPE_##T, 1, 8); break;                                 \
        }                                                                           \
    }

RP_TYPE(Q8_0)
RP_TYPE(Q4_0)

/* Q4_1's passes of at most RP41_NB rows: two units at n = 1, one at 2. */
#define RP41_ROWS(G, NB)                                                         \
    do {                                                                         \
        int64_t u = m0 / RP_RU;                                                  \
        const int64_t u1 = (m1 + RP_RU - 1) / RP_RU;                             \
        for (; u + (G) <= u1; u += (G)) rp_tile_q4_1(g, u, m1, n0, G, NB);       \
        for (; u < u1; u++) rp_tile_q4_1(g, u, m1, n0, 1, NB);                   \
    } while (0)

static void rp_rows_Q4_1(const rt_cpu_mm_t *g, int64_t m0, int64_t m1, int64_t n0, int nb) {
    if (nb == 1)
        RP41_ROWS(2, 1);
    else
        RP41_ROWS(1, 2);
}

static void matvec_r(const rt_cpu_mm_t *g, int64_t m0, int64_t m1) {
    if (g->atype == RT_TYPE_Q4_1)
        q_passes(g, m0, m1, RP41_NB, rp_rows_Q4_1);
    else
        q_passes(g, m0, m1, RP_NB, g->atype == RT_TYPE_Q8_0 ? rp_rows_Q8_0 : rp_rows_Q4_0);
}

static const rt_cpu_kern_quant_t kern_quant = {
    .quantize_q8a = quantize_q8a,
    .roundtrip_q8 = roundtrip_q8,
    .matvec_q = matvec_q,
    .quantize_q8r = quantize_q8r,
    .matvec_r = matvec_r,
};

#endif /* RT_SIMD_ON */

const rt_cpu_kern_quant_t *RT_KS(rt_cpu_kern_quant)(void) {
#ifdef RT_SIMD_ON
    return &kern_quant;
#else
    return NULL;
#endif
}
