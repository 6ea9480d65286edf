/* SPDX-License-Identifier: MIT */
/* shard.c: a loaded model made into one shard of a tensor-parallel group
 * (Megatron's split), for any head counts. The attention is split by KV
 * groups (a KV head with the n_head / n_head_kv query heads that read it,
 * so grouped-query attention stays within the shard): G groups over T
 * shards give the first G % T shards one group more than the others (9
 * query heads, 3 KV heads over 2 shards: 6 + 3 query heads, 2 + 1 KV
 * heads). Shard s keeps its groups' rows of W_q, W_k and W_v and the
 * columns of W_o that read them. The FFN is split the same way in units of
 * W_down's block (one column for F32, 32 for Q4_1): the rows of W_gate and
 * W_up and the columns of W_down that read them. Column-parallel products
 * then need no communication, and each row-parallel one (W_o, W_down)
 * gives a partial sum that the shards add up (an allreduce) before the
 * residual. What cannot split is refused: more shards than KV heads or
 * FFN blocks, a W_o cut that would fall inside a quantised block, biases,
 * fused weights, a norm of a block's output (it would see a partial sum).
 *
 * The slices are views of the loaded weights (a row slice is contiguous; a
 * column slice keeps the full row stride, which mul_mat reads as it reads
 * any strided dims), so nothing is copied; the hyperparameters become the
 * shard's (n_head, n_head_kv, n_ff), which sizes the KV cache by the
 * shard's heads and makes the graph code unaware of sharding. */
#include "model_impl.h"

/* Shard s's units of n over n_shards: [*begin, *begin + *len), the first
 * n % n_shards shards taking one more. */
static void span(int64_t n, int32_t n_shards, int32_t s, int64_t *begin, int64_t *len) {
    const int64_t base = n / n_shards, extra = n % n_shards;
    *begin = s * base + (s < extra ? s : extra);
    *len = base + (s < extra);
}

/* Rows [at, at + n) of a. */
static rt_tensor_t *rows(rt_context_t *ctx, rt_tensor_t *a, int64_t at, int64_t n) {
    return rt_view_2d(ctx, a, a->ne[0], n, a->nb[1], (size_t)at * a->nb[1]);
}

/* Columns [at, at + n) of a (elements of each row). */
static rt_tensor_t *cols(rt_context_t *ctx, rt_tensor_t *a, int64_t at, int64_t n) {
    return rt_view_2d(ctx, a, n, a->ne[1], a->nb[1], rt_row_size(a->type, at));
}

/* What one shard holds, in columns of W_o (q), rows of W_k (kv) and
 * columns of W_down (ff). */
typedef struct slice {
    int64_t q_at, q, kv_at, kv, ff_at, ff;
} slice_t;

static slice_t slice_of(const rtm_hparams_t *hp, int64_t ff_unit, int32_t s, int32_t n_shards) {
    const int64_t group = (int64_t)hp->head_dim * (hp->n_head / hp->n_head_kv);
    int64_t g_at, g, u_at, u;
    span(hp->n_head_kv, n_shards, s, &g_at, &g);
    span(hp->n_ff / ff_unit, n_shards, s, &u_at, &u);
    return (slice_t){g_at * group, g * group, g_at * hp->head_dim, g * hp->head_dim,
                     u_at * ff_unit, u * ff_unit};
}

/* A column cut of a's rows must fall on a block of a quantised type. */
static bool cuts_blocks(const rt_tensor_t *a, int64_t at, int64_t n) {
    return at % rt_blck_size(a->type) != 0 || n % rt_blck_size(a->type) != 0;
}

