/* SPDX-License-Identifier: MIT */
/* model_corpus.c: the variants of model_corpus.h and their writer: every
 * key of the source copied (tools/gguf_copy.h) except the one changed,
 * every tensor borrowed from the source's mapping except the poisoned one,
 * which is copied first. */
#include "model_corpus.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../abi/rt_gguf.h"
#include "../tools/gguf_copy.h"

#define X10 "xxxxxxxxxx"
#define LONG_PIECE X10 X10 X10 X10 X10 X10 X10 X10 X10 X10 X10 X10 X10 X10 X10 \
    X10 X10 X10 X10 X10 X10 X10 X10 X10 X10 X10 X10 X10 X10 X10

/* Grows with every bug found: the name says what the file does wrong. */
const mc_variant_t mc_variants[] = {
    {"neg-eps", MC_F32, "llama.attention.layer_norm_rms_epsilon", .f32 = -1e-5f,
     .expect = "layer_norm_rms_epsilon is -1e-05"},
    {"nan-eps", MC_F32, "llama.attention.layer_norm_rms_epsilon", .f32 = NAN,
     .expect = "layer_norm_rms_epsilon is nan"},
    {"inf-rope", MC_F32, "llama.rope.freq_base", .f32 = INFINITY, .expect = "freq_base is inf"},
    {"zero-rope", MC_F32, "llama.rope.freq_base", .f32 = 0.0f, .expect = "freq_base is 0"},
    {"zero-rope-dims", MC_U32, "llama.rope.dimension_count", .u32 = 0, .expect = "rope.dimension_count is 0"},
    {"odd-rope-dims", MC_U32, "llama.rope.dimension_count", .u32 = 7, .expect = "rope.dimension_count is 7"},
    {"bad-tokenizer", MC_STR, "tokenizer.ggml.model", .str = "llamb",
     .expect = "vocabulary: tokenizer 'llamb'"},
    {"bos-past-vocab", MC_U32, "tokenizer.ggml.bos_token_id", .u32 = 100000,
     .expect = "bos_token_id is 100000"},
    {"huge-layers", MC_U32, "llama.block_count", .u32 = 100000000, .expect = "no tensor blk.5."},
    {"huge-embd", MC_U32, "llama.embedding_length", .u32 = 1000000000,
     .expect = "token_embd.weight is {64, 512, 1, 1}, expected {1000000000, 512}"},
    {"zero-heads", MC_U32, "llama.attention.head_count", .u32 = 0,
     .expect = "inconsistent llama hyperparameters"},
    {"nan-weight", MC_NAN, "blk.0.attn_norm.weight", .stage = MC_DECODE, .expect = "step 1"},
    /* ',' (432), the first token stories260K generates, 300 bytes long: rt-run printed nothing */
    {"long-piece", MC_TOKEN, "tokenizer.ggml.tokens", .u32 = 432, .str = LONG_PIECE, .stage = MC_RUNS,
     .expect = LONG_PIECE},
};
const int mc_n_variants = (int)(sizeof mc_variants / sizeof mc_variants[0]);

static rt_status_t set_key(rt_gguf_writer_t *w, const mc_variant_t *v) {
    switch (v->kind) {
    case MC_U32: return rt_gguf_writer_set_u32(w, v->key, v->u32);
    case MC_F32: return rt_gguf_writer_set_f32(w, v->key, v->f32);
    case MC_STR: return rt_gguf_writer_set_str(w, v->key, v->str);
    case MC_SAME:
    case MC_NAN: return RT_OK;
    case MC_TOKEN: break;
    }
    return RT_ERR_INVALID_ARGUMENT;
}

