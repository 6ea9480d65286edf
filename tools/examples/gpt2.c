/* SPDX-License-Identifier: MIT */
/* gpt2.c: GPT-2 for the four examples (gpt2.h), from a GGUF file written
 * as llama.cpp's converter does (token_embd, position_embd, output_norm,
 * blk.N.attn_norm / attn_qkv / attn_output / ffn_norm / ffn_up / ffn_down
 * with their biases; output.weight, or token_embd tied). One layer:
 *
 *   h = x + W_o . attention(layer_norm(x)) + b_o
 *   x = h + W_down . gelu(W_up . layer_norm(h) + b_up) + b_down
 *
 * with causal attention over the whole sequence: Q, K, V as views of the
 * fused projection, KQ = K^T Q, the future masked (diag_mask_inf), the
 * softmax, and V^T made contiguous for the product (docs/memory.md, section 2.5). */
#include "gpt2.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const int32_t gpt2_prompt[] = {259, 40, 101, 72, 108, 257, 111, 44, 258, 3, 97, 200};
const int32_t gpt2_n_prompt = sizeof gpt2_prompt / sizeof gpt2_prompt[0];

static int32_t key_u32(const rt_gguf_t *g, const char *key) {
    uint32_t v = 0;
    return rt_gguf_get_u32(g, key, &v) == RT_OK ? (int32_t)v : -1;
}

int gpt2_open(gpt2_t *m, const char *path) {
    memset(m, 0, sizeof *m);
    if (rt_gguf_open(path, NULL, &m->gguf) != RT_OK) {
        fprintf(stderr, "%s: %s\n", path, rt_last_error());
        return -1;
    }
    m->n_ctx = key_u32(m->gguf, "gpt2.context_length");
    m->n_embd = key_u32(m->gguf, "gpt2.embedding_length");
    m->n_head = key_u32(m->gguf, "gpt2.attention.head_count");
    m->n_layer = key_u32(m->gguf, "gpt2.block_count");
    rt_gguf_get_f32(m->gguf, "gpt2.attention.layer_norm_epsilon", &m->eps);
    rt_gguf_tensor_info_t ti = {.struct_size = sizeof ti};
    if (rt_gguf_get_tensor_info(m->gguf, rt_gguf_find_tensor(m->gguf, "token_embd.weight"), &ti) == RT_OK)
        m->n_vocab = (int32_t)ti.ne[1];
    if (m->n_ctx > 0 && m->n_embd > 0 && m->n_head > 0 && m->n_layer > 0 && m->n_layer <= GPT2_MAX_LAYERS &&
        m->n_vocab > 0)
        return 0;
    fprintf(stderr, "%s: not a GPT-2 file rt's examples read\n", path);
    return -1;
}

void gpt2_close(gpt2_t *m) { rt_gguf_destroy(m->gguf); }

//===--- the weights ---===//

static rt_tensor_t *declare(const gpt2_t *m, rt_context_t *ctx, const char *name) {
    rt_gguf_tensor_info_t ti = {.struct_size = sizeof ti};
    const int64_t i = rt_gguf_find_tensor(m->gguf, name);
    if (i < 0 || rt_gguf_get_tensor_info(m->gguf, i, &ti) != RT_OK) return NULL;
    return rt_set_name(rt_new_tensor(ctx, ti.type, ti.n_dims, ti.ne), name);
}

/* The weights of layer il and where their slots are, in file order. */
static const char *const layer_names[12] = {
    "attn_norm.weight", "attn_norm.bias", "attn_qkv.weight", "attn_qkv.bias", "attn_output.weight",
    "attn_output.bias", "ffn_norm.weight", "ffn_norm.bias", "ffn_up.weight", "ffn_up.bias",
    "ffn_down.weight", "ffn_down.bias"};

static rt_tensor_t **layer_slot(gpt2_layer_t *L, int i) { return &(&L->ln_1_g)[i]; }

