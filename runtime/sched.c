/* SPDX-License-Identifier: MIT */
/* sched.c: rt_sched_t (abi/rt_sched.h; docs/memory.md, section 4).
 * This file owns the scheduler's lifetime (devices, queues, the gallocr
 * with one buffer per device, the per-tensor tables), the reserve / alloc /
 * compute / reset cycle, out-of-memory reporting and the statistics. The
 * passes live in sched_assign.c and sched_split.c, running the splits in
 * sched_compute.c; the layout is in sched_impl.h. */
#include "sched_impl.h"

#include <stdio.h>
#include <string.h>

#define SCHED_DEFAULT_GRAPH_SIZE 2048

static void array_free(rt_sched_t *s, void *at, int32_t cap, size_t elem) {
    rt_mem_free(&s->allocator, at, (size_t)cap * elem);
}

//===--- create, destroy ---===//

static rt_status_t check_options(const rt_sched_options_t *o) {
    if (o->devices == NULL || o->n_devices < 1 || o->n_devices > RT_SCHED_MAX_DEVICES)
        return rt_error(RT_ERR_INVALID_ARGUMENT, "rt_sched_create: %d devices, not in 1..%d",
                        (int)o->n_devices, RT_SCHED_MAX_DEVICES);
    if (o->n_copies < 0 || o->n_copies > RT_SCHED_MAX_COPIES || o->graph_size < 0)
        return rt_error(RT_ERR_INVALID_ARGUMENT, "rt_sched_create: n_copies %d (0..%d) or "
                        "graph_size %d out of range", (int)o->n_copies, RT_SCHED_MAX_COPIES,
                        (int)o->graph_size);
    for (int32_t d = 0; d < o->n_devices; d++) {
        const rt_device_t *dev = o->devices[d];
        const rt_buffer_type_t *buft = o->bufts != NULL ? o->bufts[d] : NULL;
        if (dev == NULL)
            return rt_error(RT_ERR_INVALID_ARGUMENT, "rt_sched_create: device %d is NULL", (int)d);
        if (buft != NULL && !rt_device_supports_buft(dev, buft))
            return rt_error(RT_ERR_INVALID_ARGUMENT, "rt_sched_create: %s cannot compute on "
                            "buffer type %s", dev->name, rt_buffer_type_name(buft));
    }
    return RT_OK;
}

/* The hash set and the per-slot tables, for max_keys tensors. */
static rt_status_t tables_create(rt_sched_t *s) {
    s->max_keys = 3 * s->graph_size; /* nodes, leafs and pinned tensors */
    s->hash.size = rt_hash_size(2 * (size_t)s->max_keys + 1);
    const size_t n = s->hash.size;
    s->hash.keys = rt_mem_calloc(&s->allocator, n * sizeof s->hash.keys[0]);
    s->tensor_device = rt_mem_alloc(&s->allocator, n * sizeof s->tensor_device[0]);
    s->tensor_input = rt_mem_alloc(&s->allocator, n * (size_t)s->n_devices * sizeof(int32_t));
    if (s->hash.keys == NULL || s->tensor_device == NULL || s->tensor_input == NULL)
        return rt_error(RT_ERR_OUT_OF_MEMORY, "rt_sched_create: no host memory for the tables "
                        "of %zu tensors", n);
    return RT_OK;
}

static rt_status_t queues_create(rt_sched_t *s, int32_t n_threads) {
    const rt_queue_options_t qo = {.struct_size = sizeof qo, .n_threads = n_threads};
    rt_status_t st = RT_OK;
    for (int32_t d = 0; d < s->n_devices && st == RT_OK; d++)
        st = rt_queue_create(s->devices[d], &qo, &s->queues[d]);
    return st;
}

static void fill(rt_sched_t *s, const rt_sched_options_t *o) {
    s->n_devices = o->n_devices;
    for (int32_t d = 0; d < o->n_devices; d++) {
        s->devices[d] = o->devices[d];
        s->bufts[d] = o->bufts != NULL && o->bufts[d] != NULL ? o->bufts[d]
                                                              : rt_device_buffer_type(o->devices[d], 0);
    }
    s->graph_size = o->graph_size > 0 ? o->graph_size : SCHED_DEFAULT_GRAPH_SIZE;
    s->n_copies = o->n_copies > 1 ? o->n_copies : 1;
    s->is_reset = false; /* the first reset clears the tables */
}

