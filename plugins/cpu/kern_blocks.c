/* SPDX-License-Identifier: MIT */
/* kern_blocks.c: products and conversions for the block types of ABI 1.2
 * (Q4_1, Q5_0, Q5_1, IQ4_NL in blocks of 32; Q2_K..Q6_K and IQ4_XS in
 * super-blocks of 256), compiled per variant. Activations are quantised
 * once per row (quantize_act), in the format the weights' dot product
 * wants:
 *
 *   blocks of 32:  rt_cpu_q8s_t per block: d, s = d * sum(q), 32 int8 q
 *                  (s carries the weights' offset m: sum(d_w*q_w + m)*a is
 *                  d_w*d*sum(q_w*q) + m*s), d and s rounded as llama.cpp's
 *                  Q8_0/Q8_1 round them (q8s_quantize).
 *   super-blocks:  Q8_K (rt_block_q8_k_t: f32 d, 256 int8, sums of 16),
 *                  whose sums carry the K-quants' mins the same way.
 *
 * Each weight block is unpacked into int8 levels and small integer scales
 * (unpack_*: loops over the layouts of abi/rt_quant.h in the order the
 * dequantisers produce), then multiplied as int8 by int8 in groups of 16
 * with int32 sums, and scaled in F32 once per block: plain C loops that the
 * compiler vectorises for the scalar and NEON variants (these objects are
 * built at -O3); the x86 variants have AVX2 dots of their own for every
 * type, which unpack a weight block once for up to 8 activation rows
 * (measured on this loaded 2-core Zen 4, m = 4096, k = 4096, n = 1: Q4_K
 * 5.6 ms -> 0.35 ms, Q4_1 24 -> 0.4 ms). A result differs from the F32 product
 * of the dequantised weights by the activations' rounding only
 * (roundtrip_act gives that rounding, for the F32 gemm of large N) and the
 * order of the F32 sums. */
#include "kern.h"
#include "simd.h"

#include "../../abi/rt_quant.h"

#include <math.h>
#include <string.h>

#ifdef RT_SIMD_ON

//===--- conversions ---===//

static void blocks_to_f32(rt_type_t t, const void *src, float *dst, int64_t n) {
    const char *s = src;
    switch (t) {
#define DQ(ID, T, BLCK)                                                                    \
    case RT_TYPE_##ID:                                                                     \
        for (int64_t b = 0; b < n / (BLCK); b++)                                           \
            rt_dequantize_block_##T((const rt_block_##T##_t *)s + b, dst + b * (BLCK));    \
        return;
        DQ(Q4_1, q4_1, 32) DQ(Q5_0, q5_0, 32) DQ(Q5_1, q5_1, 32) DQ(IQ4_NL, iq4_nl, 32)
        DQ(Q2_K, q2_k, 256) DQ(Q3_K, q3_k, 256) DQ(Q4_K, q4_k, 256) DQ(Q5_K, q5_k, 256)
        DQ(Q6_K, q6_k, 256) DQ(IQ4_XS, iq4_xs, 256)
#undef DQ
    default: return;
    }
}

//===--- activations ---===//

/* The nearest integer, ties to even (vroundps's rounding, which the
 * peer's x86 activation quantiser uses). */
static inline int round_even(float v) {
    return (int)nearbyintf(v);
}

static inline float through_f16(float v) { return rt_fp16_to_fp32(rt_fp32_to_fp16(v)); }

/* One block of 32 activations, rounded as llama.cpp's x86 CPU path rounds
 * them for the same weights (its Q8_1 for Q4_1/Q5_1, Q8_0 for the others),
 * so that a greedy decode breaks near-ties as it does: the levels are
 * x * (127 / amax) to the nearest even, the scale d is stored in F16, and
 * for Q8_1 so is s, the F32 d (not the F16 one) times the levels' sum.
 * With d kept in F32 instead, SmolLM2-135M's logits moved by ~0.1 and its
 * 5th greedy token flipped. For the Q8_0 types s is the F16 d times the
 * sum, exact in F32 (11 bits by at most 12), the integer sum they fold in. */
#if defined(__AVX2__)
#  include <immintrin.h>

/* The loop below in AVX2, the same values: |x|'s max is exact in any
 * order, x * id is the same product, vcvtps2dq rounds to the nearest
 * even (MXCSR's default, as nearbyintf), and the levels' sum is exact. */
static float block_amax(const float *x) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 m = _mm256_andnot_ps(sign, _mm256_loadu_ps(x));
    for (int j = 8; j < 32; j += 8) m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + j)));
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    return _mm_cvtss_f32(_mm_max_ss(h, _mm_movehdup_ps(h)));
}

static int block_levels(const float *x, float id, int8_t qs[32]) {
    const __m256 vid = _mm256_set1_ps(id);
    const __m256i lo = _mm256_set1_epi32(-127), hi = _mm256_set1_epi32(127);
    __m256i q[4], sum = _mm256_setzero_si256();
    for (int j = 0; j < 4; j++) {
        q[j] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * j), vid));
        q[j] = _mm256_min_epi32(_mm256_max_epi32(q[j], lo), hi);
        sum = _mm256_add_epi32(sum, q[j]);
    }
    /* the packs interleave the 128-bit lanes: put the groups of 4 back in order */
    const __m256i b = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
    _mm256_storeu_si256((__m256i *)qs, _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
    __m128i t = _mm_add_epi32(_mm256_castsi256_si128(sum), _mm256_extracti128_si256(sum, 1));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0x4e));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0xb1));
    return _mm_cvtsi128_si32(t);
}
#else
static float block_amax(const float *x) {
    float amax = 0.0f;
    for (int i = 0; i < 32; i++) amax = fabsf(x[i]) > amax ? fabsf(x[i]) : amax;
    return amax;
}

static int block_levels(const float *x, float id, int8_t qs[32]) {
    int sum = 0;
    for (int i = 0; i < 32; i++) {
        qs[i] = (int8_t)rt_quant_clamp(round_even(x[i] * id), -127, 127);
        sum += qs[i];
    }
    return sum;
}
#endif

static void q8s_quantize(const float *x, rt_type_t wtype, rt_cpu_q8s_t *b) {
    const float amax = block_amax(x);
    const float d = amax / 127.0f, id = amax != 0.0f ? 127.0f / amax : 0.0f;
    const int sum = block_levels(x, id, b->qs);
    b->d = through_f16(d);
    const bool q8_1 = wtype == RT_TYPE_Q4_1 || wtype == RT_TYPE_Q5_1;
    b->s = q8_1 ? through_f16(d * (float)sum) : b->d * (float)sum;
}

