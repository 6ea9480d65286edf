/* SPDX-License-Identifier: MIT */
/* graphs.c: the built-in graphs of rt-plan and rt-bench (see graphs.h).
 * The llama block follows the attention of docs/memory.md §2.5: K and V of the new tokens
 * are copied into views of the cache, K is read back as a permuted view,
 * V through cont, and the heads are merged with permute + cont. */
#include "graphs.h"
#include "tool_cli.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WTYPE RT_TYPE_F16  /* weights */
#define KVTYPE RT_TYPE_F16 /* KV cache */

const char tool_graph_usage[] =
    "      --graph NAME     mlp (a two-layer MLP, per layer) or llama\n"
    "      --n-layer N      layers\n"
    "      --n-embd N       embedding width\n"
    "      --n-head N       attention heads (default n_embd/128)\n"
    "      --n-ff N         feed-forward width (default 8/3 n_embd, rounded up to 256)\n"
    "      --n-vocab N      vocabulary\n"
    "  -b, --n-batch, --batch-size N  tokens per step; the worst case has\n"
    "                       n_past = n_ctx - n_batch\n"
    "  -c, --n-ctx, --ctx-size N      KV cache length\n";

static int32_t *int_field(tool_graph_params_t *p, int c) {
    switch (c) {
    case TOOL_OPT_N_LAYER: return &p->n_layer;
    case TOOL_OPT_N_EMBD: return &p->n_embd;
    case TOOL_OPT_N_HEAD: return &p->n_head;
    case TOOL_OPT_N_FF: return &p->n_ff;
    case TOOL_OPT_N_VOCAB: return &p->n_vocab;
    case TOOL_OPT_N_BATCH: return &p->n_tokens;
    case TOOL_OPT_N_CTX: return &p->n_ctx;
    default: return NULL;
    }
}

int tool_graph_option(tool_graph_params_t *p, const char *tool, int c, const char *name, const char *value) {
    if (c == TOOL_OPT_GRAPH) {
        p->name = value;
        return 1;
    }
    int32_t *field = int_field(p, c);
    if (field == NULL) return 0;
    return rt_cli_int(tool, name, value, 1, INT32_MAX, field) ? 1 : -1;
}

/* The largest tensor the graphs may describe, in elements (2^40: far past
 * any machine's memory, and far from int64_t's end). */
#define MAX_ELEMENTS ((int64_t)1 << 40)

/* Sizes whose tensors or graph would overflow: refused with a message,
 * never an abort inside the graph builders. */
static bool sizes_fit(const tool_graph_params_t *p) {
    const int64_t e = p->n_embd, big = p->n_ff > p->n_vocab ? p->n_ff : p->n_vocab;
    const int64_t cache = (int64_t)p->n_layer * p->n_ctx, mask = (int64_t)p->n_ctx * p->n_tokens;
    size_t graph_bytes = 0;
    if (e * big > MAX_ELEMENTS || (cache > 0 && cache > MAX_ELEMENTS / e) || mask > MAX_ELEMENTS) {
        fprintf(stderr, "sizes too large: n_embd %d with n_ff %d, n_vocab %d, n_layer %d, n_ctx %d "
                "(a tensor would hold more than 2^40 elements)\n", p->n_embd, p->n_ff,
                p->n_vocab, p->n_layer, p->n_ctx);
        return false;
    }
    if (rt_graph_overhead_v2(64 + (size_t)p->n_layer * 64, &graph_bytes) != RT_OK) {
        fprintf(stderr, "%d layers: %s\n", p->n_layer, rt_last_error());
        return false;
    }
    return true;
}

bool tool_graph_params_check(tool_graph_params_t *p) {
    const bool mlp = strcmp(p->name, "mlp") == 0;
    if (!mlp && strcmp(p->name, "llama") != 0) {
        fprintf(stderr, "unknown graph '%s' (mlp, llama)\n", p->name);
        return false;
    }
    if (p->n_head == 0) p->n_head = p->n_embd / 128 > 0 ? p->n_embd / 128 : 1;
    if (p->n_ff == 0) {
        const int64_t ff = ((int64_t)p->n_embd * 8 / 3 + 255) / 256 * 256;
        p->n_ff = ff <= INT32_MAX ? (int32_t)ff : INT32_MAX;
    }
    if (p->n_vocab == 0) p->n_vocab = 32000;
    if (p->n_layer < 1 || p->n_embd < 1 || p->n_tokens < 1 || p->n_past < 0 ||
        p->n_embd % p->n_head != 0 || (p->n_embd / p->n_head) % 2 != 0 ||
        (!mlp && p->n_past + p->n_tokens > p->n_ctx)) {
        fprintf(stderr, "bad sizes: n_layer %d, n_embd %d, n_head %d (head size even), "
                "n_tokens %d, n_past %d, n_ctx %d (n_past + n_tokens <= n_ctx)\n",
                p->n_layer, p->n_embd, p->n_head, p->n_tokens, p->n_past, p->n_ctx);
        return false;
    }
    return sizes_fit(p);
}

