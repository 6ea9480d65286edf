/* SPDX-License-Identifier: MIT */
/* build.c: a case's op, built with the public API from its inputs, and
 * what the contract says the result must be: its header (shape, type,
 * strides) and its op_params as abi/rt_tensor.h lays them out. */
#include "case_run.h"

#include <string.h>

static bool param_f(const char *label, const rt_tensor_t *t, int slot, float want) {
    if ((uint32_t)t->op_params[slot] == rt_f32_bits(want)) return true;
    cf_report("%s: op_params[%d] = %g, want %g", label, slot, rt_bits_f32((uint32_t)t->op_params[slot]), want);
    return false;
}

static bool param_i(const char *label, const rt_tensor_t *t, int slot, int32_t want) {
    if (t->op_params[slot] == want) return true;
    cf_report("%s: op_params[%d] = %d, want %d", label, slot, t->op_params[slot], want);
    return false;
}

/* op_params as rt_tensor.h lays them out. rt_rope's defaults are ggml's
 * (freq_base 10000, freq_scale 1); rt.h does not state them. */
bool cf_check_params(const char *label, rt_op_t op, const cf_case_t *c, const rt_tensor_t *t) {
    switch (op) {
    case RT_OP_SCALE:
    case RT_OP_NORM:
    case RT_OP_RMS_NORM: return param_f(label, t, 0, c->f[0]);
    case RT_OP_SOFT_MAX: return param_f(label, t, 0, c->ext ? c->f[0] : 1.0f);
    case RT_OP_DIAG_MASK_INF: return param_i(label, t, 0, c->i[0]);
    case RT_OP_FLASH_ATTN: return param_f(label, t, 0, c->f[0]) && param_f(label, t, 1, c->f[1]);
    case RT_OP_ROPE:
        return param_i(label, t, 0, c->i[0]) && param_i(label, t, 1, c->i[1]) &&
               param_f(label, t, 2, c->ext ? c->f[0] : 10000.0f) && param_f(label, t, 3, c->ext ? c->f[1] : 1.0f);
    default: return true;
    }
}


static rt_tensor_t *build_cont(rt_context_t *ctx, rt_tensor_t *a, const int64_t *ne) {
    switch (ne[0] == 0 ? 0 : lay_ne_dims(ne)) {
    case 0: return rt_cont(ctx, a);
    case 2: return rt_cont_2d(ctx, a, ne[0], ne[1]);
    case 3: return rt_cont_3d(ctx, a, ne[0], ne[1], ne[2]);
    default: return rt_cont_4d(ctx, a, ne[0], ne[1], ne[2], ne[3]);
    }
}

rt_tensor_t *cf_build_op(rt_context_t *ctx, rt_op_t op, const cf_case_t *c, const cf_input_t *in) {
    rt_tensor_t *a = in[0].t, *b = in[1].t;
    switch (op) {
    case RT_OP_CONT: return build_cont(ctx, a, c->ne);
    case RT_OP_CPY: return c->ext ? rt_cast(ctx, a, c->i[0]) : rt_cpy(ctx, a, b);
    case RT_OP_GET_ROWS: return rt_get_rows(ctx, a, b);
    case RT_OP_ADD: return rt_add(ctx, a, b);
    case RT_OP_SUB: return rt_sub(ctx, a, b);
    case RT_OP_MUL: return rt_mul(ctx, a, b);
    case RT_OP_DIV: return rt_div(ctx, a, b);
    case RT_OP_SCALE: return rt_scale(ctx, a, c->f[0]);
    case RT_OP_NORM: return rt_norm(ctx, a, c->f[0]);
    case RT_OP_RMS_NORM: return rt_rms_norm(ctx, a, c->f[0]);
    case RT_OP_MUL_MAT: return rt_mul_mat(ctx, a, b);
    case RT_OP_SOFT_MAX: return c->ext ? rt_soft_max_ext(ctx, a, b, c->f[0]) : rt_soft_max(ctx, a);
    case RT_OP_DIAG_MASK_INF: return rt_diag_mask_inf(ctx, a, c->i[0]);
    case RT_OP_GELU: return rt_gelu(ctx, a);
    case RT_OP_SILU: return rt_silu(ctx, a);
    case RT_OP_TANH: return rt_tanh(ctx, a);
    case RT_OP_SWIGLU: return rt_swiglu(ctx, a, b);
    case RT_OP_ROPE:
        return c->ext ? rt_rope_ext(ctx, a, b, c->i[0], c->i[1], c->f[0], c->f[1])
                      : rt_rope(ctx, a, b, c->i[0], c->i[1]);
    case RT_OP_ARGMAX: return rt_argmax(ctx, a);
    case RT_OP_SET_ROWS: return rt_set_rows(ctx, a, b, in[2].t);
    case RT_OP_FLASH_ATTN: return rt_flash_attn(ctx, a, b, in[2].t, in[3].t, c->f[0], c->f[1]);
    default: cf_report("cf_build_op: op %d has no builder", op); return NULL;
    }
}

/* The result's shape and type, from the contract. */
layout_t cf_expect_out(rt_op_t op, const cf_case_t *c, const cf_input_t *in) {
    const int64_t *a = in[0].lay.ne, *b = in[1].lay.ne;
    int64_t ne[4] = {a[0], a[1], a[2], a[3]};
    rt_type_t type = in[0].lay.type;
    switch (op) {
    case RT_OP_CONT:
        if (c->ne[0] != 0) lay_norm_ne(c->ne, ne);
        break;
    case RT_OP_CPY:
        if (!c->ext) return in[1].lay;
        type = c->i[0];
        break;
    case RT_OP_SET_ROWS: return in[0].lay;
    case RT_OP_GET_ROWS: memcpy(ne, (int64_t[4]){a[0], b[0], b[1], b[2]}, sizeof ne); type = RT_TYPE_F32; break;
    case RT_OP_MUL_MAT: memcpy(ne, (int64_t[4]){a[1], b[1], b[2], b[3]}, sizeof ne); type = RT_TYPE_F32; break;
    case RT_OP_ARGMAX: memcpy(ne, (int64_t[4]){a[1], a[2], a[3], 1}, sizeof ne); type = RT_TYPE_I32; break;
    case RT_OP_FLASH_ATTN:
        memcpy(ne, (int64_t[4]){in[2].lay.ne[0], a[2], a[1], a[3]}, sizeof ne);
        type = RT_TYPE_F32;
        break;
    default: break;
    }
    return lay_contig(type, ne);
}
