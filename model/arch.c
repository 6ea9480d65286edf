/* SPDX-License-Identifier: MIT */
/* arch.c: the architectures rt knows, and what their declarations
 * (arch.h) are turned into for all of them. The hyperparameters come from
 * "<arch>.*" keys: the ones every transformer has (below) and each
 * architecture's own, each with its default or required; the tensors are
 * each checked for its shape and type before anything is allocated, so
 * that a bad file fails with the tensor's name rather than inside a graph.
 * Then the same tables size the layers for the placement and declare every
 * weight on the device of its part. */
#include "arch.h"

#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const rtm_arch_t rtm_arch_llama, rtm_arch_qwen2, rtm_arch_qwen3, rtm_arch_gemma2,
    rtm_arch_gemma3, rtm_arch_gpt2, rtm_arch_bert;

static const rtm_arch_t *const archs[] = {&rtm_arch_llama, &rtm_arch_qwen2, &rtm_arch_qwen3,
                                          &rtm_arch_gemma2, &rtm_arch_gemma3, &rtm_arch_gpt2,
                                          &rtm_arch_bert};

const rtm_arch_t *rtm_arch_find(const char *name) {
    for (size_t i = 0; i < RTM_COUNT(archs); i++)
        if (strcmp(archs[i]->name, name) == 0) return archs[i];
    return NULL;
}

void rtm_arch_names(char *buf, size_t size) {
    size_t n = 0;
    buf[0] = 0;
    for (size_t i = 0; i < RTM_COUNT(archs) && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, "%s%s", i ? ", " : "", archs[i]->name);
}

//===--- hyperparameters ---===//

/* 0 for the ones derived from others when absent (hparams_derive). */
static const rtm_hparam_key_t common_keys[] = {
    RTM_HP_INT("context_length", n_ctx_train, 2048),
    RTM_HP_INT("embedding_length", n_embd, -1),
    RTM_HP_INT("block_count", n_layer, -1),
    RTM_HP_INT("feed_forward_length", n_ff, -1),
    RTM_HP_INT("attention.head_count", n_head, -1),
    RTM_HP_INT("attention.head_count_kv", n_head_kv, 0),
    RTM_HP_INT("attention.key_length", head_dim, 0),
    RTM_HP_INT("rope.dimension_count", n_rot, 0),
    RTM_HP_FLOAT("rope.freq_base", rope_freq_base, 10000),
    RTM_HP_FLOAT("rope.scaling.factor", rope_freq_scale, 1),
    RTM_HP_INT("vocab_size", n_vocab_key, 0),
};

/* An integer key stored as any integer type. */
static rt_status_t read_int(const rt_gguf_t *g, const char *key, double def, int32_t *out) {
    uint32_t u32;
    int32_t i32;
    uint64_t u64;
    int64_t v;
    if (rt_gguf_get_u32(g, key, &u32) == RT_OK) v = u32;
    else if (rt_gguf_get_i32(g, key, &i32) == RT_OK) v = i32;
    else if (rt_gguf_get_u64(g, key, &u64) == RT_OK) v = (int64_t)(u64 > INT32_MAX ? -1 : (int64_t)u64);
    else if (rt_gguf_find_key(g, key) < 0 && def >= 0) v = (int64_t)def;
    else return rtm_error(RT_ERR_FORMAT, "key %s is missing or not an integer", key);
    if (v < 0 || v > INT32_MAX) return rtm_error(RT_ERR_FORMAT, "%s = %" PRId64 " is out of range", key, v);
    *out = (int32_t)v;
    return RT_OK;
}

static rt_status_t read_float(const rt_gguf_t *g, const char *key, double def, float *out) {
    if (rt_gguf_get_f32(g, key, out) == RT_OK) return RT_OK;
    if (rt_gguf_find_key(g, key) >= 0 || def < 0)
        return rtm_error(RT_ERR_FORMAT, "key %s is missing or not a float32", key);
    *out = (float)def;
    return RT_OK;
}

static rt_status_t read_keys(const rt_gguf_t *g, const char *arch, const rtm_hparam_key_t *keys,
                             size_t n, rtm_hparams_t *hp) {
    char key[256];
    rt_status_t st = RT_OK;
    for (size_t i = 0; st == RT_OK && i < n; i++) {
        snprintf(key, sizeof key, "%s.%s", arch, keys[i].key);
        void *field = (char *)hp + keys[i].offset;
        st = keys[i].is_float ? read_float(g, key, keys[i].def, field)
                              : read_int(g, key, keys[i].def, field);
    }
    return st;
}

