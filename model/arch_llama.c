/* SPDX-License-Identifier: MIT */
/* arch_llama.c: the llama architecture as a GGUF file describes it. The
 * hyperparameters come from the llama.* keys; the weights are the tensors
 * llama.cpp's converter writes (token_embd, output_norm, output, and per
 * block attn_norm, attn_q/k/v/output, ffn_norm, ffn_gate/up/down), each
 * checked for its shape before anything is allocated, so that a bad file
 * fails with the tensor's name rather than inside a graph. Its Q and K
 * weights are permuted by the converter for rope's NORMAL mode (adjacent
 * pairs), which is the mode the graph uses. Without output.weight the
 * output projection is token_embd (tied embeddings). */
#include "model_impl.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

//===--- hyperparameters ---===//

/* An integer key stored as any integer type; def when absent (def < 0:
 * required). */
static rt_status_t read_int(const rt_gguf_t *g, const char *key, int64_t def, int32_t *out) {
    uint32_t u32;
    int32_t i32;
    uint64_t u64;
    int64_t v;
    if (rt_gguf_get_u32(g, key, &u32) == RT_OK) v = u32;
    else if (rt_gguf_get_i32(g, key, &i32) == RT_OK) v = i32;
    else if (rt_gguf_get_u64(g, key, &u64) == RT_OK) v = (int64_t)(u64 > INT32_MAX ? -1 : (int64_t)u64);
    else if (rt_gguf_find_key(g, key) < 0 && def >= 0) v = def;
    else return rtm_error(RT_ERR_FORMAT, "llama: key %s is missing or not an integer", key);
    if (v < 0 || v > INT32_MAX) return rtm_error(RT_ERR_FORMAT, "llama: %s = %" PRId64 " is out of range", key, v);
    *out = (int32_t)v;
    return RT_OK;
}

static rt_status_t read_float(const rt_gguf_t *g, const char *key, float def, float *out) {
    if (rt_gguf_get_f32(g, key, out) == RT_OK) return RT_OK;
    if (rt_gguf_find_key(g, key) >= 0)
        return rtm_error(RT_ERR_FORMAT, "llama: key %s is not a float32", key);
    *out = def;
    return RT_OK;
}

static rt_status_t read_hparams(const rt_gguf_t *g, rtm_hparams_t *hp) {
    rt_status_t st = read_int(g, "llama.context_length", 2048, &hp->n_ctx_train);
    if (st == RT_OK) st = read_int(g, "llama.embedding_length", -1, &hp->n_embd);
    if (st == RT_OK) st = read_int(g, "llama.block_count", -1, &hp->n_layer);
    if (st == RT_OK) st = read_int(g, "llama.feed_forward_length", -1, &hp->n_ff);
    if (st == RT_OK) st = read_int(g, "llama.attention.head_count", -1, &hp->n_head);
    if (st == RT_OK) st = read_int(g, "llama.attention.head_count_kv", hp->n_head, &hp->n_head_kv);
    if (st == RT_OK && hp->n_head > 0) hp->head_dim = hp->n_embd / hp->n_head;
    if (st == RT_OK) st = read_int(g, "llama.rope.dimension_count", hp->head_dim, &hp->n_rot);
    if (st == RT_OK) st = read_float(g, "llama.rope.freq_base", 10000.0f, &hp->rope_freq_base);
    if (st == RT_OK)
        st = read_float(g, "llama.attention.layer_norm_rms_epsilon", 1e-5f, &hp->norm_eps);
    return st;
}

/* Values no model can have: a norm epsilon that is negative, zero (a zero
 * row divides by zero) or not finite; a rope base that is not a finite
 * number above 1 (every angle 0 or NaN). Each would pass as weights and
 * come out as NaN logits or meaningless text. */
static rt_status_t check_floats(const rtm_hparams_t *hp, const char *path) {
    if (!(isfinite(hp->norm_eps) && hp->norm_eps > 0.0f && hp->norm_eps < 1.0f))
        return rtm_error(RT_ERR_FORMAT, "%s: llama.attention.layer_norm_rms_epsilon is %g, "
                         "not in (0, 1)", path, (double)hp->norm_eps);
    if (!(isfinite(hp->rope_freq_base) && hp->rope_freq_base > 1.0f))
        return rtm_error(RT_ERR_FORMAT, "%s: llama.rope.freq_base is %g, not a finite number "
                         "above 1", path, (double)hp->rope_freq_base);
    return RT_OK;
}

