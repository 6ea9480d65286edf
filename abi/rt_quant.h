/* SPDX-License-Identifier: MIT */
/* rt_quant.h: reference conversions between F32 and the stored formats
 * (F16, BF16, and every block type of rt_tensor.h), header-only so that the
 * core, plugins and tests share one definition of every format. Scalar;
 * plugins bring their own vector versions and test them against these.
 * Dequantisers are exact: they are the formats' definition (checked against
 * the gguf Python package's decoder by tests/test-quant-gguf.py). Rounding is
 * to nearest even for F16/BF16, and for blocks:
 *
 *   Q8_0: d = max|x| / 127, q = round(x / d)           (x = d*q)
 *   Q4_0: d = x_m / -8 where x_m is the x of largest |x|,
 *         q = min(15, (int)(x/d + 8.5))                 (x = d*(q - 8))
 *   Q5_0: as Q4_0 with 16 for 8 and 31 for 15
 *   Q4_1, Q5_1: d = (max - min) / (2^bits - 1), m = min, q = round((x - m)/d)
 *   K-quants: each sub-block's scale (and min) is fitted by least squares
 *         (affine types) or by a small search around max|x| (symmetric
 *         types); the sub-block scales are then quantised against the
 *         super-block's f16 scale, and q is rounded with the scale it will
 *         be decoded with, so the stored scales and q agree.
 *   IQ4_NL, IQ4_XS: q is the nearest entry of rt_iq4nl_values for x/d.
 *
 * The quantisers aim at small error, not at reproducing another tool's
 * bytes: any quantiser's output decodes the same everywhere.
 */
#ifndef RT_QUANT_H
#define RT_QUANT_H

#include "rt_tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Union punning is defined behaviour in C (and supported by C++ compilers). */
static inline uint32_t rt_f32_bits(float f) { union { float f; uint32_t u; } v; v.f = f; return v.u; }
static inline float rt_bits_f32(uint32_t u) { union { float f; uint32_t u; } v; v.u = u; return v.f; }

static inline float rt_fp16_to_fp32(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0x1f) return rt_bits_f32(sign | 0x7f800000u | (man << 13)); /* inf, nan */
    if (exp == 0) {
        if (man == 0) return rt_bits_f32(sign);
        /* subnormal: value = man * 2^-24 */
        float v = (float)man * (1.0f / 16777216.0f);
        return sign ? -v : v;
    }
    return rt_bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

