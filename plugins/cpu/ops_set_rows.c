/* SPDX-License-Identifier: MIT */
/* ops_set_rows.c: SET_ROWS, the scatter counterpart of GET_ROWS. Work is
 * split over b's rows; each lands, converted, on the row of a (the node is
 * a view of a) that its index names. */
#include "cpu.h"

#include <string.h>

bool rt_cpu_supports_set_rows(const rt_tensor_t *node) {
    const rt_tensor_t *a = node->src[0], *b = node->src[1], *c = node->src[2];
    if (!a || !b || !c || b->type != RT_TYPE_F32 || c->type != RT_TYPE_I32) return false;
    if (node->type != a->type || !rt_cpu_is_float(a->type)) return false;
    return b->ne[0] == a->ne[0] &&
           b->ne[2] == a->ne[2] && b->ne[3] == a->ne[3] && c->ne[0] == b->ne[1] &&
           c->ne[1] == b->ne[2] && c->ne[2] == b->ne[3] && c->ne[3] == 1;
}

size_t rt_cpu_wsize_set_rows(const rt_tensor_t *node) {
    return rt_cpu_wsize_rows(1, node->ne[0]);
}

/* Row (i1, i2, i3) of b goes over row c[i1, i2, i3] of the node's matrix
 * (i2, i3). An index outside fails the graph and writes nothing. */
void rt_cpu_compute_set_rows(const rt_cpu_params_t *p, rt_tensor_t *dst) {
    const rt_tensor_t *b = dst->src[1], *c = dst->src[2];
    const int64_t n = dst->ne[0];
    float *buf = rt_cpu_scratch(p, 0, n);
    rt_cpu_rows_t it;
    rt_cpu_rows_init(&it, b->ne, p);
    while (rt_cpu_rows_next(&it)) {
        int32_t idx;
        memcpy(&idx, (const char *)c->data + it.i1 * c->nb[0] + it.i2 * c->nb[1] +
                         it.i3 * c->nb[2], sizeof idx);
        if (idx < 0 || idx >= dst->ne[1]) {
            rt_cpu_report(p, RT_ERR_INVALID_ARGUMENT,
                          "SET_ROWS '%s': row index %d out of range [0, %lld)", dst->name,
                          (int)idx, (long long)dst->ne[1]);
            continue;
        }
        const float *x = rt_cpu_row_in(b, rt_cpu_row(b, it.i1, it.i2, it.i3), n, buf);
        rt_cpu_row_from_f32(dst, rt_cpu_row(dst, idx, it.i2, it.i3), x, n);
    }
}
