/* SPDX-License-Identifier: MIT */
/* pool.c: the caching allocator of device memory, one per device. Freed
 * blocks are kept (up to the pool's limit) and handed out again to a later
 * request they fit without wasting more than half of themselves, so that
 * buffers and queue scratch that come and go (a compute buffer re-reserved,
 * a queue per run) do not go back to cudaMalloc and cudaFree, which
 * synchronise the whole device. Sizes are rounded up (to 256 bytes, and to
 * 2 MiB past 2 MiB) so that similar requests share blocks. When cudaMalloc
 * runs out, the cache is emptied and the allocation tried once more.
 *
 * A cached block may still be read by work queued before it was freed: the
 * core frees a buffer only after the queues that use it are synchronised
 * (rt.h), and a queue synchronises before it gives its scratch back. */
#include "cuda_impl.h"

#define RT_CU_POOL_SMALL ((size_t)256)
#define RT_CU_POOL_LARGE ((size_t)2 << 20)

bool rt_cu_pool_init(rt_cu_pool_t *pool, size_t limit) {
    *pool = (rt_cu_pool_t){ .limit = limit };
    return rt_plugin_mutex_init(&pool->lock);
}

/* Gives every cached block back to CUDA (under the lock). */
static void cu_pool_trim(rt_cu_pool_t *pool) {
    for (uint32_t i = 0; i < pool->n_free; i++) cudaFree(pool->free[i].ptr);
    pool->n_free = 0;
    pool->cached = 0;
    (void)cudaGetLastError();
}

void rt_cu_pool_deinit(const rt_host_t *host, rt_cu_pool_t *pool) {
    cu_pool_trim(pool);
    rt_cu_free(host, pool->free, pool->cap_free * sizeof pool->free[0]);
    pool->free = NULL;
    pool->cap_free = 0;
    rt_plugin_mutex_deinit(&pool->lock);
}

/* Room for more cached blocks; false when the host allocator says no. */
static bool cu_pool_grow(const rt_host_t *host, rt_cu_pool_t *pool) {
    const uint32_t cap = pool->cap_free ? pool->cap_free * 2 : 16;
    const rt_allocator_t *a = &host->allocator;
    void *p = a->realloc(a->user_data, pool->free, pool->cap_free * sizeof pool->free[0],
                         cap * sizeof pool->free[0]);
    if (!p) return false;
    pool->free = p;
    pool->cap_free = cap;
    return true;
}

static size_t cu_pool_round(size_t size) {
    const size_t unit = size > RT_CU_POOL_LARGE ? RT_CU_POOL_LARGE : RT_CU_POOL_SMALL;
    return size > SIZE_MAX - unit ? 0 : (size + unit - 1) / unit * unit;
}

/* The smallest cached block of at least size bytes and at most twice that,
 * taken out of the cache; NULL when none fits. */
static void *cu_pool_take(rt_cu_pool_t *pool, size_t size, size_t *out_size) {
    uint32_t best = UINT32_MAX;
    for (uint32_t i = 0; i < pool->n_free; i++) {
        const size_t s = pool->free[i].size;
        if (s < size || s / 2 > size) continue;
        if (best == UINT32_MAX || s < pool->free[best].size) best = i;
    }
    if (best == UINT32_MAX) return NULL;
    void *ptr = pool->free[best].ptr;
    *out_size = pool->free[best].size;
    pool->cached -= *out_size;
    pool->free[best] = pool->free[--pool->n_free];
    return ptr;
}

rt_status_t rt_cu_pool_alloc(rt_cu_device_t *dev, size_t size, void **out_ptr, size_t *out_size) {
    rt_cu_pool_t *pool = &dev->pool;
    *out_ptr = NULL;
    *out_size = cu_pool_round(size ? size : 1);
    if (*out_size == 0)
        return dev->host->set_error(RT_ERR_OUT_OF_MEMORY, "%s: CUDA%u: %zu bytes is too large",
                                    __func__, dev->index, size);
    rt_plugin_mutex_lock(&pool->lock);
    *out_ptr = cu_pool_take(pool, *out_size, out_size);
    rt_plugin_mutex_unlock(&pool->lock);
    if (*out_ptr) return RT_OK;
    cudaError_t e = cudaMalloc(out_ptr, *out_size);
    if (e == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        rt_plugin_mutex_lock(&pool->lock);
        cu_pool_trim(pool);
        rt_plugin_mutex_unlock(&pool->lock);
        e = cudaMalloc(out_ptr, *out_size);
    }
    if (e == cudaSuccess) return RT_OK;
    (void)cudaGetLastError();
    *out_ptr = NULL;
    return dev->host->set_error(e == cudaErrorMemoryAllocation ? RT_ERR_OUT_OF_MEMORY : RT_ERR_DEVICE,
                                "%s: CUDA%u (%s): cannot allocate %zu bytes: %s", __func__,
                                dev->index, dev->props.name, size, cudaGetErrorString(e));
}

/* Cached when it fits the limit and the list can grow; freed otherwise. */
void rt_cu_pool_free(rt_cu_device_t *dev, void *ptr, size_t size) {
    if (!ptr) return;
    rt_cu_pool_t *pool = &dev->pool;
    rt_plugin_mutex_lock(&pool->lock);
    bool kept = false;
    if (pool->cached + size <= pool->limit &&
        (pool->n_free < pool->cap_free || cu_pool_grow(dev->host, pool))) {
        pool->free[pool->n_free++] = (rt_cu_pool_block_t){ ptr, size };
        pool->cached += size;
        kept = true;
    }
    rt_plugin_mutex_unlock(&pool->lock);
    if (!kept && cudaFree(ptr) != cudaSuccess) (void)cudaGetLastError();
}
