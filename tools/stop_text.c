/* SPDX-License-Identifier: MIT */
/* stop_text.c: see stop_text.h. After each piece the held text is searched
 * for every stop; without a match, the longest suffix that is a prefix of
 * some stop stays held, and so do the first bytes of a character the text
 * ends in; the rest is written. */
#include "stop_text.h"
#include "utf8_text.h"

#include <stdlib.h>
#include <string.h>

bool rt_stop_text_init(rt_stop_text_t *st, const char *const *stops, int32_t n_stops) {
    *st = (rt_stop_text_t){0};
    if (n_stops <= 0) return true;
    if ((st->stops = calloc((size_t)n_stops, sizeof st->stops[0])) == NULL) return false;
    for (int32_t i = 0; i < n_stops; i++) {
        if (stops[i] == NULL || stops[i][0] == 0) continue;
        if ((st->stops[st->n_stops] = strdup(stops[i])) == NULL) return false;
        st->n_stops++;
    }
    return true;
}

void rt_stop_text_deinit(rt_stop_text_t *st) {
    for (int32_t i = 0; i < st->n_stops; i++) free(st->stops[i]);
    free(st->stops);
    free(st->held);
    *st = (rt_stop_text_t){0};
}

static bool append(rt_stop_text_t *st, const char *piece, size_t len) {
    if (st->n_held + len > st->cap) {
        const size_t cap = (st->n_held + len) * 2 + 64;
        char *p = realloc(st->held, cap);
        if (p == NULL) return false;
        st->held = p;
        st->cap = cap;
    }
    memcpy(st->held + st->n_held, piece, len);
    st->n_held += len;
    return true;
}

/* Where the first stop starts in the held text, or SIZE_MAX. */
static size_t find_stop(const rt_stop_text_t *st) {
    size_t first = SIZE_MAX;
    for (int32_t i = 0; i < st->n_stops; i++) {
        const size_t n = strlen(st->stops[i]);
        for (size_t at = 0; n && at + n <= st->n_held && at < first; at++)
            if (memcmp(st->held + at, st->stops[i], n) == 0) first = at;
    }
    return first;
}

/* The length of the longest held suffix that begins some stop. */
static size_t partial_stop(const rt_stop_text_t *st) {
    size_t keep = 0;
    for (int32_t i = 0; i < st->n_stops; i++) {
        const size_t n = strlen(st->stops[i]);
        for (size_t k = n - 1 < st->n_held ? n - 1 : st->n_held; k > keep; k--)
            if (memcmp(st->held + st->n_held - k, st->stops[i], k) == 0) {
                keep = k;
                break;
            }
    }
    return keep;
}

static void write_front(rt_stop_text_t *st, size_t n, rt_write_fn write, void *user) {
    if (n) rt_utf8_write(st->held, n, write, user);
    memmove(st->held, st->held + n, st->n_held - n);
    st->n_held -= n;
}

bool rt_stop_text_feed(rt_stop_text_t *st, const char *piece, size_t len, rt_write_fn write,
                       void *user) {
    if (st->failed || !append(st, piece, len)) {
        st->failed = true;
        rt_stop_text_finish(st, write, user);
        if (len) rt_utf8_write(piece, len, write, user);
        return false;
    }
    const size_t at = find_stop(st);
    if (at != SIZE_MAX) {
        write_front(st, at, write, user);
        st->n_held = 0;
        return true;
    }
    write_front(st, rt_utf8_complete(st->held, st->n_held - partial_stop(st)), write, user);
    return false;
}

void rt_stop_text_finish(rt_stop_text_t *st, rt_write_fn write, void *user) {
    write_front(st, st->n_held, write, user);
}
