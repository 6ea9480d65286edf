/* SPDX-License-Identifier: MIT */
/* rt_model.h: the model library (librtmodel), rt's first application. It
 * loads a language model from a GGUF file onto the devices of a registry,
 * runs it through the scheduler, and turns text into tokens and logits into
 * tokens. It is built on abi/ alone, as any outside program would be.
 *
 *     rt_registry_t *reg;  rt_registry_create(NULL, &reg);
 *     rtm_model_params_t mp = { .struct_size = sizeof mp, .registry = reg };
 *     rtm_model_t *m;
 *     if (rtm_model_load("stories260K.gguf", &mp, &m) != RT_OK) die(rtm_last_error());
 *     rtm_context_t *c;  rtm_context_create(m, NULL, &c);
 *     rtm_token_t tok[64];  int32_t n;
 *     rtm_vocab_tokenize(rtm_model_vocab(m), "Once upon", 9, true, false, tok, 64, &n);
 *     rtm_sampler_t *s;  rtm_sampler_create(NULL, &s);   // greedy
 *     for (int i = 0; i < 16; i++) {
 *         rtm_decode(c, tok, n);                       // appends to the sequence
 *         tok[0] = rtm_sampler_sample(s, rtm_get_logits(c), rtm_model_n_vocab(m));
 *         n = 1;
 *     }
 *     rtm_sampler_destroy(s); rtm_context_destroy(c); rtm_model_destroy(m);
 *
 * Objects: a model (weights, hyperparameters, vocabulary, which device
 * holds each layer) is read-only once loaded; a context (KV cache,
 * scheduler, compute buffers, logits) holds one sequence, or up to
 * n_seq_max decoded together (rtm_decode_batch), and is used by one thread
 * at a time; several contexts may share a model. A vocabulary can
 * also be made from any GGUF that has tokenizer.* keys, weights or not.
 *
 * Option structs (rtm_*_params_t) start with struct_size, set to sizeof
 * the struct the caller was compiled with; a zeroed struct (or NULL where
 * allowed) asks for every default, and the library reads only the fields
 * inside struct_size.
 *
 * Errors: calls that can fail return rt_status_t (abi/rt_base.h) and leave a
 * one-line message for rtm_last_error(): RT_ERR_NOT_FOUND (no such file),
 * RT_ERR_FORMAT (malformed or truncated file, missing key or tensor, wrong
 * shape), RT_ERR_UNSUPPORTED (unknown architecture or tokenizer),
 * RT_ERR_OUT_OF_MEMORY (model larger than the devices, or an allocation
 * failed), RT_ERR_INVALID_ARGUMENT (bad parameter), RT_ERR_DOES_NOT_FIT
 * (an output array is too small; the count needed is returned). Ownership
 * follows abi/rt_base.h: create/load returns what the caller destroys;
 * getters return borrowed pointers that live as long as their object.
 */
#ifndef RT_MODEL_H
#define RT_MODEL_H

#include "../abi/rt.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#  ifdef RTM_BUILDING
#    define RTM_API __declspec(dllexport)
#  else
#    define RTM_API __declspec(dllimport)
#  endif
#else
#  define RTM_API __attribute__((visibility("default")))
#endif

/* The message of the last failing rtm_ call on this thread ("" if none). */
RTM_API const char *rtm_last_error(void);

//===--- rtm_vocab_t: tokenizers ---===//

typedef int32_t rtm_token_t;
#define RTM_TOKEN_NULL (-1)

typedef struct rtm_vocab rtm_vocab_t;

/* tokenizer.ggml.model: "llama" is SentencePiece-style (score-ordered
 * merges, "\xe2\x96\x81" for space, byte fallback <0xXX>), "gpt2" byte-level
 * BPE (merges by rank after GPT-2's pre-tokenizer). */
typedef int32_t rtm_vocab_type_t;
enum {
    RTM_VOCAB_SPM = 1,
    RTM_VOCAB_BPE = 2,
    RTM_VOCAB_WPM = 3       /* BERT's WordPiece ("bert") */
};

/* tokenizer.ggml.token_type values (GGUF's). */
enum {
    RTM_TOKEN_TYPE_NORMAL = 1,
    RTM_TOKEN_TYPE_UNKNOWN = 2,
    RTM_TOKEN_TYPE_CONTROL = 3,
    RTM_TOKEN_TYPE_USER_DEFINED = 4,
    RTM_TOKEN_TYPE_UNUSED = 5,
    RTM_TOKEN_TYPE_BYTE = 6
};

/* Reads tokenizer.ggml.{model, tokens, scores, token_type, merges,
 * bos_token_id, eos_token_id, unknown_token_id, add_bos_token} from g
 * (copied: g may be destroyed afterwards). RT_ERR_UNSUPPORTED for another
 * tokenizer model, RT_ERR_FORMAT for missing or inconsistent arrays. */
RTM_API rt_status_t rtm_vocab_create(const rt_gguf_t *g, rtm_vocab_t **out_vocab);
RTM_API void rtm_vocab_destroy(rtm_vocab_t *vocab);

RTM_API rtm_vocab_type_t rtm_vocab_type(const rtm_vocab_t *vocab);
RTM_API int32_t rtm_vocab_n_tokens(const rtm_vocab_t *vocab);
RTM_API rtm_token_t rtm_vocab_bos(const rtm_vocab_t *vocab); /* RTM_TOKEN_NULL if none */
RTM_API rtm_token_t rtm_vocab_eos(const rtm_vocab_t *vocab); /* RTM_TOKEN_NULL if none */
/* Whether tokenize with add_special puts BOS first (the file's
 * add_bos_token; SPM defaults to true, BPE to false). */
RTM_API bool rtm_vocab_add_bos(const rtm_vocab_t *vocab);
/* The token's text as stored ("\xe2\x96\x81the", "<0x0A>"); NULL when out
 * of range. */
