/* SPDX-License-Identifier: MIT */
/* graphs.h: the built-in graphs the tools plan and measure. A
 * two-layer MLP and a llama-shaped stack of transformer blocks, built with
 * the public API into a no_alloc context, as model code would.
 *
 * Leafs: weights and the KV cache have no data and no INPUT flag (load
 * them, or leave them alone when only planning: tool_graph_leaf_ids);
 * token ids, positions and the mask are INPUT. The logits are the OUTPUT. */
#ifndef RT_TOOLS_GRAPHS_H
#define RT_TOOLS_GRAPHS_H

#include "../abi/rt.h"

typedef struct tool_graph_params {
    const char *name;   /* "mlp" or "llama" */
    int32_t n_layer;
    int32_t n_embd;
    int32_t n_head;     /* 0: n_embd / 128 (at least 1) */
    int32_t n_ff;       /* 0: 8/3 n_embd rounded up to 256 (llama's) */
    int32_t n_vocab;    /* 0: 32000 */
    int32_t n_tokens;   /* tokens in this step (n_batch for the worst case) */
    int32_t n_past;     /* tokens already in the KV cache */
    int32_t n_ctx;      /* KV cache length */
} tool_graph_params_t;

/* Parses the graph option at argv[i] (--graph NAME, --n-layer N, --n-embd
 * N, --n-head N, --n-ff N, --n-vocab N, --n-batch N, --n-ctx N). Returns
 * the arguments it took: 0 when argv[i] is not one of them, -1 (message on
 * stderr) when its value is missing or not a number. */
int tool_graph_parse_arg(tool_graph_params_t *p, int argc, char **argv, int i);
/* The usage lines of those options. */
extern const char tool_graph_usage[];
/* Fills the zero defaults in; false with a message on stderr when the
 * name is unknown or the sizes do not fit together. */
bool tool_graph_params_check(tool_graph_params_t *p);
/* A context that holds the graph's headers, and the graph in it. Destroy
 * the context to free both. NULL with a message on stderr on failure. */
rt_graph_t *tool_graph_build(const tool_graph_params_t *p, rt_context_t **out_ctx);
/* Buffer ids for reserve_n: 0 for INPUT leafs, -1 (left alone) for the
 * rest. The caller frees the array with free(). */
int32_t *tool_graph_leaf_ids(const rt_graph_t *g);

#endif /* RT_TOOLS_GRAPHS_H */
