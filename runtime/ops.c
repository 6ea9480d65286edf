/* SPDX-License-Identifier: MIT */
/* ops.c: the compute constructors of rt.h. Each one checks its op's contract
 * as abi/rt_tensor.h writes it (types, shapes, strides), aborting with a
 * message that names the op and every tensor involved, then adds a new
 * contiguous result tensor with op, sources and op_params set. Nothing is
 * computed here: plugins run the nodes later. Floats go into op_params by
 * their bits. */
#include "tensor_impl.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define ROPE_DEFAULT_FREQ_BASE 10000.0f
#define ROPE_DEFAULT_FREQ_SCALE 1.0f

//===--- shared ---===//

#define TYPE_BIT(t) (1u << (t))
#define TYPES_F32 TYPE_BIT(RT_TYPE_F32)
#define TYPES_I32 TYPE_BIT(RT_TYPE_I32)
#define TYPES_FLOAT (TYPE_BIT(RT_TYPE_F32) | TYPE_BIT(RT_TYPE_F16))
/* Weights: every type rt implements but I32 and Q8_K (activations only);
 * the block types of ABI 1.2 included (a plugin of an older minor version
 * is never asked about them). */
#define TYPES_BLOCKS_1_2 (TYPE_BIT(RT_TYPE_Q4_1) | TYPE_BIT(RT_TYPE_Q5_0) | TYPE_BIT(RT_TYPE_Q5_1) | \
                          TYPE_BIT(RT_TYPE_Q2_K) | TYPE_BIT(RT_TYPE_Q3_K) | TYPE_BIT(RT_TYPE_Q4_K) | \
                          TYPE_BIT(RT_TYPE_Q5_K) | TYPE_BIT(RT_TYPE_Q6_K) | TYPE_BIT(RT_TYPE_IQ4_NL) | \
                          TYPE_BIT(RT_TYPE_IQ4_XS))
#define TYPES_WEIGHT (TYPES_FLOAT | TYPE_BIT(RT_TYPE_BF16) | TYPE_BIT(RT_TYPE_Q8_0) | \
                      TYPE_BIT(RT_TYPE_Q4_0) | TYPES_BLOCKS_1_2)

/* "f32/f16": the names of the types in `allowed`, for messages. */
static const char *type_list(uint32_t allowed, char *buf, size_t size) {
    size_t n = 0;
    buf[0] = 0;
    for (rt_type_t t = 0; t < RT_TYPE_COUNT && n < size; t++) {
        if ((allowed & TYPE_BIT(t)) == 0) continue;
        n += (size_t)snprintf(buf + n, size - n, "%s%s", n > 0 ? "/" : "", rt_type_name(t));
    }
    return buf;
}

static void check_type(rt_op_t op, const char *role, const rt_tensor_t *t, uint32_t allowed) {
    RT_CHECK(t != NULL, "%s: %s is NULL", rt_op_name(op), role);
    const bool ok = t->type >= 0 && t->type < RT_TYPE_COUNT && (allowed & TYPE_BIT(t->type));
    RT_CHECK(ok, "%s: %s has type %s, expected %s: %s", rt_op_name(op), role,
             rt_type_name(t->type), type_list(allowed, (char[64]){0}, 64), RT_DESC(t));
}

/* Aborts unless b has a's type (the contract's "a, b and the result share
 * the type"). */
static void check_same_type(rt_op_t op, const rt_tensor_t *a, const rt_tensor_t *b) {
    RT_CHECK(a->type == b->type, "%s: b's type %s differs from a's %s: a %s, b %s",
             rt_op_name(op), rt_type_name(b->type), rt_type_name(a->type), RT_DESC(a),
             RT_DESC(b));
}

/* big % small == 0, with an empty small fitting only an empty big. */
static bool broadcasts(int64_t big, int64_t small) {
    return small == 0 ? big == 0 : big % small == 0;
}

static rt_tensor_t *result_new(rt_context_t *ctx, rt_op_t op, rt_type_t type, int n_dims,
                               const int64_t *ne, rt_tensor_t *a, rt_tensor_t *b) {
    rt_tensor_t *r = rt_tensor_new_impl(ctx, type, n_dims, ne, NULL, 0);
    r->op = op;
    r->src[0] = a;
    r->src[1] = b;
    return r;
}

/* A result with a's type and shape. */
static rt_tensor_t *result_like(rt_context_t *ctx, rt_op_t op, rt_tensor_t *a, rt_tensor_t *b) {
    return result_new(ctx, op, a->type, RT_MAX_DIMS, a->ne, a, b);
}

static void set_param_f32(rt_tensor_t *t, int slot, float v) {
    memcpy(&t->op_params[slot], &v, sizeof v);
}