void gpt2_declare(gpt2_t *m, gpt2_ctx_fn ctx_for, void *user) {
    char name[RT_MAX_NAME];
    m->wte = declare(m, ctx_for(user, -1), "token_embd.weight");
    m->wpe = declare(m, ctx_for(user, -1), "position_embd.weight");
    rt_context_t *out = ctx_for(user, m->n_layer);
    m->ln_f_g = declare(m, out, "output_norm.weight");
    m->ln_f_b = declare(m, out, "output_norm.bias");
    m->lm_head = declare(m, out, rt_gguf_find_tensor(m->gguf, "output.weight") >= 0 ? "output.weight"
                                                                                   : "token_embd.weight");
    for (int32_t il = 0; il < m->n_layer; il++)
        for (int i = 0; i < 12; i++) {
            snprintf(name, sizeof name, "blk.%d.%s", il, layer_names[i]);
            *layer_slot(&m->layers[il], i) = declare(m, ctx_for(user, il), name);
        }
}

int32_t gpt2_n_weights(const gpt2_t *m) { return 5 + 12 * m->n_layer; }

static int upload(const gpt2_t *m, rt_tensor_t *t) {
    const int64_t i = rt_gguf_find_tensor(m->gguf, rt_get_name(t));
    if (rt_tensor_set(t, rt_gguf_tensor_data(m->gguf, i), 0, rt_nbytes(t)) == RT_OK) return 0;
    fprintf(stderr, "%s: %s\n", rt_get_name(t), rt_last_error());
    return -1;
}

/* Every weight, the tied head (a second header of token_embd) included. */
static size_t each_weight(const gpt2_t *m, int (*f)(const gpt2_t *, rt_tensor_t *), int *rc) {
    rt_tensor_t *const top[5] = {m->wte, m->wpe, m->ln_f_g, m->ln_f_b, m->lm_head};
    size_t bytes = 0;
    for (int i = 0; i < 5; i++) {
        bytes += rt_nbytes(top[i]);
        if (f && *rc == 0) *rc = f(m, top[i]);
    }
    for (int32_t il = 0; il < m->n_layer; il++)
        for (int i = 0; i < 12; i++) {
            rt_tensor_t *t = *layer_slot((gpt2_layer_t *)&m->layers[il], i);
            bytes += rt_nbytes(t);
            if (f && *rc == 0) *rc = f(m, t);
        }
    return bytes;
}

size_t gpt2_weight_bytes(const gpt2_t *m) {
    int rc = 0;
    return each_weight(m, NULL, &rc);
}

/* Before the weights are declared: the file's bytes, the tied head twice. */
static size_t file_bytes(const gpt2_t *m) {
    rt_gguf_tensor_info_t ti = {.struct_size = sizeof ti};
    size_t sum = 0;
    for (int64_t i = 0; i < rt_gguf_n_tensors(m->gguf); i++)
        if (rt_gguf_get_tensor_info(m->gguf, i, &ti) == RT_OK) sum += ti.size + 64;
    rt_gguf_get_tensor_info(m->gguf, rt_gguf_find_tensor(m->gguf, "token_embd.weight"), &ti);
    return sum + ti.size;
}

int gpt2_upload(const gpt2_t *m) {
    int rc = 0;
    each_weight(m, upload, &rc);
    return rc;
}

static rt_context_t *the_pool(void *user, int32_t il) {
    (void)il;
    return user;
}

rt_context_t *gpt2_weights_in_pool(gpt2_t *m) {
    const size_t size = file_bytes(m) + (size_t)gpt2_n_weights(m) * rt_tensor_overhead();
    const rt_context_params_t p = {.struct_size = sizeof p, .mem_size = size};
    rt_context_t *ctx = NULL;
    if (rt_context_create(&p, &ctx) != RT_OK) {
        fprintf(stderr, "weights: %s\n", rt_last_error());
        return NULL;
    }
    gpt2_declare(m, the_pool, ctx);
    if (gpt2_upload(m) == 0) return ctx;
    rt_context_destroy(ctx);
    return NULL;
}

//===--- the graph ---===//

static rt_tensor_t *layer_norm(rt_context_t *ctx, rt_tensor_t *x, rt_tensor_t *g, rt_tensor_t *b, float eps) {
    return rt_add(ctx, rt_mul(ctx, rt_norm(ctx, x, eps), g), b);
}