/* key's strings with number v->u32 replaced by v->str. */
static rt_status_t set_token(const rt_gguf_t *g, rt_gguf_writer_t *w, const mc_variant_t *v, int64_t kv) {
    const uint64_t n = rt_gguf_kv_array_len(g, kv);
    const char **s = calloc(n ? n : 1, sizeof *s);
    rt_status_t st = s ? RT_OK : RT_ERR_OUT_OF_MEMORY;
    for (uint64_t i = 0; i < n && st == RT_OK; i++) st = rt_gguf_get_array_str(g, v->key, i, &s[i]);
    if (st == RT_OK && v->u32 < n) s[v->u32] = v->str;
    if (st == RT_OK) st = rt_gguf_writer_set_array(w, v->key, RT_GGUF_TYPE_STRING, s, n);
    free(s);
    return st;
}

static rt_status_t copy_keys(const rt_gguf_t *g, rt_gguf_writer_t *w, const mc_variant_t *v) {
    rt_status_t st = RT_OK;
    for (int64_t i = 0; i < rt_gguf_n_kv(g) && st == RT_OK; i++) {
        const bool changed = v->kind != MC_SAME && v->kind != MC_NAN && strcmp(rt_gguf_kv_key(g, i), v->key) == 0;
        if (!changed) st = rt_gguf_copy_key(g, w, i);
        else if (v->kind == MC_TOKEN) st = set_token(g, w, v, i);
    }
    return st == RT_OK && v->kind != MC_TOKEN ? set_key(w, v) : st;
}

/* The tensors; the poisoned one's bytes in *owned (the caller frees). */
static rt_status_t add_tensors(const rt_gguf_t *g, rt_gguf_writer_t *w, const mc_variant_t *v,
                               float **owned) {
    rt_status_t st = RT_OK;
    for (int64_t i = 0; i < rt_gguf_n_tensors(g) && st == RT_OK; i++) {
        rt_gguf_tensor_info_t ti = {.struct_size = sizeof ti};
        st = rt_gguf_get_tensor_info(g, i, &ti);
        const void *data = ti.data;
        if (st == RT_OK && v->kind == MC_NAN && strcmp(ti.name, v->key) == 0 && ti.type == RT_TYPE_F32) {
            if ((*owned = malloc(ti.size)) == NULL) return RT_ERR_OUT_OF_MEMORY;
            memcpy(*owned, ti.data, ti.size);
            (*owned)[0] = NAN;
            data = *owned;
        }
        if (st == RT_OK) st = rt_gguf_writer_add_tensor(w, ti.name, ti.type, ti.n_dims, ti.ne, data);
    }
    return st;
}

/* The bytes before the tensor data: the writer's whole file, cut. */
static rt_status_t write_headers(const rt_gguf_writer_t *w, const char *dst) {
    const uint64_t size = rt_gguf_writer_size(w);
    char *buf = malloc(size);
    rt_status_t st = buf ? rt_gguf_writer_write_mem(w, buf, size) : RT_ERR_OUT_OF_MEMORY;
    rt_gguf_t *g = NULL;
    if (st == RT_OK) st = rt_gguf_parse(buf, size, dst, NULL, &g);
    FILE *f = st == RT_OK ? fopen(dst, "wb") : NULL;
    if (st == RT_OK && f == NULL) st = RT_ERR_IO;
    if (f != NULL && fwrite(buf, 1, rt_gguf_data_offset(g), f) != rt_gguf_data_offset(g)) st = RT_ERR_IO;
    if (f != NULL && fclose(f) != 0) st = RT_ERR_IO;
    rt_gguf_destroy(g);
    free(buf);
    return st;
}

rt_status_t mc_write(const char *src, const char *dst, const mc_variant_t *v, bool headers_only) {
    rt_gguf_t *g = NULL;
    rt_gguf_writer_t *w = NULL;
    float *owned = NULL;
    rt_status_t st = rt_gguf_open(src, NULL, &g);
    if (st == RT_OK) st = rt_gguf_writer_create(NULL, &w);
    if (st == RT_OK) st = copy_keys(g, w, v);
    if (st == RT_OK) st = add_tensors(g, w, v, &owned);
    if (st == RT_OK) st = headers_only ? write_headers(w, dst) : rt_gguf_writer_write_file(w, dst);
    free(owned);
    rt_gguf_writer_destroy(w);
    rt_gguf_destroy(g);
    return st;
}
