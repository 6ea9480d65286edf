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

#include <getopt.h>

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

/* The graph options for a tool's getopt_long table (TOOL_GRAPH_OPTIONS,
 * before its own) and their codes: --graph NAME, --n-layer N, --n-embd N,
 * --n-head N, --n-ff N, --n-vocab N, -b/--n-batch/--batch-size N,
 * -c/--n-ctx/--ctx-size N (rt-run's spellings). */
enum {
    TOOL_OPT_N_BATCH = 'b',
    TOOL_OPT_N_CTX = 'c',
    TOOL_OPT_GRAPH = 0x1000,
    TOOL_OPT_N_LAYER, TOOL_OPT_N_EMBD, TOOL_OPT_N_HEAD, TOOL_OPT_N_FF, TOOL_OPT_N_VOCAB,
};
#define TOOL_GRAPH_OPTIONS                                                                     \
    {"graph", required_argument, NULL, TOOL_OPT_GRAPH},                                        \
    {"n-layer", required_argument, NULL, TOOL_OPT_N_LAYER},                                    \
    {"n-embd", required_argument, NULL, TOOL_OPT_N_EMBD},                                      \
    {"n-head", required_argument, NULL, TOOL_OPT_N_HEAD},                                      \
    {"n-ff", required_argument, NULL, TOOL_OPT_N_FF},                                          \
    {"n-vocab", required_argument, NULL, TOOL_OPT_N_VOCAB},                                    \
    {"n-batch", required_argument, NULL, TOOL_OPT_N_BATCH},                                    \
    {"batch-size", required_argument, NULL, TOOL_OPT_N_BATCH},                                 \
    {"n-ctx", required_argument, NULL, TOOL_OPT_N_CTX},                                        \
    {"ctx-size", required_argument, NULL, TOOL_OPT_N_CTX}
/* Takes the value of graph option c (name: the option as typed, for the
 * message): 1 when taken, 0 when c is not a graph option, -1 after
 * "TOOL: OPTION wants ..." on stderr for a value that is no count. */
int tool_graph_option(tool_graph_params_t *p, const char *tool, int c, const char *name, const char *value);
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
