/* SPDX-License-Identifier: MIT */
/* tokenize_wpm.c: BERT's WordPiece (llama.cpp's llm_tokenizer_wpm for the
 * "bert" vocabulary). The text is normalised code point by code point
 * (the first code point of its canonical decomposition, which drops
 * accents, then lowercase; NUL, U+FFFD and control characters dropped),
 * cut into words at whitespace, with every punctuation character, ASCII
 * symbol and CJK ideograph a word of its own. Each word, with U+2581 in
 * front (the converter wrote word-initial pieces so and continuation
 * pieces bare, where BERT writes "##"), is taken greedily: the longest
 * piece of the vocabulary at each byte; a word with any byte no piece
 * covers is the unknown token as a whole. */
#include "vocab_impl.h"
#include "unicode.h"

#include <stdlib.h>
#include <string.h>

static bool is_cjk(uint32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
           (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
           (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

/* A word of its own: punctuation, an ASCII symbol, an ideograph. */
static bool stands_alone(uint32_t c) {
    const int cls = rtm_cpt_class(c);
    return cls == RTM_CPT_PUNCT || (c < 0x7F && cls == RTM_CPT_SYMBOL) || is_cjk(c);
}

#define WORD_MARK "\xe2\x96\x81" /* U+2581 */

/* The greedy longest match over word[0..n) (it starts with WORD_MARK). */
static void wpm_word(const rtm_vocab_t *v, const char *word, size_t n, size_t max_piece,
                     rtm_tok_out_t *out) {
    const int32_t first = out->n;
    for (size_t i = 0; i < n;) {
        size_t j = i + max_piece < n ? i + max_piece : n;
        int32_t id = -1;
        for (; j > i && (id = rtm_strmap_get(&v->token_map, word + i, j - i)) < 0; j--) {}
        if (id < 0) {
            out->n = first; /* the word is unknown as a whole */
            if (v->unk != RTM_TOKEN_NULL) rtm_tok_push(out, v->unk);
            return;
        }
        rtm_tok_push(out, id);
        i = j;
    }
}

static size_t longest_token(const rtm_vocab_t *v) {
    uint32_t m = 0;
    for (int32_t i = 0; i < v->n_tokens; i++) m = v->lens[i] > m ? v->lens[i] : m;
    return m;
}

/* The word being built, WORD_MARK first; flushed at its end. */
typedef struct wbuf {
    char *s;
    size_t n;
} wbuf_t;

static void flush(const rtm_vocab_t *v, wbuf_t *w, size_t max_piece, rtm_tok_out_t *out) {
    const size_t mark = sizeof WORD_MARK - 1;
    if (w->n > mark) wpm_word(v, w->s, w->n, max_piece, out);
    w->n = mark;
}

rt_status_t rtm_tokenize_wpm(const rtm_vocab_t *v, const char *text, size_t len, rtm_tok_out_t *out) {
    const size_t mark = sizeof WORD_MARK - 1, max_piece = longest_token(v);
    wbuf_t w = {malloc(mark + 4 * len + 1), mark};
    if (w.s == NULL) return rtm_error(RT_ERR_OUT_OF_MEMORY, "rtm_tokenize_wpm: no memory for %zu bytes", len);
    memcpy(w.s, WORD_MARK, mark);
    for (size_t off = 0, adv; off < len; off += adv) {
        const uint32_t c = rtm_cpt_nfd(rtm_utf8_decode(text + off, len - off, &adv));
        if (rtm_cpt_is_whitespace(c)) {
            flush(v, &w, max_piece, out);
            continue;
        }
        if (c == 0 || c == RTM_CPT_REPLACEMENT || rtm_cpt_class(c) == RTM_CPT_CONTROL) continue;
        char u[4];
        const size_t nb = rtm_utf8_encode(rtm_cpt_lower(c), u);
        if (stands_alone(c)) flush(v, &w, max_piece, out);
        memcpy(w.s + w.n, u, nb);
        w.n += nb;
        if (stands_alone(c)) flush(v, &w, max_piece, out);
    }
    flush(v, &w, max_piece, out);
    free(w.s);
    return RT_OK;
}