rt_status_t rt_sched_create(const rt_sched_options_t *options, rt_sched_t **out_sched) {
    RT_ARMOR(options != NULL && out_sched != NULL);
    *out_sched = NULL;
    rt_sched_options_t o;
    RT_COPY_IN(&o, options, rt_sched_options_t, n_threads);
    rt_status_t st = check_options(&o);
    if (st != RT_OK) return st;
    const rt_allocator_t *a = &o.devices[0]->registry->allocator;
    rt_sched_t *s = rt_mem_calloc(a, sizeof *s);
    if (s == NULL) return rt_error(RT_ERR_OUT_OF_MEMORY, "rt_sched_create: no host memory");
    s->allocator = *a;
    fill(s, &o);
    if (s->devices[s->n_devices - 1]->props.kind != RT_DEVICE_KIND_CPU)
        rt_log(RT_LOG_WARN, "rt_sched_create: the last device, %s, is no CPU; inputs start there",
               s->devices[s->n_devices - 1]->name);
    st = tables_create(s);
    if (st == RT_OK) st = queues_create(s, o.n_threads);
    if (st == RT_OK) st = rt_gallocr_create_n(s->bufts, s->n_devices, &s->galloc);
    if (st == RT_OK) st = rt_sched_events_create(s);
    if (st != RT_OK) {
        rt_sched_destroy(s);
        return st;
    }
    rt_sched_reset(s);
    *out_sched = s;
    return RT_OK;
}

void rt_sched_destroy(rt_sched_t *s) {
    if (s == NULL) return;
    for (int32_t d = 0; d < s->n_devices; d++)
        if (s->queues[d] != NULL) rt_queue_synchronize(s->queues[d]);
    rt_sched_events_destroy(s);
    for (int32_t d = 0; d < s->n_devices; d++) rt_queue_destroy(s->queues[d]);
    rt_gallocr_destroy(s->galloc);
    rt_context_destroy(s->ctx);
    rt_mem_free(&s->allocator, s->ctx_mem, s->ctx_mem_size);
    const size_t n = s->hash.size;
    rt_mem_free(&s->allocator, s->hash.keys, n * sizeof s->hash.keys[0]);
    rt_mem_free(&s->allocator, s->tensor_device, n * sizeof s->tensor_device[0]);
    rt_mem_free(&s->allocator, s->tensor_input, n * (size_t)s->n_devices * sizeof(int32_t));
    array_free(s, s->splits.at, s->splits.cap, sizeof s->splits.at[0]);
    array_free(s, s->inputs.at, s->inputs.cap, sizeof s->inputs.at[0]);
    array_free(s, s->graph_inputs.at, s->graph_inputs.cap, sizeof s->graph_inputs.at[0]);
    array_free(s, s->redirects.at, s->redirects.cap, sizeof s->redirects.at[0]);
    array_free(s, s->split_nodes.at, s->split_nodes.cap, sizeof s->split_nodes.at[0]);
    array_free(s, s->node_ids.at, s->node_ids.cap, sizeof s->node_ids.at[0]);
    array_free(s, s->leaf_ids.at, s->leaf_ids.cap, sizeof s->leaf_ids.at[0]);
    array_free(s, s->prev_node_ids.at, s->prev_node_ids.cap, sizeof s->prev_node_ids.at[0]);
    array_free(s, s->prev_leaf_ids.at, s->prev_leaf_ids.cap, sizeof s->prev_leaf_ids.at[0]);
    const rt_allocator_t a = s->allocator;
    rt_mem_free(&a, s, sizeof *s);
}

//===--- out of memory ---===//

/* The gallocr stops at the first buffer it cannot allocate: the first
 * whose plan outgrew what it holds. */
static rt_status_t report_oom(rt_sched_t *s) {
    for (int32_t d = 0; d < s->n_devices; d++) {
        const size_t peak = rt_gallocr_get_peak(s->galloc, d);
        if (peak == 0 || peak <= rt_gallocr_get_buffer_size(s->galloc, d)) continue;
        s->oom_device = s->devices[d];
        s->oom_bytes = peak;
        return rt_error_wrap(RT_ERR_OUT_OF_MEMORY, "rt_sched: device %s needs a %zu-byte compute "
                             "buffer (%s) and cannot allocate it", s->devices[d]->name, peak,
                             rt_buffer_type_name(s->bufts[d]));
    }
    return rt_error_wrap(RT_ERR_OUT_OF_MEMORY, "rt_sched");
}

static rt_status_t save_ids(rt_sched_t *s) {
    const rt_graph_t *g = s->sgraph;
    if (!RT_SCHED_GROW(s, s->prev_node_ids, g->n_nodes) ||
        !RT_SCHED_GROW(s, s->prev_leaf_ids, g->n_leafs))
        return rt_error(RT_ERR_OUT_OF_MEMORY, "rt_sched: no host memory for the device ids");
    memcpy(s->prev_node_ids.at, s->node_ids.at, (size_t)g->n_nodes * sizeof(int32_t));
    memcpy(s->prev_leaf_ids.at, s->leaf_ids.at, (size_t)g->n_leafs * sizeof(int32_t));
    s->prev_node_ids.n = g->n_nodes;
    s->prev_leaf_ids.n = g->n_leafs;
    return RT_OK;
}

