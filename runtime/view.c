/* SPDX-License-Identifier: MIT */
/* view.c: the graph constructors that move no bytes or only copy them: the
 * view family (view_Nd, view_tensor, reshape, permute, transpose), whose
 * results share their base's bytes, and the copies (cont, cpy, cast).
 *
 * Every view's view_src is the base tensor, never another view, and its
 * view_offs is the byte offset from the base's data; src[0] is the tensor
 * it was made from, so the graph keeps the order of construction. */
#include "tensor_impl.h"

#include <inttypes.h>
#include <string.h>

//===--- shared ---===//

/* A view of a with shape ne[0..n_dims), starting offset bytes into a, with
 * contiguous strides until the caller sets its own. */
static rt_tensor_t *view_new(rt_context_t *ctx, rt_tensor_t *a, rt_op_t op, int n_dims,
                             const int64_t *ne, size_t offset) {
    RT_NEED(a);
    rt_tensor_t *r = rt_tensor_new_impl(ctx, a->type, n_dims, ne, a, offset);
    r->op = op;
    r->src[0] = a;
    return r;
}

/* Aborts unless the bytes the view reaches lie inside its base. */
static void check_view_fits(const char *op, const rt_tensor_t *view) {
    const rt_tensor_t *base = view->view_src;
    const size_t bytes = rt_nbytes(view), base_bytes = rt_nbytes(base);
    RT_CHECK(view->view_offs <= base_bytes && bytes <= base_bytes - view->view_offs,
             "%s: view %s at byte offset %zu spans %zu bytes, past the end of its base %s "
             "(%zu bytes)", op, RT_DESC(view), view->view_offs, bytes, RT_DESC(base), base_bytes);
}

/* The op-specific part of view_Nd: the caller's strides, the offset in
 * op_params (as ggml keeps it, for dumps), name and fit. */
static rt_tensor_t *view_finish(rt_tensor_t *r, const rt_tensor_t *a, const size_t *nb, int n_nb,
                                size_t offset) {
    if (n_nb > 0) { /* view_1d keeps the contiguous strides, quantised rows included */
        for (int i = 0; i < n_nb; i++) r->nb[i + 1] = nb[i];
        for (int i = n_nb + 1; i < RT_MAX_DIMS; i++)
            r->nb[i] = r->nb[i - 1] * (size_t)r->ne[i - 1];
    }
    memcpy(r->op_params, &offset, sizeof offset);
    rt_format_name(r, "%s (view)", a->name);
    check_view_fits("VIEW", r);
    return r;
}

//===--- views ---===//

rt_tensor_t *rt_view_1d(rt_context_t *ctx, rt_tensor_t *a, int64_t ne0, size_t offset) {
    rt_tensor_t *r = view_new(ctx, a, RT_OP_VIEW, 1, &ne0, offset);
    return view_finish(r, a, NULL, 0, offset);
}

rt_tensor_t *rt_view_2d(rt_context_t *ctx, rt_tensor_t *a, int64_t ne0, int64_t ne1, size_t nb1,
                        size_t offset) {
    const int64_t ne[2] = {ne0, ne1};
    rt_tensor_t *r = view_new(ctx, a, RT_OP_VIEW, 2, ne, offset);
    return view_finish(r, a, &nb1, 1, offset);
}

rt_tensor_t *rt_view_3d(rt_context_t *ctx, rt_tensor_t *a, int64_t ne0, int64_t ne1, int64_t ne2,
                        size_t nb1, size_t nb2, size_t offset) {
    const int64_t ne[3] = {ne0, ne1, ne2};
    const size_t nb[2] = {nb1, nb2};
    rt_tensor_t *r = view_new(ctx, a, RT_OP_VIEW, 3, ne, offset);
    return view_finish(r, a, nb, 2, offset);
}

