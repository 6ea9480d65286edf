/* SPDX-License-Identifier: MIT */
/* ops_rope.c: ROPE, the rotary position embedding. Row (head i1, token
 * i2, i3) of a is rotated by the angles of position b[i2]: pair i turns by
 * theta_i = p * freq_scale * freq_base^(-2i/n_dims), pairs being adjacent
 * elements (NORMAL) or n_dims/2 apart (NEOX); elements from n_dims on pass
 * through. Rows come head-fastest from the shared iterator, so each thread
 * computes a position's cos/sin table once (angles in double, as positions
 * reach 10^5) and reuses it for every head of that token. */
#include "cpu.h"

#include <math.h>
#include <string.h>

typedef struct rt_cpu_rope {
    int64_t n_dims;
    bool neox;
    double freq_base, freq_scale;
} rt_cpu_rope_t;

static rt_cpu_rope_t rt_cpu_rope_params(const rt_tensor_t *node) {
    return (rt_cpu_rope_t){
        .n_dims = node->op_params[0],
        .neox = node->op_params[1] == RT_ROPE_MODE_NEOX,
        .freq_base = rt_cpu_param_f32(node, 2),
        .freq_scale = rt_cpu_param_f32(node, 3),
    };
}

bool rt_cpu_supports_rope(const rt_tensor_t *node) {
    const rt_tensor_t *a = node->src[0], *b = node->src[1];
    if (!a || !b || !rt_cpu_is_float(a->type) || !rt_cpu_is_float(node->type) ||
        !rt_cpu_same_shape(a, node))
        return false;
    if (b->type != RT_TYPE_I32 || b->ne[0] != a->ne[2]) return false;
    const int32_t n_dims = node->op_params[0], mode = node->op_params[1];
    return n_dims >= 0 && n_dims % 2 == 0 && n_dims <= a->ne[0] &&
           (mode == RT_ROPE_MODE_NORMAL || mode == RT_ROPE_MODE_NEOX);
}

size_t rt_cpu_wsize_rope(const rt_tensor_t *node) {
    return rt_cpu_wsize_rows(3, node->ne[0]);
}

/* cs[i] = cos(theta_i), cs[half + i] = sin(theta_i). */
static void rt_cpu_rope_table(const rt_cpu_rope_t *r, int32_t pos, float *cs) {
    const int64_t half = r->n_dims / 2;
    const double p = (double)pos * r->freq_scale;
    for (int64_t i = 0; i < half; i++) {
        const double theta = p * pow(r->freq_base, -2.0 * (double)i / (double)r->n_dims);
        cs[i] = (float)cos(theta);
        cs[half + i] = (float)sin(theta);
    }
}

static void rt_cpu_rope_row(const rt_cpu_rope_t *r, const float *cs, float *d, const float *x,
                            int64_t n) {
    const int64_t half = r->n_dims / 2;
    for (int64_t i = 0; i < half; i++) {
        const int64_t j0 = r->neox ? i : 2 * i, j1 = r->neox ? i + half : 2 * i + 1;
        const float x0 = x[j0], x1 = x[j1], c = cs[i], s = cs[half + i];
        d[j0] = x0 * c - x1 * s;
        d[j1] = x0 * s + x1 * c;
    }
    if (d != x) memcpy(d + r->n_dims, x + r->n_dims, (size_t)(n - r->n_dims) * sizeof d[0]);
}

void rt_cpu_compute_rope(const rt_cpu_params_t *p, rt_tensor_t *dst) {
    const rt_tensor_t *a = dst->src[0], *b = dst->src[1];
    const rt_cpu_rope_t r = rt_cpu_rope_params(dst);
    const int64_t n = dst->ne[0];
    float *sx = rt_cpu_scratch(p, 0, n), *sd = rt_cpu_scratch(p, 1, n);
    float *cs = rt_cpu_scratch(p, 2, n);
    int64_t table_i2 = -1;
    rt_cpu_rows_t it;
    rt_cpu_rows_init(&it, dst->ne, p->ith, p->nth);
    while (rt_cpu_rows_next(&it)) {
        if (it.i2 != table_i2) {
            int32_t pos;
            memcpy(&pos, (const char *)b->data + it.i2 * b->nb[0], sizeof pos);
            rt_cpu_rope_table(&r, pos, cs);
            table_i2 = it.i2;
        }
        const float *x = rt_cpu_row_in(a, rt_cpu_row(a, it.i1, it.i2, it.i3), n, sx);
        void *drow = rt_cpu_row(dst, it.i1, it.i2, it.i3);
        float *d = rt_cpu_row_out(dst, drow, sd);
        rt_cpu_rope_row(&r, cs, d, x, n);
        rt_cpu_row_commit(dst, drow, d, n);
    }
}
