/* SPDX-License-Identifier: MIT */
/* model_impl.h: the layouts of a model and a context, shared by the files
 * that load (load.c, arch.c, devices.c, weights.c), build graphs
 * (graph.c, blocks.c, arch_*.c), keep the KV cache (kv_cache.c) and decode (context.c).
 *
 * Devices are numbered as the scheduler and the placement see them: the
 * GPUs (every non-CPU device) in the caller's order, then the CPU last.
 * Each device d has its own no_alloc context of weight headers ctx[d] and
 * one weight buffer buf[d]: the file's mapping wrapped in place, or memory
 * of the device's buffer type 0 the weights were copied into. A weight
 * tensor lives in the context of the device of its layer; matrix weights
 * the device keeps in a layout of its own (a RT_BUFT_FLAG_WEIGHTS buffer
 * type, weights_buft[d]) live in a second context ctx_w[d] with its buffer
 * buf_w[d], always copied (repacked) out of the mapping. */
#ifndef RTM_MODEL_IMPL_H
#define RTM_MODEL_IMPL_H

#include "internal.h"

#define RTM_MAX_DEVICES RT_SCHED_MAX_DEVICES
#define RTM_DEFAULT_N_CTX 2048  /* most tokens a context holds unless asked */
#define RTM_DEFAULT_N_BATCH 32  /* tokens per ubatch unless asked */

/* The hyperparameters every architecture reads (arch.c: "<arch>.*" keys,
 * each architecture's table saying which, with defaults), plus what an
 * architecture fixes in code (rope mode, causality). A head has head_dim
 * channels for Q and K and V alike; n_embd need not be n_head * head_dim
 * (Gemma 3). A layer il is a sliding-window layer when n_swa > 0 and
 * il % swa_pattern < swa_pattern - 1 (every swa_pattern-th layer global). */
typedef struct rtm_hparams {
    int32_t n_vocab;        /* rows of token_embd.weight */
    int32_t n_ctx_train;    /* context_length (default 2048) */
    int32_t n_embd;         /* embedding_length */
    int32_t n_layer;        /* block_count */
    int32_t n_ff;           /* feed_forward_length */
    int32_t n_head;         /* attention.head_count */
    int32_t n_head_kv;      /* attention.head_count_kv (default n_head) */
    int32_t head_dim;       /* attention.key_length (default n_embd / n_head) */
    int32_t n_rot;          /* rope.dimension_count (default head_dim) */
    int32_t rope_mode;      /* RT_ROPE_MODE_*; the architecture's */
    bool rope;              /* false: learned positions, no rope (the architecture's) */
    bool rope_factors;      /* rope_freqs.weight divides each pair's frequency (Llama 3.1) */
    float rope_freq_base;   /* rope.freq_base (default 10000) */
    float rope_freq_scale;  /* 1 / rope.scaling.factor (linear scaling; default 1) */
    float rope_freq_base_swa; /* rope.freq_base_swa: sliding-window layers (default 10000) */
    float norm_eps;         /* attention.layer_norm_rms_epsilon or _epsilon (default 1e-5) */
    int32_t n_swa;          /* attention.sliding_window: tokens a query sees (0: none) */
    int32_t swa_pattern;    /* attention.sliding_window_pattern */
    float logit_softcap;    /* final_logit_softcapping: logits = c tanh(logits / c); 0: none */
    float attn_softcap;     /* attn_logit_softcapping: the same on K^T Q before softmax; 0: none */
    int32_t n_vocab_key;    /* vocab_size when the file has it, else 0 */
    bool causal;            /* false: every token sees every token (encoders) */
    bool embeddings;        /* the output is one pooled embedding of n_embd, not logits */
} rtm_hparams_t;

static inline int32_t rtm_n_embd_kv(const rtm_hparams_t *hp) { return hp->head_dim * hp->n_head_kv; }
static inline int32_t rtm_n_embd_q(const rtm_hparams_t *hp) { return hp->head_dim * hp->n_head; }
static inline bool rtm_layer_is_swa(const rtm_hparams_t *hp, int32_t il) {
    return hp->n_swa > 0 && hp->swa_pattern > 0 && il % hp->swa_pattern < hp->swa_pattern - 1;
}

