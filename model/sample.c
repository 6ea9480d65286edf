/* SPDX-License-Identifier: MIT */
/* sample.c: picking the next token from logits. Greedy takes the largest
 * logit (the lowest id on ties). The logit biases, when given, are added
 * first; the penalties (repetition, presence, frequency), when set, then
 * rescale or lower the logits of the tokens among the last repeat_last_n
 * accepted (a ring of the sampler's own). Otherwise, in llama.cpp's order:
 * top-k keeps the k largest, typical-p the tokens whose surprise (-log p)
 * is nearest the distribution's entropy until their mass reaches p, top-p
 * the smallest prefix (by probability at temperature 1) whose mass
 * reaches p, min-p those whose probability is at least min_p times the
 * first's, the temperature divides what is left, and a token is drawn
 * from the softmax with the sampler's own generator (splitmix64), so a
 * seed gives the same tokens on every run. With a grammar (rtm_grammar_t)
 * the token drawn is kept when the grammar allows it, one check that is
 * almost always true; otherwise the grammar masks a copy of the logits
 * and the draw is made again from those. */
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct cand {
    rtm_token_t id;
    float logit;
    double p;
} cand_t;

#define DEFAULT_REPEAT_LAST_N 64

/* history is a ring of n_history of the last repeat_last_n tokens accepted,
 * the oldest at (head - n_history) mod repeat_last_n. */
struct rtm_sampler {
    rtm_sampler_params_t params;
    uint64_t state;            /* splitmix64 */
    cand_t *cands;
    int32_t cap;
    rtm_token_t *history;      /* repeat_last_n slots, only with a penalty */
    int32_t n_history, head;
    rtm_logit_bias_t *bias;    /* params.n_logit_bias, owned (params.logit_bias points here) */
    float *masked;             /* cap_masked: the logits a grammar leaves (sample_masked) */
    int32_t cap_masked;
};

static bool has_repeat(const rtm_sampler_params_t *p) {
    return p->repeat_penalty > 0 && p->repeat_penalty != 1.0f;
}

static bool has_penalty(const rtm_sampler_params_t *p) {
    return has_repeat(p) || p->presence_penalty != 0 || p->frequency_penalty != 0;
}

/* Whether the logits change before the filters: then greedy is not argmax. */
static bool shifts_logits(const rtm_sampler_params_t *p) {
    return has_penalty(p) || p->n_logit_bias > 0;
}

static bool params_valid(const rtm_sampler_params_t *p) {
    return p->top_k >= 0 && !isnan(p->temp) && !isnan(p->top_p) && p->min_p >= 0 && p->min_p <= 1 &&
           p->repeat_penalty >= 0 && p->repeat_last_n >= 0 && !isnan(p->typical_p) &&
           isfinite(p->presence_penalty) && isfinite(p->frequency_penalty) && p->n_logit_bias >= 0 &&
           (p->n_logit_bias == 0 || p->logit_bias != NULL);
}

/* The biases copied (the caller's array may go); false when out of memory. */
static bool copy_bias(rtm_sampler_t *s) {
    const int32_t n = s->params.n_logit_bias;
    if (n == 0) return (s->params.logit_bias = NULL), true;
    if ((s->bias = malloc((size_t)n * sizeof s->bias[0])) == NULL) return false;
    for (int32_t i = 0; i < n; i++) s->bias[i] = s->params.logit_bias[i];
    s->params.logit_bias = s->bias;
    return true;
}

rt_status_t rtm_sampler_create(const rtm_sampler_params_t *params, rtm_sampler_t **out) {
    if (out) *out = NULL;
    if (out == NULL) return rtm_error(RT_ERR_INVALID_ARGUMENT, "rtm_sampler_create: NULL out");
    rtm_sampler_t *s = calloc(1, sizeof *s);
    if (s == NULL) return rtm_error(RT_ERR_OUT_OF_MEMORY, "rtm_sampler_create: no memory");
    rtm_params_copy(&s->params, sizeof s->params, params);
    const rtm_sampler_params_t p = s->params; /* a copy: the message outlives s */
    if (!params_valid(&p)) {
        s->params.n_logit_bias = 0;
        rtm_sampler_destroy(s);
        return rtm_error(RT_ERR_INVALID_ARGUMENT,
                         "rtm_sampler_create: top_k %d, temp %g, top_p %g, min_p %g, "
                         "repeat_penalty %g, repeat_last_n %d, typical_p %g, presence_penalty %g, "
                         "frequency_penalty %g, %d logit biases", p.top_k, (double)p.temp,
                         (double)p.top_p, (double)p.min_p, (double)p.repeat_penalty, p.repeat_last_n,
                         (double)p.typical_p, (double)p.presence_penalty, (double)p.frequency_penalty,
                         p.n_logit_bias);
    }
    if (!copy_bias(s)) {
        rtm_sampler_destroy(s);
        return rtm_error(RT_ERR_OUT_OF_MEMORY, "rtm_sampler_create: no memory for %d logit biases",
                         p.n_logit_bias);
    }
    if (s->params.repeat_last_n == 0) s->params.repeat_last_n = DEFAULT_REPEAT_LAST_N;
    if (has_penalty(&p) &&
        (s->history = malloc((size_t)s->params.repeat_last_n * sizeof s->history[0])) == NULL) {
        rtm_sampler_destroy(s);
        return rtm_error(RT_ERR_OUT_OF_MEMORY, "rtm_sampler_create: no memory for %d tokens of history",
                         p.repeat_last_n);
    }
    s->state = s->params.seed;
    *out = s;
    return RT_OK;
}

