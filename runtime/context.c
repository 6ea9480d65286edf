/* SPDX-License-Identifier: MIT */
/* context.c: rt_context_t, the fixed memory pool that tensor headers, graphs
 * and (unless no_alloc) tensor data are carved from, in creation order, and
 * freed only with the whole context.
 *
 * Pool layout: the pool start is aligned to RT_CONTEXT_ALIGN, and each
 * object is one RT_CONTEXT_ALIGN slot holding its rt_object_t followed by
 * its payload rounded up to RT_CONTEXT_ALIGN, so `used` and every payload
 * stay aligned and the object of a payload is always one slot before it.
 * When the context allocates the pool itself, struct and pool are a single
 * allocation (the pool follows the struct). */
#include "tensor_impl.h"

#include <stdint.h>
#include <string.h>

#define RT_CONTEXT_DEFAULT_MEM ((size_t)16 << 20)

/* The slot in front of every payload. */
#define OBJECT_SLOT rt_align_up(sizeof(rt_object_t), RT_CONTEXT_ALIGN)

//===--- params ---===//

/* Reads the fields of `in` that its struct_size covers (0: the 1.0 layout)
 * and fills every default into `out`. */
static void params_canonicalize(const rt_context_params_t *in, rt_context_params_t *out) {
    RT_COPY_IN(out, in, rt_context_params_t, allocator);
    if (out->mem_size == 0 && out->mem_buffer == NULL) out->mem_size = RT_CONTEXT_DEFAULT_MEM;
    if (out->allocator == NULL || out->allocator->realloc == NULL)
        out->allocator = rt_allocator_default();
}

/* Bytes of the allocation behind ctx: the struct, plus the pool and its
 * alignment slack when the context owns the pool. */
static size_t context_alloc_size(bool owns_mem, size_t mem_size) {
    return sizeof(struct rt_context) + (owns_mem ? RT_CONTEXT_ALIGN + mem_size : 0);
}

static char *align_ptr(void *p) {
    return (char *)rt_align_up((size_t)(uintptr_t)p, RT_CONTEXT_ALIGN);
}

//===--- create / destroy ---===//

static rt_status_t check_params(const rt_context_params_t *p) {
    if (p->mem_buffer != NULL && p->mem_size < RT_CONTEXT_ALIGN * 2)
        return rt_error(RT_ERR_INVALID_ARGUMENT,
                        "rt_context_create: mem_buffer given with mem_size %zu; it needs the "
                        "buffer's size (at least %d bytes)", p->mem_size, RT_CONTEXT_ALIGN * 2);
    if (p->mem_size > SIZE_MAX / 2)
        return rt_error(RT_ERR_OUT_OF_MEMORY, "rt_context_create: mem_size %zu is too large",
                        p->mem_size);
    return RT_OK;
}

static rt_context_t *context_alloc(const rt_context_params_t *p) {
    const bool owns_mem = p->mem_buffer == NULL;
    rt_context_t *ctx = rt_mem_alloc(p->allocator, context_alloc_size(owns_mem, p->mem_size));
    if (ctx == NULL) return NULL;
    memset(ctx, 0, sizeof *ctx);
    ctx->allocator = *p->allocator;
    ctx->owns_mem = owns_mem;
    ctx->no_alloc = p->no_alloc;
    if (owns_mem) {
        ctx->mem = align_ptr(ctx + 1);
        ctx->mem_size = p->mem_size;
    } else { /* the caller's buffer, trimmed to start aligned */
        ctx->mem = align_ptr(p->mem_buffer);
        ctx->mem_size = p->mem_size - (size_t)(ctx->mem - (char *)p->mem_buffer);
    }
    return ctx;
}

rt_status_t rt_context_create(const rt_context_params_t *params, rt_context_t **out_ctx) {
    RT_ARMOR(out_ctx != NULL);
    *out_ctx = NULL;
    rt_context_params_t p;
    params_canonicalize(params, &p);
    const rt_status_t st = check_params(&p);
    if (st != RT_OK) return st;
    rt_context_t *ctx = context_alloc(&p);
    if (ctx == NULL)
        return rt_error(RT_ERR_OUT_OF_MEMORY, "rt_context_create: cannot allocate a pool of %zu bytes",
                        p.mem_size);
    *out_ctx = ctx;
    return RT_OK;
}

