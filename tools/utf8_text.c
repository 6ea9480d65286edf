/* SPDX-License-Identifier: MIT */
/* utf8_text.c: see utf8_text.h. The rules are RFC 3629's table: after a
 * lead byte the second byte's range depends on the lead (no overlong
 * forms, no surrogates, nothing past U+10FFFF), the others are 80..BF. */
#include "utf8_text.h"

#include <stdint.h>
#include <string.h>

/* The bytes of the character that lead byte b starts (0: b cannot lead). */
static int seq_len(uint8_t b) {
    if (b < 0x80) return 1;
    if (b >= 0xC2 && b <= 0xDF) return 2;
    if (b >= 0xE0 && b <= 0xEF) return 3;
    if (b >= 0xF0 && b <= 0xF4) return 4;
    return 0;
}

/* Whether c may follow lead byte b at position i (1..3) of its character. */
static int may_follow(uint8_t b, int i, uint8_t c) {
    uint8_t lo = 0x80, hi = 0xBF;
    if (i == 1) {
        if (b == 0xE0) lo = 0xA0;
        else if (b == 0xED) hi = 0x9F;
        else if (b == 0xF0) lo = 0x90;
        else if (b == 0xF4) hi = 0x8F;
    }
    return c >= lo && c <= hi;
}

/* How many bytes from s[0] (n >= 1 available) form a valid prefix of one
 * character: the character's length when it is whole, less when s ends
 * first, 0 when s[0] is not the start of a valid character. */
static int valid_prefix(const uint8_t *s, size_t n, int *out_want) {
    const int want = seq_len(s[0]);
    *out_want = want;
    if (want == 0) return 0;
    int i = 1;
    for (; i < want && (size_t)i < n; i++)
        if (!may_follow(s[0], i, s[i])) return 0;
    return i;
}

size_t rt_utf8_complete(const char *text, size_t len) {
    const uint8_t *s = (const uint8_t *)text;
    /* only a character begun in the last 3 bytes can still be incomplete */
    for (size_t back = 1; back <= 3 && back <= len; back++) {
        const size_t at = len - back;
        if (seq_len(s[at]) == 0) continue; /* a continuation byte, or invalid */
        int want;
        const int have = valid_prefix(s + at, back, &want);
        return have == (int)back && want > (int)back ? at : len;
    }
    return len;
}

void rt_utf8_write(const char *text, size_t len, rt_write_fn write, void *user) {
    static const char replacement[] = "\xEF\xBF\xBD";
    const uint8_t *s = (const uint8_t *)text;
    size_t run = 0; /* valid bytes not yet written, ending at i */
    for (size_t i = 0; i < len;) {
        int want;
        const int have = valid_prefix(s + i, len - i, &want);
        if (have > 0 && have == want) {
            run += (size_t)have, i += (size_t)have;
            continue;
        }
        if (run) write(text + i - run, run, user);
        run = 0;
        write(replacement, 3, user);
        i += have > 0 ? (size_t)have : 1; /* a cut-off character is one U+FFFD */
    }
    if (run) write(text + len - run, run, user);
}

typedef struct fixed_buf {
    char *p;
    size_t len, cap;          /* cap: bytes for text, the NUL not counted */
} fixed_buf_t;

static void fixed_write(const char *s, size_t n, void *user) {
    fixed_buf_t *b = user;
    const size_t room = b->cap - b->len;
    memcpy(b->p + b->len, s, n < room ? n : room);
    b->len += n < room ? n : room;
}

void rt_utf8_copy_valid(char *dst, size_t size, const char *s) {
    if (size == 0) return;
    fixed_buf_t b = {dst, 0, size - 1};
    rt_utf8_write(s, strlen(s), fixed_write, &b);
    b.len = rt_utf8_complete(dst, b.len); /* a character the end cut */
    dst[b.len] = 0;
}
