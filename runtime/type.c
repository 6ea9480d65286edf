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
    [RT_TYPE_Q4_1] = RT_TRAITS(1, "q4_1", RT_QK4_1, sizeof(rt_block_q4_1_t)),
    [RT_TYPE_Q5_0] = RT_TRAITS(1, "q5_0", RT_QK5_0, sizeof(rt_block_q5_0_t)),
    [RT_TYPE_Q5_1] = RT_TRAITS(1, "q5_1", RT_QK5_1, sizeof(rt_block_q5_1_t)),
    [RT_TYPE_Q8_0] = RT_TRAITS(1, "q8_0", RT_QK8_0, sizeof(rt_block_q8_0_t)),
    [RT_TYPE_Q2_K] = RT_TRAITS(1, "q2_K", RT_QK_K, sizeof(rt_block_q2_k_t)),
    [RT_TYPE_Q3_K] = RT_TRAITS(1, "q3_K", RT_QK_K, sizeof(rt_block_q3_k_t)),
    [RT_TYPE_Q4_K] = RT_TRAITS(1, "q4_K", RT_QK_K, sizeof(rt_block_q4_k_t)),
    [RT_TYPE_Q5_K] = RT_TRAITS(1, "q5_K", RT_QK_K, sizeof(rt_block_q5_k_t)),
    [RT_TYPE_Q6_K] = RT_TRAITS(1, "q6_K", RT_QK_K, sizeof(rt_block_q6_k_t)),
    [RT_TYPE_Q8_K] = RT_TRAITS(1, "q8_K", RT_QK_K, sizeof(rt_block_q8_k_t)),
    [RT_TYPE_IQ4_NL] = RT_TRAITS(1, "iq4_nl", RT_QK4_NL, sizeof(rt_block_iq4_nl_t)),
    [RT_TYPE_IQ4_XS] = RT_TRAITS(1, "iq4_xs", RT_QK_K, sizeof(rt_block_iq4_xs_t)),
    [RT_TYPE_I32] = RT_TRAITS(0, "i32", 1, sizeof(int32_t)),
    [RT_TYPE_BF16] = RT_TRAITS(0, "bf16", 1, sizeof(uint16_t)),
};

/* GGUF's names of the ids rt reads but does not implement, so that a file
 * using one can say which type it is (ids 4 and 5 were Q4_2/Q4_3, long
 * removed from the format). */
static const char *const reserved_names[RT_TYPE_COUNT] = {
    [4] = "q4_2",     [5] = "q4_3",     [9] = "q8_1",     [16] = "iq2_xxs", [17] = "iq2_xs",
    [18] = "iq3_xxs", [19] = "iq1_s",   [21] = "iq3_s",   [22] = "iq2_s",   [24] = "i8",
    [25] = "i16",     [27] = "i64",     [28] = "f64",     [29] = "iq1_m",
};

const rt_type_traits_t *rt_type_traits(rt_type_t type) {
    if (type < 0 || type >= RT_TYPE_COUNT) return NULL;
    return type_traits[type].name != NULL ? &type_traits[type] : NULL;
}

const char *rt_type_name(rt_type_t type) {
    const rt_type_traits_t *tr = rt_type_traits(type);
    if (tr != NULL) return tr->name;
    if (type >= 0 && type < RT_TYPE_COUNT && reserved_names[type] != NULL) return reserved_names[type];
    return "?";
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
    [RT_OP_TANH] = "TANH",
    [RT_OP_FLASH_ATTN] = "FLASH_ATTN",
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

/* One block codec per block type: the reference functions of rt_quant.h
 * behind one signature, so that the conversions loop over a table instead
 * of a switch per direction. quantize is NULL for types only read. */
typedef struct block_codec {
    void (*quantize)(const float *x, void *block);
    void (*dequantize)(const void *block, float *y);
} block_codec_t;

#define CODEC(t)                                                                       \
    static void quantize_##t(const float *x, void *b) { rt_quantize_block_##t(x, b); } \
    static void dequantize_##t(const void *b, float *y) { rt_dequantize_block_##t(b, y); }
CODEC(q4_0) CODEC(q4_1) CODEC(q5_0) CODEC(q5_1) CODEC(q8_0) CODEC(q2_k) CODEC(q3_k)
CODEC(q4_k) CODEC(q5_k) CODEC(q6_k) CODEC(q8_k) CODEC(iq4_nl) CODEC(iq4_xs)
#undef CODEC

#define ENTRY(id, t) [RT_TYPE_##id] = {quantize_##t, dequantize_##t}
static const block_codec_t block_codecs[RT_TYPE_COUNT] = {
    ENTRY(Q4_0, q4_0), ENTRY(Q4_1, q4_1), ENTRY(Q5_0, q5_0), ENTRY(Q5_1, q5_1),
    ENTRY(Q8_0, q8_0), ENTRY(Q2_K, q2_k), ENTRY(Q3_K, q3_k), ENTRY(Q4_K, q4_k),
    ENTRY(Q5_K, q5_k), ENTRY(Q6_K, q6_k), ENTRY(Q8_K, q8_k), ENTRY(IQ4_NL, iq4_nl),
    ENTRY(IQ4_XS, iq4_xs),
};
#undef ENTRY

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
    default: {
        const block_codec_t *c = &block_codecs[type];
        if (c->quantize == NULL)
            rt_abort_msg(__FILE__, __LINE__, "rt_quantize: cannot convert floats to %s", tr->name);
        for (int64_t b = 0; b < n / tr->block_size; b++)
            c->quantize(src + b * tr->block_size, (char *)dst + (size_t)b * tr->type_size);
    }
    }
    return rt_row_size(type, n);
}

void rt_dequantize(rt_type_t type, const void *src, float *dst, int64_t n) {
    if (src == NULL || dst == NULL || rt_type_traits(type) == NULL) {
        rt_error(RT_ERR_MISUSE, "rt_dequantize: NULL buffers or unknown type id %d", (int)type);
        return;
    }
    const rt_type_traits_t *tr = check_convert("rt_dequantize", type, n);
    const uint16_t *h = src;
    const int32_t *iv = src;
    switch (type) {
    case RT_TYPE_F32: memcpy(dst, src, (size_t)n * sizeof dst[0]); break;
    case RT_TYPE_F16: for (int64_t i = 0; i < n; i++) dst[i] = rt_fp16_to_fp32(h[i]); break;
    case RT_TYPE_BF16: for (int64_t i = 0; i < n; i++) dst[i] = rt_bf16_to_fp32(h[i]); break;
    case RT_TYPE_I32: for (int64_t i = 0; i < n; i++) dst[i] = (float)iv[i]; break;
    default: /* check_convert accepted only types of the table, all of them blocks */
        for (int64_t b = 0; b < n / tr->block_size; b++)
            block_codecs[type].dequantize((const char *)src + (size_t)b * tr->type_size,
                                          dst + b * tr->block_size);
    }
}