void rt_context_destroy(rt_context_t *ctx) {
    if (ctx == NULL) return;
    const rt_allocator_t allocator = ctx->allocator; /* the block being freed holds it */
    rt_mem_free(&allocator, ctx, context_alloc_size(ctx->owns_mem, ctx->mem_size));
}

//===--- objects ---===//

size_t rt_context_object_footprint(size_t payload) {
    return OBJECT_SLOT + rt_align_up(payload, RT_CONTEXT_ALIGN);
}

static const char *object_kind_name(rt_object_kind_t kind) {
    return kind == RT_OBJECT_TENSOR ? "tensor" : kind == RT_OBJECT_GRAPH ? "graph" : "object";
}

void *rt_context_alloc_object(rt_context_t *ctx, rt_object_kind_t kind, size_t size) {
    const size_t left = ctx->mem_size - ctx->used;
    /* the first test keeps the footprint's rounding from overflowing */
    RT_CHECK(size <= ctx->mem_size && rt_context_object_footprint(size) <= left,
             "context pool is full: a %s of %zu bytes needs %zu with its header, but only %zu "
             "of %zu bytes are left; create the context with a larger mem_size",
             object_kind_name(kind), size,
             size <= SIZE_MAX / 2 ? rt_context_object_footprint(size) : SIZE_MAX, left,
             ctx->mem_size);
    rt_object_t *obj = (rt_object_t *)(ctx->mem + ctx->used);
    obj->offs = ctx->used + OBJECT_SLOT;
    obj->size = rt_align_up(size, RT_CONTEXT_ALIGN);
    obj->next = NULL;
    obj->kind = kind;
    if (ctx->last != NULL) ctx->last->next = obj;
    else ctx->first = obj;
    ctx->last = obj;
    ctx->n_objects++;
    ctx->used = obj->offs + obj->size;
    return ctx->mem + obj->offs;
}

size_t rt_context_used_mem(const rt_context_t *ctx) { return ctx != NULL ? ctx->used : 0; }

bool rt_context_get_no_alloc(const rt_context_t *ctx) { return ctx != NULL && ctx->no_alloc; }

void rt_context_set_no_alloc(rt_context_t *ctx, bool no_alloc) {
    if (ctx != NULL) ctx->no_alloc = no_alloc;
}

size_t rt_tensor_overhead(void) { return rt_context_object_footprint(sizeof(rt_tensor_t)); }

//===--- tensors in creation order ---===//

static rt_tensor_t *tensor_from(const rt_context_t *ctx, const rt_object_t *obj) {
    while (obj != NULL && obj->kind != RT_OBJECT_TENSOR) obj = obj->next;
    return obj != NULL ? (rt_tensor_t *)(ctx->mem + obj->offs) : NULL;
}

rt_tensor_t *rt_context_first_tensor(const rt_context_t *ctx) {
    if (ctx == NULL) return NULL;
    return tensor_from(ctx, ctx->first);
}

rt_tensor_t *rt_context_next_tensor(const rt_context_t *ctx, const rt_tensor_t *t) {
    if (ctx == NULL || t == NULL) return NULL;
    const char *p = (const char *)t;
    RT_CHECK(p >= ctx->mem + OBJECT_SLOT && p < ctx->mem + ctx->used,
             "rt_context_next_tensor: tensor %p is not in this context's pool [%p, %p)",
             (const void *)t, (void *)ctx->mem, (void *)(ctx->mem + ctx->used));
    const rt_object_t *obj = (const rt_object_t *)(p - OBJECT_SLOT);
    return tensor_from(ctx, obj->next);
}

rt_tensor_t *rt_context_get_tensor(const rt_context_t *ctx, const char *name) {
    if (ctx == NULL || name == NULL) return NULL;
    for (rt_tensor_t *t = rt_context_first_tensor(ctx); t != NULL;
         t = rt_context_next_tensor(ctx, t)) {
        if (strcmp(t->name, name) == 0) return t;
    }
    return NULL;
}
