/* SPDX-License-Identifier: MIT */
/* queue.c: rt_queue_t, an execution queue of one device. Creating one
 * normalises the options (NULL or an older, smaller struct reads as zeros)
 * and places the queue in the machine before the plugin sees them: a CPU
 * device given no cpu_ids gets the ones its cpu_placement picks on this
 * machine's topology, and a device whose NUMA node is known gets an
 * RT_EXT_QUEUE_PLACEMENT record naming it. Submitting a graph first checks
 * what the plugin is promised: every node and every source has data, in a
 * buffer the device supports (or in context memory, which only a device
 * whose default buffer type is host memory can read). View-family nodes
 * are passed on too; plugins treat them as no-ops. */
#include "abi_gate.h"
#include "device_impl.h"
#include "queue_impl.h"
#include "registry_impl.h"
#include "topo.h"

#include <stdio.h>
#include <string.h>


//===--- placement: where the queue's host-side work runs ---===//

/* What rt_queue_create adds to the options; lives until queue_create
 * returns (plugins copy what they keep). */
typedef struct queue_place {
    const rt_allocator_t *a;
    int32_t *cpu_ids;               /* n_cpu_ids entries */
    int32_t n_cpu_ids;
    int32_t *node_cpus;             /* n_node_cpus entries */
    int32_t n_node_cpus;
    rt_queue_ext_placement_t ext;   /* chained first on options.next when used */
} queue_place_t;

static void place_release(queue_place_t *pl) {
    rt_mem_free(pl->a, pl->cpu_ids, (size_t)pl->n_cpu_ids * sizeof pl->cpu_ids[0]);
    rt_mem_free(pl->a, pl->node_cpus, (size_t)pl->n_node_cpus * sizeof pl->node_cpus[0]);
}

/* Only the topology of this machine may be pinned to: a recorded one's ids
 * name other processors. */
static bool can_pin(const rt_topology_t *topo) {
    rt_topology_summary_t s = {.struct_size = sizeof s};
    return topo != NULL && rt_topology_get_summary(topo, &s) == RT_OK && s.available &&
           s.is_this_system;
}

/* One cycle of the placement is enough: the plugin pins worker i to
 * cpu_ids[i % n_cpu_ids], and more threads than PUs wrap the same way. */
static rt_status_t pin_workers(const rt_device_t *dev, const rt_topology_t *topo,
                               rt_queue_options_t *opt, queue_place_t *pl) {
    if (dev->props.kind != RT_DEVICE_KIND_CPU || (opt->cpu_ids != NULL && opt->n_cpu_ids > 0) ||
        !can_pin(topo))
        return RT_OK;
    const rt_cpu_placement_t placement = opt->cpu_placement != RT_CPU_PLACEMENT_DEFAULT
                                         ? opt->cpu_placement : rt_topology_default_placement();
    int32_t n_usable = 0, n = 0;
    rt_status_t st = rt_topology_place_threads(topo, placement, 0, 0, NULL, &n_usable);
    if (st != RT_OK || n_usable == 0) return st; /* NONE */
    n = opt->n_threads > 0 && opt->n_threads < n_usable ? opt->n_threads : n_usable;
    pl->cpu_ids = rt_mem_alloc(pl->a, (size_t)n * sizeof pl->cpu_ids[0]);
    if (pl->cpu_ids == NULL)
        return rt_error(RT_ERR_OUT_OF_MEMORY, "%s: no memory for %d cpu ids", dev->name, (int)n);
    pl->n_cpu_ids = n;
    st = rt_topology_place_threads(topo, placement, n, n, pl->cpu_ids, &n);
    if (st != RT_OK) return st;
    opt->cpu_ids = pl->cpu_ids;
    opt->n_cpu_ids = pl->n_cpu_ids;
    rt_log(RT_LOG_DEBUG, "%s: queue workers pinned %s, first to cpu %d of %d ids", dev->name,
           rt_cpu_placement_name(placement), (int)pl->cpu_ids[0], (int)pl->n_cpu_ids);
    return RT_OK;
}