/* Plans the scheduler's graph into the device buffers; remembers the
 * device ids the plan was made for. */
static rt_status_t reserve_buffers(rt_sched_t *s) {
    s->oom_device = NULL;
    s->oom_bytes = 0;
    const rt_status_t st = rt_gallocr_reserve_n(s->galloc, s->sgraph, s->node_ids.at,
                                                s->leaf_ids.at);
    if (st == RT_ERR_OUT_OF_MEMORY) return report_oom(s);
    return st == RT_OK ? save_ids(s) : st;
}

//===--- the cycle ---===//

static rt_status_t check_graph(const rt_sched_t *s, const rt_graph_t *g, const char *fn) {
    if (s->is_alloc && g != s->graph)
        return rt_error(RT_ERR_MISUSE, "%s: another graph is allocated; call rt_sched_reset "
                        "first", fn);
    return RT_OK;
}

static rt_status_t split(rt_sched_t *s, rt_graph_t *g) {
    s->is_reset = false;
    s->graph = g;
    rt_status_t st = rt_sched_assign(s, g);
    if (st == RT_OK) st = rt_sched_split_graph(s, g);
    return st;
}

rt_status_t rt_sched_reserve(rt_sched_t *s, rt_graph_t *g) {
    RT_ARMOR(s != NULL && g != NULL);
    rt_status_t st = check_graph(s, g, __func__);
    if (st == RT_OK) st = rt_sched_synchronize(s);
    if (st != RT_OK) return st;
    if (s->is_alloc) rt_sched_reset(s);
    st = split(s, g);
    if (st == RT_OK) st = reserve_buffers(s);
    rt_sched_reset(s);
    return st;
}

/* Whether a node or leaf moved to a device with another buffer type since
 * the plan was made, which the gallocr cannot see for itself. */
static bool ids_changed(const rt_sched_t *s) {
    const rt_graph_t *g = s->sgraph;
    if (g->n_nodes != s->prev_node_ids.n || g->n_leafs != s->prev_leaf_ids.n) return true;
    for (int32_t i = 0; i < g->n_nodes; i++)
        if (s->bufts[s->node_ids.at[i]] != s->bufts[s->prev_node_ids.at[i]]) return true;
    for (int32_t i = 0; i < g->n_leafs; i++) {
        const int32_t a = s->leaf_ids.at[i], b = s->prev_leaf_ids.at[i];
        if (a != b && (a < 0 || b < 0 || s->bufts[a] != s->bufts[b])) return true;
    }
    return false;
}

static rt_status_t alloc_splits(rt_sched_t *s) {
    rt_status_t st = ids_changed(s) ? RT_ERR_DOES_NOT_FIT : rt_gallocr_alloc_graph(s->galloc, s->sgraph);
    if (st != RT_ERR_DOES_NOT_FIT) return st;
    /* the buffers may move: nothing may still run in them */
    st = RT_OK;
    for (int32_t d = 0; d < s->n_devices && st == RT_OK; d++) st = rt_queue_synchronize(s->queues[d]);
    if (st == RT_OK) st = reserve_buffers(s);
    if (st == RT_OK) st = rt_gallocr_alloc_graph(s->galloc, s->sgraph);
    return st;
}

rt_status_t rt_sched_alloc_graph(rt_sched_t *s, rt_graph_t *g) {
    RT_ARMOR(s != NULL && g != NULL);
    rt_status_t st = check_graph(s, g, __func__);
    if (st != RT_OK) return st;
    if (s->is_alloc) rt_sched_reset(s);
    s->cur_copy = s->next_copy;
    s->next_copy = (s->next_copy + 1) % s->n_copies;
    st = split(s, g);
    if (st == RT_OK) st = alloc_splits(s);
    if (st != RT_OK) {
        rt_sched_reset(s);
        return st;
    }
    s->is_alloc = true;
    return RT_OK;
}

rt_status_t rt_sched_graph_compute_async(rt_sched_t *s, rt_graph_t *g) {
    RT_ARMOR(s != NULL && g != NULL);
    rt_status_t st = RT_OK;
    if (!s->is_alloc || g != s->graph) st = rt_sched_alloc_graph(s, g);
    return st == RT_OK ? rt_sched_compute_splits(s) : st;
}

rt_status_t rt_sched_graph_compute(rt_sched_t *s, rt_graph_t *g) {
    rt_status_t st = rt_sched_graph_compute_async(s, g);
    if (st == RT_OK) st = rt_sched_synchronize(s);
    return st;
}