static rt_status_t check_layer(const rtm_model_t *m, int32_t il, int64_t ff_unit, int32_t n_shards) {
    const rtm_layer_t *L = &m->layers[il];
    if (L->bq || L->bk || L->bv || L->bo || L->ffn_up_b || L->ffn_down_b) /* sliced, or added twice */
        return rtm_error(RT_ERR_UNSUPPORTED, "rtm_model_load: shards of a model with attention "
                         "or FFN biases (layer %d)", il);
    if (!L->wq || !L->wk || !L->wv || !L->ffn_gate || !L->ffn_up || L->attn_post_norm || L->ffn_post_norm)
        return rtm_error(RT_ERR_UNSUPPORTED, "rtm_model_load: shards need separate W_q, W_k, W_v, "
                         "W_gate and W_up and no norm after a row-parallel product (layer %d)", il);
    if (rt_blck_size(L->ffn_down->type) != ff_unit)
        return rtm_error(RT_ERR_UNSUPPORTED, "rtm_model_load: shards of a model whose W_down "
                         "types differ across layers (layer %d)", il);
    for (int32_t s = 0; s < n_shards; s++) {
        const slice_t sl = slice_of(&m->hp, ff_unit, s, n_shards);
        if (cuts_blocks(L->wo, sl.q_at, sl.q))
            return rtm_error(RT_ERR_UNSUPPORTED, "rtm_model_load: %d shards would cut the %s blocks "
                             "of layer %d's W_o (shard %d: columns %lld..%lld)", n_shards,
                             rt_type_name(L->wo->type), il, s, (long long)sl.q_at,
                             (long long)(sl.q_at + sl.q));
    }
    return RT_OK;
}

static rt_status_t check_split(const rtm_model_t *m, int64_t ff_unit, int32_t n_shards) {
    const rtm_hparams_t *hp = &m->hp;
    if (hp->n_head_kv < n_shards || hp->n_head % hp->n_head_kv)
        return rtm_error(RT_ERR_UNSUPPORTED, "rtm_model_load: %d shards of %d query heads in %d KV "
                         "groups: a shard holds whole KV groups, at least one", n_shards, hp->n_head,
                         hp->n_head_kv);
    if (hp->n_ff % ff_unit || hp->n_ff / ff_unit < n_shards)
        return rtm_error(RT_ERR_UNSUPPORTED, "rtm_model_load: %d shards of %d FFN columns in blocks "
                         "of %lld: at least one block a shard", n_shards, hp->n_ff, (long long)ff_unit);
    rt_status_t st = RT_OK;
    for (int32_t il = m->layer_begin; st == RT_OK && il < m->layer_end; il++)
        st = check_layer(m, il, ff_unit, n_shards);
    return st;
}

static void shard_layer(rt_context_t *ctx, rtm_layer_t *L, const slice_t *s) {
    L->wq = rows(ctx, L->wq, s->q_at, s->q);
    L->wk = rows(ctx, L->wk, s->kv_at, s->kv);
    L->wv = rows(ctx, L->wv, s->kv_at, s->kv);
    L->wo = cols(ctx, L->wo, s->q_at, s->q);
    L->ffn_gate = rows(ctx, L->ffn_gate, s->ff_at, s->ff);
    L->ffn_up = rows(ctx, L->ffn_up, s->ff_at, s->ff);
    L->ffn_down = cols(ctx, L->ffn_down, s->ff_at, s->ff);
}

rt_status_t rtm_model_shard(rtm_model_t *m, int32_t shard, int32_t n_shards) {
    if (n_shards <= 1) return RT_OK;
    if (shard < 0 || shard >= n_shards)
        return rtm_error(RT_ERR_INVALID_ARGUMENT, "rtm_model_load: shard %d of %d", shard, n_shards);
    if (m->layer_begin >= m->layer_end)
        return rtm_error(RT_ERR_INVALID_ARGUMENT, "rtm_model_load: a shard of no layers");
    const int64_t ff_unit = rt_blck_size(m->layers[m->layer_begin].ffn_down->type);
    rt_status_t st = check_split(m, ff_unit, n_shards);
    const rt_context_params_t p = {.struct_size = sizeof p, .no_alloc = true,
                                   .mem_size = 7 * (size_t)m->hp.n_layer * rt_tensor_overhead()};
    if (st == RT_OK && (st = rt_context_create(&p, &m->ctx_shard)) != RT_OK)
        return rtm_error_core(st, "rtm_model_load: shard context");
    if (st != RT_OK) return st;
    const slice_t s = slice_of(&m->hp, ff_unit, shard, n_shards);
    for (int32_t il = m->layer_begin; il < m->layer_end; il++) shard_layer(m->ctx_shard, &m->layers[il], &s);
    m->hp.n_head = (int32_t)(s.q / m->hp.head_dim);
    m->hp.n_head_kv = (int32_t)(s.kv / m->hp.head_dim);
    m->hp.n_ff = (int32_t)s.ff;
    return RT_OK;
}
