/* SPDX-License-Identifier: MIT */
/* server_embed.c: see server_embed.h. The input's four shapes are told
 * apart by their first element, and every element must then be of that
 * shape; ids are range-checked before they are narrowed. */
#include "server_embed.h"
#include "utf8_text.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Refuses the request: q->param names the field, q->error says why.
 * Always false. Both are valid UTF-8 (the JSON parser's message may quote
 * a character cut short), cut before a character, never inside one. */
static bool refuse(srv_embed_request_t *q, const char *param, const char *fmt, ...) RT_PRINTF(3, 4);
static bool refuse(srv_embed_request_t *q, const char *param, const char *fmt, ...) {
    char why[sizeof q->error];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    rt_utf8_copy_valid(q->param, sizeof q->param, param ? param : "");
    rt_utf8_copy_valid(q->error, sizeof q->error, why);
    return false;
}

//===--- input ---===//

/* A list of token ids (json_t array v) into input *in; name is its field. */
static bool read_ids(srv_embed_request_t *q, json_t *v, const char *name, int32_t n_vocab, srv_embed_input_t *in) {
    const size_t n = json_array_size(v);
    if (n == 0) return refuse(q, name, "'%s' is an empty list of token ids", name);
    if (n > INT32_MAX || (in->tokens = malloc(n * sizeof in->tokens[0])) == NULL) return refuse(q, name, "no memory");
    for (size_t i = 0; i < n; i++) {
        json_t *x = json_array_get(v, i);
        const json_int_t id = json_integer_value(x);
        if (!json_is_integer(x) || id < 0 || id >= n_vocab)
            return refuse(q, name, "'%s[%zu]' is not a token id of this model (0 to %d)", name, i, n_vocab - 1);
        in->tokens[i] = (rtm_token_t)id;
    }
    in->n_tokens = (int32_t)n;
    return true;
}

static bool read_text(srv_embed_request_t *q, json_t *v, const char *name, srv_embed_input_t *in) {
    if (!json_is_string(v)) return refuse(q, name, "'%s' wants a string", name);
    if (json_string_length(v) == 0) return refuse(q, name, "'%s' is an empty string", name);
    in->text = json_string_value(v);
    in->len = json_string_length(v);
    return true;
}

static bool alloc_inputs(srv_embed_request_t *q, size_t n) {
    if (n > SRV_EMBED_MAX_INPUTS)
        return refuse(q, "input", "'input' holds %zu inputs; at most %d are embedded a request", n,
                      SRV_EMBED_MAX_INPUTS);
    if ((q->inputs = calloc(n, sizeof q->inputs[0])) == NULL) return refuse(q, "input", "no memory");
    q->n_inputs = (int32_t)n;
    return true;
}

/* A list whose first element says its shape: strings, ids (one input) or lists of ids. */
static bool read_list(srv_embed_request_t *q, json_t *v, int32_t n_vocab) {
    const size_t n = json_array_size(v);
    json_t *first = json_array_get(v, 0);
    if (n == 0) return refuse(q, "input", "'input' is an empty list");
    if (json_is_integer(first)) return alloc_inputs(q, 1) && read_ids(q, v, "input", n_vocab, &q->inputs[0]);
    if (!json_is_string(first) && !json_is_array(first))
        return refuse(q, "input", "'input' wants a string, a list of strings, a list of token ids or a "
                                  "list of lists of token ids");
    if (!alloc_inputs(q, n)) return false;
    for (size_t i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "input[%zu]", i);
        json_t *x = json_array_get(v, i);
        bool ok;
        if (json_is_string(first)) ok = read_text(q, x, name, &q->inputs[i]);
        else if (json_is_array(x)) ok = read_ids(q, x, name, n_vocab, &q->inputs[i]);
        else ok = refuse(q, name, "'%s' wants a list of token ids", name);
        if (!ok) return false;
    }
    return true;
}

static bool read_input(srv_embed_request_t *q, json_t *v, int32_t n_vocab) {
    if (v == NULL || json_is_null(v)) return refuse(q, "input", "'input' is required");
    if (json_is_array(v)) return read_list(q, v, n_vocab);
    return alloc_inputs(q, 1) && read_text(q, v, "input", &q->inputs[0]);
}

//===--- the body ---===//

/* At most 32 bytes of a client's key, for a message. */
static const char *clip(const char *key, char *buf, size_t size) {
    snprintf(buf, size, "%s", key);
    buf[rt_utf8_complete(buf, strlen(buf))] = 0;
    return buf;
}

static bool known(const char *key) {
    static const char *const names[] = {"input", "model", "user", "encoding_format", "dimensions"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(key, names[i]) == 0) return true;
    return false;
}

/* A known field that is not null. */
static bool read_field(srv_embed_request_t *q, const char *key, json_t *v, int32_t n_embd) {
    if (strcmp(key, "input") == 0) return true; /* read last */
    if (strcmp(key, "model") == 0 || strcmp(key, "user") == 0)
        return json_is_string(v) ? true : refuse(q, key, "'%s' wants a string", key);
    if (strcmp(key, "encoding_format") == 0) {
        const char *f = json_string_value(v);
        q->base64 = f && strcmp(f, "base64") == 0;
        return f && (q->base64 || strcmp(f, "float") == 0) ? true
               : refuse(q, key, "'encoding_format' wants \"float\" or \"base64\"");
    }
    /* dimensions */
    return json_is_integer(v) && json_integer_value(v) == n_embd ? true
           : refuse(q, key, "'dimensions' must be the model's %d: shortened embeddings are not supported",
                    n_embd);
}

