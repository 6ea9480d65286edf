/* SPDX-License-Identifier: MIT */
/* stop_text.h: generated text checked against stop strings (rt-run -r, the
 * chat's end-of-turn texts, the server's "stop") and written as whole
 * UTF-8 characters (utf8_text.h). Pieces go in as the model makes them;
 * what comes out is the text that can no longer turn into a stop string,
 * up to its last complete character, so neither a stop split over several
 * tokens nor a character split over several is ever shown in part:
 *
 *     rt_stop_text_t st;
 *     if (!rt_stop_text_init(&st, stops, n_stops)) ...out of memory
 *     while (!rt_stop_text_feed(&st, piece, len, write, user)) ...next piece
 *     rt_stop_text_finish(&st, write, user);   // what was held back, at the end
 *     rt_stop_text_deinit(&st);
 *
 * The stop text owns copies of its stop strings, so a struct holding one
 * may be copied by value. */
#ifndef RT_TOOLS_STOP_TEXT_H
#define RT_TOOLS_STOP_TEXT_H

#include "../abi/rt.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* held[0..n_held) is text not yet written: a suffix that may start a stop,
 * or the first bytes of a character. */
typedef struct rt_stop_text {
    char **stops;              /* n_stops non-empty texts, owned */
    int32_t n_stops;
    char *held;
    size_t n_held, cap;
    bool failed;               /* out of memory: feeding writes everything through */
} rt_stop_text_t;

/* Copies the non-empty stops[0..n_stops); false when out of memory (st is
 * then a stop text without stops, still to be deinit'ed). */
bool rt_stop_text_init(rt_stop_text_t *st, const char *const *stops, int32_t n_stops);
/* Adds len bytes; writes what is safe. True when a stop string is now
 * complete: the text before it has been written, the stop and what follows
 * are dropped, and nothing more should be fed. */
bool rt_stop_text_feed(rt_stop_text_t *st, const char *piece, size_t len, rt_write_fn write,
                       void *user);
/* Writes what was held back (the text ended without a stop); a character
 * left incomplete is written as U+FFFD. */
void rt_stop_text_finish(rt_stop_text_t *st, rt_write_fn write, void *user);
void rt_stop_text_deinit(rt_stop_text_t *st);

#endif /* RT_TOOLS_STOP_TEXT_H */
