/* SPDX-License-Identifier: MIT */
/* fuzz-grammar.c: the libFuzzer target for grammar-constrained sampling
 * (model/grammar_*.c): the GBNF parser and checks, the matcher and the
 * token trie, from their sources with the fuzzer's instrumentation (over
 * the build's librtcore, for the status names). A grammar comes from the
 * user or a client of rt-server: whoever sends it wrote the program.
 *
 * An input is a grammar, then optionally a NUL byte and a text. A refused
 * grammar must come with a message that starts "grammar: "; an accepted
 * one is matched against the text a byte at a time (a refused byte leaves
 * the state as it was; done implies complete), and a small vocabulary
 * (every single byte, the text cut into pieces of 1 to 5 bytes, a few
 * fixed words and UTF-8 fragments) goes through the trie from the start
 * and after each prefix of the text the matcher took: the tokens the walk
 * allows must be exactly those whose piece the matcher takes one byte at
 * a time. Nothing may crash, leak, abort, hang or pass the limits of
 * grammar_impl.h. Seeds: tests/fuzz/corpus/grammar. */
#include "../../model/grammar_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                        \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "fuzz-grammar: %s:%d: %s (%s)\n", __FILE__, __LINE__, #cond,   \
                    rtm_last_error());                                                     \
            abort();                                                                       \
        }                                                                                  \
    } while (0)

static const char *const words[] = {"true", "false", "null", "{\"", "\":", "\", \"", "[1,", "\\n",
                                    "\xe2\x82", "\xac", "\xf0\x9f", "\x99\x82", "\xc3\xa9", "  ", "abc"};

/* The pieces into blob/offs (malloc'd, for gr_trie_init): 256 single
 * bytes, the words, then the text in pieces of 1..5 bytes. */
static int32_t make_vocab(const uint8_t *text, size_t n, char **blob, uint32_t **offs) {
    const int32_t n_words = (int32_t)(sizeof words / sizeof words[0]);
    const int32_t max = 256 + n_words + (int32_t)n;
    *blob = malloc(256 + 64 + n + 1);
    *offs = malloc(((size_t)max + 1) * sizeof (*offs)[0]);
    CHECK(*blob && *offs);
    uint32_t used = 0;
    int32_t t = 0;
    for (; t < 256; t++) (*offs)[t] = used, (*blob)[used++] = (char)t;
    for (int32_t w = 0; w < n_words; w++, t++) {
        (*offs)[t] = used;
        memcpy(*blob + used, words[w], strlen(words[w]));
        used += (uint32_t)strlen(words[w]);
    }
    for (size_t i = 0; i < n; t++) {
        const size_t len = 1 + (text[i] + i) % 5 < n - i ? 1 + (text[i] + i) % 5 : n - i;
        (*offs)[t] = used;
        memcpy(*blob + used, text + i, len);
        used += (uint32_t)len;
        i += len;
    }
    (*offs)[t] = used;
    return t;
}

/* The walk against every token taken by hand, from the current state
 * (read after gr_matcher_begin, which may renumber it). */
static void check_tokens(gr_trie_t *trie, gr_matcher_t *m, uint8_t *allowed) {
    memset(allowed, 0, (size_t)trie->n_tokens);
    CHECK(gr_matcher_begin(m) == RT_OK);
    const gr_state_t from = m->cur;
    if (gr_trie_allowed(trie, m, from, allowed) != RT_OK) return; /* a limit, with its message */
    for (int32_t t = 0; t < trie->n_tokens; t++) {
        gr_state_t x = from;
        const bool took = gr_trie_take(trie, m, &x, t);
        if (m->err != RT_OK) return;
        CHECK(took == (allowed[t] != 0));
    }
}

static void match_text(gr_matcher_t *m, const uint8_t *text, size_t n, gr_trie_t *trie) {
    uint8_t *allowed = malloc((size_t)trie->n_tokens + 1);
    CHECK(allowed != NULL);
    check_tokens(trie, m, allowed);
    for (size_t i = 0; i < n; i++) {
        CHECK(gr_matcher_begin(m) == RT_OK);
        gr_state_t s = m->cur;
        const bool ok = gr_step(m, &s, text[i]);
        if (m->err != RT_OK) break;
        if (!ok) {
            CHECK(memcmp(&s, &m->cur, sizeof s) == 0);
            break;
        }
        m->cur = s;
        CHECK(!gr_state_done(m, s) || gr_state_complete(m, s));
        if (i % 7 == 6) check_tokens(trie, m, allowed);
    }
    free(allowed);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *nul = memchr(data, 0, size);
    const size_t glen = nul ? (size_t)(nul - data) : size;
    const uint8_t *text = nul ? nul + 1 : data + size;
    const size_t tlen = nul ? size - glen - 1 : 0;
    rtm_gbnf_t *g = NULL;
    if (rtm_gbnf_parse((const char *)data, glen, NULL, &g) != RT_OK) {
        CHECK(g == NULL && strncmp(rtm_last_error(), "grammar: ", 9) == 0);
        return 0;
    }
    gr_matcher_t m;
    if (gr_matcher_init(&m, g) != RT_OK) {
        CHECK(strncmp(rtm_last_error(), "grammar: ", 9) == 0);
        gr_matcher_deinit(&m);
        rtm_gbnf_destroy(g);
        return 0;
    }
    char *blob;
    uint32_t *offs;
    const int32_t n_tokens = make_vocab(text, tlen, &blob, &offs);
    gr_trie_t trie;
    CHECK(gr_trie_init(&trie, blob, offs, n_tokens) == RT_OK);
    match_text(&m, text, tlen, &trie);
    gr_trie_deinit(&trie);
    gr_matcher_deinit(&m);
    rtm_gbnf_destroy(g);
    return 0;
}