/* One block's weights: the union of what the architectures use, each
 * NULL where the file's architecture has none (arch_*.c say which). */
typedef struct rtm_layer {
    rt_tensor_t *attn_norm, *attn_norm_b;
    rt_tensor_t *wq, *wk, *wv, *wqkv, *wo;  /* wqkv: Q, K, V rows fused (GPT-2) */
    rt_tensor_t *bq, *bk, *bv, *bqkv, *bo;  /* their biases */
    rt_tensor_t *q_norm, *k_norm;           /* per head, before rope */
    rt_tensor_t *attn_post_norm, *attn_post_norm_b; /* on the attention's output (+ x: BERT) */
    rt_tensor_t *ffn_norm, *ffn_norm_b;
    rt_tensor_t *ffn_gate, *ffn_up, *ffn_down;
    rt_tensor_t *ffn_up_b, *ffn_down_b;
    rt_tensor_t *ffn_post_norm, *ffn_post_norm_b; /* on the feed-forward's output (+ h: BERT) */
} rtm_layer_t;

/* Where each part of the model goes: indices into rtm_model_t.devices. */
typedef struct rtm_layout {
    int32_t *layer;         /* n_layer */
    int32_t input, output;
} rtm_layout_t;

typedef struct rtm_arch rtm_arch_t;

struct rtm_model {
    char arch[32];
    const rtm_arch_t *desc;                 /* what arch names (arch.h) */
    rtm_hparams_t hp;
    rt_gguf_t *gguf;                        /* the mapped file; weights may point into it */
    rtm_vocab_t *vocab;
    rt_registry_t *registry;                /* borrowed */
    int32_t n_devices;
    rt_device_t *devices[RTM_MAX_DEVICES];  /* GPUs in order, then the CPU */
    bool holds_weights[RTM_MAX_DEVICES];    /* the caller allowed weights there */
    rtm_layout_t layout;
    char plan_text[2048];                   /* RTM_SPLIT_FASTEST's plan with predictions */
    double predicted_s[2][RTM_MAX_DEVICES + 1]; /* its decode, prompt step per device; whole last */
    int32_t layer_begin, layer_end;         /* the layers held; the others' weights are
                                               neither placed nor loaded (layers[] NULL) */
    rt_context_t *ctx[RTM_MAX_DEVICES];     /* weight headers, per device */
    rt_buffer_t *buf[RTM_MAX_DEVICES];      /* weight bytes, per device */
    bool mapped[RTM_MAX_DEVICES];           /* buf wraps the mapping */
    rt_buffer_type_t *weights_buft[RTM_MAX_DEVICES]; /* NULL: none, or no_repack */
    rt_context_t *ctx_w[RTM_MAX_DEVICES];   /* headers of weights kept in weights_buft */
    rt_buffer_t *buf_w[RTM_MAX_DEVICES];
    rt_tensor_t *tok_embd, *pos_embd;       /* pos_embd: learned positions (GPT-2, BERT) */
    rt_tensor_t *type_embd;                 /* BERT's token types (all type 0) */
    rt_tensor_t *embd_norm, *embd_norm_b;   /* BERT's norm of the summed embeddings */
    rt_tensor_t *output_norm, *output_norm_b, *output;
    rtm_layer_t *layers;                    /* n_layer */
    float *rope_freqs;                      /* n_rot / 2 factors (hp.rope_factors), host */
    rtm_load_stats_t stats;
    rt_context_t *ctx_shard;                /* tensor parallel: the views of this shard's
                                               slices that layers[] point at (shard.c) */
};

static inline rt_device_t *rtm_cpu_device(const rtm_model_t *m) { return m->devices[m->n_devices - 1]; }
static inline bool rtm_holds_layer(const rtm_model_t *m, int32_t il) {
    return il >= m->layer_begin && il < m->layer_end;
}

//===--- arch.c: the architectures, and what they declare done for all ---===//

