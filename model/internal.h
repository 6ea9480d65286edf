/* SPDX-License-Identifier: MIT */
/* internal.h: what every file of the model library includes. The public
 * header, the RTM_INTERNAL marker, and error reporting (error.c): each
 * failure records a one-line message for rtm_last_error() where it
 * happens, naming the function and the value that failed. */
#ifndef RTM_INTERNAL_H
#define RTM_INTERNAL_H

#include "rt_model.h"

/* Shared between the library's files, never exported (-fvisibility=hidden
 * makes that the default; this makes it explicit). */
#define RTM_INTERNAL __attribute__((visibility("hidden")))

/* Records the message for rtm_last_error() and returns status. */
RTM_INTERNAL rt_status_t rtm_error(rt_status_t status, const char *fmt, ...) RT_PRINTF(2, 3);
/* The only ways to add context to an error (never format rtm_last_error()
 * or rt_last_error() into rtm_error: the buffer would be read while it is
 * written). rtm_error_wrap records "context: <this library's message>",
 * rtm_error_core, for a failed core call, "context: <the core's message>";
 * both return status unchanged. */
RTM_INTERNAL rt_status_t rtm_error_wrap(rt_status_t status, const char *fmt, ...) RT_PRINTF(2, 3);
RTM_INTERNAL rt_status_t rtm_error_core(rt_status_t status, const char *fmt, ...) RT_PRINTF(2, 3);

/* Copies the caller's option struct into the library's zeroed one, only
 * the bytes inside its struct_size (0 reads as the whole 1.0 struct), so
 * an older caller's shorter struct leaves newer fields at their default. */
RTM_INTERNAL void rtm_params_copy(void *dst, size_t dst_size, const void *src);
/* The other way: the library's stats (stats_size bytes) into the caller's
 * out, as far as its struct_size reaches (set by the caller, not 0);
 * RT_ERR_INVALID_ARGUMENT naming fn otherwise. */
RTM_INTERNAL rt_status_t rtm_stats_copy(void *out, const void *stats, size_t stats_size,
                                        const char *fn);

/* Wall-clock seconds from an arbitrary start, for load and decode times. */
RTM_INTERNAL double rtm_time_seconds(void);

#endif /* RTM_INTERNAL_H */
