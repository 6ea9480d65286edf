/* SPDX-License-Identifier: MIT */
/* arch_gemma2.c: Gemma 2 (text), Gemma 3's graph (arch_gemma3.c) without
 * the per-head q/k norms and with soft-capping: the attention logits
 * become c tanh(K^T Q / sqrt(head_dim) / c) before the softmax
 * (attn_logit_softcapping, c = 50 by default), and the output logits
 * c tanh(logits / c) (final_logit_softcapping, 30) (blocks.c). Of every
 * sliding_window_pattern layers (2) the last is global; the
 * sliding-window ones see attention.sliding_window positions (4096) and
 * rope with the global rope.freq_base. The defaults are llama.cpp's for a
 * file without the keys. */
#include "blocks.h"

static const rtm_hparam_key_t keys[] = {
    RTM_HP_FLOAT("attention.layer_norm_rms_epsilon", norm_eps, 1e-6),
    RTM_HP_INT("attention.sliding_window", n_swa, 4096),
    RTM_HP_INT("attention.sliding_window_pattern", swa_pattern, 2),
    RTM_HP_FLOAT("rope.freq_base", rope_freq_base_swa, 10000),
    RTM_HP_FLOAT("attn_logit_softcapping", attn_softcap, 50),
    RTM_HP_FLOAT("final_logit_softcapping", logit_softcap, 30),
};

static const rtm_tensor_spec_t tensors[] = {RTM_GEMMA_TENSORS};

const rtm_arch_t rtm_arch_gemma2 = {
    .name = "gemma2", .keys = keys, .n_keys = RTM_COUNT(keys), .rope_mode = RT_ROPE_MODE_NEOX,
    .tensors = tensors, .n_tensors = RTM_COUNT(tensors), .build = rtm_gemma3_build,
};
