/* SPDX-License-Identifier: MIT */
/* ops.c: what the kernels share. The dispatch table from op code to
 * (supports, scratch sizes, phases, compute), the answer to supports_op,
 * how many threads a node is worth, the table of element types with their
 * row converters (contiguous rows through the kernel table of kern.h,
 * strided ones element by element with abi/rt_quant.h's codecs), and the
 * strided row iterator every row-wise kernel walks. */
#include "cpu.h"

#include <string.h>

//===--- element types ---===//

/* Contiguous rows go through the kernel table (rt_cpu_k, chosen when the
 * plugin started); Q4_0 is quantised by the reference codec (only cache
 * writes and casts produce it). */

static void rt_cpu_f32_to_f32(const void *src, float *dst, int64_t n) {
    memcpy(dst, src, (size_t)n * sizeof dst[0]);
}

static void rt_cpu_f32_from_f32(const float *src, void *dst, int64_t n) {
    memcpy(dst, src, (size_t)n * sizeof src[0]);
}

static void rt_cpu_f16_to_f32(const void *src, float *dst, int64_t n) {
    rt_cpu_k->vec->f16_to_f32(src, dst, n);
}

static void rt_cpu_f16_from_f32(const float *src, void *dst, int64_t n) {
    rt_cpu_k->vec->f32_to_f16(src, dst, n);
}

static void rt_cpu_bf16_to_f32(const void *src, float *dst, int64_t n) {
    rt_cpu_k->vec->bf16_to_f32(src, dst, n);
}

static void rt_cpu_bf16_from_f32(const float *src, void *dst, int64_t n) {
    rt_cpu_k->vec->f32_to_bf16(src, dst, n);
}

static void rt_cpu_q8_0_to_f32(const void *src, float *dst, int64_t n) {
    rt_cpu_k->vec->q8_0_to_f32(src, dst, n);
}

static void rt_cpu_q8_0_from_f32(const float *src, void *dst, int64_t n) {
    rt_cpu_k->vec->f32_to_q8_0(src, dst, n);
}

static void rt_cpu_q4_0_to_f32(const void *src, float *dst, int64_t n) {
    rt_cpu_k->vec->q4_0_to_f32(src, dst, n);
}

static void rt_cpu_q4_0_from_f32(const float *src, void *dst, int64_t n) {
    rt_block_q4_0_t *b = dst;
    for (int64_t i = 0; i < n / RT_QK4_0; i++) rt_quantize_block_q4_0(src + i * RT_QK4_0, &b[i]);
}

/* The block types of ABI 1.2: rows through kern_blocks.c's converter; only
 * casts and cache writes quantise, through the reference codecs. */
#define RT_CPU_BLOCKS_TYPE(T, ID)                                                        \
    static void rt_cpu_##T##_to_f32(const void *src, float *dst, int64_t n) {            \
        rt_cpu_k->blocks->to_f32(RT_TYPE_##ID, src, dst, n);                             \
    }                                                                                    \
    static void rt_cpu_##T##_from_f32(const float *src, void *dst, int64_t n) {          \
        rt_block_##T##_t *b = dst;                                                       \
        const int64_t blck = rt_cpu_act_is_q8k(RT_TYPE_##ID) ? RT_QK_K : 32;             \
        for (int64_t i = 0; i < n / blck; i++) rt_quantize_block_##T(src + i * blck, &b[i]); \
    }
RT_CPU_BLOCKS_TYPE(q4_1, Q4_1)
RT_CPU_BLOCKS_TYPE(q5_0, Q5_0)
RT_CPU_BLOCKS_TYPE(q5_1, Q5_1)
RT_CPU_BLOCKS_TYPE(iq4_nl, IQ4_NL)
RT_CPU_BLOCKS_TYPE(q2_k, Q2_K)
RT_CPU_BLOCKS_TYPE(q3_k, Q3_K)
RT_CPU_BLOCKS_TYPE(q4_k, Q4_K)
RT_CPU_BLOCKS_TYPE(q5_k, Q5_K)
RT_CPU_BLOCKS_TYPE(q6_k, Q6_K)
RT_CPU_BLOCKS_TYPE(iq4_xs, IQ4_XS)
#undef RT_CPU_BLOCKS_TYPE

