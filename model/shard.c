/* SPDX-License-Identifier: MIT */
/* shard.c: a loaded model made into one shard of a tensor-parallel group
 * (Megatron's split). Shard s of T keeps, of every layer, the attention
 * heads s*H/T.. (rows of W_q, and the matching KV heads' rows of W_k and
 * W_v, so grouped-query attention stays within the shard) and the columns
 * of W_o that read them; the FFN columns s*F/T.. (rows of W_gate and W_up)
 * and the columns of W_down that read them. Column-parallel products then
 * need no communication, and each row-parallel one (W_o, W_down) gives a
 * partial sum that the shards add up (an allreduce) before the residual.
 *
 * The slices are views of the loaded weights (a row slice is contiguous; a
 * column slice keeps the full row stride, which mul_mat reads as it reads
 * any strided dims), so nothing is copied; the hyperparameters become the
 * shard's (n_head, n_head_kv, n_ff), which sizes the KV cache by the
 * shard's heads and makes the graph code unaware of sharding. */
#include "model_impl.h"

/* The slice [i*n, (i+1)*n) of a's rows. */
static rt_tensor_t *rows(rt_context_t *ctx, rt_tensor_t *a, int64_t i, int64_t n) {
    return rt_view_2d(ctx, a, a->ne[0], n, a->nb[1], (size_t)(i * n) * a->nb[1]);
}

/* The slice [i*n, (i+1)*n) of a's columns (elements of each row). */
static rt_tensor_t *cols(rt_context_t *ctx, rt_tensor_t *a, int64_t i, int64_t n) {
    return rt_view_2d(ctx, a, n, a->ne[1], a->nb[1], rt_row_size(a->type, i * n));
}

/* A column slice must start and end on a block of a quantised type. */
static bool cuts_blocks(const rt_tensor_t *a, int64_t n) { return n % rt_blck_size(a->type) != 0; }

static rt_status_t check_split(const rtm_model_t *m, int32_t n_shards) {
    const rtm_hparams_t *hp = &m->hp;
    if (hp->n_head % n_shards || hp->n_head_kv % n_shards || hp->n_ff % n_shards)
        return rtm_error(RT_ERR_UNSUPPORTED, "rtm_model_load: %d shards do not divide %d heads, "
                         "%d KV heads and %d FFN columns", n_shards, hp->n_head, hp->n_head_kv,
                         hp->n_ff);
    const int64_t q_cols = (int64_t)hp->head_dim * (hp->n_head / n_shards);
    for (int32_t il = m->layer_begin; il < m->layer_end; il++) {
        const rtm_layer_t *L = &m->layers[il];
        if (L->bq || L->bk || L->bv || L->bo) /* a bias would be sliced, and W_o's added once */
            return rtm_error(RT_ERR_UNSUPPORTED, "rtm_model_load: shards of a model with attention "
                             "biases (layer %d)", il);
        if (cuts_blocks(L->wo, q_cols) || cuts_blocks(L->ffn_down, hp->n_ff / n_shards))
            return rtm_error(RT_ERR_UNSUPPORTED, "rtm_model_load: %d shards would cut the %s blocks "
                             "of layer %d's W_o or W_down", n_shards, rt_type_name(L->wo->type), il);
    }
    return RT_OK;
}

static void shard_layer(rt_context_t *ctx, rtm_layer_t *L, const rtm_hparams_t *hp, int32_t s,
                        int32_t n_shards) {
    const int64_t q = (int64_t)hp->head_dim * (hp->n_head / n_shards);
    const int64_t kv = (int64_t)hp->head_dim * (hp->n_head_kv / n_shards);
    const int64_t ff = hp->n_ff / n_shards;
    L->wq = rows(ctx, L->wq, s, q);
    L->wk = rows(ctx, L->wk, s, kv);
    L->wv = rows(ctx, L->wv, s, kv);
    L->wo = cols(ctx, L->wo, s, q);
    L->ffn_gate = rows(ctx, L->ffn_gate, s, ff);
    L->ffn_up = rows(ctx, L->ffn_up, s, ff);
    L->ffn_down = cols(ctx, L->ffn_down, s, ff);
}

rt_status_t rtm_model_shard(rtm_model_t *m, int32_t shard, int32_t n_shards) {
    if (n_shards <= 1) return RT_OK;
    if (shard < 0 || shard >= n_shards)
        return rtm_error(RT_ERR_INVALID_ARGUMENT, "rtm_model_load: shard %d of %d", shard, n_shards);
    rt_status_t st = check_split(m, n_shards);
    const rt_context_params_t p = {.struct_size = sizeof p, .no_alloc = true,
                                   .mem_size = 7 * (size_t)m->hp.n_layer * rt_tensor_overhead()};
    if (st == RT_OK && (st = rt_context_create(&p, &m->ctx_shard)) != RT_OK)
        return rtm_error_core(st, "rtm_model_load: shard context");
    for (int32_t il = m->layer_begin; st == RT_OK && il < m->layer_end; il++)
        shard_layer(m->ctx_shard, &m->layers[il], &m->hp, shard, n_shards);
    if (st != RT_OK) return st;
    m->hp.n_head /= n_shards;
    m->hp.n_head_kv /= n_shards;
    m->hp.n_ff /= n_shards;
    return RT_OK;
}
