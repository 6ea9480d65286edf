/* SPDX-License-Identifier: MIT */
/* buffer.c: the CPU plugin's buffers, plain host memory. alloc takes the
 * memory from the host's allocator, over-allocated so that the first byte
 * can be rounded up to RT_CPU_ALIGN, and records what to free;
 * buffer_from_host_ptr wraps memory the caller keeps (mmapped weights) and
 * frees nothing. Tensor reads and writes are memcpy/memset at data+offset:
 * the core has already checked the ranges. */
#include "cpu.h"

#include <string.h>

void rt_cpu_buffer_destroy(void *state) {
    rt_cpu_buffer_t *b = state;
    if (!b || !b->mem) return;
    const rt_allocator_t *a = &b->host->allocator;
    a->realloc(a->user_data, b->mem, b->mem_size, 0);
    b->mem = NULL;
}

void *rt_cpu_buffer_base(void *state) {
    return ((rt_cpu_buffer_t *)state)->data;
}

static rt_status_t rt_cpu_buffer_set(void *state, rt_tensor_t *t, const void *data, size_t offset,
                                     size_t size) {
    (void)state;
    if (size) memcpy((char *)t->data + offset, data, size);
    return RT_OK;
}

static rt_status_t rt_cpu_buffer_get(void *state, const rt_tensor_t *t, void *data, size_t offset,
                                     size_t size) {
    (void)state;
    if (size) memcpy(data, (const char *)t->data + offset, size);
    return RT_OK;
}

static rt_status_t rt_cpu_buffer_memset(void *state, rt_tensor_t *t, uint8_t value, size_t offset,
                                        size_t size) {
    (void)state;
    if (size) memset((char *)t->data + offset, value, size);
    return RT_OK;
}

/* Direct only when src's bytes are host memory too; the core falls back to
 * a copy through host memory otherwise. */
static rt_status_t rt_cpu_buffer_cpy(void *dst_state, const rt_tensor_t *src, rt_tensor_t *dst) {
    const rt_cpu_buffer_t *b = dst_state;
    if (src->buffer && !b->host->buffer_is_host(src->buffer)) return RT_ERR_UNSUPPORTED;
    const size_t n = b->host->tensor_nbytes(src);
    if (n && src->data != dst->data) memmove(dst->data, src->data, n);
    return RT_OK;
}

static rt_status_t rt_cpu_buffer_clear(void *state, uint8_t value) {
    rt_cpu_buffer_t *b = state;
    if (b->size) memset(b->data, value, b->size);
    return RT_OK;
}

const rt_buffer_vtable_t rt_cpu_buffer_vtable = {
    .struct_size = sizeof(rt_buffer_vtable_t),
    .destroy = rt_cpu_buffer_destroy,
    .base = rt_cpu_buffer_base,
    .init_tensor = NULL,
    .set_tensor = rt_cpu_buffer_set,
    .get_tensor = rt_cpu_buffer_get,
    .memset_tensor = rt_cpu_buffer_memset,
    .cpy_tensor = rt_cpu_buffer_cpy,
    .clear = rt_cpu_buffer_clear,
};

rt_status_t rt_cpu_buffer_alloc(void *device, size_t size, void *state) {
    const rt_cpu_device_t *dev = device;
    const rt_host_t *host = dev->host;
    rt_cpu_buffer_t *b = state;
    memset(b, 0, sizeof *b);
    b->host = host;
    if (size > SIZE_MAX - RT_CPU_ALIGN)
        return host->set_error(RT_ERR_OUT_OF_MEMORY, "cpu: cannot allocate %zu bytes", size);
    /* One spare alignment's worth, so that even size 0 gets a real address. */
    const size_t mem_size = size + RT_CPU_ALIGN;
    const rt_allocator_t *a = &host->allocator;
    void *mem = a->realloc(a->user_data, NULL, 0, mem_size);
    if (!mem)
        return host->set_error(RT_ERR_OUT_OF_MEMORY, "cpu: cannot allocate %zu bytes", size);
    const uintptr_t p = (uintptr_t)mem;
    b->mem = mem;
    b->mem_size = mem_size;
    b->data = (uint8_t *)mem + ((RT_CPU_ALIGN - p % RT_CPU_ALIGN) % RT_CPU_ALIGN);
    b->size = size;
    rt_cpu_os_advise_huge(b->data, size);
    return RT_OK;
}

rt_status_t rt_cpu_buffer_from_host_ptr(void *device, void *ptr, size_t size, void *state) {
    const rt_cpu_device_t *dev = device;
    rt_cpu_buffer_t *b = state;
    memset(b, 0, sizeof *b);
    b->host = dev->host;
    if (!ptr && size)
        return dev->host->set_error(RT_ERR_INVALID_ARGUMENT,
                                    "cpu: buffer_from_host_ptr: NULL pointer for %zu bytes", size);
    b->data = ptr;
    b->size = size;
    return RT_OK;
}