/* Rows [first, first + n_embd) of qkv {3 n_embd, N} as {hd, N, n_head}. */
static rt_tensor_t *heads(const gpt2_t *m, rt_context_t *ctx, rt_tensor_t *qkv, int64_t first, int32_t n) {
    const int64_t hd = m->n_embd / m->n_head;
    rt_tensor_t *v = rt_view_3d(ctx, qkv, hd, m->n_head, n, (size_t)hd * qkv->nb[0], qkv->nb[1],
                                (size_t)first * qkv->nb[0]);
    return rt_permute(ctx, rt_cont(ctx, v), 0, 2, 1, 3);
}

static rt_tensor_t *attention(const gpt2_t *m, rt_context_t *ctx, const gpt2_layer_t *L, rt_tensor_t *x, int32_t n) {
    const int64_t hd = m->n_embd / m->n_head;
    rt_tensor_t *qkv = rt_add(ctx, rt_mul_mat(ctx, L->c_attn_w, x), L->c_attn_b);
    rt_tensor_t *q = heads(m, ctx, qkv, 0, n), *k = heads(m, ctx, qkv, m->n_embd, n);
    rt_tensor_t *vt = rt_cont(ctx, rt_permute(ctx, heads(m, ctx, qkv, 2 * m->n_embd, n), 1, 0, 2, 3));
    rt_tensor_t *kq = rt_soft_max(ctx, rt_diag_mask_inf(ctx, rt_scale(ctx, rt_mul_mat(ctx, k, q), 1.0f / sqrtf((float)hd)), 0));
    rt_tensor_t *kqv = rt_mul_mat(ctx, vt, kq);                       /* {hd, N, n_head} */
    rt_tensor_t *merged = rt_cont_2d(ctx, rt_permute(ctx, kqv, 0, 2, 1, 3), m->n_embd, n);
    return rt_add(ctx, rt_mul_mat(ctx, L->c_proj_w, merged), L->c_proj_b);
}

static rt_tensor_t *ffn(rt_context_t *ctx, const gpt2_layer_t *L, rt_tensor_t *x) {
    rt_tensor_t *up = rt_gelu(ctx, rt_add(ctx, rt_mul_mat(ctx, L->fc_w, x), L->fc_b));
    return rt_add(ctx, rt_mul_mat(ctx, L->proj_w, up), L->proj_b);
}

size_t gpt2_graph_size(const gpt2_t *m) { return (size_t)(40 * m->n_layer + 32); }

rt_graph_t *gpt2_graph(const gpt2_t *m, rt_context_t *ctx, int32_t n) {
    rt_graph_t *g = rt_graph_create(ctx, gpt2_graph_size(m));
    rt_tensor_t *tokens = rt_set_name(rt_new_tensor_1d(ctx, RT_TYPE_I32, n), "tokens");
    rt_tensor_t *pos = rt_set_name(rt_new_tensor_1d(ctx, RT_TYPE_I32, n), "positions");
    rt_set_input(tokens);
    rt_set_input(pos);
    rt_tensor_t *x = rt_add(ctx, rt_get_rows(ctx, m->wte, tokens), rt_get_rows(ctx, m->wpe, pos));
    for (int32_t il = 0; il < m->n_layer; il++) {
        const gpt2_layer_t *L = &m->layers[il];
        rt_tensor_t *h = rt_add(ctx, attention(m, ctx, L, layer_norm(ctx, x, L->ln_1_g, L->ln_1_b, m->eps), n), x);
        x = rt_add(ctx, ffn(ctx, L, layer_norm(ctx, h, L->ln_2_g, L->ln_2_b, m->eps)), h);
    }
    x = rt_view_2d(ctx, x, m->n_embd, 1, x->nb[1], (size_t)(n - 1) * x->nb[1]);
    rt_tensor_t *logits = rt_mul_mat(ctx, m->lm_head, layer_norm(ctx, x, m->ln_f_g, m->ln_f_b, m->eps));
    rt_set_output(rt_set_name(logits, "logits"));
    rt_graph_build_forward_expand(g, logits);
    return g;
}

size_t gpt2_headers_size(const gpt2_t *m) {
    return 2 * gpt2_graph_size(m) * rt_tensor_overhead() + rt_graph_overhead(gpt2_graph_size(m));
}

