/* SPDX-License-Identifier: MIT */
/* ops.c: graph_compute for the Vulkan plugin, the one generic dispatch
 * path. The whole graph goes into one command buffer: for each node that
 * computes, ops_build.c describes a dispatch; this file binds its tensors
 * (at offsets aligned for descriptors, the rest of each offset going to the
 * shader as a push constant), records it, and submits once at the end
 * without waiting (synchronize waits on the fence). A pair of nodes that
 * ops_build.c can fuse (RMS_NORM and the MUL by its weight) is recorded as
 * one dispatch: on lavapipe a dispatch costs more than the work of a small
 * model's element-wise op, and on a GPU each is a launch and a barrier.
 *
 * Barriers: a dispatch gets a memory barrier before it only when it reads
 * bytes an earlier dispatch since the last barrier wrote (read after
 * write), or writes bytes one of them read or wrote (write after read: the
 * graph allocator reuses memory; write after write). Independent nodes run
 * without barriers between them. */
#include "vk_impl.h"

#include <string.h>

/* One tensor bound to a descriptor. */
typedef struct vk_bound {
    VkDescriptorBufferInfo info;  /* buffer, aligned offset, range up to the limit */
    uint32_t misalign;            /* bytes from info.offset to the tensor */
    rt_vk_range_t range;          /* the bytes the tensor spans */
} vk_bound_t;

static rt_status_t vk_bind_resolve(const rt_vk_device_t *dev, const rt_tensor_t *t, vk_bound_t *out) {
    const rt_vk_buffer_t *b = rt_vk_buffer_of(dev, t);
    if (!b || !t->data)
        return dev->host->set_error(RT_ERR_INVALID_ARGUMENT, "%s: %s has no data in a Vulkan%u "
                                    "buffer", __func__, t->name, dev->index);
    const size_t off = rt_vk_tensor_offset(b, t), size = dev->host->tensor_nbytes(t);
    if ((uintptr_t)t->data < b->base || off > b->size || size > b->size - off)
        return dev->host->set_error(RT_ERR_INVALID_ARGUMENT, "%s: %s: bytes [%zu, %zu) outside "
                                    "its buffer of %zu", __func__, t->name, off, off + size, b->size);
    if (off % rt_vk_type_unit(t->type) != 0)
        return dev->host->set_error(RT_ERR_UNSUPPORTED, "%s: %s: offset %zu is not a multiple of "
                                    "its element size", __func__, t->name, off);
    const size_t aligned = off / dev->bind_align * dev->bind_align;
    const size_t rest = b->vk_size - aligned, max = dev->limits.maxStorageBufferRange;
    out->info = (VkDescriptorBufferInfo){ b->buffer, aligned, rest < max ? rest : max };
    out->misalign = (uint32_t)(off - aligned);
    if (out->misalign + size > out->info.range)
        return dev->host->set_error(RT_ERR_UNSUPPORTED, "%s: %s: %zu bytes exceed one binding",
                                    __func__, t->name, size);
    out->range = (rt_vk_range_t){ b->buffer, off, off + size };
    return RT_OK;
}

//===--- hazards ---===//

static bool vk_overlaps(const rt_vk_range_set_t *s, const rt_vk_range_t *r) {
    for (uint32_t i = 0; i < s->n; i++) {
        const rt_vk_range_t *x = &s->items[i];
        if (x->buffer == r->buffer && x->begin < r->end && r->begin < x->end) return true;
    }
    return false;
}

static rt_status_t vk_range_add(const rt_host_t *host, rt_vk_range_set_t *s, const rt_vk_range_t *r) {
    if (!rt_vk_grow(host, (void **)&s->items, &s->cap, s->n + 1, sizeof s->items[0]))
        return host->set_error(RT_ERR_OUT_OF_MEMORY, "%s: no memory", __func__);
    s->items[s->n++] = *r;
    return RT_OK;
}

/* Binding i of d is written: the destination, and binding 2 of a fused
 * dispatch that has two. */
static bool vk_binding_written(const rt_vk_dispatch_t *d, int i) { return i == 3 || (i == 2 && d->write2); }

/* The tensor at bound[i]: a binding, or at i = RT_VK_N_BIND the extra one. */
#define VK_N_BOUND (RT_VK_N_BIND + 1)
static const rt_tensor_t *vk_bound_tensor(const rt_vk_dispatch_t *d, int i) {
    return i < RT_VK_N_BIND ? d->bind[i] : d->extra;
}

/* bound[i] holds something of the dispatch's: a tensor or the scratch. */
static bool vk_is_bound(const rt_vk_dispatch_t *d, int i) { return vk_bound_tensor(d, i) || d->scratch == i; }