RTM_API const char *rtm_vocab_token_text(const rtm_vocab_t *vocab, rtm_token_t token);
RTM_API int32_t rtm_vocab_token_type(const rtm_vocab_t *vocab, rtm_token_t token);
/* True for tokens that end generation (EOS). */
RTM_API bool rtm_vocab_is_eog(const rtm_vocab_t *vocab, rtm_token_t token);

/* Encodes len bytes of text (UTF-8; invalid bytes are tolerated) into at
 * most n_max tokens and sets *out_n to the count. add_special puts BOS
 * first when the vocabulary says so; parse_special turns the text of
 * control tokens ("</s>") into those tokens, otherwise it is plain text.
 * RT_ERR_DOES_NOT_FIT when n_max is too small: *out_n is then the count
 * needed and nothing useful is in tokens. Thread-safe (vocab is read-only). */
RTM_API rt_status_t rtm_vocab_tokenize(const rtm_vocab_t *vocab, const char *text, size_t len,
                                       bool add_special, bool parse_special,
                                       rtm_token_t *tokens, int32_t n_max, int32_t *out_n);
/* The bytes token stands for: "\xe2\x96\x81" becomes a space (SPM), byte
 * tokens their byte, GPT-2's byte-level characters their bytes; control
 * tokens give their text only when special is set, otherwise nothing. The
 * result is not NUL-terminated. RT_ERR_DOES_NOT_FIT when size is too small
 * (*out_len is the size needed); RT_ERR_INVALID_ARGUMENT for a token out
 * of range. */
RTM_API rt_status_t rtm_vocab_token_to_piece(const rtm_vocab_t *vocab, rtm_token_t token,
                                             bool special, char *buf, size_t size,
                                             size_t *out_len);
/* The text of n tokens, NUL-terminated in buf (size includes the NUL): the
 * inverse of tokenize. Pieces as token_to_piece gives them (so BOS shows
 * only with special); for SPM the space tokenize put before the text is
 * dropped from the first token (the one after a leading BOS).
 * RT_ERR_DOES_NOT_FIT when buf is too small: *out_len is the length needed
 * (without the NUL) and buf holds what fitted, NUL-terminated. */
RTM_API rt_status_t rtm_vocab_detokenize(const rtm_vocab_t *vocab, const rtm_token_t *tokens,
                                         int32_t n, bool special, char *buf, size_t size,
                                         size_t *out_len);

//===--- rtm_model_t ---===//

typedef struct rtm_model rtm_model_t;

/* How layers are spread over the devices (rt_placement_t in rt_sched.h). */
typedef int32_t rtm_split_t;
enum {
    RTM_SPLIT_AUTO = 0,      /* as many of the last layers on GPUs as fit, by free memory */
    RTM_SPLIT_N_GPU_LAYERS = 1, /* the last n_gpu_layers layers on the first GPU */
    RTM_SPLIT_FASTEST = 2       /* least predicted decode time within memory, from each
                                   device's measured speed (rt_device_speed) */
};

/* A zeroed struct (registry aside) asks for the defaults. */
typedef struct rtm_model_params {
    uint32_t struct_size;
    rt_registry_t *registry;       /* required; borrowed, must outlive the model */
    rt_device_t *const *devices;   /* where weights may go; NULL: every device of the registry */
    int32_t n_devices;
    rtm_split_t split;             /* RTM_SPLIT_* */
    int32_t n_gpu_layers;          /* RTM_SPLIT_N_GPU_LAYERS: count; < 0: all */
    int32_t n_ctx;                 /* KV cache length the placement budgets for; 0: 2048 */
    bool no_mmap;                  /* copy weights into device buffers even where mapping works
                                      (a CPU copies 64 MiB or more anyway while they fit in half
                                      its free memory: its buffers stream faster, weights.c) */
    bool no_progress;              /* no progress bar (it only shows when stderr is a terminal) */
    bool no_repack;                /* keep matrix weights in the file's layout even where the
                                      device offers its own (a RT_BUFT_FLAG_WEIGHTS type) */
    /* added with distributed decoding (dist/): */
    int32_t shard, n_shards;       /* tensor parallel: hold shard `shard` (0..n_shards-1) of
                                      every layer's attention heads and feed-forward columns
                                      (the KV cache too); n_shards 0 or 1: the whole model.
                                      Implies no_repack. */
    int32_t layer_begin, layer_end; /* pipeline parallel: hold (and place on the devices)
                                       layers [begin, end) only, with the embeddings and the
                                       head; 0, 0: every layer */
    /* added with prompt-phase planning: the job RTM_SPLIT_FASTEST plans for
       (rt_placement_params_t's n_prompt, n_generate, n_ubatch); all 0: decode only */
    int32_t n_prompt, n_generate, n_ubatch;
} rtm_model_params_t;

/* Opens the GGUF at path and loads it onto the devices (docs/memory.md §5):
 * weights are declared per device in no_alloc contexts; on a device that
 * can wrap host memory the file's mapping is the buffer and tensors point
 * into it, with nothing copied; elsewhere one buffer per device is
 * allocated and each tensor is copied out of the mapping. Matrix weights
 * (the products' left operands, never the tied embeddings) go instead into
 * a device's weight buffer type, repacked for its kernels, when it has one
 * that takes them (unless no_repack). The mapping
 * stays alive as long as the model. Fails as listed at the top; the CPU is
 * always added to the devices given, last, for the scheduler's inputs, but
 * holds weights only when it is one of them (or devices is NULL). */
RTM_API rt_status_t rtm_model_load(const char *path, const rtm_model_params_t *params,
                                   rtm_model_t **out_model);
RTM_API void rtm_model_destroy(rtm_model_t *model);

