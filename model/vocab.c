/* SPDX-License-Identifier: MIT */
/* vocab.c: the vocabulary, read from a GGUF's tokenizer.* keys: token
 * texts, scores and types, the BPE merges, the special ids and flags; then
 * the lookups every tokenizer needs (text -> id, byte -> token, the
 * special tokens in partition order). Everything is copied out of the
 * rt_gguf_t, which may go away afterwards. The getters of rt_model.h. */
#include "vocab_impl.h"
#include "unicode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY_MODEL "tokenizer.ggml.model"
#define KEY_TOKENS "tokenizer.ggml.tokens"
#define KEY_SCORES "tokenizer.ggml.scores"
#define KEY_TYPES "tokenizer.ggml.token_type"
#define KEY_MERGES "tokenizer.ggml.merges"

void rtm_vocab_destroy(rtm_vocab_t *v) {
    if (v == NULL) return;
    rtm_strmap_deinit(&v->token_map);
    rtm_strmap_deinit(&v->merge_map);
    free(v->blob);
    free(v->offs);
    free(v->lens);
    free(v->scores);
    free(v->types);
    free(v->merges);
    free(v->special);
    free(v);
}

static rt_status_t read_type(const rt_gguf_t *g, rtm_vocab_t *v) {
    const char *model = NULL;
    if (rt_gguf_get_str(g, KEY_MODEL, &model) != RT_OK)
        return rtm_error(RT_ERR_FORMAT, "vocabulary: the file has no string key %s", KEY_MODEL);
    if (strcmp(model, "llama") == 0) v->type = RTM_VOCAB_SPM;
    else if (strcmp(model, "gpt2") == 0) v->type = RTM_VOCAB_BPE;
    else if (strcmp(model, "bert") == 0) v->type = RTM_VOCAB_WPM;
    else
        return rtm_error(RT_ERR_UNSUPPORTED, "vocabulary: tokenizer '%s' is not supported "
                         "(supported: llama, gpt2, bert)", model);
    return RT_OK;
}

/* Copies a string array into one NUL-separated blob with offsets. */
static rt_status_t copy_strings(const rt_gguf_t *g, const char *key, uint64_t n, char **out_blob,
                                uint32_t *offs, uint32_t *lens) {
    const char *const *s = NULL;
    uint64_t n_got = 0, total = 0;
    if (rt_gguf_get_array(g, key, RT_GGUF_TYPE_STRING, (const void **)&s, &n_got) != RT_OK || n_got != n)
        return rtm_error(RT_ERR_FORMAT, "vocabulary: %s is not an array of %llu strings", key,
                         (unsigned long long)n);
    for (uint64_t i = 0; i < n; i++) total += strlen(s[i]) + 1;
    if (total > UINT32_MAX) return rtm_error(RT_ERR_FORMAT, "vocabulary: %s is too large", key);
    char *blob = malloc(total > 0 ? total : 1);
    if (blob == NULL) return rtm_error(RT_ERR_OUT_OF_MEMORY, "vocabulary: no memory for %s", key);
    for (uint64_t i = 0, at = 0; i < n; i++) {
        const size_t len = strlen(s[i]);
        memcpy(blob + at, s[i], len + 1);
        if (offs) offs[i] = (uint32_t)at;
        if (lens) lens[i] = (uint32_t)len;
        at += len + 1;
    }
    *out_blob = blob;
    return RT_OK;
}

