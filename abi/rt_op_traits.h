/* SPDX-License-Identifier: MIT */
/* rt_op_traits.h: the questions about an op that the runtime and every
 * plugin answer the same way, header-only (as rt_quant.h) and read off the
 * contracts of rt_tensor.h: whether an op is a view (its bytes are its
 * view_src's, so no plugin computes it), which ops may write their result
 * over a source (the graph allocator's in-place list, which a plugin's
 * kernels must then tolerate), and MUL_MAT's shape rule. New in ABI 1.2:
 * a plugin that includes it still loads into an rt 1.0 or 1.1, since
 * nothing here crosses the boundary. */ /* abi >= 1.2 */
#ifndef RT_OP_TRAITS_H
#define RT_OP_TRAITS_H

#include "rt_tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* VIEW, RESHAPE, PERMUTE, TRANSPOSE: a new header over the same bytes. */
static inline bool rt_op_is_view(rt_op_t op) {
    return op == RT_OP_VIEW || op == RT_OP_RESHAPE || op == RT_OP_PERMUTE || op == RT_OP_TRANSPOSE;
}

/* Whether a node with this op runs a kernel: not a leaf, not a view. */
static inline bool rt_op_computes(rt_op_t op) { return op != RT_OP_NONE && !rt_op_is_view(op); }

/* Ops whose result may take over the block of a source of the same layout
 * that no later node reads (docs/memory.md §3.3): each element of the
 * result depends only on the same element, or the same row, of src[0]. */
static inline bool rt_op_can_inplace(rt_op_t op) {
    switch (op) {
    case RT_OP_ADD: case RT_OP_SUB: case RT_OP_MUL: case RT_OP_DIV: case RT_OP_SCALE:
    case RT_OP_GELU: case RT_OP_SILU: case RT_OP_SWIGLU: case RT_OP_NORM: case RT_OP_RMS_NORM:
    case RT_OP_SOFT_MAX: case RT_OP_DIAG_MASK_INF: case RT_OP_ROPE:
    case RT_OP_TANH: /* abi >= 1.2 */
        return true;
    default:
        return false;
    }
}

/* Of those, the elementwise binary ops read element i of every source to
 * write element i, so any source may be written over; the others only
 * src[0] (a mask or a positions tensor is read across rows). */
static inline bool rt_op_inplace_any_src(rt_op_t op) {
    return op == RT_OP_ADD || op == RT_OP_SUB || op == RT_OP_MUL || op == RT_OP_DIV || op == RT_OP_SWIGLU;
}

/* MUL_MAT's shapes and the types every plugin asks for: a {K, M, a2, a3},
 * b F32 {K, N, b2, b3} with dense rows, b2 % a2 == 0 and b3 % a3 == 0 (a
 * broadcast over b), the result F32 {M, N, b2, b3}. The type and layout of
 * a are each plugin's own question. */
static inline bool rt_mul_mat_shapes_ok(const rt_tensor_t *node) {
    const rt_tensor_t *a = node->src[0], *b = node->src[1];
    if (a == NULL || b == NULL || node->type != RT_TYPE_F32 || b->type != RT_TYPE_F32) return false;
    if (b->nb[0] != sizeof(float) || a->ne[0] != b->ne[0] || a->ne[2] <= 0 || a->ne[3] <= 0) return false;
    if (b->ne[2] % a->ne[2] != 0 || b->ne[3] % a->ne[3] != 0) return false;
    return node->ne[0] == a->ne[1] && node->ne[1] == b->ne[1] && node->ne[2] == b->ne[2] &&
           node->ne[3] == b->ne[3];
}

#ifdef __cplusplus
}
#endif

#endif /* RT_OP_TRAITS_H */
