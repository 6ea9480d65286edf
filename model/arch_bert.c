/* SPDX-License-Identifier: MIT */
/* arch_bert.c: BERT as a sentence encoder (all-MiniLM-L6-v2, bge):
 *
 *   x = layer_norm(get_rows(token_embd, tokens) + token_types[0] + get_rows(position_embd, positions))
 *   per layer: h = layer_norm(x + W_o . attention(x) + b_o)             attn_output_norm
 *              x = layer_norm(h + W_down . gelu(W_up . h + b_up) + b_down)  layer_output_norm
 *   embedding = normalise(mean over the tokens of x)
 *
 * every norm a LayerNorm with weight and bias (norms after the residual
 * add, unlike GPT-2), Q, K and V projections with biases, no rope: learned
 * positions. Attention is bidirectional (the context's mask lets every
 * token see the whole input, which therefore goes in one ubatch). Every
 * token has type 0 (one sentence). The mean is a product with the pooling
 * input (1/n_tokens each); x / |x| is rms_norm(x) / sqrt(n_embd). */
#include "blocks.h"

#include <math.h>

static const rtm_hparam_key_t keys[] = {
    RTM_HP_FLOAT("attention.layer_norm_epsilon", norm_eps, 1e-12),
};

#define NORM(name, w, b) \
    {name ".weight", RTM_LAYER(w), RTM_DIM_EMBD, RTM_DIM_NONE, RTM_T_F32}, \
    {name ".bias", RTM_LAYER(b), RTM_DIM_EMBD, RTM_DIM_NONE, RTM_T_F32}

static const rtm_tensor_spec_t tensors[] = {
    {"token_embd.weight", RTM_GLOBAL(tok_embd), RTM_DIM_EMBD, RTM_DIM_VOCAB, 0},
    {"token_types.weight", RTM_GLOBAL(type_embd), RTM_DIM_EMBD, RTM_DIM_TYPES, RTM_T_F32},
    {"position_embd.weight", RTM_GLOBAL(pos_embd), RTM_DIM_EMBD, RTM_DIM_CTX, 0},
    {"token_embd_norm.weight", RTM_GLOBAL(embd_norm), RTM_DIM_EMBD, RTM_DIM_NONE, RTM_T_F32},
    {"token_embd_norm.bias", RTM_GLOBAL(embd_norm_b), RTM_DIM_EMBD, RTM_DIM_NONE, RTM_T_F32},
    {"attn_q.weight", RTM_LAYER(wq), RTM_DIM_EMBD, RTM_DIM_Q, RTM_T_MATRIX},
    {"attn_q.bias", RTM_LAYER(bq), RTM_DIM_Q, RTM_DIM_NONE, RTM_T_F32},
    {"attn_k.weight", RTM_LAYER(wk), RTM_DIM_EMBD, RTM_DIM_KV, RTM_T_MATRIX},
    {"attn_k.bias", RTM_LAYER(bk), RTM_DIM_KV, RTM_DIM_NONE, RTM_T_F32},
    {"attn_v.weight", RTM_LAYER(wv), RTM_DIM_EMBD, RTM_DIM_KV, RTM_T_MATRIX},
    {"attn_v.bias", RTM_LAYER(bv), RTM_DIM_KV, RTM_DIM_NONE, RTM_T_F32},
    {"attn_output.weight", RTM_LAYER(wo), RTM_DIM_Q, RTM_DIM_EMBD, RTM_T_MATRIX},
    {"attn_output.bias", RTM_LAYER(bo), RTM_DIM_EMBD, RTM_DIM_NONE, RTM_T_F32},
    NORM("attn_output_norm", attn_post_norm, attn_post_norm_b),
    {"ffn_up.weight", RTM_LAYER(ffn_up), RTM_DIM_EMBD, RTM_DIM_FF, RTM_T_MATRIX},
    {"ffn_up.bias", RTM_LAYER(ffn_up_b), RTM_DIM_FF, RTM_DIM_NONE, RTM_T_F32},
    {"ffn_down.weight", RTM_LAYER(ffn_down), RTM_DIM_FF, RTM_DIM_EMBD, RTM_T_MATRIX},
    {"ffn_down.bias", RTM_LAYER(ffn_down_b), RTM_DIM_EMBD, RTM_DIM_NONE, RTM_T_F32},
    NORM("layer_output_norm", ffn_post_norm, ffn_post_norm_b),
};

static rt_tensor_t *layer(rtm_build_t *b, int32_t il, rt_tensor_t *x) {
    const rtm_layer_t *L = rtm_layer(b, il);
    rt_tensor_t *h = rt_add(b->ctx, rtm_self_attention(b, il, x), x);
    h = rtm_layer_norm(b, h, L->attn_post_norm, L->attn_post_norm_b);
    rt_tensor_t *y = rt_add(b->ctx, rtm_ffn_gelu(b, L, h), h);
    return rtm_layer_norm(b, y, L->ffn_post_norm, L->ffn_post_norm_b);
}

static rt_tensor_t *embed(rtm_build_t *b) {
    const rtm_model_t *m = b->m;
    rt_tensor_t *type0 = rt_view_1d(b->ctx, m->type_embd, b->hp->n_embd, 0);
    rt_tensor_t *x = rt_add(b->ctx, rt_add(b->ctx, rtm_embed(b), type0),
                            rt_get_rows(b->ctx, m->pos_embd, b->io->pos));
    return rtm_layer_norm(b, x, m->embd_norm, m->embd_norm_b);
}

/* {n_embd, N} -> the unit-length mean {n_embd, 1}. */
static rt_tensor_t *pool(rtm_build_t *b, rt_tensor_t *x) {
    rt_tensor_t *xt = rt_cont(b->ctx, rt_transpose(b->ctx, x));   /* {N, n_embd} */
    rt_tensor_t *mean = rt_mul_mat(b->ctx, xt, b->io->pool);      /* {n_embd, 1} */
    return rt_scale(b->ctx, rt_rms_norm(b->ctx, mean, 1e-12f), 1.0f / sqrtf((float)b->hp->n_embd));
}

static void build(rtm_build_t *b) {
    rt_tensor_t *x = embed(b);
    for (int32_t il = 0; il < b->hp->n_layer; il++) x = layer(b, il, x);
    rtm_output(b, pool(b, x), "embedding");
}

const rtm_arch_t rtm_arch_bert = {
    .name = "bert", .keys = keys, .n_keys = RTM_COUNT(keys), .no_rope = true, .bidirectional = true,
    .embeddings = true, .tensors = tensors, .n_tensors = RTM_COUNT(tensors), .build = build,
};
