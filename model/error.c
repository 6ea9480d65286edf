/* SPDX-License-Identifier: MIT */
/* error.c: the library's last-error message, one per thread, and the
 * small helpers every file uses: the clock and the copy of option
 * structs. A message is one line: callers print it as it is. Context is
 * added only through rtm_error_wrap/rtm_error_core, which copy the message
 * they quote before writing the buffer it lives in. */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static _Thread_local char last_error[512];

const char *rtm_last_error(void) { return last_error; }

rt_status_t rtm_error(rt_status_t status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return status;
}

/* "context: inner"; inner (which may be last_error itself) is copied
 * before last_error is written. */
static rt_status_t wrap_v(rt_status_t status, const char *inner, const char *fmt, va_list ap) {
    char context[256], copy[sizeof last_error];
    snprintf(copy, sizeof copy, "%s", inner[0] ? inner : rt_status_name(status));
    vsnprintf(context, sizeof context, fmt, ap);
    return rtm_error(status, "%s: %s", context, copy);
}

rt_status_t rtm_error_wrap(rt_status_t status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    wrap_v(status, last_error, fmt, ap);
    va_end(ap);
    return status;
}

rt_status_t rtm_error_core(rt_status_t status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    wrap_v(status, rt_last_error(), fmt, ap);
    va_end(ap);
    return status;
}

double rtm_time_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

rt_status_t rtm_stats_copy(void *out, const void *stats, size_t stats_size, const char *fn) {
    uint32_t size = 0;
    if (out != NULL) memcpy(&size, out, sizeof size);
    if (stats == NULL || size < sizeof size)
        return rtm_error(RT_ERR_INVALID_ARGUMENT, "%s: NULL or unsized out", fn);
    const size_t n = size < stats_size ? size : stats_size;
    memcpy((char *)out + sizeof size, (const char *)stats + sizeof size, n - sizeof size);
    return RT_OK;
}

void rtm_params_copy(void *dst, size_t dst_size, const void *src) {
    memset(dst, 0, dst_size);
    if (src == NULL) return;
    uint32_t size;
    memcpy(&size, src, sizeof size);
    memcpy(dst, src, size == 0 || size > dst_size ? dst_size : size);
    memcpy(dst, &(uint32_t){(uint32_t)dst_size}, sizeof size);
}
