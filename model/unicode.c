/* SPDX-License-Identifier: MIT */
/* unicode.c: UTF-8 and code point classes for the tokenizers (see
 * unicode.h). The class table is generated (unicode_data.c); whitespace
 * is the short list llama.cpp uses, kept here by hand. */
#include "unicode.h"

size_t rtm_utf8_len(unsigned char lead) {
    static const uint8_t len_by_high_nibble[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return len_by_high_nibble[lead >> 4];
}

/* The smallest code point each length may encode (shorter is overlong). */
static const uint32_t utf8_min[5] = {0, 0, 0x80, 0x800, 0x10000};

uint32_t rtm_utf8_decode(const char *s, size_t n, size_t *out_adv) {
    const unsigned char *u = (const unsigned char *)s;
    const size_t len = u[0] < 0x80 ? 1 : u[0] < 0xC0 ? 0 : u[0] < 0xE0 ? 2 : u[0] < 0xF0 ? 3
                     : u[0] < 0xF8 ? 4 : 0;
    *out_adv = 1;
    if (len == 1) return u[0];
    if (len == 0 || len > n) return RTM_CPT_REPLACEMENT;
    uint32_t cpt = u[0] & (0x7Fu >> len);
    for (size_t i = 1; i < len; i++) {
        if ((u[i] & 0xC0) != 0x80) return RTM_CPT_REPLACEMENT;
        cpt = cpt << 6 | (u[i] & 0x3Fu);
    }
    if (cpt < utf8_min[len] || cpt > 0x10FFFF || (cpt >= 0xD800 && cpt <= 0xDFFF))
        return RTM_CPT_REPLACEMENT;
    *out_adv = len;
    return cpt;
}

size_t rtm_utf8_encode(uint32_t cpt, char out[4]) {
    if (cpt < 0x80) {
        out[0] = (char)cpt;
        return 1;
    }
    if (cpt < 0x800) {
        out[0] = (char)(0xC0 | cpt >> 6);
        out[1] = (char)(0x80 | (cpt & 0x3F));
        return 2;
    }
    if (cpt < 0x10000) {
        out[0] = (char)(0xE0 | cpt >> 12);
        out[1] = (char)(0x80 | (cpt >> 6 & 0x3F));
        out[2] = (char)(0x80 | (cpt & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | cpt >> 18);
    out[1] = (char)(0x80 | (cpt >> 12 & 0x3F));
    out[2] = (char)(0x80 | (cpt >> 6 & 0x3F));
    out[3] = (char)(0x80 | (cpt & 0x3F));
    return 4;
}

int rtm_cpt_class(uint32_t cpt) {
    if (cpt > 0x10FFFF) return RTM_CPT_OTHER;
    /* The last run that starts at or before cpt. */
    int32_t lo = 0, hi = rtm_unicode_n_runs - 1;
    while (lo < hi) {
        const int32_t mid = lo + (hi - lo + 1) / 2;
        if (rtm_unicode_runs[mid] >> 3 <= cpt)
            lo = mid;
        else
            hi = mid - 1;
    }
    return (int)(rtm_unicode_runs[lo] & 7);
}

bool rtm_cpt_is_whitespace(uint32_t cpt) {
    return (cpt >= 0x09 && cpt <= 0x0D) || cpt == 0x20 || cpt == 0x85 || cpt == 0xA0 ||
           cpt == 0x1680 || (cpt >= 0x2000 && cpt <= 0x200A) || cpt == 0x2028 ||
           cpt == 0x2029 || cpt == 0x202F || cpt == 0x205F || cpt == 0x3000;
}

/* The index of the entry for cpt in a table sorted by its first column
 * (stride words a row), or -1. */
static int32_t find_row(const uint32_t *rows, int32_t n, size_t stride, uint32_t cpt) {
    int32_t lo = 0, hi = n - 1;
    while (lo <= hi) {
        const int32_t mid = lo + (hi - lo) / 2;
        const uint32_t key = rows[(size_t)mid * stride];
        if (key == cpt) return mid;
        if (key < cpt) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

uint32_t rtm_cpt_lower(uint32_t cpt) {
    if (cpt < 128) return cpt >= 'A' && cpt <= 'Z' ? cpt + 32 : cpt;
    const int32_t i = find_row(&rtm_unicode_lower[0][0], rtm_unicode_n_lower, 2, cpt);
    return i >= 0 ? rtm_unicode_lower[i][1] : cpt;
}

uint32_t rtm_cpt_nfd(uint32_t cpt) {
    const int32_t i = cpt < 0xC0 ? -1 : find_row(&rtm_unicode_nfd[0][0], rtm_unicode_n_nfd, 2, cpt);
    return i >= 0 ? rtm_unicode_nfd[i][1] : cpt;
}