/* Inserts a barrier when the dispatch's bindings conflict with what ran
 * since the last one, then records its reads and its write. */
static rt_status_t vk_hazards(rt_vk_queue_t *q, const rt_vk_dispatch_t *d, const vk_bound_t *bound) {
    bool conflict = false;
    for (int i = 0; i < VK_N_BOUND; i++) {
        if (!vk_is_bound(d, i)) continue;
        conflict = conflict || vk_overlaps(&q->writes, &bound[i].range) ||
                   (vk_binding_written(d, i) && vk_overlaps(&q->reads, &bound[i].range));
    }
    if (conflict) {
        rt_vk_cmd_barrier(q->dev, q->cmd);
        q->n_barriers++;
        q->reads.n = q->writes.n = 0;
    }
    rt_status_t st = RT_OK;
    for (int i = 0; st == RT_OK && i < VK_N_BOUND; i++)
        if (vk_is_bound(d, i))
            st = vk_range_add(q->dev->host, vk_binding_written(d, i) ? &q->writes : &q->reads,
                              &bound[i].range);
    return st;
}

//===--- recording one dispatch ---===//

/* Spreads n workgroups over x, y and z within the device's limits. */
static rt_status_t vk_groups(const rt_vk_device_t *dev, uint64_t n, uint32_t out[3]) {
    const uint32_t *max = dev->limits.maxComputeWorkGroupCount;
    const uint64_t x = n < max[0] ? n : max[0];
    const uint64_t rest = (n + x - 1) / x;
    const uint64_t y = rest < max[1] ? rest : max[1];
    const uint64_t z = (rest + y - 1) / y;
    if (z > max[2] || n > UINT32_MAX)
        return dev->host->set_error(RT_ERR_UNSUPPORTED, "%s: %llu workgroups is too many",
                                    __func__, (unsigned long long)n);
    out[0] = (uint32_t)x;
    out[1] = (uint32_t)y;
    out[2] = (uint32_t)z;
    return RT_OK;
}

static rt_status_t vk_descriptor_set(rt_vk_queue_t *q, const vk_bound_t *bound, VkDescriptorSet *out) {
    rt_vk_device_t *dev = q->dev;
    const VkDescriptorSetAllocateInfo info = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
        .descriptorPool = q->desc_pool,
        .descriptorSetCount = 1,
        .pSetLayouts = &dev->set_layout,
    };
    rt_status_t st = RT_VK_TRY(dev->host, dev->fn.vkAllocateDescriptorSets(dev->device, &info, out));
    if (st != RT_OK) return st;
    VkWriteDescriptorSet w[VK_N_BOUND];
    for (uint32_t i = 0; i < VK_N_BOUND; i++)
        w[i] = (VkWriteDescriptorSet){
            .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
            .dstSet = *out,
            .dstBinding = i < RT_VK_N_BIND ? i : RT_VK_BIND_EXTRA,
            .descriptorCount = 1,
            .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
            .pBufferInfo = &bound[i].info,
        };
    dev->fn.vkUpdateDescriptorSets(dev->device, VK_N_BOUND, w, 0, NULL);
    return RT_OK;
}

/* Binds d's tensors; an unused binding gets the destination (every binding
 * of the shared layout must hold a valid buffer). The extra binding's
 * offset goes to push word RT_VK_N_BIND, its type is the builder's to say. */
/* Binding i of d: its tensor, or the whole of the queue's scratch buffer
 * (F32, at offset 0). */
static rt_status_t vk_bind_one(rt_vk_queue_t *q, const rt_vk_dispatch_t *d, int i, vk_bound_t *out) {
    if (d->scratch != i) return vk_bind_resolve(q->dev, d->bind[i], out);
    *out = (vk_bound_t){ .info = { q->scratch, 0, q->scratch_size }, .misalign = 0,
                         .range = { q->scratch, 0, q->scratch_size } };
    return RT_OK;
}

static rt_status_t vk_bind_all(rt_vk_queue_t *q, rt_vk_dispatch_t *d, vk_bound_t *bound) {
    rt_status_t st = vk_bind_one(q, d, 3, &bound[3]);
    for (int i = 0; st == RT_OK && i < RT_VK_N_BIND; i++) {
        if (i < 3 && vk_is_bound(d, i)) st = vk_bind_one(q, d, i, &bound[i]);
        else if (i < 3) bound[i] = bound[3];
        d->push[i] = bound[i].misalign;
        d->spec[RT_VK_SPEC_TYPE0 + i] = d->bind[i] ? (uint32_t)d->bind[i]->type : 0;
    }
    bound[RT_VK_N_BIND] = bound[3];
    if (st == RT_OK && d->extra) {
        st = vk_bind_resolve(q->dev, d->extra, &bound[RT_VK_N_BIND]);
        d->push[RT_VK_N_BIND] = bound[RT_VK_N_BIND].misalign;
    }
    return st;
}

