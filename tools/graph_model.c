/* SPDX-License-Identifier: MIT */
/* graph_model.c: see graph_model.h. The keys are GGUF's, prefixed by the
 * file's general.architecture. */
#include "graph_model.h"

#include "../abi/rt_gguf.h"

#include <stdio.h>

static bool get_u32(const rt_gguf_t *g, const char *arch, const char *key, int32_t *out) {
    char full[128];
    snprintf(full, sizeof full, "%s.%s", arch, key);
    uint32_t v = 0;
    if (rt_gguf_get_u32(g, full, &v) != RT_OK || v > INT32_MAX) {
        fprintf(stderr, "rt-plan: the model has no usable %s: %s\n", full, rt_last_error());
        return false;
    }
    *out = (int32_t)v;
    return true;
}

static bool read_sizes(const rt_gguf_t *g, tool_graph_params_t *p) {
    const char *arch = NULL;
    if (rt_gguf_get_str(g, "general.architecture", &arch) != RT_OK) {
        fprintf(stderr, "rt-plan: the model has no general.architecture\n");
        return false;
    }
    int32_t n_ctx_train = 0;
    const int64_t tokens = rt_gguf_find_key(g, "tokenizer.ggml.tokens");
    if (!get_u32(g, arch, "block_count", &p->n_layer) || !get_u32(g, arch, "embedding_length", &p->n_embd) ||
        !get_u32(g, arch, "attention.head_count", &p->n_head) ||
        !get_u32(g, arch, "feed_forward_length", &p->n_ff) || !get_u32(g, arch, "context_length", &n_ctx_train))
        return false;
    if (tokens < 0) {
        fprintf(stderr, "rt-plan: the model has no tokenizer.ggml.tokens\n");
        return false;
    }
    p->n_vocab = (int32_t)rt_gguf_kv_array_len(g, tokens);
    if (p->n_ctx > n_ctx_train) p->n_ctx = n_ctx_train;
    return true;
}

bool tool_graph_params_from_model(tool_graph_params_t *p, const char *path) {
    rt_gguf_t *g = NULL;
    const rt_status_t st = rt_gguf_open(path, NULL, &g);
    if (st != RT_OK) {
        fprintf(stderr, "rt-plan: %s: %s\n", rt_status_name(st), rt_last_error());
        return false;
    }
    p->name = "llama";
    const bool ok = read_sizes(g, p);
    rt_gguf_destroy(g);
    return ok;
}