static rt_tensor_t *leaf(rt_context_t *ctx, rt_type_t type, int64_t ne0, int64_t ne1,
                         const char *name, int il) {
    rt_tensor_t *t = rt_new_tensor_2d(ctx, type, ne0, ne1);
    return il >= 0 ? rt_format_name(t, "%s.%d", name, il) : rt_set_name(t, name);
}

static rt_tensor_t *input(rt_context_t *ctx, rt_type_t type, int64_t ne0, int64_t ne1,
                          const char *name) {
    rt_tensor_t *t = leaf(ctx, type, ne0, ne1, name, -1);
    rt_set_input(t);
    return t;
}

//===--- a two-layer MLP (docs/memory.md §3.3) ---===//

/* y = W2 . gelu(W1 . x + b1) + b2, n_embd -> n_ff -> n_embd, per layer. */
static rt_tensor_t *build_mlp(rt_context_t *ctx, const tool_graph_params_t *p) {
    rt_tensor_t *cur = input(ctx, RT_TYPE_F32, p->n_embd, p->n_tokens, "x");
    for (int il = 0; il < p->n_layer; il++) {
        rt_tensor_t *w1 = leaf(ctx, RT_TYPE_F32, p->n_embd, p->n_ff, "w1", il);
        rt_tensor_t *b1 = leaf(ctx, RT_TYPE_F32, p->n_ff, 1, "b1", il);
        rt_tensor_t *w2 = leaf(ctx, RT_TYPE_F32, p->n_ff, p->n_embd, "w2", il);
        rt_tensor_t *b2 = leaf(ctx, RT_TYPE_F32, p->n_embd, 1, "b2", il);
        cur = rt_format_name(rt_mul_mat(ctx, w1, cur), "h.%d", il);
        cur = rt_format_name(rt_add(ctx, cur, b1), "h_b.%d", il);
        cur = rt_format_name(rt_gelu(ctx, cur), "a.%d", il);
        cur = rt_format_name(rt_mul_mat(ctx, w2, cur), "y.%d", il);
        cur = rt_format_name(rt_add(ctx, cur, b2), "y_b.%d", il);
    }
    return cur;
}

//===--- a llama-shaped stack ---===//

typedef struct llama_state {
    const tool_graph_params_t *p;
    rt_context_t *ctx;
    rt_graph_t *g;
    rt_tensor_t *pos, *mask, *k_cache, *v_cache;
} llama_state_t;

static rt_tensor_t *norm(const llama_state_t *s, rt_tensor_t *x, const char *name, int il) {
    rt_tensor_t *w = leaf(s->ctx, RT_TYPE_F32, s->p->n_embd, 1, name, il);
    return rt_mul(s->ctx, rt_rms_norm(s->ctx, x, 1e-5f), w);
}

static rt_tensor_t *linear(const llama_state_t *s, rt_tensor_t *x, int64_t n_out,
                           const char *name, int il) {
    rt_tensor_t *w = leaf(s->ctx, WTYPE, x->ne[0], n_out, name, il);
    return rt_format_name(rt_mul_mat(s->ctx, w, x), "%s_out.%d", name, il);
}

/* cache[il][first .. first + n) as {head_dim, n_head, n}. */
static rt_tensor_t *cache_rows(const llama_state_t *s, rt_tensor_t *cache, int il, int64_t first,
                               int64_t n) {
    const tool_graph_params_t *p = s->p;
    const size_t row = rt_row_size(KVTYPE, p->n_embd);
    rt_tensor_t *v = rt_view_1d(s->ctx, cache, n * p->n_embd,
                                ((size_t)il * (size_t)p->n_ctx + (size_t)first) * row);
    return rt_reshape_3d(s->ctx, v, p->n_embd / p->n_head, p->n_head, n);
}

/* Writes the new tokens' K or V into the cache (before anything reads it). */
static void store(const llama_state_t *s, rt_tensor_t *x, rt_tensor_t *cache, int il) {
    rt_tensor_t *dst = cache_rows(s, cache, il, s->p->n_past, s->p->n_tokens);
    rt_graph_build_forward_expand(s->g, rt_cpy(s->ctx, x, dst));
}

