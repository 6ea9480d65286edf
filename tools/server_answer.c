/* SPDX-License-Identifier: MIT */
/* server_answer.c: see server_answer.h. A token's text in the
 * log-probabilities is its piece as the text has it (control tokens
 * empty), written as valid UTF-8 (a byte token alone is U+FFFD), and its
 * bytes as they are, as OpenAI gives them. */
#include "server_answer.h"
#include "utf8_text.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#define MAX_PIECE 256

void srv_answer_init(srv_answer_t *a, const srv_request_t *q, const rtm_model_t *model, const char *model_name,
                     int32_t n_ctx) {
    static unsigned counter;
    *a = (srv_answer_t){.q = q, .model = model, .model_name = model_name, .created = (json_int_t)time(NULL),
                        .n_ctx = n_ctx};
    snprintf(a->id, sizeof a->id, "%s-%lld-%u", q->chat ? "chatcmpl" : "cmpl", (long long)a->created,
             __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED));
}

//===--- log-probabilities ---===//

typedef struct piece {
    char bytes[MAX_PIECE];
    size_t n_bytes;
    char text[3 * MAX_PIECE + 1]; /* each invalid byte may become 3 */
    size_t n_text;
} piece_t;

static void piece_write(const char *s, size_t len, void *user) {
    piece_t *p = user;
    memcpy(p->text + p->n_text, s, len);
    p->n_text += len;
}

static void token_piece(const rtm_model_t *m, rtm_token_t t, piece_t *p) {
    p->n_bytes = p->n_text = 0;
    if (rtm_vocab_token_to_piece(rtm_model_vocab(m), t, false, p->bytes, sizeof p->bytes, &p->n_bytes) != RT_OK)
        p->n_bytes = 0;
    rt_utf8_write(p->bytes, p->n_bytes, piece_write, p);
    p->text[p->n_text] = 0;
}

