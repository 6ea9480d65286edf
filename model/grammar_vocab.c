/* SPDX-License-Identifier: MIT */
/* grammar_vocab.c: rtm_grammar_t (rt_model.h), the rules and their
 * matcher bound to a vocabulary: the tokens' pieces (rtm_vocab_token_to_piece
 * without special texts, so control tokens have none) read once into the
 * trie, the end-of-generation tokens kept apart. Each call starts with
 * gr_matcher_begin, so a call's limits are its own and the matcher's cache
 * is trimmed between calls, never during one. */
#include "grammar_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rtm_grammar {
    rtm_gbnf_t *gbnf;
    gr_matcher_t m;
    const rtm_vocab_t *vocab;    /* borrowed; NULL: text only */
    gr_trie_t trie;              /* the non-empty pieces but the end-of-generation tokens' */
    uint8_t *allowed;            /* n_tokens: the walk's marks */
    rtm_token_t *eog;            /* the tokens that end generation */
    int32_t n_eog;
};

//===--- the vocabulary ---===//

/* Token t's piece appended to *blob (capacity *cap, *used bytes). */
static rt_status_t append_piece(const rtm_vocab_t *v, rtm_token_t t, char **blob, size_t *cap, size_t *used) {
    for (;;) {
        size_t len = 0;
        const rt_status_t st = rtm_vocab_token_to_piece(v, t, false, *blob + *used, *cap - *used, &len);
        if (st == RT_OK) {
            *used += len;
            return RT_OK;
        }
        if (st != RT_ERR_DOES_NOT_FIT) return rtm_error_wrap(st, "grammar: the piece of token %d", t);
        const size_t c = (*cap + len) * 2;
        char *b = realloc(*blob, c);
        if (b == NULL) return rtm_error(RT_ERR_OUT_OF_MEMORY, "grammar: no memory for the vocabulary's pieces");
        *blob = b;
        *cap = c;
    }
}

static rt_status_t read_vocab(rtm_grammar_t *g, const rtm_vocab_t *v) {
    const int32_t n = rtm_vocab_n_tokens(v);
    size_t cap = (size_t)n * 8 + 64, used = 0;
    char *blob = malloc(cap);
    uint32_t *offs = malloc(((size_t)n + 1) * sizeof offs[0]);
    g->eog = malloc(((size_t)n + 1) * sizeof g->eog[0]);
    g->allowed = malloc((size_t)n + 1);
    rt_status_t st = blob && offs && g->eog && g->allowed
                         ? RT_OK : rtm_error(RT_ERR_OUT_OF_MEMORY, "grammar: no memory for %d tokens", n);
    for (rtm_token_t t = 0; st == RT_OK && t < n; t++) {
        offs[t] = (uint32_t)used;
        if (rtm_vocab_is_eog(v, t)) g->eog[g->n_eog++] = t;
        else st = append_piece(v, t, &blob, &cap, &used);
        if (used > UINT32_MAX / 2) st = rtm_error(RT_ERR_UNSUPPORTED, "grammar: the pieces pass 2 GiB");
    }
    if (st != RT_OK) {
        free(blob);
        free(offs);
        return st;
    }
    offs[n] = (uint32_t)used;
    g->vocab = v;
    return gr_trie_init(&g->trie, blob, offs, n); /* owns blob and offs now */
}

//===--- life ---===//

rt_status_t rtm_grammar_create(const rtm_vocab_t *vocab, const char *gbnf, size_t len, const char *root,
                               rtm_grammar_t **out_grammar) {
    if (out_grammar) *out_grammar = NULL;
    if (out_grammar == NULL || (gbnf == NULL && len > 0))
        return rtm_error(RT_ERR_INVALID_ARGUMENT, "rtm_grammar_create: NULL %s", out_grammar ? "gbnf" : "out");
    rtm_grammar_t *g = calloc(1, sizeof *g);
    if (g == NULL) return rtm_error(RT_ERR_OUT_OF_MEMORY, "rtm_grammar_create: no memory");
    rt_status_t st = rtm_gbnf_parse(gbnf, len, root, &g->gbnf);
    if (st == RT_OK) st = gr_matcher_init(&g->m, g->gbnf);
    if (st == RT_OK && vocab) st = read_vocab(g, vocab);
    if (st != RT_OK) {
        rtm_grammar_destroy(g);
        return st;
    }
    *out_grammar = g;
    return RT_OK;
}

void rtm_grammar_destroy(rtm_grammar_t *g) {
    if (g == NULL) return;
    gr_trie_deinit(&g->trie);
    gr_matcher_deinit(&g->m);
    rtm_gbnf_destroy(g->gbnf);
    free(g->allowed);
    free(g->eog);
    free(g);
}

void rtm_grammar_reset(rtm_grammar_t *g) {
    if (g) g->m.cur = g->m.start;
}

//===--- tokens ---===//

static bool is_eog(const rtm_grammar_t *g, rtm_token_t t) {
    for (int32_t i = 0; i < g->n_eog; i++)
        if (g->eog[i] == t) return true;
    return false;
}

