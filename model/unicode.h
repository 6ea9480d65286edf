/* SPDX-License-Identifier: MIT */
/* unicode.h: the little Unicode the tokenizers need. UTF-8 decoding that
 * never fails (an invalid byte reads as U+FFFD, as llama.cpp does), UTF-8
 * encoding, and the classes the pre-tokenizers ask about: letter (L*),
 * number (N*), punctuation (P*), mark (M*), symbol (S*), whitespace (the
 * set llama.cpp's unicode.cpp uses), control (C* but unassigned); and
 * for WordPiece, lowercase and canonical decomposition (NFD). */
#ifndef RTM_UNICODE_H
#define RTM_UNICODE_H

#include "internal.h"

#define RTM_CPT_REPLACEMENT 0xFFFDu
#define RTM_CPT_END 0xFFFFFFFFu /* "past the end of the text" for look-ahead */

enum {
    RTM_CPT_OTHER = 0,
    RTM_CPT_LETTER = 1,
    RTM_CPT_NUMBER = 2,
    RTM_CPT_PUNCT = 3,
    RTM_CPT_MARK = 4,
    RTM_CPT_SYMBOL = 5,
    RTM_CPT_CONTROL = 6
};

/* Bytes of the UTF-8 sequence a lead byte announces (1 for a stray
 * continuation byte), without checking the rest: SentencePiece's split. */
RTM_INTERNAL size_t rtm_utf8_len(unsigned char lead);
/* Decodes the code point at s[0..n) and stores its length in *out_adv
 * (>= 1). Malformed, overlong or surrogate sequences give U+FFFD over one
 * byte. */
RTM_INTERNAL uint32_t rtm_utf8_decode(const char *s, size_t n, size_t *out_adv);
/* Writes cpt's UTF-8 bytes (1..4) into out; returns the count. */
RTM_INTERNAL size_t rtm_utf8_encode(uint32_t cpt, char out[4]);

/* RTM_CPT_LETTER, _NUMBER, _PUNCT, _MARK, _SYMBOL or _OTHER (also for
 * RTM_CPT_END). */
RTM_INTERNAL int rtm_cpt_class(uint32_t cpt);
RTM_INTERNAL bool rtm_cpt_is_whitespace(uint32_t cpt);

/* The code point's one-code-point lowercase (itself when it has none). */
RTM_INTERNAL uint32_t rtm_cpt_lower(uint32_t cpt);
/* The first code point of cpt's canonical decomposition (NFD), cpt when
 * it has none: llama.cpp's WordPiece normalisation, accents dropped. */
RTM_INTERNAL uint32_t rtm_cpt_nfd(uint32_t cpt);

/* The generated tables (unicode_data.c). */
RTM_INTERNAL extern const uint32_t rtm_unicode_runs[];
RTM_INTERNAL extern const int32_t rtm_unicode_n_runs;
RTM_INTERNAL extern const uint32_t rtm_unicode_lower[][2];
RTM_INTERNAL extern const int32_t rtm_unicode_n_lower;
RTM_INTERNAL extern const uint32_t rtm_unicode_nfd[][2];
RTM_INTERNAL extern const int32_t rtm_unicode_n_nfd;

#endif /* RTM_UNICODE_H */