/* An op of one tensor whose result has its type and shape. */
static rt_tensor_t *unary(rt_context_t *ctx, rt_op_t op, rt_tensor_t *a, uint32_t types) {
    check_type(op, "a", a, types);
    return result_like(ctx, op, a, NULL);
}

//===--- rows and elementwise ---===//

rt_tensor_t *rt_get_rows(rt_context_t *ctx, rt_tensor_t *a, rt_tensor_t *rows) {
    check_type(RT_OP_GET_ROWS, "a", a, TYPES_WEIGHT);
    check_type(RT_OP_GET_ROWS, "b", rows, TYPES_I32);
    RT_CHECK(rows->ne[1] == a->ne[2] && rows->ne[2] == a->ne[3] && rows->ne[3] == 1,
             "GET_ROWS: b must be {m, a->ne[2], a->ne[3], 1}: a %s, b %s", RT_DESC(a),
             RT_DESC(rows));
    const int64_t ne[4] = {a->ne[0], rows->ne[0], rows->ne[1], rows->ne[2]};
    return result_new(ctx, RT_OP_GET_ROWS, RT_TYPE_F32, 4, ne, a, rows);
}

static rt_tensor_t *binary(rt_context_t *ctx, rt_op_t op, rt_tensor_t *a, rt_tensor_t *b) {
    check_type(op, "a", a, TYPES_FLOAT);
    check_same_type(op, a, b);
    RT_CHECK(rt_can_repeat(b, a),
             "%s: b does not repeat into a (a->ne[i] %% b->ne[i] != 0): a %s, b %s",
             rt_op_name(op), RT_DESC(a), RT_DESC(b));
    return result_like(ctx, op, a, b);
}

rt_tensor_t *rt_add(rt_context_t *ctx, rt_tensor_t *a, rt_tensor_t *b) {
    return binary(ctx, RT_OP_ADD, a, b);
}

rt_tensor_t *rt_sub(rt_context_t *ctx, rt_tensor_t *a, rt_tensor_t *b) {
    return binary(ctx, RT_OP_SUB, a, b);
}

rt_tensor_t *rt_mul(rt_context_t *ctx, rt_tensor_t *a, rt_tensor_t *b) {
    return binary(ctx, RT_OP_MUL, a, b);
}

rt_tensor_t *rt_div(rt_context_t *ctx, rt_tensor_t *a, rt_tensor_t *b) {
    return binary(ctx, RT_OP_DIV, a, b);
}

rt_tensor_t *rt_scale(rt_context_t *ctx, rt_tensor_t *a, float s) {
    rt_tensor_t *r = unary(ctx, RT_OP_SCALE, a, TYPES_FLOAT);
    set_param_f32(r, 0, s);
    return r;
}

rt_tensor_t *rt_norm(rt_context_t *ctx, rt_tensor_t *a, float eps) {
    rt_tensor_t *r = unary(ctx, RT_OP_NORM, a, TYPES_F32);
    set_param_f32(r, 0, eps);
    return r;
}

rt_tensor_t *rt_rms_norm(rt_context_t *ctx, rt_tensor_t *a, float eps) {
    rt_tensor_t *r = unary(ctx, RT_OP_RMS_NORM, a, TYPES_F32);
    set_param_f32(r, 0, eps);
    return r;
}

rt_tensor_t *rt_gelu(rt_context_t *ctx, rt_tensor_t *a) {
    return unary(ctx, RT_OP_GELU, a, TYPES_FLOAT);
}

rt_tensor_t *rt_silu(rt_context_t *ctx, rt_tensor_t *a) {
    return unary(ctx, RT_OP_SILU, a, TYPES_FLOAT);
}

rt_tensor_t *rt_tanh(rt_context_t *ctx, rt_tensor_t *a) {
    return unary(ctx, RT_OP_TANH, a, TYPES_FLOAT);
}

rt_tensor_t *rt_swiglu(rt_context_t *ctx, rt_tensor_t *a, rt_tensor_t *b) {
    check_type(RT_OP_SWIGLU, "a", a, TYPES_FLOAT);
    check_same_type(RT_OP_SWIGLU, a, b);
    RT_CHECK(rt_are_same_shape(a, b), "SWIGLU: a and b differ in shape: a %s, b %s", RT_DESC(a),
             RT_DESC(b));
    return result_like(ctx, RT_OP_SWIGLU, a, b);
}

//===--- mul_mat ---===//

/* Why attention's V needs rt_cont (docs/memory.md §2.5): a must be read along rows of adjacent
 * blocks, so a transposed or row-strided a is refused while building. */