rt_context_t *gpt2_headers_context(void *block, size_t size) {
    const rt_context_params_t p = {.struct_size = sizeof p, .mem_size = size, .mem_buffer = block,
                                   .no_alloc = true};
    rt_context_t *ctx = NULL;
    return rt_context_create(&p, &ctx) == RT_OK ? ctx : NULL;
}

int gpt2_get_logits(const gpt2_t *m, rt_graph_t *g, float *out) {
    return rt_tensor_get(rt_graph_get_tensor(g, "logits"), out, 0, (size_t)m->n_vocab * sizeof out[0]) == RT_OK
           ? 0 : -1;
}

int gpt2_gallocr_reserve(const gpt2_t *m, rt_gallocr_t *ga, void *headers) {
    rt_context_t *ctx = gpt2_headers_context(headers, gpt2_headers_size(m));
    const rt_status_t st = ctx ? rt_gallocr_reserve(ga, gpt2_graph(m, ctx, gpt2_n_prompt + 8)) : RT_ERR_OUT_OF_MEMORY;
    rt_context_destroy(ctx);
    return st == RT_OK ? 0 : -1;
}

int gpt2_gallocr_eval(const gpt2_t *m, rt_gallocr_t *ga, rt_queue_t *q, void *headers,
                      const int32_t *tokens, int32_t n, float *logits) {
    rt_context_t *ctx = gpt2_headers_context(headers, gpt2_headers_size(m));
    if (ctx == NULL) return -1;
    rt_graph_t *g = gpt2_graph(m, ctx, n);
    int rc = rt_gallocr_alloc_graph(ga, g) == RT_OK ? gpt2_set_inputs(g, tokens, n) : -1;
    if (rc == 0 && rt_queue_compute(q, g) != RT_OK) rc = -1;
    if (rc == 0) rc = gpt2_get_logits(m, g, logits);
    rt_context_destroy(ctx);
    return rc;
}

int gpt2_set_inputs(rt_graph_t *g, const int32_t *tokens, int32_t n) {
    int32_t pos[GPT2_MAX_TOKENS];
    for (int32_t i = 0; i < n; i++) pos[i] = i;
    rt_status_t st = rt_tensor_set(rt_graph_get_tensor(g, "tokens"), tokens, 0, (size_t)n * sizeof tokens[0]);
    if (st == RT_OK) st = rt_tensor_set(rt_graph_get_tensor(g, "positions"), pos, 0, (size_t)n * sizeof pos[0]);
    if (st == RT_OK) return 0;
    fprintf(stderr, "inputs: %s\n", rt_last_error());
    return -1;
}

//===--- the greedy loop ---===//

int gpt2_main(gpt2_t *m, int argc, char **argv, int (*setup)(void *user), gpt2_eval_fn eval,
              void (*teardown)(void *user), void *user) {
    if (gpt2_open(m, argc > 1 ? argv[1] : "tests/arch/models/random-gpt2.gguf") != 0) return 1;
    int rc = setup(user) != 0 || gpt2_generate(m, eval, user, gpt2_n_prompt + 8) != 0;
    if (rc) fprintf(stderr, "%s: failed: %s\n", argv[0], rt_last_error());
    teardown(user);
    gpt2_close(m);
    return rc;
}

int gpt2_generate(const gpt2_t *m, gpt2_eval_fn eval, void *user, int32_t n_total) {
    int32_t tokens[GPT2_MAX_TOKENS];
    float logits[4096];
    if (m->n_vocab > 4096 || n_total > GPT2_MAX_TOKENS) return -1;
    memcpy(tokens, gpt2_prompt, (size_t)gpt2_n_prompt * sizeof tokens[0]);
    for (int32_t n = gpt2_n_prompt; n < n_total; n++) {
        if (eval(user, tokens, n, logits) != 0) return -1;
        if (n == gpt2_n_prompt) {
            printf("logits %d:", m->n_vocab);
            for (int32_t i = 0; i < m->n_vocab; i++) printf(" %.6g", logits[i]);
            printf("\ngreedy:");
        }
        int32_t best = 0;
        for (int32_t i = 1; i < m->n_vocab; i++) best = logits[i] > logits[best] ? i : best;
        tokens[n] = best;
        printf(" %d", best);
    }
    printf("\n");
    return 0;
}
