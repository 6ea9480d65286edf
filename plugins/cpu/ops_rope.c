/* SPDX-License-Identifier: MIT */
/* ops_rope.c: ROPE, the rotary position embedding. Row (head i1, token
 * i2, i3) of a is rotated by the angles of position b[i2]: pair i turns by
 * theta_i = p * freq_scale * freq_base^(-2i/n_dims), pairs being adjacent
 * elements (NORMAL) or n_dims/2 apart (NEOX); elements from n_dims on pass
 * through. Rows come head-fastest from the shared iterator, so each thread
 * computes a position's cos/sin table once (angles in double, as positions
 * reach 10^5) and reuses it for every head of that token; the rotation is
 * the kernel table's (kern_vec.c). */
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

/* Scratch regions of n floats: 0 and 1 the row in and out, 2 and 3 the
 * angle table, 4 the frequencies (n/2 doubles), 5 and 6 the reduced angles,
 * their sines and cosines and quadrants (n/2 each). */
size_t rt_cpu_wsize_rope(const rt_tensor_t *node) {
    return rt_cpu_wsize_rows(7, node->ne[0]);
}

/* freq[i] = freq_scale * freq_base^(-2i/n_dims), once per node and thread. */
static void rt_cpu_rope_freqs(const rt_cpu_rope_t *r, double *freq) {
    for (int64_t i = 0; i < r->n_dims / 2; i++)
        freq[i] = r->freq_scale * pow(r->freq_base, -2.0 * (double)i / (double)r->n_dims);
}

/* The reduced angles and sines and cosines of one position. */
typedef struct rt_cpu_rope_tmp {
    float *y, *s, *c;
    int32_t *q;
} rt_cpu_rope_tmp_t;

/* x rounded to nearest even for |x| < 2^51, inline: nearbyint is a libm
 * call in a baseline x86-64 build, and this runs for every angle. */
static inline double rt_cpu_round(double x) {
    const double magic = 0x1.8p52;
    return (x + magic) - magic;
}

/* theta = pos * freq[i], reduced in double (positions reach 10^5, where an
 * F32 angle has lost its fraction) to y + q*pi/2 with |y| <= pi/4; the
 * kernel's polynomials take y, the quadrant q mod 4 the rest:
 * (cos, sin)(theta) = (c, s), (-s, c), (-c, -s), (s, -c). */
static void rt_cpu_rope_angles(const rt_cpu_rope_t *r, const double *freq, int32_t pos,
                               const rt_cpu_rope_tmp_t *t) {
    const int64_t half = r->n_dims / 2;
    for (int64_t i = 0; i < half; i++) {
        const double theta = (double)pos * freq[i], q = rt_cpu_round(theta * (2.0 / M_PI));
        t->y[i] = (float)(theta - q * (M_PI / 2));
        t->q[i] = (int32_t)((int64_t)q & 3);
    }
    rt_cpu_k->vec->sincos(t->y, t->s, t->c, half);
}

/* The cos/sin table of one position in the layout the kernel reads
 * (kern.h): NORMAL repeats each value over its pair and signs the sines,
 * NEOX keeps one per pair. */
static void rt_cpu_rope_table(const rt_cpu_rope_t *r, const double *freq, int32_t pos,
                              const rt_cpu_rope_tmp_t *t, float *cs) {
    const int64_t half = r->n_dims / 2;
    rt_cpu_rope_angles(r, freq, pos, t);
    for (int64_t i = 0; i < half; i++) {
        /* Without branches (quadrants follow no pattern): an odd quadrant
         * swaps sine and cosine, then cos < 0 in quadrants 1 and 2, sin < 0
         * in 2 and 3, a product by +-1 (exact). */
        const int32_t q = t->q[i];
        const float *cp = q & 1 ? t->s : t->c, *sp = q & 1 ? t->c : t->s;
        const float c = cp[i] * (float)(1 - ((q + 1) & 2)), sn = sp[i] * (float)(1 - (q & 2));
        if (r->neox) {
            cs[i] = c;
            cs[half + i] = sn;
        } else {
            cs[2 * i] = cs[2 * i + 1] = c;
            cs[r->n_dims + 2 * i] = -sn;
            cs[r->n_dims + 2 * i + 1] = sn;
        }
    }
}

/* The rows of one position from it's current row on, all rotated by cs:
 * in place in a and dst, several at a time, when both hold plain F32 rows;
 * one at a time through scratch otherwise. */
static void rt_cpu_rope_rows(const rt_cpu_rope_t *r, const rt_tensor_t *a, rt_tensor_t *dst,
                             rt_cpu_rows_t *it, const float *cs, float *sx, float *sd) {
    const int64_t n = dst->ne[0];
    const void *arow = rt_cpu_row(a, it->i1, it->i2, it->i3);
    void *drow = rt_cpu_row(dst, it->i1, it->i2, it->i3);
    if (rt_cpu_row_is_f32(a) && rt_cpu_row_is_f32(dst) && a->nb[1] % sizeof(float) == 0 &&
        dst->nb[1] % sizeof(float) == 0) {
        const int64_t k = rt_cpu_rows_span(it);
        rt_cpu_k->vec->rope(drow, (int64_t)(dst->nb[1] / sizeof(float)), arow,
                            (int64_t)(a->nb[1] / sizeof(float)), k, cs, r->n_dims, r->neox, n);
        return;
    }
    const float *x = rt_cpu_row_in(a, arow, n, sx);
    float *d = rt_cpu_row_out(dst, drow, sd);
    rt_cpu_k->vec->rope(d, n, x, n, 1, cs, r->n_dims, r->neox, n);
    rt_cpu_row_commit(dst, drow, d, n);
}

void rt_cpu_compute_rope(const rt_cpu_params_t *p, rt_tensor_t *dst) {
    const rt_tensor_t *a = dst->src[0], *b = dst->src[1];
    const rt_cpu_rope_t r = rt_cpu_rope_params(dst);
    const int64_t n = dst->ne[0];
    float *sx = rt_cpu_scratch(p, 0, n), *sd = rt_cpu_scratch(p, 1, n);
    float *cs = rt_cpu_scratch(p, 2, n);
    double *freq = (double *)rt_cpu_scratch(p, 4, n);
    float *t5 = rt_cpu_scratch(p, 5, n), *t6 = rt_cpu_scratch(p, 6, n);
    const rt_cpu_rope_tmp_t tmp = {t5, t5 + n / 2, t6, (int32_t *)(t6 + n / 2)};
    rt_cpu_rope_freqs(&r, freq);
    int64_t table_i2 = -1;
    rt_cpu_rows_t it;
    rt_cpu_rows_init(&it, dst->ne, p);
    while (rt_cpu_rows_next(&it)) {
        if (it.i2 != table_i2) {
            int32_t pos;
            memcpy(&pos, (const char *)b->data + it.i2 * b->nb[0], sizeof pos);
            rt_cpu_rope_table(&r, freq, pos, &tmp, cs);
            table_i2 = it.i2;
        }
        rt_cpu_rope_rows(&r, a, dst, &it, cs, sx, sd);
    }
}