static rt_status_t vk_dispatch_emit(rt_vk_queue_t *q, rt_vk_dispatch_t d) {
    rt_vk_device_t *dev = q->dev;
    vk_bound_t bound[VK_N_BOUND];
    VkPipeline pipeline;
    VkDescriptorSet set;
    uint32_t groups[3] = { 0, 0, 0 };
    if (d.n_groups == 0) return RT_OK; /* nothing to do */
    rt_status_t st = vk_bind_all(q, &d, bound);
    if (st == RT_OK) st = vk_groups(dev, d.n_groups, groups);
    if (st == RT_OK) st = rt_vk_pipeline_get(dev, d.shader, d.spec, &pipeline);
    if (st == RT_OK) st = vk_descriptor_set(q, bound, &set);
    if (st == RT_OK) st = vk_hazards(q, &d, bound);
    if (st != RT_OK) return st;
    dev->fn.vkCmdBindPipeline(q->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
    dev->fn.vkCmdBindDescriptorSets(q->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, dev->pipeline_layout,
                                    0, 1, &set, 0, NULL);
    dev->fn.vkCmdPushConstants(q->cmd, dev->pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                               d.n_push * 4, d.push);
    dev->fn.vkCmdDispatch(q->cmd, groups[0], groups[1], groups[2]);
    q->n_dispatches++;
    return RT_OK;
}

static rt_status_t vk_dispatch_record(rt_vk_queue_t *q, const rt_tensor_t *node) {
    rt_vk_dispatch_t d;
    const rt_status_t st = rt_vk_dispatch_build(q->dev, node, &d);
    return st == RT_OK ? vk_dispatch_emit(q, d) : st;
}

/* One dispatch, or one per chunk of a weight too large to bind whole. */
static rt_status_t vk_node_record(rt_vk_queue_t *q, const rt_tensor_t *node) {
    const uint32_t n = rt_vk_node_dispatches(q->dev, node);
    rt_status_t st = RT_OK;
    for (uint32_t c = 0; st == RT_OK && c < n; c++) {
        rt_tensor_t views[2];
        st = vk_dispatch_record(q, rt_vk_node_chunk(q->dev, node, c, views));
    }
    return st;
}

//===--- the graph ---===//

/* The first node from i that records a dispatch (views in between record
 * none), or n_nodes. */
static int32_t vk_next_dispatching(const rt_vk_device_t *dev, rt_tensor_t *const *nodes, int32_t i,
                                   int32_t n_nodes) {
    while (i < n_nodes && rt_vk_node_dispatches(dev, nodes[i]) == 0) i++;
    return i;
}

rt_status_t rt_vk_graph_compute(void *queue, rt_tensor_t *const *nodes, int32_t n_nodes) {
    rt_vk_queue_t *q = queue;
    rt_vk_device_t *dev = q->dev;
    uint32_t n = 0;
    size_t scratch = 0;
    for (int32_t i = 0; i < n_nodes; i++) {
        n += rt_vk_node_dispatches(dev, nodes[i]);
        const size_t s = rt_vk_node_scratch(dev, nodes[i]);
        scratch = s > scratch ? s : scratch;
    }
    if (n == 0) return RT_OK;
    rt_status_t st = rt_vk_queue_begin(q, n, scratch);
    if (st != RT_OK) return st;
    /* Orders this graph after transfers and graphs submitted before it. */
    rt_vk_cmd_barrier(dev, q->cmd);
    for (int32_t i = 0; st == RT_OK && i < n_nodes; i++) {
        const int32_t j = vk_next_dispatching(dev, nodes, i + 1, n_nodes);
        if (j < n_nodes && rt_vk_fusable(dev, nodes[i], nodes[j])) {
            rt_vk_dispatch_t d;
            rt_vk_dispatch_build_fused(dev, nodes[i], nodes[j], &d);
            st = vk_dispatch_emit(q, d);
            i = j;
        } else {
            st = vk_node_record(q, nodes[i]);
        }
    }
    /* Makes the results visible to transfers and to host reads of mapped buffers. */
    rt_vk_cmd_barrier(dev, q->cmd);
    const rt_status_t end = RT_VK_TRY(dev->host, dev->fn.vkEndCommandBuffer(q->cmd));
    if (st == RT_OK) st = end;
    if (st == RT_OK) st = rt_vk_submit(dev, q->cmd, q->fence);
    q->pending = st == RT_OK;
    q->n_graphs += st == RT_OK;
    return st;
}
