/* SPDX-License-Identifier: MIT */
/* graph.c: the graph of one ubatch, the same frame for every
 * architecture: the inputs (tokens, their positions, the cache rows
 * written, the attention masks, the rows whose logits are kept), then the architecture's
 * build function, which ends in the logits. Every ubatch of a context
 * builds the same structure (only sizes change), which is what lets the
 * compute buffers reserved once for the largest one serve them all; and,
 * with the cache written by rows, nothing in it depends on n_past, so the
 * same graph runs again while n_tokens and n_kv stay (context.c). */
#include "blocks.h"

int32_t rtm_graph_size(const rtm_hparams_t *hp) {
    return 64 * hp->n_layer + 64; /* at most ~50 nodes per layer (Gemma 3), and the ends */
}

static rt_tensor_t *input(rt_tensor_t *t, const char *name) {
    rt_set_input(t);
    return rt_set_name(t, name);
}

void rtm_graph_build(const rtm_model_t *m, const rtm_kv_cache_t *kv, rt_context_t *ctx,
                     const rtm_ubatch_t *ub, rtm_graph_io_t *io) {
    *io = (rtm_graph_io_t){.graph = rt_graph_create(ctx, (size_t)rtm_graph_size(&m->hp))};
    rtm_build_t b = {m, &m->hp, kv, ctx, io->graph, ub->n_tokens, ub->n_kv, ub->n_past,
                     ub->all_logits, io, &ub->part, ub->hidden};
    /* a part has only the inputs it reads: one left out of the graph would
       have no bytes to be written into */
    const bool embeds = rtm_part_embeds(&ub->part), attends = rtm_part_attends(&ub->part);
    if (embeds) io->tokens = input(rt_new_tensor_1d(ctx, RT_TYPE_I32, b.n_tokens), "tokens");
    else io->hidden_in = input(rt_new_tensor_2d(ctx, RT_TYPE_F32, m->hp.n_embd, b.n_tokens), "hidden_in");
    /* positions: read by rope (not the factored one, whose angles are inputs) or by
       the embedding of learned positions */
    const bool ropes = attends && m->hp.rope && !m->hp.rope_factors;
    if (ropes || (embeds && m->pos_embd != NULL))
        io->pos = input(rt_new_tensor_1d(ctx, RT_TYPE_I32, b.n_tokens), "positions");
    if (attends && kv->by_rows) io->rows = input(rt_new_tensor_1d(ctx, RT_TYPE_I32, b.n_tokens), "kv_rows");
    if (attends) io->mask = input(rt_new_tensor_2d(ctx, RT_TYPE_F32, b.n_kv, b.n_tokens), "kq_mask");
    if (ub->n_out_ids > 0) io->out_ids = input(rt_new_tensor_1d(ctx, RT_TYPE_I32, ub->n_out_ids), "out_ids");
    if (m->hp.embeddings)
        io->pool = input(rt_new_tensor_2d(ctx, RT_TYPE_F32, b.n_tokens, 1), "pool");
    if (m->hp.rope_factors && attends) {
        io->rope_cos = input(rt_new_tensor_3d(ctx, RT_TYPE_F32, m->hp.n_rot, 1, b.n_tokens), "rope_cos");
        io->rope_sin = input(rt_new_tensor_3d(ctx, RT_TYPE_F32, m->hp.n_rot, 1, b.n_tokens), "rope_sin");
        io->rope_rot = input(rt_new_tensor_2d(ctx, RT_TYPE_F32, m->hp.n_rot, m->hp.n_rot), "rope_rot");
    }
    if (m->hp.n_swa > 0 && attends)
        io->mask_swa = input(rt_new_tensor_2d(ctx, RT_TYPE_F32, b.n_kv, b.n_tokens), "kq_mask_swa");
    m->desc->build(&b);
}
