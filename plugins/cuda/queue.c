/* SPDX-License-Identifier: MIT */
/* queue.c: rt queues of the CUDA plugin, and what runs on them besides
 * graphs. A queue is one CUDA stream (created blocking, so that the
 * synchronous buffer calls on the legacy stream stay ordered with it),
 * with its scratch memory for cuBLAS conversions and its cuBLAS handle
 * (cublas.c). The async extension enqueues transfers on the stream, copies
 * between queues (of one device or two, with events ordering both sides)
 * and wraps CUDA events for the core's cross-device dependencies. */
#include "cuda_impl.h"

#include <string.h>

//===--- queues ---===//

/* The core's placement record names the device's NUMA node: kept for the
 * pinned-memory hook in buffer.c. */
static void cu_queue_placement(rt_cu_device_t *dev, const rt_queue_options_t *o) {
    if (!o || (o->struct_size != 0 && !RT_STRUCT_HAS(o, rt_queue_options_t, next))) return;
    for (const rt_ext_header_t *e = o->next; e; e = e->next) {
        if (e->type != RT_EXT_QUEUE_PLACEMENT || e->struct_size < sizeof(rt_queue_ext_placement_t))
            continue;
        dev->numa_node = ((const rt_queue_ext_placement_t *)e)->numa_node;
    }
}

static bool cu_graphs_enabled(void) {
    const char *v = rt_plugin_getenv("RT_CUDA_GRAPHS");
    return !v || strcmp(v, "0") != 0;
}

rt_status_t rt_cu_queue_create(void *device, const rt_queue_options_t *options, void **out_queue) {
    rt_cu_device_t *dev = device;
    if (out_queue) *out_queue = NULL;
    if (!dev || !out_queue) return RT_ERR_MISUSE;
    cu_queue_placement(dev, options);
    rt_cu_queue_t *q = rt_cu_alloc(dev->host, sizeof *q);
    if (!q) return dev->host->set_error(RT_ERR_OUT_OF_MEMORY, "%s: no memory", __func__);
    q->dev = dev;
    q->graphs = cu_graphs_enabled();
    rt_status_t st = rt_cu_device_use(dev);
    if (st == RT_OK) st = RT_CU_TRY(dev->host, cudaStreamCreateWithFlags(&q->stream, cudaStreamDefault));
    if (st == RT_OK)
        st = RT_CU_TRY(dev->host, cudaEventCreateWithFlags(&q->order, cudaEventDisableTiming));
    if (st != RT_OK) {
        rt_cu_queue_destroy(q);
        return st;
    }
    *out_queue = q;
    return RT_OK;
}

void rt_cu_queue_destroy(void *queue) {
    rt_cu_queue_t *q = queue;
    if (!q) return;
    if (rt_cu_device_use(q->dev) == RT_OK && q->stream) cudaStreamSynchronize(q->stream);
    rt_cu_graph_release(q);
    rt_cu_blas_release(q);
    rt_cu_pool_free(q->dev, q->scratch, q->scratch_size);
    if (q->order) cudaEventDestroy(q->order);
    if (q->stream) cudaStreamDestroy(q->stream);
    (void)cudaGetLastError();
    rt_cu_free(q->dev->host, q, sizeof *q);
}

rt_status_t rt_cu_queue_synchronize(void *queue) {
    rt_cu_queue_t *q = queue;
    if (!q) return RT_ERR_MISUSE;
    rt_status_t st = rt_cu_device_use(q->dev);
    if (st == RT_OK) st = RT_CU_TRY(q->dev->host, cudaStreamSynchronize(q->stream));
    return st;
}

rt_status_t rt_cu_queue_scratch(rt_cu_queue_t *q, size_t size) {
    if (size <= q->scratch_size) return RT_OK;
    rt_status_t st = RT_CU_TRY(q->dev->host, cudaStreamSynchronize(q->stream));
    if (st != RT_OK) return st;
    rt_cu_pool_free(q->dev, q->scratch, q->scratch_size);
    q->scratch = NULL;
    q->scratch_size = 0;
    rt_cu_graph_release(q); /* its kernels point into the old scratch */
    return rt_cu_pool_alloc(q->dev, size, &q->scratch, &q->scratch_size);
}

//===--- transfers ---===//

/* The CUDA buffer behind t, range-checked, with the device made current. */
static rt_status_t cu_async_target(rt_cu_queue_t *q, const rt_tensor_t *t, size_t offset,
                                   size_t size) {
    const rt_host_t *host = q->dev->host;
    const rt_cu_buffer_t *b = rt_cu_buffer_of(host, t);
    if (!b)
        return host->set_error(RT_ERR_INVALID_ARGUMENT, "%s: %s is not in a CUDA buffer", __func__,
                               t->name);
    const rt_status_t st = rt_cu_buffer_range(b, t, offset, size);
    return st == RT_OK ? rt_cu_device_use(q->dev) : st;
}

static rt_status_t cu_set_tensor_async(void *queue, rt_tensor_t *t, const void *data, size_t offset,
                                       size_t size) {
    rt_cu_queue_t *q = queue;
    rt_status_t st = cu_async_target(q, t, offset, size);
    if (st != RT_OK || size == 0) return st;
    return RT_CU_TRY(q->dev->host, cudaMemcpyAsync((char *)t->data + offset, data, size,
                                                   cudaMemcpyDefault, q->stream));
}