/* Scores and types are optional; when present they must match the tokens. */
static rt_status_t read_scores_types(const rt_gguf_t *g, rtm_vocab_t *v) {
    const void *data;
    uint64_t n;
    for (int32_t i = 0; i < v->n_tokens; i++) v->types[i] = RTM_TOKEN_TYPE_NORMAL;
    if (rt_gguf_find_key(g, KEY_SCORES) >= 0) {
        if (rt_gguf_get_array(g, KEY_SCORES, RT_GGUF_TYPE_FLOAT32, &data, &n) != RT_OK ||
            n != (uint64_t)v->n_tokens)
            return rtm_error(RT_ERR_FORMAT, "vocabulary: %s is not %d floats", KEY_SCORES, v->n_tokens);
        memcpy(v->scores, data, (size_t)n * sizeof v->scores[0]);
    }
    if (rt_gguf_find_key(g, KEY_TYPES) >= 0) {
        if (rt_gguf_get_array(g, KEY_TYPES, RT_GGUF_TYPE_INT32, &data, &n) != RT_OK ||
            n != (uint64_t)v->n_tokens)
            return rtm_error(RT_ERR_FORMAT, "vocabulary: %s is not %d int32s", KEY_TYPES, v->n_tokens);
        memcpy(v->types, data, (size_t)n * sizeof v->types[0]);
    }
    return RT_OK;
}

static rt_status_t read_tokens(const rt_gguf_t *g, rtm_vocab_t *v) {
    const int64_t kv = rt_gguf_find_key(g, KEY_TOKENS);
    const uint64_t n = kv >= 0 ? rt_gguf_kv_array_len(g, kv) : 0;
    if (n == 0 || n > INT32_MAX)
        return rtm_error(RT_ERR_FORMAT, "vocabulary: %s is missing or empty", KEY_TOKENS);
    v->n_tokens = (int32_t)n;
    v->offs = malloc(n * sizeof v->offs[0]);
    v->lens = malloc(n * sizeof v->lens[0]);
    v->scores = calloc(n, sizeof v->scores[0]);
    v->types = malloc(n * sizeof v->types[0]);
    if (!v->offs || !v->lens || !v->scores || !v->types)
        return rtm_error(RT_ERR_OUT_OF_MEMORY, "vocabulary: no memory for %llu tokens",
                         (unsigned long long)n);
    rt_status_t st = copy_strings(g, KEY_TOKENS, n, &v->blob, v->offs, v->lens);
    if (st == RT_OK) st = read_scores_types(g, v);
    if (st == RT_OK) st = rtm_strmap_init(&v->token_map, n);
    for (int32_t i = 0; st == RT_OK && i < v->n_tokens; i++)
        if (v->lens[i] > 0) rtm_strmap_put(&v->token_map, rtm_vocab_text(v, i), v->lens[i], i, true);
    return st;
}

static rt_status_t read_merges(const rt_gguf_t *g, rtm_vocab_t *v) {
    const int64_t kv = rt_gguf_find_key(g, KEY_MERGES);
    const uint64_t n = kv >= 0 ? rt_gguf_kv_array_len(g, kv) : 0;
    if (kv < 0) return rtm_error(RT_ERR_FORMAT, "vocabulary: a gpt2 tokenizer needs %s", KEY_MERGES);
    uint32_t *offs = malloc((n > 0 ? n : 1) * sizeof offs[0]);
    uint32_t *lens = malloc((n > 0 ? n : 1) * sizeof lens[0]);
    rt_status_t st = offs && lens ? RT_OK : rtm_error(RT_ERR_OUT_OF_MEMORY, "vocabulary: no memory");
    if (st == RT_OK) st = copy_strings(g, KEY_MERGES, n, &v->merges, offs, lens);
    if (st == RT_OK) st = rtm_strmap_init(&v->merge_map, n);
    for (uint64_t i = 0; st == RT_OK && i < n; i++)
        rtm_strmap_put(&v->merge_map, v->merges + offs[i], lens[i], (int32_t)i, false);
    free(offs);
    free(lens);
    return st;
}

/* A special token's id, def when the key is missing. An id past the
 * vocabulary is refused: dropping it would change every prompt silently. */
static rt_status_t read_id(const rt_gguf_t *g, const char *key, rtm_token_t def, int32_t n,
                           rtm_token_t *out) {
    uint32_t id;
    *out = def;
    if (rt_gguf_get_u32(g, key, &id) != RT_OK) return RT_OK;
    if (id >= (uint32_t)n)
        return rtm_error(RT_ERR_FORMAT, "vocabulary: %s is %u, past the %d tokens", key, id, n);
    *out = (rtm_token_t)id;
    return RT_OK;
}

