/* SPDX-License-Identifier: MIT */
/* ops.c: graph_compute for the Metal plugin. The whole graph goes into one
 * command buffer with one compute encoder: for each node that computes,
 * the Vulkan plugin's ops_build.c describes the dispatch (shader, function
 * constants, bound tensors, push words, threadgroups); this file binds its
 * tensors by the convention in mtl_impl.h, sets the push words and
 * dispatches, then commits once at the end without waiting (synchronize
 * waits). The encoder is Metal's default, serial one: each dispatch sees
 * the memory the ones before it wrote, so no barriers are needed. */
#include "mtl_impl.h"

/* One tensor bound to a buffer index. */
typedef struct mtl_bound {
    id buffer;                    /* id<MTLBuffer> */
    size_t offset;                /* bytes, a multiple of RT_MTL_BIND_ALIGN */
    uint32_t misalign;            /* bytes from offset to the tensor */
} mtl_bound_t;

static rt_status_t mtl_bind_resolve(const rt_mtl_device_t *dev, const rt_tensor_t *t,
                                    mtl_bound_t *out) {
    const rt_mtl_buffer_t *b = rt_mtl_buffer_of(dev, t);
    if (!b || !t->data)
        return dev->host->set_error(RT_ERR_INVALID_ARGUMENT, "%s: %s has no data in a Metal%u "
                                    "buffer", __func__, t->name, dev->index);
    const size_t start = (size_t)((uintptr_t)t->data - b->base), size = dev->host->tensor_nbytes(t);
    if ((uintptr_t)t->data < b->base || start > b->size || size > b->size - start)
        return dev->host->set_error(RT_ERR_INVALID_ARGUMENT, "%s: %s: bytes [%zu, %zu) outside "
                                    "its buffer of %zu", __func__, t->name, start, start + size,
                                    b->size);
    const size_t off = start + b->lead;
    if (off % rt_vk_type_unit(t->type) != 0)
        return dev->host->set_error(RT_ERR_UNSUPPORTED, "%s: %s: offset %zu is not a multiple of "
                                    "its element size", __func__, t->name, off);
    out->buffer = b->buffer;
    out->offset = off / RT_MTL_BIND_ALIGN * RT_MTL_BIND_ALIGN;
    out->misalign = (uint32_t)(off - out->offset);
    return RT_OK;
}

/* Binds d's tensors (an unused source index gets the destination, as in
 * the Vulkan plugin) and fills in what the builders leave to the generic
 * path: each binding's misalignment in push word i, its type in the
 * function constants. */
static rt_status_t mtl_bind_all(const rt_mtl_device_t *dev, rt_vk_dispatch_t *d,
                                mtl_bound_t bound[RT_VK_N_BIND]) {
    rt_status_t st = mtl_bind_resolve(dev, d->bind[3], &bound[3]);
    for (int i = 0; st == RT_OK && i < RT_VK_N_BIND; i++) {
        if (i < 3 && d->bind[i]) st = mtl_bind_resolve(dev, d->bind[i], &bound[i]);
        else if (i < 3) bound[i] = bound[3];
        d->push[i] = bound[i].misalign;
        d->spec[RT_VK_SPEC_TYPE0 + i] = d->bind[i] ? (uint32_t)d->bind[i]->type : 0;
    }
    return st;
}

static rt_status_t mtl_node_encode(rt_mtl_device_t *dev, id enc, const rt_tensor_t *node) {
    rt_vk_dispatch_t d;
    mtl_bound_t bound[RT_VK_N_BIND];
    rt_mtl_pipeline_t pipe;
    rt_status_t st = rt_vk_dispatch_build(&dev->ops, node, &d);
    if (st == RT_OK && d.n_groups == 0) return RT_OK; /* nothing to do */
    if (st == RT_OK) st = mtl_bind_all(dev, &d, bound);
    if (st == RT_OK) st = rt_mtl_pipeline_get(dev, d.shader, d.spec, &pipe);
    if (st != RT_OK) return st;
    const uint32_t wg = d.spec[RT_VK_SPEC_WG];
    if (wg > pipe.max_threads || d.n_groups > UINT32_MAX)
        return dev->host->set_error(RT_ERR_UNSUPPORTED, "%s: %s: %llu threadgroups of %u threads "
                                    "(the pipeline takes %lu)", __func__, node->name,
                                    (unsigned long long)d.n_groups, wg,
                                    (unsigned long)pipe.max_threads);
    RT_OBJC(void (*)(id, SEL, id), enc, "setComputePipelineState:", pipe.state);
    for (NSUInteger i = 0; i < RT_VK_N_BIND; i++)
        RT_OBJC(void (*)(id, SEL, id, NSUInteger, NSUInteger), enc, "setBuffer:offset:atIndex:",
                bound[i].buffer, bound[i].offset, i);
    RT_OBJC(void (*)(id, SEL, const void *, NSUInteger, NSUInteger), enc,
            "setBytes:length:atIndex:", d.push, (NSUInteger)sizeof d.push,
            (NSUInteger)RT_MTL_PUSH_INDEX);
    const MTLSize groups = { (NSUInteger)d.n_groups, 1, 1 }, threads = { wg, 1, 1 };
    RT_OBJC(void (*)(id, SEL, MTLSize, MTLSize), enc, "dispatchThreadgroups:threadsPerThreadgroup:",
            groups, threads);
    return RT_OK;
}

rt_status_t rt_mtl_graph_compute(void *queue, rt_tensor_t *const *nodes, int32_t n_nodes) {
    rt_mtl_queue_t *q = queue;
    int32_t n = 0;
    for (int32_t i = 0; i < n_nodes; i++) n += rt_vk_node_dispatches(&q->dev->ops, nodes[i]) > 0;
    if (n == 0) return RT_OK;
    void *pool = rt_objc_pool_push();
    id cmd = rt_objc_id(q->queue, "commandBuffer");
    id enc = rt_objc_id(cmd, "computeCommandEncoder");
    rt_status_t st = RT_OK;
    for (int32_t i = 0; st == RT_OK && i < n_nodes; i++)
        if (rt_vk_node_dispatches(&q->dev->ops, nodes[i]) > 0)
            st = mtl_node_encode(q->dev, enc, nodes[i]);
    rt_objc_void(enc, "endEncoding");
    /* A failed graph is not committed: nothing of it runs. */
    if (st == RT_OK) rt_mtl_queue_commit(q, cmd);
    rt_objc_pool_pop(pool);
    return st;
}