static void blocks_quantize_act(const float *x, int64_t K, rt_type_t atype, void *row) {
    if (rt_cpu_act_is_q8k(atype)) {
        rt_block_q8_k_t *b = row;
        for (int64_t i = 0; i < K / RT_QK_K; i++) rt_quantize_block_q8_k(x + i * RT_QK_K, b + i);
    } else {
        rt_cpu_q8s_t *b = row;
        for (int64_t i = 0; i < K / 32; i++) q8s_quantize(x + i * 32, atype, b + i);
    }
}

static void blocks_roundtrip_act(const float *x, int64_t K, rt_type_t atype, float *out) {
    if (rt_cpu_act_is_q8k(atype)) {
        rt_block_q8_k_t b;
        for (int64_t i = 0; i < K / RT_QK_K; i++) {
            rt_quantize_block_q8_k(x + i * RT_QK_K, &b);
            for (int j = 0; j < RT_QK_K; j++) out[i * RT_QK_K + j] = b.d * (float)b.qs[j];
        }
    } else {
        rt_cpu_q8s_t b;
        for (int64_t i = 0; i < K / 32; i++) {
            q8s_quantize(x + i * 32, atype, &b);
            for (int j = 0; j < 32; j++) out[i * 32 + j] = b.d * (float)b.qs[j];
        }
    }
}

/* The unpackers of the types AVX2 has its own dots for (below) serve the
 * other variants only. */
#if defined(__AVX2__)
#  define GENERIC_ONLY __attribute__((unused))
#else
#  define GENERIC_ONLY
#endif

//===--- unpacking: blocks of 32 ---===//

/* Levels q of one block, its scale and offset: x = d*q + m. */
typedef struct unpacked32 {
    int8_t q[32];
    float d, m;
} unpacked32_t;

GENERIC_ONLY static void unpack_q4_1(const void *p, unpacked32_t *u) {
    const rt_block_q4_1_t *b = p;
    for (int j = 0; j < 16; j++) {
        u->q[j] = (int8_t)(b->qs[j] & 15);
        u->q[j + 16] = (int8_t)(b->qs[j] >> 4);
    }
    u->d = rt_fp16_to_fp32(b->d);
    u->m = rt_fp16_to_fp32(b->m);
}

/* Q5_0/Q5_1's levels: nibbles with the fifth bit from qh, minus `bias`. */
static void unpack5(const uint8_t qs[16], const uint8_t qh4[4], int bias, int8_t q[32]) {
    uint32_t qh;
    memcpy(&qh, qh4, sizeof qh);
    for (int j = 0; j < 16; j++) {
        q[j] = (int8_t)(((qs[j] & 15) | (((qh >> j) & 1) << 4)) - bias);
        q[j + 16] = (int8_t)(((qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4)) - bias);
    }
}

GENERIC_ONLY static void unpack_q5_0(const void *p, unpacked32_t *u) {
    const rt_block_q5_0_t *b = p;
    unpack5(b->qs, b->qh, 16, u->q);
    u->d = rt_fp16_to_fp32(b->d);
    u->m = 0.0f;
}

GENERIC_ONLY static void unpack_q5_1(const void *p, unpacked32_t *u) {
    const rt_block_q5_1_t *b = p;
    unpack5(b->qs, b->qh, 0, u->q);
    u->d = rt_fp16_to_fp32(b->d);
    u->m = rt_fp16_to_fp32(b->m);
}

static void unpack_iq4_nl(const void *p, unpacked32_t *u) {
    const rt_block_iq4_nl_t *b = p;
    for (int j = 0; j < 16; j++) {
        u->q[j] = rt_iq4nl_values[b->qs[j] & 15];
        u->q[j + 16] = rt_iq4nl_values[b->qs[j] >> 4];
    }
    u->d = rt_fp16_to_fp32(b->d);
    u->m = 0.0f;
}

static int32_t dot_i8(const int8_t *x, const int8_t *y, int n) {
    int32_t s = 0;
    for (int i = 0; i < n; i++) s += (int32_t)x[i] * (int32_t)y[i];
    return s;
}

/* sum over the blocks of a weight row by an activation row. */
RT_INLINE float dot32(void (*unpack)(const void *, unpacked32_t *), size_t bsize,
                      const char *w, const rt_cpu_q8s_t *a, int64_t nb) {
    float acc = 0.0f;
    for (int64_t i = 0; i < nb; i++) {
        unpacked32_t u;
        unpack(w + (size_t)i * bsize, &u);
        acc += u.d * a[i].d * (float)dot_i8(u.q, a[i].qs, 32) + u.m * a[i].s;
    }
    return acc;
}

//===--- unpacking: super-blocks of 256 ---===//

/* Levels q of one super-block with a scale and a min per 16 elements:
 * x = d*sc[e/16]*q[e] - dmin*mn[e/16]. */
typedef struct unpacked256 {
    int8_t q[RT_QK_K];
    int16_t sc[16], mn[16];
    float d, dmin;
} unpacked256_t;

static void unpack_q2_k(const void *p, unpacked256_t *u) {
    const rt_block_q2_k_t *b = p;
    for (int n = 0; n < 2; n++)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 32; l++) u->q[128 * n + 32 * j + l] = (int8_t)((b->qs[32 * n + l] >> (2 * j)) & 3);
    for (int j = 0; j < 16; j++) {
        u->sc[j] = (int16_t)(b->scales[j] & 15);
        u->mn[j] = (int16_t)(b->scales[j] >> 4);
    }
    u->d = rt_fp16_to_fp32(b->d);
    u->dmin = rt_fp16_to_fp32(b->dmin);
}

static void unpack_q3_k(const void *p, unpacked256_t *u) {
    const rt_block_q3_k_t *b = p;
    for (int n = 0; n < 2; n++)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 32; l++) {
                const int low = (b->qs[32 * n + l] >> (2 * j)) & 3;
                const int high = (b->hmask[l] >> (4 * n + j)) & 1;
                u->q[128 * n + 32 * j + l] = (int8_t)(low - 4 + 4 * high);
            }
    for (int j = 0; j < 16; j++) {
        u->sc[j] = (int16_t)rt_quant_q3_k_scale(b->scales, j);
        u->mn[j] = 0;
    }
    u->d = rt_fp16_to_fp32(b->d);
    u->dmin = 0.0f;
}

/* Q4_K/Q5_K's 8 scales and mins of 32, as 16 of 16. */
static void k4_scales(const uint8_t s[12], unpacked256_t *u) {
    for (int j = 0; j < 8; j++) {
        int sc, m;
        rt_quant_k4_scale_min(s, j, &sc, &m);
        u->sc[2 * j] = u->sc[2 * j + 1] = (int16_t)sc;
        u->mn[2 * j] = u->mn[2 * j + 1] = (int16_t)m;
    }
}

