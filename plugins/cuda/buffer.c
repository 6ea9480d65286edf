/* SPDX-License-Identifier: MIT */
/* buffer.c: the CUDA plugin's two buffer types. "CUDAn" is device memory
 * from the device's caching allocator (pool.c); tensor->data is a device
 * address (unified addressing: never a host one). "CUDAn_Host" is pinned
 * host memory (cudaHostAlloc), flagged host: the CPU computes on it and
 * transfers from it run at full bus speed without a bounce; buffers that
 * wrap the caller's memory (mmapped weights) are registered with
 * cudaHostRegister and belong to it too.
 *
 * Ordering: the synchronous calls here go through the legacy default
 * stream and queues are created blocking (queue.c), so a set_tensor waits
 * for compute queued before it and compute queued after it sees the bytes.
 *
 * NUMA: pinned memory is placed by the driver where the allocating thread
 * runs. rt_cu_host_alloc is the one place to bind it to the device's node
 * (dev->numa_node, learnt from the core's queue placement record). */
#include "cuda_impl.h"

#include <stdio.h>
#include <string.h>

//===--- tensors in buffers ---===//

static const rt_buffer_vtable_t cu_buffer_vtable;

/* A buffer is ours when its type's table is: no other plugin's state is
 * ever read. The magic then guards against a destroyed buffer. */
rt_cu_buffer_t *rt_cu_buffer_of(const rt_host_t *host, const rt_tensor_t *t) {
    if (!t->buffer) return NULL;
    const rt_buffer_type_desc_t *d = host->buffer_type(t->buffer);
    if (!d || d->buffer_vtable != &cu_buffer_vtable) return NULL;
    rt_cu_buffer_t *b = host->buffer_state(t->buffer);
    return b && b->magic == RT_CU_BUFFER_MAGIC ? b : NULL;
}

rt_status_t rt_cu_buffer_range(const rt_cu_buffer_t *b, const rt_tensor_t *t, size_t offset,
                               size_t size) {
    const char *p = t->data;
    if (p >= b->ptr && (size_t)(p - b->ptr) <= b->size && offset <= b->size - (size_t)(p - b->ptr) &&
        size <= b->size - (size_t)(p - b->ptr) - offset)
        return RT_OK;
    return b->dev->host->set_error(RT_ERR_INVALID_ARGUMENT, "%s: %s: bytes [%zu, +%zu) outside its "
                                   "buffer of %zu bytes", __func__, t->name, offset, size, b->size);
}

static rt_status_t cu_buffer_set_tensor(void *state, rt_tensor_t *t, const void *data, size_t offset,
                                        size_t size) {
    rt_cu_buffer_t *b = state;
    rt_status_t st = rt_cu_buffer_range(b, t, offset, size);
    if (st != RT_OK || size == 0) return st;
    if (b->kind != RT_CU_MEM_DEVICE) {
        memcpy((char *)t->data + offset, data, size);
        return RT_OK;
    }
    st = rt_cu_device_use(b->dev);
    if (st == RT_OK)
        st = RT_CU_TRY(b->dev->host, cudaMemcpy((char *)t->data + offset, data, size, cudaMemcpyHostToDevice));
    return st;
}

static rt_status_t cu_buffer_get_tensor(void *state, const rt_tensor_t *t, void *data, size_t offset,
                                        size_t size) {
    rt_cu_buffer_t *b = state;
    rt_status_t st = rt_cu_buffer_range(b, t, offset, size);
    if (st != RT_OK || size == 0) return st;
    if (b->kind != RT_CU_MEM_DEVICE) {
        memcpy(data, (const char *)t->data + offset, size);
        return RT_OK;
    }
    st = rt_cu_device_use(b->dev);
    if (st == RT_OK)
        st = RT_CU_TRY(b->dev->host, cudaMemcpy(data, (const char *)t->data + offset, size, cudaMemcpyDeviceToHost));
    return st;
}