static void check_mul_mat_a(const rt_tensor_t *a, const rt_tensor_t *b) {
    check_type(RT_OP_MUL_MAT, "a", a, TYPES_WEIGHT);
    RT_CHECK(!rt_is_transposed(a),
             "MUL_MAT: a is transposed (nb[0] > nb[1]): %s; use rt_cont first (b %s)",
             RT_DESC(a), RT_DESC(b));
    RT_CHECK(a->nb[0] == rt_type_size(a->type),
             "MUL_MAT: a's rows are not contiguous (nb[0] = %zu, not %zu): %s; use rt_cont "
             "first (b %s)", a->nb[0], rt_type_size(a->type), RT_DESC(a), RT_DESC(b));
}

static void check_mul_mat_b(const rt_tensor_t *a, const rt_tensor_t *b) {
    check_type(RT_OP_MUL_MAT, "b", b, TYPES_F32);
    RT_CHECK(b->nb[0] == sizeof(float),
             "MUL_MAT: b's rows are not contiguous (nb[0] = %zu, not 4): %s; use rt_cont "
             "first (a %s)", b->nb[0], RT_DESC(b), RT_DESC(a));
    RT_CHECK(a->ne[0] == b->ne[0],
             "MUL_MAT: a and b differ in row length (ne[0] %" PRId64 " vs %" PRId64 "): a %s, "
             "b %s", a->ne[0], b->ne[0], RT_DESC(a), RT_DESC(b));
    RT_CHECK(broadcasts(b->ne[2], a->ne[2]) && broadcasts(b->ne[3], a->ne[3]),
             "MUL_MAT: a does not broadcast over b's dims 2, 3 (b->ne[2] %% a->ne[2], "
             "b->ne[3] %% a->ne[3]): a %s, b %s", RT_DESC(a), RT_DESC(b));
}

rt_tensor_t *rt_mul_mat(rt_context_t *ctx, rt_tensor_t *a, rt_tensor_t *b) {
    check_mul_mat_a(a, b);
    check_mul_mat_b(a, b);
    const int64_t ne[4] = {a->ne[1], b->ne[1], b->ne[2], b->ne[3]};
    return result_new(ctx, RT_OP_MUL_MAT, RT_TYPE_F32, 4, ne, a, b);
}

//===--- softmax and masks ---===//

static void check_soft_max_mask(const rt_tensor_t *a, const rt_tensor_t *mask) {
    check_type(RT_OP_SOFT_MAX, "mask", mask, TYPES_FLOAT);
    RT_CHECK(mask->ne[0] == a->ne[0] && mask->ne[1] >= a->ne[1],
             "SOFT_MAX: the mask must have a's row length and at least its rows: a %s, mask %s",
             RT_DESC(a), RT_DESC(mask));
    RT_CHECK(broadcasts(a->ne[2], mask->ne[2]) && broadcasts(a->ne[3], mask->ne[3]),
             "SOFT_MAX: the mask does not broadcast over a's dims 2, 3: a %s, mask %s",
             RT_DESC(a), RT_DESC(mask));
}

rt_tensor_t *rt_soft_max_ext(rt_context_t *ctx, rt_tensor_t *a, rt_tensor_t *mask, float scale) {
    check_type(RT_OP_SOFT_MAX, "a", a, TYPES_F32);
    if (mask != NULL) check_soft_max_mask(a, mask);
    rt_tensor_t *r = result_like(ctx, RT_OP_SOFT_MAX, a, mask);
    set_param_f32(r, 0, scale);
    return r;
}

rt_tensor_t *rt_soft_max(rt_context_t *ctx, rt_tensor_t *a) {
    return rt_soft_max_ext(ctx, a, NULL, 1.0f);
}

//===--- fused attention ---===//

/* Rows contiguous, so that a plugin streams q, k and v a row at a time. */
static void check_dense_rows(const char *role, const rt_tensor_t *t) {
    RT_CHECK(t->nb[0] == rt_type_size(t->type),
             "FLASH_ATTN: %s's rows are not contiguous (nb[0] = %zu, not %zu): %s", role, t->nb[0],
             rt_type_size(t->type), RT_DESC(t));
}