GENERIC_ONLY static void unpack_q4_k(const void *p, unpacked256_t *u) {
    const rt_block_q4_k_t *b = p;
    for (int c = 0; c < 4; c++)
        for (int i = 0; i < 32; i++) {
            u->q[64 * c + i] = (int8_t)(b->qs[32 * c + i] & 15);
            u->q[64 * c + 32 + i] = (int8_t)(b->qs[32 * c + i] >> 4);
        }
    k4_scales(b->scales, u);
    u->d = rt_fp16_to_fp32(b->d);
    u->dmin = rt_fp16_to_fp32(b->dmin);
}

GENERIC_ONLY static void unpack_q5_k(const void *p, unpacked256_t *u) {
    const rt_block_q5_k_t *b = p;
    for (int c = 0; c < 4; c++)
        for (int i = 0; i < 32; i++) {
            const int h = b->qh[i] >> (2 * c);
            u->q[64 * c + i] = (int8_t)((b->qs[32 * c + i] & 15) | ((h & 1) << 4));
            u->q[64 * c + 32 + i] = (int8_t)((b->qs[32 * c + i] >> 4) | ((h & 2) << 3));
        }
    k4_scales(b->scales, u);
    u->d = rt_fp16_to_fp32(b->d);
    u->dmin = rt_fp16_to_fp32(b->dmin);
}

GENERIC_ONLY static void unpack_q6_k(const void *p, unpacked256_t *u) {
    const rt_block_q6_k_t *b = p;
    for (int n = 0; n < 2; n++)
        for (int l = 0; l < 32; l++) {
            const uint8_t lo = b->ql[64 * n + l], hi = b->ql[64 * n + 32 + l], h = b->qh[32 * n + l];
            int8_t *q = u->q + 128 * n + l;
            q[0] = (int8_t)(((lo & 15) | ((h & 3) << 4)) - 32);
            q[32] = (int8_t)(((hi & 15) | (((h >> 2) & 3) << 4)) - 32);
            q[64] = (int8_t)(((lo >> 4) | (((h >> 4) & 3) << 4)) - 32);
            q[96] = (int8_t)(((hi >> 4) | (((h >> 6) & 3) << 4)) - 32);
        }
    for (int j = 0; j < 16; j++) {
        u->sc[j] = b->scales[j];
        u->mn[j] = 0;
    }
    u->d = rt_fp16_to_fp32(b->d);
    u->dmin = 0.0f;
}

static void unpack_iq4_xs(const void *p, unpacked256_t *u) {
    const rt_block_iq4_xs_t *b = p;
    for (int j = 0; j < 8; j++) {
        for (int i = 0; i < 16; i++) {
            u->q[32 * j + i] = rt_iq4nl_values[b->qs[16 * j + i] & 15];
            u->q[32 * j + 16 + i] = rt_iq4nl_values[b->qs[16 * j + i] >> 4];
        }
        u->sc[2 * j] = u->sc[2 * j + 1] = (int16_t)rt_quant_iq4_xs_scale(b, j);
        u->mn[2 * j] = u->mn[2 * j + 1] = 0;
    }
    u->d = rt_fp16_to_fp32(b->d);
    u->dmin = 0.0f;
}

RT_INLINE float dot256(void (*unpack)(const void *, unpacked256_t *), size_t bsize,
                       const char *w, const rt_block_q8_k_t *a, int64_t nb) {
    float acc = 0.0f;
    for (int64_t i = 0; i < nb; i++) {
        unpacked256_t u;
        unpack(w + (size_t)i * bsize, &u);
        int32_t isum = 0, msum = 0;
        for (int j = 0; j < 16; j++) {
            isum += u.sc[j] * dot_i8(u.q + 16 * j, a[i].qs + 16 * j, 16);
            msum += u.mn[j] * a[i].bsums[j];
        }
        acc += a[i].d * (u.d * (float)isum - u.dmin * (float)msum);
    }
    return acc;
}

//===--- x86: the dots in AVX2 ---===//

#if defined(__AVX2__)
#  include <immintrin.h>

/* The AVX2 dots of every type (the generic loops above serve the scalar
 * and NEON variants): the levels are made unsigned (a type's signed offset moves
 * into the activations' sums: s for blocks of 32, bsums for Q8_K) so that
 * vpmaddubsw multiplies them by the int8 activations (a pair of products
 * stays below 2*63*127, no saturation), and vpmaddwd applies the 16-bit
 * sub-block scales while it widens, so a super-block's sums stay in int32
 * lanes until its one conversion to F32; the grid types (IQ4_NL, IQ4_XS)
 * stay signed and multiply |v| by a with v's sign. The AVX-512 variants run
 * these too (their -m flags include AVX2). */

static inline float h16(uint16_t h) { return _cvtsh_ss(h); }

static inline __m256i cat128(__m128i lo, __m128i hi) {
    return _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
}

static inline float hsum_ps(__m256 v) {
    __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    x = _mm_add_ps(x, _mm_movehl_ps(x, x));
    x = _mm_add_ss(x, _mm_movehdup_ps(x));
    return _mm_cvtss_f32(x);
}

/* unsigned levels u by int8 activations a, times 16-bit scales sc per
 * pair of products: 8 int32 sums. */
static inline __m256i dot_us(__m256i u, __m256i a, __m256i sc) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, a), sc);
}

/* dot_us with every scale 1: the sums of four products, one vpdpbusd
 * where VNNI is (exactly maddubs and madd's: the levels of the blocks of
 * 32 stay below 32, no pair saturates). */
static inline __m256i dot_us1(__m256i u, __m256i a, __m256i ones) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
    (void)ones;
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, a);
#else
    return dot_us(u, a, ones);
#endif
}

/* Byte j set to `value` where bit `bit` of byte j of x is set. */
static inline __m256i bit_to(__m256i x, int bit, int value) {
    const __m256i m = _mm256_set1_epi8((char)(1 << bit));
    return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(x, m), m), _mm256_set1_epi8((char)value));
}

/* 32 bits of qh as 32 bytes, 16 where the bit is set (Q5_0/Q5_1). */
static inline __m256i qh_bytes16(const uint8_t qh[4]) {
    uint32_t x;
    memcpy(&x, qh, sizeof x);
    const __m256i idx = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                                         2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bits = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    const __m256i v = _mm256_and_si256(_mm256_shuffle_epi8(_mm256_set1_epi32((int)x), idx), bits);
    return _mm256_and_si256(_mm256_cmpeq_epi8(v, bits), _mm256_set1_epi8(16));
}