static rt_status_t cu_buffer_memset_tensor(void *state, rt_tensor_t *t, uint8_t value, size_t offset,
                                           size_t size) {
    rt_cu_buffer_t *b = state;
    rt_status_t st = rt_cu_buffer_range(b, t, offset, size);
    if (st != RT_OK || size == 0) return st;
    if (b->kind != RT_CU_MEM_DEVICE) {
        memset((char *)t->data + offset, value, size);
        return RT_OK;
    }
    st = rt_cu_device_use(b->dev);
    if (st == RT_OK) st = RT_CU_TRY(b->dev->host, cudaMemset((char *)t->data + offset, value, size));
    return st;
}

/* From any CUDA buffer (peer copies between devices included) or from host
 * memory; anything else goes through the core's host fallback. */
static rt_status_t cu_buffer_cpy_tensor(void *dst_state, const rt_tensor_t *src, rt_tensor_t *dst) {
    rt_cu_buffer_t *db = dst_state;
    const rt_host_t *host = db->dev->host;
    const rt_cu_buffer_t *sb = rt_cu_buffer_of(host, src);
    const bool from_host = !sb && src->buffer && host->buffer_is_host(src->buffer);
    if (!sb && !from_host) return RT_ERR_UNSUPPORTED;
    const size_t size = host->tensor_nbytes(src);
    rt_status_t st = rt_cu_buffer_range(db, dst, 0, size);
    if (st == RT_OK && sb) st = rt_cu_buffer_range(sb, src, 0, size);
    if (st != RT_OK || size == 0) return st;
    st = rt_cu_device_use(db->dev);
    if (st != RT_OK) return st;
    if (sb && sb->dev != db->dev && sb->kind == RT_CU_MEM_DEVICE && db->kind == RT_CU_MEM_DEVICE)
        return RT_CU_TRY(host, cudaMemcpyPeer(dst->data, db->dev->ordinal, src->data,
                                              sb->dev->ordinal, size));
    return RT_CU_TRY(host, cudaMemcpy(dst->data, src->data, size, cudaMemcpyDefault));
}

static rt_status_t cu_buffer_clear(void *state, uint8_t value) {
    rt_cu_buffer_t *b = state;
    if (b->size == 0) return RT_OK;
    if (b->kind != RT_CU_MEM_DEVICE) {
        memset(b->ptr, value, b->size);
        return RT_OK;
    }
    rt_status_t st = rt_cu_device_use(b->dev);
    if (st == RT_OK) st = RT_CU_TRY(b->dev->host, cudaMemset(b->ptr, value, b->size));
    return st;
}

static void *cu_buffer_base(void *state) { return ((rt_cu_buffer_t *)state)->ptr; }

static void cu_buffer_destroy(void *state) {
    rt_cu_buffer_t *b = state;
    if (!b || b->magic != RT_CU_BUFFER_MAGIC) return;
    if (rt_cu_device_use(b->dev) != RT_OK) (void)cudaGetLastError();
    switch (b->kind) {
    case RT_CU_MEM_DEVICE: rt_cu_pool_free(b->dev, b->ptr, b->alloc_size); break;
    case RT_CU_MEM_PINNED: cudaFreeHost(b->ptr); break;
    case RT_CU_MEM_REGISTERED: cudaHostUnregister(b->ptr); break;
    }
    (void)cudaGetLastError();
    b->magic = 0;
}

static const rt_buffer_vtable_t cu_buffer_vtable = {
    .struct_size = sizeof(rt_buffer_vtable_t),
    .destroy = cu_buffer_destroy,
    .base = cu_buffer_base,
    .init_tensor = NULL,
    .set_tensor = cu_buffer_set_tensor,
    .get_tensor = cu_buffer_get_tensor,
    .memset_tensor = cu_buffer_memset_tensor,
    .cpy_tensor = cu_buffer_cpy_tensor,
    .clear = cu_buffer_clear,
};

//===--- allocation ---===//

/* Pinned host memory for dev. The hook for NUMA placement: binding the
 * pages to dev->numa_node would go here (mmap, mbind, then
 * cudaHostRegister), once the core's topology says which node that is.
 * TODO(#8): bind when dev->numa_node >= 0; cudaHostAlloc places the pages
 * where the calling thread runs. */
