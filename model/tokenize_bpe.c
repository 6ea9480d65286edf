/* SPDX-License-Identifier: MIT */
/* tokenize_bpe.c: GPT-2's byte-level BPE (llama.cpp's llm_tokenizer_bpe
 * for the "gpt2" vocabulary). The text is cut into words by the
 * pre-tokenizer the file names (pretok.c); each word's bytes are spelled with GPT-2's
 * printable stand-ins (bytes_to_unicode: a byte that is a visible Latin-1
 * character stands for itself, the others for U+0100 onwards), and
 * adjacent symbols merge by the rank of "left right" in the merge list,
 * lowest rank first. With ignore_merges (Llama 3) a word that is a token
 * as a whole is that token. */
#include "vocab_impl.h"
#include "unicode.h"

#include <stdlib.h>
#include <string.h>

void rtm_bpe_byte_map(uint32_t byte_cpt[256]) {
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; b++) {
        const bool visible = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
        byte_cpt[b] = visible ? b : next++;
    }
}

/* Scratch for one call: code points, word lengths, a spelled word, a key. */
typedef struct bpe_scratch {
    uint32_t *cpts;
    uint32_t *word_len;
    uint32_t *scratch;  /* the pre-tokenizer's second list of lengths */
    char *word;         /* a word in stand-ins: at most 6 bytes per text byte (an
                           invalid byte is U+FFFD, 3 bytes of 2-byte stand-ins) */
    char *key;          /* "left right" */
    rtm_merge_ws_t ws;
} bpe_scratch_t;

typedef struct bpe_key_ctx {
    const rtm_vocab_t *v;
    char *key;
} bpe_key_ctx_t;

static bool bpe_pair_key(const void *user, const char *text, size_t n_left, size_t n_right,
                         double *out_key) {
    const bpe_key_ctx_t *c = user;
    memcpy(c->key, text, n_left);
    c->key[n_left] = ' ';
    memcpy(c->key + n_left + 1, text + n_left, n_right);
    const int32_t rank = rtm_strmap_get(&c->v->merge_map, c->key, n_left + 1 + n_right);
    if (rank < 0) return false;
    *out_key = -(double)rank;
    return true;
}

static void scratch_free(bpe_scratch_t *s) {
    free(s->cpts);
    free(s->word_len);
    free(s->scratch);
    free(s->word);
    free(s->key);
    rtm_merge_ws_deinit(&s->ws);
}

static rt_status_t scratch_alloc(bpe_scratch_t *s, size_t len) {
    memset(s, 0, sizeof *s);
    const size_t n = len > 0 ? len : 1;
    s->cpts = malloc(n * sizeof s->cpts[0]);
    s->word_len = malloc(n * sizeof s->word_len[0]);
    s->scratch = malloc(n * sizeof s->scratch[0]);
    s->word = malloc(6 * n);
    s->key = malloc(6 * n + 1);
    if (s->cpts && s->word_len && s->scratch && s->word && s->key)
        return rtm_merge_ws_init(&s->ws, 6 * n);
    scratch_free(s);
    return rtm_error(RT_ERR_OUT_OF_MEMORY, "rtm_tokenize_bpe: no memory for %zu bytes", len);
}

static size_t decode_all(const char *text, size_t len, uint32_t *cpts) {
    size_t n = 0;
    for (size_t off = 0, adv; off < len; off += adv) cpts[n++] = rtm_utf8_decode(text + off, len - off, &adv);
    return n;
}

/* The word's code points, each UTF-8 byte written as its stand-in. */
static size_t spell_word(const rtm_vocab_t *v, const uint32_t *cpts, size_t n, char *out) {
    size_t k = 0;
    char u[4];
    for (size_t i = 0; i < n; i++) {
        const size_t nb = rtm_utf8_encode(cpts[i], u);
        for (size_t j = 0; j < nb; j++) k += rtm_utf8_encode(v->byte_cpt[(unsigned char)u[j]], out + k);
    }
    return k;
}

/* A final symbol: its token, else whatever of its single bytes is one. */
static void bpe_emit(const rtm_vocab_t *v, const rtm_sym_t *s, rtm_tok_out_t *out) {
    const int32_t id = rtm_strmap_get(&v->token_map, s->text, s->n);
    if (id >= 0) {
        rtm_tok_push(out, id);
        return;
    }
    for (uint32_t i = 0; i < s->n; i++) {
        const int32_t b = rtm_strmap_get(&v->token_map, s->text + i, 1);
        if (b >= 0) rtm_tok_push(out, b);
    }
}

rt_status_t rtm_tokenize_bpe(const rtm_vocab_t *v, const char *text, size_t len,
                             rtm_tok_out_t *out) {
    bpe_scratch_t s;
    rt_status_t st = scratch_alloc(&s, len);
    if (st != RT_OK) return st;
    const size_t n_cpts = decode_all(text, len, s.cpts);
    const size_t n_words = rtm_pretokenize(v->pretok, s.cpts, n_cpts, s.word_len, s.scratch);
    bpe_key_ctx_t kc = {v, s.key};
    for (size_t w = 0, at = 0; w < n_words; at += s.word_len[w++]) {
        const size_t nb = spell_word(v, s.cpts + at, s.word_len[w], s.word);
        const int32_t whole = v->pretok->ignore_merges ? rtm_strmap_get(&v->token_map, s.word, nb) : -1;
        if (whole >= 0) {
            rtm_tok_push(out, whole);
            continue;
        }
        rtm_merge(&s.ws, s.word, nb, bpe_pair_key, &kc);
        for (int32_t i = 0; i != -1; i = s.ws.syms[i].next) bpe_emit(v, &s.ws.syms[i], out);
    }
    scratch_free(&s);
    return RT_OK;
}