static rt_tensor_t *attention(const llama_state_t *s, rt_tensor_t *x, int il) {
    const tool_graph_params_t *p = s->p;
    rt_context_t *ctx = s->ctx;
    const int64_t hd = p->n_embd / p->n_head, n = p->n_tokens, n_kv = p->n_past + n;
    rt_tensor_t *q = rt_reshape_3d(ctx, linear(s, x, p->n_embd, "wq", il), hd, p->n_head, n);
    rt_tensor_t *k = rt_reshape_3d(ctx, linear(s, x, p->n_embd, "wk", il), hd, p->n_head, n);
    rt_tensor_t *v = linear(s, x, p->n_embd, "wv", il);
    q = rt_rope(ctx, q, s->pos, (int)hd, RT_ROPE_MODE_NEOX);
    k = rt_rope(ctx, k, s->pos, (int)hd, RT_ROPE_MODE_NEOX);
    store(s, k, s->k_cache, il);
    store(s, v, s->v_cache, il);
    rt_tensor_t *K = rt_permute(ctx, cache_rows(s, s->k_cache, il, 0, n_kv), 0, 2, 1, 3);
    rt_tensor_t *kq = rt_mul_mat(ctx, K, rt_permute(ctx, q, 0, 2, 1, 3));
    kq = rt_format_name(rt_soft_max_ext(ctx, kq, s->mask, 1.0f / sqrtf((float)hd)), "kq.%d", il);
    rt_tensor_t *V = rt_permute(ctx, cache_rows(s, s->v_cache, il, 0, n_kv), 1, 2, 0, 3);
    V = rt_format_name(rt_cont_3d(ctx, V, n_kv, hd, p->n_head), "v_trans.%d", il);
    rt_tensor_t *kqv = rt_mul_mat(ctx, V, kq);
    rt_tensor_t *merged = rt_cont_2d(ctx, rt_permute(ctx, kqv, 0, 2, 1, 3), p->n_embd, n);
    return linear(s, merged, p->n_embd, "wo", il);
}

static rt_tensor_t *ffn(const llama_state_t *s, rt_tensor_t *x, int il) {
    rt_tensor_t *gate = linear(s, x, s->p->n_ff, "w1", il);
    rt_tensor_t *up = linear(s, x, s->p->n_ff, "w3", il);
    return linear(s, rt_swiglu(s->ctx, gate, up), s->p->n_embd, "w2", il);
}

static rt_tensor_t *build_llama(rt_context_t *ctx, rt_graph_t *g, const tool_graph_params_t *p) {
    const int64_t n = p->n_tokens, n_kv = p->n_past + n;
    llama_state_t s = {p, ctx, g, NULL, NULL, NULL, NULL};
    rt_tensor_t *tokens = input(ctx, RT_TYPE_I32, n, 1, "tokens");
    s.pos = input(ctx, RT_TYPE_I32, n, 1, "pos");
    s.mask = input(ctx, RT_TYPE_F32, n_kv, n, "mask");
    const int64_t cache = (int64_t)p->n_layer * p->n_ctx * p->n_embd;
    s.k_cache = rt_set_name(rt_new_tensor_1d(ctx, KVTYPE, cache), "k_cache");
    s.v_cache = rt_set_name(rt_new_tensor_1d(ctx, KVTYPE, cache), "v_cache");
    rt_tensor_t *embd = leaf(ctx, WTYPE, p->n_embd, p->n_vocab, "tok_embd", -1);
    rt_tensor_t *cur = rt_set_name(rt_get_rows(ctx, embd, tokens), "inp");
    for (int il = 0; il < p->n_layer; il++) {
        rt_tensor_t *attn = attention(&s, norm(&s, cur, "attn_norm", il), il);
        rt_tensor_t *ffn_inp = rt_format_name(rt_add(ctx, attn, cur), "ffn_inp.%d", il);
        rt_tensor_t *out = ffn(&s, norm(&s, ffn_inp, "ffn_norm", il), il);
        cur = rt_format_name(rt_add(ctx, out, ffn_inp), "l_out.%d", il);
    }
    cur = norm(&s, cur, "out_norm", -1);
    rt_tensor_t *out = rt_mul_mat(ctx, leaf(ctx, WTYPE, p->n_embd, p->n_vocab, "output", -1), cur);
    return rt_set_name(out, "logits");
}

//===--- building ---===//

rt_graph_t *tool_graph_build(const tool_graph_params_t *p, rt_context_t **out_ctx) {
    const size_t n_tensors = 64 + (size_t)p->n_layer * 64, graph_size = n_tensors;
    rt_context_params_t cp = {
        .struct_size = sizeof cp,
        .mem_size = n_tensors * rt_tensor_overhead() + rt_graph_overhead(graph_size),
        .no_alloc = true,
    };
    *out_ctx = NULL;
    rt_status_t st = rt_context_create(&cp, out_ctx);
    if (st != RT_OK) {
        fprintf(stderr, "rt_context_create: %s: %s\n", rt_status_name(st), rt_last_error());
        return NULL;
    }
    rt_graph_t *g = rt_graph_create(*out_ctx, graph_size);
    const bool mlp = strcmp(p->name, "mlp") == 0;
    rt_tensor_t *out = mlp ? build_mlp(*out_ctx, p) : build_llama(*out_ctx, g, p);
    rt_set_output(out);
    rt_graph_build_forward_expand(g, out);
    return g;
}

int32_t *tool_graph_leaf_ids(const rt_graph_t *g) {
    const int32_t n = rt_graph_n_leafs(g);
    int32_t *ids = malloc((size_t)(n > 0 ? n : 1) * sizeof ids[0]);
    for (int32_t i = 0; ids != NULL && i < n; i++)
        ids[i] = (rt_graph_leaf(g, i)->flags & RT_TENSOR_FLAG_INPUT) ? 0 : -1;
    return ids;
}