static cudaError_t cu_host_alloc(const rt_cu_device_t *dev, size_t size, void **out) {
    (void)dev;
    return cudaHostAlloc(out, size, cudaHostAllocPortable);
}

static rt_status_t cu_buft_alloc(rt_cu_device_t *dev, rt_cu_buffer_kind_t kind, size_t size,
                                 void *state) {
    rt_cu_buffer_t *b = state;
    *b = (rt_cu_buffer_t){ .kind = kind, .dev = dev, .size = size };
    rt_status_t st = rt_cu_device_use(dev);
    void *ptr = NULL;
    if (st == RT_OK && kind == RT_CU_MEM_DEVICE)
        st = rt_cu_pool_alloc(dev, size, &ptr, &b->alloc_size);
    if (st == RT_OK && kind == RT_CU_MEM_PINNED) {
        const cudaError_t e = cu_host_alloc(dev, size ? size : 1, &ptr);
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            st = dev->host->set_error(RT_ERR_OUT_OF_MEMORY, "%s: CUDA%u: cannot pin %zu bytes of "
                                      "host memory: %s", __func__, dev->index, size,
                                      cudaGetErrorString(e));
        }
    }
    if (st != RT_OK) return st;
    b->ptr = ptr;
    b->magic = RT_CU_BUFFER_MAGIC;
    return RT_OK;
}

static rt_status_t cu_buft_alloc_device(void *ctx, size_t size, void *state) {
    return cu_buft_alloc(ctx, RT_CU_MEM_DEVICE, size, state);
}

static rt_status_t cu_buft_alloc_host(void *ctx, size_t size, void *state) {
    return cu_buft_alloc(ctx, RT_CU_MEM_PINNED, size, state);
}

/* The caller's memory, pinned in place; destroy unpins and frees nothing. */
rt_status_t rt_cu_buffer_from_host_ptr(void *device, void *ptr, size_t size, void *state) {
    rt_cu_device_t *dev = device;
    rt_cu_buffer_t *b = state;
    *b = (rt_cu_buffer_t){ .kind = RT_CU_MEM_REGISTERED, .dev = dev, .size = size };
    if (!ptr || !size)
        return dev->host->set_error(RT_ERR_INVALID_ARGUMENT, "%s: CUDA%u: %zu bytes at %p", __func__,
                                    dev->index, size, ptr);
    rt_status_t st = rt_cu_device_use(dev);
    if (st != RT_OK) return st;
    /* Read-only first: mmapped weights are often mapped without write access. */
    if (cudaHostRegister(ptr, size, cudaHostRegisterPortable | cudaHostRegisterReadOnly) != cudaSuccess) {
        (void)cudaGetLastError();
        st = RT_CU_TRY(dev->host, cudaHostRegister(ptr, size, cudaHostRegisterPortable));
    }
    if (st != RT_OK) return st;
    b->ptr = ptr;
    b->magic = RT_CU_BUFFER_MAGIC;
    return RT_OK;
}

/* Alignment 256: what cudaMalloc gives, and enough for 16-byte vector
 * loads and cuBLAS's tensor-core kernels at any tensor offset. */
void rt_cu_buffer_types_init(rt_cu_device_t *dev) {
    for (uint32_t k = 0; k < RT_CU_N_BUFT; k++) {
        snprintf(dev->buft_names[k], sizeof dev->buft_names[k],
                 k == RT_CU_BUFT_HOST ? "CUDA%u_Host" : "CUDA%u", dev->index);
        dev->bufts[k] = (rt_buffer_type_desc_t){
            .struct_size = sizeof(rt_buffer_type_desc_t),
            .flags = k == RT_CU_BUFT_HOST ? RT_BUFT_FLAG_HOST : 0,
            .name = dev->buft_names[k],
            .alignment = 256,
            .max_size = k == RT_CU_BUFT_HOST ? 0 : (size_t)dev->props.memory_total,
            .buffer_state_size = sizeof(rt_cu_buffer_t),
            .ctx = dev,
            .alloc = k == RT_CU_BUFT_HOST ? cu_buft_alloc_host : cu_buft_alloc_device,
            .alloc_size = NULL,
            .buffer_vtable = &cu_buffer_vtable,
        };
    }
}