/* The defaults that are other keys' values; rope scaling read as its
 * factor, used as its inverse. */
static void hparams_derive(rtm_hparams_t *hp) {
    if (hp->n_head_kv == 0) hp->n_head_kv = hp->n_head;
    if (hp->head_dim == 0 && hp->n_head > 0) hp->head_dim = hp->n_embd / hp->n_head;
    if (hp->n_rot == 0) hp->n_rot = hp->head_dim;
    hp->rope_freq_scale = hp->rope_freq_scale > 0 ? 1.0f / hp->rope_freq_scale : 1.0f;
}

/* Linear rope scaling is a scale; the others (yarn, longrope) are not
 * implemented and would give wrong text, so they are refused. */
static rt_status_t check_rope_scaling(const rtm_model_t *m) {
    char key[128];
    const char *type = NULL;
    snprintf(key, sizeof key, "%s.rope.scaling.type", m->arch);
    if (rt_gguf_get_str(m->gguf, key, &type) == RT_OK && strcmp(type, "linear") != 0 &&
        strcmp(type, "none") != 0)
        return rtm_error(RT_ERR_UNSUPPORTED, "%s: rope scaling '%s' is not supported (linear is)",
                         m->arch, type);
    return RT_OK;
}

/* rope_freqs.weight: F32 {n_rot / 2}, one divisor per rotated pair, kept
 * on the host: the context turns it into the cos/sin inputs (blocks.c). */
static rt_status_t read_rope_freqs(rtm_model_t *m) {
    rt_gguf_tensor_info_t ti = {.struct_size = sizeof ti};
    const int64_t i = rt_gguf_find_tensor(m->gguf, "rope_freqs.weight");
    if (i < 0) return RT_OK;
    const int32_t n = m->hp.n_rot / 2;
    if (rt_gguf_get_tensor_info(m->gguf, i, &ti) != RT_OK || ti.type != RT_TYPE_F32 || ti.ne[0] != n ||
        ti.ne[1] != 1 || !m->hp.rope || m->hp.n_rot != m->hp.head_dim)
        return rtm_error(RT_ERR_UNSUPPORTED, "%s: rope_freqs.weight is not F32 {%d} over whole "
                         "heads of rope", m->arch, n);
    m->rope_freqs = malloc((size_t)n * sizeof m->rope_freqs[0]);
    if (m->rope_freqs == NULL) return rtm_error(RT_ERR_OUT_OF_MEMORY, "rtm_model_load: no memory");
    memcpy(m->rope_freqs, ti.data, (size_t)n * sizeof m->rope_freqs[0]);
    m->hp.rope_factors = true;
    return RT_OK;
}

/* The key (without "<arch>.") that fills the field at offset: the
 * architecture's table first, then the common one. */
static const char *key_of(const rtm_arch_t *a, size_t offset) {
    for (size_t i = 0; i < a->n_keys; i++)
        if (a->keys[i].offset == offset) return a->keys[i].key;
    for (size_t i = 0; i < RTM_COUNT(common_keys); i++)
        if (common_keys[i].offset == offset) return common_keys[i].key;
    return "?";
}

static bool is_rope_base(float base) { return isfinite(base) && base > 1.0f; }

/* Values no model can have: a norm epsilon that is negative, zero (a zero
 * row divides by zero) or not finite; a rope base that is not a finite
 * number above 1 (every angle 0 or NaN). Each would pass as weights and
 * come out as NaN logits or meaningless text. The message names the key. */
static rt_status_t check_floats(const rtm_model_t *m, const char *path) {
    const rtm_hparams_t *hp = &m->hp;
    if (!(isfinite(hp->norm_eps) && hp->norm_eps > 0.0f && hp->norm_eps < 1.0f))
        return rtm_error(RT_ERR_FORMAT, "%s: %s.%s is %g, not in (0, 1)", path, m->arch,
                         key_of(m->desc, offsetof(rtm_hparams_t, norm_eps)), (double)hp->norm_eps);
    const size_t base = !is_rope_base(hp->rope_freq_base) ? offsetof(rtm_hparams_t, rope_freq_base)
                        : !is_rope_base(hp->rope_freq_base_swa) ? offsetof(rtm_hparams_t, rope_freq_base_swa)
                                                                 : 0;
    if (base != 0)
        return rtm_error(RT_ERR_FORMAT, "%s: %s.%s is %g, not a finite number above 1", path, m->arch,
                         key_of(m->desc, base), (double)*(const float *)((const char *)hp + base));
    return RT_OK;
}

