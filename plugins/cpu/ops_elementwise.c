/* SPDX-License-Identifier: MIT */
/* ops_elementwise.c: ops that map each element on its own. Binary ops
 * (ADD, SUB, MUL, DIV with b repeating into a; SWIGLU with b of a's shape)
 * and unary ops (SCALE, GELU, SILU). Every kernel works a row at a time
 * through the shared row iterator: a row of F32 with unit stride is used in
 * place, anything else (F16, BF16, other strides) is converted into the
 * thread's scratch, computed as floats and converted back. The arithmetic
 * runs in loops over a whole row, selected per row rather than per element. */
#include "cpu.h"

#include <math.h>

//===--- vector loops ---===//

typedef void (*rt_cpu_vv_fn)(float *d, const float *x, const float *y, int64_t n);
typedef void (*rt_cpu_vs_fn)(float *d, const float *x, float y, int64_t n);

static inline float rt_cpu_silu(float x) {
    return x / (1.0f + expf(-x));
}

/* d = x op y for a vector y (vv) and for one value y (vs, b->ne[0] == 1). */
#define RT_CPU_BINARY(name, expr)                                                        \
    static void rt_cpu_vv_##name(float *d, const float *x, const float *y, int64_t n) {  \
        for (int64_t i = 0; i < n; i++) d[i] = expr(x[i], y[i]);                         \
    }                                                                                    \
    static void rt_cpu_vs_##name(float *d, const float *x, float y, int64_t n) {         \
        for (int64_t i = 0; i < n; i++) d[i] = expr(x[i], y);                            \
    }

#define RT_CPU_ADD(x, y) ((x) + (y))
#define RT_CPU_SUB(x, y) ((x) - (y))
#define RT_CPU_MUL(x, y) ((x) * (y))
#define RT_CPU_DIV(x, y) ((x) / (y))
#define RT_CPU_SWIGLU(x, y) (rt_cpu_silu(x) * (y))

RT_CPU_BINARY(add, RT_CPU_ADD)
RT_CPU_BINARY(sub, RT_CPU_SUB)
RT_CPU_BINARY(mul, RT_CPU_MUL)
RT_CPU_BINARY(div, RT_CPU_DIV)
RT_CPU_BINARY(swiglu, RT_CPU_SWIGLU)

static void rt_cpu_v_scale(float *d, const float *x, float s, int64_t n) {
    for (int64_t i = 0; i < n; i++) d[i] = x[i] * s;
}

static void rt_cpu_v_gelu(float *d, const float *x, int64_t n) {
    const float c = 0.7978845608028654f; /* sqrt(2/pi) */
    for (int64_t i = 0; i < n; i++) {
        const float v = x[i];
        d[i] = 0.5f * v * (1.0f + tanhf(c * (v + 0.044715f * v * v * v)));
    }
}

static void rt_cpu_v_silu(float *d, const float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) d[i] = rt_cpu_silu(x[i]);
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

static void rt_cpu_binary_fns(rt_op_t op, rt_cpu_vv_fn *out_vv, rt_cpu_vs_fn *out_vs) {
    switch (op) {
    case RT_OP_ADD: *out_vv = rt_cpu_vv_add, *out_vs = rt_cpu_vs_add; return;
    case RT_OP_SUB: *out_vv = rt_cpu_vv_sub, *out_vs = rt_cpu_vs_sub; return;
    case RT_OP_MUL: *out_vv = rt_cpu_vv_mul, *out_vs = rt_cpu_vs_mul; return;
    case RT_OP_DIV: *out_vv = rt_cpu_vv_div, *out_vs = rt_cpu_vs_div; return;
    default: *out_vv = rt_cpu_vv_swiglu, *out_vs = rt_cpu_vs_swiglu; return;
    }
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
    rt_cpu_vv_fn vv;
    rt_cpu_vs_fn vs;
    rt_cpu_binary_fns(dst->op, &vv, &vs);
    float *sx = rt_cpu_scratch(p, 0, n), *sy = rt_cpu_scratch(p, 1, n);
    float *sd = rt_cpu_scratch(p, 2, n);
    rt_cpu_rows_t it;
    rt_cpu_rows_init(&it, dst->ne, p->ith, p->nth);
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
    case RT_OP_SCALE: rt_cpu_v_scale(d, x, rt_cpu_param_f32(dst, 0), n); return;
    case RT_OP_GELU: rt_cpu_v_gelu(d, x, n); return;
    default: rt_cpu_v_silu(d, x, n); return;
    }
}

void rt_cpu_compute_unary(const rt_cpu_params_t *p, rt_tensor_t *dst) {
    rt_cpu_map_rows(p, dst, rt_cpu_unary_row);
}