static bool read_flag(const rt_gguf_t *g, const char *key, bool def) {
    bool b;
    return rt_gguf_get_bool(g, key, &b) == RT_OK ? b : def;
}

/* id as a default, when the vocabulary has it (a two-token SPM
 * vocabulary has no EOS). */
static rtm_token_t def_id(rtm_token_t id, int32_t n) { return id < n ? id : RTM_TOKEN_NULL; }

/* WordPiece: [CLS] text [SEP], as BERT was trained; the defaults are
 * bert-base-uncased's ids, as llama.cpp's. */
static rt_status_t read_specials_wpm(const rt_gguf_t *g, rtm_vocab_t *v) {
    const int32_t n = v->n_tokens;
    rt_status_t st = read_id(g, "tokenizer.ggml.cls_token_id", def_id(101, n), n, &v->bos);
    if (st == RT_OK) st = read_id(g, "tokenizer.ggml.seperator_token_id", def_id(102, n), n, &v->eos);
    if (st == RT_OK) st = read_id(g, "tokenizer.ggml.unknown_token_id", def_id(100, n), n, &v->unk);
    if (st != RT_OK) return st;
    v->add_bos = read_flag(g, "tokenizer.ggml.add_bos_token", true) && v->bos != RTM_TOKEN_NULL;
    v->add_eos = read_flag(g, "tokenizer.ggml.add_eos_token", true) && v->eos != RTM_TOKEN_NULL;
    return RT_OK;
}

static rt_status_t read_specials(const rt_gguf_t *g, rtm_vocab_t *v) {
    if (v->type == RTM_VOCAB_WPM) return read_specials_wpm(g, v);
    const bool spm = v->type == RTM_VOCAB_SPM;
    const int32_t n = v->n_tokens;
    const rtm_token_t none = RTM_TOKEN_NULL;
    rt_status_t st = read_id(g, "tokenizer.ggml.bos_token_id", spm ? def_id(1, n) : none, n, &v->bos);
    if (st == RT_OK) st = read_id(g, "tokenizer.ggml.eos_token_id", spm ? def_id(2, n) : none, n, &v->eos);
    if (st == RT_OK) st = read_id(g, "tokenizer.ggml.unknown_token_id", spm ? def_id(0, n) : none, n, &v->unk);
    if (st != RT_OK) return st;
    v->add_bos = read_flag(g, "tokenizer.ggml.add_bos_token", spm) && v->bos != RTM_TOKEN_NULL;
    v->add_eos = read_flag(g, "tokenizer.ggml.add_eos_token", false) && v->eos != RTM_TOKEN_NULL;
    v->add_space_prefix = read_flag(g, "tokenizer.ggml.add_space_prefix", spm);
    return RT_OK;
}

/* The byte tokens: SPM's <0xXX> (else the byte itself as text), BPE's
 * stand-in character. */
static void find_byte_tokens(rtm_vocab_t *v) {
    char buf[8];
    if (v->type == RTM_VOCAB_BPE) rtm_bpe_byte_map(v->byte_cpt);
    for (int b = 0; b < 256; b++) {
        size_t n;
        if (v->type == RTM_VOCAB_BPE) {
            n = rtm_utf8_encode(v->byte_cpt[b], buf);
        } else {
            n = (size_t)snprintf(buf, sizeof buf, "<0x%02X>", b);
            if (rtm_strmap_get(&v->token_map, buf, n) < 0) {
                buf[0] = (char)b;
                n = 1;
            }
        }
        v->byte_token[b] = rtm_strmap_get(&v->token_map, buf, n);
    }
}

/* BPE: the pre-tokenizer the file names; without the key, GPT-2's, as
 * llama.cpp assumes ("default"). */
