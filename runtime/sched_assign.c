/* SPDX-License-Identifier: MIT */
/* sched_assign.c: the scheduler's passes 1-4 (docs/memory.md, "The
 * scheduler"):
 * every node and leaf of a graph gets a device. (1) Tensors in a buffer and
 * readers of weights go where the bytes are, inputs to the CPU; (2) GPU
 * devices spread to unassigned neighbours down then up, then every device
 * does; (3) nodes move up to a higher-priority device with the same buffer
 * type when that copies nothing, and the nodes still unassigned go where
 * most of their sources can be read; (4) sources and views take their
 * reader's or base's device. A node only ever lands on a device that
 * supports it. The per-tensor questions every pass asks are in
 * sched_state.c. */
#include "sched_impl.h"

#include "../abi/rt_op_traits.h"

#include <string.h>

//===--- what a pass asks of a device ---===//

/* Whether device d can run t: leafs and views compute nothing. */
static bool runs(const rt_sched_t *s, int32_t d, const rt_tensor_t *t) {
    return t->op == RT_OP_NONE || rt_op_is_view(t->op) || rt_device_supports_op(s->devices[d], t);
}

//===--- pass 1: where the bytes are ---===//

/* The highest-priority device that can use t's buffer and run op, or -1. */
static int32_t device_from_buffer(const rt_sched_t *s, const rt_tensor_t *t,
                                  const rt_tensor_t *op) {
    const rt_buffer_t *buf = rt_sched_placed_buffer(s, t);
    if (buf == NULL) return -1;
    for (int32_t d = 0; d < s->n_devices; d++)
        if (rt_device_supports_buft(s->devices[d], rt_buffer_get_type(buf)) && runs(s, d, op))
            return d;
    return -1;
}

static rt_status_t unplaceable(const rt_sched_t *s, const rt_tensor_t *t) {
    char a[160];
    const char *buft = rt_buffer_type_name(rt_buffer_get_type(rt_sched_placed_buffer(s, t)));
    if (t->op == RT_OP_NONE)
        return rt_error(RT_ERR_UNSUPPORTED, "rt_sched: %s lives in buffer type %s, which none of "
                        "the scheduler's devices can use", rt_tensor_describe(t, a, sizeof a), buft);
    return rt_error(RT_ERR_UNSUPPORTED, "rt_sched: %s lives in buffer type %s, and no device of "
                    "the scheduler that can use it runs %s", rt_tensor_describe(t, a, sizeof a),
                    buft, rt_op_name(t->op));
}

/* Pass 1 for one tensor: its own buffer, its base's, INPUT (and data in
 * context memory) to the CPU, then the device of the first weight it reads.
 * ROPE is left out of the last rule: its positions are no weight. */
static rt_status_t device_from_cur(const rt_sched_t *s, const rt_tensor_t *t, int32_t *out) {
    *out = device_from_buffer(s, t, t);
    if (*out >= 0) return RT_OK;
    if (rt_sched_placed_buffer(s, t) != NULL) return unplaceable(s, t);
    const rt_tensor_t *base = t->view_src != NULL ? t->view_src : t;
    if ((t->flags & RT_TENSOR_FLAG_INPUT) || (base->buffer == NULL && base->data != NULL)) {
        *out = s->n_devices - 1;
        return RT_OK;
    }
    for (int j = 0; j < RT_MAX_SRC && t->op != RT_OP_ROPE; j++) {
        const rt_tensor_t *src = t->src[j];
        if (src == NULL || !rt_sched_is_caller_placed(s, src)) continue;
        *out = device_from_buffer(s, src, t);
        return RT_OK;
    }
    return RT_OK;
}

/* User pins (set_tensor_device) are kept. */
static rt_status_t pass_buffers(rt_sched_t *s, rt_tensor_t *const *ts, int32_t n) {
    for (int32_t i = 0; i < n; i++) {
        int32_t *d = rt_sched_device_slot(s, ts[i]);
        if (*d != -1) continue;
        const rt_status_t st = device_from_cur(s, ts[i], d);
        if (st != RT_OK) return st;
    }
    return RT_OK;
}

//===--- pass 2: spreading to neighbours ---===//

/* Walks the nodes down (or up) carrying the last device seen to the
 * unassigned nodes that it supports. gpu_only: the CPU (last device) is
 * not carried, so it only spreads in the "rest" walks. */
static void expand(rt_sched_t *s, const rt_graph_t *g, bool up, bool gpu_only) {
    int32_t cur = -1;
    for (int32_t k = 0; k < g->n_nodes; k++) {
        const rt_tensor_t *node = g->nodes[up ? g->n_nodes - 1 - k : k];
        if (rt_op_is_view(node->op)) continue;
        int32_t *d = rt_sched_device_slot(s, node);
        if (*d != -1) cur = gpu_only && *d == s->n_devices - 1 ? -1 : *d;
        else if (cur != -1 && runs(s, cur, node)) *d = cur;
    }
}

//===--- pass 3: upgrades and the leftovers ---===//

