/* SPDX-License-Identifier: MIT */
/* inputs.c: a case's inputs. Each is built twice, with the API (permute,
 * view_Nd, reshape, ...) and with the library's own layout picture, and the
 * two headers must agree; its bytes are drawn from the case's seed in the
 * spec's fill and uploaded as a whole base, so the reference reads the
 * bytes through the library's picture, never through the runtime's. */
#include "case_run.h"
#include "rng.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static rt_tensor_t *new_from(rt_context_t *ctx, const layout_t *l) {
    return rt_new_tensor(ctx, l->type, lay_ne_dims(l->ne), l->ne);
}

static rt_tensor_t *reshape_nd(rt_context_t *ctx, rt_tensor_t *a, const int64_t ne[4]) {
    switch (lay_ne_dims(ne)) {
    case 1: return rt_reshape_1d(ctx, a, ne[0]);
    case 2: return rt_reshape_2d(ctx, a, ne[0], ne[1]);
    case 3: return rt_reshape_3d(ctx, a, ne[0], ne[1], ne[2]);
    default: return rt_reshape_4d(ctx, a, ne[0], ne[1], ne[2], ne[3]);
    }
}

/* view_Nd (N >= 2 from the shape) with l's strides; dims past N get the
 * contiguous nb[i] = nb[i-1]*ne[i-1], so l is updated to match. */
static rt_tensor_t *view_nd(rt_context_t *ctx, rt_tensor_t *a, layout_t *l) {
    const int n = lay_ne_dims(l->ne) < 2 ? 2 : lay_ne_dims(l->ne);
    for (int i = n; i < 4; i++) l->nb[i] = l->nb[i - 1] * (size_t)l->ne[i - 1];
    const int64_t *ne = l->ne;
    const size_t *nb = l->nb;
    switch (n) {
    case 2: return rt_view_2d(ctx, a, ne[0], ne[1], nb[1], l->offs);
    case 3: return rt_view_3d(ctx, a, ne[0], ne[1], ne[2], nb[1], nb[2], l->offs);
    default: return rt_view_4d(ctx, a, ne[0], ne[1], ne[2], ne[3], nb[1], nb[2], nb[3], l->offs);
    }
}

static void make_padded(rt_context_t *ctx, cf_input_t *in, const int64_t vne[4]) {
    const int64_t blk = lay_blck(in->spec->type);
    const int64_t bne[4] = {vne[0] + 2 * blk, vne[1] + 1, vne[2] + 1, vne[3]};
    in->base_lay = lay_contig(in->spec->type, bne);
    in->base = new_from(ctx, &in->base_lay);
    layout_t v = in->base_lay;
    memcpy(v.ne, vne, sizeof v.ne);
    v.offs = in->base_lay.nb[0] + in->base_lay.nb[1]; /* one block in, one row down */
    in->t = view_nd(ctx, in->base, &v);
    in->lay = v;
    in->view_op = RT_OP_VIEW;
}

static void make_permuted(rt_context_t *ctx, cf_input_t *in, const int64_t ne[4], const int axes[4], bool trans) {
    int64_t bne[4];
    for (int i = 0; i < 4; i++) bne[i] = ne[axes[i]];
    in->base_lay = lay_contig(in->spec->type, bne);
    in->base = new_from(ctx, &in->base_lay);
    in->lay = lay_permute(&in->base_lay, axes);
    in->t = trans ? rt_transpose(ctx, in->base)
                  : rt_permute(ctx, in->base, axes[0], axes[1], axes[2], axes[3]);
    in->view_op = trans ? RT_OP_TRANSPOSE : RT_OP_PERMUTE;
}

void cf_make_input(rt_context_t *ctx, const cf_src_t *s, cf_input_t *in) {
    static const int trans_axes[4] = {1, 0, 2, 3};
    int64_t ne[4];
    lay_norm_ne(s->ne, ne);
    in->spec = s;
    in->view_op = RT_OP_NONE;
    const int64_t n = ne[0] * ne[1] * ne[2] * ne[3];
    switch (s->layout) {
    case CF_LAY_PERM: make_permuted(ctx, in, ne, s->axes, false); break;
    case CF_LAY_TRANS: make_permuted(ctx, in, ne, trans_axes, true); break;
    case CF_LAY_PAD: make_padded(ctx, in, ne); break;
    case CF_LAY_PADPERM: {
        int64_t vne[4];
        for (int i = 0; i < 4; i++) vne[i] = ne[s->axes[i]];
        make_padded(ctx, in, vne);
        in->lay = lay_permute(&in->lay, s->axes);
        in->t = rt_permute(ctx, in->t, s->axes[0], s->axes[1], s->axes[2], s->axes[3]);
        in->view_op = RT_OP_PERMUTE;
        break;
    }
    case CF_LAY_RESHAPE:
        in->base_lay = lay_contig(s->type, (int64_t[4]){n, 1, 1, 1});
        in->base = new_from(ctx, &in->base_lay);
        in->t = reshape_nd(ctx, in->base, ne);
        in->lay = lay_contig(s->type, ne);
        in->view_op = RT_OP_RESHAPE;
        break;
    case CF_LAY_VIEW1D: {
        in->base_lay = lay_contig(s->type, (int64_t[4]){n + 3, 1, 1, 1});
        in->base = new_from(ctx, &in->base_lay);
        in->lay = lay_contig(s->type, ne);
        in->lay.offs = 2 * lay_type_bytes(s->type);
        rt_tensor_t *v = rt_view_1d(ctx, in->base, n, in->lay.offs);
        in->t = lay_ne_dims(ne) > 1 ? reshape_nd(ctx, v, ne) : v;
        in->view_op = lay_ne_dims(ne) > 1 ? RT_OP_RESHAPE : RT_OP_VIEW;
        break;
    }
    default:
        in->base_lay = lay_contig(s->type, ne);
        in->base = new_from(ctx, &in->base_lay);
        in->lay = in->base_lay;
        in->t = s->layout == CF_LAY_VIEWT ? rt_view_tensor(ctx, in->base) : in->base;
        in->view_op = s->layout == CF_LAY_VIEWT ? RT_OP_VIEW : RT_OP_NONE;
        break;
    }
}