/* Finds the file's architecture, reads its hyperparameters and checks
 * every tensor it declares is there with its shape. RT_ERR_UNSUPPORTED
 * naming an unknown architecture, RT_ERR_FORMAT naming the key or tensor. */
RTM_INTERNAL rt_status_t rtm_arch_read(rtm_model_t *m, const char *path);

/* numerics.c: the first non-finite of n floats (-1: none); every node of g
 * marked as an output; the index of the first node, in graph order, whose
 * f32 result is not finite (-1: none). */
RTM_INTERNAL int64_t rtm_numerics_first_bad(const float *x, size_t n);
RTM_INTERNAL void rtm_numerics_keep_nodes(rt_graph_t *g);
RTM_INTERNAL int32_t rtm_numerics_first_bad_node(const rt_graph_t *g);
/* Bytes of the weights of layer il, of the input and of the output parts. */
RTM_INTERNAL uint64_t rtm_arch_layer_bytes(const rtm_model_t *m, int32_t il);
RTM_INTERNAL uint64_t rtm_arch_input_bytes(const rtm_model_t *m);
RTM_INTERNAL uint64_t rtm_arch_output_bytes(const rtm_model_t *m);
/* Declares every weight in the context of its layout device (as the
 * file's type and shape, named as in the file); with repack, the matrix
 * weights a device's weight buffer type takes in its ctx_w. */
RTM_INTERNAL rt_status_t rtm_arch_declare(rtm_model_t *m, bool repack);

//===--- devices.c: which devices, which layer where ---===//

/* Fills m->devices (GPUs, then the CPU, added when the caller's list lacks
 * it) and holds_weights from params. */
RTM_INTERNAL rt_status_t rtm_devices_choose(rtm_model_t *m, const rtm_model_params_t *params);
/* Plans m->layout with rt_placement_t, checking that the model fits the
 * devices that may hold it (RT_ERR_OUT_OF_MEMORY otherwise). */
RTM_INTERNAL rt_status_t rtm_devices_place(rtm_model_t *m, const rtm_model_params_t *params);
/* Bytes the KV cache of one layer takes for n_ctx tokens. */
RTM_INTERNAL uint64_t rtm_kv_layer_bytes(const rtm_hparams_t *hp, int32_t n_ctx);

//===--- weights.c: weight bytes onto the devices ---===//

/* For every device with weights: map them in place when it can and they
 * are aligned (and !no_mmap), else allocate and copy. Updates m->stats. */
RTM_INTERNAL rt_status_t rtm_weights_load(rtm_model_t *m, bool no_mmap, bool progress);

//===--- kv_cache.c ---===//

/* Per layer, K as {n_embd_kv, n_ctx} (a token's keys are a row) and V
 * transposed as {n_ctx, n_embd_kv} (a channel's values over time are a
 * row, so the unfused attention reads V^T with no copy), or with fused
 * attention V as K is, {n_embd_kv, n_ctx} (FLASH_ATTN reads V a token a
 * row); of type_k and type_v, on the layer's device: one context and one
 * buffer per device. */
typedef struct rtm_kv_cache {
    int32_t n_ctx;
    rt_type_t type_k, type_v;               /* F32 or F16 */
    bool fused;                             /* attention is FLASH_ATTN (V not transposed) */
    int32_t layer_begin, layer_end;         /* the layers cached */
    rt_tensor_t **k, **v;                   /* n_layer each; NULL outside the layers cached */
    rt_context_t *ctx[RTM_MAX_DEVICES];
    rt_buffer_t *buf[RTM_MAX_DEVICES];
    uint64_t bytes;
    bool by_rows;   /* every device writes cache rows by index (SET_ROWS, ABI 1.1); else
                       the graph copies into views at n_past and is tied to that n_past */
    /* the cells (host): row r holds position cell_pos[r] of sequence cell_seq[r], or
       nothing when cell_seq[r] is -1; a sequence's positions are 0..seq_n_past - 1 */
    int32_t n_seq_max;
    int32_t *cell_seq, *cell_pos;           /* n_ctx each */
    int32_t *seq_n_past;                    /* n_seq_max: positions each sequence holds */
    int32_t *seq_next;                      /* n_seq_max: the row after its last, or -1 */
    int32_t n_used;                         /* rows held by any sequence */
} rtm_kv_cache_t;