rt_tensor_t *rt_view_4d(rt_context_t *ctx, rt_tensor_t *a, int64_t ne0, int64_t ne1, int64_t ne2,
                        int64_t ne3, size_t nb1, size_t nb2, size_t nb3, size_t offset) {
    const int64_t ne[4] = {ne0, ne1, ne2, ne3};
    const size_t nb[3] = {nb1, nb2, nb3};
    rt_tensor_t *r = view_new(ctx, a, RT_OP_VIEW, 4, ne, offset);
    return view_finish(r, a, nb, 3, offset);
}

/* A view with a's shape and strides (a permuted, strided a stays so). */
static rt_tensor_t *view_same(rt_context_t *ctx, rt_tensor_t *a, rt_op_t op) {
    RT_NEED(a);
    rt_tensor_t *r = view_new(ctx, a, op, RT_MAX_DIMS, a->ne, 0);
    memcpy(r->nb, a->nb, sizeof r->nb);
    return r;
}

rt_tensor_t *rt_view_tensor(rt_context_t *ctx, rt_tensor_t *a) {
    rt_tensor_t *r = view_same(ctx, a, RT_OP_VIEW);
    return rt_format_name(r, "%s (view)", a->name);
}

//===--- reshape ---===//

static rt_tensor_t *reshape(rt_context_t *ctx, rt_tensor_t *a, int n_dims, const int64_t *ne) {
    RT_NEED(a);
    int64_t n = 1;
    for (int i = 0; i < n_dims; i++) n *= ne[i];
    RT_CHECK(rt_is_contiguous(a), "RESHAPE: a is not contiguous: %s; use rt_cont first",
             RT_DESC(a));
    RT_CHECK(n == rt_nelements(a),
             "RESHAPE: a %s has %" PRId64 " elements, the new shape has %" PRId64, RT_DESC(a),
             rt_nelements(a), n);
    rt_tensor_t *r = view_new(ctx, a, RT_OP_RESHAPE, n_dims, ne, 0);
    return rt_format_name(r, "%s (reshaped)", a->name);
}

rt_tensor_t *rt_reshape(rt_context_t *ctx, rt_tensor_t *a, const rt_tensor_t *shape) {
    RT_NEED(shape);
    return reshape(ctx, a, RT_MAX_DIMS, shape->ne);
}

rt_tensor_t *rt_reshape_1d(rt_context_t *ctx, rt_tensor_t *a, int64_t ne0) {
    return reshape(ctx, a, 1, &ne0);
}

rt_tensor_t *rt_reshape_2d(rt_context_t *ctx, rt_tensor_t *a, int64_t ne0, int64_t ne1) {
    const int64_t ne[2] = {ne0, ne1};
    return reshape(ctx, a, 2, ne);
}

rt_tensor_t *rt_reshape_3d(rt_context_t *ctx, rt_tensor_t *a, int64_t ne0, int64_t ne1,
                           int64_t ne2) {
    const int64_t ne[3] = {ne0, ne1, ne2};
    return reshape(ctx, a, 3, ne);
}

rt_tensor_t *rt_reshape_4d(rt_context_t *ctx, rt_tensor_t *a, int64_t ne0, int64_t ne1,
                           int64_t ne2, int64_t ne3) {
    const int64_t ne[4] = {ne0, ne1, ne2, ne3};
    return reshape(ctx, a, 4, ne);
}

//===--- permute and transpose ---===//

/* rt_permute (docs/memory.md §2.3): dimension i of a goes to position axes[i], its ne
 * and nb together. */
