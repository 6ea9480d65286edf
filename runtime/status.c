/* SPDX-License-Identifier: MIT */
/* status.c: error messages per thread, the log sink and the abort hook.
 * A message is recorded once, where the failure happens; each layer above
 * adds its context with rt_error_wrap, which reads the message before it
 * writes the new one, so no caller copies or re-formats rt_last_error(). */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char last_error[1024];
static _Thread_local uint64_t error_seq; /* messages recorded on this thread */

static rt_log_fn log_fn;
static void *log_user_data;
static rt_abort_fn abort_fn;
static void *abort_user_data;

const char *rt_status_name(rt_status_t status) {
    static const char *const names[] = {
        "RT_OK", "RT_ERR_INVALID_ARGUMENT", "RT_ERR_OUT_OF_MEMORY", "RT_ERR_UNSUPPORTED",
        "RT_ERR_NOT_FOUND", "RT_ERR_IO", "RT_ERR_FORMAT", "RT_ERR_INCOMPATIBLE",
        "RT_ERR_DEVICE", "RT_ERR_MISUSE", "RT_ERR_INTERNAL", "RT_ERR_DOES_NOT_FIT",
    };
    if (status < 0 || (size_t)status >= sizeof names / sizeof names[0]) return "RT_ERR_UNKNOWN";
    return names[status];
}

const char *rt_last_error(void) { return last_error; }

rt_status_t rt_error_v(rt_status_t status, const char *fmt, va_list ap) {
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    error_seq++;
    rt_log(RT_LOG_DEBUG, "%s: %s", rt_status_name(status), last_error);
    return status;
}

uint64_t rt_error_seq(void) { return error_seq; }

/* "context: message", where message is the one recorded after seq (or, with
 * none recorded since, the status's name and the note that no one said
 * why). The message is copied out before the buffer is written. */
static rt_status_t wrap_v(rt_status_t status, bool fresh, const char *fmt, va_list ap) {
    char context[512], inner[sizeof last_error];
    vsnprintf(context, sizeof context, fmt, ap);
    if (fresh && last_error[0] != '\0') memcpy(inner, last_error, sizeof inner);
    else snprintf(inner, sizeof inner, "%s (no message)", rt_status_name(status));
    return rt_error(status, "%s: %s", context, inner);
}

rt_status_t rt_error_wrap(rt_status_t status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    wrap_v(status, true, fmt, ap);
    va_end(ap);
    return status;
}

rt_status_t rt_error_wrap_since(rt_status_t status, uint64_t seq, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    wrap_v(status, error_seq != seq, fmt, ap);
    va_end(ap);
    return status;
}

rt_status_t rt_error(rt_status_t status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    rt_error_v(status, fmt, ap);
    va_end(ap);
    return status;
}

void rt_log_set(rt_log_fn fn, void *user_data) {
    log_fn = fn;
    log_user_data = user_data;
}

static rt_log_level_t default_threshold(void) {
    const char *env = getenv("RT_LOG");
    if (env == NULL) return RT_LOG_WARN;
    if (strcmp(env, "debug") == 0) return RT_LOG_DEBUG;
    if (strcmp(env, "info") == 0) return RT_LOG_INFO;
    if (strcmp(env, "error") == 0) return RT_LOG_ERROR;
    return RT_LOG_WARN;
}

void rt_log_v(rt_log_level_t level, const char *fmt, va_list ap) {
    if (log_fn == NULL && level < default_threshold()) return;
    char line[2048];
    vsnprintf(line, sizeof line, fmt, ap);
    if (log_fn != NULL) {
        log_fn(level, line, log_user_data);
        return;
    }
    static const char *const tags[] = {"debug", "info", "warning", "error"};
    fprintf(stderr, "rt: %s: %s\n", tags[level < 0 ? 0 : level > 3 ? 3 : level], line);
}

void rt_log(rt_log_level_t level, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    rt_log_v(level, fmt, ap);
    va_end(ap);
}

void rt_abort_set(rt_abort_fn fn, void *user_data) {
    abort_fn = fn;
    abort_user_data = user_data;
}

void rt_abort_msg(const char *file, int line, const char *fmt, ...) {
    char msg[2048];
    int n = snprintf(msg, sizeof msg, "%s:%d: ", file, line);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
    va_end(ap);
    if (abort_fn != NULL) abort_fn(msg, abort_user_data);
    fprintf(stderr, "rt: fatal: %s\n", msg);
    fflush(stderr);
    abort();
}
