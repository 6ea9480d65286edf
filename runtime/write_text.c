/* SPDX-License-Identifier: MIT */
/* write_text.c: printf into an application's rt_write_fn, the one way the
 * runtime's text dumps (graphs, plans, placements, the topology) write a
 * line. A line longer than the buffer is cut, never split. */
#include "internal.h"

#include <stdio.h>

void rt_write_text(rt_write_fn write, void *user_data, const char *fmt, ...) {
    if (write == NULL || fmt == NULL) return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    const int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n > 0) write(line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1, user_data);
}