bool srv_embed_parse(srv_embed_request_t *q, int32_t n_vocab, int32_t n_embd, const char *body, size_t len) {
    *q = (srv_embed_request_t){0};
    json_error_t je;
    if ((q->json = json_loadb(body, len, 0, &je)) == NULL)
        return refuse(q, NULL, "the body is not JSON: %s (at byte %d)", je.text, je.position);
    if (!json_is_object(q->json)) return refuse(q, NULL, "the body is not a JSON object");
    const char *key;
    json_t *v;
    json_object_foreach(q->json, key, v) {
        char k[33];
        if (!known(key)) return refuse(q, key, "'%s' is not a field rt-server knows", clip(key, k, sizeof k));
        if (!json_is_null(v) && !read_field(q, key, v, n_embd)) return false;
    }
    return read_input(q, json_object_get(q->json, "input"), n_vocab);
}

bool srv_embed_tokenize(srv_embed_request_t *q, const rtm_vocab_t *vocab, int32_t n_ctx) {
    q->n_tokens = 0;
    for (int32_t i = 0; i < q->n_inputs; i++) {
        srv_embed_input_t *in = &q->inputs[i];
        char name[32] = "input";
        if (q->n_inputs > 1) snprintf(name, sizeof name, "input[%d]", i);
        int32_t n = 0;
        if (in->text) {
            rtm_vocab_tokenize(vocab, in->text, in->len, true, false, NULL, 0, &n);
            free(in->tokens);
            if ((in->tokens = malloc((size_t)(n > 0 ? n : 1) * sizeof in->tokens[0])) == NULL)
                return refuse(q, name, "no memory");
            if (rtm_vocab_tokenize(vocab, in->text, in->len, true, false, in->tokens, n, &n) != RT_OK)
                return refuse(q, name, "%s", rtm_last_error());
            in->n_tokens = n;
        }
        if (in->n_tokens == 0) return refuse(q, name, "'%s' gives no tokens", name);
        if (in->n_tokens > n_ctx)
            return refuse(q, name, "'%s' is %d tokens, longer than the context (%d)", name, in->n_tokens, n_ctx);
        q->n_tokens += in->n_tokens;
    }
    return true;
}

//===--- the answer ---===//

/* n floats as their little-endian float32 bytes in base64 (RFC 4648,
 * padded), NUL-terminated, malloc'd. */
static char *base64_floats(const float *v, int32_t n) {
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const size_t n_bytes = (size_t)n * 4;
    unsigned char *b = malloc(n_bytes + 2);
    char *out = malloc((n_bytes + 2) / 3 * 4 + 1);
    if (b == NULL || out == NULL) {
        free(b), free(out);
        return NULL;
    }
    for (int32_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &v[i], sizeof u);
        for (int k = 0; k < 4; k++) b[(size_t)i * 4 + (size_t)k] = (unsigned char)(u >> (8 * k));
    }
    b[n_bytes] = b[n_bytes + 1] = 0;
    size_t o = 0;
    for (size_t i = 0; i < n_bytes; i += 3) {
        const uint32_t w = (uint32_t)b[i] << 16 | (uint32_t)b[i + 1] << 8 | b[i + 2];
        out[o++] = abc[w >> 18 & 63];
        out[o++] = abc[w >> 12 & 63];
        out[o++] = i + 1 < n_bytes ? abc[w >> 6 & 63] : '=';
        out[o++] = i + 2 < n_bytes ? abc[w & 63] : '=';
    }
    out[o] = 0;
    free(b);
    return out;
}

static json_t *vector(const float *v, int32_t n, bool base64) {
    if (base64) {
        char *s = base64_floats(v, n);
        json_t *j = s ? json_string(s) : NULL;
        free(s);
        return j;
    }
    json_t *a = json_array();
    for (int32_t i = 0; a && i < n; i++)
        if (json_array_append_new(a, json_real((double)v[i])) != 0) json_decref(a), a = NULL;
    return a;
}

json_t *srv_embed_answer(const srv_embed_request_t *q, const float *vectors, int32_t n_embd, const char *model) {
    json_t *data = json_array();
    for (int32_t i = 0; data && i < q->n_inputs; i++) {
        json_t *e = vector(vectors + (size_t)i * (size_t)n_embd, n_embd, q->base64);
        json_t *item = e ? json_pack("{s:s,s:i,s:o}", "object", "embedding", "index", i, "embedding", e) : NULL;
        if (item == NULL || json_array_append_new(data, item) != 0) json_decref(data), data = NULL;
    }
    if (data == NULL) return NULL;
    return json_pack("{s:s,s:o,s:s,s:{s:i,s:i}}", "object", "list", "data", data, "model", model, "usage",
                     "prompt_tokens", q->n_tokens, "total_tokens", q->n_tokens);
}

void srv_embed_deinit(srv_embed_request_t *q) {
    for (int32_t i = 0; q->inputs && i < q->n_inputs; i++) free(q->inputs[i].tokens);
    free(q->inputs);
    json_decref(q->json);
    q->inputs = NULL, q->n_inputs = 0, q->json = NULL;
}
