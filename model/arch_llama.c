/* SPDX-License-Identifier: MIT */
/* arch_llama.c: the llama architecture (Llama 1-3, SmolLM2, TinyLlama,
 * stories*):
 *
 *   x = get_rows(token_embd, tokens)                          {n_embd, N}
 *   per layer: h = x + W_o . attention(rms_norm(x) * attn_norm)
 *              x = h + W_down . swiglu(W_gate . n, W_up . n), n = rms_norm(h) * ffn_norm
 *   logits = output . (rms_norm(x) * output_norm)              last token, or all
 *
 * Attention: Q, K, V projections, rope in NORMAL mode (the converter
 * permuted W_q and W_k for it: adjacent pairs) on Q and K, GQA over the
 * cache (blocks.c), scale 1/sqrt(head_dim). The graph reads the biases
 * and the Q/K norms of a layer where they are declared, which is all that
 * Qwen 2 and Qwen 3 change (arch_qwen2.c, arch_qwen3.c share it). Without output.weight the
 * output projection is token_embd (tied embeddings). llama.vocab_size,
 * when present, must be token_embd's rows; linear rope scaling is read,
 * and Llama 3.1's rope_freqs factors divide each pair's frequency (arch.c
 * reads them, blocks.c applies them). */
#include "blocks.h"

static const rtm_hparam_key_t keys[] = {
    RTM_HP_FLOAT("attention.layer_norm_rms_epsilon", norm_eps, 1e-5),
};

static const rtm_tensor_spec_t tensors[] = {RTM_LLAMA_TENSORS};

static rt_tensor_t *attention(rtm_build_t *b, int32_t il, rt_tensor_t *x) {
    return rtm_self_attention(b, il, rtm_rms_norm(b, x, rtm_layer(b, il)->attn_norm));
}

static rt_tensor_t *ffn(rtm_build_t *b, int32_t il, rt_tensor_t *h) {
    const rtm_layer_t *L = rtm_layer(b, il);
    return rtm_ffn_swiglu(b, L, rtm_rms_norm(b, h, L->ffn_norm));
}

static rt_tensor_t *layer(rtm_build_t *b, int32_t il, rt_tensor_t *x) {
    rt_tensor_t *h = rt_add(b->ctx, attention(b, il, x), x);
    return rt_add(b->ctx, ffn(b, il, h), h);
}

/* The part's layers, or one block of one layer (its output before the
 * residual add), then the head where the part ends with it. */
void rtm_llama_build(rtm_build_t *b) {
    const rtm_part_t *p = b->part;
    rt_tensor_t *x = rtm_embed(b);
    if (p->block != RTM_BLOCK_LAYERS) {
        rtm_hidden_out(b, (p->block == RTM_BLOCK_ATTN ? attention : ffn)(b, p->layer_begin, x));
        return;
    }
    for (int32_t il = p->layer_begin; il < p->layer_end; il++) x = layer(b, il, x);
    if (!rtm_part_heads(p, b->hp->n_layer)) {
        rtm_hidden_out(b, x);
        return;
    }
    rtm_logits(b, rtm_rms_norm(b, rtm_head_rows(b, x), b->m->output_norm));
}

const rtm_arch_t rtm_arch_llama = {
    .name = "llama", .keys = keys, .n_keys = RTM_COUNT(keys), .rope_mode = RT_ROPE_MODE_NORMAL,
    .tensors = tensors, .n_tensors = RTM_COUNT(tensors), .build = rtm_llama_build, .parts = true,
};
