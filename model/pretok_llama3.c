/* SPDX-License-Identifier: MIT */
/* pretok_llama3.c: the pre-tokenizer of Llama 3 and its relatives, the
 * regex
 *
 *     (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
 *      ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 *
 * written out over code points alternative by alternative, as llama.cpp's
 * custom splitter does (so the two agree on every input). Qwen 2 takes
 * numbers one digit at a time (\p{N}); Qwen 3.5 also counts marks (\p{M})
 * as letters: [\p{L}\p{M}]+ and [^\s\p{L}\p{M}\p{N}]+. */
#include "vocab_impl.h"
#include "unicode.h"

typedef struct l3 {
    const uint32_t *cpts;
    size_t n, pos, prev_end;
    uint32_t *word_len;
    size_t n_words;
    size_t max_digits;  /* numbers are cut every max_digits */
    bool marks;         /* marks are letters */
} l3_t;

static uint32_t cpt_at(const l3_t *p, size_t i) { return i < p->n ? p->cpts[i] : RTM_CPT_END; }
static int class_at(const l3_t *p, size_t i) { return rtm_cpt_class(cpt_at(p, i)); }
static bool space_at(const l3_t *p, size_t i) { return i < p->n && rtm_cpt_is_whitespace(p->cpts[i]); }
static bool number_at(const l3_t *p, size_t i) { return class_at(p, i) == RTM_CPT_NUMBER; }
static bool crlf(uint32_t c) { return c == '\r' || c == '\n'; }

static bool letter_at(const l3_t *p, size_t i) {
    const int c = class_at(p, i);
    return c == RTM_CPT_LETTER || (p->marks && c == RTM_CPT_MARK);
}

/* In the text and neither whitespace, a letter nor a number. */
static bool other_at(const l3_t *p, size_t i) {
    return i < p->n && !space_at(p, i) && !letter_at(p, i) && !number_at(p, i);
}

static void emit(l3_t *p, size_t end) {
    if (end > p->prev_end) p->word_len[p->n_words++] = (uint32_t)(end - p->prev_end);
    p->prev_end = end;
    p->pos = end;
}

/* (?i:'s|'t|'re|'ve|'m|'ll|'d) */
static bool match_contraction(l3_t *p) {
    const size_t k = rtm_pretok_contraction(p->cpts, p->n, p->pos, true);
    if (k > 0) emit(p, p->pos + k);
    return k > 0;
}

/* [^\r\n\p{L}\p{N}]?\p{L}+: one character of anything else may lead. */
static bool match_letters(l3_t *p) {
    const uint32_t c = cpt_at(p, p->pos);
    if (crlf(c) || number_at(p, p->pos) || !(letter_at(p, p->pos) || letter_at(p, p->pos + 1)))
        return false;
    size_t i = p->pos + 1;
    while (letter_at(p, i)) i++;
    emit(p, i);
    return true;
}

/* \p{N}{1,max_digits}, repeated over a run of numbers. */
static bool match_numbers(l3_t *p) {
    if (!number_at(p, p->pos)) return false;
    while (number_at(p, p->pos)) {
        size_t i = p->pos;
        while (number_at(p, i) && i - p->pos < p->max_digits) i++;
        emit(p, i);
    }
    return true;
}

/* ' ?[^\s\p{L}\p{N}]+[\r\n]*' */
static bool match_other(l3_t *p) {
    const size_t start = p->pos + (cpt_at(p, p->pos) == ' ' ? 1 : 0);
    if (!other_at(p, start)) return false;
    size_t i = start;
    while (other_at(p, i)) i++;
    while (crlf(cpt_at(p, i))) i++;
    emit(p, i);
    return true;
}

/* '\s*[\r\n]+', '\s+(?!\S)', '\s+': a run of whitespace up to its last
 * line break; else, followed by more text, all but its last character. */
static bool match_spaces(l3_t *p) {
    size_t n = 0, last_crlf = 0;
    while (space_at(p, p->pos + n)) {
        if (crlf(p->cpts[p->pos + n])) last_crlf = p->pos + n + 1;
        n++;
    }
    if (n == 0) return false;
    if (last_crlf > 0) emit(p, last_crlf);
    else if (n > 1 && p->pos + n < p->n) emit(p, p->pos + n - 1);
    else emit(p, p->pos + n);
    return true;
}

static size_t split(const uint32_t *cpts, size_t n, uint32_t *word_len, size_t max_digits, bool marks) {
    l3_t p = {cpts, n, 0, 0, word_len, 0, max_digits, marks};
    while (p.pos < n) {
        if (match_contraction(&p) || match_letters(&p) || match_numbers(&p) || match_other(&p) ||
            match_spaces(&p))
            continue;
        emit(&p, p.pos + 1);
    }
    return p.n_words;
}

size_t rtm_pretokenize_llama3(const uint32_t *cpts, size_t n, uint32_t *word_len) {
    return split(cpts, n, word_len, 3, false);
}

size_t rtm_pretokenize_qwen2(const uint32_t *cpts, size_t n, uint32_t *word_len) {
    return split(cpts, n, word_len, 1, false);
}

size_t rtm_pretokenize_qwen35(const uint32_t *cpts, size_t n, uint32_t *word_len) {
    return split(cpts, n, word_len, 1, true);
}