static inline uint16_t rt_fp32_to_fp16(float f) {
    const uint32_t u = rt_f32_bits(f);
    const uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    const uint32_t au = u & 0x7fffffffu;
    if (au >= 0x7f800000u) /* inf or nan (nan stays nan) */
        return (uint16_t)(sign | 0x7c00u | (au > 0x7f800000u ? 0x200u : 0u));
    if (au >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds past 65504 */
    if (au < 0x38800000u) { /* below the smallest normal half: subnormal or zero */
        const float a = rt_bits_f32(au);
        /* adding 0.5 (2^-1) shifts the mantissa so hardware rounding is RNE at 2^-24 */
        const uint32_t r = rt_f32_bits(a + 0.5f) - 0x3f000000u;
        return (uint16_t)(sign | r);
    }
    const uint32_t man_odd = (au >> 13) & 1u;
    const uint32_t v = au - 0x38000000u + 0xfffu + man_odd; /* rebias, round to nearest even */
    return (uint16_t)(sign | (v >> 13));
}

static inline float rt_bf16_to_fp32(uint16_t h) { return rt_bits_f32((uint32_t)h << 16); }

static inline uint16_t rt_fp32_to_bf16(float f) {
    const uint32_t u = rt_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* quiet nan */
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static inline void rt_quantize_block_q8_0(const float *x, rt_block_q8_0_t *b) {
    float amax = 0.0f;
    for (int i = 0; i < RT_QK8_0; i++) {
        const float a = x[i] < 0 ? -x[i] : x[i];
        if (a > amax) amax = a;
    }
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b->d = rt_fp32_to_fp16(d);
    for (int i = 0; i < RT_QK8_0; i++) {
        const float v = x[i] * id;
        b->qs[i] = (int8_t)(v < 0 ? -(int)(-v + 0.5f) : (int)(v + 0.5f));
    }
}

static inline void rt_dequantize_block_q8_0(const rt_block_q8_0_t *b, float *y) {
    const float d = rt_fp16_to_fp32(b->d);
    for (int i = 0; i < RT_QK8_0; i++) y[i] = d * (float)b->qs[i];
}

static inline void rt_quantize_block_q4_0(const float *x, rt_block_q4_0_t *b) {
    float amax = 0.0f, max = 0.0f;
    for (int i = 0; i < RT_QK4_0; i++) {
        const float a = x[i] < 0 ? -x[i] : x[i];
        if (a > amax) { amax = a; max = x[i]; }
    }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b->d = rt_fp32_to_fp16(d);
    for (int j = 0; j < RT_QK4_0 / 2; j++) {
        const float x0 = x[j] * id + 8.5f, x1 = x[j + RT_QK4_0 / 2] * id + 8.5f;
        const int q0 = x0 < 15.0f ? (int)x0 : 15, q1 = x1 < 15.0f ? (int)x1 : 15;
        b->qs[j] = (uint8_t)(q0 | (q1 << 4));
    }
}

static inline void rt_dequantize_block_q4_0(const rt_block_q4_0_t *b, float *y) {
    const float d = rt_fp16_to_fp32(b->d);
    for (int j = 0; j < RT_QK4_0 / 2; j++) {
        y[j] = d * (float)((b->qs[j] & 0x0f) - 8);
        y[j + RT_QK4_0 / 2] = d * (float)((b->qs[j] >> 4) - 8);
    }
}

//===--- abi >= 1.2: helpers of the block quantisers ---===//

static inline int rt_quant_round(float v) { return v < 0 ? -(int)(-v + 0.5f) : (int)(v + 0.5f); }

static inline int rt_quant_clamp(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

static inline float rt_quant_abs(float v) { return v < 0 ? -v : v; }

/* q = clamp(round(x / d), lo, hi); 0 when d is 0. */
static inline int rt_quant_level(float x, float d, int lo, int hi) {
    return d != 0.0f ? rt_quant_clamp(rt_quant_round(x / d), lo, hi) : 0;
}

/* Symmetric fit of n values onto the integer levels lo..hi (lo < 0 < hi):
 * the scale that maps the value of largest |x| onto lo, and scales that
 * map it a quarter level to a level either side, keeping the one of least squared error. Returns the signed
 * scale (0 for an all-zero block). */
static inline float rt_quant_fit_symmetric(const float *x, int n, int lo, int hi) {
    float xm = 0.0f;
    for (int i = 0; i < n; i++)
        if (rt_quant_abs(x[i]) > rt_quant_abs(xm)) xm = x[i];
    if (xm == 0.0f) return 0.0f;
    float best = xm / (float)lo, best_err = -1.0f;
    for (int k = -4; k <= 4; k++) {
        const float d = xm / ((float)lo - 0.25f * (float)k);
        float err = 0.0f;
        for (int i = 0; i < n; i++) {
            const float e = x[i] - d * (float)rt_quant_level(x[i], d, lo, hi);
            err += e * e;
        }
        if (best_err < 0 || err < best_err) { best_err = err; best = d; }
    }
    return best;
}

/* Affine fit x ~ d*q - m of n values, q in 0..nmax, d >= 0, m >= 0 (the
 * K-quants store m as a subtracted, unsigned min): start from the range,
 * then alternate rounding q and solving the least-squares line through
 * (q, x), keeping the best fit found. */
static inline void rt_quant_fit_affine(const float *x, int n, int nmax, float *out_d,
                                       float *out_m) {
    float lo = 0.0f, hi = x[0];
    for (int i = 0; i < n; i++) {
        if (x[i] < lo) lo = x[i];
        if (x[i] > hi) hi = x[i];
    }
    float d = hi > lo ? (hi - lo) / (float)nmax : 0.0f, m = -lo;
    float best_d = d, best_m = m, best_err = -1.0f;
    for (int iter = 0; iter < 4 && d > 0.0f; iter++) {
        float sq = 0, sqq = 0, sx = 0, sqx = 0, err = 0;
        for (int i = 0; i < n; i++) {
            const float q = (float)rt_quant_level(x[i] + m, d, 0, nmax);
            const float e = d * q - m - x[i];
            err += e * e;
            sq += q; sqq += q * q; sx += x[i]; sqx += q * x[i];
        }
        if (best_err < 0 || err < best_err) { best_err = err; best_d = d; best_m = m; }
        const float det = (float)n * sqq - sq * sq;
        if (det <= 0.0f) break;
        float a = ((float)n * sqx - sq * sx) / det, b = (sqq * sx - sq * sqx) / det;
        if (b > 0.0f) { b = 0.0f; a = sqq > 0 ? sqx / sqq : 0.0f; } /* m must stay >= 0 */
        if (a <= 0.0f) break;
        d = a; m = -b;
    }
    *out_d = best_d;
    *out_m = best_m;
}

/* Quantises n non-negative sub-block values v against one super-scale so
 * that v[j] ~ scale*l[j], l in 0..lmax. Returns the f16-rounded scale. */
static inline float rt_quant_superscale_unsigned(const float *v, int n, int lmax, uint8_t *l,
                                                 uint16_t *out_h) {
    float vmax = 0.0f;
    for (int j = 0; j < n; j++)
        if (v[j] > vmax) vmax = v[j];
    *out_h = rt_fp32_to_fp16(vmax / (float)lmax);
    const float s = rt_fp16_to_fp32(*out_h);
    for (int j = 0; j < n; j++) l[j] = (uint8_t)rt_quant_level(v[j], s, 0, lmax);
    return s;
}

/* As above for signed values onto lo..hi (the largest |v| goes to lo). */
static inline float rt_quant_superscale_signed(const float *v, int n, int lo, int hi, int8_t *l,
                                               uint16_t *out_h) {
    float vm = 0.0f;
    for (int j = 0; j < n; j++)
        if (rt_quant_abs(v[j]) > rt_quant_abs(vm)) vm = v[j];
    *out_h = rt_fp32_to_fp16(vm / (float)lo);
    const float s = rt_fp16_to_fp32(*out_h);
    for (int j = 0; j < n; j++) l[j] = (int8_t)rt_quant_level(v[j], s, lo, hi);
    return s;
}

//===--- abi >= 1.2: Q4_1, Q5_0, Q5_1 ---===//

/* The fifth bit of element j of a 32-block, qh read little-endian. */
static inline int rt_quant_qh_bit(const uint8_t qh[4], int j) { return (qh[j >> 3] >> (j & 7)) & 1; }

static inline void rt_quant_minmax(const float *x, int n, float *out_min, float *out_max) {
    float lo = x[0], hi = x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < lo) lo = x[i];
        if (x[i] > hi) hi = x[i];
    }
    *out_min = lo;
    *out_max = hi;
}

/* 32 levels q (0..2^bits-1) of x = d*q + m with d, m from the range. */
static inline void rt_quant_levels_minmax(const float *x, int nmax, uint16_t *dh, uint16_t *mh,
                                          uint8_t q[32]) {
    float lo, hi;
    rt_quant_minmax(x, 32, &lo, &hi);
    *dh = rt_fp32_to_fp16((hi - lo) / (float)nmax);
    *mh = rt_fp32_to_fp16(lo);
    const float d = rt_fp16_to_fp32(*dh), m = rt_fp16_to_fp32(*mh);
    for (int i = 0; i < 32; i++) q[i] = (uint8_t)rt_quant_level(x[i] - m, d, 0, nmax);
}

static inline void rt_quant_pack_nibbles(const uint8_t q[32], uint8_t qs[16]) {
    for (int j = 0; j < 16; j++) qs[j] = (uint8_t)((q[j] & 15) | ((q[j + 16] & 15) << 4));
}

static inline void rt_quant_pack_qh(const uint8_t q[32], uint8_t qh[4]) {
    for (int j = 0; j < 4; j++) qh[j] = 0;
    for (int j = 0; j < 32; j++) qh[j >> 3] |= (uint8_t)(((q[j] >> 4) & 1) << (j & 7));
}

static inline void rt_quantize_block_q4_1(const float *x, rt_block_q4_1_t *b) {
    uint8_t q[32];
    rt_quant_levels_minmax(x, 15, &b->d, &b->m, q);
    rt_quant_pack_nibbles(q, b->qs);
}

static inline void rt_dequantize_block_q4_1(const rt_block_q4_1_t *b, float *y) {
    const float d = rt_fp16_to_fp32(b->d), m = rt_fp16_to_fp32(b->m);
    for (int j = 0; j < 16; j++) {
        y[j] = d * (float)(b->qs[j] & 15) + m;
        y[j + 16] = d * (float)(b->qs[j] >> 4) + m;
    }
}

static inline void rt_quantize_block_q5_0(const float *x, rt_block_q5_0_t *b) {
    float amax = 0.0f, max = 0.0f;
    for (int i = 0; i < 32; i++)
        if (rt_quant_abs(x[i]) > amax) { amax = rt_quant_abs(x[i]); max = x[i]; }
    const float d = max / -16.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    b->d = rt_fp32_to_fp16(d);
    uint8_t q[32];
    for (int i = 0; i < 32; i++) {
        const float v = x[i] * id + 16.5f;
        q[i] = (uint8_t)(v < 31.0f ? (int)v : 31);
    }
    rt_quant_pack_nibbles(q, b->qs);
    rt_quant_pack_qh(q, b->qh);
}

static inline void rt_dequantize_block_q5_0(const rt_block_q5_0_t *b, float *y) {
    const float d = rt_fp16_to_fp32(b->d);
    for (int j = 0; j < 16; j++) {
        y[j] = d * (float)(((b->qs[j] & 15) | (rt_quant_qh_bit(b->qh, j) << 4)) - 16);
        y[j + 16] = d * (float)(((b->qs[j] >> 4) | (rt_quant_qh_bit(b->qh, j + 16) << 4)) - 16);
    }
}

static inline void rt_quantize_block_q5_1(const float *x, rt_block_q5_1_t *b) {
    uint8_t q[32];
    rt_quant_levels_minmax(x, 31, &b->d, &b->m, q);
    rt_quant_pack_nibbles(q, b->qs);
    rt_quant_pack_qh(q, b->qh);
}

static inline void rt_dequantize_block_q5_1(const rt_block_q5_1_t *b, float *y) {
    const float d = rt_fp16_to_fp32(b->d), m = rt_fp16_to_fp32(b->m);
    for (int j = 0; j < 16; j++) {
        y[j] = d * (float)((b->qs[j] & 15) | (rt_quant_qh_bit(b->qh, j) << 4)) + m;
        y[j + 16] = d * (float)((b->qs[j] >> 4) | (rt_quant_qh_bit(b->qh, j + 16) << 4)) + m;
    }
}

//===--- abi >= 1.2: the K-quants ---===//

/* Affine super-block: n_sub sub-blocks of sub elements fitted as
 * x ~ (d*ls)*q - (dmin*lm), q in 0..nmax, ls and lm in 0..lmax. Returns the
 * levels q (one per element), the scale levels and the f16 super-scales. */
static inline void rt_quant_k_affine(const float *x, int n_sub, int sub, int nmax, int lmax,
                                     uint8_t *q, uint8_t *ls, uint8_t *lm, uint16_t *dh,
                                     uint16_t *dminh) {
    float sc[16], mn[16];
    for (int j = 0; j < n_sub; j++) rt_quant_fit_affine(x + j * sub, sub, nmax, &sc[j], &mn[j]);
    const float d = rt_quant_superscale_unsigned(sc, n_sub, lmax, ls, dh);
    const float dmin = rt_quant_superscale_unsigned(mn, n_sub, lmax, lm, dminh);
    for (int j = 0; j < n_sub; j++) {
        const float dj = d * (float)ls[j], mj = dmin * (float)lm[j];
        for (int i = 0; i < sub; i++)
            q[j * sub + i] = (uint8_t)rt_quant_level(x[j * sub + i] + mj, dj, 0, nmax);
    }
}

/* Symmetric super-block: x ~ (d*ls)*q, q in qlo..qhi, ls in llo..lhi. */
static inline void rt_quant_k_symmetric(const float *x, int n_sub, int sub, int qlo, int qhi,
                                        int llo, int lhi, int8_t *q, int8_t *ls, uint16_t *dh) {
    float sc[16];
    for (int j = 0; j < n_sub; j++) sc[j] = rt_quant_fit_symmetric(x + j * sub, sub, qlo, qhi);
    const float d = rt_quant_superscale_signed(sc, n_sub, llo, lhi, ls, dh);
    for (int j = 0; j < n_sub; j++)
        for (int i = 0; i < sub; i++)
            q[j * sub + i] = (int8_t)rt_quant_level(x[j * sub + i], d * (float)ls[j], qlo, qhi);
}

/* Q2_K and Q3_K place element e (0..255) of a super-block at byte
 * 32*(e/128) + e%32 of qs, bits 2*((e%128)/32); its scale is e/16. */
static inline int rt_quant_k2_byte(int e) { return 32 * (e >> 7) + (e & 31); }
static inline int rt_quant_k2_shift(int e) { return 2 * ((e & 127) >> 5); }

static inline void rt_quantize_block_q2_k(const float *x, rt_block_q2_k_t *b) {
    uint8_t q[RT_QK_K], ls[16], lm[16];
    rt_quant_k_affine(x, 16, 16, 3, 15, q, ls, lm, &b->d, &b->dmin);
    for (int j = 0; j < 16; j++) b->scales[j] = (uint8_t)(ls[j] | (lm[j] << 4));
    for (int i = 0; i < RT_QK_K / 4; i++) b->qs[i] = 0;
    for (int e = 0; e < RT_QK_K; e++)
        b->qs[rt_quant_k2_byte(e)] |= (uint8_t)(q[e] << rt_quant_k2_shift(e));
}

static inline void rt_dequantize_block_q2_k(const rt_block_q2_k_t *b, float *y) {
    const float d = rt_fp16_to_fp32(b->d), dmin = rt_fp16_to_fp32(b->dmin);
    for (int e = 0; e < RT_QK_K; e++) {
        const uint8_t sc = b->scales[e >> 4];
        const int q = (b->qs[rt_quant_k2_byte(e)] >> rt_quant_k2_shift(e)) & 3;
        y[e] = d * (float)(sc & 15) * (float)q - dmin * (float)(sc >> 4);
    }
}

/* Q3_K's 16 six-bit scales: low 4 bits in bytes 0..7 (two nibbles each:
 * scale j < 8 low, j + 8 high), high 2 bits in bytes 8..11 (scale j at byte
 * 8 + j%4, bits 2*(j/4)). Stored biased by 32. */
static inline int rt_quant_q3_k_scale(const uint8_t s[12], int j) {
    const int low = j < 8 ? s[j] & 15 : s[j - 8] >> 4;
    const int high = (s[8 + (j & 3)] >> (2 * (j >> 2))) & 3;
    return (low | (high << 4)) - 32;
}

static inline void rt_quantize_block_q3_k(const float *x, rt_block_q3_k_t *b) {
    int8_t q[RT_QK_K], ls[16];
    rt_quant_k_symmetric(x, 16, 16, -4, 3, -32, 31, q, ls, &b->d);
    for (int i = 0; i < 12; i++) b->scales[i] = 0;
    for (int j = 0; j < 16; j++) {
        const int v = ls[j] + 32;
        b->scales[j & 7] |= (uint8_t)((v & 15) << (j < 8 ? 0 : 4));
        b->scales[8 + (j & 3)] |= (uint8_t)((v >> 4) << (2 * (j >> 2)));
    }
    for (int i = 0; i < RT_QK_K / 4; i++) b->qs[i] = 0;
    for (int i = 0; i < RT_QK_K / 8; i++) b->hmask[i] = 0;
    for (int e = 0; e < RT_QK_K; e++) {
        const int u = q[e] + 4; /* 0..7: bit 2 set means "no -4" */
        b->qs[rt_quant_k2_byte(e)] |= (uint8_t)((u & 3) << rt_quant_k2_shift(e));
        b->hmask[e & 31] |= (uint8_t)((u >> 2) << (e >> 5));
    }
}

static inline void rt_dequantize_block_q3_k(const rt_block_q3_k_t *b, float *y) {
    const float d = rt_fp16_to_fp32(b->d);
    for (int e = 0; e < RT_QK_K; e++) {
        const int low = (b->qs[rt_quant_k2_byte(e)] >> rt_quant_k2_shift(e)) & 3;
        const int high = (b->hmask[e & 31] >> (e >> 5)) & 1;
        y[e] = d * (float)rt_quant_q3_k_scale(b->scales, e >> 4) * (float)(low - (high ? 0 : 4));
    }
}

/* Q4_K/Q5_K's 8 six-bit scales and mins in 12 bytes: for j < 4, scale j is
 * the low 6 bits of byte j and min j of byte j+4; for j >= 4, byte j+4
 * holds both low nibbles and the high 2 bits sit in the top of bytes j-4
 * (scale) and j (min). */
static inline void rt_quant_k4_scale_min(const uint8_t s[12], int j, int *out_sc, int *out_m) {
    if (j < 4) {
        *out_sc = s[j] & 63;
        *out_m = s[j + 4] & 63;
    } else {
        *out_sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
        *out_m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

static inline void rt_quant_k4_pack_scales(const uint8_t ls[8], const uint8_t lm[8], uint8_t s[12]) {
    for (int j = 0; j < 4; j++) {
        s[j] = (uint8_t)((ls[j] & 63) | ((ls[j + 4] >> 4) << 6));
        s[j + 4] = (uint8_t)((lm[j] & 63) | ((lm[j + 4] >> 4) << 6));
        s[j + 8] = (uint8_t)((ls[j + 4] & 15) | ((lm[j + 4] & 15) << 4));
    }
}

/* Q4_K/Q5_K place sub-block j's element i at byte 32*(j/2) + i of qs, low
 * nibble for even j and high for odd; Q5_K's fifth bit is bit j of qh[i]. */
static inline void rt_quantize_block_q4_k(const float *x, rt_block_q4_k_t *b) {
    uint8_t q[RT_QK_K], ls[8], lm[8];
    rt_quant_k_affine(x, 8, 32, 15, 63, q, ls, lm, &b->d, &b->dmin);
    rt_quant_k4_pack_scales(ls, lm, b->scales);
    for (int c = 0; c < 4; c++)
        for (int i = 0; i < 32; i++)
            b->qs[32 * c + i] = (uint8_t)(q[64 * c + i] | (q[64 * c + 32 + i] << 4));
}

/* Q4_K and Q5_K decode alike: sub-block j's 32 levels from the nibbles
 * (and, for Q5_K, bit j of qh as the fifth bit; qh NULL for Q4_K). */
static inline void rt_quant_k4_decode(uint16_t dh, uint16_t dminh, const uint8_t scales[12],
                                      const uint8_t *qs, const uint8_t *qh, float *y) {
    const float d = rt_fp16_to_fp32(dh), dmin = rt_fp16_to_fp32(dminh);
    for (int j = 0; j < 8; j++) {
        int sc, m;
        rt_quant_k4_scale_min(scales, j, &sc, &m);
        const float dj = d * (float)sc, mj = dmin * (float)m;
        const uint8_t *q = qs + 32 * (j >> 1);
        for (int i = 0; i < 32; i++) {
            const int high = qh != NULL ? ((qh[i] >> j) & 1) << 4 : 0;
            y[32 * j + i] = dj * (float)(((q[i] >> (4 * (j & 1))) & 15) | high) - mj;
        }
    }
}

static inline void rt_dequantize_block_q4_k(const rt_block_q4_k_t *b, float *y) {
    rt_quant_k4_decode(b->d, b->dmin, b->scales, b->qs, NULL, y);
}

static inline void rt_quantize_block_q5_k(const float *x, rt_block_q5_k_t *b) {
    uint8_t q[RT_QK_K], ls[8], lm[8];
    rt_quant_k_affine(x, 8, 32, 31, 63, q, ls, lm, &b->d, &b->dmin);
    rt_quant_k4_pack_scales(ls, lm, b->scales);
    for (int i = 0; i < 32; i++) b->qh[i] = 0;
    for (int c = 0; c < 4; c++)
        for (int i = 0; i < 32; i++) {
            const uint8_t lo = q[64 * c + i], hi = q[64 * c + 32 + i];
            b->qs[32 * c + i] = (uint8_t)((lo & 15) | ((hi & 15) << 4));
            b->qh[i] |= (uint8_t)(((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
        }
}

static inline void rt_dequantize_block_q5_k(const rt_block_q5_k_t *b, float *y) {
    rt_quant_k4_decode(b->d, b->dmin, b->scales, b->qs, b->qh, y);
}

/* Q6_K places element e = 128*n + 32*k + i (k 0..3, i 0..31) in the nibble
 * 4*(k/2) of ql[64*n + 32*(k%2) + i] and bits 2*k of qh[32*n + i]; its scale
 * is e/16. q is stored biased by 32. */
static inline int rt_quant_q6_k_ql(int e) { return 64 * (e >> 7) + 32 * ((e >> 5) & 1) + (e & 31); }
static inline int rt_quant_q6_k_qh(int e) { return 32 * (e >> 7) + (e & 31); }

static inline void rt_quantize_block_q6_k(const float *x, rt_block_q6_k_t *b) {
    int8_t q[RT_QK_K];
    rt_quant_k_symmetric(x, 16, 16, -32, 31, -128, 127, q, b->scales, &b->d);
    for (int i = 0; i < RT_QK_K / 2; i++) b->ql[i] = 0;
    for (int i = 0; i < RT_QK_K / 4; i++) b->qh[i] = 0;
    for (int e = 0; e < RT_QK_K; e++) {
        const int u = q[e] + 32, k = (e >> 5) & 3;
        b->ql[rt_quant_q6_k_ql(e)] |= (uint8_t)((u & 15) << (4 * (k >> 1)));
        b->qh[rt_quant_q6_k_qh(e)] |= (uint8_t)((u >> 4) << (2 * k));
    }
}

static inline void rt_dequantize_block_q6_k(const rt_block_q6_k_t *b, float *y) {
    const float d = rt_fp16_to_fp32(b->d);
    for (int e = 0; e < RT_QK_K; e++) {
        const int k = (e >> 5) & 3;
        const int low = (b->ql[rt_quant_q6_k_ql(e)] >> (4 * (k >> 1))) & 15;
        const int high = (b->qh[rt_quant_q6_k_qh(e)] >> (2 * k)) & 3;
        y[e] = d * (float)b->scales[e >> 4] * (float)((low | (high << 4)) - 32);
    }
}

/* Q8_K: the activation side of K-quant dot products; d stays f32. */
static inline void rt_quantize_block_q8_k(const float *x, rt_block_q8_k_t *b) {
    float amax = 0.0f;
    for (int i = 0; i < RT_QK_K; i++)
        if (rt_quant_abs(x[i]) > amax) amax = rt_quant_abs(x[i]);
    b->d = amax / 127.0f;
    for (int i = 0; i < RT_QK_K; i++) b->qs[i] = (int8_t)rt_quant_level(x[i], b->d, -127, 127);
    for (int j = 0; j < RT_QK_K / 16; j++) {
        int sum = 0;
        for (int i = 0; i < 16; i++) sum += b->qs[16 * j + i];
        b->bsums[j] = (int16_t)sum;
    }
}

static inline void rt_dequantize_block_q8_k(const rt_block_q8_k_t *b, float *y) {
    for (int i = 0; i < RT_QK_K; i++) y[i] = b->d * (float)b->qs[i];
}

//===--- abi >= 1.2: IQ4_NL, IQ4_XS ---===//

/* The non-linear 4-bit grid both types index (denser near zero, where
 * weights cluster). */
static const int8_t rt_iq4nl_values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                           1,    13,   25,  38,  53,  69,  89,  113};

/* The index of the grid value nearest v (v in grid units). */
static inline int rt_quant_iq4nl_index(float v) {
    int best = 0;
    for (int k = 1; k < 16; k++)
        if (rt_quant_abs(v - (float)rt_iq4nl_values[k]) < rt_quant_abs(v - (float)rt_iq4nl_values[best]))
            best = k;
    return best;
}

/* 32 grid indices of x for scale d, packed as nibbles. */
static inline void rt_quant_iq4nl_pack(const float *x, float d, uint8_t qs[16]) {
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < 16; j++)
        qs[j] = (uint8_t)(rt_quant_iq4nl_index(x[j] * id) | (rt_quant_iq4nl_index(x[j + 16] * id) << 4));
}

static inline void rt_quant_iq4nl_unpack(const uint8_t qs[16], float d, float *y) {
    for (int j = 0; j < 16; j++) {
        y[j] = d * (float)rt_iq4nl_values[qs[j] & 15];
        y[j + 16] = d * (float)rt_iq4nl_values[qs[j] >> 4];
    }
}

static inline void rt_quantize_block_iq4_nl(const float *x, rt_block_iq4_nl_t *b) {
    float xm = 0.0f;
    for (int i = 0; i < RT_QK4_NL; i++)
        if (rt_quant_abs(x[i]) > rt_quant_abs(xm)) xm = x[i];
    b->d = rt_fp32_to_fp16(xm / -127.0f);
    rt_quant_iq4nl_pack(x, rt_fp16_to_fp32(b->d), b->qs);
}

static inline void rt_dequantize_block_iq4_nl(const rt_block_iq4_nl_t *b, float *y) {
    rt_quant_iq4nl_unpack(b->qs, rt_fp16_to_fp32(b->d), y);
}

/* IQ4_XS sub-block j's 6-bit scale (biased by 32): low nibble j%2 of
 * scales_l[j/2], high 2 bits at bit 2j of scales_h. */
static inline int rt_quant_iq4_xs_scale(const rt_block_iq4_xs_t *b, int j) {
    return (((b->scales_l[j >> 1] >> (4 * (j & 1))) & 15) | (((b->scales_h >> (2 * j)) & 3) << 4)) - 32;
}

static inline void rt_quantize_block_iq4_xs(const float *x, rt_block_iq4_xs_t *b) {
    float sc[8];
    int8_t ls[8];
    for (int j = 0; j < 8; j++) {
        float xm = 0.0f;
        for (int i = 0; i < 32; i++)
            if (rt_quant_abs(x[32 * j + i]) > rt_quant_abs(xm)) xm = x[32 * j + i];
        sc[j] = xm / -127.0f;
    }
    const float d = rt_quant_superscale_signed(sc, 8, -32, 31, ls, &b->d);
    b->scales_h = 0;
    for (int j = 0; j < 4; j++) b->scales_l[j] = 0;
    for (int j = 0; j < 8; j++) {
        const int v = ls[j] + 32;
        b->scales_l[j >> 1] |= (uint8_t)((v & 15) << (4 * (j & 1)));
        b->scales_h |= (uint16_t)((v >> 4) << (2 * j));
        rt_quant_iq4nl_pack(x + 32 * j, d * (float)ls[j], b->qs + 16 * j);
    }
}

static inline void rt_dequantize_block_iq4_xs(const rt_block_iq4_xs_t *b, float *y) {
    const float d = rt_fp16_to_fp32(b->d);
    for (int j = 0; j < 8; j++)
        rt_quant_iq4nl_unpack(b->qs + 16 * j, d * (float)rt_quant_iq4_xs_scale(b, j), y + 32 * j);
}

#ifdef __cplusplus
}
#endif

#endif /* RT_QUANT_H */
