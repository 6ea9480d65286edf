/* SPDX-License-Identifier: MIT */
/* tallocr.c: the linear tensor allocator (rt_tallocr_t), which hands out a
 * buffer's bytes in order, and rt_alloc_ctx_tensors, which sizes buffers for
 * a whole no_alloc context and fills them with a tallocr (the seed's
 * main-backend), splitting the tensors over several buffers when the buffer
 * type's max size asks for it. */
#include "internal.h"
#include "registry_impl.h"

#include <string.h>

//===--- rt_tallocr_t ---===//

rt_status_t rt_tallocr_init(rt_tallocr_t *talloc, rt_buffer_t *buffer) {
    if (talloc == NULL || buffer == NULL)
        return rt_error(RT_ERR_INVALID_ARGUMENT, "%s: talloc and buffer must not be NULL", __func__);
    memset(talloc, 0, sizeof *talloc);
    talloc->struct_size = sizeof *talloc;
    talloc->buffer = buffer;
    talloc->base = rt_buffer_base(buffer);
    talloc->alignment = rt_buffer_type_alignment(rt_buffer_get_type(buffer));
    /* The base may be any address in the device's space; start at the first
     * aligned one so that every offset handed out is aligned. */
    const uintptr_t base = (uintptr_t)talloc->base;
    talloc->offset = rt_align_up(base, talloc->alignment) - base;
    return RT_OK;
}

rt_status_t rt_tallocr_alloc(rt_tallocr_t *talloc, rt_tensor_t *t) {
    if (talloc == NULL || t == NULL)
        return rt_error(RT_ERR_INVALID_ARGUMENT, "%s: talloc and t must not be NULL", __func__);
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
