/* SPDX-License-Identifier: MIT */
/* kern_blocks.c: products and conversions for the block types of ABI 1.2
 * (Q4_1, Q5_0, Q5_1, IQ4_NL in blocks of 32; Q2_K..Q6_K and IQ4_XS in
 * super-blocks of 256), compiled per variant. Activations are quantised
 * once per row (quantize_act), in the format the weights' dot product
 * wants:
 *
 *   blocks of 32:  rt_cpu_q8s_t per block: f32 d, s = d * sum(q), 32 int8 q
 *                  (s carries the weights' offset m: sum(d_w*q_w + m)*a is
 *                  d_w*d*sum(q_w*q) + m*s).
 *   super-blocks:  Q8_K (rt_block_q8_k_t: f32 d, 256 int8, sums of 16),
 *                  whose sums carry the K-quants' mins the same way.
 *
 * Each weight block is unpacked into int8 levels and small integer scales
 * (unpack_*: loops over the layouts of abi/rt_quant.h in the order the
 * dequantisers produce), then multiplied as int8 by int8 in groups of 16
 * with int32 sums, and scaled in F32 once per block. The loops are plain
 * C, written so that the compiler vectorises them for each variant's flags
 * (these objects are built at -O3). A result differs from the F32 product
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

static void q8s_quantize(const float *x, rt_cpu_q8s_t *b) {
    float amax = 0.0f;
    for (int i = 0; i < 32; i++) amax = fabsf(x[i]) > amax ? fabsf(x[i]) : amax;
    b->d = amax / 127.0f;
    const float id = b->d != 0.0f ? 1.0f / b->d : 0.0f;
    int sum = 0;
    for (int i = 0; i < 32; i++) {
        b->qs[i] = (int8_t)rt_quant_clamp(rt_quant_round(x[i] * id), -127, 127);
        sum += b->qs[i];
    }
    b->s = b->d * (float)sum;
}

static void blocks_quantize_act(const float *x, int64_t K, rt_type_t atype, void *row) {
    if (rt_cpu_act_is_q8k(atype)) {
        rt_block_q8_k_t *b = row;
        for (int64_t i = 0; i < K / RT_QK_K; i++) rt_quantize_block_q8_k(x + i * RT_QK_K, b + i);
    } else {
        rt_cpu_q8s_t *b = row;
        for (int64_t i = 0; i < K / 32; i++) q8s_quantize(x + i * 32, b + i);
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
            q8s_quantize(x + i * 32, &b);
            for (int j = 0; j < 32; j++) out[i * 32 + j] = b.d * (float)b.qs[j];
        }
    }
}

//===--- unpacking: blocks of 32 ---===//

/* Levels q of one block, its scale and offset: x = d*q + m. */
typedef struct unpacked32 {
    int8_t q[32];
    float d, m;
} unpacked32_t;

static void unpack_q4_1(const void *p, unpacked32_t *u) {
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

static void unpack_q5_0(const void *p, unpacked32_t *u) {
    const rt_block_q5_0_t *b = p;
    unpack5(b->qs, b->qh, 16, u->q);
    u->d = rt_fp16_to_fp32(b->d);
    u->m = 0.0f;
}

static void unpack_q5_1(const void *p, unpacked32_t *u) {
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

static void unpack_q4_k(const void *p, unpacked256_t *u) {
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

static void unpack_q5_k(const void *p, unpacked256_t *u) {
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

static void unpack_q6_k(const void *p, unpacked256_t *u) {
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

//===--- matvec ---===//

/* One weight row by one activation row, K elements. */
static float row_dot(rt_type_t t, const char *w, const void *act, int64_t K) {
    switch (t) {
#define D32(ID, T) \
    case RT_TYPE_##ID: return dot32(unpack_##T, sizeof(rt_block_##T##_t), w, act, K / 32);
#define D256(ID, T) \
    case RT_TYPE_##ID: return dot256(unpack_##T, sizeof(rt_block_##T##_t), w, act, K / RT_QK_K);
        D32(Q4_1, q4_1) D32(Q5_0, q5_0) D32(Q5_1, q5_1) D32(IQ4_NL, iq4_nl)
        D256(Q2_K, q2_k) D256(Q3_K, q3_k) D256(Q4_K, q4_k) D256(Q5_K, q5_k) D256(Q6_K, q6_k)
        D256(IQ4_XS, iq4_xs)
#undef D32
#undef D256
    default: return 0.0f;
    }
}

static void blocks_matvec(const rt_cpu_mm_t *g, int64_t m0, int64_t m1) {
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