/* What a context asks of its cache. */
typedef struct rtm_kv_config {
    int32_t n_ctx, n_seq_max, n_batch;
    int32_t layer_begin, layer_end;         /* the layers cached */
    rt_type_t type_k, type_v;
    rtm_flash_attn_t flash_attn;
} rtm_kv_config_t;

/* Caches layers [layer_begin, layer_end) only (the others' k, v stay NULL),
 * for up to n_seq_max sequences, fused or not as flash_attn and the
 * devices decide (attn_fused.c). RT_ERR_INVALID_ARGUMENT for a type other
 * than F32 and F16; RT_ERR_UNSUPPORTED for flash attention ON that a
 * device cannot run. */
RTM_INTERNAL rt_status_t rtm_kv_cache_init(rtm_kv_cache_t *kv, const rtm_model_t *m,
                                           const rtm_kv_config_t *cfg);

//===--- attn_fused.c: whether attention is one fused op ---===//

/* Whether every device that holds a cached layer runs FLASH_ATTN on this
 * cache's types and shapes (q of one token and of n_batch tokens); for
 * ON, RT_ERR_UNSUPPORTED naming the first device that does not. */
RTM_INTERNAL rt_status_t rtm_attn_fused_choose(const rtm_kv_cache_t *kv, const rtm_model_t *m,
                                               const rtm_kv_config_t *cfg, bool *fused);
RTM_INTERNAL void rtm_kv_cache_deinit(rtm_kv_cache_t *kv);
/* A free row, now holding the next position of seq (-1 when every row is
 * held): with fused attention the row after seq's last if free, else the
 * first free run of RTM_KV_RUN rows; else the first free row (kv_cache.c
 * says why). */
RTM_INTERNAL int32_t rtm_kv_cell_take(rtm_kv_cache_t *kv, int32_t seq);
/* Gives back row, the last one its sequence took (a failed run undone). */
RTM_INTERNAL void rtm_kv_cell_untake(rtm_kv_cache_t *kv, int32_t row);
/* Frees every row of seq (seq < 0: of every sequence); it starts again at 0. */
RTM_INTERNAL void rtm_kv_seq_clear(rtm_kv_cache_t *kv, int32_t seq);
/* Frees seq's rows at positions n_keep and after (0 <= n_keep). */
RTM_INTERNAL void rtm_kv_seq_keep(rtm_kv_cache_t *kv, int32_t seq, int32_t n_keep);
/* One past the highest row held (0: none). */
RTM_INTERNAL int32_t rtm_kv_rows_used(const rtm_kv_cache_t *kv);
/* The mask row {n_kv} of a token at position pos of seq: 0 where it may
 * attend, -inf elsewhere. Causal: the rows of seq at positions <= pos, and
 * with n_swa > 0 only those within the window (pos - p < n_swa); else every
 * row of seq. */
RTM_INTERNAL void rtm_kv_mask_row(const rtm_kv_cache_t *kv, int32_t seq, int32_t pos, bool causal,
                                  int32_t n_swa, int32_t n_kv, float *row);

//===--- graph.c: the graph of one ubatch ---===//

/* One graph: n_tokens new tokens, whose attention reads the first n_kv
 * rows of the cache. With a cache written by rows (kv->by_rows) the graph
 * does not depend on where they go: positions, cache rows and the masks
 * are inputs, so one graph serves every step with the same n_tokens, n_kv
 * and outputs. Without, the tokens' rows are n_past.. (one sequence). */
typedef struct rtm_ubatch {
    int32_t n_tokens;
    int32_t n_kv;           /* past the highest row written; rows not seen are masked */
    int32_t n_past;         /* the first row written (only read without by_rows) */
    bool all_logits;        /* logits for every token, else the last one's */
    rtm_part_t part;        /* what the graph runs: every layer, or a part (rt_model.h) */
    int32_t n_out_ids;      /* > 0: logits for that many rows, named by the out_ids input
                               (a batch's chosen tokens); all_logits is then false */
    bool hidden;            /* the head ends before the output projection: the output is the
                               normed hidden state {n_embd, rows} (an embeddings context) */
} rtm_ubatch_t;