static rt_status_t cu_get_tensor_async(void *queue, const rt_tensor_t *t, void *data, size_t offset,
                                       size_t size) {
    rt_cu_queue_t *q = queue;
    rt_status_t st = cu_async_target(q, t, offset, size);
    if (st != RT_OK || size == 0) return st;
    return RT_CU_TRY(q->dev->host, cudaMemcpyAsync(data, (const char *)t->data + offset, size,
                                                   cudaMemcpyDefault, q->stream));
}

/* The copy runs on the source's stream after the destination's queue has
 * finished what it had (dst may still be read there), and the destination
 * queue waits for the copy. Both tensors must be in CUDA buffers. */
static rt_status_t cu_cpy_tensor_async(void *queue_src, void *queue_dst, const rt_tensor_t *src,
                                       rt_tensor_t *dst) {
    rt_cu_queue_t *qs = queue_src, *qd = queue_dst;
    const rt_host_t *host = qs->dev->host;
    const rt_cu_buffer_t *sb = rt_cu_buffer_of(host, src), *db = rt_cu_buffer_of(host, dst);
    if (!sb || !db) return RT_ERR_UNSUPPORTED;
    const size_t size = host->tensor_nbytes(src);
    rt_status_t st = cu_async_target(qd, dst, 0, size);
    if (st == RT_OK) st = RT_CU_TRY(host, cudaEventRecord(qd->order, qd->stream));
    if (st == RT_OK) st = cu_async_target(qs, src, 0, size);
    if (st == RT_OK) st = RT_CU_TRY(host, cudaStreamWaitEvent(qs->stream, qd->order, 0));
    if (st != RT_OK || size == 0) return st;
    if (sb->dev != db->dev && sb->kind == RT_CU_MEM_DEVICE && db->kind == RT_CU_MEM_DEVICE)
        st = RT_CU_TRY(host, cudaMemcpyPeerAsync(dst->data, db->dev->ordinal, src->data,
                                                 sb->dev->ordinal, size, qs->stream));
    else
        st = RT_CU_TRY(host, cudaMemcpyAsync(dst->data, src->data, size, cudaMemcpyDefault, qs->stream));
    if (st == RT_OK) st = RT_CU_TRY(host, cudaEventRecord(qs->order, qs->stream));
    if (st == RT_OK) st = rt_cu_device_use(qd->dev);
    if (st == RT_OK) st = RT_CU_TRY(host, cudaStreamWaitEvent(qd->stream, qs->order, 0));
    return st;
}

//===--- events ---===//

typedef struct cu_event {
    rt_cu_device_t *dev;
    cudaEvent_t event;
} cu_event_t;

static rt_status_t cu_event_create(void *device, void **out_event) {
    rt_cu_device_t *dev = device;
    *out_event = NULL;
    cu_event_t *e = rt_cu_alloc(dev->host, sizeof *e);
    if (!e) return dev->host->set_error(RT_ERR_OUT_OF_MEMORY, "%s: no memory", __func__);
    e->dev = dev;
    rt_status_t st = rt_cu_device_use(dev);
    if (st == RT_OK)
        st = RT_CU_TRY(dev->host, cudaEventCreateWithFlags(&e->event, cudaEventDisableTiming));
    if (st != RT_OK) {
        rt_cu_free(dev->host, e, sizeof *e);
        return st;
    }
    *out_event = e;
    return RT_OK;
}

static void cu_event_destroy(void *event) {
    cu_event_t *e = event;
    if (!e) return;
    if (rt_cu_device_use(e->dev) == RT_OK) cudaEventDestroy(e->event);
    (void)cudaGetLastError();
    rt_cu_free(e->dev->host, e, sizeof *e);
}

static rt_status_t cu_event_record(void *event, void *queue) {
    cu_event_t *e = event;
    rt_cu_queue_t *q = queue;
    rt_status_t st = rt_cu_device_use(q->dev);
    if (st == RT_OK) st = RT_CU_TRY(q->dev->host, cudaEventRecord(e->event, q->stream));
    return st;
}

/* The queue may be another device's: CUDA lets a stream wait on any event. */
static rt_status_t cu_event_wait(void *queue, void *event) {
    rt_cu_queue_t *q = queue;
    cu_event_t *e = event;
    rt_status_t st = rt_cu_device_use(q->dev);
    if (st == RT_OK) st = RT_CU_TRY(q->dev->host, cudaStreamWaitEvent(q->stream, e->event, 0));
    return st;
}

static rt_status_t cu_event_synchronize(void *event) {
    cu_event_t *e = event;
    return RT_CU_TRY(e->dev->host, cudaEventSynchronize(e->event));
}

void rt_cu_async_init(rt_cu_device_t *dev) {
    dev->async = (rt_device_ext_async_t){
        .header = { sizeof(rt_device_ext_async_t), RT_EXT_DEVICE_ASYNC, NULL },
        .set_tensor_async = cu_set_tensor_async,
        .get_tensor_async = cu_get_tensor_async,
        .cpy_tensor_async = cu_cpy_tensor_async,
        .event_create = cu_event_create,
        .event_destroy = cu_event_destroy,
        .event_record = cu_event_record,
        .event_wait = cu_event_wait,
        .event_synchronize = cu_event_synchronize,
    };
}