RTM_API const rtm_vocab_t *rtm_model_vocab(const rtm_model_t *model);
RTM_API const char *rtm_model_arch(const rtm_model_t *model);      /* "llama" */
RTM_API int32_t rtm_model_n_vocab(const rtm_model_t *model);
RTM_API int32_t rtm_model_n_layer(const rtm_model_t *model);
RTM_API int32_t rtm_model_n_embd(const rtm_model_t *model);
/* Whether the model outputs a sentence embedding (BERT) rather than logits. */
RTM_API bool rtm_model_is_embedding(const rtm_model_t *model);
RTM_API int32_t rtm_model_n_ctx_train(const rtm_model_t *model);
/* The device holding layer il's weights and KV cache; -1 is the input
 * (token embeddings), n_layer the output. NULL when out of range. */
RTM_API rt_device_t *rtm_model_layer_device(const rtm_model_t *model, int32_t il);

/* What loading did. */
typedef struct rtm_load_stats {
    uint32_t struct_size;
    double load_seconds;      /* rtm_model_load's wall time */
    uint64_t bytes_weights;   /* tensor bytes in the file */
    uint64_t bytes_mapped;    /* weights used in place from the mapping */
    uint64_t bytes_copied;    /* weights copied into device buffers (repacked ones too) */
    int32_t n_tensors;
    uint64_t bytes_repacked;  /* weights in a device's own layout (RT_BUFT_FLAG_WEIGHTS) */
} rtm_load_stats_t;
/* Fills the fields inside out->struct_size (set it first). */
RTM_API rt_status_t rtm_model_get_load_stats(const rtm_model_t *model, rtm_load_stats_t *out);
/* RTM_SPLIT_FASTEST's plan as the placement wrote it: each device's share
 * with its predicted decode time, and the whole; nothing in other modes. */
RTM_API void rtm_model_write_plan(const rtm_model_t *model, rt_write_fn write, void *user_data);
/* RTM_SPLIT_FASTEST's predicted seconds of device i's share (the
 * scheduler's numbering) of a decode step, or with prompt of a prompt step
 * of n_ubatch tokens; i = -1: the whole; 0 in other modes. */
RTM_API double rtm_model_predicted_s(const rtm_model_t *model, int32_t i, bool prompt);
/* One line per device: the layers it holds and the bytes of weights. */
RTM_API void rtm_model_write_placement(const rtm_model_t *model, rt_write_fn write,
                                       void *user_data);

//===--- rtm_context_t: one sequence, or several in one cache ---===//

typedef struct rtm_context rtm_context_t;

typedef struct rtm_context_params {
    uint32_t struct_size;
    int32_t n_ctx;      /* KV cache length, tokens; 0: the model's (training) length, at most 2048 */
    int32_t n_batch;    /* most tokens per graph run (ubatch); 0: 32 */
    int32_t n_threads;  /* CPU threads; 0: the plugin's default */
    bool logits_all;    /* logits of every token of a decode, not only the last */
    bool no_graph_reuse; /* build and plan a graph for every ubatch (default: reuse the
                            last one while n_tokens and the cache rows read stay) */
    bool check_numerics; /* keep every node's result so that a decode whose logits are
                            not finite names the first node that produced a NaN/Inf
                            (more compute memory); the logits are checked always */
    /* added with distributed decoding (dist/): */
    int32_t layer_begin, layer_end; /* the layers this context runs, [begin, end): only they
                                       get a KV cache and the reserve plans their part
                                       (rtm_decode_part); 0, 0: every layer */
    /* added with continuous batching: */
    int32_t n_seq_max;  /* sequences the context holds, 0..n_seq_max-1, sharing the n_ctx
                           cells of its KV cache (rtm_decode_batch); 0: 1. Above 1, every
                           device must write cache rows by index (RT_ERR_UNSUPPORTED
                           otherwise), and rtm_decode_part is refused */
    /* added with fused attention: */
    rt_type_t type_k, type_v; /* the KV cache's element types: RT_TYPE_F32 (0, the default) or
                                 RT_TYPE_F16 (half the bytes; the products read it as they
                                 read F16 weights) */
    int32_t flash_attn; /* rtm_flash_attn_t: attention fused into one FLASH_ATTN per layer */
    /* added with the server's /v1/embeddings: */
    bool embeddings;    /* a decoder's decodes keep, for every token, its final hidden state
                           (after the output norm, before the output projection: n_embd
                           floats) instead of logits (rtm_get_embeddings_ith), and their
                           pooled unit-length embedding (rtm_get_embeddings); an embedding
                           model's (rtm_model_is_embedding) always keep its own */
    int32_t pooling;    /* rtm_pooling_t: how rtm_get_embeddings pools a decoder's states */
} rtm_context_params_t;

/* How an embeddings context (rtm_context_params_t.embeddings) pools the
 * hidden states of a decode into one vector, normalised to unit length.
 * An embedding model pools as it was trained (BERT: the mean) and refuses
 * another with RT_ERR_UNSUPPORTED at context creation. */
typedef int32_t rtm_pooling_t;
enum {
    RTM_POOLING_DEFAULT = 0, /* the model's own; for a decoder, MEAN */
    RTM_POOLING_MEAN = 1,    /* the mean of every token's state */
    RTM_POOLING_LAST = 2     /* the last token's state: the only one that has seen the whole
                                input through causal attention */
};

/* Whether a context's attention is one fused op (RT_OP_FLASH_ATTN) per
 * layer, which never materialises the scores of the whole context, or the
 * products and softmax of the unfused graph. AUTO fuses when every device
 * that runs an attention layer supports the op for the cache's types
 * (asked at context creation) and either the context holds several
 * sequences (n_seq_max > 1) or the scores one ubatch would materialise
 * unfused (n_head x n_batch x n_ctx F32) exceed RTM_FLASH_ATTN_AUTO_BYTES,
 * where fusing saves memory that matters. Several sequences fuse because
 * the fused op skips the cache rows of the others, which the unfused graph
 * reads and masks for every token (kv_cache.c): rt-server's four clients
 * on SmolLM2 get ~1.3x the tokens a second. Else AUTO keeps the unfused
 * graph, whose products sum in llama.cpp's order (a greedy decode of a
 * quantised model follows its near-ties) and which the CPU and lavapipe
 * still run faster for decode of one sequence. ON fails
 * rtm_context_create with RT_ERR_UNSUPPORTED naming a device that does not
 * (or type_k != type_v, which the op cannot read). The fused cache keeps V
 * as K is kept, a token a row; the unfused one keeps it transposed. */
