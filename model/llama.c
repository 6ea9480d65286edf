/* SPDX-License-Identifier: MIT */
/* llama.c: the llama forward graph for one ubatch of n_tokens new tokens
 * whose attention reads n_kv rows of the cache:
 *
 *   x = get_rows(token_embd, tokens)                          {n_embd, N}
 *   per layer: h = x + W_o . attention(rms_norm(x) * attn_norm)
 *              x = h + W_down . swiglu(W_gate . n, W_up . n), n = rms_norm(h) * ffn_norm
 *   logits = output . (rms_norm(x) * output_norm)              last token, or all
 *
 * Attention, per layer: Q, K, V projections, rope (NORMAL mode: the
 * converter permuted W_q and W_k for it) on Q and K, then this step's K
 * and V are written into the layer's cache by SET_ROWS at rows that inputs
 * name (the tokens' positions: rows of K, columns of the transposed V;
 * devices without the op copy into views at n_past instead),
 * and n_kv rows are read back through views of the cache:
 *
 *   K   view {head_dim, n_kv, n_head_kv} of cache_k {n_embd_kv, n_ctx}
 *   V^T view {n_kv, head_dim, n_head_kv} of cache_v {n_ctx, n_embd_kv},
 *       which is stored transposed so that this view has contiguous rows
 *   KQ  = mul_mat(K, Q)  {n_kv, N, n_head}: query head h reads K head
 *         h / (n_head / n_head_kv) through mul_mat's broadcast (GQA)
 *   KQ  = soft_max_ext(KQ, mask, 1/sqrt(head_dim)), mask -inf where the
 *         key position is past the query's (and on rows not yet written)
 *   KQV = mul_mat(V^T, KQ) {head_dim, N, n_head} -> permute, cont {n_embd, N}
 *
 * The writes into the cache are expanded into the graph before the
 * attention reads the cache, so they run first. Every ubatch of a context
 * builds the same structure (only sizes change), which is what lets the
 * compute buffers reserved once for the largest one serve them all; and,
 * written by rows, nothing in it depends on n_past, so the same graph runs
 * again while n_tokens and n_kv stay (context.c). */
#include "model_impl.h"

#include <math.h>

typedef struct build {
    const rtm_model_t *m;
    const rtm_hparams_t *hp;
    const rtm_kv_cache_t *kv;
    rt_context_t *ctx;
    rt_graph_t *g;
    int32_t n_tokens, n_kv, n_past;
    rt_tensor_t *pos, *mask;
} build_t;

int32_t rtm_llama_graph_size(const rtm_hparams_t *hp) {
    return 40 * hp->n_layer + 64; /* 31 nodes per layer, and the ends */
}

static rt_tensor_t *norm(build_t *b, rt_tensor_t *x, rt_tensor_t *w) {
    return rt_mul(b->ctx, rt_rms_norm(b->ctx, x, b->hp->norm_eps), w);
}

static rt_tensor_t *rope(build_t *b, rt_tensor_t *x) {
    return rt_rope_ext(b->ctx, x, b->pos, b->hp->n_rot, RT_ROPE_MODE_NORMAL, b->hp->rope_freq_base, 1.0f);
}

/* Writes this step's K {head_dim, n_head_kv, N} into the rows of layer
 * il's K cache {n_embd_kv, n_ctx} at the tokens' positions, and V
 * {n_embd_kv, N} into the columns of its transposed cache {n_ctx,
 * n_embd_kv} there: rows of the transposed view. */
static void store_kv_rows(build_t *b, int32_t il, rt_tensor_t *k, rt_tensor_t *v) {
    rt_tensor_t *ck = b->kv->k[il], *cv = b->kv->v[il];
    rt_tensor_t *k_rows = rt_reshape_2d(b->ctx, k, rtm_n_embd_kv(b->hp), b->n_tokens);
    rt_graph_build_forward_expand(b->g, rt_set_rows(b->ctx, ck, k_rows, b->pos));
    rt_graph_build_forward_expand(b->g, rt_set_rows(b->ctx, rt_transpose(b->ctx, cv), v, b->pos));
}

/* The same for devices without SET_ROWS: copies into views at rows
 * n_past.. (the seed's 2.1), which ties the graph to n_past. */
static void store_kv_views(build_t *b, int32_t il, rt_tensor_t *k, rt_tensor_t *v) {
    rt_tensor_t *ck = b->kv->k[il], *cv = b->kv->v[il];
    const int64_t n_embd_kv = rtm_n_embd_kv(b->hp);
    rt_tensor_t *k_dst = rt_view_1d(b->ctx, ck, b->n_tokens * n_embd_kv, (size_t)b->n_past * ck->nb[1]);
    rt_tensor_t *v_dst = rt_view_2d(b->ctx, cv, b->n_tokens, n_embd_kv, cv->nb[1],
                                    (size_t)b->n_past * cv->nb[0]);
    rt_graph_build_forward_expand(b->g, rt_cpy(b->ctx, k, k_dst));
    rt_graph_build_forward_expand(b->g, rt_cpy(b->ctx, rt_transpose(b->ctx, v), v_dst));
}

static void store_kv(build_t *b, int32_t il, rt_tensor_t *k, rt_tensor_t *v) {
    if (b->kv->by_rows)
        store_kv_rows(b, il, k, v);
    else
        store_kv_views(b, il, k, v);
}

