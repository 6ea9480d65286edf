/* SPDX-License-Identifier: MIT */
/* tokenize_spm.c: the SentencePiece-style tokenizer of llama vocabularies
 * (llama.cpp's llm_tokenizer_spm). Spaces become U+2581 "\xe2\x96\x81" (with
 * one put in front when asked), the text is split into UTF-8 characters,
 * and adjacent pieces merge while their concatenation is a token, the
 * highest-scoring first. A final piece that is not a token (a character
 * the vocabulary lacks) falls back to its bytes' <0xXX> tokens. */
#include "vocab_impl.h"

#include <stdlib.h>
#include <string.h>

static const char SPM_SPACE[] = "\xe2\x96\x81";

/* text with every ' ' replaced by U+2581, after one more when prefix. */
static char *escape_spaces(const char *text, size_t len, bool prefix, size_t *out_len) {
    size_t n = prefix ? 3 : 0;
    for (size_t i = 0; i < len; i++) n += text[i] == ' ' ? 3 : 1;
    char *s = malloc(n > 0 ? n : 1), *p = s;
    if (s == NULL) return NULL;
    if (prefix) {
        memcpy(p, SPM_SPACE, 3);
        p += 3;
    }
    for (size_t i = 0; i < len; i++) {
        if (text[i] != ' ') {
            *p++ = text[i];
            continue;
        }
        memcpy(p, SPM_SPACE, 3);
        p += 3;
    }
    *out_len = n;
    return s;
}

static bool spm_pair_key(const void *user, const char *text, size_t n_left, size_t n_right,
                         double *out_key) {
    const rtm_vocab_t *v = user;
    const int32_t id = rtm_strmap_get(&v->token_map, text, n_left + n_right);
    if (id < 0) return false;
    *out_key = v->scores[id];
    return true;
}

/* A final piece: its token, else its bytes. */
static void spm_emit(const rtm_vocab_t *v, const rtm_sym_t *s, rtm_tok_out_t *out) {
    const int32_t id = rtm_strmap_get(&v->token_map, s->text, s->n);
    if (id >= 0) {
        rtm_tok_push(out, id);
        return;
    }
    for (uint32_t i = 0; i < s->n; i++) {
        const rtm_token_t b = v->byte_token[(unsigned char)s->text[i]];
        if (b != RTM_TOKEN_NULL) rtm_tok_push(out, b);
        else if (v->unk != RTM_TOKEN_NULL) rtm_tok_push(out, v->unk);
    }
}

rt_status_t rtm_tokenize_spm(const rtm_vocab_t *v, const char *text, size_t len,
                             bool space_prefix, rtm_tok_out_t *out) {
    size_t n;
    char *s = escape_spaces(text, len, space_prefix, &n);
    if (s == NULL) return rtm_error(RT_ERR_OUT_OF_MEMORY, "rtm_tokenize_spm: no memory");
    rtm_merge_ws_t ws = {0};
    rt_status_t st = n > 0 ? rtm_merge_ws_init(&ws, n) : RT_OK;
    if (st == RT_OK && n > 0) {
        rtm_merge(&ws, s, n, spm_pair_key, v);
        for (int32_t i = 0; i != -1; i = ws.syms[i].next) spm_emit(v, &ws.syms[i], out);
    }
    rtm_merge_ws_deinit(&ws);
    free(s);
    return st;
}
