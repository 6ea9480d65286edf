/* SPDX-License-Identifier: MIT */
/* utf8_text.h: generated text as whole UTF-8 characters. A model's tokens
 * may split a character (byte-fallback tokens: an emoji is often four
 * tokens of one byte each), and a JSON encoder refuses a string that ends
 * inside one, so the text is written up to the last complete character
 * and the rest held for the next piece; bytes that can never be part of a
 * character (a stray continuation byte, an overlong form, a surrogate)
 * become U+FFFD, as a terminal or a browser would show them.
 *
 *     size_t n = rt_utf8_complete(text, len);   // the rest may yet complete
 *     rt_utf8_write(text, n, write, user);     // invalid bytes as U+FFFD
 */
#ifndef RT_TOOLS_UTF8_TEXT_H
#define RT_TOOLS_UTF8_TEXT_H

#include "../abi/rt.h"

#include <stddef.h>

/* The length of the longest prefix of s[0..len) that does not end inside
 * a character that more bytes could still complete. */
size_t rt_utf8_complete(const char *s, size_t len);
/* Writes s[0..len) with every byte that is not part of a valid character
 * replaced by U+FFFD (a character cut off at len is invalid too). */
void rt_utf8_write(const char *s, size_t len, rt_write_fn write, void *user);
/* The NUL-terminated s as valid UTF-8 (rt_utf8_write's U+FFFD) in dst,
 * size bytes with the NUL, cut before a character that does not fit: a
 * message that quotes a client's bytes (a JSON parser's "near '...'"
 * may cut a character) that a JSON string can carry. */
void rt_utf8_copy_valid(char *dst, size_t size, const char *s);

#endif /* RT_TOOLS_UTF8_TEXT_H */