/* softmax(K^T Q / sqrt(d) + mask) applied to V, heads side by side. */
static rt_tensor_t *attend(build_t *b, int32_t il, rt_tensor_t *q) {
    const rtm_hparams_t *hp = b->hp;
    rt_tensor_t *ck = b->kv->k[il], *cv = b->kv->v[il];
    const int64_t hd = hp->head_dim;
    rt_tensor_t *k = rt_view_3d(b->ctx, ck, hd, b->n_kv, hp->n_head_kv, ck->nb[1], (size_t)hd * ck->nb[0], 0);
    rt_tensor_t *vt = rt_view_3d(b->ctx, cv, b->n_kv, hd, hp->n_head_kv, cv->nb[1], (size_t)hd * cv->nb[1], 0);
    rt_tensor_t *kq = rt_mul_mat(b->ctx, k, rt_permute(b->ctx, q, 0, 2, 1, 3));
    kq = rt_soft_max_ext(b->ctx, kq, b->mask, 1.0f / sqrtf((float)hd));
    rt_tensor_t *kqv = rt_mul_mat(b->ctx, vt, kq);
    return rt_cont_2d(b->ctx, rt_permute(b->ctx, kqv, 0, 2, 1, 3), hd * hp->n_head, b->n_tokens);
}

static rt_tensor_t *attention(build_t *b, int32_t il, rt_tensor_t *x) {
    const rtm_layer_t *L = &b->m->layers[il];
    const rtm_hparams_t *hp = b->hp;
    rt_tensor_t *q = rt_reshape_3d(b->ctx, rt_mul_mat(b->ctx, L->wq, x), hp->head_dim, hp->n_head, b->n_tokens);
    rt_tensor_t *k = rt_reshape_3d(b->ctx, rt_mul_mat(b->ctx, L->wk, x), hp->head_dim, hp->n_head_kv, b->n_tokens);
    rt_tensor_t *v = rt_mul_mat(b->ctx, L->wv, x);
    store_kv(b, il, rope(b, k), v);
    return rt_mul_mat(b->ctx, L->wo, attend(b, il, rope(b, q)));
}

static rt_tensor_t *ffn(build_t *b, const rtm_layer_t *L, rt_tensor_t *x) {
    rt_tensor_t *gate = rt_mul_mat(b->ctx, L->ffn_gate, x);
    rt_tensor_t *up = rt_mul_mat(b->ctx, L->ffn_up, x);
    return rt_mul_mat(b->ctx, L->ffn_down, rt_swiglu(b->ctx, gate, up));
}

static rt_tensor_t *layer(build_t *b, int32_t il, rt_tensor_t *x) {
    const rtm_layer_t *L = &b->m->layers[il];
    rt_tensor_t *h = rt_add(b->ctx, attention(b, il, norm(b, x, L->attn_norm)), x);
    return rt_add(b->ctx, ffn(b, L, norm(b, h, L->ffn_norm)), h);
}

static rt_tensor_t *input(rt_tensor_t *t, const char *name) {
    rt_set_input(t);
    return rt_set_name(t, name);
}

/* The layers (or the one block) of the part; a block gives its output
 * before the residual add. */
static rt_tensor_t *part_body(build_t *b, const rtm_part_t *part, rt_tensor_t *x) {
    const rtm_layer_t *L = &b->m->layers[part->layer_begin];
    if (part->block == RTM_BLOCK_ATTN) return attention(b, part->layer_begin, norm(b, x, L->attn_norm));
    if (part->block == RTM_BLOCK_FFN) return ffn(b, L, norm(b, x, L->ffn_norm));
    for (int32_t il = part->layer_begin; il < part->layer_end; il++) x = layer(b, il, x);
    return x;
}

/* Inputs only where the part reads them: an input left out of the graph
 * would have no bytes to be written into. */
static rt_tensor_t *part_inputs(build_t *b, const rtm_ubatch_t *ub, rtm_graph_io_t *io) {
    *io = (rtm_graph_io_t){.graph = b->g};
    if (rtm_part_attends(&ub->part)) {
        io->pos = b->pos = input(rt_new_tensor_1d(b->ctx, RT_TYPE_I32, b->n_tokens), "positions");
        io->mask = b->mask = input(rt_new_tensor_2d(b->ctx, RT_TYPE_F32, b->n_kv, b->n_tokens), "kq_mask");
    }
    if (!rtm_part_embeds(&ub->part))
        return io->hidden_in = input(rt_new_tensor_2d(b->ctx, RT_TYPE_F32, b->hp->n_embd, b->n_tokens),
                                     "hidden_in");
    io->tokens = input(rt_new_tensor_1d(b->ctx, RT_TYPE_I32, b->n_tokens), "tokens");
    return rt_get_rows(b->ctx, b->m->tok_embd, io->tokens);
}

void rtm_llama_build(const rtm_model_t *m, const rtm_kv_cache_t *kv, rt_context_t *ctx,
                     const rtm_ubatch_t *ub, rtm_graph_io_t *io) {
    build_t b = {m, &m->hp, kv, ctx, rt_graph_create(ctx, (size_t)rtm_llama_graph_size(&m->hp)),
                 ub->n_tokens, ub->n_kv, ub->n_past, NULL, NULL};
    rt_tensor_t *x = part_body(&b, &ub->part, part_inputs(&b, ub, io));
    if (!rtm_part_heads(&ub->part, m->hp.n_layer)) {
        io->hidden_out = rt_set_name(x, "hidden_out");
        rt_set_output(x);
        rt_graph_build_forward_expand(b.g, x);
        return;
    }
    if (!ub->all_logits)
        x = rt_view_2d(ctx, x, m->hp.n_embd, 1, x->nb[1], (size_t)(b.n_tokens - 1) * x->nb[1]);
    io->logits = rt_mul_mat(ctx, m->output, norm(&b, x, m->output_norm));
    rt_set_output(rt_set_name(io->logits, "logits"));
    rt_graph_build_forward_expand(b.g, io->logits);
}
