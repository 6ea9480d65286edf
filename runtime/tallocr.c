/* SPDX-License-Identifier: MIT */
/* tallocr.c: the linear tensor allocator (rt_tallocr_t), which hands out a
 * buffer's bytes in order, and rt_alloc_ctx_tensors, which sizes buffers for
 * a whole no_alloc context and fills them with a tallocr (docs/memory.md
 * §3.2), splitting the tensors over several buffers when the buffer
 * type's max size asks for it. */
#include "internal.h"
#include "buffer_impl.h"

#include <string.h>

//===--- rt_tallocr_t ---===//

rt_status_t rt_tallocr_init(rt_tallocr_t *talloc, rt_buffer_t *buffer) {
    RT_ARMOR(talloc != NULL && buffer != NULL);
    memset(talloc, 0, sizeof *talloc);
    talloc->struct_size = sizeof *talloc;
    talloc->buffer = buffer;
    talloc->base = rt_buffer_base(buffer);
    /* Offsets are aligned from the base, which the plugin aligns (device
     * addresses need not be host pointers, so none is computed here), as
     * gallocr's are. */
    talloc->alignment = rt_buffer_type_alignment(rt_buffer_get_type(buffer));
    talloc->offset = 0;
    return RT_OK;
}

rt_status_t rt_tallocr_alloc(rt_tallocr_t *talloc, rt_tensor_t *t) {
    RT_ARMOR(talloc != NULL && t != NULL);
    if (t->view_src != NULL || t->data != NULL)
        return rt_error(RT_ERR_INVALID_ARGUMENT, "%s: '%s' is a view or already has data",
                        __func__, t->name);
    rt_buffer_t *buf = talloc->buffer;
    const size_t size = rt_align_up(rt_buffer_type_alloc_size(rt_buffer_get_type(buf), t),
                                    talloc->alignment);
    const size_t cap = rt_buffer_size(buf);
    if (talloc->offset > cap || size > cap - talloc->offset)
        return rt_error(RT_ERR_OUT_OF_MEMORY,
                        "%s: tensor '%s' needs %zu bytes, buffer of type %s has %zu of %zu left",
                        __func__, t->name, size, rt_buffer_type_name(rt_buffer_get_type(buf)),
                        talloc->offset > cap ? 0 : cap - talloc->offset, cap);
    rt_status_t st = rt_tensor_alloc(buf, t, (char *)talloc->base + talloc->offset);
    if (st == RT_OK) talloc->offset += size;
    return st;
}

//===--- rt_alloc_ctx_tensors ---===//

static bool needs_data(const rt_tensor_t *t) { return t->data == NULL && t->view_src == NULL; }

/* The first tensor of ctx after t (after none: from the start) that needs
 * bytes, or NULL. */
static rt_tensor_t *next_needing(const rt_context_t *ctx, rt_tensor_t *t) {
    t = t == NULL ? rt_context_first_tensor(ctx) : rt_context_next_tensor(ctx, t);
    while (t != NULL && !needs_data(t)) t = rt_context_next_tensor(ctx, t);
    return t;
}

/* Bytes t takes in a buffer of buft, rounded up to the alignment;
 * SIZE_MAX when that overflows. */
static size_t padded_size(const rt_buffer_type_t *buft, const rt_tensor_t *t) {
    const size_t n = rt_buffer_type_alloc_size(buft, t), align = rt_buffer_type_alignment(buft);
    return n > SIZE_MAX - align ? SIZE_MAX : rt_align_up(n, align);
}

/* The run of tensors from `first` that fits one buffer: *out_end is the
 * first tensor past it (NULL: the run reaches the end), *out_size its bytes. */
static rt_status_t next_run(const rt_context_t *ctx, const rt_buffer_type_t *buft,
                            rt_tensor_t *first, rt_tensor_t **out_end, size_t *out_size) {
    const size_t max = rt_buffer_type_max_size(buft);
    size_t size = 0;
    rt_tensor_t *t = first;
    for (; t != NULL; t = next_needing(ctx, t)) {
        const size_t n = padded_size(buft, t);
        if (n > max) /* no buffer of this type can ever hold it */
            return rt_error(RT_ERR_UNSUPPORTED, "rt_alloc_ctx_tensors: tensor '%s' needs %zu "
                            "bytes, more than the largest buffer of type %s (%zu bytes)",
                            t->name, n, rt_buffer_type_name(buft), max);
        if (n > max - size) break;
        size += n;
    }
    *out_end = t;
    *out_size = size;
    return RT_OK;
}

/* One buffer of `size` bytes holding the tensors [first, end), in order. */
static rt_status_t alloc_run(const rt_context_t *ctx, rt_buffer_type_t *buft, rt_tensor_t *first,
                             rt_tensor_t *end, size_t size, rt_buffer_t **out_buf) {
    rt_tallocr_t ta;
    rt_status_t st = rt_buffer_alloc(buft, size, out_buf);
    if (st == RT_OK) st = rt_tallocr_init(&ta, *out_buf);
    for (rt_tensor_t *t = first; st == RT_OK && t != end; t = next_needing(ctx, t))
        st = rt_tallocr_alloc(&ta, t);
    return st;
}

static bool in_parts(const rt_buffer_t *head, const rt_buffer_t *buf) {
    for (; head != NULL; head = head->next_part)
        if (head == buf) return true;
    return false;
}

/* After a failure: takes the tensors out of the parts and frees them. */
static void discard_parts(const rt_context_t *ctx, rt_buffer_t *head) {
    for (rt_tensor_t *t = rt_context_first_tensor(ctx); t != NULL; t = rt_context_next_tensor(ctx, t))
        if (t->buffer != NULL && in_parts(head, t->buffer)) {
            t->buffer = NULL;
            t->data = NULL;
        }
    while (head != NULL) {
        rt_buffer_t *next = head->next_part;
        head->next_part = NULL;
        rt_buffer_free(head);
        head = next;
    }
}

static rt_status_t init_views(const rt_context_t *ctx) {
    rt_status_t st = RT_OK;
    for (rt_tensor_t *t = rt_context_first_tensor(ctx); t != NULL && st == RT_OK;
         t = rt_context_next_tensor(ctx, t))
        if (t->view_src != NULL && t->data == NULL && t->view_src->data != NULL)
            st = rt_view_init(t);
    return st;
}

/* Runs of tensors in creation order, each in a buffer of at most the type's
 * max size (one buffer, possibly empty, when everything fits). The parts
 * are chained from the first through next_part; freeing it frees them. */
rt_status_t rt_alloc_ctx_tensors(rt_context_t *ctx, rt_buffer_type_t *buft, rt_buffer_t **out_buf) {
    RT_ARMOR(ctx != NULL && buft != NULL && out_buf != NULL);
    *out_buf = NULL;
    rt_buffer_t *head = NULL, **link = &head;
    rt_tensor_t *first = next_needing(ctx, NULL);
    rt_status_t st;
    do {
        rt_tensor_t *end = NULL;
        size_t size = 0;
        st = next_run(ctx, buft, first, &end, &size);
        if (st == RT_OK) st = alloc_run(ctx, buft, first, end, size, link);
        if (*link != NULL) link = &(*link)->next_part;
        first = end;
    } while (st == RT_OK && first != NULL);
    if (st == RT_OK) st = init_views(ctx);
    if (st != RT_OK) {
        discard_parts(ctx, head);
        return st;
    }
    *out_buf = head;
    return RT_OK;
}