static rt_status_t check_hparams(const rtm_model_t *m, const char *path) {
    const rtm_hparams_t *hp = &m->hp;
    const char *arch = m->arch;
    if (hp->head_dim > 0 && (hp->n_rot % 2 != 0 || hp->n_rot > hp->head_dim))
        return rtm_error(RT_ERR_FORMAT, "%s: %s.rope.dimension_count is %d: rope rotates an even number of "
                         "dimensions, at most the head's %d", path, arch, hp->n_rot, hp->head_dim);
    const bool ok = hp->n_embd > 0 && hp->n_layer > 0 && hp->n_ff > 0 && hp->n_head > 0 &&
                    hp->n_head_kv > 0 && hp->head_dim > 0 && hp->n_head % hp->n_head_kv == 0 &&
                    hp->n_rot > 0 && hp->n_rot % 2 == 0 && hp->n_rot <= hp->head_dim &&
                    hp->n_ctx_train > 0 && (hp->n_swa == 0 || hp->swa_pattern > 0);
    if (ok) return check_floats(m, path);
    return rtm_error(RT_ERR_FORMAT, "%s: inconsistent %s hyperparameters: n_embd %d, n_layer %d, "
                     "n_ff %d, n_head %d, n_head_kv %d, head_dim %d, rope dims %d", path, arch,
                     hp->n_embd, hp->n_layer, hp->n_ff, hp->n_head, hp->n_head_kv, hp->head_dim,
                     hp->n_rot);
}

static rt_status_t read_hparams(rtm_model_t *m, const char *path) {
    rtm_hparams_t *hp = &m->hp;
    *hp = (rtm_hparams_t){.rope_freq_base_swa = 10000.0f, .causal = true};
    rt_status_t st = read_keys(m->gguf, m->arch, common_keys, RTM_COUNT(common_keys), hp);
    if (st == RT_OK) st = read_keys(m->gguf, m->arch, m->desc->keys, m->desc->n_keys, hp);
    if (st != RT_OK) return st;
    char key[128];
    snprintf(key, sizeof key, "%s.rope.dimension_count", m->arch);
    if (hp->n_rot == 0 && rt_gguf_find_key(m->gguf, key) >= 0) /* 0 is "absent" below */
        return rtm_error(RT_ERR_FORMAT, "%s: %s is 0: rope must rotate an even number of dimensions", path, key);
    hparams_derive(hp);
    hp->rope_mode = m->desc->rope_mode;
    hp->rope = !m->desc->no_rope;
    hp->causal = !m->desc->bidirectional;
    hp->embeddings = m->desc->embeddings;
    st = check_rope_scaling(m);
    if (st == RT_OK && (hp->logit_softcap < 0 || hp->attn_softcap < 0))
        return rtm_error(RT_ERR_FORMAT, "%s: %s: negative soft-capping (attention %g, final %g)", path,
                         m->arch, (double)hp->attn_softcap, (double)hp->logit_softcap);
    return st == RT_OK ? check_hparams(m, path) : st;
}

//===--- tensors and their shapes ---===//

static int64_t find(const rtm_model_t *m, const char *name) { return rt_gguf_find_tensor(m->gguf, name); }

static int64_t dim(const rtm_hparams_t *hp, uint8_t d) {
    switch ((rtm_dim_t)d) {
    case RTM_DIM_EMBD: return hp->n_embd;
    case RTM_DIM_Q: return rtm_n_embd_q(hp);
    case RTM_DIM_KV: return rtm_n_embd_kv(hp);
    case RTM_DIM_QKV: return rtm_n_embd_q(hp) + 2 * (int64_t)rtm_n_embd_kv(hp);
    case RTM_DIM_HEAD: return hp->head_dim;
    case RTM_DIM_FF: return hp->n_ff;
    case RTM_DIM_VOCAB: return hp->n_vocab;
    case RTM_DIM_CTX: return hp->n_ctx_train;
    case RTM_DIM_TYPES: return 2;
    case RTM_DIM_NONE: break;
    }
    return 1;
}

/* The types mul_mat and get_rows read (abi/rt_tensor.h): anything else
 * would be refused by the graph builder, which aborts. */
static bool is_weight_type(rt_type_t t) {
    const rt_type_traits_t *tr = rt_type_traits(t);
    return tr != NULL && t != RT_TYPE_I32 && t != RT_TYPE_Q8_K; /* Q8_K: activations only */
}

