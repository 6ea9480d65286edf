/* SPDX-License-Identifier: MIT */
/* server_info.c: see server_info.h. */
#include "server_info.h"
#include "utf8_text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PIECE 256

/* The body as an object whose fields are all among known[]; NULL after *err. */
static json_t *object_body(const char *body, size_t len, const char *const *known, size_t n_known,
                           const char **err) {
    json_t *j = json_loadb(body, len, 0, NULL);
    if (!json_is_object(j)) {
        json_decref(j);
        return *err = "the body is not a JSON object", NULL;
    }
    const char *key;
    json_t *v;
    json_object_foreach(j, key, v) {
        bool ok = false;
        for (size_t i = 0; i < n_known; i++) ok |= strcmp(key, known[i]) == 0;
        if (!ok) {
            json_decref(j);
            return *err = "the body has a field this endpoint does not know", NULL;
        }
    }
    return j;
}

typedef struct text_buf {
    char *p;
    size_t len, cap;
    bool failed;
} text_buf_t;

static void buf_write(const char *s, size_t n, void *user) {
    text_buf_t *b = user;
    if (b->failed) return;
    if (b->len + n + 1 > b->cap) {
        const size_t cap = (b->len + n + 1) * 2;
        char *p = realloc(b->p, cap);
        if (p == NULL) return (void)(b->failed = true);
        b->p = p, b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->p[b->len += n] = 0;
}

/* A token's piece as valid UTF-8 (a lone byte token is U+FFFD). */
static json_t *piece(const rtm_model_t *m, rtm_token_t t) {
    char bytes[MAX_PIECE];
    size_t n = 0;
    if (rtm_vocab_token_to_piece(rtm_model_vocab(m), t, true, bytes, sizeof bytes, &n) != RT_OK) n = 0;
    text_buf_t b = {0};
    rt_utf8_write(bytes, n, buf_write, &b);
    json_t *s = json_stringn(b.p ? b.p : "", b.p ? b.len : 0);
    free(b.p);
    return s;
}

json_t *srv_info_tokenize(const srv_info_t *in, const char *body, size_t len, const char **err) {
    static const char *const known[] = {"content", "add_special", "parse_special", "with_pieces"};
    json_t *j = object_body(body, len, known, 4, err);
    if (j == NULL) return NULL;
    json_t *content = json_object_get(j, "content");
    for (size_t i = 1; i < 4; i++) {
        json_t *flag = json_object_get(j, known[i]);
        if (flag && !json_is_boolean(flag)) {
            json_decref(j);
            return *err = "'add_special', 'parse_special' and 'with_pieces' want true or false", NULL;
        }
    }
    const rtm_vocab_t *v = rtm_model_vocab(in->model);
    const bool add = json_is_true(json_object_get(j, "add_special"));
    const bool parse = json_is_true(json_object_get(j, "parse_special"));
    const bool pieces = json_is_true(json_object_get(j, "with_pieces"));
    int32_t n = 0;
    rtm_token_t *t = NULL;
    if (!json_is_string(content)) *err = "'content' wants a string";
    else rtm_vocab_tokenize(v, json_string_value(content), json_string_length(content), add, parse, NULL, 0, &n);
    if (*err == NULL && (t = malloc((size_t)(n > 0 ? n : 1) * sizeof t[0])) == NULL) *err = "no memory";
    if (*err == NULL && rtm_vocab_tokenize(v, json_string_value(content), json_string_length(content), add, parse,
                                           t, n, &n) != RT_OK)
        *err = rtm_last_error();
    json_t *tokens = *err ? NULL : json_array();
    for (int32_t i = 0; tokens && i < n; i++)
        json_array_append_new(tokens, pieces ? json_pack("{s:i,s:o}", "id", t[i], "piece", piece(in->model, t[i]))
                                             : json_integer(t[i]));
    free(t);
    json_decref(j);
    return tokens ? json_pack("{s:o}", "tokens", tokens) : NULL;
}

json_t *srv_info_detokenize(const srv_info_t *in, const char *body, size_t len, const char **err) {
    static const char *const known[] = {"tokens"};
    json_t *j = object_body(body, len, known, 1, err);
    if (j == NULL) return NULL;
    json_t *tokens = json_object_get(j, "tokens");
    const int32_t n_vocab = rtm_model_n_vocab(in->model);
    text_buf_t b = {0};
    if (!json_is_array(tokens)) *err = "'tokens' wants a list of token ids";
    for (size_t i = 0; *err == NULL && i < json_array_size(tokens); i++) {
        json_t *x = json_array_get(tokens, i);
        const json_int_t t = json_integer_value(x);
        if (!json_is_integer(x) || t < 0 || t >= n_vocab) {
            *err = "'tokens' holds something that is not a token id of this model";
            break;
        }
        char bytes[MAX_PIECE];
        size_t n = 0;
        if (rtm_vocab_token_to_piece(rtm_model_vocab(in->model), (rtm_token_t)t, false, bytes, sizeof bytes, &n) == RT_OK)
            buf_write(bytes, n, &b);
    }
    json_t *out = NULL;
    if (*err == NULL && b.failed) *err = "no memory";
    if (*err == NULL) {
        text_buf_t valid = {0};
        rt_utf8_write(b.p ? b.p : "", b.len, buf_write, &valid);
        out = json_pack("{s:s%}", "content", valid.p ? valid.p : "", valid.len);
        free(valid.p);
    }
    free(b.p);
    json_decref(j);
    return out;
}

json_t *srv_info_props(const srv_info_t *in) {
    const rtm_vocab_t *v = rtm_model_vocab(in->model);
    json_t *params = json_pack("{s:f,s:f,s:i,s:f,s:f,s:f,s:f,s:f,s:i,s:i}", "temperature", 1.0, "top_p", 1.0, "top_k", 0,
                               "min_p", 0.0, "typical_p", 1.0, "repeat_penalty", 1.0, "presence_penalty", 0.0,
                               "frequency_penalty", 0.0, "repeat_last_n", 64, "n_predict", -1);
    return json_pack("{s:s,s:s,s:i,s:{s:i,s:o},s:o,s:s,s:s,s:i,s:i,s:s,s:i,s:s}", "model_path", in->model_path,
                     "model_alias", in->alias, "total_slots", srv_slots_count(in->slots),
                     "default_generation_settings", "n_ctx", in->n_ctx_slot, "params", params,
                     "chat_template", in->chat_template ? json_string(in->chat_template) : json_null(),
                     "bos_token", rtm_vocab_token_text(v, rtm_vocab_bos(v)) ? rtm_vocab_token_text(v, rtm_vocab_bos(v)) : "",
                     "eos_token", rtm_vocab_token_text(v, rtm_vocab_eos(v)) ? rtm_vocab_token_text(v, rtm_vocab_eos(v)) : "",
                     "n_vocab", rtm_model_n_vocab(in->model), "n_ctx_train", rtm_model_n_ctx_train(in->model),
                     "architecture", rtm_model_arch(in->model), "n_embd", rtm_model_n_embd(in->model),
                     "pooling", in->pooling);
}

json_t *srv_info_slots(const srv_info_t *in) {
    const int32_t n = srv_slots_count(in->slots);
    srv_slot_info_t *si = n > 0 ? calloc((size_t)n, sizeof si[0]) : NULL;
    if (n > 0 && si == NULL) return NULL;
    srv_stats_t st;
    srv_slots_stats(in->slots, &st, si);
    json_t *a = json_array();
    for (int32_t i = 0; i < n; i++)
        json_array_append_new(a, json_pack("{s:i,s:i,s:b,s:i,s:i,s:i}", "id", i, "n_ctx", in->n_ctx_slot,
                                           "is_processing", si[i].busy, "n_prompt_tokens", si[i].n_prompt,
                                           "n_decoded", si[i].n_decoded, "n_cached", si[i].n_cached));
    free(si);
    return a;
}

char *srv_info_metrics(const srv_info_t *in) {
    srv_stats_t st;
    srv_slots_stats(in->slots, &st, NULL);
    text_buf_t b = {0};
    char line[256];
    const struct {
        const char *name, *type, *help;
        double value;
    } m[] = {
        {"requests_total", "counter", "Requests finished.", (double)st.n_requests},
        {"prompt_tokens_total", "counter", "Prompt tokens decoded (not those reused from a slot's cache).",
         (double)st.n_prompt_tokens},
        {"tokens_predicted_total", "counter", "Tokens generated.", (double)st.n_generated},
        {"prompt_seconds_total", "counter", "Decode time given to prompt tokens.", st.prompt_s},
        {"tokens_predicted_seconds_total", "counter", "Decode time given to generated tokens.", st.generate_s},
        {"requests_processing", "gauge", "Slots busy.", st.n_busy},
        {"requests_deferred", "gauge", "Requests waiting for a slot.", st.n_queued},
        {"kv_cache_cells_used", "gauge", "KV cache cells the slots' sequences hold.", st.n_cells},
    };
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
        snprintf(line, sizeof line, "# HELP rt_%s %s\n# TYPE rt_%s %s\nrt_%s %.17g\n", m[i].name, m[i].help,
                 m[i].name, m[i].type, m[i].name, m[i].value);
        buf_write(line, strlen(line), &b);
    }
    if (b.failed) free(b.p), b.p = NULL;
    return b.p;
}
