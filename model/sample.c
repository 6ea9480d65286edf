/* SPDX-License-Identifier: MIT */
/* sample.c: picking the next token from logits. Greedy takes the largest
 * logit (the lowest id on ties). Otherwise, in llama.cpp's order: top-k
 * keeps the k largest, top-p the smallest prefix of them (by probability
 * at temperature 1) whose mass reaches p, the temperature divides what is
 * left, and a token is drawn from the softmax with the sampler's own
 * generator (splitmix64), so a seed gives the same tokens on every run. */
#include "internal.h"

#include <math.h>
#include <stdlib.h>

typedef struct cand {
    rtm_token_t id;
    float logit;
    double p;
} cand_t;

struct rtm_sampler {
    rtm_sampler_params_t params;
    uint64_t state;            /* splitmix64 */
    cand_t *cands;
    int32_t cap;
};

rt_status_t rtm_sampler_create(const rtm_sampler_params_t *params, rtm_sampler_t **out) {
    if (out) *out = NULL;
    if (out == NULL) return rtm_error(RT_ERR_INVALID_ARGUMENT, "rtm_sampler_create: NULL out");
    rtm_sampler_t *s = calloc(1, sizeof *s);
    if (s == NULL) return rtm_error(RT_ERR_OUT_OF_MEMORY, "rtm_sampler_create: no memory");
    rtm_params_copy(&s->params, sizeof s->params, params);
    const rtm_sampler_params_t p = s->params; /* a copy: the message outlives s */
    if (p.top_k < 0 || isnan(p.temp) || isnan(p.top_p)) {
        rtm_sampler_destroy(s);
        return rtm_error(RT_ERR_INVALID_ARGUMENT, "rtm_sampler_create: top_k %d, temp %g, top_p %g",
                         p.top_k, (double)p.temp, (double)p.top_p);
    }
    s->state = s->params.seed;
    *out = s;
    return RT_OK;
}

void rtm_sampler_destroy(rtm_sampler_t *s) {
    if (s == NULL) return;
    free(s->cands);
    free(s);
}

static uint64_t next_u64(rtm_sampler_t *s) {
    uint64_t z = (s->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double next_unit(rtm_sampler_t *s) { return (double)(next_u64(s) >> 11) * 0x1.0p-53; }

static rtm_token_t argmax(const float *logits, int32_t n) {
    rtm_token_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (logits[i] > logits[best]) best = i;
    return best;
}

/* Larger logit first, then lower id: a total order, so qsort is stable enough. */
static int by_logit(const void *a, const void *b) {
    const cand_t *x = a, *y = b;
    if (x->logit != y->logit) return x->logit > y->logit ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* Fills p with softmax(logit / temp) over the first n; returns n. */
static int32_t softmax(cand_t *c, int32_t n, double temp) {
    double sum = 0;
    for (int32_t i = 0; i < n; i++) sum += c[i].p = exp(((double)c[i].logit - c[0].logit) / temp);
    for (int32_t i = 0; i < n; i++) c[i].p /= sum;
    return n;
}

/* The shortest prefix whose probability reaches top_p. */
static int32_t cut_top_p(cand_t *c, int32_t n, double top_p) {
    softmax(c, n, 1.0);
    double mass = 0;
    for (int32_t i = 0; i < n; i++)
        if ((mass += c[i].p) >= top_p) return i + 1;
    return n;
}

static rtm_token_t draw(rtm_sampler_t *s, const cand_t *c, int32_t n) {
    const double u = next_unit(s);
    double acc = 0;
    for (int32_t i = 0; i < n; i++)
        if (u < (acc += c[i].p)) return c[i].id;
    return c[n - 1].id;
}

static bool ensure_cands(rtm_sampler_t *s, int32_t n) {
    if (n <= s->cap) return true;
    cand_t *c = realloc(s->cands, (size_t)n * sizeof c[0]);
    if (c == NULL) return false;
    s->cands = c;
    s->cap = n;
    return true;
}

rtm_token_t rtm_sampler_sample(rtm_sampler_t *s, const float *logits, int32_t n_vocab) {
    if (s == NULL || logits == NULL || n_vocab < 1) return RTM_TOKEN_NULL;
    const rtm_sampler_params_t *p = &s->params;
    if (p->temp <= 0 || p->top_k == 1 || !ensure_cands(s, n_vocab)) return argmax(logits, n_vocab);
    for (int32_t i = 0; i < n_vocab; i++) s->cands[i] = (cand_t){i, logits[i], 0};
    qsort(s->cands, (size_t)n_vocab, sizeof s->cands[0], by_logit);
    int32_t n = p->top_k > 0 && p->top_k < n_vocab ? p->top_k : n_vocab;
    if (p->top_p > 0 && p->top_p < 1) n = cut_top_p(s->cands, n, p->top_p);
    softmax(s->cands, n, p->temp);
    return draw(s, s->cands, n);
}
