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

/* Debug builds only (RT_DEBUG): internal invariants, which no input can
 * break (a tensor of a graph is in the graph's hash). What input can break
 * is an error status, never an assertion. */
#ifdef RT_DEBUG
#  define RT_ASSERT(cond) RT_CHECK(cond, "assertion failed: %s", #cond)
#else
#  define RT_ASSERT(cond) do { (void)sizeof(cond); } while (0)
#endif

//===--- API misuse (the armor) ---===//

/* Misuse that would make the library touch memory it must not (a NULL
 * handle or out pointer, an index out of range): always checked, in every
 * build, by functions that return a status. It costs a compare. */
#define RT_ARMOR(cond)                                                               \
    do {                                                                             \
        if (!(cond)) return rt_error(RT_ERR_MISUSE, "%s: %s is false", __func__, #cond); \
    } while (0)

/* Misuse that costs more to find (a handle that is no longer alive: a
 * buffer freed twice): checked where RT_API_ARMOR is defined, as it is in
 * debug and sanitizer builds and so in CI (./configure --debug,
 * --sanitize=...): RT_ARMOR_DEEP_FAILS(cond) is true when cond is false. */
#ifdef RT_API_ARMOR
#  define RT_ARMOR_DEEP_FAILS(cond) (!(cond))
#else
#  define RT_ARMOR_DEEP_FAILS(cond) false
#endif

//===--- the struct_size rules (struct_copy.c) ---===//

/* Bytes of a struct's layout through field, e.g. its 1.0 layout through its
 * last 1.0 field. */
#define RT_SIZE_THROUGH(type, field) (offsetof(type, field) + sizeof(((type *)0)->field))

/* Copies min(src_size, dst_size) bytes of a struct into dst (a shorter
 * source cut to whole 8-byte words, so no field is copied in part) and
 * zero-fills the rest: how plugin tables are read. */
RT_INTERNAL void rt_struct_copy(void *dst, size_t dst_size, const void *src, size_t src_size);
/* The same for a struct an application hands in (NULL: all zero): its
 * struct_size, or size_1_0 when that is 0 (rt_base.h, rule 9); dst's
 * struct_size is set to dst_size. */
RT_INTERNAL void rt_struct_copy_in(void *dst, size_t dst_size, const void *src, size_t size_1_0);
/* Fills a struct the application gave to be written: as much of src
 * (src_size bytes) as the caller's struct_size (0: size_1_0) holds, the rest
 * of that zero; the caller's struct_size is kept. */
RT_INTERNAL void rt_struct_copy_out(void *dst, const void *src, size_t src_size, size_t size_1_0);
/* rt_struct_copy_in of an rt_ struct whose 1.0 layout ends at last_1_0. */
#define RT_COPY_IN(dst, src, type, last_1_0) \
    rt_struct_copy_in((dst), sizeof(type), (src), RT_SIZE_THROUGH(type, last_1_0))

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
