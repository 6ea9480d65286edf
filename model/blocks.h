/* SPDX-License-Identifier: MIT */
/* blocks.h: the pieces architectures build their graphs from (blocks.c),
 * over one rtm_build_t that holds the ubatch's inputs. An architecture's
 * build function reads as its equations:
 *
 *     rt_tensor_t *x = rtm_embed(b);
 *     for (int32_t il = 0; il < b->hp->n_layer; il++) x = layer(b, il, x);
 *     rtm_logits(b, rtm_rms_norm(b, rtm_head_rows(b, x), b->m->output_norm));
 *
 * with layer() made of rtm_rms_norm / rtm_layer_norm, the projections,
 * rtm_rope, rtm_attention (which writes the KV cache and reads it back:
 * GQA, the causal or sliding-window mask) and one of the feed-forwards. */
#ifndef RTM_BLOCKS_H
#define RTM_BLOCKS_H

#include "arch.h"

struct rtm_build {
    const rtm_model_t *m;
    const rtm_hparams_t *hp;
    const rtm_kv_cache_t *kv;
    rt_context_t *ctx;
    rt_graph_t *g;
    int32_t n_tokens, n_kv, n_past;
    bool all_logits;
    rtm_graph_io_t *io;      /* inputs set; the architecture sets logits */
    const rtm_part_t *part;  /* what to build: every layer, or a part (rtm_decode_part) */
    bool hidden;             /* rtm_logits outputs the normed hidden state, not logits */
};

static inline const rtm_layer_t *rtm_layer(const rtm_build_t *b, int32_t il) { return &b->m->layers[il]; }

/* get_rows(token_embd, tokens) {n_embd, N} */
RTM_INTERNAL rt_tensor_t *rtm_embed(rtm_build_t *b);
/* rms_norm(x) * w */
RTM_INTERNAL rt_tensor_t *rtm_rms_norm(rtm_build_t *b, rt_tensor_t *x, rt_tensor_t *w);
/* norm(x) * w + bias */
RTM_INTERNAL rt_tensor_t *rtm_layer_norm(rtm_build_t *b, rt_tensor_t *x, rt_tensor_t *w, rt_tensor_t *bias);
/* w . x (+ bias when not NULL) */
RTM_INTERNAL rt_tensor_t *rtm_linear(rtm_build_t *b, rt_tensor_t *w, rt_tensor_t *bias, rt_tensor_t *x);
/* {n_head * head_dim, N} as {head_dim, n_head, N} */
RTM_INTERNAL rt_tensor_t *rtm_heads(rtm_build_t *b, rt_tensor_t *x, int32_t n_head);
/* Rows [first, first + n_head * head_dim) of a fused projection {.., N},
 * as contiguous {head_dim, n_head, N}. */
RTM_INTERNAL rt_tensor_t *rtm_split_heads(rtm_build_t *b, rt_tensor_t *x, int64_t first, int32_t n_head);
/* Rope of layer il on {head_dim, n_head, N}: the hyperparameters' mode,
 * and the base and scale of a sliding-window or a global layer; x itself
 * for an architecture without rope. */
RTM_INTERNAL rt_tensor_t *rtm_rope(rtm_build_t *b, int32_t il, rt_tensor_t *x);
/* Writes k {head_dim, n_head_kv, N} and v {n_embd_kv, N} into layer il's
 * cache, then softmax(K^T q * scale + mask) V over its n_kv rows, the mask
 * of the layer's kind: {n_head * head_dim, N}, before the output projection. */
RTM_INTERNAL rt_tensor_t *rtm_attention(rtm_build_t *b, int32_t il, rt_tensor_t *q, rt_tensor_t *k,
                                        rt_tensor_t *v, float scale);
/* W_o . attention(rope(q_norm(W_q . x + b_q)), rope(k_norm(W_k . x + b_k)),
 * W_v . x + b_v) + b_o, each bias and norm where layer il has it. */
RTM_INTERNAL rt_tensor_t *rtm_self_attention(rtm_build_t *b, int32_t il, rt_tensor_t *x);
/* down . (silu(gate . x) * (up . x)) */
RTM_INTERNAL rt_tensor_t *rtm_ffn_swiglu(rtm_build_t *b, const rtm_layer_t *L, rt_tensor_t *x);
/* down . (gelu(gate . x) * (up . x)) */
RTM_INTERNAL rt_tensor_t *rtm_ffn_geglu(rtm_build_t *b, const rtm_layer_t *L, rt_tensor_t *x);
/* down . gelu(up . x + up_b) + down_b */
RTM_INTERNAL rt_tensor_t *rtm_ffn_gelu(rtm_build_t *b, const rtm_layer_t *L, rt_tensor_t *x);
/* x reduced to the rows whose logits are wanted: the last token's, every
 * row with all_logits, or the rows out_ids names (the head's norm then
 * runs on those alone). */
RTM_INTERNAL rt_tensor_t *rtm_head_rows(rtm_build_t *b, rt_tensor_t *x);
/* t, named, as the graph's output (b->io->logits). */
RTM_INTERNAL void rtm_output(rtm_build_t *b, rt_tensor_t *t, const char *name);
/* logits = output . x, soft-capped where final_logit_softcapping asks: the
 * graph's output; x itself (the final hidden state) when b->hidden. */
RTM_INTERNAL void rtm_logits(rtm_build_t *b, rt_tensor_t *x);
/* A part short of the head ends with the hidden state x (io->hidden_out). */
RTM_INTERNAL void rtm_hidden_out(rtm_build_t *b, rt_tensor_t *x);

#endif /* RTM_BLOCKS_H */
