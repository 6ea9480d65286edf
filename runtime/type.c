/* SPDX-License-Identifier: MIT */
/* type.c: what the core knows about element types and op codes. The version
 * queries, the type traits table (GGUF's ids, block sizes and names), row
 * sizes, op names, and rt_quantize/rt_dequantize, which only loop the
 * reference codecs of abi/rt_quant.h over whole buffers so that there is one
 * definition of every format. */
#include "internal.h"

#include <string.h>

uint32_t rt_abi_version(void) { return RT_ABI_VERSION; }

const char *rt_version_string(void) { return RT_VERSION_STRING; }

//===--- types ---===//

#define RT_TRAITS(quant, nm, blck, size) \
    { sizeof(rt_type_traits_t), (quant), (nm), (blck), (size) }

/* Indexed by GGUF type id; ids rt does not implement stay zero (name NULL). */
static const rt_type_traits_t type_traits[RT_TYPE_COUNT] = {
    [RT_TYPE_F32] = RT_TRAITS(0, "f32", 1, sizeof(float)),
    [RT_TYPE_F16] = RT_TRAITS(0, "f16", 1, sizeof(uint16_t)),
    [RT_TYPE_Q4_0] = RT_TRAITS(1, "q4_0", RT_QK4_0, sizeof(rt_block_q4_0_t)),
    [RT_TYPE_Q8_0] = RT_TRAITS(1, "q8_0", RT_QK8_0, sizeof(rt_block_q8_0_t)),
    [RT_TYPE_I32] = RT_TRAITS(0, "i32", 1, sizeof(int32_t)),
    [RT_TYPE_BF16] = RT_TRAITS(0, "bf16", 1, sizeof(uint16_t)),
};

const rt_type_traits_t *rt_type_traits(rt_type_t type) {
    if (type < 0 || type >= RT_TYPE_COUNT) return NULL;
    return type_traits[type].name != NULL ? &type_traits[type] : NULL;
}

const char *rt_type_name(rt_type_t type) {
    const rt_type_traits_t *tr = rt_type_traits(type);
    return tr != NULL ? tr->name : "?";
}

size_t rt_type_size(rt_type_t type) {
    const rt_type_traits_t *tr = rt_type_traits(type);
    return tr != NULL ? tr->type_size : 0;
}

int64_t rt_blck_size(rt_type_t type) {
    const rt_type_traits_t *tr = rt_type_traits(type);
    return tr != NULL ? tr->block_size : 0;
}

size_t rt_row_size(rt_type_t type, int64_t ne0) {
    const rt_type_traits_t *tr = rt_type_traits(type);
    if (tr == NULL) return 0;
    RT_CHECK(ne0 >= 0 && ne0 % tr->block_size == 0,
             "rt_row_size: %lld elements of %s are not whole blocks of %lld", (long long)ne0,
             tr->name, (long long)tr->block_size);
    return tr->type_size * (size_t)(ne0 / tr->block_size);
}

//===--- op names ---===//

static const char *const op_names[RT_OP_COUNT] = {
    [RT_OP_NONE] = "NONE",
    [RT_OP_VIEW] = "VIEW",
    [RT_OP_RESHAPE] = "RESHAPE",
    [RT_OP_PERMUTE] = "PERMUTE",
    [RT_OP_TRANSPOSE] = "TRANSPOSE",
    [RT_OP_CONT] = "CONT",
    [RT_OP_CPY] = "CPY",
    [RT_OP_GET_ROWS] = "GET_ROWS",
    [RT_OP_ADD] = "ADD",
    [RT_OP_SUB] = "SUB",
    [RT_OP_MUL] = "MUL",
    [RT_OP_DIV] = "DIV",
    [RT_OP_SCALE] = "SCALE",
    [RT_OP_NORM] = "NORM",
    [RT_OP_RMS_NORM] = "RMS_NORM",
    [RT_OP_MUL_MAT] = "MUL_MAT",
    [RT_OP_SOFT_MAX] = "SOFT_MAX",
    [RT_OP_DIAG_MASK_INF] = "DIAG_MASK_INF",
    [RT_OP_GELU] = "GELU",
    [RT_OP_SILU] = "SILU",
    [RT_OP_SWIGLU] = "SWIGLU",
    [RT_OP_ROPE] = "ROPE",
    [RT_OP_ARGMAX] = "ARGMAX",
    [RT_OP_SET_ROWS] = "SET_ROWS",
};

