/* SPDX-License-Identifier: MIT */
/* arch_qwen2.c: Qwen 2 (and 2.5): the llama graph with biases on the Q, K
 * and V projections and rope in NEOX mode (the converter leaves W_q and
 * W_k as trained: rope rotates x[i] with x[i + n_rot/2]). */
#include "blocks.h"

static const rtm_hparam_key_t keys[] = {
    RTM_HP_FLOAT("attention.layer_norm_rms_epsilon", norm_eps, 1e-6),
};

static const rtm_tensor_spec_t tensors[] = {
    RTM_LLAMA_TENSORS,
    {"attn_q.bias", RTM_LAYER(bq), RTM_DIM_Q, RTM_DIM_NONE, RTM_T_F32},
    {"attn_k.bias", RTM_LAYER(bk), RTM_DIM_KV, RTM_DIM_NONE, RTM_T_F32},
    {"attn_v.bias", RTM_LAYER(bv), RTM_DIM_KV, RTM_DIM_NONE, RTM_T_F32},
};

const rtm_arch_t rtm_arch_qwen2 = {
    .name = "qwen2", .keys = keys, .n_keys = RTM_COUNT(keys), .rope_mode = RT_ROPE_MODE_NEOX,
    .tensors = tensors, .n_tensors = RTM_COUNT(tensors), .build = rtm_llama_build, .parts = true,
};