static const char *spec_name(const rtm_tensor_spec_t *s, int32_t il, char *buf, size_t size) {
    if (!s->layer) return s->name;
    snprintf(buf, size, "blk.%d.%s", il, s->name);
    return buf;
}

/* Tensor `name` has the spec's shape and a type the graph can use. */
static rt_status_t check_tensor(const rtm_model_t *m, const rtm_tensor_spec_t *s, const char *name) {
    rt_gguf_tensor_info_t ti = {.struct_size = sizeof ti};
    const rt_status_t st = rt_gguf_get_tensor_info(m->gguf, find(m, name), &ti);
    if (st != RT_OK) /* a type rt does not implement: the message names it */
        return rtm_error_core(st, m->arch);
    const int64_t ne0 = dim(&m->hp, s->ne0), ne1 = dim(&m->hp, s->ne1);
    const bool f32 = (s->flags & RTM_T_F32) != 0;
    if (ti.ne[0] != ne0 || ti.ne[1] != ne1 || ti.ne[2] != 1 || ti.ne[3] != 1)
        return rtm_error(RT_ERR_FORMAT, "%s: tensor %s is {%" PRId64 ", %" PRId64 ", %" PRId64
                         ", %" PRId64 "}, expected {%" PRId64 ", %" PRId64 "}", m->arch, name,
                         ti.ne[0], ti.ne[1], ti.ne[2], ti.ne[3], ne0, ne1);
    if (f32 ? ti.type != RT_TYPE_F32 : !is_weight_type(ti.type))
        return rtm_error(RT_ERR_FORMAT, "%s: tensor %s is %s, expected %s", m->arch, name,
                         rt_type_name(ti.type), f32 ? "f32" : "a weight type rt implements");
    return RT_OK;
}

static rt_status_t check_spec(const rtm_model_t *m, const rtm_tensor_spec_t *s, int32_t il) {
    char buf[RT_MAX_NAME];
    const char *name = spec_name(s, il, buf, sizeof buf);
    if (find(m, name) >= 0) return check_tensor(m, s, name);
    if (s->flags & (RTM_T_OPTIONAL | RTM_T_TIED)) return RT_OK;
    return rtm_error(RT_ERR_FORMAT, "%s: the file has no tensor %s", m->arch, name);
}

/* n_vocab is token_embd's rows, at least the vocabulary's tokens. */
static rt_status_t read_n_vocab(rtm_model_t *m) {
    rt_gguf_tensor_info_t ti = {.struct_size = sizeof ti};
    const int64_t emb = find(m, "token_embd.weight");
    if (emb < 0) return rtm_error(RT_ERR_FORMAT, "%s: the file has no tensor token_embd.weight", m->arch);
    rt_gguf_get_tensor_info(m->gguf, emb, &ti);
    m->hp.n_vocab = ti.ne[1] > INT32_MAX ? 0 : (int32_t)ti.ne[1];
    if (m->hp.n_vocab < rtm_vocab_n_tokens(m->vocab))
        return rtm_error(RT_ERR_FORMAT, "%s: token_embd.weight has %d rows for %d tokens", m->arch,
                         m->hp.n_vocab, rtm_vocab_n_tokens(m->vocab));
    if (m->hp.n_vocab_key > 0 && m->hp.n_vocab_key != m->hp.n_vocab)
        return rtm_error(RT_ERR_FORMAT, "%s: %s.vocab_size is %d, token_embd.weight has %d rows",
                         m->arch, m->arch, m->hp.n_vocab_key, m->hp.n_vocab);
    return RT_OK;
}

static rt_status_t check_tensors(rtm_model_t *m) {
    rt_status_t st = read_n_vocab(m);
    const rtm_arch_t *a = m->desc;
    for (size_t i = 0; st == RT_OK && i < a->n_tensors; i++)
        if (!a->tensors[i].layer) st = check_spec(m, &a->tensors[i], 0);
    for (int32_t il = 0; st == RT_OK && il < m->hp.n_layer; il++)
        for (size_t i = 0; st == RT_OK && i < a->n_tensors; i++)
            if (a->tensors[i].layer) st = check_spec(m, &a->tensors[i], il);
    return st;
}

rt_status_t rtm_arch_read(rtm_model_t *m, const char *path) {
    rt_status_t st = read_hparams(m, path);
    if (st == RT_OK) st = read_rope_freqs(m);
    if (st == RT_OK) st = check_tensors(m);
    return st;
}

//===--- sizes ---===//

