/* SPDX-License-Identifier: MIT */
/* buffer.c: mockgpu's private memory. Allocation against the device's
 * memory size (out-of-memory when it would not fit), and transfers that
 * count every byte that crosses the device boundary. */
#define MOCKGPU_INTERNAL
#include "mockgpu.h"

#include <string.h>

typedef struct mockgpu_buffer {
    mockgpu_device_t *device;
    void *mem;
    size_t size;
} mockgpu_buffer_t;

size_t mockgpu_buffer_state_size(void) { return sizeof(mockgpu_buffer_t); }

rt_status_t mockgpu_buffer_alloc(void *ctx, size_t size, void *state) {
    mockgpu_device_t *d = ctx;
    mockgpu_buffer_t *b = state;
    const rt_host_t *host = d->owner->host;
    const uint64_t used = atomic_fetch_add(&d->allocated, size);
    if (used + size > d->memory) {
        atomic_fetch_sub(&d->allocated, size);
        return host->set_error(RT_ERR_OUT_OF_MEMORY,
                               "mockgpu%u: out of memory allocating %zu bytes (%llu of %llu in use)",
                               d->index, size, (unsigned long long)used, (unsigned long long)d->memory);
    }
    b->device = d;
    b->size = size;
    b->mem = size ? host->allocator.realloc(host->allocator.user_data, NULL, 0, size) : NULL;
    if (size && b->mem == NULL) {
        atomic_fetch_sub(&d->allocated, size);
        return host->set_error(RT_ERR_OUT_OF_MEMORY, "mockgpu%u: host memory for %zu bytes",
                               d->index, size);
    }
    return RT_OK;
}

static void buffer_destroy(void *state) {
    mockgpu_buffer_t *b = state;
    const rt_host_t *host = b->device->owner->host;
    if (b->mem) host->allocator.realloc(host->allocator.user_data, b->mem, b->size, 0);
    atomic_fetch_sub(&b->device->allocated, b->size);
}

/* A private address space would do; real host addresses keep the CPU
 * plugin's kernels, which the mock delegates to, working unchanged. */
static void *buffer_base(void *state) {
    mockgpu_buffer_t *b = state;
    return b->mem ? b->mem : (void *)(uintptr_t)256;
}

static rt_status_t set_tensor(void *state, rt_tensor_t *t, const void *data, size_t offset,
                              size_t size) {
    mockgpu_buffer_t *b = state;
    const double t0 = mockgpu_now();
    memcpy((char *)t->data + offset, data, size);
    b->device->counters.bytes_in += size;
    mockgpu_pace_copy(b->device, t0);
    return RT_OK;
}

static rt_status_t get_tensor(void *state, const rt_tensor_t *t, void *data, size_t offset,
                              size_t size) {
    mockgpu_buffer_t *b = state;
    const double t0 = mockgpu_now();
    memcpy(data, (const char *)t->data + offset, size);
    b->device->counters.bytes_out += size;
    mockgpu_pace_copy(b->device, t0);
    return RT_OK;
}

static rt_status_t memset_tensor(void *state, rt_tensor_t *t, uint8_t value, size_t offset,
                                 size_t size) {
    (void)state;
    memset((char *)t->data + offset, value, size);
    return RT_OK;
}

static bool is_mock_buffer(const mockgpu_t *m, const struct rt_buffer *buffer) {
    if (buffer == NULL || !RT_STRUCT_HAS(m->host, rt_host_t, buffer_type)) return false;
    const rt_buffer_type_desc_t *desc = m->host->buffer_type(buffer);
    for (uint32_t i = 0; i < m->n_devices; i++)
        if (desc == &m->devices[i].buft) return true;
    return false;
}

/* Device-to-device copies between mock devices; the core bounces the rest
 * through host memory. */
static rt_status_t cpy_tensor(void *dst_state, const rt_tensor_t *src, rt_tensor_t *dst) {
    mockgpu_buffer_t *b = dst_state;
    const mockgpu_t *m = b->device->owner;
    if (!is_mock_buffer(m, src->buffer)) return RT_ERR_UNSUPPORTED;
    const size_t n = m->host->tensor_nbytes(src);
    memcpy(dst->data, src->data, n);
    b->device->counters.bytes_d2d += n;
    return RT_OK;
}

static rt_status_t buffer_clear(void *state, uint8_t value) {
    mockgpu_buffer_t *b = state;
    if (b->mem) memset(b->mem, value, b->size);
    return RT_OK;
}

const rt_buffer_vtable_t mockgpu_buffer_vtable = {
    .struct_size = sizeof mockgpu_buffer_vtable,
    .destroy = buffer_destroy,
    .base = buffer_base,
    .set_tensor = set_tensor,
    .get_tensor = get_tensor,
    .memset_tensor = memset_tensor,
    .cpy_tensor = cpy_tensor,
    .clear = buffer_clear,
};
