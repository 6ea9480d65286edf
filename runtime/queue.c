/* SPDX-License-Identifier: MIT */
/* queue.c: rt_queue_t, an execution queue of one device. Creating one
 * normalises the options (NULL or an older, smaller struct reads as zeros)
 * before the plugin sees them. Submitting a graph first checks what the
 * plugin is promised: every node and every source has data, in a buffer
 * the device supports (or in context memory, which only a device whose
 * default buffer type is host memory can read). View-family nodes are
 * passed on too; plugins treat them as no-ops. */
#include "registry_impl.h"

#include <stdio.h>
#include <string.h>

#define QUEUE_OPTIONS_SIZE_1_0 sizeof(rt_queue_options_t) /* pinned in rt_device.h */

rt_status_t rt_queue_create(rt_device_t *dev, const rt_queue_options_t *options,
                            rt_queue_t **out_queue) {
    RT_ARMOR(dev != NULL && out_queue != NULL);
    *out_queue = NULL;
    rt_queue_options_t opt = {0};
    if (options != NULL)
        rt_struct_copy(&opt, sizeof opt, options,
                       options->struct_size != 0 ? options->struct_size : QUEUE_OPTIONS_SIZE_1_0);
    opt.struct_size = sizeof opt;
    rt_registry_t *reg = dev->registry;
    rt_queue_t *q = rt_mem_calloc(&reg->allocator, sizeof *q);
    if (q == NULL) return rt_error(RT_ERR_OUT_OF_MEMORY, "%s: no memory for a queue", dev->name);
    rt_error_snapshot_t snap;
    char what[128];
    rt_error_snapshot(&snap);
    const rt_status_t st = dev->vtable.queue_create(dev->handle, &opt, &q->handle);
    if (st != RT_OK) {
        rt_mem_free(&reg->allocator, q, sizeof *q);
        snprintf(what, sizeof what, "%s: queue_create failed", dev->name);
        return rt_plugin_failed(st, &snap, what);
    }
    q->device = dev;
    rt_registry_link(reg, &reg->queues, &q->link);
    *out_queue = q;
    return RT_OK;
}

void rt_queue_destroy(rt_queue_t *q) {
    if (q == NULL) return;
    rt_registry_t *reg = q->device->registry;
    rt_registry_unlink(reg, &q->link);
    q->device->vtable.queue_destroy(q->handle);
    rt_mem_free(&reg->allocator, q, sizeof *q);
}

rt_device_t *rt_queue_device(const rt_queue_t *q) { return q != NULL ? q->device : NULL; }

//===--- checking a graph before it is submitted ---===//

/* Why dev cannot use t's data, or NULL when it can. */
static const char *unusable(const rt_device_t *dev, const rt_tensor_t *t) {
    if (t->data == NULL) return "has no data";
    if (t->buffer == NULL)
        return rt_buffer_type_is_host(&dev->bufts[0]) ? NULL
               : "lives in context memory, which the device cannot read";
    return rt_device_supports_buft(dev, t->buffer->buft) ? NULL
           : "lives in a buffer type the device does not support";
}

static rt_status_t check_tensor(const rt_device_t *dev, const rt_tensor_t *node,
                                const rt_tensor_t *t) {
    const char *why = unusable(dev, t);
    if (why == NULL) return RT_OK;
    char a[160], b[160];
    if (t == node)
        return rt_error(RT_ERR_INVALID_ARGUMENT, "%s: node %s (%s) %s", dev->name,
                        rt_tensor_describe(t, a, sizeof a), rt_op_name(t->op), why);
    return rt_error(RT_ERR_INVALID_ARGUMENT, "%s: %s, a source of node %s (%s), %s%s%s",
                    dev->name, rt_tensor_describe(t, a, sizeof a),
                    rt_tensor_describe(node, b, sizeof b), rt_op_name(node->op), why,
                    t->buffer != NULL ? ": " : "",
                    t->buffer != NULL ? t->buffer->buft->desc.name : "");
}

static rt_status_t check_graph(const rt_device_t *dev, rt_tensor_t *const *nodes, int32_t n) {
    for (int32_t i = 0; i < n; i++) {
        rt_status_t st = check_tensor(dev, nodes[i], nodes[i]);
        for (int j = 0; j < RT_MAX_SRC && st == RT_OK; j++)
            if (nodes[i]->src[j] != NULL) st = check_tensor(dev, nodes[i], nodes[i]->src[j]);
        if (st != RT_OK) return st;
    }
    return RT_OK;
}

//===--- running ---===//

rt_status_t rt_queue_compute_async(rt_queue_t *q, const rt_graph_t *g) {
    RT_ARMOR(q != NULL && g != NULL);
    const rt_device_t *dev = q->device;
    const int32_t n = rt_graph_n_nodes(g);
    if (n == 0) return RT_OK;
    rt_tensor_t *const *nodes = rt_graph_nodes(g);
    rt_status_t st = check_graph(dev, nodes, n);
    if (st != RT_OK) return st;
    rt_error_snapshot_t snap;
    char what[128];
    rt_error_snapshot(&snap);
    st = dev->vtable.graph_compute(q->handle, nodes, n);
    if (st == RT_OK) return RT_OK;
    snprintf(what, sizeof what, "%s: graph_compute of %d nodes failed", dev->name, (int)n);
    return rt_plugin_failed(st, &snap, what);
}

rt_status_t rt_queue_synchronize(rt_queue_t *q) {
    RT_ARMOR(q != NULL);
    rt_error_snapshot_t snap;
    char what[128];
    rt_error_snapshot(&snap);
    const rt_status_t st = q->device->vtable.synchronize(q->handle);
    if (st == RT_OK) return RT_OK;
    snprintf(what, sizeof what, "%s: synchronize failed", q->device->name);
    return rt_plugin_failed(st, &snap, what);
}

rt_status_t rt_queue_compute(rt_queue_t *q, const rt_graph_t *g) {
    rt_status_t st = rt_queue_compute_async(q, g);
    if (st == RT_OK) st = rt_queue_synchronize(q);
    return st;
}