static rt_status_t read_pretok(const rt_gguf_t *g, rtm_vocab_t *v) {
    const char *pre = "default";
    if (rt_gguf_find_key(g, "tokenizer.ggml.pre") >= 0 && rt_gguf_get_str(g, "tokenizer.ggml.pre", &pre) != RT_OK)
        return rtm_error(RT_ERR_FORMAT, "vocabulary: tokenizer.ggml.pre is not a string");
    v->pretok = rtm_pretok_find(pre);
    if (v->pretok == NULL)
        return rtm_error(RT_ERR_UNSUPPORTED, "vocabulary: pre-tokenizer '%s' (tokenizer.ggml.pre) "
                         "is not supported", pre);
    return RT_OK;
}

static bool is_special_type(int32_t type) {
    return type == RTM_TOKEN_TYPE_CONTROL || type == RTM_TOKEN_TYPE_USER_DEFINED ||
           type == RTM_TOKEN_TYPE_UNKNOWN;
}

static int u64_cmp(const void *a, const void *b) {
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Sorted as (UINT32_MAX - length) << 32 | id: longest first, then by id. */
static rt_status_t list_specials(rtm_vocab_t *v) {
    uint64_t *keys = malloc((size_t)v->n_tokens * sizeof keys[0]);
    v->special = malloc((size_t)v->n_tokens * sizeof v->special[0]);
    if (keys == NULL || v->special == NULL) {
        free(keys);
        return rtm_error(RT_ERR_OUT_OF_MEMORY, "vocabulary: no memory");
    }
    for (int32_t i = 0; i < v->n_tokens; i++)
        if (is_special_type(v->types[i]) && v->lens[i] > 0)
            keys[v->n_special++] = (uint64_t)(UINT32_MAX - v->lens[i]) << 32 | (uint32_t)i;
    qsort(keys, (size_t)v->n_special, sizeof keys[0], u64_cmp);
    for (int32_t i = 0; i < v->n_special; i++) v->special[i] = (rtm_token_t)(keys[i] & UINT32_MAX);
    free(keys);
    return RT_OK;
}

rt_status_t rtm_vocab_create(const rt_gguf_t *g, rtm_vocab_t **out_vocab) {
    if (out_vocab) *out_vocab = NULL;
    if (g == NULL || out_vocab == NULL)
        return rtm_error(RT_ERR_INVALID_ARGUMENT, "rtm_vocab_create: NULL argument");
    rtm_vocab_t *v = calloc(1, sizeof *v);
    if (v == NULL) return rtm_error(RT_ERR_OUT_OF_MEMORY, "rtm_vocab_create: no memory");
    rt_status_t st = read_type(g, v);
    if (st == RT_OK) st = read_tokens(g, v);
    if (st == RT_OK && v->type == RTM_VOCAB_BPE) st = read_merges(g, v);
    if (st == RT_OK && v->type == RTM_VOCAB_BPE) st = read_pretok(g, v);
    if (st == RT_OK) st = list_specials(v);
    if (st == RT_OK) st = read_specials(g, v);
    if (st == RT_OK) {
        find_byte_tokens(v);
        *out_vocab = v;
        return RT_OK;
    }
    rtm_vocab_destroy(v);
    return st;
}

//===--- getters ---===//

rtm_vocab_type_t rtm_vocab_type(const rtm_vocab_t *v) { return v->type; }
int32_t rtm_vocab_n_tokens(const rtm_vocab_t *v) { return v->n_tokens; }
rtm_token_t rtm_vocab_bos(const rtm_vocab_t *v) { return v->bos; }
rtm_token_t rtm_vocab_eos(const rtm_vocab_t *v) { return v->eos; }
bool rtm_vocab_add_bos(const rtm_vocab_t *v) { return v->add_bos; }

const char *rtm_vocab_token_text(const rtm_vocab_t *v, rtm_token_t t) {
    return t >= 0 && t < v->n_tokens ? rtm_vocab_text(v, t) : NULL;
}

int32_t rtm_vocab_token_type(const rtm_vocab_t *v, rtm_token_t t) {
    return t >= 0 && t < v->n_tokens ? v->types[t] : 0;
}

bool rtm_vocab_is_eog(const rtm_vocab_t *v, rtm_token_t t) {
    return t != RTM_TOKEN_NULL && t == v->eos;
}