/* The 32 nibbles of a block of 32 in element order: the 16 bytes in both
 * halves, the upper half's shifted down 4 (with AVX-512's per-word shifts:
 * one load, shift and mask instead of two masks and an insert). */
static inline __m256i nibbles32(const uint8_t qs[16]) {
#if defined(__AVX512BW__) && defined(__AVX512VL__)
    const __m256i q = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)qs));
    const __m256i sh = _mm256_setr_epi16(0, 0, 0, 0, 0, 0, 0, 0, 4, 4, 4, 4, 4, 4, 4, 4);
    return _mm256_and_si256(_mm256_srlv_epi16(q, sh), _mm256_set1_epi8(15));
#else
    const __m128i q = _mm_loadu_si128((const __m128i *)qs), m4 = _mm_set1_epi8(15);
    return cat128(_mm_and_si128(q, m4), _mm_and_si128(_mm_srli_epi16(q, 4), m4));
#endif
}

#define MR 8 /* activation rows per pass over a weight row: its blocks unpacked once */

/* For NB activation rows a[r]: out[r] = sum over blocks of
 * d_w*d_a*sum(u*q_a) + m_w*s_a, u the unsigned levels. */
/* Signed levels v by int8 activations: |v| times a with v's sign. */
static inline __m256i dot_ss(__m256i v, __m256i a, __m256i sc) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(v, v), _mm256_sign_epi8(a, v)), sc);
}

#if defined(__AVX512BW__)
/* nibbles32 in both halves of a 512-bit register (the pairs' levels). */
static inline __m512i nibbles32_x2(const uint8_t qs[16]) {
    const __m512i q = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)qs));
    const __m512i sh = _mm512_set_epi64(0x0004000400040004ll, 0x0004000400040004ll, 0, 0,
                                        0x0004000400040004ll, 0x0004000400040004ll, 0, 0);
    return _mm512_and_si512(_mm512_srlv_epi16(q, sh), _mm512_set1_epi8(15));
}

/* A block's levels u in both halves. */
static inline __m512i dup256(__m256i u) { return _mm512_inserti64x4(_mm512_castsi256_si512(u), u, 1); }

/* dot_us1 and dot_ss for two activation rows at once, one in each half of
 * a 512-bit register against the same levels in both: lane for lane the
 * same integer sums (AVX-512 has no vpsignb: a's sign flipped by mask). */
#  define RT_ROWS_PAIRS 1
static inline __m512i dot_us1_x2(__m512i u, __m512i a) {
#  if defined(__AVX512VNNI__)
    return _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, a);
#  else
    return _mm512_madd_epi16(_mm512_maddubs_epi16(u, a), _mm512_set1_epi16(1));
#  endif
}

static inline __m512i dot_ss_x2(__m512i v, __m512i a) {
    const __mmask64 neg = _mm512_movepi8_mask(v);
    const __m512i sa = _mm512_mask_sub_epi8(a, neg, _mm512_setzero_si512(), a);
    return _mm512_madd_epi16(_mm512_maddubs_epi16(_mm512_abs_epi8(v), sa), _mm512_set1_epi16(1));
}
#endif

/* IQ4_NL's grid values of 32 nibbles (vpshufb: 16 entries fit a lane). */
static inline __m256i iq4nl_values(__m256i nibbles) {
    const __m128i t = _mm_loadu_si128((const __m128i *)rt_iq4nl_values);
    return _mm256_shuffle_epi8(cat128(t, t), nibbles);
}

/* The one-row loop's products, d_w*d_a and m_w*s_a, cost each row a scalar
 * product, a broadcast and a scalar sum a block, more than its dot product:
 * with several rows, ds (rows_scales) holds each block's d_a and s_a of
 * the rows side by side, so that one vector product makes every row's;
 * the same products summed in the same order, so a row's result does not
 * depend on how many rows share the pass (nor on the pairs below: a
 * greedy decode of SmolLM2's Q4_1 gives llama.cpp's logits to 4e-6 only
 * in its order, which its one-row dot sets; any other order of the lanes'
 * sums moves logits by 0.2 there, as the activations' int8 levels flip).
 *
 * With AVX-512 and aq (rows_pairs: the pass's rows' levels two by two,
 * block by block), two rows share each dot product, conversion and FMA,
 * one in each half of a 512-bit register, every lane's value the same:
 * half the instructions a row, though Zen 4 runs a 512-bit operation as
 * two 256-bit halves, so that its FMA ports (each block's dot, conversion
 * and FMA a row: the price of llama.cpp's order) still bound the loop.
 * Measured there (2 threads, m = 8192, k = 1536, best of 6 runs, with the
 * loops unswitched and the nibbles' loads below): n = 1 0.271 -> 0.251 ms,
 * n = 4 0.552 -> 0.563, n = 8 0.975 -> 0.892. */

/* The table's products for block i: dd = d_w*d_a of the rows, and the
 * rows' m_w*s_a added to accmv. */
#define ROWS32_SCALES                                                                       \
    const __m256 dd = _mm256_mul_ps(_mm256_set1_ps(d), _mm256_loadu_ps(ds + 16 * i));       \
    accmv = _mm256_add_ps(accmv, _mm256_mul_ps(_mm256_set1_ps(m), _mm256_loadu_ps(ds + 16 * i + 8)));
/* Row r's product with the block's levels u, scaled by dd's lane r. */
#define ROWS32_ROW(DOT, r)                                                                  \
    do {                                                                                    \
        const __m256i p = DOT(u, _mm256_loadu_si256((const __m256i *)a[r][i].qs), ones);    \
        const __m256 dr = _mm256_permutevar8x32_ps(dd, _mm256_set1_epi32(r));               \
        acc[r] = _mm256_fmadd_ps(dr, _mm256_cvtepi32_ps(p), acc[r]);                        \
    } while (0)