const char *rt_op_name(rt_op_t op) {
    if (op < 0 || op >= RT_OP_COUNT || op_names[op] == NULL) return "?";
    return op_names[op];
}

//===--- conversions ---===//

/* Checks what both directions need: a convertible type and whole blocks. */
static const rt_type_traits_t *check_convert(const char *fn, rt_type_t type, int64_t n) {
    const rt_type_traits_t *tr = rt_type_traits(type);
    RT_CHECK(tr != NULL, "%s: unknown type id %d", fn, (int)type);
    RT_CHECK(n >= 0 && n % tr->block_size == 0,
             "%s: %lld elements of %s are not whole blocks of %lld", fn, (long long)n, tr->name,
             (long long)tr->block_size);
    return tr;
}

size_t rt_quantize(rt_type_t type, const float *src, void *dst, int64_t n) {
    if (src == NULL || dst == NULL || rt_type_traits(type) == NULL) {
        rt_error(RT_ERR_MISUSE, "rt_quantize: NULL buffers or unknown type id %d", (int)type);
        return 0;
    }
    const rt_type_traits_t *tr = check_convert("rt_quantize", type, n);
    uint16_t *h = dst;
    switch (type) {
    case RT_TYPE_F32: memcpy(dst, src, (size_t)n * sizeof src[0]); break;
    case RT_TYPE_F16: for (int64_t i = 0; i < n; i++) h[i] = rt_fp32_to_fp16(src[i]); break;
    case RT_TYPE_BF16: for (int64_t i = 0; i < n; i++) h[i] = rt_fp32_to_bf16(src[i]); break;
    case RT_TYPE_Q8_0:
        for (int64_t b = 0; b < n / RT_QK8_0; b++)
            rt_quantize_block_q8_0(src + b * RT_QK8_0, (rt_block_q8_0_t *)dst + b);
        break;
    case RT_TYPE_Q4_0:
        for (int64_t b = 0; b < n / RT_QK4_0; b++)
            rt_quantize_block_q4_0(src + b * RT_QK4_0, (rt_block_q4_0_t *)dst + b);
        break;
    default:
        rt_abort_msg(__FILE__, __LINE__, "rt_quantize: cannot convert floats to %s", tr->name);
    }
    return rt_row_size(type, n);
}

void rt_dequantize(rt_type_t type, const void *src, float *dst, int64_t n) {
    if (src == NULL || dst == NULL || rt_type_traits(type) == NULL) {
        rt_error(RT_ERR_MISUSE, "rt_dequantize: NULL buffers or unknown type id %d", (int)type);
        return;
    }
    check_convert("rt_dequantize", type, n);
    const uint16_t *h = src;
    const int32_t *iv = src;
    switch (type) {
    case RT_TYPE_F32: memcpy(dst, src, (size_t)n * sizeof dst[0]); break;
    case RT_TYPE_F16: for (int64_t i = 0; i < n; i++) dst[i] = rt_fp16_to_fp32(h[i]); break;
    case RT_TYPE_BF16: for (int64_t i = 0; i < n; i++) dst[i] = rt_bf16_to_fp32(h[i]); break;
    case RT_TYPE_I32: for (int64_t i = 0; i < n; i++) dst[i] = (float)iv[i]; break;
    case RT_TYPE_Q8_0:
        for (int64_t b = 0; b < n / RT_QK8_0; b++)
            rt_dequantize_block_q8_0((const rt_block_q8_0_t *)src + b, dst + b * RT_QK8_0);
        break;
    case RT_TYPE_Q4_0:
        for (int64_t b = 0; b < n / RT_QK4_0; b++)
            rt_dequantize_block_q4_0((const rt_block_q4_0_t *)src + b, dst + b * RT_QK4_0);
        break;
    default: break; /* check_convert accepted only the types above */
    }
}