static float fill_value(const cf_src_t *s, const layout_t *bl, int64_t k, uint64_t *rng) {
    int64_t idx[4];
    switch (s->fill) {
    case CF_FILL_POS: return cf_rng_uniform(rng, 0.5f, 2.0f);
    case CF_FILL_WIDE: return cf_rng_uniform(rng, -6.0f, 6.0f);
    case CF_FILL_TIES: return (float)(1 + cf_rng_next(rng) % 4);
    case CF_FILL_INDEX: return (float)(cf_rng_next(rng) % (uint64_t)s->idx_hi);
    case CF_FILL_CAUSAL:
    case CF_FILL_CAUSAL0:
        lay_unravel(k, bl->ne, idx);
        if (s->fill == CF_FILL_CAUSAL0 && idx[1] == 0) return -INFINITY;
        return idx[0] > idx[1] + 2 ? -INFINITY : cf_rng_uniform(rng, -1.0f, 1.0f);
    case CF_FILL_SEQRUNS:
        lay_unravel(k, bl->ne, idx);
        return idx[0] / 64 % 4 != idx[1] % 4 ? -INFINITY : cf_rng_uniform(rng, -1.0f, 1.0f);
    default: return cf_rng_uniform(rng, -1.0f, 1.0f);
    }
}

bool cf_draw_distinct(float *v, int64_t n, int64_t m, int64_t hi, uint64_t *rng) {
    if (m > hi) {
        cf_report("rows of %lld distinct indices drawn from [0, %lld)", (long long)m, (long long)hi);
        return false;
    }
    int64_t *pool = malloc((size_t)(hi > 0 ? hi : 1) * sizeof *pool);
    for (int64_t r = 0; r + m <= n; r += m) {
        for (int64_t k = 0; k < hi; k++) pool[k] = k;
        for (int64_t k = 0; k < m; k++) {
            const int64_t j = k + (int64_t)(cf_rng_next(rng) % (uint64_t)(hi - k));
            const int64_t t = pool[k];
            pool[k] = pool[j];
            pool[j] = t;
            v[r + k] = (float)pool[k];
        }
    }
    free(pool);
    return true;
}

/* Random values (never all zero) for the base, encoded in its type. */
bool cf_fill_input(cf_input_t *in, uint64_t *rng) {
    const int64_t n = lay_nelem(&in->base_lay);
    float *v = malloc((size_t)n * sizeof *v);
    bool ok = true;
    if (in->spec->fill == CF_FILL_DISTINCT)
        ok = cf_draw_distinct(v, n, in->base_lay.ne[0], in->spec->idx_hi, rng);
    else
        for (int64_t k = 0; k < n; k++) v[k] = fill_value(in->spec, &in->base_lay, k, rng);
    in->bytes = calloc(lay_span(&in->base_lay), 1);
    if (ok) lay_write(&in->base_lay, in->bytes, v);
    free(v);
    return ok;
}

bool cf_upload(const cf_input_t *in) {
    const rt_status_t st = rt_tensor_set(in->base, in->bytes, 0, lay_span(&in->base_lay));
    if (st != RT_OK) cf_report("rt_tensor_set: %s: %s", rt_status_name(st), rt_last_error());
    return st == RT_OK;
}

double cf_in_at(const cf_input_t *in, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    const int64_t idx[4] = {i0, i1, i2, i3};
    return lay_get(&in->lay, in->bytes, idx);
}

//===--- header checks ---===//

bool cf_header_is(const char *label, const char *what, const rt_tensor_t *t, const layout_t *l) {
    char want[160], got[160];
    layout_t g = {.type = t->type, .offs = l->offs};
    memcpy(g.ne, t->ne, sizeof g.ne);
    memcpy(g.nb, t->nb, sizeof g.nb);
    if (g.type == l->type && memcmp(g.ne, l->ne, sizeof g.ne) == 0 && memcmp(g.nb, l->nb, sizeof g.nb) == 0)
        return true;
    cf_report("%s: %s header is %s, want %s", label, what, lay_str(&g, got, sizeof got), lay_str(l, want, sizeof want));
    return false;
}

/* The view the API built must be the one the stride rules give. */
bool cf_check_view(const char *label, const cf_input_t *in) {
    const rt_tensor_t *t = in->t;
    if (!cf_header_is(label, "input view", t, &in->lay)) return false;
    if (t == in->base) return true;
    if (t->view_src != in->base || t->view_offs != in->lay.offs || t->op != in->view_op) {
        cf_report("%s: view has view_src %p (base %p), view_offs %zu (want %zu), op %d (want %d)", label,
               (void *)t->view_src, (void *)in->base, t->view_offs, in->lay.offs, t->op, in->view_op);
        return false;
    }
    const int *ax = in->spec->axes;
    if (t->op == RT_OP_PERMUTE && memcmp(t->op_params, ax, 4 * sizeof ax[0]) != 0) {
        cf_report("%s: permute op_params {%d,%d,%d,%d}, want {%d,%d,%d,%d}", label, t->op_params[0],
               t->op_params[1], t->op_params[2], t->op_params[3], ax[0], ax[1], ax[2], ax[3]);
        return false;
    }
    return true;
}