#if defined(RT_ROWS_PAIRS)
#  define ROWS32_PAIRS_LOOP(LEVELS2, M, DOT, DOT2)                                          \
    if (aq != NULL) {                                                                       \
        __m512 acc2[MR / 2];                                                                \
        __m512i pair_idx[MR / 2];                                                           \
        for (int p = 0; p < NB / 2; p++) {                                                  \
            acc2[p] = _mm512_setzero_ps();                                                  \
            pair_idx[p] = _mm512_inserti64x4(_mm512_set1_epi32(2 * p), _mm256_set1_epi32(2 * p + 1), 1); \
        }                                                                                   \
        for (int64_t i = 0; i < nb; i++) {                                                  \
            const __m512i u2 = LEVELS2;                                                     \
            const __m256i u = _mm512_castsi512_si256(u2);                                   \
            const float d = h16(w[i].d), m = (M);                                           \
            ROWS32_SCALES                                                                   \
            const __m512 dd2 = _mm512_castps256_ps512(dd);                                  \
            for (int p = 0; p < NB / 2; p++) {                                              \
                const __m512i pr = DOT2(u2, _mm512_loadu_si512(aq + (i * (MR / 2) + p) * 64)); \
                const __m512 dr = _mm512_permutexvar_ps(pair_idx[p], dd2);                  \
                acc2[p] = _mm512_fmadd_ps(dr, _mm512_cvtepi32_ps(pr), acc2[p]);             \
            }                                                                               \
            if (NB % 2) ROWS32_ROW(DOT, NB - 1);                                            \
        }                                                                                   \
        for (int p = 0; p < NB / 2; p++) {                                                  \
            acc[2 * p] = _mm512_castps512_ps256(acc2[p]);                                   \
            acc[2 * p + 1] = _mm512_extractf32x8_ps(acc2[p], 1);                            \
        }                                                                                   \
    } else
#else
#  define ROWS32_PAIRS_LOOP(LEVELS2, M, DOT, DOT2) (void)aq;
#endif
/* The three cases in loops of their own (a test per block cost the four
 * rows' loop 2 of its ~37 instructions a block): one row (no table), the
 * pairs (AVX-512), the table alone. */
#define ROWS32_AVX2(T, LEVELS, LEVELS2, M, DOT, DOT2)                                       \
    RT_INLINE void rows_##T##_n(const char *wr, const rt_cpu_q8s_t *const *a, const float *ds, \
                                const int8_t *aq, int64_t nb, int NB, float *out) {         \
        const rt_block_##T##_t *w = (const rt_block_##T##_t *)wr;                           \
        const __m256i ones = _mm256_set1_epi16(1);                                          \
        __m256 acc[MR], accmv = _mm256_setzero_ps();                                        \
        float accm[MR] = {0};                                                               \
        for (int r = 0; r < NB; r++) acc[r] = _mm256_setzero_ps();                          \
        if (ds == NULL) {                                                                   \
            for (int64_t i = 0; i < nb; i++) {                                              \
                const __m256i u = LEVELS;                                                   \
                const float d = h16(w[i].d), m = (M);                                       \
                for (int r = 0; r < NB; r++) {                                              \
                    const rt_cpu_q8s_t *ar = a[r] + i;                                      \
                    const __m256i p = DOT(u, _mm256_loadu_si256((const __m256i *)ar->qs), ones); \
                    acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(d * ar->d), _mm256_cvtepi32_ps(p), acc[r]); \
                    accm[r] += m * ar->s;                                                   \
                }                                                                           \
            }                                                                               \
        } else {                                                                            \
            ROWS32_PAIRS_LOOP(LEVELS2, M, DOT, DOT2)                                        \
            for (int64_t i = 0; i < nb; i++) {                                              \
                const __m256i u = LEVELS;                                                   \
                const float d = h16(w[i].d), m = (M);                                       \
                ROWS32_SCALES                                                               \
                for (int r = 0; r < NB; r++) ROWS32_ROW(DOT, r);                            \
            }                                                                               \
            _mm256_storeu_ps(accm, accmv);                                                  \
        }                                                                                   \
        for (int r = 0; r < NB; r++) out[r] = hsum_ps(acc[r]) + accm[r];                    \
    }
/* Q5_0: x = d*(q - 16) = d*q + (-16 d) */
/* LEVELS2: the same levels in both halves (the pairs' loop, AVX-512 only). */
#define Q5_LEVELS _mm256_or_si256(nibbles32(w[i].qs), qh_bytes16(w[i].qh))
#define IQ4NL_LEVELS iq4nl_values(nibbles32(w[i].qs))
ROWS32_AVX2(q4_1, nibbles32(w[i].qs), nibbles32_x2(w[i].qs), h16(w[i].m), dot_us1, dot_us1_x2)
ROWS32_AVX2(q5_0, Q5_LEVELS, dup256(Q5_LEVELS), -16.0f * d, dot_us1, dot_us1_x2)
ROWS32_AVX2(q5_1, Q5_LEVELS, dup256(Q5_LEVELS), h16(w[i].m), dot_us1, dot_us1_x2)
ROWS32_AVX2(iq4_nl, IQ4NL_LEVELS, dup256(IQ4NL_LEVELS), 0.0f, dot_ss, dot_ss_x2)
#undef Q5_LEVELS
#undef IQ4NL_LEVELS
#undef ROWS32_AVX2
#undef ROWS32_PAIRS_LOOP
#undef ROWS32_ROW
#undef ROWS32_SCALES

/* Q4_K/Q5_K's 8 scales and mins of a super-block. */
static inline void k4_scales8(const uint8_t s[12], int16_t sc[8], int16_t mn[8]) {
    for (int j = 0; j < 8; j++) {
        int scale, m;
        rt_quant_k4_scale_min(s, j, &scale, &m);
        sc[j] = (int16_t)scale;
        mn[j] = (int16_t)m;
    }
}

/* The mins' term of one activation row: sum(mn_j * its sums over j), the
 * sums of 16 added in pairs (phaddw), the products by vpmaddwd. */
static inline int32_t k4_msum(__m128i mn, const int16_t bsums[16]) {
    const __m128i b0 = _mm_loadu_si128((const __m128i *)bsums);
    const __m128i b1 = _mm_loadu_si128((const __m128i *)(bsums + 8));
    __m128i x = _mm_madd_epi16(mn, _mm_hadd_epi16(b0, b1));
    x = _mm_add_epi32(x, _mm_shuffle_epi32(x, 0x4e));
    x = _mm_add_epi32(x, _mm_shuffle_epi32(x, 0xb1));
    return _mm_cvtsi128_si32(x);
}

/* Q4_K and Q5_K: the 64 levels of chunk c (two sub-blocks of 32) into
 * lo/hi, then each activation row's products scaled by the sub-blocks'. */