rt_status_t rt_sched_synchronize(rt_sched_t *s) {
    RT_ARMOR(s != NULL);
    rt_status_t st = RT_OK;
    for (int32_t d = 0; d < s->n_devices && st == RT_OK; d++) st = rt_queue_synchronize(s->queues[d]);
    /* between graphs, start from copy 0 again so that decoding, one token
     * at a time, always reuses the same bytes */
    if (!s->is_alloc) s->next_copy = 0;
    return st;
}

void rt_sched_reset(rt_sched_t *s) {
    if (s == NULL) return;
    rt_sched_restore_sources(s);
    if (!s->is_reset) {
        const size_t n = s->hash.size;
        memset(s->hash.keys, 0, n * sizeof s->hash.keys[0]);
        memset(s->tensor_device, 0xff, n * sizeof s->tensor_device[0]);
        memset(s->tensor_input, 0xff, n * (size_t)s->n_devices * sizeof(int32_t));
        s->n_keys = 0;
        s->is_reset = true;
    }
    s->is_alloc = false;
    s->graph = NULL;
}

//===--- pinning ---===//

static int32_t device_index(const rt_sched_t *s, const rt_device_t *dev) {
    for (int32_t d = 0; d < s->n_devices; d++)
        if (s->devices[d] == dev) return d;
    return -1;
}

void rt_sched_set_tensor_device(rt_sched_t *s, rt_tensor_t *t, rt_device_t *dev) {
    if (s == NULL || t == NULL) return;
    const int32_t d = device_index(s, dev);
    if (d < 0 || (rt_hash_find(&s->hash, t) == RT_HASH_NONE && s->n_keys >= s->graph_size)) {
        rt_log(RT_LOG_WARN, "rt_sched_set_tensor_device: %s not pinned (%s)", t->name,
               d < 0 ? "not one of the scheduler's devices" : "too many pinned tensors");
        return;
    }
    *rt_sched_device_slot(s, t) = d;
}

rt_device_t *rt_sched_get_tensor_device(const rt_sched_t *s, const rt_tensor_t *t) {
    const int32_t d = s != NULL ? rt_sched_device_of(s, t) : -1;
    return d >= 0 ? s->devices[d] : NULL;
}

//===--- statistics ---===//

int32_t rt_sched_n_splits(const rt_sched_t *s) { return s != NULL ? s->splits.n : 0; }

int32_t rt_sched_n_copies(const rt_sched_t *s) { return s != NULL ? s->inputs.n : 0; }

size_t rt_sched_copy_bytes(const rt_sched_t *s) {
    size_t n = 0;
    for (int32_t k = 0; s != NULL && k < s->inputs.n; k++) n += rt_nbytes(s->inputs.at[k].copies[0]);
    return n;
}

int32_t rt_sched_n_devices(const rt_sched_t *s) { return s != NULL ? s->n_devices : 0; }

rt_device_t *rt_sched_device(const rt_sched_t *s, int32_t i) {
    return s != NULL && i >= 0 && i < s->n_devices ? s->devices[i] : NULL;
}

size_t rt_sched_buffer_size(const rt_sched_t *s, int32_t i) {
    return s != NULL ? rt_gallocr_get_buffer_size(s->galloc, i) : 0;
}

rt_device_t *rt_sched_last_oom(const rt_sched_t *s, size_t *out_bytes) {
    if (out_bytes != NULL) *out_bytes = s != NULL ? s->oom_bytes : 0;
    return s != NULL ? s->oom_device : NULL;
}

static void write_text(rt_write_fn write, void *user_data, const char *text, int n, size_t size) {
    if (n > 0) write(text, (size_t)n < size ? (size_t)n : size - 1, user_data);
}

static void write_split(const rt_sched_t *s, int32_t i, rt_write_fn write, void *user_data) {
    const rt_sched_split_t *sp = &s->splits.at[i];
    char line[256];
    int n = snprintf(line, sizeof line, "split %d: %s, nodes %d-%d (%d computed), %d input%s",
                     (int)i, s->devices[sp->device]->name, (int)sp->i_start, (int)sp->i_end - 1,
                     (int)sp->graph.n_nodes, (int)sp->n_inputs, sp->n_inputs == 1 ? "" : "s");
    write_text(write, user_data, line, n, sizeof line);
    for (int32_t k = sp->first_input; k < sp->first_input + sp->n_inputs; k++) {
        const rt_sched_input_t *in = &s->inputs.at[k];
        n = snprintf(line, sizeof line, "%s %s (from %s, %zu bytes)", k == sp->first_input ? ":" : ",",
                     in->copies[0]->name, s->devices[in->src_device]->name, rt_nbytes(in->copies[0]));
        write_text(write, user_data, line, n, sizeof line);
    }
    write("\n", 1, user_data);
}

void rt_sched_write_splits(const rt_sched_t *s, rt_write_fn write, void *user_data) {
    if (s == NULL || write == NULL) return;
    for (int32_t i = 0; i < s->splits.n; i++) write_split(s, i, write, user_data);
}
