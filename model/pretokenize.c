/* SPDX-License-Identifier: MIT */
/* pretokenize.c: GPT-2's pre-tokenizer, the regex
 *
 *     's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 *
 * written out by hand over code points, alternative by alternative, as
 * llama.cpp's unicode_regex_split_custom_gpt2 does (so the two agree on
 * every input, including the look-ahead of \s+(?!\S), which leaves the last
 * space of a run to start the next word). Letters and numbers are Unicode's
 * L* and N* categories (unicode.c). */
#include "vocab_impl.h"
#include "unicode.h"

typedef struct pretok {
    const uint32_t *cpts;
    size_t n;
    size_t pos;        /* next code point to read */
    size_t prev_end;   /* end of the last word emitted */
    uint32_t *word_len;
    size_t n_words;
} pretok_t;

static uint32_t cpt_at(const pretok_t *p, size_t i) { return i < p->n ? p->cpts[i] : RTM_CPT_END; }

static int class_at(const pretok_t *p, size_t i) { return rtm_cpt_class(cpt_at(p, i)); }

static bool space_at(const pretok_t *p, size_t i) {
    return i < p->n && rtm_cpt_is_whitespace(p->cpts[i]);
}

/* Neither whitespace, letter nor number, and inside the text. */
static bool punct_at(const pretok_t *p, size_t i) {
    const int c = class_at(p, i);
    return i < p->n && !space_at(p, i) && c != RTM_CPT_LETTER && c != RTM_CPT_NUMBER;
}

static void emit(pretok_t *p, size_t end) {
    if (end > p->prev_end) p->word_len[p->n_words++] = (uint32_t)(end - p->prev_end);
    p->prev_end = end;
    p->pos = end;
}

static uint32_t lower_ascii(uint32_t c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

size_t rtm_pretok_contraction(const uint32_t *cpts, size_t n, size_t pos, bool any_case) {
    if (pos >= n || cpts[pos] != '\'') return 0;
    uint32_t a = pos + 1 < n ? cpts[pos + 1] : RTM_CPT_END, b = pos + 2 < n ? cpts[pos + 2] : RTM_CPT_END;
    if (any_case) {
        a = lower_ascii(a);
        b = lower_ascii(b);
    }
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    return 0;
}

/* 's|'t|'re|'ve|'m|'ll|'d */
static bool match_contraction(pretok_t *p) {
    const size_t k = rtm_pretok_contraction(p->cpts, p->n, p->pos, false);
    if (k > 0) emit(p, p->pos + k);
    return k > 0;
}

/* ' ?\p{L}+', ' ?\p{N}+' and ' ?[^\s\p{L}\p{N}]+': an optional space, then
 * a run of one class. */
static bool match_run(pretok_t *p) {
    const size_t start = p->pos + (cpt_at(p, p->pos) == ' ' ? 1 : 0);
    size_t i = start;
    if (class_at(p, start) == RTM_CPT_LETTER) {
        while (class_at(p, i) == RTM_CPT_LETTER) i++;
    } else if (class_at(p, start) == RTM_CPT_NUMBER) {
        while (class_at(p, i) == RTM_CPT_NUMBER) i++;
    } else {
        while (punct_at(p, i)) i++;
    }
    if (i == start) return false;
    emit(p, i);
    return true;
}

/* '\s+(?!\S)' then '\s+': a run of whitespace followed by more text gives
 * back its last character to the next word. */
static bool match_spaces(pretok_t *p) {
    size_t n = 0;
    while (space_at(p, p->pos + n)) n++;
    if (n == 0) return false;
    if (n > 1 && p->pos + n < p->n) n--;
    emit(p, p->pos + n);
    return true;
}

size_t rtm_pretokenize_gpt2(const uint32_t *cpts, size_t n, uint32_t *word_len) {
    pretok_t p = {cpts, n, 0, 0, word_len, 0};
    while (p.pos < n) {
        if (match_contraction(&p) || match_run(&p) || match_spaces(&p)) continue;
        emit(&p, p.pos + 1);
    }
    return p.n_words;
}