#define ROWS_K4_AVX2(T, FIFTH)                                                               \
    RT_INLINE void rows_##T##_n(const char *wr, const rt_block_q8_k_t *const *a, int64_t nb, \
                                int NB, float *out) {                                        \
        const rt_block_##T##_t *w = (const rt_block_##T##_t *)wr;                            \
        const __m256i m4 = _mm256_set1_epi8(15);                                             \
        __m256 acc[MR];                                                                      \
        float accm[MR] = {0};                                                                \
        for (int r = 0; r < NB; r++) acc[r] = _mm256_setzero_ps();                           \
        for (int64_t i = 0; i < nb; i++) {                                                   \
            int16_t sc[8], mn[8];                                                            \
            k4_scales8(w[i].scales, sc, mn);                                                 \
            const __m128i mnv = _mm_loadu_si128((const __m128i *)mn);                        \
            __m256i isum[MR];                                                                \
            for (int r = 0; r < NB; r++) isum[r] = _mm256_setzero_si256();                   \
            for (int c = 0; c < 4; c++) {                                                    \
                const __m256i q = _mm256_loadu_si256((const __m256i *)(w[i].qs + 32 * c));   \
                __m256i lo = _mm256_and_si256(q, m4);                                        \
                __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);                  \
                FIFTH                                                                        \
                const __m256i s0 = _mm256_set1_epi16(sc[2 * c]), s1 = _mm256_set1_epi16(sc[2 * c + 1]); \
                for (int r = 0; r < NB; r++) {                                               \
                    const __m256i *av = (const __m256i *)(a[r][i].qs + 64 * c);              \
                    isum[r] = _mm256_add_epi32(isum[r], dot_us(lo, _mm256_loadu_si256(av), s0)); \
                    isum[r] = _mm256_add_epi32(isum[r], dot_us(hi, _mm256_loadu_si256(av + 1), s1)); \
                }                                                                            \
            }                                                                                \
            const float d = h16(w[i].d), dmin = h16(w[i].dmin);                              \
            for (int r = 0; r < NB; r++) {                                                   \
                acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(a[r][i].d * d),                      \
                                         _mm256_cvtepi32_ps(isum[r]), acc[r]);               \
                accm[r] += a[r][i].d * dmin * (float)k4_msum(mnv, a[r][i].bsums);            \
            }                                                                                \
        }                                                                                    \
        for (int r = 0; r < NB; r++) out[r] = hsum_ps(acc[r]) - accm[r];                     \
    }
ROWS_K4_AVX2(q4_k, )
ROWS_K4_AVX2(q5_k, const __m256i qh = _mm256_loadu_si256((const __m256i *)w[i].qh);
             lo = _mm256_or_si256(lo, bit_to(qh, 2 * c, 16));
             hi = _mm256_or_si256(hi, bit_to(qh, 2 * c + 1, 16));)
#undef ROWS_K4_AVX2

/* Q6_K with its levels unsigned (q + 32): the -32 becomes 32*sum(sc*bsums). */
RT_INLINE void rows_q6_k_n(const char *wr, const rt_block_q8_k_t *const *a, int64_t nb, int NB,
                           float *out) {
    const rt_block_q6_k_t *w = (const rt_block_q6_k_t *)wr;
    const __m256i m4 = _mm256_set1_epi8(15), m3 = _mm256_set1_epi8(3);
    __m256 acc[MR];
    for (int r = 0; r < NB; r++) acc[r] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)w[i].scales));
        __m256i isum[MR];
        for (int r = 0; r < NB; r++) isum[r] = _mm256_setzero_si256();
        for (int n = 0; n < 2; n++) {
            const __m256i l0 = _mm256_loadu_si256((const __m256i *)(w[i].ql + 64 * n));
            const __m256i l1 = _mm256_loadu_si256((const __m256i *)(w[i].ql + 64 * n + 32));
            const __m256i h = _mm256_loadu_si256((const __m256i *)(w[i].qh + 32 * n));
            const __m256i q[4] = {
                _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_slli_epi16(_mm256_and_si256(h, m3), 4)),
                _mm256_or_si256(_mm256_and_si256(l1, m4),
                                _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2), m3), 4)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                                _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 4), m3), 4)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 6), m3), 4)),
            };
            for (int k = 0; k < 4; k++) {
                const int8_t *s = w[i].scales + 8 * n + 2 * k;
                const __m256i scv = cat128(_mm_set1_epi16(s[0]), _mm_set1_epi16(s[1]));
                for (int r = 0; r < NB; r++) {
                    const __m256i av = _mm256_loadu_si256((const __m256i *)(a[r][i].qs + 128 * n + 32 * k));
                    isum[r] = _mm256_add_epi32(isum[r], dot_us(q[k], av, scv));
                }
            }
        }
        const float d = h16(w[i].d);
        for (int r = 0; r < NB; r++) {
            /* 32 * sum(sc_j * bsums_j), in the lanes, subtracted before the conversion */
            const __m256i bs = _mm256_loadu_si256((const __m256i *)a[r][i].bsums);
            const __m256i bias = _mm256_slli_epi32(_mm256_madd_epi16(sc16, bs), 5);
            acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(a[r][i].d * d),
                                     _mm256_cvtepi32_ps(_mm256_sub_epi32(isum[r], bias)), acc[r]);
        }
    }
    for (int r = 0; r < NB; r++) out[r] = hsum_ps(acc[r]);
}

/* Q2_K and Q3_K: chunk (n, j) of 32 levels is bits 2j of qs[32n .. 32n+31]
 * (Q3_K adds 4 where bit 4n+j of hmask is set: levels 0..7 for q+4), its
 * two halves scaled by scales 8n+2j and 8n+2j+1. The mins (Q2_K) and the
 * -4 (Q3_K) come off through the activations' sums of 16. */
