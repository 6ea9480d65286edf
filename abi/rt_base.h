/* SPDX-License-Identifier: MIT */
/* rt_base.h: what every other abi/ header stands on. Export macro, status
 * codes, log levels, the allocator callback and the extension record that
 * lets ABI structs grow sideways.
 *
 * Compatibility rules of the whole abi/ directory (they are the promise):
 *
 *   1. Every struct that crosses the boundary between the core, plugins and
 *      applications starts with `uint32_t struct_size`, set by its producer
 *      to sizeof(the struct it was compiled with). A reader touches only the
 *      fields that lie inside struct_size (RT_STRUCT_HAS below). So either
 *      side may be the older one.
 *   2. A minor ABI version may only add: fields at the end of a struct, slots
 *      at the end of a function table, new op codes, new enum values, new
 *      extension record types, new functions. Groups of fields added later
 *      are marked with the version that added them: `abi >= 1.1`.
 *   3. Nothing ever changes meaning, moves, is renumbered, retyped or removed
 *      within a major version. Each struct's size at every minor version is
 *      pinned by a static assertion in its header.
 *   4. Optional features travel as extension records ({struct_size, type,
 *      next} chains). A reader skips a record type it does not know; it never
 *      rejects it.
 *   5. Before calling an optional function slot, check that the slot lies
 *      inside struct_size and that it is not NULL.
 *   6. Errors cross the boundary as rt_status_t with a message; nothing on
 *      either side aborts the process for a condition the other side caused.
 *   7. Structs that cannot grow by struct_size (rt_tensor_t) carry explicit
 *      reserved space: written as zero, ignored on read.
 *   8. What an older reader must not use as if it were ordinary (a buffer
 *      type whose tensors are not in the standard layout; later, new
 *      types and layouts) is offered by version, never by hoping the
 *      reader checks a flag it does not know. The version in use between
 *      the core and a plugin is the lower of the two (rt_plugin.h): a
 *      plugin offers such a feature only when that version defines it, and
 *      the core never hands a plugin an op or a type its version does not
 *      define. Applications declare the version they were built for
 *      (rt_registry_create in rt.h does it for them); the core shows them
 *      only what that version defines, and one that did not declare is
 *      1.0. A buffer type may also carry must-understand flags (bits 16 to
 *      31 of its flags): a reader hides a buffer type that sets one it
 *      does not know. An older reader sees less, never something it would
 *      misuse.
 *   9. A struct_size of 0 in a struct an application hands in means the
 *      1.0 layout of that struct, everywhere (so a zeroed struct from any
 *      version is valid).
 *
 * Ownership, once for all of abi/: the caller owns what a `create` or
 * `alloc` function returns and gives it back with the matching `destroy` or
 * `free`, all of which accept NULL. What a `get` function returns is
 * borrowed and lives as long as the object it came from. A function keeps a
 * pointer argument past its return only when its documentation says so.
 */
#ifndef RT_BASE_H
#define RT_BASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt_version.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#  ifdef RT_BUILDING_CORE
#    define RT_API __declspec(dllexport)
#  else
#    define RT_API __declspec(dllimport)
#  endif
#  define RT_PLUGIN_EXPORT __declspec(dllexport)
#else
#  define RT_API __attribute__((visibility("default")))
#  define RT_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

#if defined(__cplusplus)
#  define RT_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#  define RT_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#else /* C99: a negative array size fails the build; repeated compatible
        extern declarations are allowed, so every assertion can share a name */
#  define RT_STATIC_ASSERT(cond, msg) extern char rt_static_assert_[(cond) ? 1 : -1]
#endif

#if defined(__GNUC__)
#  define RT_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#  define RT_PRINTF(fmt, args)
#endif

/* rt assumes a 64-bit address space: tensor headers hold pointers and
 * size_t strides, and their layout is pinned for LP64/LLP64. */
RT_STATIC_ASSERT(sizeof(void *) == 8, "rt's ABI is defined for 64-bit targets");
RT_STATIC_ASSERT(sizeof(size_t) == 8, "rt's ABI is defined for 64-bit targets");

/* True when struct *s, whose producer set s->struct_size, contains field f. */
#define RT_STRUCT_HAS(s, type, f) \
    ((s)->struct_size >= offsetof(type, f) + sizeof(((type *)0)->f))

//===--- rt_status_t ---===//

/* Every call that can fail returns one of these; 0 is success. A message
 * with the details is kept per thread (rt_last_error in rt.h; plugins set
 * it through rt_host_t.set_error). Values are ABI: never renumbered. */
typedef int32_t rt_status_t;
enum {
    RT_OK = 0,
    RT_ERR_INVALID_ARGUMENT = 1, /* a value the caller passed is out of range or malformed */
    RT_ERR_OUT_OF_MEMORY = 2,    /* host or device memory could not be allocated */
    RT_ERR_UNSUPPORTED = 3,      /* valid request the device or plugin cannot do */
    RT_ERR_NOT_FOUND = 4,        /* no such file, symbol, tensor, device or key */
    RT_ERR_IO = 5,               /* the operating system failed a read, write or map */
    RT_ERR_FORMAT = 6,           /* a file or blob is malformed (GGUF, plugin table) */
    RT_ERR_INCOMPATIBLE = 7,     /* ABI version or type mismatch between components */
    RT_ERR_DEVICE = 8,           /* the device or its driver reported a failure */
    RT_ERR_MISUSE = 9,           /* API misuse caught at run time (NULL handle, bad index) */
    RT_ERR_INTERNAL = 10,        /* a bug in rt or a plugin: an invariant failed */
    RT_ERR_DOES_NOT_FIT = 11     /* a graph does not fit a plan or a buffer; re-reserve */
};

//===--- logging ---===//

typedef int32_t rt_log_level_t;
enum {
    RT_LOG_DEBUG = 0,
    RT_LOG_INFO = 1,
    RT_LOG_WARN = 2,
    RT_LOG_ERROR = 3
};

//===--- rt_allocator_t ---===//

/* All heap memory of the core and of plugins goes through one allocator
 * (Lua's lua_Alloc shape). realloc(ud, NULL, 0, n) allocates, realloc(ud,
 * p, n, 0) frees and returns NULL, anything else resizes. old_size is always
 * the size the block was allocated with. Returns NULL on failure, and then
 * the old block is untouched. Must be thread-safe. */
typedef struct rt_allocator {
    void *(*realloc)(void *user_data, void *ptr, size_t old_size, size_t new_size);
    void *user_data;
} rt_allocator_t;

//===--- extension records ---===//

/* The head of every extension record. Records form a singly linked list
 * through `next`; `type` says which struct the record is (RT_EXT_* values
 * are defined next to the struct they name). Unknown types are skipped. */
typedef struct rt_ext_header {
    uint32_t struct_size;              /* sizeof the whole record */
    uint32_t type;                     /* RT_EXT_* */
    const struct rt_ext_header *next;  /* next record, or NULL */
} rt_ext_header_t;

#ifdef __cplusplus
}
#endif

#endif /* RT_BASE_H */
