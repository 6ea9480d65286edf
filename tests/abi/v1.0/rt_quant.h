/* SPDX-License-Identifier: MIT */
/* rt_quant.h: reference conversions between F32 and the stored formats
 * (F16, BF16, Q8_0, Q4_0), header-only so that the core, plugins and tests
 * share one definition of every format. Scalar and exact; plugins bring
 * their own vector versions and test them against these. Rounding is to
 * nearest even for F16/BF16, and as GGUF's reference quantisers for blocks:
 *
 *   Q8_0: d = max|x| / 127, q = round(x / d)           (x = d*q)
 *   Q4_0: d = x_m / -8 where x_m is the x of largest |x|,
 *         q = min(15, (int)(x/d + 8.5))                 (x = d*(q - 8))
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

#ifdef __cplusplus
}
#endif

#endif /* RT_QUANT_H */