void rtm_sampler_destroy(rtm_sampler_t *s) {
    if (s == NULL) return;
    free(s->history);
    free(s->bias);
    free(s->cands);
    free(s->masked);
    free(s);
}

void rtm_sampler_accept(rtm_sampler_t *s, rtm_token_t token) {
    if (s == NULL || s->history == NULL) return;
    const int32_t n = s->params.repeat_last_n;
    s->history[s->head] = token;
    s->head = (s->head + 1) % n;
    if (s->n_history < n) s->n_history++;
}

void rtm_sampler_reset(rtm_sampler_t *s) {
    if (s) s->n_history = s->head = 0;
}

static uint64_t next_u64(rtm_sampler_t *s) {
    uint64_t z = (s->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double next_unit(rtm_sampler_t *s) { return (double)(next_u64(s) >> 11) * 0x1.0p-53; }

/* The first index of the largest logit (NaNs never win; 0 if logits[0]
 * is one): the largest value first, in 8 independent lanes the compiler
 * can keep in one vector (x > m ? x : m is maxps's rule), then its first
 * index. One compare per logit and a dependent reload of logits[best]
 * cost a decode step of 4 sequences 2.6% (a 49152 vocabulary). */
static rtm_token_t argmax(const float *logits, int32_t n) {
    float m[8];
    for (int j = 0; j < 8; j++) m[j] = logits[0];
    int32_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) m[j] = logits[i + j] > m[j] ? logits[i + j] : m[j];
    for (; i < n; i++) m[0] = logits[i] > m[0] ? logits[i] : m[0];
    float best = m[0];
    for (int j = 1; j < 8; j++) best = m[j] > best ? m[j] : best;
    for (i = 0; i < n; i++)
        if (logits[i] == best) return i;
    return 0;
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

/* llama.cpp's rules: the repetition penalty applies to each token of the
 * history once, however often it occurs there (a token penalised twice
 * would be mostly a smaller vocabulary); the frequency penalty once per
 * occurrence, the presence penalty once. The counts go in p (zero before
 * softmax) and are zeroed again as each token is done. */
static void apply_penalties(const rtm_sampler_t *s, cand_t *c, int32_t n_vocab) {
    const rtm_sampler_params_t *p = &s->params;
    const int32_t n = p->repeat_last_n;
    for (int32_t i = 0; i < s->n_history; i++) {
        const rtm_token_t t = s->history[(s->head - 1 - i + n) % n];
        if (t >= 0 && t < n_vocab) c[t].p += 1;
    }
    for (int32_t i = 0; i < s->n_history; i++) {
        const rtm_token_t t = s->history[(s->head - 1 - i + n) % n];
        if (t < 0 || t >= n_vocab || c[t].p == 0) continue;
        if (has_repeat(p))
            c[t].logit = c[t].logit > 0 ? c[t].logit / p->repeat_penalty : c[t].logit * p->repeat_penalty;
        c[t].logit -= (float)(c[t].p * p->frequency_penalty) + p->presence_penalty;
        c[t].p = 0;
    }
}

static void apply_bias(const rtm_sampler_t *s, cand_t *c, int32_t n_vocab) {
    for (int32_t i = 0; i < s->params.n_logit_bias; i++) {
        const rtm_logit_bias_t *b = &s->params.logit_bias[i];
        if (b->token >= 0 && b->token < n_vocab) c[b->token].logit += b->bias;
    }
}

/* The penalised argmax, lowest id on ties like argmax. */
static rtm_token_t best_cand(const cand_t *c, int32_t n) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (c[i].logit > c[best].logit) best = i;
    return c[best].id;
}

/* Those at least min_p times as likely as the first (c sorted): logits
 * within log(min_p) of the largest. */
static int32_t cut_min_p(const cand_t *c, int32_t n, double min_p) {
    const double floor = (double)c[0].logit + log(min_p);
    for (int32_t i = 1; i < n; i++)
        if ((double)c[i].logit < floor) return i;
    return n;
}

/* |surprise - entropy| of each candidate, the smallest first, for typical-p. */
static int by_score(const void *a, const void *b) {
    const cand_t *x = a, *y = b;
    if (x->p != y->p) return x->p < y->p ? -1 : 1;
    return by_logit(a, b);
}

/* Locally typical sampling (Meister et al.): the candidates whose surprise
 * is nearest the entropy, nearest first, until their mass reaches typical_p;
 * then in logit order again for the filters after it. The score rides in
 * p while sorting; the probabilities are taken again from the logits. */
static int32_t cut_typical(cand_t *c, int32_t n, double typical_p) {
    softmax(c, n, 1.0);
    double entropy = 0, sum = 0;
    for (int32_t i = 0; i < n; i++) entropy -= c[i].p > 0 ? c[i].p * log(c[i].p) : 0;
    const double top = c[0].logit;
    for (int32_t i = 0; i < n; i++) {
        sum += exp((double)c[i].logit - top);
        c[i].p = fabs((c[i].p > 0 ? -log(c[i].p) : INFINITY) - entropy);
    }
    qsort(c, (size_t)n, sizeof c[0], by_score);
    double mass = 0;
    int32_t keep = n;
    for (int32_t i = 0; i < n; i++)
        if ((mass += exp((double)c[i].logit - top) / sum) >= typical_p) {
            keep = i + 1;
            break;
        }
    qsort(c, (size_t)keep, sizeof c[0], by_logit);
    return keep;
}

/* One draw from the logits, by the filters above. */
static rtm_token_t sample_logits(rtm_sampler_t *s, const float *logits, int32_t n_vocab) {
    const rtm_sampler_params_t *p = &s->params;
    const bool greedy = p->temp <= 0 || p->top_k == 1;
    if ((greedy && !shifts_logits(p)) || !ensure_cands(s, n_vocab)) return argmax(logits, n_vocab);
    for (int32_t i = 0; i < n_vocab; i++) s->cands[i] = (cand_t){i, logits[i], 0};
    apply_bias(s, s->cands, n_vocab);
    if (has_penalty(p)) apply_penalties(s, s->cands, n_vocab);
    if (greedy) return best_cand(s->cands, n_vocab);
    qsort(s->cands, (size_t)n_vocab, sizeof s->cands[0], by_logit);
    int32_t n = p->top_k > 0 && p->top_k < n_vocab ? p->top_k : n_vocab;
    if (p->typical_p > 0 && p->typical_p < 1) n = cut_typical(s->cands, n, p->typical_p);
    if (p->top_p > 0 && p->top_p < 1) n = cut_top_p(s->cands, n, p->top_p);
    if (p->min_p > 0) n = cut_min_p(s->cands, n, p->min_p);
    softmax(s->cands, n, p->temp);
    return draw(s, s->cands, n);
}

/* The draw again, from the logits the grammar leaves: its mask on a copy.
 * A draw can still land on a masked token (a probability rounded at the
 * end of the candidates), so the largest allowed logit settles that. */
static rtm_token_t sample_masked(rtm_sampler_t *s, const float *logits, int32_t n_vocab) {
    rtm_grammar_t *g = s->params.grammar;
    if (n_vocab > s->cap_masked) {
        float *m = realloc(s->masked, (size_t)n_vocab * sizeof m[0]);
        if (m == NULL) return rtm_error(RT_ERR_OUT_OF_MEMORY, "rtm_sampler_sample: no memory for %d "
                                        "masked logits", n_vocab), RTM_TOKEN_NULL;
        s->masked = m;
        s->cap_masked = n_vocab;
    }
    memcpy(s->masked, logits, (size_t)n_vocab * sizeof logits[0]);
    if (rtm_grammar_apply(g, s->masked, n_vocab) != RT_OK) return RTM_TOKEN_NULL;
    rtm_token_t t = sample_logits(s, s->masked, n_vocab);
    if (!rtm_grammar_allows(g, t)) t = argmax(s->masked, n_vocab);
    if (rtm_grammar_allows(g, t)) return t;
    rtm_error(RT_ERR_INVALID_ARGUMENT, "rtm_sampler_sample: the grammar allows no token here "
              "(or only tokens whose logits are not finite)");
    return RTM_TOKEN_NULL;
}

rtm_token_t rtm_sampler_sample(rtm_sampler_t *s, const float *logits, int32_t n_vocab) {
    if (s == NULL || logits == NULL || n_vocab < 1) return RTM_TOKEN_NULL;
    const rtm_token_t t = sample_logits(s, logits, n_vocab);
    if (s->params.grammar == NULL || rtm_grammar_allows(s->params.grammar, t)) return t;
    return sample_masked(s, logits, n_vocab);
}