#define RTM_FLASH_ATTN_AUTO_BYTES (64u << 20)
typedef enum rtm_flash_attn {
    RTM_FLASH_ATTN_AUTO = 0,
    RTM_FLASH_ATTN_ON = 1,
    RTM_FLASH_ATTN_OFF = 2
} rtm_flash_attn_t;

/* Creates the KV cache (each layer's on that layer's device) and the
 * scheduler over the model's devices, and reserves the compute buffers the
 * llama.cpp way: the prompt graph (n_batch tokens at the end of the
 * context), the token graph (for statistics), the prompt graph again, so
 * that no decode allocates. params may be NULL. RT_ERR_OUT_OF_MEMORY when
 * a device cannot hold its compute buffer. */
RTM_API rt_status_t rtm_context_create(rtm_model_t *model, const rtm_context_params_t *params,
                                       rtm_context_t **out_ctx);
RTM_API void rtm_context_destroy(rtm_context_t *ctx);

/* Runs n tokens of sequence 0 after the n_past already in the cache, in
 * ubatches of at most n_batch, and keeps the logits (the last token's, or
 * every token's with logits_all). RT_ERR_INVALID_ARGUMENT for a token out
 * of range or n < 1; RT_ERR_DOES_NOT_FIT when the cache would overflow
 * (nothing is run then); RT_ERR_FORMAT when a logit is NaN or infinite
 * (the message names the step, the positions and, with check_numerics,
 * the first node that was not finite). */
RTM_API rt_status_t rtm_decode(rtm_context_t *ctx, const rtm_token_t *tokens, int32_t n);

/* Tokens of several sequences decoded together: token i goes to the next
 * position of sequence seq[i] (after the ones it already holds and the
 * batch's earlier tokens of it), and its logits are kept when logits[i].
 * Each token attends only to its own sequence's cached tokens.
 *
 *     rtm_token_t tok[] = {a0, a1, b0};  int32_t seq[] = {0, 0, 1};
 *     bool want[] = {false, true, true};
 *     rtm_batch_t b = {sizeof b, 3, tok, seq, want};
 *     rtm_decode_batch(c, &b);
 *     rtm_get_logits_ith(c, 1);     // sequence 0's next-token logits
 *     rtm_get_logits_ith(c, 2);     // sequence 1's
 */
typedef struct rtm_batch {
    uint32_t struct_size;
    int32_t n_tokens;
    const rtm_token_t *tokens;  /* n_tokens; borrowed for the call */
    const int32_t *seq;         /* n_tokens: each token's sequence, 0..n_seq_max-1; NULL: all 0 */
    const bool *logits;         /* n_tokens: keep this token's logits; NULL: the last token's */
} rtm_batch_t;

/* Runs the batch in ubatches of at most n_batch tokens, in order; the
 * logits kept are read with rtm_get_logits_ith (rtm_get_logits: the last
 * kept). Fails as rtm_decode does, and with RT_ERR_INVALID_ARGUMENT for a
 * sequence out of range, an embedding model or an embeddings context
 * (whose pooling is over one rtm_decode); RT_ERR_DOES_NOT_FIT when
 * the free cells are fewer than n_tokens (nothing is run then: free a
 * sequence's with rtm_seq_clear). On another failure the failing ubatch's
 * tokens are not cached, the earlier ones are. */
RTM_API rt_status_t rtm_decode_batch(rtm_context_t *ctx, const rtm_batch_t *batch);
/* n_vocab logits of the last token of the last decode (valid until the next
 * decode); NULL before any, for an embedding model and in an embeddings
 * context. */
RTM_API const float *rtm_get_logits(const rtm_context_t *ctx);
/* An embedding model's (rtm_model_is_embedding) n_embd floats for the
 * input of the last decode, mean-pooled and of unit length (valid until
 * the next decode); NULL before any and for other models. The whole input
 * goes in one decode of at most n_batch tokens, from an empty context.
 * A decoder's embeddings context gives its tokens' final hidden states
 * pooled as rtm_context_pooling says, over the tokens of the last
 * rtm_decode (in as many ubatches as it takes), and of unit length; NULL
 * for a context that keeps logits. */
RTM_API const float *rtm_get_embeddings(const rtm_context_t *ctx);
/* A decoder's embeddings context: the final hidden state of token i of
 * the last decode, n_embd floats as the output projection would read
 * them (not normalised; valid until the next decode); NULL when i is out
 * of range, for a context that keeps logits and for an embedding model,
 * whose graph keeps only the pooled vector. */
RTM_API const float *rtm_get_embeddings_ith(const rtm_context_t *ctx, int32_t i);
/* The logits of token i of the last decode or batch (valid until the next
 * one); NULL when its logits were not kept (rtm_decode keeps the last
 * token's, every token's with logits_all) or i is out of range. */
RTM_API const float *rtm_get_logits_ith(const rtm_context_t *ctx, int32_t i);
/* Positions sequence 0 holds. */
RTM_API int32_t rtm_context_n_past(const rtm_context_t *ctx);
RTM_API int32_t rtm_context_n_ctx(const rtm_context_t *ctx);
RTM_API int32_t rtm_context_n_batch(const rtm_context_t *ctx);
/* The context's scheduler, for rt_sched_set_timing and rt_sched_device_time
 * (rt_sched.h); its devices are numbered as the model's. */
RTM_API rt_sched_t *rtm_context_sched(const rtm_context_t *ctx);
/* Sequences the context holds at once (rtm_context_params_t.n_seq_max). */
RTM_API int32_t rtm_context_n_seq_max(const rtm_context_t *ctx);
/* Whether the context's attention is fused (rtm_flash_attn_t: what AUTO chose). */
RTM_API bool rtm_context_flash_attn(const rtm_context_t *ctx);
/* The pooling rtm_get_embeddings applies (RTM_POOLING_MEAN or _LAST: what
 * DEFAULT chose) in a context that keeps embeddings, an embedding
 * model's included; RTM_POOLING_DEFAULT (0) in one that keeps logits. */
