/* SPDX-License-Identifier: MIT */
/* blocks.c: the shared pieces of every architecture's graph (blocks.h).
 *
 * Attention, per layer: this step's K and V are written into the layer's
 * cache by SET_ROWS at rows that an input names (the tokens' cells, of
 * any sequence: rows of K, columns of the transposed V; devices without
 * the op copy into views at n_past instead), and n_kv rows are read back
 * through views of the cache:
 *
 *   K   view {head_dim, n_kv, n_head_kv} of cache_k {n_embd_kv, n_ctx}
 *   V^T view {n_kv, head_dim, n_head_kv} of cache_v {n_ctx, n_embd_kv},
 *       which is stored transposed so that this view has contiguous rows
 *   KQ  = mul_mat(K, Q)  {n_kv, N, n_head}: query head h reads K head
 *         h / (n_head / n_head_kv) through mul_mat's broadcast (GQA)
 *   KQ  = soft_max_ext(KQ, mask, scale), mask -inf where the key's cell
 *         is another sequence's (or free), its position past the query's,
 *         or outside its window on a sliding-window layer
 *   KQV = mul_mat(V^T, KQ) {head_dim, N, n_head} -> permute, cont {n_head * head_dim, N}
 *
 * or, with fused attention (attn_fused.c), V kept a token a row as K is:
 *
 *   V   view {head_dim, n_kv, n_head_kv} of cache_v {n_embd_kv, n_ctx}
 *   KQV = flash_attn(permute(Q) {head_dim, N, n_head}, K, V, mask, scale,
 *         attn_softcap) {head_dim, n_head, N} -> reshape {n_head * head_dim, N}
 *
 * the same mask, GQA by the op's head groups, the soft cap inside the op.
 * The writes into the cache are expanded into the graph before the
 * attention reads the cache, so they run first. */
#include "blocks.h"

#include <math.h>

/* A part that does not embed starts from the hidden state it is given. */
rt_tensor_t *rtm_embed(rtm_build_t *b) {
    if (b->io->hidden_in != NULL) return b->io->hidden_in;
    return rt_get_rows(b->ctx, b->m->tok_embd, b->io->tokens);
}

rt_tensor_t *rtm_rms_norm(rtm_build_t *b, rt_tensor_t *x, rt_tensor_t *w) {
    return rt_mul(b->ctx, rt_rms_norm(b->ctx, x, b->hp->norm_eps), w);
}

rt_tensor_t *rtm_layer_norm(rtm_build_t *b, rt_tensor_t *x, rt_tensor_t *w, rt_tensor_t *bias) {
    return rt_add(b->ctx, rt_mul(b->ctx, rt_norm(b->ctx, x, b->hp->norm_eps), w), bias);
}

rt_tensor_t *rtm_linear(rtm_build_t *b, rt_tensor_t *w, rt_tensor_t *bias, rt_tensor_t *x) {
    rt_tensor_t *y = rt_mul_mat(b->ctx, w, x);
    return bias != NULL ? rt_add(b->ctx, y, bias) : y;
}

rt_tensor_t *rtm_heads(rtm_build_t *b, rt_tensor_t *x, int32_t n_head) {
    return rt_reshape_3d(b->ctx, x, b->hp->head_dim, n_head, b->n_tokens);
}

rt_tensor_t *rtm_split_heads(rtm_build_t *b, rt_tensor_t *x, int64_t first, int32_t n_head) {
    const int64_t hd = b->hp->head_dim;
    rt_tensor_t *v = rt_view_3d(b->ctx, x, hd, n_head, b->n_tokens, (size_t)hd * x->nb[0], x->nb[1],
                                (size_t)first * x->nb[0]);
    return rt_cont(b->ctx, v);
}

/* Rope with per-pair frequency factors, which the op has no input for:
 * x cos(theta) + rot(x) sin(theta), the angles computed by the context
 * (its cos/sin inputs, broadcast over the heads) and rot(x) the pairs
 * turned a quarter, (x0, x1) -> (-x1, x0), a product with a constant. */
static rt_tensor_t *rope_factored(rtm_build_t *b, rt_tensor_t *x) {
    rt_tensor_t *turned = rt_mul_mat(b->ctx, b->io->rope_rot, x);
    return rt_add(b->ctx, rt_mul(b->ctx, x, b->io->rope_cos), rt_mul(b->ctx, turned, b->io->rope_sin));
}

rt_tensor_t *rtm_rope(rtm_build_t *b, int32_t il, rt_tensor_t *x) {
    const rtm_hparams_t *hp = b->hp;
    const bool swa = rtm_layer_is_swa(hp, il);
    if (!hp->rope) return x;
    if (hp->rope_factors) return rope_factored(b, x);
    return rt_rope_ext(b->ctx, x, b->io->pos, hp->n_rot, hp->rope_mode,
                       swa ? hp->rope_freq_base_swa : hp->rope_freq_base,
                       swa ? 1.0f : hp->rope_freq_scale);
}