static rt_tensor_t *permute(rt_context_t *ctx, rt_tensor_t *a, const int *axes, rt_op_t op) {
    RT_NEED(a);
    bool seen[RT_MAX_DIMS] = {false};
    for (int i = 0; i < RT_MAX_DIMS; i++) {
        const bool ok = axes[i] >= 0 && axes[i] < RT_MAX_DIMS && !seen[axes[i]];
        RT_CHECK(ok, "%s: axes (%d, %d, %d, %d) are not a permutation of 0..3; a %s",
                 rt_op_name(op), axes[0], axes[1], axes[2], axes[3], RT_DESC(a));
        seen[axes[i]] = true;
    }
    rt_tensor_t *r = view_new(ctx, a, op, RT_MAX_DIMS, a->ne, 0);
    for (int i = 0; i < RT_MAX_DIMS; i++) {
        r->ne[axes[i]] = a->ne[i];
        r->nb[axes[i]] = a->nb[i];
        r->op_params[i] = axes[i];
    }
    return r;
}

rt_tensor_t *rt_permute(rt_context_t *ctx, rt_tensor_t *a, int axis0, int axis1, int axis2,
                        int axis3) {
    const int axes[RT_MAX_DIMS] = {axis0, axis1, axis2, axis3};
    RT_NEED(a); /* before a->name below is read as an argument */
    return rt_format_name(permute(ctx, a, axes, RT_OP_PERMUTE), "%s (permuted)", a->name);
}

rt_tensor_t *rt_transpose(rt_context_t *ctx, rt_tensor_t *a) {
    static const int axes[RT_MAX_DIMS] = {1, 0, 2, 3};
    RT_NEED(a);
    return rt_format_name(permute(ctx, a, axes, RT_OP_TRANSPOSE), "%s (transposed)", a->name);
}

//===--- cont ---===//

rt_tensor_t *rt_cont_4d(rt_context_t *ctx, rt_tensor_t *a, int64_t ne0, int64_t ne1,
                        int64_t ne2, int64_t ne3) {
    const int64_t ne[4] = {ne0, ne1, ne2, ne3};
    RT_NEED(a);
    RT_CHECK(ne0 * ne1 * ne2 * ne3 == rt_nelements(a),
             "CONT: a %s has %" PRId64 " elements, the shape {%" PRId64 ",%" PRId64 ",%" PRId64
             ",%" PRId64 "} has %" PRId64, RT_DESC(a), rt_nelements(a), ne0, ne1, ne2, ne3,
             ne0 * ne1 * ne2 * ne3);
    rt_tensor_t *r = rt_tensor_new_impl(ctx, a->type, RT_MAX_DIMS, ne, NULL, 0);
    r->op = RT_OP_CONT;
    r->src[0] = a;
    return rt_format_name(r, "%s (cont)", a->name);
}

rt_tensor_t *rt_cont(rt_context_t *ctx, rt_tensor_t *a) {
    RT_NEED(a);
    return rt_cont_4d(ctx, a, a->ne[0], a->ne[1], a->ne[2], a->ne[3]);
}

rt_tensor_t *rt_cont_2d(rt_context_t *ctx, rt_tensor_t *a, int64_t ne0, int64_t ne1) {
    return rt_cont_4d(ctx, a, ne0, ne1, 1, 1);
}

rt_tensor_t *rt_cont_3d(rt_context_t *ctx, rt_tensor_t *a, int64_t ne0, int64_t ne1,
                        int64_t ne2) {
    return rt_cont_4d(ctx, a, ne0, ne1, ne2, 1);
}

//===--- cpy and cast ---===//

static bool is_float_type(rt_type_t type) {
    return type == RT_TYPE_F32 || type == RT_TYPE_F16 || type == RT_TYPE_BF16;
}

/* The CPY contract of rt_tensor.h: a writes into dst (b, or the new tensor
 * of a cast). */