RTM_API rtm_pooling_t rtm_context_pooling(const rtm_context_t *ctx);
/* Forgets every sequence: the next decode starts at position 0. */
RTM_API void rtm_context_clear(rtm_context_t *ctx);
/* Positions sequence seq holds; -1 for a sequence out of range. */
RTM_API int32_t rtm_seq_n_past(const rtm_context_t *ctx, int32_t seq);
/* Forgets sequence seq, freeing its cells for any sequence; its next token
 * goes to position 0. The other sequences and the logits kept stay. */
RTM_API void rtm_seq_clear(rtm_context_t *ctx, int32_t seq);
/* Keeps the first n_keep positions of sequence seq and frees the cells of
 * the rest: its next token goes to position n_keep (a prompt that shares
 * its first n_keep tokens with what the sequence held decodes only the
 * rest). n_keep at or past the positions held changes nothing. */
RTM_API void rtm_seq_keep(rtm_context_t *ctx, int32_t seq, int32_t n_keep);

/* Counters, to see that decoding never re-plans or allocates. */
typedef struct rtm_context_stats {
    uint32_t struct_size;
    int32_t n_reserves;       /* rt_sched_reserve calls (3 at creation) */
    int32_t n_graphs;         /* graphs run */
    int32_t n_devices;        /* the scheduler's */
    int32_t n_splits;         /* of the last graph */
    int32_t n_copies;         /* tensors copied between devices by the last graph */
    uint64_t compute_bytes;   /* all compute buffers, bytes */
    uint64_t compute_bytes_changes; /* times the compute buffers' sizes changed after creation */
    uint64_t kv_bytes;        /* the KV cache, bytes */
    int32_t tg_nodes;         /* nodes of the one-token graph (second reserve) */
    int32_t tg_splits;        /* its splits */
    int32_t n_builds;         /* graphs built and allocated for decoding (n_graphs
                                 minus the runs that reused one) */
} rtm_context_stats_t;
RTM_API rt_status_t rtm_context_get_stats(const rtm_context_t *ctx, rtm_context_stats_t *out);

/* The graph a decode of n_tokens after n_past runs, for a tool to plan or
 * draw (rt-plan): n_tokens = n_batch at n_past = n_ctx - n_batch is the
 * worst case the compute buffers were reserved for, n_tokens = 1 at
 * n_past = n_ctx - 1 the graph tg_nodes counts. It is built, with the
 * model's weights and the context's KV cache as its leaves, into a new
 * no_alloc context *out_gctx that the caller destroys (rt_context_destroy)
 * before the context; nothing else is allocated, planned or computed, and
 * the context is left as it was. Weights carry their names in the file,
 * the cache cache_k_l<il> and cache_v_l<il>, the inputs and the output
 * theirs (tokens, positions, kq_mask, ...); other nodes are unnamed but
 * for the core's view names. RT_ERR_INVALID_ARGUMENT for a NULL argument,
 * n_tokens outside 1..n_batch or n_past < 0; RT_ERR_DOES_NOT_FIT past
 * n_ctx. */
RTM_API rt_status_t rtm_context_graph(const rtm_context_t *ctx, int32_t n_tokens, int32_t n_past,
                                      rt_context_t **out_gctx, rt_graph_t **out_graph);

//===--- parts of the forward pass (for dist/) ---===//

/* A process that holds only some layers (pipeline parallel), or a shard of
 * every layer (tensor parallel, rtm_model_params_t.n_shards), runs the
 * forward pass in parts and moves the hidden state {n_embd, n} (F32, one
 * token's row after another) between them itself:
 *
 *     rtm_part_t p = {sizeof p, .layer_begin = 2, .layer_end = 5};
 *     rtm_decode_part(c, &p, NULL, hidden_in, n, NULL);   // layers 2-4 and the head
 *     rtm_context_advance(c, n);                           // then the next n positions
 *
 * A part whose layer_begin is 0 (and block LAYERS) embeds tokens; any
 * other reads hidden_in. A part that ends at n_layer (block LAYERS) ends
 * with the output head: the logits are kept as rtm_decode keeps them
 * (rtm_get_logits); any other writes its hidden state into hidden_out.
 * Blocks ATTN and FFN run that block of layer_begin alone and give its
 * output before the residual add, which is what tensor parallelism sums
 * over the shards before adding it to the hidden state. */
typedef int32_t rtm_block_t;
enum {
    RTM_BLOCK_LAYERS = 0, /* whole layers [layer_begin, layer_end) */
    RTM_BLOCK_ATTN = 1,   /* attention of layer_begin: W_o . attention(norm(x)) */
    RTM_BLOCK_FFN = 2     /* feed-forward of layer_begin: W_down . swiglu(...)(norm(x)) */
};

typedef struct rtm_part {
    uint32_t struct_size;
    int32_t layer_begin, layer_end; /* 0 <= begin <= end <= n_layer; ATTN, FFN: end = begin + 1 */
    rtm_block_t block;
} rtm_part_t;

/* Runs one part for n positions after n_past (1 <= n <= n_batch), one
 * graph, without advancing n_past. tokens (n of them) are read only by a
 * part that embeds; hidden_in ({n_embd, n}) only by the others; the
 * layers run must be the context's. RT_ERR_INVALID_ARGUMENT for a bad
 * part, a missing input or a token out of range; RT_ERR_DOES_NOT_FIT when
 * n positions do not fit the cache. */
RTM_API rt_status_t rtm_decode_part(rtm_context_t *ctx, const rtm_part_t *part,
                                    const rtm_token_t *tokens, const float *hidden_in, int32_t n,
                                    float *hidden_out);