/* Code points in valid UTF-8 text. */
static size_t chars(const char *s, size_t n) {
    size_t c = 0;
    for (size_t i = 0; i < n; i++) c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

/* {"token", "logprob", "bytes"} of one token. */
static json_t *chat_token(const rtm_model_t *m, rtm_token_t t, float logprob) {
    piece_t p;
    token_piece(m, t, &p);
    json_t *bytes = json_array();
    for (size_t i = 0; i < p.n_bytes; i++) json_array_append_new(bytes, json_integer((unsigned char)p.bytes[i]));
    return json_pack("{s:s%,s:f,s:o}", "token", p.text, p.n_text, "logprob", (double)logprob, "bytes", bytes);
}

static json_t *chat_logprobs(const srv_answer_t *a, const srv_text_t *text) {
    json_t *content = json_array();
    for (size_t k = 0; k < text->n_lp; k++) {
        const srv_logprob_t *lp = &text->lp[k];
        json_t *tok = chat_token(a->model, lp->token, lp->logprob), *top = json_array();
        for (int32_t i = 0; i < lp->n_top; i++)
            json_array_append_new(top, chat_token(a->model, lp->top[i], lp->top_logprob[i]));
        json_object_set_new(tok, "top_logprobs", top);
        json_array_append_new(content, tok);
    }
    return json_pack("{s:o,s:n}", "content", content, "refusal");
}

static json_t *completion_logprobs(srv_answer_t *a, int32_t choice, const srv_text_t *text) {
    json_t *tokens = json_array(), *lps = json_array(), *tops = json_array(), *offsets = json_array();
    piece_t p;
    for (size_t k = 0; k < text->n_lp; k++) {
        const srv_logprob_t *lp = &text->lp[k];
        token_piece(a->model, lp->token, &p);
        json_array_append_new(tokens, json_stringn(p.text, p.n_text));
        json_array_append_new(lps, json_real(lp->logprob));
        json_array_append_new(offsets, json_integer((json_int_t)a->offset[choice]));
        a->offset[choice] += chars(p.text, p.n_text);
        json_t *top = json_object();
        for (int32_t i = 0; i < lp->n_top; i++) {
            token_piece(a->model, lp->top[i], &p);
            json_object_set_new(top, p.text, json_real(lp->top_logprob[i]));
        }
        json_array_append_new(tops, top);
    }
    return json_pack("{s:o,s:o,s:o,s:o}", "tokens", tokens, "token_logprobs", lps, "top_logprobs", tops,
                     "text_offset", offsets);
}

static json_t *logprobs(srv_answer_t *a, int32_t choice, const srv_text_t *text) {
    if (a->q->logprobs < 0) return json_null();
    return a->q->chat ? chat_logprobs(a, text) : completion_logprobs(a, choice, text);
}

//===--- choices and chunks ---===//

static json_t *text_of(const srv_text_t *text) {
    return json_stringn(text && text->p ? text->p : "", text && text->p ? text->len : 0);
}

/* The echoed prompt before the text (completions with echo). */
static json_t *echoed(srv_answer_t *a, int32_t i, const srv_text_t *text) {
    const char *prompt = a->q->prompt;
    json_t *s = json_string(prompt);
    if (s == NULL) return text_of(text);
    a->offset[i] = chars(prompt, strlen(prompt));
    json_t *t = text_of(text);
    json_t *both = json_sprintf("%s%s", json_string_value(s), json_string_value(t));
    json_decref(s);
    json_decref(t);
    return both;
}

/* finish_reason, and finish_detail when the context ran out. */
static void set_finish(const srv_answer_t *a, json_t *ch, const srv_job_result_t *res) {
    json_object_set_new(ch, "finish_reason", res ? json_string(res->finish) : json_null());
    if (res && res->context_full)
        json_object_set_new(ch, "finish_detail", json_sprintf("the context of %d positions is full", a->n_ctx));
}

json_t *srv_answer_choice(srv_answer_t *a, int32_t i, const srv_text_t *text, const srv_job_result_t *res) {
    json_t *ch = json_pack("{s:i}", "index", i);
    if (a->q->chat)
        json_object_set_new(ch, "message", json_pack("{s:s,s:o}", "role", "assistant", "content", text_of(text)));
    else
        json_object_set_new(ch, "text", a->q->echo ? echoed(a, i, text) : text_of(text));
    json_object_set_new(ch, "logprobs", logprobs(a, i, text));
    set_finish(a, ch, res);
    return ch;
}

static json_t *usage_of(const srv_usage_t *u) {
    return json_pack("{s:i,s:i,s:i,s:{s:i}}", "prompt_tokens", u->prompt_tokens, "completion_tokens",
                     u->completion_tokens, "total_tokens", u->prompt_tokens + u->completion_tokens,
                     "prompt_tokens_details", "cached_tokens", u->cached_tokens);
}

static json_t *envelope(const srv_answer_t *a, json_t *choices, bool chunk) {
    const char *object = a->q->chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion";
    return json_pack("{s:s,s:s,s:I,s:s,s:o}", "id", a->id, "object", object, "created", a->created, "model",
                     a->model_name, "choices", choices);
}

json_t *srv_answer_whole(const srv_answer_t *a, json_t *choices, const srv_usage_t *usage) {
    json_t *body = envelope(a, choices, false);
    json_object_set_new(body, "usage", usage_of(usage));
    return body;
}

json_t *srv_answer_chunk(srv_answer_t *a, int32_t i, const srv_text_t *text, bool first,
                         const srv_job_result_t *res) {
    json_t *ch = json_pack("{s:i}", "index", i);
    if (a->q->chat) {
        json_t *delta = json_object();
        if (first) json_object_set_new(delta, "role", json_string("assistant"));
        if (first || (text && text->len)) json_object_set_new(delta, "content", text_of(text));
        json_object_set_new(ch, "delta", delta);
    } else {
        json_object_set_new(ch, "text", first && a->q->echo ? echoed(a, i, text) : text_of(text));
    }
    json_object_set_new(ch, "logprobs", text && text->n_lp ? logprobs(a, i, text) : json_null());
    set_finish(a, ch, res);
    return envelope(a, json_pack("[o]", ch), true);
}

json_t *srv_answer_usage_chunk(const srv_answer_t *a, const srv_usage_t *usage) {
    json_t *body = envelope(a, json_array(), true);
    json_object_set_new(body, "usage", usage_of(usage));
    return body;
}

json_t *srv_answer_error(unsigned status, const char *type, const char *param, const char *message) {
    return json_pack("{s:{s:s,s:s,s:o,s:i}}", "error", "message", message, "type", type, "param",
                     param && param[0] ? json_string(param) : json_null(), "code", (int)status);
}
