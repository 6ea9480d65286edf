/* SPDX-License-Identifier: MIT */
/* arch.h: what an architecture is. Each model/arch_<name>.c defines one
 * rtm_arch_t: its hyperparameter keys (beyond the ones every transformer
 * has), its tensors (name, shape in hyperparameters, optional or not,
 * where in rtm_layer_t or rtm_model_t it goes) and its graph, written
 * with the shared blocks of blocks.c. arch.c reads and checks the keys and
 * tensors, sizes and declares the weights and keeps the list of
 * architectures; nothing else in the library knows one from another, so
 * adding an architecture is one file and one line in that list.
 *
 *     static const rtm_tensor_spec_t tensors[] = {
 *         {"token_embd.weight", RTM_GLOBAL(tok_embd), RTM_DIM_EMBD, RTM_DIM_VOCAB, 0},
 *         {"attn_q.weight", RTM_LAYER(wq), RTM_DIM_EMBD, RTM_DIM_Q, RTM_T_MATRIX}, ...
 *     };
 *     const rtm_arch_t rtm_arch_foo = {.name = "foo", .tensors = tensors,
 *         .n_tensors = RTM_COUNT(tensors), .build = build};
 */
#ifndef RTM_ARCH_H
#define RTM_ARCH_H

#include "model_impl.h"

#include <stddef.h>

/* Tensor dimensions, in hyperparameters. */
typedef enum rtm_dim {
    RTM_DIM_NONE = 0,   /* ne1 of a vector */
    RTM_DIM_EMBD,       /* n_embd */
    RTM_DIM_Q,          /* n_head * head_dim */
    RTM_DIM_KV,         /* n_head_kv * head_dim */
    RTM_DIM_QKV,        /* Q + 2 KV: fused projections */
    RTM_DIM_HEAD,       /* head_dim */
    RTM_DIM_FF,         /* n_ff */
    RTM_DIM_VOCAB,      /* n_vocab */
    RTM_DIM_CTX,        /* n_ctx_train: learned positions */
    RTM_DIM_TYPES,      /* BERT's token types (2) */
} rtm_dim_t;

enum {
    RTM_T_MATRIX = 1 << 0,   /* only ever mul_mat's weight: any weight type, may be repacked */
    RTM_T_F32 = 1 << 1,      /* norms and biases: F32 (they meet F32 activations in add/mul) */
    RTM_T_OPTIONAL = 1 << 2, /* may be absent: the slot stays NULL */
    RTM_T_TIED = 1 << 3,     /* absent: the slot gets token_embd (tied output) */
    RTM_T_OUTPUT = 1 << 4,   /* a global of the output part (placed with the head), else input */
};

/* One tensor an architecture reads. Per layer when layer is true (the
 * file names it "blk.<il>.<name>"), else once. slot: byte offset of its
 * rt_tensor_t * in rtm_layer_t (per layer) or in rtm_model_t. */
typedef struct rtm_tensor_spec {
    const char *name;
    bool layer;
    size_t slot;
    uint8_t ne0, ne1;        /* rtm_dim_t */
    uint8_t flags;           /* RTM_T_* */
} rtm_tensor_spec_t;

#define RTM_LAYER(field) true, offsetof(rtm_layer_t, field)
#define RTM_GLOBAL(field) false, offsetof(rtm_model_t, field)
#define RTM_COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* One hyperparameter key, "<arch>.<key>", into rtm_hparams_t at offset:
 * an int32_t, or a float when is_float. def < 0: required. */
typedef struct rtm_hparam_key {
    const char *key;
    size_t offset;
    bool is_float;
    double def;
} rtm_hparam_key_t;

#define RTM_HP_INT(key, field, def) {key, offsetof(rtm_hparams_t, field), false, def}
#define RTM_HP_FLOAT(key, field, def) {key, offsetof(rtm_hparams_t, field), true, def}

/* llama's tensors, which the architectures derived from it start from:
 * rms norms, separate Q/K/V projections, a gated feed-forward, the output
 * tied to token_embd when absent. */