/* n positions were run by every part: the next part starts after them.
 * RT_ERR_DOES_NOT_FIT past the context's end. */
RTM_API rt_status_t rtm_context_advance(rtm_context_t *ctx, int32_t n);

//===--- rtm_grammar_t: output held to a grammar (GBNF) ---===//

/* A grammar in GBNF, the format of llama.cpp's grammar files, that the
 * sampler holds its choices to: a token can be drawn only when its text
 * keeps the output a beginning of something the grammar matches, and an
 * end-of-generation token only where the start rule can end.
 *
 *     root   ::= answer "."            # a comment runs to the end of the line
 *     answer ::= "yes" | "no" | [1-9] [0-9]{0,2} ("," [0-9]{3})*
 *
 * A rule is a name, "::=" and alternatives separated by "|", each a
 * sequence of: "strings" (escapes \n \t \r \\ \" \xHH \uHHHH
 * \UHHHHHHHH), character classes ([a-z0-9_], negated [^"\\], the same
 * escapes), "." (any character), rule names (letters, digits, "-", "_")
 * and (groups), each optionally followed by * + ? {m} {m,} {m,n} {,n}. A
 * rule ends with its line, except inside parentheses, after "|", or where
 * the next line starts with "|". The text is UTF-8 and matching is by
 * Unicode code point; a token may end inside a character (the rest is
 * awaited from the next token).
 *
 *     rtm_grammar_t *g;
 *     if (rtm_grammar_create(vocab, text, strlen(text), NULL, &g) != RT_OK)
 *         die(rtm_last_error());              // "grammar: line 2, column 9: ..."
 *     rtm_sampler_params_t sp = {.struct_size = sizeof sp, .grammar = g};
 *     rtm_sampler_t *s;  rtm_sampler_create(&sp, &s);
 *     for (;;) {
 *         rtm_token_t t = rtm_sampler_sample(s, rtm_get_logits(c), n_vocab);
 *         if (t == RTM_TOKEN_NULL) die(rtm_last_error());
 *         rtm_grammar_accept(g, t);            // the caller advances the grammar
 *         if (rtm_vocab_is_eog(vocab, t) || rtm_grammar_done(g)) break;
 *         rtm_decode(c, &t, 1);
 *     }
 *     rtm_sampler_destroy(s); rtm_grammar_destroy(g);
 *
 * Refused with RT_ERR_FORMAT and a message naming the line, the column and
 * what was expected: syntax errors, an undefined rule, a missing start
 * rule, bad escapes, invalid UTF-8, empty classes, bounds {m,n} with m > n
 * or past 10000, and left recursion that would loop (expr ::= expr "+" term,
 * directly or through other rules: write expr ::= term ("+" term)*). A
 * recursion through calls that are each the last element of their
 * alternative, as ("a"?)* makes, loops back to where it was and is matched.
 *
 * Cost: the states the grammar reaches and the steps between them are
 * computed once and kept, and rtm_grammar_apply walks a trie of the
 * vocabulary's pieces built at creation, leaving out at once every token
 * that starts with a prefix the grammar refuses. Limits: at most 4096
 * alternatives alive at once and 2^26 expansion steps in one call
 * (RT_ERR_UNSUPPORTED: the grammar is too ambiguous), 256 MiB of kept
 * states (RT_ERR_OUT_OF_MEMORY; past 32 MiB they are dropped between calls,
 * the current one kept); nesting deeper than 1024 rules is not followed (a
 * token that needs it is not allowed).
 *
 * A grammar is used by one thread at a time: every call, rtm_grammar_allows
 * and rtm_grammar_apply too, may add to what it keeps. */
typedef struct rtm_grammar rtm_grammar_t;

/* Parses len bytes of GBNF (not necessarily NUL-terminated) with the rule
 * named root (NULL: "root") as the start, for vocab's tokens: vocab is
 * borrowed and must outlive the grammar, its pieces are read now
 * (rtm_vocab_token_to_piece without special texts). vocab may be NULL for
 * a grammar that judges text only (rtm_grammar_accept_text,
 * rtm_grammar_can_end, rtm_grammar_done; the token calls refuse it).
 * RT_ERR_FORMAT as above; RT_ERR_INVALID_ARGUMENT for a NULL out_grammar,
 * or gbnf NULL with len > 0; RT_ERR_OUT_OF_MEMORY. */
RTM_API rt_status_t rtm_grammar_create(const rtm_vocab_t *vocab, const char *gbnf, size_t len,
                                       const char *root, rtm_grammar_t **out_grammar);
RTM_API void rtm_grammar_destroy(rtm_grammar_t *grammar);
/* Back to the start, as created: for a new reply. */
RTM_API void rtm_grammar_reset(rtm_grammar_t *grammar);
/* Advances past a generated token: its piece's bytes. An end-of-generation
 * token (rtm_vocab_is_eog) is accepted where the start rule can end and
 * changes nothing. RT_ERR_INVALID_ARGUMENT naming the token and its text
 * when the grammar does not allow it (the grammar stays as it was), for a
 * token out of range or a grammar made without a vocabulary;
 * RT_ERR_UNSUPPORTED, RT_ERR_OUT_OF_MEMORY past a limit. The sampler never
 * calls it, and a prompt's tokens must not go to it. */
RTM_API rt_status_t rtm_grammar_accept(rtm_grammar_t *grammar, rtm_token_t token);
/* Sets logits[i] to -INFINITY for each token i < n_vocab the grammar does
 * not allow next: whose piece cannot go on with the text, whose piece is
 * empty (control tokens), past the vocabulary. End-of-generation tokens
 * are allowed exactly where the start rule can end, so once
 * rtm_grammar_done they are all that is left. RT_ERR_INVALID_ARGUMENT
 * (NULL logits, n_vocab < 0, no vocabulary), RT_ERR_UNSUPPORTED or
 * RT_ERR_OUT_OF_MEMORY past a limit (the logits are then unchanged). */