//===--- the KV cache ---===//

/* Writes this step's K {head_dim, n_head_kv, N} into the rows of layer
 * il's K cache {n_embd_kv, n_ctx} that the context gave the tokens, and V
 * {n_embd_kv, N} into the columns of its transposed cache {n_ctx,
 * n_embd_kv} there: rows of the transposed view. */
static void store_kv_rows(rtm_build_t *b, int32_t il, rt_tensor_t *k, rt_tensor_t *v) {
    rt_tensor_t *ck = b->kv->k[il], *cv = b->kv->v[il];
    rt_tensor_t *k_rows = rt_reshape_2d(b->ctx, k, rtm_n_embd_kv(b->hp), b->n_tokens);
    rt_tensor_t *v_dst = b->kv->fused ? cv : rt_transpose(b->ctx, cv);
    rt_graph_build_forward_expand(b->g, rt_set_rows(b->ctx, ck, k_rows, b->io->rows));
    rt_graph_build_forward_expand(b->g, rt_set_rows(b->ctx, v_dst, v, b->io->rows));
}

/* The same for devices without SET_ROWS: copies into views at rows
 * n_past.. (docs/memory.md §2.1), which ties the graph to n_past. */
static void store_kv_views(rtm_build_t *b, int32_t il, rt_tensor_t *k, rt_tensor_t *v) {
    rt_tensor_t *ck = b->kv->k[il], *cv = b->kv->v[il];
    const int64_t n_embd_kv = rtm_n_embd_kv(b->hp);
    rt_tensor_t *k_dst = rt_view_1d(b->ctx, ck, b->n_tokens * n_embd_kv, (size_t)b->n_past * ck->nb[1]);
    rt_graph_build_forward_expand(b->g, rt_cpy(b->ctx, k, k_dst));
    if (b->kv->fused) {
        rt_tensor_t *v_dst = rt_view_1d(b->ctx, cv, b->n_tokens * n_embd_kv, (size_t)b->n_past * cv->nb[1]);
        rt_graph_build_forward_expand(b->g, rt_cpy(b->ctx, v, v_dst));
        return;
    }
    rt_tensor_t *v_dst = rt_view_2d(b->ctx, cv, b->n_tokens, n_embd_kv, cv->nb[1],
                                    (size_t)b->n_past * cv->nb[0]);
    rt_graph_build_forward_expand(b->g, rt_cpy(b->ctx, rt_transpose(b->ctx, v), v_dst));
}

static void store_kv(rtm_build_t *b, int32_t il, rt_tensor_t *k, rt_tensor_t *v) {
    if (b->kv->by_rows)
        store_kv_rows(b, il, k, v);
    else
        store_kv_views(b, il, k, v);
}

/* c * tanh(x * pre / c): x * pre bounded to (-c, c), near-linear well inside. */
static rt_tensor_t *softcap(rtm_build_t *b, rt_tensor_t *x, float pre, float c) {
    return rt_scale(b->ctx, rt_tanh(b->ctx, rt_scale(b->ctx, x, pre / c)), c);
}

/* The first n_kv rows of a cache {n_embd_kv, n_ctx} as {head_dim, n_kv, n_head_kv}. */
static rt_tensor_t *cache_heads(rtm_build_t *b, rt_tensor_t *c) {
    const int64_t hd = b->hp->head_dim;
    return rt_view_3d(b->ctx, c, hd, b->n_kv, b->hp->n_head_kv, c->nb[1], (size_t)hd * c->nb[0], 0);
}

/* The same in one FLASH_ATTN: q {head_dim, n_head, N} read as {head_dim,
 * N, n_head}, the cap (scale before it) inside the op. */
static rt_tensor_t *attend_fused(rtm_build_t *b, int32_t il, rt_tensor_t *q, rt_tensor_t *mask, float scale) {
    rt_tensor_t *k = cache_heads(b, b->kv->k[il]), *v = cache_heads(b, b->kv->v[il]);
    rt_tensor_t *o = rt_flash_attn(b->ctx, rt_permute(b->ctx, q, 0, 2, 1, 3), k, v, mask, scale,
                                   b->hp->attn_softcap);
    return rt_reshape_2d(b->ctx, o, rtm_n_embd_q(b->hp), b->n_tokens);
}

/* softmax(K^T Q * scale + mask) applied to V, heads side by side; the
 * logits soft-capped first where the hyperparameters ask. */