#define ROWS_K2_AVX2(T, SCALES, HIGH, OFFSET)                                                \
    RT_INLINE void rows_##T##_n(const char *wr, const rt_block_q8_k_t *const *a, int64_t nb, \
                                int NB, float *out) {                                        \
        const rt_block_##T##_t *w = (const rt_block_##T##_t *)wr;                            \
        const __m256i m3 = _mm256_set1_epi8(3);                                              \
        __m256 acc[MR];                                                                      \
        for (int r = 0; r < NB; r++) acc[r] = _mm256_setzero_ps();                           \
        for (int64_t i = 0; i < nb; i++) {                                                   \
            int16_t sc[16], off[16];                                                         \
            SCALES                                                                           \
            const __m256i offv = _mm256_loadu_si256((const __m256i *)off);                   \
            __m256i isum[MR];                                                                \
            for (int r = 0; r < NB; r++) isum[r] = _mm256_setzero_si256();                   \
            for (int n = 0; n < 2; n++) {                                                    \
                const __m256i q = _mm256_loadu_si256((const __m256i *)(w[i].qs + 32 * n));   \
                for (int j = 0; j < 4; j++) {                                                \
                    __m256i u = _mm256_and_si256(_mm256_srli_epi16(q, 2 * j), m3);           \
                    HIGH                                                                     \
                    const __m256i scv = cat128(_mm_set1_epi16(sc[8 * n + 2 * j]),            \
                                               _mm_set1_epi16(sc[8 * n + 2 * j + 1]));       \
                    for (int r = 0; r < NB; r++) {                                           \
                        const __m256i av = _mm256_loadu_si256((const __m256i *)(a[r][i].qs + 128 * n + 32 * j)); \
                        isum[r] = _mm256_add_epi32(isum[r], dot_us(u, av, scv));             \
                    }                                                                        \
                }                                                                            \
            }                                                                                \
            const float d = h16(w[i].d), doff = OFFSET;                                      \
            for (int r = 0; r < NB; r++) {                                                   \
                const __m256i bs = _mm256_loadu_si256((const __m256i *)a[r][i].bsums);       \
                const __m256 o = _mm256_cvtepi32_ps(_mm256_madd_epi16(offv, bs));            \
                const __m256 v = _mm256_fmsub_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(isum[r]), \
                                                 _mm256_mul_ps(_mm256_set1_ps(doff), o));    \
                acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(a[r][i].d), v, acc[r]);              \
            }                                                                                \
        }                                                                                    \
        for (int r = 0; r < NB; r++) out[r] = hsum_ps(acc[r]);                               \
    }
/* Q2_K: x = d*sc*q - dmin*mn: the offset term is dmin * sum(mn_j * bsums_j) */
ROWS_K2_AVX2(q2_k,
             for (int j = 0; j < 16; j++) {
                 sc[j] = (int16_t)(w[i].scales[j] & 15);
                 off[j] = (int16_t)(w[i].scales[j] >> 4);
             },
             , h16(w[i].dmin))
/* Q3_K: x = d*sc*(u - 4): the offset term is d * sum(4*sc_j * bsums_j) */
ROWS_K2_AVX2(q3_k,
             const __m256i hm = _mm256_loadu_si256((const __m256i *)w[i].hmask);
             for (int j = 0; j < 16; j++) {
                 sc[j] = (int16_t)rt_quant_q3_k_scale(w[i].scales, j);
                 off[j] = (int16_t)(4 * sc[j]);
             },
             u = _mm256_or_si256(u, bit_to(hm, 4 * n + j, 4));, d)
#undef ROWS_K2_AVX2

/* IQ4_XS: 8 sub-blocks of 32 grid values, a signed 6-bit scale each. */
RT_INLINE void rows_iq4_xs_n(const char *wr, const rt_block_q8_k_t *const *a, int64_t nb, int NB,
                             float *out) {
    const rt_block_iq4_xs_t *w = (const rt_block_iq4_xs_t *)wr;
    __m256 acc[MR];
    for (int r = 0; r < NB; r++) acc[r] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        __m256i isum[MR];
        for (int r = 0; r < NB; r++) isum[r] = _mm256_setzero_si256();
        for (int j = 0; j < 8; j++) {
            const __m256i v = iq4nl_values(nibbles32(w[i].qs + 16 * j));
            const __m256i scv = _mm256_set1_epi16((int16_t)rt_quant_iq4_xs_scale(&w[i], j));
            for (int r = 0; r < NB; r++) {
                const __m256i av = _mm256_loadu_si256((const __m256i *)(a[r][i].qs + 32 * j));
                isum[r] = _mm256_add_epi32(isum[r], dot_ss(v, av, scv));
            }
        }
        const float d = h16(w[i].d);
        for (int r = 0; r < NB; r++)
            acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(a[r][i].d * d), _mm256_cvtepi32_ps(isum[r]), acc[r]);
    }
    for (int r = 0; r < NB; r++) out[r] = hsum_ps(acc[r]);
}

/* Specialised for 1..MR activation rows (the count a constant in each). */
typedef void (*rows_fn)(const char *w, const void *const *a, const float *ds, const int8_t *aq,
                        int64_t nb, int n, float *out);
/* DS: WITH_DS for the blocks of 32 (ROWS32_AVX2 takes the tables), NO_DS
 * for the others; DS1, one row's (never a table: the constant leaves the
 * one-row loop alone in its copy), NO_TABLE or NO_DS. */
#define WITH_DS ds, aq,
#define NO_TABLE NULL, NULL,
#define NO_DS
#define ROWS_WRAP(T, A, DS, DS1)                                                             \
    static void rows_##T(const char *w, const void *const *a, const float *ds, const int8_t *aq, \
                         int64_t nb, int n, float *out) {                                    \
        const A *const *aa = (const A *const *)a;                                            \
        (void)ds, (void)aq;                                                                  \
        switch (n) {                                                                         \
        case 1: rows_##T##_n(w, aa, DS1 nb, 1, out); break;                                  \
        case 2: rows_##T##_n(w, aa, DS nb, 2, out); break;                                   \
        case 3: rows_##T##_n(w, aa, DS nb, 3, out); break;                                   \
        case 4: rows_##T##_n(w, aa, DS nb, 4, out); break;                                   \
        case 5: rows_##T##_n(w, aa, DS nb, 5, out); break;                                   \
        case 6: rows_##T##_n(w, aa, DS nb, 6, out); break;                                   \
        case 7: rows_##T##_n(w, aa, DS nb, 7, out); break;                                   \
        default: rows_##T##_n(w, aa, DS nb, MR, out); break;                                 \
        }                                                                                    \
    }
ROWS_WRAP(q4_1, rt_cpu_q8s_t, WITH_DS, NO_TABLE)
ROWS_WRAP(q5_0, rt_cpu_q8s_t, WITH_DS, NO_TABLE)
ROWS_WRAP(q5_1, rt_cpu_q8s_t, WITH_DS, NO_TABLE)
ROWS_WRAP(q4_k, rt_block_q8_k_t, NO_DS, NO_DS)
ROWS_WRAP(q5_k, rt_block_q8_k_t, NO_DS, NO_DS)
ROWS_WRAP(q6_k, rt_block_q8_k_t, NO_DS, NO_DS)
ROWS_WRAP(iq4_nl, rt_cpu_q8s_t, WITH_DS, NO_TABLE)
ROWS_WRAP(q2_k, rt_block_q8_k_t, NO_DS, NO_DS)
ROWS_WRAP(q3_k, rt_block_q8_k_t, NO_DS, NO_DS)
ROWS_WRAP(iq4_xs, rt_block_q8_k_t, NO_DS, NO_DS)
#undef ROWS_WRAP
#undef WITH_DS
#undef NO_TABLE
#undef NO_DS