/* The record is best effort: an unknown node simply means none. */
static rt_status_t chain_numa(const rt_device_t *dev, const rt_topology_t *topo,
                              rt_queue_options_t *opt, queue_place_t *pl) {
    const int32_t node = rt_device_numa_node(dev);
    int32_t n = 0;
    if (node < 0 || rt_topology_numa_node_cpus(topo, node, 0, NULL, &n) != RT_OK) return RT_OK;
    if (n > 0) {
        pl->node_cpus = rt_mem_alloc(pl->a, (size_t)n * sizeof pl->node_cpus[0]);
        if (pl->node_cpus == NULL)
            return rt_error(RT_ERR_OUT_OF_MEMORY, "%s: no memory for %d cpu ids", dev->name,
                            (int)n);
        pl->n_node_cpus = n;
        rt_topology_numa_node_cpus(topo, node, n, pl->node_cpus, &n);
    }
    pl->ext = (rt_queue_ext_placement_t){
        .header = {sizeof pl->ext, RT_EXT_QUEUE_PLACEMENT, opt->next},
        .numa_node = rt_topology_numa_os_index(topo, node),
        .n_node_cpu_ids = pl->n_node_cpus,
        .node_cpu_ids = pl->node_cpus,
    };
    opt->next = &pl->ext.header;
    return RT_OK;
}

static rt_status_t place_queue(const rt_device_t *dev, rt_queue_options_t *opt,
                               queue_place_t *pl) {
    if (opt->cpu_placement < 0 || opt->cpu_placement >= RT_CPU_PLACEMENT_COUNT)
        return rt_error(RT_ERR_INVALID_ARGUMENT, "%s: cpu_placement %d is not an "
                        "RT_CPU_PLACEMENT_* value", dev->name, (int)opt->cpu_placement);
    const rt_topology_t *topo = rt_topology_get_shared();
    if (topo == NULL) return RT_OK;
    rt_status_t st = pin_workers(dev, topo, opt, pl);
    if (st == RT_OK) st = chain_numa(dev, topo, opt, pl);
    return st;
}

//===--- rt_queue_t ---===//

static rt_status_t create_queue(rt_device_t *dev, const rt_queue_options_t *opt,
                                rt_queue_t **out_queue) {
    rt_registry_t *reg = dev->registry;
    rt_queue_t *q = rt_mem_calloc(&reg->allocator, sizeof *q);
    if (q == NULL) return rt_error(RT_ERR_OUT_OF_MEMORY, "%s: no memory for a queue", dev->name);
    rt_error_snapshot_t snap;
    char what[128];
    rt_error_snapshot(&snap);
    const rt_status_t st = dev->vtable.queue_create(dev->handle, opt, &q->handle);
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

rt_status_t rt_queue_create(rt_device_t *dev, const rt_queue_options_t *options,
                            rt_queue_t **out_queue) {
    RT_ARMOR(dev != NULL && out_queue != NULL);
    *out_queue = NULL;
    rt_queue_options_t opt;
    RT_COPY_IN(&opt, options, rt_queue_options_t, next);
    queue_place_t pl = {.a = &dev->registry->allocator};
    rt_status_t st = place_queue(dev, &opt, &pl);
    if (st == RT_OK) st = create_queue(dev, &opt, out_queue);
    place_release(&pl);
    return st;
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
    char d[160];
    /* A tensor whose buffer was freed would be a use after free. */
    if (t->buffer != NULL && RT_ARMOR_DEEP_FAILS(rt_registry_has_buffer(dev->registry, t->buffer)))
        return rt_error(RT_ERR_MISUSE, "%s: %s, used by node %s, lives in a buffer that was "
                        "freed", dev->name, rt_tensor_describe(t, d, sizeof d), node->name);
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

/* A node the plugin's version does not define never reaches it, whoever
 * built the graph (abi_gate.c). */
static rt_status_t check_known(const rt_device_t *dev, const rt_tensor_t *node) {
    char why[160], d[160];
    if (rt_abi_gate_node(dev->plugin->info.abi_version, node, why, sizeof why) == NULL)
        return RT_OK;
    return rt_error(RT_ERR_UNSUPPORTED, "%s: node %s (%s) not submitted: %s", dev->name,
                    rt_tensor_describe(node, d, sizeof d), rt_op_name(node->op), why);
}

static rt_status_t check_graph(const rt_device_t *dev, rt_tensor_t *const *nodes, int32_t n) {
    for (int32_t i = 0; i < n; i++) {
        rt_status_t st = check_known(dev, nodes[i]);
        if (st == RT_OK) st = check_tensor(dev, nodes[i], nodes[i]);
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
