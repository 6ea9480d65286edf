/* SPDX-License-Identifier: MIT */
/* ops_norm.c: ops that look at a whole row before writing it. NORM and
 * RMS_NORM (eps from op_params), SOFT_MAX (scale and an optional F32/F16
 * mask, max-subtracted for stability), DIAG_MASK_INF and ARGMAX. Rows come
 * from the shared iterator and are read in place when they are plain F32,
 * through the thread's scratch otherwise; the row arithmetic of the first
 * three is the kernel table's (kern_vec.c).
 *
 * Infinities in SOFT_MAX: -inf entries (masked) get weight 0. A row whose
 * entries are all -inf has no finite weight to normalise by, so its output
 * is all zeros rather than NaN (ggml gives NaN here); callers building
 * causal masks never produce such a row, padded batches do. */
#include "cpu.h"

#include <math.h>
#include <string.h>

//===--- NORM, RMS_NORM ---===//

bool rt_cpu_supports_norm(const rt_tensor_t *node) {
    const rt_tensor_t *a = node->src[0];
    return a && rt_cpu_is_float(a->type) && rt_cpu_is_float(node->type) &&
           rt_cpu_same_shape(a, node);
}

size_t rt_cpu_wsize_norm(const rt_tensor_t *node) {
    return rt_cpu_wsize_rows(2, node->ne[0]);
}

static void rt_cpu_norm_any_row(const rt_tensor_t *dst, const rt_cpu_rows_t *it, float *d,
                                const float *x, int64_t n) {
    (void)it;
    if (dst->op == RT_OP_NORM)
        rt_cpu_k->vec->norm(d, x, n, rt_cpu_param_f32(dst, 0));
    else
        rt_cpu_k->vec->rms_norm(d, x, n, rt_cpu_param_f32(dst, 0));
}

void rt_cpu_compute_norm(const rt_cpu_params_t *p, rt_tensor_t *dst) {
    rt_cpu_map_rows(p, dst, rt_cpu_norm_any_row);
}

//===--- SOFT_MAX ---===//

bool rt_cpu_supports_soft_max(const rt_tensor_t *node) {
    const rt_tensor_t *a = node->src[0], *m = node->src[1];
    if (!a || !rt_cpu_is_float(a->type) || !rt_cpu_is_float(node->type) ||
        !rt_cpu_same_shape(a, node))
        return false;
    if (!m) return true;
    return (m->type == RT_TYPE_F32 || m->type == RT_TYPE_F16) && m->ne[0] == a->ne[0] &&
           m->ne[1] >= a->ne[1] && m->ne[2] > 0 && m->ne[3] > 0 && a->ne[2] % m->ne[2] == 0 &&
           a->ne[3] % m->ne[3] == 0;
}

size_t rt_cpu_wsize_soft_max(const rt_tensor_t *node) {
    return rt_cpu_wsize_rows(3, node->ne[0]);
}

void rt_cpu_compute_soft_max(const rt_cpu_params_t *p, rt_tensor_t *dst) {
    const rt_tensor_t *a = dst->src[0], *m = dst->src[1];
    const int64_t n = dst->ne[0];
    const float scale = rt_cpu_param_f32(dst, 0);
    float *sx = rt_cpu_scratch(p, 0, n), *sm = rt_cpu_scratch(p, 1, n);
    float *sd = rt_cpu_scratch(p, 2, n);
    rt_cpu_rows_t it;
    rt_cpu_rows_init(&it, dst->ne, p);
    while (rt_cpu_rows_next(&it)) {
        const float *x = rt_cpu_row_in(a, rt_cpu_row(a, it.i1, it.i2, it.i3), n, sx);
        /* Mask rows go by i1 (no wrap: it has at least a's rows), matrices repeat. */
        const float *mask =
            m ? rt_cpu_row_in(m, rt_cpu_row(m, it.i1, it.i2 % m->ne[2], it.i3 % m->ne[3]), n, sm)
              : NULL;
        void *drow = rt_cpu_row(dst, it.i1, it.i2, it.i3);
        float *d = rt_cpu_row_out(dst, drow, sd);
        rt_cpu_k->vec->soft_max(d, x, mask, scale, n);
        rt_cpu_row_commit(dst, drow, d, n);
    }
}

//===--- DIAG_MASK_INF ---===//

bool rt_cpu_supports_diag_mask_inf(const rt_tensor_t *node) {
    return rt_cpu_supports_norm(node);
}

size_t rt_cpu_wsize_diag_mask_inf(const rt_tensor_t *node) {
    return rt_cpu_wsize_rows(2, node->ne[0]);
}

/* Columns past n_past + i1 are in the future of row i1. */
static void rt_cpu_diag_mask_row(const rt_tensor_t *dst, const rt_cpu_rows_t *it, float *d,
                                 const float *x, int64_t n) {
    int64_t keep = (int64_t)dst->op_params[0] + it->i1 + 1;
    keep = keep < 0 ? 0 : keep > n ? n : keep;
    if (d != x) memcpy(d, x, (size_t)keep * sizeof d[0]);
    for (int64_t i = keep; i < n; i++) d[i] = -INFINITY;
}

void rt_cpu_compute_diag_mask_inf(const rt_cpu_params_t *p, rt_tensor_t *dst) {
    rt_cpu_map_rows(p, dst, rt_cpu_diag_mask_row);
}

//===--- ARGMAX ---===//

bool rt_cpu_supports_argmax(const rt_tensor_t *node) {
    const rt_tensor_t *a = node->src[0];
    return a && rt_cpu_is_float(a->type) && node->type == RT_TYPE_I32 &&
           node->ne[0] == a->ne[1] && node->ne[1] == a->ne[2] && node->ne[2] == a->ne[3] &&
           node->ne[3] == 1;
}

size_t rt_cpu_wsize_argmax(const rt_tensor_t *node) {
    return rt_cpu_wsize_rows(1, node->src[0]->ne[0]);
}

/* The first largest element; NaN never compares larger, so it is skipped,
 * and a row of NaN or -inf only (or an empty row) gives 0. */
static int32_t rt_cpu_argmax_row(const float *x, int64_t n) {
    int32_t best = 0;
    float max = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        if (x[i] > max) {
            max = x[i];
            best = (int32_t)i;
        }
    }
    return best;
}

/* Row (i1, i2, i3) of a becomes element (i1, i2, i3) of the result. */
void rt_cpu_compute_argmax(const rt_cpu_params_t *p, rt_tensor_t *dst) {
    const rt_tensor_t *a = dst->src[0];
    const int64_t n = a->ne[0];
    float *sx = rt_cpu_scratch(p, 0, n);
    rt_cpu_rows_t it;
    rt_cpu_rows_init(&it, a->ne, p);
    while (rt_cpu_rows_next(&it)) {
        const float *x = rt_cpu_row_in(a, rt_cpu_row(a, it.i1, it.i2, it.i3), n, sx);
        const int32_t best = rt_cpu_argmax_row(x, n);
        memcpy((char *)dst->data + it.i1 * dst->nb[0] + it.i2 * dst->nb[1] + it.i3 * dst->nb[2],
               &best, sizeof best);
    }
}
