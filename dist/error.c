/* SPDX-License-Identifier: MIT */
/* error.c: librtdist's last-error message, one per thread (one line,
 * printed by callers as it is), and its clock. */
#include "dist_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

static _Thread_local char last_error[512];

const char *rtd_last_error(void) { return last_error; }

rt_status_t rtd_error(rt_status_t status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return status;
}

/* "what: message" of another library's failure: its message is copied
 * before this one is written, so no call site formats it itself. */
static rt_status_t wrap(rt_status_t status, const char *what, const char *message) {
    char msg[sizeof last_error];
    snprintf(msg, sizeof msg, "%s", message);
    return rtd_error(status, "%s: %s", what, msg[0] ? msg : rt_status_name(status));
}

rt_status_t rtd_error_model(rt_status_t status, const char *what) {
    return wrap(status, what, rtm_last_error());
}

rt_status_t rtd_error_core(rt_status_t status, const char *what) {
    return wrap(status, what, rt_last_error());
}

double rtd_time_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