/* n_kv grows in steps of RTM_KV_PAD rows, so a decode graph is rebuilt once
 * every RTM_KV_PAD tokens: 32 keeps the masked rows' extra work small. */
#define RTM_KV_PAD 32
/* Rows a sequence's cells come in (kv_cache.c): two of the CPU's fused
 * attention tiles of 32 keys, and a multiple of RTM_KV_PAD. */
#define RTM_KV_RUN 64

/* The graph's inputs and output. */
typedef struct rtm_graph_io {
    rt_graph_t *graph;
    rt_tensor_t *tokens;    /* I32 {n_tokens} */
    rt_tensor_t *pos;       /* I32 {n_tokens}: positions (rope, learned positions) */
    rt_tensor_t *rows;      /* I32 {n_tokens}: the cache rows written (SET_ROWS), else NULL */
    rt_tensor_t *out_ids;   /* I32 {n_out_ids}: the rows whose logits are kept, else NULL */
    rt_tensor_t *mask;      /* F32 {n_kv, n_tokens}: 0 or -inf */
    rt_tensor_t *mask_swa;  /* the same for sliding-window layers; NULL without them */
    rt_tensor_t *pool;      /* F32 {n_tokens, 1}, each 1/n_tokens: mean pooling (embeddings) */
    rt_tensor_t *rope_cos, *rope_sin; /* F32 {n_rot, 1, n_tokens}: rope with factors (rope_factors) */
    rt_tensor_t *rope_rot;  /* F32 {n_rot, n_rot}: the pair rotation x -> (-x1, x0) */
    rt_tensor_t *logits;    /* F32 {n_vocab, 1 or n_tokens}; embeddings: {n_embd, 1}; a hidden
                               head: {n_embd, n_tokens}; NULL for a part short of the head */
    rt_tensor_t *hidden_in; /* F32 {n_embd, n_tokens} for a part that does not embed, else NULL */
    rt_tensor_t *hidden_out; /* F32 {n_embd, n_tokens} for a part short of the head, else NULL */
} rtm_graph_io_t;

/* Whether a part embeds tokens (else it reads hidden_in), whether it ends
 * with the head (else it writes hidden_out), whether it runs attention. */
static inline bool rtm_part_embeds(const rtm_part_t *p) {
    return p->block == RTM_BLOCK_LAYERS && p->layer_begin == 0;
}
static inline bool rtm_part_heads(const rtm_part_t *p, int32_t n_layer) {
    return p->block == RTM_BLOCK_LAYERS && p->layer_end == n_layer;
}
static inline bool rtm_part_attends(const rtm_part_t *p) {
    return p->block == RTM_BLOCK_ATTN || (p->block == RTM_BLOCK_LAYERS && p->layer_end > p->layer_begin);
}

//===--- shard.c: tensor parallel ---===//

/* Turns a loaded model into shard `shard` of n_shards: every layer's
 * weights become views of their slices (heads of W_q, W_k, W_v rows and
 * W_o columns; FFN columns of W_gate, W_up rows and W_down columns) and
 * the head and FFN counts in hp become the shard's. RT_ERR_UNSUPPORTED
 * when the counts do not divide or a slice would split a quantised block. */
RTM_INTERNAL rt_status_t rtm_model_shard(rtm_model_t *m, int32_t shard, int32_t n_shards);

/* Most nodes of any graph of the model (also the graph's size). */
RTM_INTERNAL int32_t rtm_graph_size(const rtm_hparams_t *hp);
/* Builds the forward graph of m's architecture in ctx (no_alloc). */
RTM_INTERNAL void rtm_graph_build(const rtm_model_t *m, const rtm_kv_cache_t *kv, rt_context_t *ctx,
                                 const rtm_ubatch_t *ub, rtm_graph_io_t *io);

#endif /* RTM_MODEL_IMPL_H */
