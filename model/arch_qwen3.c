/* SPDX-License-Identifier: MIT */
/* arch_qwen3.c: Qwen 3: the llama graph with an RMS norm on each head of Q
 * and of K before rope (attn_q_norm, attn_k_norm: {head_dim}), rope in
 * NEOX mode, and heads of attention.key_length channels (128 in the
 * released models, not n_embd / n_head). */
#include "blocks.h"

static const rtm_hparam_key_t keys[] = {
    RTM_HP_FLOAT("attention.layer_norm_rms_epsilon", norm_eps, 1e-6),
};

static const rtm_tensor_spec_t tensors[] = {
    RTM_LLAMA_TENSORS,
    {"attn_q_norm.weight", RTM_LAYER(q_norm), RTM_DIM_HEAD, RTM_DIM_NONE, RTM_T_F32},
    {"attn_k_norm.weight", RTM_LAYER(k_norm), RTM_DIM_HEAD, RTM_DIM_NONE, RTM_T_F32},
};

const rtm_arch_t rtm_arch_qwen3 = {
    .name = "qwen3", .keys = keys, .n_keys = RTM_COUNT(keys), .rope_mode = RT_ROPE_MODE_NEOX,
    .tensors = tensors, .n_tensors = RTM_COUNT(tensors), .build = rtm_llama_build, .parts = true,
};
