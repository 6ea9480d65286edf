/* SPDX-License-Identifier: MIT */
/* ops_elementwise.c: ops that map each element on its own. Binary ops
 * (ADD, SUB, MUL, DIV with b repeating into a; SWIGLU with b of a's shape)
 * and unary ops (SCALE, GELU, SILU). Every kernel works a row at a time
 * through the shared row iterator: a row of F32 with unit stride is used in
 * place, anything else (F16, BF16, other strides) is converted into the
 * thread's scratch, computed as floats and converted back. The arithmetic
 * is the kernel table's vector loops over whole rows (kern_vec.c). */
#include "cpu.h"

static int rt_cpu_binary_index(rt_op_t op) {
    switch (op) {
    case RT_OP_ADD: return RT_CPU_BIN_ADD;
    case RT_OP_SUB: return RT_CPU_BIN_SUB;
    case RT_OP_MUL: return RT_CPU_BIN_MUL;
    case RT_OP_DIV: return RT_CPU_BIN_DIV;
    default: return RT_CPU_BIN_SWIGLU;
    }
}

//===--- binary ops ---===//

static bool rt_cpu_can_repeat(const rt_tensor_t *b, const rt_tensor_t *a) {
    for (int i = 0; i < RT_MAX_DIMS; i++) {
        if (b->ne[i] == 0 ? a->ne[i] != 0 : a->ne[i] % b->ne[i] != 0) return false;
    }
    return true;
}

bool rt_cpu_supports_binary(const rt_tensor_t *node) {
    const rt_tensor_t *a = node->src[0], *b = node->src[1];
    if (!a || !b || !rt_cpu_is_float(a->type) || !rt_cpu_is_float(b->type) ||
        !rt_cpu_is_float(node->type) || !rt_cpu_same_shape(a, node))
        return false;
    return node->op == RT_OP_SWIGLU ? rt_cpu_same_shape(a, b) : rt_cpu_can_repeat(b, a);
}

size_t rt_cpu_wsize_binary(const rt_tensor_t *node) {
    return rt_cpu_wsize_rows(3, node->ne[0]);
}

/* d = x op y over n elements, y repeating every m (m divides n). */
static void rt_cpu_binary_row(rt_cpu_vv_fn vv, rt_cpu_vs_fn vs, float *d, const float *x,
                              const float *y, int64_t n, int64_t m) {
    if (m == 1) {
        vs(d, x, y[0], n);
        return;
    }
    for (int64_t k = 0; k < n; k += m) vv(d + k, x + k, y, m);
}

void rt_cpu_compute_binary(const rt_cpu_params_t *p, rt_tensor_t *dst) {
    const rt_tensor_t *a = dst->src[0], *b = dst->src[1];
    const int64_t n = dst->ne[0], m = b->ne[0];
    const int k = rt_cpu_binary_index(dst->op);
    const rt_cpu_vv_fn vv = rt_cpu_k->vec->vv[k];
    const rt_cpu_vs_fn vs = rt_cpu_k->vec->vs[k];
    float *sx = rt_cpu_scratch(p, 0, n), *sy = rt_cpu_scratch(p, 1, n);
    float *sd = rt_cpu_scratch(p, 2, n);
    rt_cpu_rows_t it;
    rt_cpu_rows_init(&it, dst->ne, p);
    while (rt_cpu_rows_next(&it)) {
        const float *x = rt_cpu_row_in(a, rt_cpu_row(a, it.i1, it.i2, it.i3), n, sx);
        const float *y = rt_cpu_row_in(b, rt_cpu_row_bcast(b, it.i1, it.i2, it.i3), m, sy);
        void *drow = rt_cpu_row(dst, it.i1, it.i2, it.i3);
        float *d = rt_cpu_row_out(dst, drow, sd);
        rt_cpu_binary_row(vv, vs, d, x, y, n, m);
        rt_cpu_row_commit(dst, drow, d, n);
    }
}

//===--- unary ops ---===//

bool rt_cpu_supports_unary(const rt_tensor_t *node) {
    const rt_tensor_t *a = node->src[0];
    return a && rt_cpu_is_float(a->type) && rt_cpu_is_float(node->type) &&
           rt_cpu_same_shape(a, node);
}

size_t rt_cpu_wsize_unary(const rt_tensor_t *node) {
    return rt_cpu_wsize_rows(2, node->ne[0]);
}

static void rt_cpu_unary_row(const rt_tensor_t *dst, const rt_cpu_rows_t *it, float *d,
                             const float *x, int64_t n) {
    (void)it;
    switch (dst->op) {
    case RT_OP_SCALE: rt_cpu_k->vec->vs[RT_CPU_BIN_MUL](d, x, rt_cpu_param_f32(dst, 0), n); return;
    case RT_OP_GELU: rt_cpu_k->vec->gelu(d, x, n); return;
    case RT_OP_TANH: rt_cpu_k->vec->tanh(d, x, n); return;
    default: rt_cpu_k->vec->silu(d, x, n); return;
    }
}

void rt_cpu_compute_unary(const rt_cpu_params_t *p, rt_tensor_t *dst) {
    rt_cpu_map_rows(p, dst, rt_cpu_unary_row);
}
