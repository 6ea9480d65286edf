/* SPDX-License-Identifier: MIT */
/* tokenize.c: rtm_vocab_tokenize. The text is first cut at the special
 * tokens' texts (llama.cpp's tokenizer_st_partition: each special token in
 * turn, longest first, splits every plain fragment at its occurrences;
 * user-defined tokens always, control and unknown ones only with
 * parse_special), then each plain fragment goes to the vocabulary's
 * tokenizer, with BOS/EOS around when asked. */
#include "vocab_impl.h"

#include <stdlib.h>
#include <string.h>

/* A piece of the text: a special token, or plain bytes [off, off + len). */
typedef struct frag {
    rtm_token_t token; /* RTM_TOKEN_NULL for plain text */
    size_t off, len;
} frag_t;

typedef struct frags {
    frag_t *a, *b;     /* current list and the one being built */
    size_t n, n_b, cap;
} frags_t;

static void frag_add(frags_t *f, rtm_token_t token, size_t off, size_t len) {
    if (token == RTM_TOKEN_NULL && len == 0) return;
    f->b[f->n_b++] = (frag_t){token, off, len};
}

static const char *find_bytes(const char *hay, size_t n, const char *needle, size_t m) {
    return m <= n ? memmem(hay, n, needle, m) : NULL;
}

/* Splits the plain fragments of f at every occurrence of token t. */
static void split_at(const rtm_vocab_t *v, const char *text, frags_t *f, rtm_token_t t) {
    const char *s = rtm_vocab_text(v, t);
    const size_t m = v->lens[t];
    f->n_b = 0;
    for (size_t i = 0; i < f->n; i++) {
        const frag_t fr = f->a[i];
        if (fr.token != RTM_TOKEN_NULL) {
            f->b[f->n_b++] = fr;
            continue;
        }
        size_t pos = fr.off;
        const size_t end = fr.off + fr.len;
        for (const char *hit; (hit = find_bytes(text + pos, end - pos, s, m)) != NULL;) {
            const size_t at = (size_t)(hit - text);
            frag_add(f, RTM_TOKEN_NULL, pos, at - pos);
            frag_add(f, t, at, m);
            pos = at + m;
        }
        frag_add(f, RTM_TOKEN_NULL, pos, end - pos);
    }
    frag_t *tmp = f->a;
    f->a = f->b;
    f->b = tmp;
    f->n = f->n_b;
}

static bool splits_text(const rtm_vocab_t *v, rtm_token_t t, bool parse_special) {
    return parse_special || v->types[t] == RTM_TOKEN_TYPE_USER_DEFINED;
}

static bool any_splits(const rtm_vocab_t *v, bool parse_special) {
    for (int32_t i = 0; i < v->n_special; i++)
        if (splits_text(v, v->special[i], parse_special)) return true;
    return false;
}

/* Each occurrence turns one fragment into at most three: 2 * len + 1
 * fragments at most, room needed only when some token can split. */
static rt_status_t partition(const rtm_vocab_t *v, const char *text, size_t len,
                             bool parse_special, frags_t *f) {
    f->cap = any_splits(v, parse_special) ? 2 * len + 2 : 1;
    f->a = malloc(f->cap * sizeof f->a[0]);
    f->b = malloc(f->cap * sizeof f->b[0]);
    if (f->a == NULL || f->b == NULL)
        return rtm_error(RT_ERR_OUT_OF_MEMORY, "rtm_vocab_tokenize: no memory for %zu bytes", len);
    f->n = 0;
    if (len > 0) f->a[f->n++] = (frag_t){RTM_TOKEN_NULL, 0, len};
    for (int32_t i = 0; i < v->n_special; i++)
        if (splits_text(v, v->special[i], parse_special)) split_at(v, text, f, v->special[i]);
    return RT_OK;
}

static rt_status_t tokenize_frags(const rtm_vocab_t *v, const char *text, const frags_t *f,
                                  rtm_tok_out_t *out) {
    bool prev_special = true; /* SPM: the text's start counts as after a special token */
    rt_status_t st = RT_OK;
    for (size_t i = 0; st == RT_OK && i < f->n; i++) {
        const frag_t fr = f->a[i];
        if (fr.token != RTM_TOKEN_NULL) {
            rtm_tok_push(out, fr.token);
            prev_special = true;
            continue;
        }
        if (v->type == RTM_VOCAB_SPM)
            st = rtm_tokenize_spm(v, text + fr.off, fr.len, v->add_space_prefix && prev_special, out);
        else if (v->type == RTM_VOCAB_WPM)
            st = rtm_tokenize_wpm(v, text + fr.off, fr.len, out);
        else
            st = rtm_tokenize_bpe(v, text + fr.off, fr.len, out);
        prev_special = false;
    }
    return st;
}

rt_status_t rtm_vocab_tokenize(const rtm_vocab_t *v, const char *text, size_t len,
                               bool add_special, bool parse_special, rtm_token_t *tokens,
                               int32_t n_max, int32_t *out_n) {
    if (out_n) *out_n = 0;
    if (v == NULL || (text == NULL && len > 0) || (tokens == NULL && n_max > 0) || out_n == NULL)
        return rtm_error(RT_ERR_INVALID_ARGUMENT, "rtm_vocab_tokenize: NULL argument");
    rtm_tok_out_t out = {tokens, n_max > 0 ? n_max : 0, 0};
    frags_t f = {0};
    rt_status_t st = partition(v, text, len, parse_special, &f);
    if (st == RT_OK && add_special && v->add_bos) rtm_tok_push(&out, v->bos);
    if (st == RT_OK) st = tokenize_frags(v, text, &f, &out);
    if (st == RT_OK && add_special && v->add_eos) rtm_tok_push(&out, v->eos);
    free(f.a);
    free(f.b);
    if (st != RT_OK) return st;
    *out_n = out.n;
    if (out.n > out.n_max)
        return rtm_error(RT_ERR_DOES_NOT_FIT, "rtm_vocab_tokenize: %d tokens do not fit in %d",
                         out.n, n_max);
    return RT_OK;
}