static rt_status_t check_hparams(const rtm_hparams_t *hp, const char *path) {
    const bool ok = hp->n_embd > 0 && hp->n_layer > 0 && hp->n_ff > 0 && hp->n_head > 0 &&
                    hp->n_head_kv > 0 && hp->n_embd % hp->n_head == 0 &&
                    hp->n_head % hp->n_head_kv == 0 && hp->n_rot > 0 && hp->n_rot % 2 == 0 &&
                    hp->n_rot <= hp->head_dim && hp->n_ctx_train > 0;
    if (ok) return check_floats(hp, path);
    return rtm_error(RT_ERR_FORMAT, "%s: inconsistent llama hyperparameters: n_embd %d, n_layer %d, "
                     "n_ff %d, n_head %d, n_head_kv %d, rope dims %d", path, hp->n_embd,
                     hp->n_layer, hp->n_ff, hp->n_head, hp->n_head_kv, hp->n_rot);
}

//===--- tensors and their shapes ---===//

static int64_t find(const rtm_model_t *m, const char *name) { return rt_gguf_find_tensor(m->gguf, name); }

/* The types mul_mat and get_rows read (abi/rt_tensor.h): anything else
 * would be refused by the graph builder, which aborts. */
static bool is_weight_type(rt_type_t t) {
    const rt_type_traits_t *tr = rt_type_traits(t);
    return tr != NULL && t != RT_TYPE_I32 && t != RT_TYPE_Q8_K; /* Q8_K: activations only */
}

/* Tensor `name` exists with shape {ne0, ne1} (ne1 0: a vector) and a type
 * the graph can use: f32 for norms (rt_mul with an f32 activation). */
static rt_status_t check_tensor(const rtm_model_t *m, const char *name, int64_t ne0, int64_t ne1,
                                bool must_be_f32) {
    rt_gguf_tensor_info_t ti = {.struct_size = sizeof ti};
    const int64_t i = find(m, name);
    if (i < 0) return rtm_error(RT_ERR_FORMAT, "llama: the file has no tensor %s", name);
    const rt_status_t st = rt_gguf_get_tensor_info(m->gguf, i, &ti);
    if (st != RT_OK) /* a type rt does not implement: the message names it */
        return rtm_error_core(st, "llama");
    const int64_t want1 = ne1 > 0 ? ne1 : 1;
    if (ti.ne[0] != ne0 || ti.ne[1] != want1 || ti.ne[2] != 1 || ti.ne[3] != 1)
        return rtm_error(RT_ERR_FORMAT, "llama: tensor %s is {%" PRId64 ", %" PRId64 ", %" PRId64
                         ", %" PRId64 "}, expected {%" PRId64 ", %" PRId64 "}", name, ti.ne[0],
                         ti.ne[1], ti.ne[2], ti.ne[3], ne0, want1);
    if (must_be_f32 ? ti.type != RT_TYPE_F32 : !is_weight_type(ti.type))
        return rtm_error(RT_ERR_FORMAT, "llama: tensor %s is %s, expected %s", name,
                         rt_type_name(ti.type), must_be_f32 ? "f32" : "a weight type rt implements");
    return RT_OK;
}

static const char *blk_name(char *buf, size_t size, int32_t il, const char *what) {
    snprintf(buf, size, "blk.%d.%s.weight", il, what);
    return buf;
}

