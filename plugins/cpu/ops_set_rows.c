/* SPDX-License-Identifier: MIT */
/* ops_set_rows.c: SET_ROWS, the scatter counterpart of GET_ROWS. Work is
 * split over b's rows; each lands, converted, on the row of a (the node is
 * a view of a) that its index names. A destination whose rows are not
 * contiguous (a transposed a: the transposed V cache, written a column a
 * token) is written a column at a time across a run of rows, so that the
 * stores of one column follow each other in memory instead of landing one
 * per page: 4096 x 512 elements into F16 take 4.5 ms here, 9.9 ms as rows
 * of one element each (the run length, 16 to 128, makes no difference). */
#include "cpu.h"

#include "../../abi/rt_quant.h"

#include <string.h>

/* Rows of b a strided destination takes per column sweep: their elements
 * of one column share the destination's cache lines when their indices
 * are close (consecutive positions), and their source lines stay in L1. */
#define RT_CPU_SET_ROWS_RUN 64

bool rt_cpu_supports_set_rows(const rt_tensor_t *node) {
    const rt_tensor_t *a = node->src[0], *b = node->src[1], *c = node->src[2];
    if (!a || !b || !c || b->type != RT_TYPE_F32 || c->type != RT_TYPE_I32) return false;
    if (node->type != a->type || !rt_cpu_is_float(a->type)) return false;
    return b->ne[0] == a->ne[0] && b->ne[2] == a->ne[2] && b->ne[3] == a->ne[3] &&
           c->ne[0] == b->ne[1] && c->ne[1] == b->ne[2] && c->ne[2] == b->ne[3] && c->ne[3] == 1;
}

size_t rt_cpu_wsize_set_rows(const rt_tensor_t *node) {
    return rt_cpu_wsize_rows(1, node->ne[0]);
}

/* The destination row for row i1 of b in matrix (i2, i3), or NULL (and the
 * graph failed) when its index lies outside. */
static void *rt_cpu_set_target(const rt_cpu_params_t *p, rt_tensor_t *dst, int64_t i1,
                               int64_t i2, int64_t i3) {
    const rt_tensor_t *c = dst->src[2];
    int32_t idx;
    memcpy(&idx, (const char *)c->data + i1 * c->nb[0] + i2 * c->nb[1] + i3 * c->nb[2], sizeof idx);
    if (idx >= 0 && idx < dst->ne[1]) return rt_cpu_row(dst, idx, i2, i3);
    rt_cpu_report(p, RT_ERR_INVALID_ARGUMENT, "SET_ROWS '%s': row index %d out of range [0, %lld)",
                  dst->name, (int)idx, (long long)dst->ne[1]);
    return NULL;
}

/* One element x at p in type (F32, F16 or BF16), inline: a call per
 * element through the strided converters cost twice the whole loop. */
static inline void rt_cpu_store_one(rt_type_t type, char *p, float x) {
    if (type == RT_TYPE_F32) {
        memcpy(p, &x, sizeof x);
        return;
    }
    const uint16_t h = type == RT_TYPE_F16 ? rt_fp32_to_fp16(x) : rt_fp32_to_bf16(x);
    memcpy(p, &h, sizeof h);
}

/* Rows i1 .. i1 + k of b, a column at a time. */
static void rt_cpu_set_columns(const rt_cpu_params_t *p, rt_tensor_t *dst, int64_t i1, int64_t k,
                               int64_t i2, int64_t i3) {
    const rt_tensor_t *b = dst->src[1];
    void *out[RT_CPU_SET_ROWS_RUN];
    for (int64_t j = 0; j < k; j++) out[j] = rt_cpu_set_target(p, dst, i1 + j, i2, i3);
    for (int64_t e = 0; e < dst->ne[0]; e++)
        for (int64_t j = 0; j < k; j++) {
            if (out[j] == NULL) continue;
            float x;
            memcpy(&x, (const char *)rt_cpu_row(b, i1 + j, i2, i3) + e * b->nb[0], sizeof x);
            rt_cpu_store_one(dst->type, (char *)out[j] + e * dst->nb[0], x);
        }
}

void rt_cpu_compute_set_rows(const rt_cpu_params_t *p, rt_tensor_t *dst) {
    const rt_tensor_t *b = dst->src[1];
    const int64_t n = dst->ne[0];
    const bool rows = dst->nb[0] == rt_cpu_type(dst->type)->size || n == 1;
    float *buf = rt_cpu_scratch(p, 0, n);
    rt_cpu_rows_t it;
    rt_cpu_rows_init(&it, b->ne, p);
    while (rt_cpu_rows_next(&it)) {
        if (!rows) {
            const int64_t i1 = it.i1, k = rt_cpu_rows_span(&it);
            for (int64_t j = 0; j < k; j += RT_CPU_SET_ROWS_RUN)
                rt_cpu_set_columns(p, dst, i1 + j, k - j < RT_CPU_SET_ROWS_RUN ? k - j : RT_CPU_SET_ROWS_RUN,
                                   it.i2, it.i3);
            continue;
        }
        void *out = rt_cpu_set_target(p, dst, it.i1, it.i2, it.i3);
        if (out != NULL)
            rt_cpu_row_from_f32(dst, out, rt_cpu_row_in(b, rt_cpu_row(b, it.i1, it.i2, it.i3), n, buf), n);
    }
}