#define RTM_LLAMA_TENSORS \
    {"token_embd.weight", RTM_GLOBAL(tok_embd), RTM_DIM_EMBD, RTM_DIM_VOCAB, 0}, \
    {"output_norm.weight", RTM_GLOBAL(output_norm), RTM_DIM_EMBD, RTM_DIM_NONE, RTM_T_F32 | RTM_T_OUTPUT}, \
    {"output.weight", RTM_GLOBAL(output), RTM_DIM_EMBD, RTM_DIM_VOCAB, \
     RTM_T_MATRIX | RTM_T_TIED | RTM_T_OUTPUT}, \
    {"attn_norm.weight", RTM_LAYER(attn_norm), RTM_DIM_EMBD, RTM_DIM_NONE, RTM_T_F32}, \
    {"attn_q.weight", RTM_LAYER(wq), RTM_DIM_EMBD, RTM_DIM_Q, RTM_T_MATRIX}, \
    {"attn_k.weight", RTM_LAYER(wk), RTM_DIM_EMBD, RTM_DIM_KV, RTM_T_MATRIX}, \
    {"attn_v.weight", RTM_LAYER(wv), RTM_DIM_EMBD, RTM_DIM_KV, RTM_T_MATRIX}, \
    {"attn_output.weight", RTM_LAYER(wo), RTM_DIM_Q, RTM_DIM_EMBD, RTM_T_MATRIX}, \
    {"ffn_norm.weight", RTM_LAYER(ffn_norm), RTM_DIM_EMBD, RTM_DIM_NONE, RTM_T_F32}, \
    {"ffn_gate.weight", RTM_LAYER(ffn_gate), RTM_DIM_EMBD, RTM_DIM_FF, RTM_T_MATRIX}, \
    {"ffn_up.weight", RTM_LAYER(ffn_up), RTM_DIM_EMBD, RTM_DIM_FF, RTM_T_MATRIX}, \
    {"ffn_down.weight", RTM_LAYER(ffn_down), RTM_DIM_FF, RTM_DIM_EMBD, RTM_T_MATRIX}

/* Gemma's: llama's with a norm after the attention and one after the
 * feed-forward, each before its residual add (Gemma 2 and 3). */
#define RTM_GEMMA_TENSORS \
    RTM_LLAMA_TENSORS, \
    {"post_attention_norm.weight", RTM_LAYER(attn_post_norm), RTM_DIM_EMBD, RTM_DIM_NONE, RTM_T_F32}, \
    {"post_ffw_norm.weight", RTM_LAYER(ffn_post_norm), RTM_DIM_EMBD, RTM_DIM_NONE, RTM_T_F32}

typedef struct rtm_build rtm_build_t;

struct rtm_arch {
    const char *name;                     /* general.architecture */
    const rtm_hparam_key_t *keys;         /* beyond arch.c's common ones */
    size_t n_keys;
    int32_t rope_mode;                    /* RT_ROPE_MODE_* */
    bool no_rope;                         /* positions are learned instead (rtm_rope passes x) */
    bool bidirectional;                   /* every token sees every token (encoders) */
    bool embeddings;                      /* outputs a pooled embedding (rtm_get_embeddings) */
    bool parts;                           /* build honours b->part (dist/: pipeline and tensor
                                             parallel); else only every layer at once */
    const rtm_tensor_spec_t *tensors;
    size_t n_tensors;
    /* the forward graph of one ubatch: b holds the inputs; sets b->io->logits */
    void (*build)(rtm_build_t *b);
};

/* The llama graph, for the architectures that are llama with extra
 * tensors it reads where present (arch_llama.c). */
RTM_INTERNAL void rtm_llama_build(rtm_build_t *b);

/* Gemma 3's graph, which Gemma 2 shares: its q/k norms are read where
 * present and soft-capping where the hyperparameters ask (arch_gemma3.c). */
RTM_INTERNAL void rtm_gemma3_build(rtm_build_t *b);

/* The architectures rt knows (arch.c). */
RTM_INTERNAL const rtm_arch_t *rtm_arch_find(const char *name);
/* "llama, qwen2, ...": every name, for the error that lists them. */
RTM_INTERNAL void rtm_arch_names(char *buf, size_t size);

#endif /* RTM_ARCH_H */
