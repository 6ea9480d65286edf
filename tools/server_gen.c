/* SPDX-License-Identifier: MIT */
/* server_gen.c: see server_gen.h. */
#include "server_gen.h"

#include <stdlib.h>
#include <string.h>

static void append(const char *text, size_t len, void *user) {
    srv_gen_t *g = user;
    if (g->out_failed) return;
    if (g->out_len + len + 1 > g->out_cap) {
        const size_t cap = (g->out_len + len + 1) * 2;
        char *p = realloc(g->out, cap);
        if (p == NULL) return (void)(g->out_failed = true);
        g->out = p, g->out_cap = cap;
    }
    memcpy(g->out + g->out_len, text, len);
    g->out[g->out_len += len] = 0;
}

rt_status_t srv_gen_begin(srv_gen_t *g, const rtm_model_t *model, rtm_context_t *ctx, const char *prompt,
                          bool parse_special, int32_t max_tokens, const rtm_sampler_params_t *sampling,
                          const char *const *stops, int32_t n_stops) {
    *g = (srv_gen_t){.model = model, .ctx = ctx, .max_tokens = max_tokens};
    rt_stop_text_init(&g->stop, stops, n_stops);
    rt_status_t st = rtm_sampler_create(sampling, &g->sampler);
    if (st != RT_OK) return st;
    const rtm_vocab_t *v = rtm_model_vocab(model);
    const size_t len = strlen(prompt);
    int32_t n = 0;
    rtm_vocab_tokenize(v, prompt, len, true, parse_special, NULL, 0, &n);
    if (n == 0) n = 1;
    if (n >= rtm_context_n_ctx(ctx)) return RT_ERR_DOES_NOT_FIT;
    rtm_token_t *t = malloc((size_t)n * sizeof t[0]);
    if (t == NULL) return RT_ERR_OUT_OF_MEMORY;
    st = rtm_vocab_tokenize(v, prompt, len, true, parse_special, t, n, &n);
    rtm_context_clear(ctx);
    if (st == RT_OK && n > 0) st = rtm_decode(ctx, t, n);
    for (int32_t i = 0; st == RT_OK && i < n; i++) rtm_sampler_accept(g->sampler, t[i]);
    g->n_prompt = n;
    g->done = n == 0;
    g->finish = "stop";
    free(t);
    return st;
}

rt_status_t srv_gen_step(srv_gen_t *g) {
    g->out_len = 0;
    if (g->out) g->out[0] = 0;
    if (g->done) return RT_OK;
    const rtm_vocab_t *v = rtm_model_vocab(g->model);
    rtm_token_t t = rtm_sampler_sample(g->sampler, rtm_get_logits(g->ctx), rtm_model_n_vocab(g->model));
    if (rtm_vocab_is_eog(v, t)) {
        rt_stop_text_finish(&g->stop, append, g);
        g->done = true;
        return RT_OK;
    }
    char piece[256];
    size_t len = 0;
    rt_status_t st = rtm_vocab_token_to_piece(v, t, false, piece, sizeof piece, &len);
    if (st != RT_OK) len = 0; /* a piece longer than 256 bytes is left out */
    g->n_generated++;
    if (rt_stop_text_feed(&g->stop, piece, len, append, g)) {
        g->done = true;
        return RT_OK;
    }
    const bool full = rtm_context_n_past(g->ctx) + 1 >= rtm_context_n_ctx(g->ctx);
    if ((g->max_tokens >= 0 && g->n_generated >= g->max_tokens) || full) {
        rt_stop_text_finish(&g->stop, append, g);
        g->done = true;
        g->finish = "length";
        return RT_OK;
    }
    rtm_sampler_accept(g->sampler, t);
    st = rtm_decode(g->ctx, &t, 1);
    return st == RT_OK && g->out_failed ? RT_ERR_OUT_OF_MEMORY : st;
}

void srv_gen_end(srv_gen_t *g) {
    rtm_sampler_destroy(g->sampler);
    rt_stop_text_deinit(&g->stop);
    free(g->out);
    *g = (srv_gen_t){0};
}