static uint64_t bytes_of(const rtm_model_t *m, const char *name) {
    rt_gguf_tensor_info_t ti = {.struct_size = sizeof ti};
    const int64_t i = find(m, name);
    return i >= 0 && rt_gguf_get_tensor_info(m->gguf, i, &ti) == RT_OK ? ti.size : 0;
}

uint64_t rtm_arch_layer_bytes(const rtm_model_t *m, int32_t il) {
    char n[RT_MAX_NAME];
    uint64_t sum = 0;
    for (size_t i = 0; i < m->desc->n_tensors; i++)
        if (m->desc->tensors[i].layer) sum += bytes_of(m, spec_name(&m->desc->tensors[i], il, n, sizeof n));
    return sum;
}

/* The globals of one part; a tied output counts token_embd again, as it
 * is declared again on the output's device when that is another one. */
static uint64_t part_bytes(const rtm_model_t *m, bool output) {
    uint64_t sum = 0;
    for (size_t i = 0; i < m->desc->n_tensors; i++) {
        const rtm_tensor_spec_t *s = &m->desc->tensors[i];
        if (s->layer || ((s->flags & RTM_T_OUTPUT) != 0) != output) continue;
        const bool tied = (s->flags & RTM_T_TIED) && find(m, s->name) < 0;
        sum += bytes_of(m, tied ? "token_embd.weight" : s->name);
    }
    return sum;
}

uint64_t rtm_arch_input_bytes(const rtm_model_t *m) { return part_bytes(m, false); }
uint64_t rtm_arch_output_bytes(const rtm_model_t *m) { return part_bytes(m, true); }

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

/* Spec s of layer il (or a global) into its slot on device d; a tied
 * output is token_embd again, then also read by GET_ROWS: never repacked. */
static void declare_spec(rtm_model_t *m, const rtm_tensor_spec_t *s, int32_t il, int32_t d) {
    char buf[RT_MAX_NAME];
    const char *name = spec_name(s, il, buf, sizeof buf);
    bool matrix = (s->flags & RTM_T_MATRIX) != 0;
    if (find(m, name) < 0) {
        if (!(s->flags & RTM_T_TIED)) return;
        name = "token_embd.weight";
        matrix = false;
    }
    char *base = s->layer ? (char *)&m->layers[il] : (char *)m;
    *(rt_tensor_t **)(base + s->slot) = declare_as(m, d, name, matrix);
}

/* The first weight buffer type of dev (RT_BUFT_FLAG_WEIGHTS), or NULL. */
static rt_buffer_type_t *weights_buft(const rt_device_t *dev) {
    for (int32_t i = 0; i < rt_device_buffer_type_count(dev); i++)
        if (rt_buffer_type_is_weights(rt_device_buffer_type(dev, i))) return rt_device_buffer_type(dev, i);
    return NULL;
}

/* Each device's contexts can hold every weight header: the model is small
 * in headers even when it is large in bytes. The globals come first, so
 * that a tied output on the input's device finds token_embd there. */
rt_status_t rtm_arch_declare(rtm_model_t *m, bool repack) {
    const rtm_arch_t *a = m->desc;
    const size_t n_tensors = a->n_tensors * ((size_t)m->hp.n_layer + 1) + 4;
    const rt_context_params_t p = {.struct_size = sizeof p,
                                   .mem_size = n_tensors * rt_tensor_overhead(), .no_alloc = true};
    for (int32_t d = 0; d < m->n_devices; d++) {
        rt_status_t st = rt_context_create(&p, &m->ctx[d]);
        m->weights_buft[d] = repack ? weights_buft(m->devices[d]) : NULL;
        if (st == RT_OK && m->weights_buft[d] != NULL) st = rt_context_create(&p, &m->ctx_w[d]);
        if (st != RT_OK) return rtm_error_core(st, "rtm_model_load: weight context");
    }
    /* a process that holds some layers only has the ends of the model it runs */
    const bool first = m->layer_begin == 0, last = m->layer_end == m->hp.n_layer;
    for (size_t i = 0; i < a->n_tensors; i++) {
        const rtm_tensor_spec_t *s = &a->tensors[i];
        const bool out = (s->flags & RTM_T_OUTPUT) != 0;
        if (!s->layer && (out ? last : first))
            declare_spec(m, s, 0, out ? m->layout.output : m->layout.input);
    }
    for (int32_t il = m->layer_begin; il < m->layer_end; il++)
        for (size_t i = 0; i < a->n_tensors; i++)
            if (a->tensors[i].layer) declare_spec(m, &a->tensors[i], il, m->layout.layer[il]);
    return RT_OK;
}