static rt_status_t check_layer(const rtm_model_t *m, int32_t il) {
    const rtm_hparams_t *hp = &m->hp;
    const int32_t e = hp->n_embd, ekv = rtm_n_embd_kv(hp), ff = hp->n_ff;
    char n[RT_MAX_NAME];
    rt_status_t st = check_tensor(m, blk_name(n, sizeof n, il, "attn_norm"), e, 0, true);
    if (st == RT_OK) st = check_tensor(m, blk_name(n, sizeof n, il, "attn_q"), e, e, false);
    if (st == RT_OK) st = check_tensor(m, blk_name(n, sizeof n, il, "attn_k"), e, ekv, false);
    if (st == RT_OK) st = check_tensor(m, blk_name(n, sizeof n, il, "attn_v"), e, ekv, false);
    if (st == RT_OK) st = check_tensor(m, blk_name(n, sizeof n, il, "attn_output"), e, e, false);
    if (st == RT_OK) st = check_tensor(m, blk_name(n, sizeof n, il, "ffn_norm"), e, 0, true);
    if (st == RT_OK) st = check_tensor(m, blk_name(n, sizeof n, il, "ffn_gate"), e, ff, false);
    if (st == RT_OK) st = check_tensor(m, blk_name(n, sizeof n, il, "ffn_up"), e, ff, false);
    if (st == RT_OK) st = check_tensor(m, blk_name(n, sizeof n, il, "ffn_down"), ff, e, false);
    return st;
}

static rt_status_t check_tensors(rtm_model_t *m) {
    rt_gguf_tensor_info_t ti = {.struct_size = sizeof ti};
    const int64_t emb = find(m, "token_embd.weight");
    if (emb < 0) return rtm_error(RT_ERR_FORMAT, "llama: the file has no tensor token_embd.weight");
    rt_gguf_get_tensor_info(m->gguf, emb, &ti);
    m->hp.n_vocab = ti.ne[1] > INT32_MAX ? 0 : (int32_t)ti.ne[1];
    if (m->hp.n_vocab < rtm_vocab_n_tokens(m->vocab))
        return rtm_error(RT_ERR_FORMAT, "llama: token_embd.weight has %d rows for %d tokens",
                         m->hp.n_vocab, rtm_vocab_n_tokens(m->vocab));
    rt_status_t st = check_tensor(m, "token_embd.weight", m->hp.n_embd, m->hp.n_vocab, false);
    if (st == RT_OK) st = check_tensor(m, "output_norm.weight", m->hp.n_embd, 0, true);
    if (st == RT_OK && find(m, "output.weight") >= 0)
        st = check_tensor(m, "output.weight", m->hp.n_embd, m->hp.n_vocab, false);
    for (int32_t il = 0; st == RT_OK && il < m->hp.n_layer; il++) st = check_layer(m, il);
    return st;
}

rt_status_t rtm_llama_read(rtm_model_t *m, const char *path) {
    rt_status_t st = read_hparams(m->gguf, &m->hp);
    if (st == RT_OK) st = check_hparams(&m->hp, path);
    if (st == RT_OK) st = check_tensors(m);
    return st;
}

//===--- sizes ---===//

static uint64_t bytes_of(const rtm_model_t *m, const char *name) {
    rt_gguf_tensor_info_t ti = {.struct_size = sizeof ti};
    const int64_t i = find(m, name);
    return i >= 0 && rt_gguf_get_tensor_info(m->gguf, i, &ti) == RT_OK ? ti.size : 0;
}

static const char *const layer_parts[] = {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output",
                                          "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"};
enum { N_LAYER_PARTS = sizeof layer_parts / sizeof layer_parts[0] };

uint64_t rtm_llama_layer_bytes(const rtm_model_t *m, int32_t il) {
    char n[RT_MAX_NAME];
    uint64_t sum = 0;
    for (int i = 0; i < N_LAYER_PARTS; i++) sum += bytes_of(m, blk_name(n, sizeof n, il, layer_parts[i]));
    return sum;
}

uint64_t rtm_llama_input_bytes(const rtm_model_t *m) { return bytes_of(m, "token_embd.weight"); }

uint64_t rtm_llama_output_bytes(const rtm_model_t *m) {
    const char *out = find(m, "output.weight") >= 0 ? "output.weight" : "token_embd.weight";
    return bytes_of(m, "output_norm.weight") + bytes_of(m, out);
}

//===--- declaring the weights ---===//

static rt_tensor_t *new_header(rtm_model_t *m, rt_context_t *ctx, const char *name) {
    rt_gguf_tensor_info_t ti = {.struct_size = sizeof ti};
    rt_gguf_get_tensor_info(m->gguf, find(m, name), &ti);
    return rt_set_name(rt_new_tensor(ctx, ti.type, ti.n_dims, ti.ne), name);
}

