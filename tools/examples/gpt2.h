/* SPDX-License-Identifier: MIT */
/* gpt2.h: what the four GPT-2 examples share (gpt2.c): the model's
 * hyperparameters and weights read from a GGUF file, the forward graph of
 * a whole token sequence (no KV cache: each step recomputes the prompt,
 * at their simplest), and the greedy loop. The
 * examples differ only in where the weights and the intermediates live:
 *
 *   gpt2-ctx      weights in a context pool, intermediates in another
 *   gpt2-alloc    intermediates through a gallocr reserved for the worst case
 *   gpt2-backend  weights in one device buffer (rt_alloc_ctx_tensors)
 *   gpt2-sched    layers split over devices (n_gpu_layers), the scheduler
 *
 * and each prints the same thing: the last token's logits after the
 * prompt, then the greedy tokens. */
#ifndef GPT2_H
#define GPT2_H

#include "../../abi/rt.h"
#include "../../abi/rt_alloc.h"
#include "../../abi/rt_gguf.h"
#include "../../abi/rt_sched.h"

#define GPT2_MAX_LAYERS 64
#define GPT2_MAX_TOKENS 64

typedef struct gpt2_layer {
    rt_tensor_t *ln_1_g, *ln_1_b, *c_attn_w, *c_attn_b, *c_proj_w, *c_proj_b;
    rt_tensor_t *ln_2_g, *ln_2_b, *fc_w, *fc_b, *proj_w, *proj_b;
} gpt2_layer_t;

typedef struct gpt2 {
    int32_t n_vocab, n_ctx, n_embd, n_head, n_layer;
    float eps;
    rt_gguf_t *gguf;
    rt_tensor_t *wte, *wpe, *ln_f_g, *ln_f_b, *lm_head;
    gpt2_layer_t layers[GPT2_MAX_LAYERS];
} gpt2_t;

/* One evaluation of the first n tokens: builds, runs and reads the
 * logits; what each example implements. */
typedef int (*gpt2_eval_fn)(void *user, const int32_t *tokens, int32_t n, float *logits);
/* Which context each part's weights go in: layer il, or -1 the input, or
 * n_layer the output. */
typedef rt_context_t *(*gpt2_ctx_fn)(void *user, int32_t il);

/* Opens the file and reads the hyperparameters; 0 or -1 after a message. */
int gpt2_open(gpt2_t *m, const char *path);
void gpt2_close(gpt2_t *m);
/* Bytes of every weight (rt_nbytes), and the count of weight tensors. */
size_t gpt2_weight_bytes(const gpt2_t *m);
int32_t gpt2_n_weights(const gpt2_t *m);
/* Declares every weight in the context ctx_for gives its part. */
void gpt2_declare(gpt2_t *m, gpt2_ctx_fn ctx_for, void *user);
/* Copies every weight's bytes from the file (rt_tensor_set). */
int gpt2_upload(const gpt2_t *m);
/* The weights in one allocating context sized by adding up every tensor
 * (gpt2-ctx, gpt2-alloc), declared and uploaded; NULL after a message. */
rt_context_t *gpt2_weights_in_pool(gpt2_t *m);
/* Opens path (default the repository's random GPT-2), runs the greedy
 * loop with eval after setup(user) succeeds, and tears down: an
 * example's main. */
int gpt2_main(gpt2_t *m, int argc, char **argv, int (*setup)(void *user), gpt2_eval_fn eval,
              void (*teardown)(void *user), void *user);

/* The forward graph of n tokens, in ctx; its inputs are named "tokens"
 * and "positions" (set them with gpt2_set_inputs once allocated), its
 * output "logits" {n_vocab} of the last token. */
rt_graph_t *gpt2_graph(const gpt2_t *m, rt_context_t *ctx, int32_t n);
/* The bytes of headers one graph needs, and a no_alloc context over such
 * a block (graph headers only; the allocators place the data). */
size_t gpt2_headers_size(const gpt2_t *m);
rt_context_t *gpt2_headers_context(void *block, size_t size);
/* gpt2-alloc and gpt2-backend: reserve ga for the longest graph of the
 * run; evaluate one graph placed by ga on q. headers: gpt2_headers_size
 * bytes for the graph context. */
int gpt2_gallocr_reserve(const gpt2_t *m, rt_gallocr_t *ga, void *headers);
int gpt2_gallocr_eval(const gpt2_t *m, rt_gallocr_t *ga, rt_queue_t *q, void *headers,
                      const int32_t *tokens, int32_t n, float *logits);
/* The logits of an evaluated graph into out (n_vocab floats). */
int gpt2_get_logits(const gpt2_t *m, rt_graph_t *g, float *out);
size_t gpt2_graph_size(const gpt2_t *m);
int gpt2_set_inputs(rt_graph_t *g, const int32_t *tokens, int32_t n);

/* Prints the logits after the prompt, then greedy tokens up to n_total. */
int gpt2_generate(const gpt2_t *m, gpt2_eval_fn eval, void *user, int32_t n_total);
/* The prompt every example starts from, and its length. */
extern const int32_t gpt2_prompt[];
extern const int32_t gpt2_n_prompt;

#endif /* GPT2_H */