static void check_cpy(const rt_tensor_t *a, const rt_tensor_t *dst) {
    RT_CHECK(rt_nelements(a) == rt_nelements(dst),
             "CPY: a %s has %" PRId64 " elements, b %s has %" PRId64, RT_DESC(a),
             rt_nelements(a), RT_DESC(dst), rt_nelements(dst));
    const bool quant = dst->type == RT_TYPE_Q8_0 || dst->type == RT_TYPE_Q4_0;
    RT_CHECK(is_float_type(a->type) && (is_float_type(dst->type) ||
                                        (quant && a->type == RT_TYPE_F32)),
             "CPY: cannot copy %s into %s (F32/F16/BF16 to any of them, F32 to Q8_0/Q4_0): "
             "a %s, b %s", rt_type_name(a->type), rt_type_name(dst->type), RT_DESC(a),
             RT_DESC(dst));
    RT_CHECK(!quant || (rt_is_contiguous(dst) && dst->ne[0] % RT_QK8_0 == 0),
             "CPY: a quantised b must be contiguous with whole blocks in each row: a %s, b %s",
             RT_DESC(a), RT_DESC(dst));
}

rt_tensor_t *rt_cpy(rt_context_t *ctx, rt_tensor_t *a, rt_tensor_t *b) {
    RT_NEED(a);
    RT_NEED(b);
    check_cpy(a, b);
    rt_tensor_t *r = view_same(ctx, b, RT_OP_CPY);
    r->src[0] = a;
    r->src[1] = b;
    if (b->name[0] != 0) return rt_format_name(r, "%s (copy of %s)", b->name, a->name);
    return rt_format_name(r, "%s (copy)", a->name);
}

/* A cast is a CPY whose destination is the result itself: src[1] is NULL
 * and a kernel writes a's elements into the node with the node's type and
 * strides, which for rt_cpy are b's (its result is a view of b), so one
 * kernel serves both. Unlike ggml (src[1] = the result), the graph has no
 * self-reference and no use count of the node by itself. */
rt_tensor_t *rt_cast(rt_context_t *ctx, rt_tensor_t *a, rt_type_t type) {
    RT_NEED(a);
    const int64_t blck = rt_blck_size(type);
    RT_CHECK(blck > 0 && a->ne[0] % blck == 0,
             "CPY (cast): cannot make a tensor of type id %d (%s) from a %s", (int)type,
             rt_type_name(type), RT_DESC(a));
    rt_tensor_t *r = rt_tensor_new_impl(ctx, type, RT_MAX_DIMS, a->ne, NULL, 0);
    check_cpy(a, r);
    r->op = RT_OP_CPY;
    r->src[0] = a;
    return rt_format_name(r, "%s (copy)", a->name);
}

/* SET_ROWS (rt_tensor.h): the scatter form of a copy, so it also yields a
 * view of its destination. */
rt_tensor_t *rt_set_rows(rt_context_t *ctx, rt_tensor_t *a, rt_tensor_t *b, rt_tensor_t *rows) {
    RT_NEED(a);
    RT_NEED(b);
    RT_NEED(rows);
    RT_CHECK(a->type == RT_TYPE_F32 || a->type == RT_TYPE_F16 || a->type == RT_TYPE_BF16,
             "SET_ROWS: a must be F32, F16 or BF16: a %s", RT_DESC(a));
    RT_CHECK(b->type == RT_TYPE_F32 && rows->type == RT_TYPE_I32,
             "SET_ROWS: b must be F32 and rows I32: b %s, rows %s", RT_DESC(b), RT_DESC(rows));
    RT_CHECK(b->ne[0] == a->ne[0] && b->ne[2] == a->ne[2] && b->ne[3] == a->ne[3] &&
             rows->ne[0] == b->ne[1] && rows->ne[1] == b->ne[2] && rows->ne[2] == b->ne[3] &&
             rows->ne[3] == 1,
             "SET_ROWS: expected b {a->ne[0], m, a->ne[2], a->ne[3]} and rows {m, a->ne[2], "
             "a->ne[3]}: a %s, b %s, rows %s", RT_DESC(a), RT_DESC(b), RT_DESC(rows));
    rt_tensor_t *r = view_same(ctx, a, RT_OP_SET_ROWS);
    r->src[0] = a;
    r->src[1] = b;
    r->src[2] = rows;
    return rt_format_name(r, "%s (rows from %s)", a->name, b->name);
}
