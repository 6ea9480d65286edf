/* SPDX-License-Identifier: MIT */
/* context_impl.h: the layout of rt_context_t, for the runtime files that
 * carve objects (tensors, graphs) out of its pool.
 *
 * The pool is one block of mem_size bytes. Objects are appended in order,
 * each an rt_object_t header followed by its payload (a tensor header and,
 * unless no_alloc, its data; or a graph), every payload aligned to
 * RT_CONTEXT_ALIGN. Nothing is freed before the context. */
#ifndef RT_CONTEXT_IMPL_H
#define RT_CONTEXT_IMPL_H

#include "internal.h"

#define RT_CONTEXT_ALIGN 64

typedef enum { RT_OBJECT_TENSOR, RT_OBJECT_GRAPH, RT_OBJECT_BYTES } rt_object_kind_t;

typedef struct rt_object {
    size_t offs;             /* payload offset from the pool start, bytes */
    size_t size;             /* payload bytes, aligned */
    struct rt_object *next;  /* next object in creation order, or NULL */
    rt_object_kind_t kind;
} rt_object_t;

struct rt_context {
    rt_allocator_t allocator;
    char *mem;               /* the pool */
    size_t mem_size;         /* bytes */
    bool owns_mem;           /* allocated by us, freed with the context */
    bool no_alloc;
    size_t used;             /* bytes handed out, headers included */
    rt_object_t *first, *last;
    int32_t n_objects;
};

/* Carves an object of `size` payload bytes; aborts (misuse) when the pool is
 * full, naming what was asked and what is left. */
RT_INTERNAL void *rt_context_alloc_object(rt_context_t *ctx, rt_object_kind_t kind, size_t size);

#endif /* RT_CONTEXT_IMPL_H */
