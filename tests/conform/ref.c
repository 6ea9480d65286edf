/* SPDX-License-Identifier: MIT */
/* ref.c: the double-precision reference of every op, written from the
 * contract text of abi/rt_tensor.h and reading the inputs through the
 * library's own layout picture: element ops, row ops (norms, soft_max,
 * rope, argmax), mul_mat, get_rows, and the expected bytes of copies and
 * set_rows (the whole destination base, so bytes outside the view must
 * stay as uploaded). */
#include "case_run.h"
#include "act_round.h"
#include "types.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double silu(double x) { return x / (1.0 + exp(-x)); }

static double gelu(double x) {
    return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

/* Ops that map element (i0..i3) of a (and b) to the same element of the result. */
static double ref_element(rt_op_t op, const cf_case_t *c, const cf_input_t *in, const int64_t i[4]) {
    const double x = cf_in_at(&in[0], i[0], i[1], i[2], i[3]);
    const int64_t *bn = in[1].lay.ne;
    double y = 0;
    if (op >= RT_OP_ADD && op <= RT_OP_DIV) /* b repeats into a */
        y = cf_in_at(&in[1], i[0] % bn[0], i[1] % bn[1], i[2] % bn[2], i[3] % bn[3]);
    switch (op) {
    case RT_OP_ADD: return x + y;
    case RT_OP_SUB: return x - y;
    case RT_OP_MUL: return x * y;
    case RT_OP_DIV: return x / y;
    case RT_OP_SCALE: return x * c->f[0];
    case RT_OP_DIAG_MASK_INF: return i[0] > c->i[0] + i[1] ? -INFINITY : x;
    case RT_OP_GELU: return gelu(x);
    case RT_OP_SILU: return silu(x);
    case RT_OP_TANH: return tanh(x);
    case RT_OP_SWIGLU: return silu(x) * cf_in_at(&in[1], i[0], i[1], i[2], i[3]);
    default: cf_report("ref_element: op %d", op); return 0;
    }
}

static void ref_rope_row(const cf_case_t *c, const double *x, int64_t n0, double p, double *y) {
    const int n_dims = c->i[0];
    const double base = c->ext ? c->f[0] : 10000.0, fs = c->ext ? c->f[1] : 1.0;
    memcpy(y, x, (size_t)n0 * sizeof y[0]);
    for (int i = 0; i < n_dims / 2; i++) {
        const double theta = p * fs * pow(base, -2.0 * i / n_dims);
        const int64_t u = c->i[1] == RT_ROPE_MODE_NEOX ? i : 2 * i;
        const int64_t v = c->i[1] == RT_ROPE_MODE_NEOX ? i + n_dims / 2 : 2 * i + 1;
        y[u] = x[u] * cos(theta) - x[v] * sin(theta);
        y[v] = x[u] * sin(theta) + x[v] * cos(theta);
    }
}

static void ref_softmax_row(const cf_case_t *c, const cf_input_t *in, const int64_t r[4], double *x, double *y) {
    const int64_t n0 = in[0].lay.ne[0];
    const double scale = c->ext ? c->f[0] : 1.0;
    const bool mask = c->ext && in[1].spec != NULL;
    double mx = -INFINITY, sum = 0;
    for (int64_t k = 0; k < n0; k++) {
        const int64_t *m = in[1].lay.ne;
        x[k] = x[k] * scale + (mask ? cf_in_at(&in[1], k, r[1], r[2] % m[2], r[3] % m[3]) : 0.0);
        mx = fmax(mx, x[k]);
    }
    for (int64_t k = 0; k < n0; k++) sum += y[k] = exp(x[k] - mx);
    for (int64_t k = 0; k < n0; k++) y[k] /= sum;
}

/* One row of a row op: x is row r of a; y the row of the result. */
static void ref_row(rt_op_t op, const cf_case_t *c, const cf_input_t *in, const int64_t r[4], double *x, double *y) {
    const int64_t n0 = in[0].lay.ne[0];
    double s1 = 0, s2 = 0;
    for (int64_t k = 0; k < n0; k++) s1 += x[k], s2 += x[k] * x[k];
    const double mean = s1 / (double)n0;
    switch (op) {
    case RT_OP_NORM: {
        double var = 0;
        for (int64_t k = 0; k < n0; k++) var += (x[k] - mean) * (x[k] - mean);
        const double d = sqrt(var / (double)n0 + c->f[0]);
        for (int64_t k = 0; k < n0; k++) y[k] = (x[k] - mean) / d;
        break;
    }
    case RT_OP_RMS_NORM:
        for (int64_t k = 0; k < n0; k++) y[k] = x[k] / sqrt(s2 / (double)n0 + c->f[0]);
        break;
    case RT_OP_SOFT_MAX: ref_softmax_row(c, in, r, x, y); break;
    case RT_OP_ROPE: ref_rope_row(c, x, n0, cf_in_at(&in[1], r[2], 0, 0, 0), y); break;
    case RT_OP_ARGMAX: {
        int64_t best = 0;
        for (int64_t k = 1; k < n0; k++)
            if (x[k] > x[best]) best = k;
        y[0] = (double)best;
        break;
    }
    default: cf_report("ref_row: op %d", op);
    }
}

static void ref_rows(rt_op_t op, const cf_case_t *c, const cf_input_t *in, double *y) {
    const layout_t *a = &in[0].lay;
    const int64_t n0 = a->ne[0], rows_ne[4] = {1, a->ne[1], a->ne[2], a->ne[3]};
    const int64_t out_n0 = op == RT_OP_ARGMAX ? 1 : n0;
    double *x = malloc((size_t)n0 * sizeof *x);
    int64_t r[4];
    for (int64_t row = 0; row < lay_nelem(a) / n0; row++) {
        lay_unravel(row, rows_ne, r);
        for (int64_t k = 0; k < n0; k++) x[k] = cf_in_at(&in[0], k, r[1], r[2], r[3]);
        ref_row(op, c, in, r, x, y + row * out_n0);
    }
    free(x);
}

/* n values rounded in runs of blck (act_round.h): the CPU plugin's
 * rounding, which the strict tolerances of test-ops hold it to (the other
 * devices' differs by the F16 scale of the runs of 32, within theirs). */
static void ref_round_q8_f32(double *v, int64_t n, int64_t blck) {
    float x[CF_MAX_BLCK];
    for (int64_t k = 0; k + blck <= n; k += blck) {
        for (int64_t j = 0; j < blck; j++) x[j] = (float)v[k + j];
        if (blck == 32)
            cf_round_block_q8_f16(x);
        else
            cf_round_block_q8_f32(x, blck);
        for (int64_t j = 0; j < blck; j++) v[k + j] = x[j];
    }
}

/* n values rounded through Q8_0 (its codec, there and back) per 32. */
static void ref_round_q8_0(double *v, int64_t n) {
    const cf_type_t *q8 = cf_type(RT_TYPE_Q8_0);
    float x[CF_MAX_BLCK], y[CF_MAX_BLCK];
    uint8_t block[sizeof(rt_block_q8_0_t)];
    for (int64_t k = 0; k + q8->blck <= n; k += q8->blck) {
        for (int64_t j = 0; j < q8->blck; j++) x[j] = (float)v[k + j];
        q8->encode(x, block);
        q8->decode(block, y);
        for (int64_t j = 0; j < q8->blck; j++) v[k + j] = y[j];
    }
}

/* b's logical values; with quantised weights each row rounded as the
 * MUL_MAT contract lets integer dot products see it: through Q8_0 for
 * Q8_0/Q4_0 weights, through Q8_K per 256-block for the super-block types,
 * per 32-block at Q8_K's f32 scale for the other block types. */
static double *ref_mul_mat_b(const cf_input_t *in) {
    const layout_t *l = &in[1].lay;
    const rt_type_t wt = in[0].lay.type;
    const int64_t n = lay_nelem(l), K = l->ne[0];
    double *b = malloc((size_t)n * sizeof *b);
    lay_read(l, in[1].bytes, b);
    if (!lay_is_quant(wt) || K % 32 != 0) return b;
    if (wt == RT_TYPE_Q8_0 || wt == RT_TYPE_Q4_0) ref_round_q8_0(b, n);
    else ref_round_q8_f32(b, n, lay_blck(wt));
    return b;
}

static void ref_mul_mat(const cf_input_t *in, const layout_t *out, double *y) {
    const int64_t *an = in[0].lay.ne, *bn = in[1].lay.ne;
    const int64_t r2 = bn[2] / an[2], r3 = bn[3] / an[3]; /* b's i2 reads a's i2/r2 (ggml) */
    double *b = ref_mul_mat_b(in);
    int64_t i[4];
    for (int64_t k = 0; k < lay_nelem(out); k++) {
        lay_unravel(k, out->ne, i);
        const double *brow = b + ((i[3] * bn[2] + i[2]) * bn[1] + i[1]) * bn[0];
        double s = 0;
        for (int64_t j = 0; j < an[0]; j++) s += cf_in_at(&in[0], j, i[0], i[2] / r2, i[3] / r3) * brow[j];
        y[k] = s;
    }
    free(b);
}

static void ref_get_rows(const cf_input_t *in, const layout_t *out, double *y) {
    int64_t i[4];
    for (int64_t k = 0; k < lay_nelem(out); k++) {
        lay_unravel(k, out->ne, i);
        const int64_t row = (int64_t)cf_in_at(&in[1], i[1], i[2], i[3], 0);
        y[k] = cf_in_at(&in[0], i[0], row, i[2], i[3]);
    }
}

/* The contract's attention for query (i, h) of plane i3, in double: the
 * scores, their softmax (zeros when every score is -inf) and its weighted
 * sum of v's rows, written to y[0..Dv). */
static void ref_attend_query(const cf_case_t *c, const cf_input_t *in, int64_t i, int64_t h, int64_t i3,
                             double *s, double *y) {
    const int64_t D = in[0].lay.ne[0], n_kv = in[1].lay.ne[1], Dv = in[2].lay.ne[0];
    const int64_t g = h / (in[0].lay.ne[2] / in[1].lay.ne[2]);
    const double scale = c->f[0], cap = c->f[1];
    double mx = -INFINITY, sum = 0;
    for (int64_t j = 0; j < n_kv; j++) {
        double d = 0;
        for (int64_t e = 0; e < D; e++) d += cf_in_at(&in[0], e, i, h, i3) * cf_in_at(&in[1], e, j, g, i3);
        d *= scale;
        if (cap != 0) d = cap * tanh(d / cap);
        s[j] = d + (in[3].spec != NULL ? cf_in_at(&in[3], j, i, 0, 0) : 0.0);
        mx = fmax(mx, s[j]);
    }
    for (int64_t e = 0; e < Dv; e++) y[e] = 0;
    if (mx == -INFINITY) return;
    for (int64_t j = 0; j < n_kv; j++) sum += s[j] = exp(s[j] - mx);
    for (int64_t j = 0; j < n_kv; j++)
        for (int64_t e = 0; e < Dv; e++) y[e] += s[j] / sum * cf_in_at(&in[2], e, j, g, i3);
}

/* out {Dv, H, N, n3}: heads side by side per query. */
static void ref_flash_attn(const cf_case_t *c, const cf_input_t *in, const layout_t *out, double *y) {
    const int64_t Dv = out->ne[0], H = out->ne[1], N = out->ne[2];
    double *s = malloc((size_t)in[1].lay.ne[1] * sizeof *s);
    for (int64_t i3 = 0; i3 < out->ne[3]; i3++)
        for (int64_t i = 0; i < N; i++)
            for (int64_t h = 0; h < H; h++)
                ref_attend_query(c, in, i, h, i3, s, y + ((i3 * N + i) * H + h) * Dv);
    free(s);
}

/* a's elements in logical order, as floats (every source type is exact in F32). */
float *cf_logical_floats(const cf_input_t *a) {
    const int64_t n = lay_nelem(&a->lay);
    double *d = malloc((size_t)n * sizeof *d);
    float *v = malloc((size_t)n * sizeof *v);
    lay_read(&a->lay, a->bytes, d);
    for (int64_t k = 0; k < n; k++) v[k] = (float)d[k];
    free(d);
    return v;
}

/* CPY and CONT: expected bytes of the checked tensor (b's whole base for
 * rt_cpy, so bytes outside the view must stay as uploaded). */
static uint8_t *ref_copy_bytes(rt_op_t op, const cf_case_t *c, const cf_input_t *in, const layout_t *chk) {
    uint8_t *bytes = calloc(lay_span(chk), 1);
    layout_t dst = *chk;
    if (op == RT_OP_CPY && !c->ext) {
        memcpy(bytes, in[1].bytes, lay_span(chk));
        dst = in[1].lay;
    }
    float *v = cf_logical_floats(&in[0]);
    if (op == RT_OP_CONT && lay_is_quant(dst.type)) { /* a block copy: source blocks as they are */
        int64_t i[4], j[4];
        for (int64_t k = 0; k < lay_nelem(&dst); k += 32) {
            lay_unravel(k, dst.ne, i);
            lay_unravel(k, in[0].lay.ne, j);
            memcpy(bytes + lay_addr(&dst, i), in[0].bytes + lay_addr(&in[0].lay, j), lay_type_bytes(dst.type));
        }
    } else {
        lay_write(&dst, bytes, v);
    }
    free(v);
    return bytes;
}

/* SET_ROWS: a's whole base as uploaded, with b's rows encoded over the
 * rows the indices name. */
static uint8_t *ref_set_rows_bytes(const cf_input_t *in) {
    const layout_t *a = &in[0].lay, *b = &in[1].lay;
    uint8_t *bytes = malloc(lay_span(&in[0].base_lay));
    memcpy(bytes, in[0].bytes, lay_span(&in[0].base_lay));
    int64_t i[4];
    for (int64_t k = 0; k < lay_nelem(b); k++) {
        lay_unravel(k, b->ne, i);
        const int64_t at[4] = {i[0], (int64_t)cf_in_at(&in[2], i[1], i[2], i[3], 0), i[2], i[3]};
        lay_encode(a->type, bytes + lay_addr(a, at), (float)cf_in_at(&in[1], i[0], i[1], i[2], i[3]));
    }
    return bytes;
}

void cf_compute_ref(rt_op_t op, const cf_case_t *c, const cf_input_t *in, const layout_t *chk, double *ref,
                    uint8_t **want_bytes) {
    *want_bytes = NULL;
    switch (op) {
    case RT_OP_CONT:
    case RT_OP_CPY:
        *want_bytes = ref_copy_bytes(op, c, in, chk);
        lay_read(chk, *want_bytes, ref);
        break;
    case RT_OP_GET_ROWS: ref_get_rows(in, chk, ref); break;
    case RT_OP_SET_ROWS:
        *want_bytes = ref_set_rows_bytes(in);
        lay_read(chk, *want_bytes, ref);
        break;
    case RT_OP_MUL_MAT: ref_mul_mat(in, chk, ref); break;
    case RT_OP_FLASH_ATTN: ref_flash_attn(c, in, chk, ref); break;
    case RT_OP_NORM:
    case RT_OP_RMS_NORM:
    case RT_OP_SOFT_MAX:
    case RT_OP_ROPE:
    case RT_OP_ARGMAX: ref_rows(op, c, in, ref); break;
    default: {
        int64_t i[4];
        for (int64_t k = 0; k < lay_nelem(chk); k++) {
            lay_unravel(k, chk->ne, i);
            ref[k] = ref_element(op, c, in, i);
        }
    }
    }
}