static rows_fn rows_for(rt_type_t t) {
    switch (t) {
    case RT_TYPE_Q4_1: return rows_q4_1;
    case RT_TYPE_Q5_0: return rows_q5_0;
    case RT_TYPE_Q5_1: return rows_q5_1;
    case RT_TYPE_Q4_K: return rows_q4_k;
    case RT_TYPE_Q5_K: return rows_q5_k;
    case RT_TYPE_Q6_K: return rows_q6_k;
    case RT_TYPE_IQ4_NL: return rows_iq4_nl;
    case RT_TYPE_Q2_K: return rows_q2_k;
    case RT_TYPE_Q3_K: return rows_q3_k;
    case RT_TYPE_IQ4_XS: return rows_iq4_xs;
    default: return NULL;
    }
}
#else
typedef void (*rows_fn)(const char *w, const void *const *a, const float *ds, const int8_t *aq,
                        int64_t nb, int n, float *out);
static rows_fn rows_for(rt_type_t t) { (void)t; return NULL; }
#endif

//===--- matvec ---===//

#define MR_ROWS 8 /* activation rows per pass (MR of the AVX2 dots) */

/* One weight row by one activation row, K elements. */
static float row_dot(rt_type_t t, const char *w, const void *act, int64_t K) {
    switch (t) {
#define D32(ID, T) \
    case RT_TYPE_##ID: return dot32(unpack_##T, sizeof(rt_block_##T##_t), w, act, K / 32);
#define D256(ID, T) \
    case RT_TYPE_##ID: return dot256(unpack_##T, sizeof(rt_block_##T##_t), w, act, K / RT_QK_K);
#if !defined(__AVX2__)
        D32(Q4_1, q4_1) D32(Q5_0, q5_0) D32(Q5_1, q5_1)
        D256(Q4_K, q4_k) D256(Q5_K, q5_k) D256(Q6_K, q6_k)
#endif
        D32(IQ4_NL, iq4_nl) D256(Q2_K, q2_k) D256(Q3_K, q3_k) D256(IQ4_XS, iq4_xs)
#undef D32
#undef D256
    default: return 0.0f;
    }
}

#define DS_MAX_BLOCKS 256 /* rows_scales' table on the stack: K up to 8192 */
#define AQ_MAX_BLOCKS 128 /* rows_pairs' (32 KiB): K up to 4096, longer rows go without */

/* The n activation rows' scales block by block for the blocks of 32
 * (ROWS32_AVX2's ds): MR_ROWS d then MR_ROWS s, zero past n. */
static void rows_scales(const void *const *a, int n, int64_t nb, float *ds) {
    for (int64_t i = 0; i < nb; i++)
        for (int r = 0; r < MR_ROWS; r++) {
            const rt_cpu_q8s_t *b = r < n ? (const rt_cpu_q8s_t *)a[r] + i : NULL;
            ds[16 * i + r] = b ? b->d : 0.0f;
            ds[16 * i + MR_ROWS + r] = b ? b->s : 0.0f;
        }
}

#if defined(RT_ROWS_PAIRS)
/* The levels of rows 2p and 2p + 1 side by side, block by block
 * (ROWS32_AVX2's aq): block i of pair p at 64 * (i * MR_ROWS / 2 + p). */
static void rows_pairs(const void *const *a, int n, int64_t nb, int8_t *aq) {
    for (int64_t i = 0; i < nb; i++)
        for (int r = 0; r + 1 < n; r += 2) {
            int8_t *d = aq + 64 * (i * (MR_ROWS / 2) + r / 2);
            memcpy(d, ((const rt_cpu_q8s_t *)a[r] + i)->qs, 32);
            memcpy(d + 32, ((const rt_cpu_q8s_t *)a[r + 1] + i)->qs, 32);
        }
}
#endif

/* Passes of up to MR activation rows over the item's weight rows, which
 * stay in L2 from one pass to the next. */
static void matvec_rows(const rt_cpu_mm_t *g, rows_fn f, int64_t m0, int64_t m1) {
    const bool q8k = rt_cpu_act_is_q8k(g->atype);
    const int64_t nb = g->K / (q8k ? RT_QK_K : 32);
    float ds[DS_MAX_BLOCKS * 2 * MR_ROWS];
#if defined(RT_ROWS_PAIRS)
    int8_t aq_buf[AQ_MAX_BLOCKS * 32 * MR_ROWS] __attribute__((aligned(64)));
#endif
    for (int64_t n0 = 0; n0 < g->N; n0 += MR_ROWS) {
        const int n = (int)(g->N - n0 < MR_ROWS ? g->N - n0 : MR_ROWS);
        const void *a[MR_ROWS];
        for (int r = 0; r < n; r++) a[r] = g->b + (size_t)(n0 + r) * g->ldb;
        const bool table = !q8k && n > 1 && nb <= DS_MAX_BLOCKS;
        if (table) rows_scales(a, n, nb, ds);
        const int8_t *aq = NULL;
#if defined(RT_ROWS_PAIRS)
        if (table && nb <= AQ_MAX_BLOCKS) {
            rows_pairs(a, n, nb, aq_buf);
            aq = aq_buf;
        }
#endif
        for (int64_t m = m0; m < m1; m++) {
            float out[MR_ROWS];
            f(g->a + (size_t)m * g->lda, a, table ? ds : NULL, aq, nb, n, out);
            for (int r = 0; r < n; r++) ((float *)(g->c + (size_t)(n0 + r) * g->ldc))[m] = out[r];
        }
    }
}

static void blocks_matvec(const rt_cpu_mm_t *g, int64_t m0, int64_t m1) {
    const rows_fn f = rows_for(g->atype);
    if (f != NULL) {
        matvec_rows(g, f, m0, m1);
        return;
    }
    for (int64_t m = m0; m < m1; m++) {
        const char *w = g->a + (size_t)m * g->lda;
        for (int64_t n = 0; n < g->N; n++) {
            float *c = (float *)(g->c + (size_t)n * g->ldc);
            c[m] = row_dot(g->atype, w, g->b + (size_t)n * g->ldb, g->K);
        }
    }
}

static const rt_cpu_kern_blocks_t kern_blocks = {
    .to_f32 = blocks_to_f32,
    .quantize_act = blocks_quantize_act,
    .roundtrip_act = blocks_roundtrip_act,
    .matvec = blocks_matvec,
};

const rt_cpu_kern_blocks_t *RT_KS(rt_cpu_kern_blocks)(void) {
    return &kern_blocks;
}

#else

const rt_cpu_kern_blocks_t *RT_KS(rt_cpu_kern_blocks)(void) {
    return NULL;
}

#endif
