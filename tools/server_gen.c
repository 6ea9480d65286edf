/* SPDX-License-Identifier: MIT */
/* server_gen.c: see server_gen.h. */
#include "server_gen.h"

#include <math.h>
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

rt_status_t srv_gen_begin(srv_gen_t *g, const rtm_model_t *model, int32_t n_ctx, const srv_gen_params_t *p) {
    *g = (srv_gen_t){.model = model, .max_tokens = p->max_tokens, .n_ctx = n_ctx, .finish = "stop",
                     .logprobs = p->logprobs};
    /* copied: the request that named them may be gone before the generation */
    if (!rt_stop_text_init(&g->stop, p->stops, p->n_stops)) return RT_ERR_OUT_OF_MEMORY;
    rt_status_t st = rtm_sampler_create(p->sampling, &g->sampler);
    if (st != RT_OK) return st;
    const rtm_vocab_t *v = rtm_model_vocab(model);
    const char *prompt = p->prompt;
    const bool parse_special = p->parse_special;
    const size_t len = strlen(prompt);
    int32_t n = 0;
    rtm_vocab_tokenize(v, prompt, len, true, parse_special, NULL, 0, &n);
    if (n >= n_ctx) return RT_ERR_DOES_NOT_FIT;
    g->prompt = malloc((size_t)(n > 0 ? n : 1) * sizeof g->prompt[0]);
    if (g->prompt == NULL) return RT_ERR_OUT_OF_MEMORY;
    st = rtm_vocab_tokenize(v, prompt, len, true, parse_special, g->prompt, n, &n);
    for (int32_t i = 0; st == RT_OK && i < n; i++) rtm_sampler_accept(g->sampler, g->prompt[i]);
    g->n_prompt = st == RT_OK ? n : 0;
    g->done = g->n_prompt == 0; /* nothing to continue */
    return st;
}

/* Ends the text: what the stop strings held back, and why. */
static void finish(srv_gen_t *g, const char *why) {
    rt_stop_text_finish(&g->stop, append, g);
    g->done = true;
    g->finish = why;
}

/* Inserts (t, x) into the k best so far, best first, keeping at most n. */
static void keep_best(srv_logprob_t *lp, int32_t n, rtm_token_t t, float x) {
    int32_t i = n - 1;
    if (lp->n_top < n) i = lp->n_top++;
    else if (x <= lp->top_logprob[n - 1]) return;
    for (; i > 0 && lp->top_logprob[i - 1] < x; i--) {
        lp->top[i] = lp->top[i - 1];
        lp->top_logprob[i] = lp->top_logprob[i - 1];
    }
    lp->top[i] = t;
    lp->top_logprob[i] = x;
}

/* t's log-probability in softmax(logits) and the g->logprobs likeliest,
 * the logits' largest taken out first so that exp never overflows. */
static void log_probs(srv_gen_t *g, const float *logits, rtm_token_t t) {
    const int32_t n_vocab = rtm_model_n_vocab(g->model), k = g->logprobs;
    float max = logits[0];
    for (int32_t i = 1; i < n_vocab; i++) max = logits[i] > max ? logits[i] : max;
    double sum = 0;
    for (int32_t i = 0; i < n_vocab; i++) sum += exp((double)logits[i] - max);
    const float lse = max + (float)log(sum);
    g->lp = (srv_logprob_t){.token = t, .logprob = logits[t] - lse};
    for (int32_t i = 0; k > 0 && i < n_vocab; i++) keep_best(&g->lp, k, i, logits[i] - lse);
    g->has_lp = true;
}

rt_status_t srv_gen_next(srv_gen_t *g, const float *logits, int32_t n_past) {
    g->out_len = 0;
    g->has_lp = false;
    if (g->out) g->out[0] = 0;
    if (g->done) return RT_OK;
    const rtm_vocab_t *v = rtm_model_vocab(g->model);
    const rtm_token_t t = rtm_sampler_sample(g->sampler, logits, rtm_model_n_vocab(g->model));
    if (rtm_vocab_is_eog(v, t)) {
        finish(g, "stop");
        return g->out_failed ? RT_ERR_OUT_OF_MEMORY : RT_OK;
    }
    if (g->logprobs >= 0) log_probs(g, logits, t);
    char piece[256];
    size_t len = 0;
    if (rtm_vocab_token_to_piece(v, t, false, piece, sizeof piece, &len) != RT_OK)
        len = 0; /* a piece longer than 256 bytes is left out */
    g->n_generated++;
    if (rt_stop_text_feed(&g->stop, piece, len, append, g)) {
        g->done = true;
        g->finish = "stop";
    } else if ((g->max_tokens >= 0 && g->n_generated >= g->max_tokens) || n_past + 1 >= g->n_ctx) {
        g->context_full = !(g->max_tokens >= 0 && g->n_generated >= g->max_tokens);
        finish(g, "length");
    } else {
        rtm_sampler_accept(g->sampler, t);
        g->next = t;
    }
    return g->out_failed ? RT_ERR_OUT_OF_MEMORY : RT_OK;
}

void srv_gen_end(srv_gen_t *g) {
    rtm_sampler_destroy(g->sampler);
    rt_stop_text_deinit(&g->stop);
    free(g->prompt);
    free(g->out);
    *g = (srv_gen_t){0};
}
