/* SPDX-License-Identifier: MIT */
/* arch_gpt2.c: GPT-2:
 *
 *   x = get_rows(token_embd, tokens) + get_rows(position_embd, positions)
 *   per layer: h = x + W_o . attention(layer_norm(x)) + b_o
 *              x = h + W_down . gelu(W_up . layer_norm(h) + b_up) + b_down
 *   logits = output . layer_norm(x)
 *
 * every norm a LayerNorm with weight and bias, positions learned (no
 * rope), Q, K and V one fused projection with its bias {n_embd, 3 n_embd}
 * whose output rows are split into the three. */
#include "blocks.h"

#include <math.h>

static const rtm_hparam_key_t keys[] = {
    RTM_HP_FLOAT("attention.layer_norm_epsilon", norm_eps, 1e-5),
};

static const rtm_tensor_spec_t tensors[] = {
    {"token_embd.weight", RTM_GLOBAL(tok_embd), RTM_DIM_EMBD, RTM_DIM_VOCAB, 0},
    {"position_embd.weight", RTM_GLOBAL(pos_embd), RTM_DIM_EMBD, RTM_DIM_CTX, 0},
    {"output_norm.weight", RTM_GLOBAL(output_norm), RTM_DIM_EMBD, RTM_DIM_NONE, RTM_T_F32 | RTM_T_OUTPUT},
    {"output_norm.bias", RTM_GLOBAL(output_norm_b), RTM_DIM_EMBD, RTM_DIM_NONE, RTM_T_F32 | RTM_T_OUTPUT},
    {"output.weight", RTM_GLOBAL(output), RTM_DIM_EMBD, RTM_DIM_VOCAB,
     RTM_T_MATRIX | RTM_T_TIED | RTM_T_OUTPUT},
    {"attn_norm.weight", RTM_LAYER(attn_norm), RTM_DIM_EMBD, RTM_DIM_NONE, RTM_T_F32},
    {"attn_norm.bias", RTM_LAYER(attn_norm_b), RTM_DIM_EMBD, RTM_DIM_NONE, RTM_T_F32},
    {"attn_qkv.weight", RTM_LAYER(wqkv), RTM_DIM_EMBD, RTM_DIM_QKV, RTM_T_MATRIX},
    {"attn_qkv.bias", RTM_LAYER(bqkv), RTM_DIM_QKV, RTM_DIM_NONE, RTM_T_F32},
    {"attn_output.weight", RTM_LAYER(wo), RTM_DIM_Q, RTM_DIM_EMBD, RTM_T_MATRIX},
    {"attn_output.bias", RTM_LAYER(bo), RTM_DIM_EMBD, RTM_DIM_NONE, RTM_T_F32},
    {"ffn_norm.weight", RTM_LAYER(ffn_norm), RTM_DIM_EMBD, RTM_DIM_NONE, RTM_T_F32},
    {"ffn_norm.bias", RTM_LAYER(ffn_norm_b), RTM_DIM_EMBD, RTM_DIM_NONE, RTM_T_F32},
    {"ffn_up.weight", RTM_LAYER(ffn_up), RTM_DIM_EMBD, RTM_DIM_FF, RTM_T_MATRIX},
    {"ffn_up.bias", RTM_LAYER(ffn_up_b), RTM_DIM_FF, RTM_DIM_NONE, RTM_T_F32},
    {"ffn_down.weight", RTM_LAYER(ffn_down), RTM_DIM_FF, RTM_DIM_EMBD, RTM_T_MATRIX},
    {"ffn_down.bias", RTM_LAYER(ffn_down_b), RTM_DIM_EMBD, RTM_DIM_NONE, RTM_T_F32},
};

/* The fused projection's rows: Q, then K, then V. */
static rt_tensor_t *attention(rtm_build_t *b, int32_t il, rt_tensor_t *x) {
    const rtm_layer_t *L = rtm_layer(b, il);
    const rtm_hparams_t *hp = b->hp;
    rt_tensor_t *qkv = rtm_linear(b, L->wqkv, L->bqkv, x);
    const int64_t nq = rtm_n_embd_q(hp), nkv = rtm_n_embd_kv(hp);
    rt_tensor_t *q = rtm_split_heads(b, qkv, 0, hp->n_head);
    rt_tensor_t *k = rtm_split_heads(b, qkv, nq, hp->n_head_kv);
    rt_tensor_t *v = rt_reshape_2d(b->ctx, rtm_split_heads(b, qkv, nq + nkv, hp->n_head_kv), nkv, b->n_tokens);
    const float scale = 1.0f / sqrtf((float)hp->head_dim);
    return rtm_linear(b, L->wo, L->bo, rtm_attention(b, il, q, k, v, scale));
}

static rt_tensor_t *layer(rtm_build_t *b, int32_t il, rt_tensor_t *x) {
    const rtm_layer_t *L = rtm_layer(b, il);
    rt_tensor_t *h = rt_add(b->ctx, attention(b, il, rtm_layer_norm(b, x, L->attn_norm, L->attn_norm_b)), x);
    return rt_add(b->ctx, rtm_ffn_gelu(b, L, rtm_layer_norm(b, h, L->ffn_norm, L->ffn_norm_b)), h);
}

static void build(rtm_build_t *b) {
    rt_tensor_t *x = rt_add(b->ctx, rtm_embed(b), rt_get_rows(b->ctx, b->m->pos_embd, b->io->pos));
    for (int32_t il = 0; il < b->hp->n_layer; il++) x = layer(b, il, x);
    x = rtm_head_rows(b, x);
    rtm_logits(b, rtm_layer_norm(b, x, b->m->output_norm, b->m->output_norm_b));
}

const rtm_arch_t rtm_arch_gpt2 = {
    .name = "gpt2", .keys = keys, .n_keys = RTM_COUNT(keys), .no_rope = true,
    .tensors = tensors, .n_tensors = RTM_COUNT(tensors), .build = build,
};
