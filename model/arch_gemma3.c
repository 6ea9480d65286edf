/* SPDX-License-Identifier: MIT */
/* arch_gemma3.c: Gemma 3 (text):
 *
 *   x = get_rows(token_embd, tokens) * sqrt(n_embd)
 *   per layer: h = x + post_attn_norm(W_o . attention(attn_norm(x)))
 *              x = h + post_ffw_norm(W_down . (gelu(W_gate . n) * (W_up . n))), n = ffn_norm(h)
 *   logits = token_embd . output_norm(x)
 *
 * every norm an RMS norm times its weight (the converter stored Gemma's
 * 1 + w as w). Attention has per-head RMS norms of Q and K before rope
 * (NEOX mode) and heads of attention.key_length channels (n_embd need not
 * be n_head * head_dim). Of every sliding_window_pattern layers (6) the
 * last is global, reading the whole cache with rope.freq_base; the others
 * see the last attention.sliding_window positions and rope with
 * rope.freq_base_swa (10000): the graph frame gives those layers their own
 * mask (graph.c), blocks.c chooses mask and rope base by the layer. A file
 * with final_logit_softcapping has its logits soft-capped (blocks.c); the
 * graph is Gemma 2's too (arch_gemma2.c), whose layers have no q/k norms. */
#include "blocks.h"

#include <math.h>

static const rtm_hparam_key_t keys[] = {
    RTM_HP_FLOAT("attention.layer_norm_rms_epsilon", norm_eps, 1e-6),
    RTM_HP_INT("attention.sliding_window", n_swa, 0),
    RTM_HP_INT("attention.sliding_window_pattern", swa_pattern, 6),
    RTM_HP_FLOAT("rope.freq_base_swa", rope_freq_base_swa, 10000),
    RTM_HP_FLOAT("final_logit_softcapping", logit_softcap, 0),
};

static const rtm_tensor_spec_t tensors[] = {
    RTM_GEMMA_TENSORS,
    {"attn_q_norm.weight", RTM_LAYER(q_norm), RTM_DIM_HEAD, RTM_DIM_NONE, RTM_T_F32},
    {"attn_k_norm.weight", RTM_LAYER(k_norm), RTM_DIM_HEAD, RTM_DIM_NONE, RTM_T_F32},
};

static rt_tensor_t *layer(rtm_build_t *b, int32_t il, rt_tensor_t *x) {
    const rtm_layer_t *L = rtm_layer(b, il);
    rt_tensor_t *a = rtm_self_attention(b, il, rtm_rms_norm(b, x, L->attn_norm));
    rt_tensor_t *h = rt_add(b->ctx, rtm_rms_norm(b, a, L->attn_post_norm), x);
    rt_tensor_t *f = rtm_ffn_geglu(b, L, rtm_rms_norm(b, h, L->ffn_norm));
    return rt_add(b->ctx, rtm_rms_norm(b, f, L->ffn_post_norm), h);
}

void rtm_gemma3_build(rtm_build_t *b) {
    rt_tensor_t *x = rt_scale(b->ctx, rtm_embed(b), sqrtf((float)b->hp->n_embd));
    for (int32_t il = 0; il < b->hp->n_layer; il++) x = layer(b, il, x);
    rtm_logits(b, rtm_rms_norm(b, rtm_head_rows(b, x), b->m->output_norm));
}

const rtm_arch_t rtm_arch_gemma3 = {
    .name = "gemma3", .keys = keys, .n_keys = RTM_COUNT(keys), .rope_mode = RT_ROPE_MODE_NEOX,
    .tensors = tensors, .n_tensors = RTM_COUNT(tensors), .build = rtm_gemma3_build,
};