/* A token's piece for a message: printable ASCII as it is, the rest as \xNN. */
static const char *shown(const rtm_grammar_t *g, rtm_token_t t, char *buf, size_t size) {
    size_t n = 0;
    for (uint32_t i = g->trie.offs[t]; i < g->trie.offs[t + 1] && n + 5 < size; i++) {
        const unsigned char c = (unsigned char)g->trie.blob[i];
        n += (size_t)snprintf(buf + n, size - n, c >= 0x20 && c < 0x7F && c != '\'' ? "%c" : "\\x%02X", c);
    }
    buf[n] = 0;
    return buf;
}

static rt_status_t need_vocab(const rtm_grammar_t *g, rtm_token_t t, const char *fn) {
    if (g == NULL) return rtm_error(RT_ERR_INVALID_ARGUMENT, "%s: NULL grammar", fn);
    if (g->vocab == NULL)
        return rtm_error(RT_ERR_INVALID_ARGUMENT, "%s: the grammar was made without a vocabulary", fn);
    if (t < 0 || t >= g->trie.n_tokens)
        return rtm_error(RT_ERR_INVALID_ARGUMENT, "%s: token %d is not in the vocabulary of %d", fn, t,
                         g->trie.n_tokens);
    return RT_OK;
}

rt_status_t rtm_grammar_accept(rtm_grammar_t *g, rtm_token_t token) {
    rt_status_t st = need_vocab(g, token, "rtm_grammar_accept");
    if (st == RT_OK) st = gr_matcher_begin(&g->m);
    if (st != RT_OK) return st;
    if (is_eog(g, token)) {
        if (gr_state_complete(&g->m, g->m.cur)) return RT_OK;
        return rtm_error(RT_ERR_INVALID_ARGUMENT, "grammar: the end of generation (token %d) is not "
                         "allowed here: the grammar wants more text", token);
    }
    gr_state_t s = g->m.cur;
    if (!gr_trie_take(&g->trie, &g->m, &s, token)) {
        if (g->m.err != RT_OK) return g->m.err;
        char piece[96];
        return rtm_error(RT_ERR_INVALID_ARGUMENT, "grammar: token %d ('%s') is not allowed here", token,
                         shown(g, token, piece, sizeof piece));
    }
    g->m.cur = s;
    return RT_OK;
}

bool rtm_grammar_allows(rtm_grammar_t *g, rtm_token_t token) {
    if (need_vocab(g, token, "rtm_grammar_allows") != RT_OK || gr_matcher_begin(&g->m) != RT_OK) return false;
    if (is_eog(g, token)) return gr_state_complete(&g->m, g->m.cur);
    gr_state_t s = g->m.cur;
    return gr_trie_take(&g->trie, &g->m, &s, token);
}

rt_status_t rtm_grammar_apply(rtm_grammar_t *g, float *logits, int32_t n_vocab) {
    rt_status_t st = RT_OK;
    if (g == NULL || g->vocab == NULL || logits == NULL || n_vocab < 0)
        st = rtm_error(RT_ERR_INVALID_ARGUMENT, "rtm_grammar_apply: %s", g == NULL ? "NULL grammar"
                       : g->vocab == NULL ? "the grammar was made without a vocabulary"
                       : logits == NULL ? "NULL logits" : "n_vocab < 0");
    if (st == RT_OK) st = gr_matcher_begin(&g->m);
    if (st != RT_OK) return st;
    const int32_t n = g->trie.n_tokens;
    memset(g->allowed, 0, (size_t)n);
    if ((st = gr_trie_allowed(&g->trie, &g->m, g->m.cur, g->allowed)) != RT_OK) return st;
    const bool end = gr_state_complete(&g->m, g->m.cur);
    for (int32_t i = 0; i < g->n_eog; i++) g->allowed[g->eog[i]] = end;
    for (int32_t i = 0; i < n_vocab; i++)
        if (i >= n || !g->allowed[i]) logits[i] = -INFINITY;
    return RT_OK;
}

//===--- text ---===//

rt_status_t rtm_grammar_accept_text(rtm_grammar_t *g, const char *text, size_t len) {
    if (g == NULL || (text == NULL && len > 0))
        return rtm_error(RT_ERR_INVALID_ARGUMENT, "rtm_grammar_accept_text: NULL %s", g ? "text" : "grammar");
    rt_status_t st = gr_matcher_begin(&g->m);
    if (st != RT_OK) return st;
    gr_state_t s = g->m.cur;
    for (size_t i = 0; i < len; i++) {
        if (gr_step(&g->m, &s, (uint8_t)text[i])) continue;
        if (g->m.err != RT_OK) return g->m.err;
        const unsigned char c = (unsigned char)text[i];
        char what[16];
        snprintf(what, sizeof what, c >= 0x20 && c < 0x7F ? "'%c'" : "byte 0x%02X", c);
        return rtm_error(RT_ERR_INVALID_ARGUMENT, "grammar: the text leaves the grammar at byte %zu (%s)", i,
                         what);
    }
    g->m.cur = s;
    return RT_OK;
}

bool rtm_grammar_can_end(const rtm_grammar_t *g) { return g && gr_state_complete(&g->m, g->m.cur); }

bool rtm_grammar_done(const rtm_grammar_t *g) { return g && gr_state_done(&g->m, g->m.cur); }