static void check_flash_attn(const rt_tensor_t *q, const rt_tensor_t *k, const rt_tensor_t *v,
                             const rt_tensor_t *mask) {
    check_type(RT_OP_FLASH_ATTN, "q", q, TYPES_F32);
    check_type(RT_OP_FLASH_ATTN, "k", k, TYPES_FLOAT);
    check_type(RT_OP_FLASH_ATTN, "v", v, TYPES_FLOAT);
    check_same_type(RT_OP_FLASH_ATTN, k, v);
    check_dense_rows("q", q);
    check_dense_rows("k", k);
    check_dense_rows("v", v);
    RT_CHECK(q->ne[0] == k->ne[0] && k->ne[1] == v->ne[1] && k->ne[2] == v->ne[2] && q->ne[3] == k->ne[3] &&
                 k->ne[3] == v->ne[3],
             "FLASH_ATTN: q {D, N, H, n3}, k {D, n_kv, H_kv, n3} and v {Dv, n_kv, H_kv, n3} do not fit: "
             "q %s, k %s, v %s", RT_DESC(q), RT_DESC(k), RT_DESC(v));
    RT_CHECK(k->ne[2] > 0 && q->ne[2] % k->ne[2] == 0,
             "FLASH_ATTN: q's heads (%" PRId64 ") are not a multiple of k's (%" PRId64 "): q %s, k %s",
             q->ne[2], k->ne[2], RT_DESC(q), RT_DESC(k));
    if (mask == NULL) return;
    check_type(RT_OP_FLASH_ATTN, "mask", mask, TYPES_FLOAT);
    check_dense_rows("mask", mask);
    RT_CHECK(mask->ne[0] == k->ne[1] && mask->ne[1] >= q->ne[1] && mask->ne[2] == 1 && mask->ne[3] == 1,
             "FLASH_ATTN: the mask must be {n_kv, >= N, 1, 1}: q %s, k %s, mask %s", RT_DESC(q), RT_DESC(k),
             RT_DESC(mask));
}

rt_tensor_t *rt_flash_attn(rt_context_t *ctx, rt_tensor_t *q, rt_tensor_t *k, rt_tensor_t *v,
                           rt_tensor_t *mask, float scale, float softcap) {
    check_flash_attn(q, k, v, mask);
    const int64_t ne[4] = {v->ne[0], q->ne[2], q->ne[1], q->ne[3]};
    rt_tensor_t *r = result_new(ctx, RT_OP_FLASH_ATTN, RT_TYPE_F32, 4, ne, q, k);
    r->src[2] = v;
    r->src[3] = mask;
    set_param_f32(r, 0, scale);
    set_param_f32(r, 1, softcap);
    return r;
}

rt_tensor_t *rt_diag_mask_inf(rt_context_t *ctx, rt_tensor_t *a, int n_past) {
    rt_tensor_t *r = unary(ctx, RT_OP_DIAG_MASK_INF, a, TYPES_F32);
    r->op_params[0] = n_past;
    return r;
}

//===--- rope and argmax ---===//

static void check_rope(const rt_tensor_t *a, const rt_tensor_t *pos, int n_dims, int mode) {
    check_type(RT_OP_ROPE, "a", a, TYPES_FLOAT);
    check_type(RT_OP_ROPE, "positions", pos, TYPES_I32);
    RT_CHECK(pos->ne[0] == a->ne[2] && pos->ne[1] == 1 && pos->ne[2] == 1 && pos->ne[3] == 1,
             "ROPE: positions must be a vector of a->ne[2] tokens: a %s, positions %s",
             RT_DESC(a), RT_DESC(pos));
    RT_CHECK(n_dims > 0 && n_dims % 2 == 0 && n_dims <= a->ne[0],
             "ROPE: n_dims %d must be even and in 2..head_dim: a %s", n_dims, RT_DESC(a));
    RT_CHECK(mode == RT_ROPE_MODE_NORMAL || mode == RT_ROPE_MODE_NEOX,
             "ROPE: mode %d is neither NORMAL (%d) nor NEOX (%d): a %s", mode,
             RT_ROPE_MODE_NORMAL, RT_ROPE_MODE_NEOX, RT_DESC(a));
}

rt_tensor_t *rt_rope_ext(rt_context_t *ctx, rt_tensor_t *a, rt_tensor_t *pos, int n_dims,
                         int mode, float freq_base, float freq_scale) {
    check_rope(a, pos, n_dims, mode);
    rt_tensor_t *r = result_like(ctx, RT_OP_ROPE, a, pos);
    r->op_params[0] = n_dims;
    r->op_params[1] = mode;
    set_param_f32(r, 2, freq_base);
    set_param_f32(r, 3, freq_scale);
    return r;
}

rt_tensor_t *rt_rope(rt_context_t *ctx, rt_tensor_t *a, rt_tensor_t *pos, int n_dims, int mode) {
    return rt_rope_ext(ctx, a, pos, n_dims, mode, ROPE_DEFAULT_FREQ_BASE,
                       ROPE_DEFAULT_FREQ_SCALE);
}

rt_tensor_t *rt_argmax(rt_context_t *ctx, rt_tensor_t *a) {
    check_type(RT_OP_ARGMAX, "a", a, TYPES_F32);
    const int64_t ne[3] = {a->ne[1], a->ne[2], a->ne[3]};
    return result_new(ctx, RT_OP_ARGMAX, RT_TYPE_I32, 3, ne, a, NULL);
}
