/* SPDX-License-Identifier: MIT */
/* buffer_impl.h: buffer types and buffers as the core wraps them
 * (buffer.c): a normalised copy of the plugin's descriptor and tables, and
 * the buffer with the plugin's state behind it. */
#ifndef RT_BUFFER_IMPL_H
#define RT_BUFFER_IMPL_H

#include "internal.h"
#include "list.h"

struct rt_buffer_type {
    rt_device_t *device;            /* owner */
    rt_buffer_type_desc_t desc;     /* normalised copy */
    rt_buffer_vtable_t buffer_vtable; /* normalised copy */
    const rt_buffer_type_desc_t *plugin_desc; /* the plugin's pointer, for supports_buft */
};

/* A buffer. The plugin's state (desc.buffer_state_size bytes) follows the
 * struct in the same allocation. */
struct rt_buffer {
    rt_buffer_type_t *buft;
    size_t size;                    /* bytes */
    void *base;                     /* from buffer_vtable.base */
    const rt_allocator_t *allocator;
    size_t alloc_size;              /* of this struct plus state */
    void *state;                    /* points just past the struct */
    rt_link_t link;                 /* in registry->buffers */
    struct rt_buffer *next_part;    /* rt_alloc_ctx_tensors split over several buffers:
                                       the next one, freed with this one; else NULL */
};

/* buffer.c: a buffer over state filled by fill(state), e.g. host_ptr. */
RT_INTERNAL rt_status_t rt_buffer_create(rt_buffer_type_t *buft, size_t size,
                                         rt_status_t (*fill)(void *ctx, void *state),
                                         void *fill_ctx, rt_buffer_t **out_buf);
/* buffer.c: the host table's buffer_state and buffer_is_host. */
RT_INTERNAL void *rt_buffer_state(const rt_buffer_t *buf);
RT_INTERNAL bool rt_buffer_is_host(const rt_buffer_t *buf);

#endif /* RT_BUFFER_IMPL_H */