/* Whether device d's weight buffer type takes file tensor `name`, asked
 * with a header in a scratch context (one left in ctx_w would be
 * allocated). */
static bool repacks(rtm_model_t *m, int32_t d, const char *name) {
    if (m->weights_buft[d] == NULL) return false;
    const rt_context_params_t p = {.struct_size = sizeof p, .mem_size = rt_tensor_overhead(),
                                   .no_alloc = true};
    rt_context_t *scratch = NULL;
    if (rt_context_create(&p, &scratch) != RT_OK) return false;
    const bool ok = rt_buffer_type_supports_tensor(m->weights_buft[d], new_header(m, scratch, name));
    rt_context_destroy(scratch);
    return ok;
}

/* A header for file tensor `name` on device d, or the one that is there
 * already (tied embeddings on one device). A matrix weight (only ever the
 * left operand of a product) goes into ctx_w when the device repacks it. */
static rt_tensor_t *declare_as(rtm_model_t *m, int32_t d, const char *name, bool matrix) {
    rt_tensor_t *t = rt_context_get_tensor(m->ctx[d], name);
    if (t == NULL && m->ctx_w[d] != NULL) t = rt_context_get_tensor(m->ctx_w[d], name);
    if (t != NULL) return t;
    return new_header(m, matrix && repacks(m, d, name) ? m->ctx_w[d] : m->ctx[d], name);
}

static rt_tensor_t *declare(rtm_model_t *m, int32_t d, const char *name) {
    return declare_as(m, d, name, false);
}

static void declare_layer(rtm_model_t *m, int32_t il) {
    const int32_t d = m->layout.layer[il];
    rtm_layer_t *L = &m->layers[il];
    rt_tensor_t **slots[N_LAYER_PARTS] = {&L->attn_norm, &L->wq, &L->wk, &L->wv, &L->wo,
                                          &L->ffn_norm, &L->ffn_gate, &L->ffn_up, &L->ffn_down};
    char n[RT_MAX_NAME];
    for (int i = 0; i < N_LAYER_PARTS; i++) {
        const bool matrix = slots[i] != &L->attn_norm && slots[i] != &L->ffn_norm;
        *slots[i] = declare_as(m, d, blk_name(n, sizeof n, il, layer_parts[i]), matrix);
    }
}

/* The first weight buffer type of dev (RT_BUFT_FLAG_WEIGHTS), or NULL. */
static rt_buffer_type_t *weights_buft(const rt_device_t *dev) {
    for (int32_t i = 0; i < rt_device_buffer_type_count(dev); i++)
        if (rt_buffer_type_is_weights(rt_device_buffer_type(dev, i))) return rt_device_buffer_type(dev, i);
    return NULL;
}

/* Each device's contexts can hold every weight header: the model is small
 * in headers even when it is large in bytes. */
rt_status_t rtm_llama_declare(rtm_model_t *m, bool repack) {
    const size_t n_tensors = (size_t)N_LAYER_PARTS * (size_t)m->hp.n_layer + 4;
    const rt_context_params_t p = {.struct_size = sizeof p,
                                   .mem_size = n_tensors * rt_tensor_overhead(), .no_alloc = true};
    for (int32_t d = 0; d < m->n_devices; d++) {
        rt_status_t st = rt_context_create(&p, &m->ctx[d]);
        m->weights_buft[d] = repack ? weights_buft(m->devices[d]) : NULL;
        if (st == RT_OK && m->weights_buft[d] != NULL) st = rt_context_create(&p, &m->ctx_w[d]);
        if (st != RT_OK) return rtm_error_core(st, "rtm_model_load: weight context");
    }
    m->tok_embd = declare(m, m->layout.input, "token_embd.weight");
    m->output_norm = declare(m, m->layout.output, "output_norm.weight");
    const bool tied = find(m, "output.weight") < 0; /* then also read by GET_ROWS */
    m->output = declare_as(m, m->layout.output, tied ? "token_embd.weight" : "output.weight", !tied);
    for (int32_t il = 0; il < m->hp.n_layer; il++) declare_layer(m, il);
    return RT_OK;
}
