/* SPDX-License-Identifier: MIT */
/* stop_text.h: generated text checked against stop strings (rt-run -r, the
 * chat's end-of-turn texts, the server's "stop"). Pieces go in as the model
 * makes them; what comes out is the text that can no longer turn into a
 * stop string, so a stop split over several tokens is never shown in part:
 *
 *     rt_stop_text_t st;  rt_stop_text_init(&st, stops, n_stops);
 *     while (!rt_stop_text_feed(&st, piece, len, write, user)) ...next piece
 *     rt_stop_text_finish(&st, write, user);   // what was held back, at the end
 *     rt_stop_text_deinit(&st);
 */
#ifndef RT_TOOLS_STOP_TEXT_H
#define RT_TOOLS_STOP_TEXT_H

#include "../abi/rt.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* held[0..n_held) is text not yet written: a suffix that may start a stop. */
typedef struct rt_stop_text {
    const char *const *stops;  /* borrowed, non-empty texts */
    int32_t n_stops;
    char *held;
    size_t n_held, cap;
    bool failed;               /* out of memory: feeding writes everything through */
} rt_stop_text_t;

void rt_stop_text_init(rt_stop_text_t *st, const char *const *stops, int32_t n_stops);
/* Adds len bytes; writes what is safe. True when a stop string is now
 * complete: the text before it has been written, the stop and what follows
 * are dropped, and nothing more should be fed. */
bool rt_stop_text_feed(rt_stop_text_t *st, const char *piece, size_t len, rt_write_fn write,
                       void *user);
/* Writes what was held back (the text ended without a stop). */
void rt_stop_text_finish(rt_stop_text_t *st, rt_write_fn write, void *user);
void rt_stop_text_deinit(rt_stop_text_t *st);

#endif /* RT_TOOLS_STOP_TEXT_H */