#define RT_CPU_BLOCKS_ENTRY(T, ID, BLCK)                                                 \
    [RT_TYPE_##ID] = { BLCK, sizeof(rt_block_##T##_t), false, rt_cpu_##T##_to_f32,       \
                       rt_cpu_##T##_from_f32 }

static const rt_cpu_type_t rt_cpu_types[] = {
    [RT_TYPE_F32] = { 1, sizeof(float), true, rt_cpu_f32_to_f32, rt_cpu_f32_from_f32 },
    [RT_TYPE_F16] = { 1, sizeof(uint16_t), true, rt_cpu_f16_to_f32, rt_cpu_f16_from_f32 },
    [RT_TYPE_BF16] = { 1, sizeof(uint16_t), true, rt_cpu_bf16_to_f32, rt_cpu_bf16_from_f32 },
    [RT_TYPE_Q8_0] = { RT_QK8_0, sizeof(rt_block_q8_0_t), false, rt_cpu_q8_0_to_f32,
                       rt_cpu_q8_0_from_f32 },
    [RT_TYPE_Q4_0] = { RT_QK4_0, sizeof(rt_block_q4_0_t), false, rt_cpu_q4_0_to_f32,
                       rt_cpu_q4_0_from_f32 },
    [RT_TYPE_I32] = { 1, sizeof(int32_t), false, NULL, NULL },
    RT_CPU_BLOCKS_ENTRY(q4_1, Q4_1, 32),     RT_CPU_BLOCKS_ENTRY(q5_0, Q5_0, 32),
    RT_CPU_BLOCKS_ENTRY(q5_1, Q5_1, 32),     RT_CPU_BLOCKS_ENTRY(iq4_nl, IQ4_NL, 32),
    RT_CPU_BLOCKS_ENTRY(q2_k, Q2_K, 256),    RT_CPU_BLOCKS_ENTRY(q3_k, Q3_K, 256),
    RT_CPU_BLOCKS_ENTRY(q4_k, Q4_K, 256),    RT_CPU_BLOCKS_ENTRY(q5_k, Q5_K, 256),
    RT_CPU_BLOCKS_ENTRY(q6_k, Q6_K, 256),    RT_CPU_BLOCKS_ENTRY(iq4_xs, IQ4_XS, 256),
};
#undef RT_CPU_BLOCKS_ENTRY

const rt_cpu_type_t *rt_cpu_type(rt_type_t type) {
    if (type < 0 || (size_t)type >= sizeof rt_cpu_types / sizeof rt_cpu_types[0]) return NULL;
    return rt_cpu_types[type].size ? &rt_cpu_types[type] : NULL;
}

bool rt_cpu_is_float(rt_type_t type) {
    return type == RT_TYPE_F32 || type == RT_TYPE_F16 || type == RT_TYPE_BF16;
}

/* The switch is outside the loops: each loop body inlines its converter. */
void rt_cpu_load_f32(rt_type_t type, const void *src, size_t stride, float *dst, int64_t n) {
    const char *s = src;
    uint16_t h;
    switch (type) {
    case RT_TYPE_F32:
        if (stride == sizeof(float)) {
            memcpy(dst, s, (size_t)n * sizeof dst[0]);
            return;
        }
        for (int64_t i = 0; i < n; i++) memcpy(&dst[i], s + i * stride, sizeof dst[0]);
        return;
    case RT_TYPE_F16:
        if (stride == sizeof h) {
            rt_cpu_f16_to_f32(s, dst, n);
            return;
        }
        for (int64_t i = 0; i < n; i++) {
            memcpy(&h, s + i * stride, sizeof h);
            dst[i] = rt_fp16_to_fp32(h);
        }
        return;
    case RT_TYPE_BF16:
        if (stride == sizeof h) {
            rt_cpu_bf16_to_f32(s, dst, n);
            return;
        }
        for (int64_t i = 0; i < n; i++) {
            memcpy(&h, s + i * stride, sizeof h);
            dst[i] = rt_bf16_to_fp32(h);
        }
        return;
    default:
        return;
    }
}

void rt_cpu_store_f32(rt_type_t type, void *dst, size_t stride, const float *src, int64_t n) {
    char *d = dst;
    uint16_t h;
    switch (type) {
    case RT_TYPE_F32:
        if (stride == sizeof(float)) {
            if ((const void *)d != (const void *)src) memmove(d, src, (size_t)n * sizeof src[0]);
            return;
        }
        for (int64_t i = 0; i < n; i++) memcpy(d + i * stride, &src[i], sizeof src[0]);
        return;
    case RT_TYPE_F16:
        if (stride == sizeof h) {
            rt_cpu_f16_from_f32(src, d, n);
            return;
        }
        for (int64_t i = 0; i < n; i++) {
            h = rt_fp32_to_fp16(src[i]);
            memcpy(d + i * stride, &h, sizeof h);
        }
        return;
    case RT_TYPE_BF16:
        if (stride == sizeof h) {
            rt_cpu_bf16_from_f32(src, d, n);
            return;
        }
        for (int64_t i = 0; i < n; i++) {
            h = rt_fp32_to_bf16(src[i]);
            memcpy(d + i * stride, &h, sizeof h);
        }
        return;
    default:
        return;
    }
}

void rt_cpu_row_to_f32(const rt_tensor_t *t, const void *row, float *dst, int64_t n) {
    if (rt_cpu_is_float(t->type))
        rt_cpu_load_f32(t->type, row, t->nb[0], dst, n);
    else
        rt_cpu_type(t->type)->to_f32(row, dst, n);
}

void rt_cpu_row_from_f32(const rt_tensor_t *t, void *row, const float *src, int64_t n) {
    if (rt_cpu_is_float(t->type))
        rt_cpu_store_f32(t->type, row, t->nb[0], src, n);
    else
        rt_cpu_type(t->type)->from_f32(src, row, n);
}

//===--- the row iterator ---===//

/* About four runs per thread: few claims, and room to even out. */
void rt_cpu_rows_init(rt_cpu_rows_t *it, const int64_t ne[RT_MAX_DIMS], const rt_cpu_params_t *p) {
    it->ne1 = ne[1];
    it->ne2 = ne[2];
    it->nr = ne[1] * ne[2] * ne[3];
    it->chunk = it->nr / (4 * (int64_t)p->nth);
    if (it->chunk < 1) it->chunk = 1;
    it->ir = it->end = 0;
    it->counter = p->counter;
    it->started = false;
}

static bool rt_cpu_rows_claim(rt_cpu_rows_t *it) {
    const int64_t begin = atomic_fetch_add_explicit(it->counter, 1, memory_order_relaxed) * it->chunk;
    if (begin >= it->nr) return false;
    it->ir = begin;
    it->end = begin + it->chunk < it->nr ? begin + it->chunk : it->nr;
    it->i1 = begin % it->ne1;
    it->i2 = begin / it->ne1 % it->ne2;
    it->i3 = begin / (it->ne1 * it->ne2);
    return true;
}

bool rt_cpu_rows_next(rt_cpu_rows_t *it) {
    if (!it->started || it->ir + 1 >= it->end) {
        it->started = true;
        return rt_cpu_rows_claim(it);
    }
    it->ir++;
    if (++it->i1 == it->ne1) {
        it->i1 = 0;
        if (++it->i2 == it->ne2) {
            it->i2 = 0;
            it->i3++;
        }
    }
    return true;
}

int64_t rt_cpu_rows_span(rt_cpu_rows_t *it) {
    int64_t k = it->ne1 - it->i1;
    if (k > it->end - it->ir) k = it->end - it->ir;
    it->ir += k - 1;
    it->i1 += k - 1;
    return k;
}

void rt_cpu_map_rows(const rt_cpu_params_t *p, rt_tensor_t *dst, rt_cpu_row_fn fn) {
    const rt_tensor_t *a = dst->src[0];
    const int64_t n = dst->ne[0];
    float *sx = rt_cpu_scratch(p, 0, n), *sd = rt_cpu_scratch(p, 1, n);
    rt_cpu_rows_t it;
    rt_cpu_rows_init(&it, dst->ne, p);
    while (rt_cpu_rows_next(&it)) {
        const float *x = rt_cpu_row_in(a, rt_cpu_row(a, it.i1, it.i2, it.i3), n, sx);
        void *drow = rt_cpu_row(dst, it.i1, it.i2, it.i3);
        float *d = rt_cpu_row_out(dst, drow, sd);
        fn(dst, &it, d, x, n);
        rt_cpu_row_commit(dst, drow, d, n);
    }
}

//===--- dispatch ---===//

/* shared_wsize and phases are optional: none, and one phase. */
typedef struct rt_cpu_op_entry {
    bool (*supports)(const rt_tensor_t *node);
    size_t (*wsize)(const rt_tensor_t *node);
    void (*compute)(const rt_cpu_params_t *p, rt_tensor_t *node);
    size_t (*shared_wsize)(const rt_tensor_t *node);
    int32_t (*phases)(const rt_tensor_t *node);
} rt_cpu_op_entry_t;

#define RT_CPU_OP(name) { rt_cpu_supports_##name, rt_cpu_wsize_##name, rt_cpu_compute_##name, NULL, NULL }
#define RT_CPU_OP_PHASED(name)                                                       \
    { rt_cpu_supports_##name, rt_cpu_wsize_##name, rt_cpu_compute_##name,            \
      rt_cpu_shared_wsize_##name, rt_cpu_phases_##name }

static const rt_cpu_op_entry_t rt_cpu_ops[] = {
    [RT_OP_CONT] = RT_CPU_OP(copy),
    [RT_OP_CPY] = RT_CPU_OP(copy),
    [RT_OP_GET_ROWS] = RT_CPU_OP(get_rows),
    [RT_OP_ADD] = RT_CPU_OP(binary),
    [RT_OP_SUB] = RT_CPU_OP(binary),
    [RT_OP_MUL] = RT_CPU_OP(binary),
    [RT_OP_DIV] = RT_CPU_OP(binary),
    [RT_OP_SCALE] = RT_CPU_OP(unary),
    [RT_OP_NORM] = RT_CPU_OP(norm),
    [RT_OP_RMS_NORM] = RT_CPU_OP(norm),
    [RT_OP_MUL_MAT] = RT_CPU_OP_PHASED(mul_mat),
    [RT_OP_SOFT_MAX] = RT_CPU_OP(soft_max),
    [RT_OP_DIAG_MASK_INF] = RT_CPU_OP(diag_mask_inf),
    [RT_OP_GELU] = RT_CPU_OP(unary),
    [RT_OP_SILU] = RT_CPU_OP(unary),
    [RT_OP_SWIGLU] = RT_CPU_OP(binary),
    [RT_OP_ROPE] = RT_CPU_OP(rope),
    [RT_OP_ARGMAX] = RT_CPU_OP(argmax),
    [RT_OP_SET_ROWS] = RT_CPU_OP(set_rows),
    [RT_OP_TANH] = RT_CPU_OP(unary),
    [RT_OP_FLASH_ATTN] = RT_CPU_OP_PHASED(flash_attn),
};

static const rt_cpu_op_entry_t *rt_cpu_op_entry(rt_op_t op) {
    if (op < 0 || (size_t)op >= sizeof rt_cpu_ops / sizeof rt_cpu_ops[0]) return NULL;
    return rt_cpu_ops[op].compute ? &rt_cpu_ops[op] : NULL;
}

bool rt_cpu_op_computes(rt_op_t op) { return rt_op_computes(op); }

static bool rt_cpu_shape_sane(const rt_tensor_t *t) {
    for (int i = 0; i < RT_MAX_DIMS; i++)
        if (t->ne[i] < 0) return false;
    return rt_cpu_type(t->type) != NULL;
}

bool rt_cpu_op_supported(const rt_tensor_t *node) {
    if (node->op >= RT_OP_NONE && !rt_cpu_op_computes(node->op)) return true;
    const rt_cpu_op_entry_t *e = rt_cpu_op_entry(node->op);
    if (!e || !rt_cpu_shape_sane(node)) return false;
    for (int i = 0; i < RT_MAX_SRC; i++)
        if (node->src[i] && !rt_cpu_shape_sane(node->src[i])) return false;
    return e->supports(node);
}

size_t rt_cpu_op_wsize(const rt_tensor_t *node) {
    const rt_cpu_op_entry_t *e = rt_cpu_op_entry(node->op);
    return e ? e->wsize(node) : 0;
}

size_t rt_cpu_op_shared_wsize(const rt_tensor_t *node) {
    const rt_cpu_op_entry_t *e = rt_cpu_op_entry(node->op);
    return e && e->shared_wsize ? e->shared_wsize(node) : 0;
}

int32_t rt_cpu_op_phases(const rt_tensor_t *node) {
    const rt_cpu_op_entry_t *e = rt_cpu_op_entry(node->op);
    return e && e->phases ? e->phases(node) : 1;
}

/* A product counts its multiply-adds, eight to an element (they run that
 * many times faster). */
int64_t rt_cpu_op_work(const rt_tensor_t *node) {
    if (node->op == RT_OP_MUL_MAT) {
        const rt_tensor_t *b = node->src[1];
        return node->src[0]->ne[0] * node->ne[0] * b->ne[1] * b->ne[2] * b->ne[3] / 8;
    }
    if (node->op == RT_OP_SET_ROWS) return rt_cpu_nelements(node->src[1]); /* not all of a */
    if (node->op == RT_OP_FLASH_ATTN) { /* every query row against every key, both products */
        const rt_tensor_t *q = node->src[0], *k = node->src[1];
        return q->ne[1] * q->ne[2] * q->ne[3] * k->ne[1] * (q->ne[0] + node->ne[0]) / 8;
    }
    return rt_cpu_nelements(node);
}

/* About 10 us of one thread's work: below it a barrier's hand-over and the
 * shared cache lines cost more than a second thread saves. */
#define RT_CPU_SMALL_WORK 16384

int32_t rt_cpu_op_threads(const rt_tensor_t *node, int32_t nth) {
    return rt_cpu_op_work(node) < RT_CPU_SMALL_WORK ? 1 : nth;
}

void rt_cpu_op_compute(const rt_cpu_params_t *p, rt_tensor_t *node) {
    const rt_cpu_op_entry_t *e = rt_cpu_op_entry(node->op);
    if (e && rt_cpu_nelements(node) > 0) e->compute(p, node);
}