static bool reads_all_sources(const rt_sched_t *s, const rt_tensor_t *node, int32_t d) {
    for (int j = 0; j < RT_MAX_SRC; j++)
        if (node->src[j] != NULL && !rt_sched_buffer_supported(s, node->src[j], d)) return false;
    return true;
}

static int32_t readable_sources(const rt_sched_t *s, const rt_tensor_t *node, int32_t d) {
    int32_t n = 0;
    for (int j = 0; j < RT_MAX_SRC; j++) {
        const rt_tensor_t *src = node->src[j];
        if (src == NULL) continue;
        const bool known = rt_sched_device_of(s, src) != -1 ||
                           (src->view_src != NULL && rt_sched_device_of(s, src->view_src) != -1);
        n += known && rt_sched_buffer_supported(s, src, d);
    }
    return n;
}

/* An unassigned node: the supporting device that reads most sources. */
static void assign_best(rt_sched_t *s, const rt_tensor_t *node, int32_t *d) {
    int32_t best = -1;
    for (int32_t b = 0; b < s->n_devices; b++) {
        if (!runs(s, b, node)) continue;
        const int32_t n = readable_sources(s, node, b);
        if (n > best) {
            best = n;
            *d = b;
        }
    }
}

static void upgrade(rt_sched_t *s, const rt_tensor_t *node, int32_t *d) {
    for (int32_t b = 0; b < *d; b++) {
        if (s->bufts[b] == s->bufts[*d] && runs(s, b, node) && reads_all_sources(s, node, b)) {
            *d = b;
            return;
        }
    }
}

static void pass_upgrade(rt_sched_t *s, const rt_graph_t *g) {
    for (int32_t i = 0; i < g->n_nodes; i++) {
        const rt_tensor_t *node = g->nodes[i];
        if (rt_op_is_view(node->op)) continue;
        int32_t *d = rt_sched_device_slot(s, node);
        if (*d == -1) assign_best(s, node, d);
        else upgrade(s, node, d);
    }
}

//===--- pass 4: sources, views, and what supports each node ---===//

static void assign_sources(rt_sched_t *s, const rt_tensor_t *node, int32_t cur) {
    for (int j = 0; j < RT_MAX_SRC; j++) {
        const rt_tensor_t *src = node->src[j];
        if (src == NULL) continue;
        int32_t *sd = rt_sched_device_slot(s, src);
        if (*sd != -1) continue;
        *sd = src->view_src != NULL ? rt_sched_device_of(s, src->view_src) : cur;
    }
}

/* Device d, else the next device after it that runs node (wrapping), so a
 * pinned or leftover node never lands where it cannot run. */
static rt_status_t supported_device(const rt_sched_t *s, const rt_tensor_t *node, int32_t *d) {
    const int32_t start = *d < 0 ? 0 : *d;
    for (int32_t k = 0; k < s->n_devices; k++) {
        const int32_t b = (start + k) % s->n_devices;
        if (runs(s, b, node) &&
            (rt_sched_placed_buffer(s, node) == NULL || rt_sched_buffer_supported(s, node, b))) {
            *d = b;
            return RT_OK;
        }
    }
    char a[160];
    return rt_error(RT_ERR_UNSUPPORTED, "rt_sched: no device of the scheduler runs %s (%s)",
                    rt_tensor_describe(node, a, sizeof a), rt_op_name(node->op));
}

static rt_status_t pass_sources(rt_sched_t *s, const rt_graph_t *g) {
    for (int32_t i = 0; i < g->n_nodes; i++) {
        const rt_tensor_t *node = g->nodes[i];
        int32_t *d = rt_sched_device_slot(s, node);
        if (node->view_src != NULL && *d == -1) *d = rt_sched_device_of(s, node->view_src);
        assign_sources(s, node, *d);
        const rt_status_t st = supported_device(s, node, d);
        if (st != RT_OK) return st;
    }
    return RT_OK;
}

/* Leafs nothing reads keep no device otherwise: the CPU's buffer. */
static void pass_leftover_leafs(rt_sched_t *s, const rt_graph_t *g) {
    for (int32_t i = 0; i < g->n_leafs; i++) {
        int32_t *d = rt_sched_device_slot(s, g->leafs[i]);
        if (*d == -1) *d = s->n_devices - 1;
    }
}

//===--- all passes ---===//

rt_status_t rt_sched_assign(rt_sched_t *s, rt_graph_t *g) {
    if (g->n_nodes + g->n_leafs > s->max_keys - s->n_keys)
        return rt_error(RT_ERR_INVALID_ARGUMENT, "rt_sched: the graph has %d nodes and %d leafs, "
                        "more than the scheduler's graph_size %d allows", (int)g->n_nodes,
                        (int)g->n_leafs, (int)s->graph_size);
    rt_status_t st = pass_buffers(s, g->leafs, g->n_leafs);
    if (st == RT_OK) st = pass_buffers(s, g->nodes, g->n_nodes);
    if (st != RT_OK) return st;
    expand(s, g, false, true);
    expand(s, g, true, true);
    expand(s, g, false, false);
    expand(s, g, true, false);
    pass_upgrade(s, g);
    st = pass_sources(s, g);
    if (st == RT_OK) pass_leftover_leafs(s, g);
    return st;
}