static rt_tensor_t *attend(rtm_build_t *b, int32_t il, rt_tensor_t *q, float scale) {
    const rtm_hparams_t *hp = b->hp;
    rt_tensor_t *mask = rtm_layer_is_swa(hp, il) ? b->io->mask_swa : b->io->mask;
    if (b->kv->fused) return attend_fused(b, il, q, mask, scale);
    rt_tensor_t *cv = b->kv->v[il];
    const int64_t hd = hp->head_dim;
    rt_tensor_t *k = cache_heads(b, b->kv->k[il]);
    rt_tensor_t *vt = rt_view_3d(b->ctx, cv, b->n_kv, hd, hp->n_head_kv, cv->nb[1], (size_t)hd * cv->nb[1], 0);
    rt_tensor_t *kq = rt_mul_mat(b->ctx, k, rt_permute(b->ctx, q, 0, 2, 1, 3));
    if (hp->attn_softcap != 0) { /* the scale goes before the cap (Gemma 2) */
        kq = softcap(b, kq, scale, hp->attn_softcap);
        scale = 1.0f;
    }
    kq = rt_soft_max_ext(b->ctx, kq, mask, scale);
    rt_tensor_t *kqv = rt_mul_mat(b->ctx, vt, kq);
    return rt_cont_2d(b->ctx, rt_permute(b->ctx, kqv, 0, 2, 1, 3), rtm_n_embd_q(hp), b->n_tokens);
}

rt_tensor_t *rtm_attention(rtm_build_t *b, int32_t il, rt_tensor_t *q, rt_tensor_t *k, rt_tensor_t *v,
                           float scale) {
    store_kv(b, il, k, v);
    return attend(b, il, q, scale);
}

/* Separate projections, each with its bias where the file has one, per
 * head RMS norms of Q and K where it has them (Qwen 3, Gemma 3), rope,
 * attention scaled by 1/sqrt(head_dim), the output projection. */
rt_tensor_t *rtm_self_attention(rtm_build_t *b, int32_t il, rt_tensor_t *x) {
    const rtm_layer_t *L = rtm_layer(b, il);
    rt_tensor_t *q = rtm_heads(b, rtm_linear(b, L->wq, L->bq, x), b->hp->n_head);
    rt_tensor_t *k = rtm_heads(b, rtm_linear(b, L->wk, L->bk, x), b->hp->n_head_kv);
    rt_tensor_t *v = rtm_linear(b, L->wv, L->bv, x);
    if (L->q_norm != NULL) q = rtm_rms_norm(b, q, L->q_norm);
    if (L->k_norm != NULL) k = rtm_rms_norm(b, k, L->k_norm);
    const float scale = 1.0f / sqrtf((float)b->hp->head_dim);
    rt_tensor_t *a = rtm_attention(b, il, rtm_rope(b, il, q), rtm_rope(b, il, k), v, scale);
    return rtm_linear(b, L->wo, L->bo, a);
}

//===--- feed-forward ---===//

rt_tensor_t *rtm_ffn_swiglu(rtm_build_t *b, const rtm_layer_t *L, rt_tensor_t *x) {
    rt_tensor_t *gate = rt_mul_mat(b->ctx, L->ffn_gate, x);
    rt_tensor_t *up = rt_mul_mat(b->ctx, L->ffn_up, x);
    return rt_mul_mat(b->ctx, L->ffn_down, rt_swiglu(b->ctx, gate, up));
}

rt_tensor_t *rtm_ffn_geglu(rtm_build_t *b, const rtm_layer_t *L, rt_tensor_t *x) {
    rt_tensor_t *gate = rt_mul_mat(b->ctx, L->ffn_gate, x);
    rt_tensor_t *up = rt_mul_mat(b->ctx, L->ffn_up, x);
    return rt_mul_mat(b->ctx, L->ffn_down, rt_mul(b->ctx, rt_gelu(b->ctx, gate), up));
}

rt_tensor_t *rtm_ffn_gelu(rtm_build_t *b, const rtm_layer_t *L, rt_tensor_t *x) {
    rt_tensor_t *up = rtm_linear(b, L->ffn_up, L->ffn_up_b, x);
    return rtm_linear(b, L->ffn_down, L->ffn_down_b, rt_gelu(b->ctx, up));
}

//===--- the output head ---===//

rt_tensor_t *rtm_head_rows(rtm_build_t *b, rt_tensor_t *x) {
    if (b->io->out_ids != NULL) return rt_get_rows(b->ctx, x, b->io->out_ids);
    if (b->all_logits) return x;
    return rt_view_2d(b->ctx, x, x->ne[0], 1, x->nb[1], (size_t)(b->n_tokens - 1) * x->nb[1]);
}

void rtm_output(rtm_build_t *b, rt_tensor_t *t, const char *name) {
    b->io->logits = rt_set_name(t, name);
    rt_set_output(t);
    rt_graph_build_forward_expand(b->g, t);
}

void rtm_hidden_out(rtm_build_t *b, rt_tensor_t *x) {
    b->io->hidden_out = rt_set_name(x, "hidden_out");
    rt_set_output(x);
    rt_graph_build_forward_expand(b->g, x);
}

void rtm_logits(rtm_build_t *b, rt_tensor_t *x) {
    if (b->hidden) {
        rtm_output(b, x, "hidden");
        return;
    }
    rt_tensor_t *logits = rt_mul_mat(b->ctx, b->m->output, x);
    const float c = b->hp->logit_softcap;
    rtm_output(b, c != 0 ? softcap(b, logits, 1.0f, c) : logits, "logits");
}
