/* SPDX-License-Identifier: MIT */
/* types.c: the element type table of types.h. Plain types decode and
 * encode with the contract's conversions (RNE for F16/BF16); quantised
 * types through rt_quant.h's block codecs, wrapped once per entry of
 * CF_QUANT_TYPES. */
#include "types.h"

#include <string.h>

static void f32_decode(const void *p, float *y) { memcpy(y, p, sizeof *y); }
static void f32_encode(const float *x, void *p) { memcpy(p, x, sizeof *x); }

/* The 16-bit floats: one uint16_t through the contract's conversion. */
#define CF_HALF_CODEC(c, to_f32, from_f32)                                                         \
    static void c##_decode(const void *p, float *y) {                                              \
        uint16_t h;                                                                                \
        memcpy(&h, p, sizeof h);                                                                   \
        *y = to_f32(h);                                                                            \
    }                                                                                              \
    static void c##_encode(const float *x, void *p) {                                              \
        const uint16_t h = from_f32(*x);                                                           \
        memcpy(p, &h, sizeof h);                                                                   \
    }
CF_HALF_CODEC(f16, rt_fp16_to_fp32, rt_fp32_to_fp16)
CF_HALF_CODEC(bf16, rt_bf16_to_fp32, rt_fp32_to_bf16)

static void i32_decode(const void *p, float *y) {
    int32_t i;
    memcpy(&i, p, sizeof i);
    *y = (float)i;
}

static void i32_encode(const float *x, void *p) {
    const int32_t i = (int32_t)*x;
    memcpy(p, &i, sizeof i);
}

#define CF_CODEC(T, c, blck, step)                                                                 \
    static void c##_decode(const void *p, float *y) { rt_dequantize_block_##c(p, y); }             \
    static void c##_encode(const float *x, void *p) { rt_quantize_block_##c(x, p); }
CF_QUANT_TYPES(CF_CODEC)

#define CF_ENTRY(T, c, blck, step) \
    {RT_TYPE_##T, #c, blck, sizeof(rt_block_##c##_t), step, c##_decode, c##_encode},

static const cf_type_t types[] = {
    {RT_TYPE_F32, "f32", 1, 4, 0, f32_decode, f32_encode},
    {RT_TYPE_F16, "f16", 1, 2, 0, f16_decode, f16_encode},
    {RT_TYPE_BF16, "bf16", 1, 2, 0, bf16_decode, bf16_encode},
    {RT_TYPE_I32, "i32", 1, 4, 0, i32_decode, i32_encode},
    CF_QUANT_TYPES(CF_ENTRY)
};

const cf_type_t *cf_type(rt_type_t t) {
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++)
        if (types[k].type == t) return &types[k];
    return NULL;
}
