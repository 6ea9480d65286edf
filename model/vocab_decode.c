/* SPDX-License-Identifier: MIT */
/* vocab_decode.c: from tokens back to bytes (llama.cpp's token_to_piece and
 * detokenize). SPM pieces turn U+2581 back into spaces and byte tokens
 * into their byte; BPE pieces map each GPT-2 stand-in character back to
 * its byte. Control and unknown tokens show their text only when asked. */
#include "vocab_impl.h"
#include "unicode.h"

#include <string.h>

/* A sink that counts every byte and stores what fits. */
typedef struct sink {
    char *buf;
    size_t size, n;
} sink_t;

static void put(sink_t *s, const char *p, size_t n) {
    for (size_t i = 0; i < n; i++, s->n++)
        if (s->n < s->size) s->buf[s->n] = p[i];
}

/* lstrip drops a leading U+2581: the space tokenize put before the text. */
static void put_spm_normal(sink_t *s, const char *text, size_t len, bool lstrip) {
    const bool skip = lstrip && len >= 3 && memcmp(text, "\xe2\x96\x81", 3) == 0;
    for (size_t i = skip ? 3 : 0; i < len;) {
        if (len - i >= 3 && memcmp(text + i, "\xe2\x96\x81", 3) == 0) {
            put(s, " ", 1);
            i += 3;
        } else {
            put(s, text + i, 1);
            i++;
        }
    }
}

/* The byte a stand-in code point stands for, or -1. */
static int bpe_byte_of(const rtm_vocab_t *v, uint32_t cpt) {
    if (cpt < 256 && v->byte_cpt[cpt] == cpt) return (int)cpt;
    for (int b = 0; b < 256; b++)
        if (v->byte_cpt[b] == cpt) return b;
    return -1;
}

static void put_bpe_normal(const rtm_vocab_t *v, sink_t *s, const char *text, size_t len) {
    for (size_t i = 0, adv; i < len; i += adv) {
        const int b = bpe_byte_of(v, rtm_utf8_decode(text + i, len - i, &adv));
        if (b >= 0) {
            const char c = (char)b;
            put(s, &c, 1);
        } else {
            put(s, text + i, adv); /* not a stand-in: the character as it is */
        }
    }
}

static int byte_of_token(const rtm_vocab_t *v, rtm_token_t t) {
    for (int b = 0; b < 256; b++)
        if (v->byte_token[b] == t) return b;
    return -1;
}

static void put_piece(const rtm_vocab_t *v, rtm_token_t t, bool special, bool lstrip, sink_t *s) {
    const char *text = rtm_vocab_text(v, t);
    const size_t len = v->lens[t];
    switch (v->types[t]) {
    case RTM_TOKEN_TYPE_CONTROL:
    case RTM_TOKEN_TYPE_UNKNOWN:
        if (special) put(s, text, len);
        return;
    case RTM_TOKEN_TYPE_USER_DEFINED:
        put(s, text, len);
        return;
    case RTM_TOKEN_TYPE_BYTE: {
        const int b = byte_of_token(v, t);
        const char c = (char)b;
        if (b >= 0) put(s, &c, 1);
        return;
    }
    case RTM_TOKEN_TYPE_UNUSED:
        return;
    default:
        if (v->type != RTM_VOCAB_BPE) put_spm_normal(s, text, len, lstrip); /* SPM, WPM: U+2581 */
        else put_bpe_normal(v, s, text, len);
    }
}

static rt_status_t sink_status(const sink_t *s, size_t size, const char *fn) {
    if (s->n <= size) return RT_OK;
    return rtm_error(RT_ERR_DOES_NOT_FIT, "%s: %zu bytes do not fit in %zu", fn, s->n, size);
}

rt_status_t rtm_vocab_token_to_piece(const rtm_vocab_t *v, rtm_token_t t, bool special, char *buf,
                                     size_t size, size_t *out_len) {
    if (out_len) *out_len = 0;
    if (v == NULL || out_len == NULL || (buf == NULL && size > 0))
        return rtm_error(RT_ERR_INVALID_ARGUMENT, "rtm_vocab_token_to_piece: NULL argument");
    if (t < 0 || t >= v->n_tokens)
        return rtm_error(RT_ERR_INVALID_ARGUMENT, "rtm_vocab_token_to_piece: token %d is not in "
                         "0..%d", t, v->n_tokens - 1);
    sink_t s = {buf, size, 0};
    put_piece(v, t, special, false, &s);
    *out_len = s.n;
    return sink_status(&s, size, "rtm_vocab_token_to_piece");
}

rt_status_t rtm_vocab_detokenize(const rtm_vocab_t *v, const rtm_token_t *tokens, int32_t n,
                                 bool special, char *buf, size_t size, size_t *out_len) {
    if (out_len) *out_len = 0;
    if (v == NULL || out_len == NULL || (tokens == NULL && n > 0) || buf == NULL || size == 0)
        return rtm_error(RT_ERR_INVALID_ARGUMENT, "rtm_vocab_detokenize: NULL argument");
    sink_t s = {buf, size - 1, 0};
    for (int32_t i = 0; i < n; i++) {
        if (tokens[i] < 0 || tokens[i] >= v->n_tokens)
            return rtm_error(RT_ERR_INVALID_ARGUMENT, "rtm_vocab_detokenize: token %d (at %d) is "
                             "not in 0..%d", tokens[i], i, v->n_tokens - 1);
        /* The first token of the text proper: right after a leading BOS. */
        const bool first = i == 0 || (i == 1 && tokens[0] == v->bos);
        put_piece(v, tokens[i], special, first && v->add_space_prefix, &s);
    }
    *out_len = s.n;
    buf[s.n < s.size ? s.n : s.size] = 0;
    return sink_status(&s, size - 1, "rtm_vocab_detokenize");
}