RTM_API rt_status_t rtm_grammar_apply(rtm_grammar_t *grammar, float *logits, int32_t n_vocab);
/* Whether rtm_grammar_apply would leave token, at the cost of its piece
 * alone (the sampler's check of the token it drew). False for a token out
 * of range, without a vocabulary, or past a limit. */
RTM_API bool rtm_grammar_allows(rtm_grammar_t *grammar, rtm_token_t token);
/* The start rule is matched to its end and nothing can follow: the output
 * is finished. */
RTM_API bool rtm_grammar_done(const rtm_grammar_t *grammar);
/* The start rule can end here (end-of-generation tokens are allowed),
 * though more may follow. */
RTM_API bool rtm_grammar_can_end(const rtm_grammar_t *grammar);
/* Advances past len bytes of text, as rtm_grammar_accept does past a
 * token's piece. RT_ERR_INVALID_ARGUMENT naming the byte where the text
 * leaves the grammar (the grammar stays as it was). */
RTM_API rt_status_t rtm_grammar_accept_text(rtm_grammar_t *grammar, const char *text, size_t len);

//===--- JSON Schema as a grammar ---===//

/* OpenAI's response_format {"type": "json_schema"} and a tool's parameter
 * schema constrain what a model writes through a GBNF grammar (llama.cpp's
 * format) made from the schema; {"type": "json_object"} through
 * rtm_json_object_grammar.
 *
 *     char *gbnf;
 *     if (rtm_json_schema_to_grammar(schema, strlen(schema), &gbnf) != RT_OK)
 *         die(rtm_last_error());  // "json schema, #/properties/age/not: ..."
 *     ...                         // a grammar (start rule root) for sampling
 *     rtm_string_free(gbnf);
 *
 * The grammar accepts the JSON texts the schema allows, with at most 20
 * whitespace characters (space, tab, LF, CR) between two tokens and none
 * before or after the value, under these rules:
 *   - objects: the required properties first, in the order of
 *     `properties`, then the optional ones (each present or not) in that
 *     order, then additional properties, whose names are none of the
 *     declared ones (until a name leaves every declared one it may not use
 *     \u escapes). An object whose members come in another order is not
 *     matched. additionalProperties false, true/absent (any value) or a
 *     schema; required names absent from `properties` take its schema.
 *   - arrays: items, prefixItems (and the older items-array with
 *     additionalItems), minItems, maxItems. Strings: minLength, maxLength
 *     (an escape is one character, a surrogate pair two); format date,
 *     time, date-time (RFC 3339, any day 01..31) and uuid; any other
 *     format is a plain string (JSON Schema makes formats annotations).
 *     Integers as JSON writes them without fraction or exponent ("1", not
 *     "1.0"), with minimum, maximum, exclusiveMinimum, exclusiveMaximum
 *     exactly (within +-1e18; "-0" only where no bound is given). Numbers
 *     take no bounds.
 *   - enum and const: each value in its compact spelling only ({"a":1}
 *     without blanks, 2.5 not 2.50), those of the schema's `type`.
 *   - type (a name or a list), anyOf and oneOf as alternatives (a value
 *     matching two branches of a oneOf is accepted), allOf of object
 *     schemas merged (properties, required, the types all members allow; a
 *     single member taken as it is), $ref to a JSON pointer in the schema
 *     ("#", "#/$defs/name", "#/definitions/name"), recursive ones
 *     included, {} and true as any value; an untyped schema allows every
 *     type, its keywords applying to theirs.
 *   - annotations (title, description, default, examples, $comment,
 *     $schema, $id, deprecated, readOnly, writeOnly, contentEncoding,
 *     contentMediaType, discriminator, x-*) are ignored.
 * Everything else is refused by name, RT_ERR_UNSUPPORTED: not, if/then/
 * else, pattern, patternProperties, dependentSchemas, multipleOf,
 * uniqueItems: true, an unknown keyword, a $ref outside the schema or to
 * an anchor, keywords beside $ref, anyOf/oneOf or enum/const (type aside),
 * bounds on a number, ... and schemas that allow no value (minimum above
 * maximum, an empty enum) or whose grammar would be too large: subschemas
 * nested deeper than 64 ($ref targets counted), a count (minLength,
 * maxLength, minItems, maxItems) above 1000, more than 100 prefixItems, a
 * grammar above 1 MiB; and a $ref that comes back to itself before any
 * character (left recursion). */

/* Converts len bytes of a JSON Schema (2020-12, and the earlier drafts'
 * forms above) into a GBNF grammar whose start rule is root, NUL-
 * terminated, into *out_gbnf, which the caller frees with
 * rtm_string_free. On failure *out_gbnf is NULL and rtm_last_error() names
 * the place in the schema (a JSON pointer, "#/properties/age/minimum") and
 * why: RT_ERR_FORMAT for text that is not JSON or a keyword with a value of
 * the wrong kind, RT_ERR_UNSUPPORTED for what is refused (above; also for
 * a library built without jansson, which this needs),
 * RT_ERR_INVALID_ARGUMENT for NULL, RT_ERR_OUT_OF_MEMORY. Thread-safe. */
RTM_API rt_status_t rtm_json_schema_to_grammar(const char *schema_json, size_t len,
                                               char **out_gbnf);
/* A GBNF grammar of any JSON object (whitespace bounded as above), static. */
RTM_API const char *rtm_json_object_grammar(void);
/* Frees a string the library returned for the caller to free (NULL-safe). */
RTM_API void rtm_string_free(char *s);

//===--- rtm_sampler_t ---===//

typedef struct rtm_sampler rtm_sampler_t;

/* One token's additive bias (OpenAI's logit_bias): -100 all but bans it. */
typedef struct rtm_logit_bias {
    rtm_token_t token;
    float bias;
} rtm_logit_bias_t;

