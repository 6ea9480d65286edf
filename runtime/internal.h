/* SPDX-License-Identifier: MIT */
/* internal.h: what every runtime file includes. The public and plugin
 * headers, the RT_INTERNAL marker, error reporting, logging, the check
 * macros and the allocator helpers. */
#ifndef RT_INTERNAL_H
#define RT_INTERNAL_H

#include "../abi/rt.h"
#include "../abi/rt_plugin.h"

#include <stdarg.h>

/* Shared between runtime files, never exported (the version script and
 * -fvisibility=hidden keep it so; this makes it explicit). */
#define RT_INTERNAL __attribute__((visibility("hidden")))

//===--- errors and logging (status.c) ---===//

/* Records the message for rt_last_error() on this thread, logs it at
 * debug level, and returns status. */
RT_INTERNAL rt_status_t rt_error(rt_status_t status, const char *fmt, ...) RT_PRINTF(2, 3);
RT_INTERNAL rt_status_t rt_error_v(rt_status_t status, const char *fmt, va_list ap);
/* The one way to add context to an error: records "context: message" where
 * message is the current rt_last_error() (read before it is overwritten),
 * and returns status. Never format rt_last_error() into rt_error yourself:
 * the buffer would be read while it is written. */
RT_INTERNAL rt_status_t rt_error_wrap(rt_status_t status, const char *fmt, ...) RT_PRINTF(2, 3);
/* Messages recorded on this thread so far; with rt_error_wrap_since, tells
 * whether a callee (a plugin through host->set_error) said anything. */
RT_INTERNAL uint64_t rt_error_seq(void);
/* rt_error_wrap, or "context: STATUS (no message)" when nothing was
 * recorded since rt_error_seq() returned seq. */
RT_INTERNAL rt_status_t rt_error_wrap_since(rt_status_t status, uint64_t seq, const char *fmt, ...)
    RT_PRINTF(3, 4);
RT_INTERNAL void rt_log(rt_log_level_t level, const char *fmt, ...) RT_PRINTF(2, 3);
RT_INTERNAL void rt_log_v(rt_log_level_t level, const char *fmt, va_list ap);
/* Calls the abort hook with "file:line: message", then abort(). */
RT_INTERNAL _Noreturn void rt_abort_msg(const char *file, int line, const char *fmt, ...)
    RT_PRINTF(3, 4);

/* Always on: preconditions whose failure would corrupt memory, and graph API
 * misuse. The message should name the op, the tensors and their shapes. */
#define RT_CHECK(cond, ...)                                   \
    do {                                                      \
        if (!(cond)) rt_abort_msg(__FILE__, __LINE__, __VA_ARGS__); \
    } while (0)

/* Debug builds only (RT_DEBUG): internal invariants. */
#ifdef RT_DEBUG
#  define RT_ASSERT(cond) RT_CHECK(cond, "assertion failed: %s", #cond)
#  define RT_ALWAYS(x) ((x) ? 1 : (rt_abort_msg(__FILE__, __LINE__, "ALWAYS(%s)", #x), 0))
#  define RT_NEVER(x) ((x) ? (rt_abort_msg(__FILE__, __LINE__, "NEVER(%s)", #x), 1) : 0)
#else
#  define RT_ASSERT(cond) do { (void)sizeof(cond); } while (0)
#  define RT_ALWAYS(x) (x)
#  define RT_NEVER(x) (x)
#endif

//===--- memory (alloc.c) ---===//

/* The allocator used when the caller gives none: malloc, realloc, free. */
RT_INTERNAL const rt_allocator_t *rt_allocator_default(void);
/* NULL on failure; size 0 returns NULL. */
RT_INTERNAL void *rt_mem_alloc(const rt_allocator_t *a, size_t size);
RT_INTERNAL void *rt_mem_calloc(const rt_allocator_t *a, size_t size);
RT_INTERNAL void rt_mem_free(const rt_allocator_t *a, void *ptr, size_t size);
RT_INTERNAL char *rt_mem_strdup(const rt_allocator_t *a, const char *s); /* free with strlen+1 */
RT_INTERNAL void rt_mem_free_str(const rt_allocator_t *a, char *s);

/* Smallest multiple of align (a power of two) not below x. */
static inline size_t rt_align_up(size_t x, size_t align) { return (x + align - 1) & ~(align - 1); }

#endif /* RT_INTERNAL_H */