/* A zeroed struct is greedy decoding. Otherwise, in llama.cpp's order:
 * the logit biases, then the penalties (repetition, presence, frequency:
 * also before greedy), then top_k keeps the k most likely tokens (0: all),
 * typical_p the locally typical set (0 or >= 1: all), top_p the smallest
 * set whose probability reaches p (0 or >= 1: all), min_p those at least
 * min_p times as likely as the best (0: all), then temp scales the logits
 * and one token is drawn with a generator seeded by seed (the same seed,
 * the same draws). */
typedef struct rtm_sampler_params {
    uint32_t struct_size;
    float temp;        /* <= 0: greedy (the largest logit, the lowest id on ties) */
    int32_t top_k;
    float top_p;
    uint64_t seed;     /* 0 is a seed like any other */
    float min_p;       /* 0: off */
    float repeat_penalty; /* divides a positive logit, multiplies a negative one, of each
                             token among the last repeat_last_n accepted; 0 or 1: off */
    int32_t repeat_last_n; /* tokens the penalties look back over; 0: 64 */
    /* since the server's fields (0 off, as zeroed) */
    float typical_p;       /* keeps the tokens whose surprise is nearest the entropy,
                              the fewest that reach this mass */
    float presence_penalty;  /* subtracted from the logit of each token among the last
                                repeat_last_n accepted (OpenAI's, -2..2) */
    float frequency_penalty; /* subtracted once per time it occurs there */
    const rtm_logit_bias_t *logit_bias; /* n_logit_bias biases added to the logits first
                                           (copied; ids past the vocabulary are skipped) */
    int32_t n_logit_bias;
    /* since grammar-constrained sampling (NULL off, as zeroed) */
    rtm_grammar_t *grammar; /* borrowed, must outlive the sampler: the token drawn is one
                               it allows. A first draw as above is kept when
                               rtm_grammar_allows it (one check, the common case);
                               otherwise the draw is made again from a copy of the logits
                               masked by rtm_grammar_apply. The sampler never advances
                               it: call rtm_grammar_accept with each generated token */
} rtm_sampler_params_t;

RTM_API rt_status_t rtm_sampler_create(const rtm_sampler_params_t *params,
                                       rtm_sampler_t **out_sampler);
RTM_API void rtm_sampler_destroy(rtm_sampler_t *sampler);
/* Picks a token from n_vocab logits (not modified). RTM_TOKEN_NULL for NULL
 * logits or n_vocab < 1, and with a grammar when it allows no token or
 * fails (rtm_last_error() says why). */
RTM_API rtm_token_t rtm_sampler_sample(rtm_sampler_t *sampler, const float *logits,
                                       int32_t n_vocab);
/* Records a token of the sequence (the prompt's and each chosen one), the
 * history the repetition penalty looks at. It does not advance the
 * grammar: prompt tokens go here and must not go there. */
RTM_API void rtm_sampler_accept(rtm_sampler_t *sampler, rtm_token_t token);
/* Forgets the history (a new sequence); the generator keeps its state. */
RTM_API void rtm_sampler_reset(rtm_sampler_t *sampler);

//===--- rtm_chat_template_t: conversations as prompts ---===//

/* A model's chat template (its GGUF's tokenizer.chat_template, Jinja) run
 * by the library's own interpreter of the subset real templates use:
 * text, {{ }}, {% if/elif/else %}, {% for %} (loop.index0, first, last,
 * ...), {% set %} (and namespace()), filters (trim, length, tojson, ...),
 * tests (defined, none, string, ...), string and dict methods,
 * raise_exception, with HF's whitespace rules (trim_blocks,
 * lstrip_blocks, "-" on a tag).
 *
 *     rtm_chat_template_t *t;
 *     rtm_chat_template_create(source, &t);
 *     rtm_chat_message_t m[] = {{"system", "Be brief."}, {"user", "Hi"}};
 *     rtm_chat_render_params_t p = {.struct_size = sizeof p,
 *                                   .add_generation_prompt = true};
 *     char text[4096]; size_t len;
 *     rtm_chat_template_apply(t, m, 2, &p, text, sizeof text, &len);
 *     rtm_chat_template_destroy(t);
 */
typedef struct rtm_chat_template rtm_chat_template_t;

typedef struct rtm_chat_message {
    const char *role;     /* "system", "user", "assistant" */
    const char *content;
} rtm_chat_message_t;

typedef struct rtm_chat_render_params {
    uint32_t struct_size;
    bool add_generation_prompt; /* end with the opening of the assistant's turn */
    const char *bos_token;      /* the template's bos_token, eos_token: the tokens' */
    const char *eos_token;      /* texts (NULL: undefined) */
} rtm_chat_render_params_t;

/* Parses source (copied). RT_ERR_FORMAT naming the line for a template it
 * cannot parse (a syntax error, or a statement outside the subset). */
RTM_API rt_status_t rtm_chat_template_create(const char *source, rtm_chat_template_t **out_template);
/* The source of a chat format rt knows by name, for a model without a
 * template of its own: "chatml", "qwen" (ChatML with Qwen 2.5's default
 * system message), "llama3", "gemma", "phi3", "mistral"; NULL for another
 * name. The i-th name, from 0, or NULL past the last. */
RTM_API const char *rtm_chat_template_builtin(const char *name);
RTM_API const char *rtm_chat_template_builtin_name(int32_t i);
RTM_API void rtm_chat_template_destroy(rtm_chat_template_t *tmpl);
/* Renders the conversation into buf (NUL-terminated, size with the NUL);
 * *out_len is the text's length. RT_ERR_DOES_NOT_FIT when buf is too
 * small (*out_len is then the length needed); RT_ERR_FORMAT naming the
 * line when the template fails (raise_exception's message, an unknown
 * filter, a bad operand). Thread-safe: tmpl is read-only. */
RTM_API rt_status_t rtm_chat_template_apply(const rtm_chat_template_t *tmpl,
                                            const rtm_chat_message_t *messages, int32_t n_messages,
                                            const rtm_chat_render_params_t *params, char *buf,
                                            size_t size, size_t *out_len);

#ifdef __cplusplus
}
#endif

#endif /* RT_MODEL_H */
