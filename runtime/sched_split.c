/* SPDX-License-Identifier: MIT */
/* sched_split.c: the scheduler's pass 5 and its own graph. The user graph
 * is cut wherever the device of a computing node changes (and where a
 * split would read a weight it cannot use), each source a split's device
 * cannot read becomes an input with a copy on that device, and the nodes
 * that read it are pointed at the copy. Then the copies are made in the
 * scheduler's context, and the scheduler's graph is built for the gallocr:
 * per split, each input's dependency (a view that keeps the source alive
 * until the copy) and its copy, then the split's nodes; then the leafs.
 * With pipeline copies, the copies are leafs instead, INPUT and OUTPUT, so
 * they live through the whole graph and each has bytes of its own. */
#include "context_impl.h"
#include "sched_impl.h"

#include "../abi/rt_op_traits.h"

#include <string.h>

static rt_status_t no_memory(const char *what) {
    return rt_error(RT_ERR_OUT_OF_MEMORY, "rt_sched: no host memory for %s", what);
}

/* Every tensor asked about was hashed when it was assigned a device. */
static int32_t *input_index(rt_sched_t *s, const rt_tensor_t *t, int32_t d) {
    const size_t slot = rt_hash_find(&s->hash, t);
    RT_ASSERT(slot != RT_HASH_NONE && d >= 0 && d < s->n_devices);
    return &s->tensor_input[slot * (size_t)s->n_devices + (size_t)d];
}

/* A base INPUT leaf the gallocr places: with pipeline copies it gets a
 * fresh slot per run. Leafs the caller placed keep their bytes. */
static bool is_pipelined_input(const rt_sched_t *s, const rt_tensor_t *t) {
    if (s->n_copies < 2 || t->op != RT_OP_NONE || t->view_src != NULL ||
        !(t->flags & RT_TENSOR_FLAG_INPUT))
        return false;
    if (t->buffer == NULL) return t->data == NULL;
    for (int32_t d = 0; d < s->n_devices; d++)
        if (t->buffer == rt_gallocr_get_buffer(s->galloc, d)) return true;
    return false;
}

//===--- pass 5: splits and inputs ---===//

static rt_status_t open_split(rt_sched_t *s, int32_t device, int32_t i_start) {
    if (!RT_SCHED_GROW(s, s->splits, s->splits.n + 1)) return no_memory("a split");
    rt_sched_split_t *sp = &s->splits.at[s->splits.n++];
    memset(sp, 0, sizeof *sp);
    sp->device = device;
    sp->i_start = sp->i_end = i_start;
    sp->first_input = s->inputs.n;
    return RT_OK;
}

static rt_status_t add_input(rt_sched_t *s, rt_tensor_t *src, int32_t src_device, int32_t device,
                             int32_t *out_k) {
    if (!RT_SCHED_GROW(s, s->inputs, s->inputs.n + 1)) return no_memory("a split input");
    rt_sched_input_t *in = &s->inputs.at[s->inputs.n];
    memset(in, 0, sizeof *in);
    in->src = src;
    in->src_device = src_device;
    in->device = device;
    *out_k = s->inputs.n++;
    s->splits.at[s->splits.n - 1].n_inputs++;
    return RT_OK;
}

/* With pipeline copies, an INPUT leaf's own entry (on its own device). */
static rt_status_t add_graph_input(rt_sched_t *s, rt_tensor_t *t, int32_t device) {
    int32_t *k = input_index(s, t, device);
    if (*k != -1) return RT_OK;
    if (!RT_SCHED_GROW(s, s->graph_inputs, s->graph_inputs.n + 1)) return no_memory("an input");
    rt_sched_input_t *in = &s->graph_inputs.at[s->graph_inputs.n];
    memset(in, 0, sizeof *in);
    in->src = t;
    in->src_device = in->device = device;
    *k = s->graph_inputs.n++;
    return RT_OK;
}

static rt_status_t add_redirect(rt_sched_t *s, rt_tensor_t *node, int j, int32_t k) {
    if (!RT_SCHED_GROW(s, s->redirects, s->redirects.n + 1)) return no_memory("a redirect");
    s->redirects.at[s->redirects.n++] = (rt_sched_redirect_t){node, j, node->src[j], k};
    return RT_OK;
}

/* A split already reading inputs is cut before a node on its device that
 * reads a weight the device cannot use, so the weights of the splits
 * before need not stay resident at once. */
static bool weight_elsewhere(const rt_sched_t *s, const rt_tensor_t *node, int32_t cur) {
    if (s->splits.at[s->splits.n - 1].n_inputs == 0) return false;
    for (int j = 0; j < RT_MAX_SRC; j++) {
        const rt_tensor_t *src = node->src[j];
        if (src != NULL && rt_sched_is_caller_placed(s, src) && rt_sched_device_of(s, src) != cur &&
            !rt_sched_buffer_supported(s, src, cur))
            return true;
    }
    return false;
}

static rt_status_t visit_sources(rt_sched_t *s, rt_tensor_t *node, int32_t cur) {
    rt_status_t st = RT_OK;
    for (int j = 0; j < RT_MAX_SRC && st == RT_OK; j++) {
        rt_tensor_t *src = node->src[j];
        if (src == NULL) continue;
        const int32_t sd = rt_sched_device_of(s, src);
        if (is_pipelined_input(s, src)) st = add_graph_input(s, src, sd);
        if (st != RT_OK || sd == cur || rt_sched_buffer_supported(s, src, cur)) continue;
        int32_t *k = input_index(s, src, cur);
        if (*k == -1) st = add_input(s, src, sd, cur, k);
        if (st == RT_OK) st = add_redirect(s, node, j, *k);
    }
    return st;
}

/* The device of the first computing node; views alone run nowhere. */
static int32_t first_device(const rt_sched_t *s, const rt_graph_t *g) {
    for (int32_t i = 0; i < g->n_nodes; i++)
        if (!rt_op_is_view(g->nodes[i]->op)) return rt_sched_device_of(s, g->nodes[i]);
    return s->n_devices - 1;
}

static rt_status_t cut(rt_sched_t *s, rt_graph_t *g) {
    rt_sched_restore_sources(s);
    s->splits.n = s->inputs.n = s->graph_inputs.n = 0;
    if (g->n_nodes == 0) return RT_OK;
    int32_t cur = first_device(s, g);
    rt_status_t st = open_split(s, cur, 0);
    for (int32_t i = 0; i < g->n_nodes && st == RT_OK; i++) {
        rt_tensor_t *node = g->nodes[i];
        if (rt_op_is_view(node->op)) continue;
        const int32_t d = rt_sched_device_of(s, node);
        if (d != cur || weight_elsewhere(s, node, cur)) {
            s->splits.at[s->splits.n - 1].i_end = i;
            cur = d;
            st = open_split(s, cur, i);
        }
        if (st == RT_OK) st = visit_sources(s, node, cur);
    }
    if (st == RT_OK) s->splits.at[s->splits.n - 1].i_end = g->n_nodes;
    return st;
}

//===--- the copies ---===//

/* Pool bytes for the copies, the dependencies and a graph of graph_cap. */
static size_t context_bytes(const rt_sched_t *s, int32_t graph_cap) {
    const size_t n_tensors = (size_t)s->inputs.n * (size_t)(s->n_copies + 1) +
                             (size_t)s->graph_inputs.n * (size_t)s->n_copies;
    return n_tensors * rt_tensor_overhead() + rt_graph_overhead((size_t)graph_cap) +
           4 * RT_CONTEXT_ALIGN;
}

/* A fresh context over the scheduler's pool, grown when too small. */
static rt_status_t remake_context(rt_sched_t *s, size_t bytes) {
    rt_context_destroy(s->ctx);
    s->ctx = NULL;
    if (bytes > s->ctx_mem_size) {
        rt_mem_free(&s->allocator, s->ctx_mem, s->ctx_mem_size);
        s->ctx_mem_size = 0;
        s->ctx_mem = rt_mem_alloc(&s->allocator, bytes);
        if (s->ctx_mem == NULL) return no_memory("the copies' context");
        s->ctx_mem_size = bytes;
    }
    const rt_context_params_t p = {.struct_size = sizeof p, .mem_size = s->ctx_mem_size,
                                   .mem_buffer = s->ctx_mem, .no_alloc = true,
                                   .allocator = &s->allocator};
    return rt_context_create(&p, &s->ctx);
}

/* A tensor with src's type, shape and strides, so that the copy is the
 * same byte range. */
static rt_tensor_t *dup_layout(rt_sched_t *s, const rt_tensor_t *src, int32_t device, int32_t c) {
    rt_tensor_t *t = rt_new_tensor(s->ctx, src->type, RT_MAX_DIMS, src->ne);
    memcpy(t->nb, src->nb, sizeof t->nb);
    rt_format_name(t, "%s#%s#%d", rt_device_name(s->devices[device]),
                   src->name[0] ? src->name : rt_op_name(src->op), (int)c);
    if (s->n_copies > 1) t->flags |= RT_TENSOR_FLAG_INPUT | RT_TENSOR_FLAG_OUTPUT;
    return t;
}

static void make_copies(rt_sched_t *s) {
    for (int32_t k = 0; k < s->inputs.n; k++) {
        rt_sched_input_t *in = &s->inputs.at[k];
        for (int32_t c = 0; c < s->n_copies; c++) in->copies[c] = dup_layout(s, in->src, in->device, c);
    }
    for (int32_t k = 0; k < s->graph_inputs.n; k++) {
        rt_sched_input_t *in = &s->graph_inputs.at[k];
        for (int32_t c = 0; c < s->n_copies; c++)
            in->copies[c] = c == s->cur_copy ? in->src : dup_layout(s, in->src, in->device, c);
    }
    for (int32_t r = 0; r < s->redirects.n; r++) {
        const rt_sched_redirect_t *rd = &s->redirects.at[r];
        rd->node->src[rd->src] = s->inputs.at[rd->input].copies[s->cur_copy];
    }
}

void rt_sched_restore_sources(rt_sched_t *s) {
    for (int32_t r = s->redirects.n - 1; r >= 0; r--) {
        const rt_sched_redirect_t *rd = &s->redirects.at[r];
        rd->node->src[rd->src] = rd->orig;
    }
    s->redirects.n = 0;
}

//===--- the scheduler's graph ---===//

/* Adds t once (a pipelined INPUT leaf is already there as its copy). */
static void sgraph_add(rt_sched_t *s, rt_tensor_t *t, bool leaf, int32_t device) {
    rt_graph_t *g = s->sgraph;
    if (rt_hash_find(&g->visited, t) != RT_HASH_NONE) return;
    rt_hash_insert(&g->visited, t);
    if (leaf) {
        s->leaf_ids.at[g->n_leafs] = device;
        g->leafs[g->n_leafs++] = t;
    } else {
        s->node_ids.at[g->n_nodes] = device;
        g->nodes[g->n_nodes++] = t;
    }
}

static void add_pipeline_leafs(rt_sched_t *s) {
    if (s->n_copies < 2) return;
    for (int32_t k = 0; k < s->graph_inputs.n; k++)
        for (int32_t c = 0; c < s->n_copies; c++)
            sgraph_add(s, s->graph_inputs.at[k].copies[c], true, s->graph_inputs.at[k].device);
    for (int32_t k = 0; k < s->inputs.n; k++)
        for (int32_t c = 0; c < s->n_copies; c++)
            sgraph_add(s, s->inputs.at[k].copies[c], true, s->inputs.at[k].device);
}

static void add_split_nodes(rt_sched_t *s, const rt_graph_t *g, const rt_sched_split_t *sp) {
    for (int32_t k = sp->first_input; k < sp->first_input + sp->n_inputs; k++) {
        const rt_sched_input_t *in = &s->inputs.at[k];
        sgraph_add(s, rt_view_tensor(s->ctx, in->src), false, in->src_device);
        if (s->n_copies == 1) sgraph_add(s, in->copies[0], false, in->device);
    }
    for (int32_t i = sp->i_start; i < sp->i_end; i++)
        sgraph_add(s, g->nodes[i], false, rt_sched_device_of(s, g->nodes[i]));
}

static rt_status_t build_sgraph(rt_sched_t *s, const rt_graph_t *g) {
    const int32_t n_nodes = g->n_nodes + (s->n_copies == 1 ? 2 : 1) * s->inputs.n;
    const int32_t n_leafs = g->n_leafs + (s->n_copies == 1 ? 0 : s->n_copies) *
                                             (s->inputs.n + s->graph_inputs.n);
    const int32_t cap = n_nodes > n_leafs ? n_nodes : n_leafs > 0 ? n_leafs : 1;
    rt_status_t st = remake_context(s, context_bytes(s, cap));
    if (st == RT_OK && !(RT_SCHED_GROW(s, s->node_ids, cap) && RT_SCHED_GROW(s, s->leaf_ids, cap)))
        st = no_memory("the device ids");
    if (st != RT_OK) return st;
    make_copies(s);
    s->sgraph = rt_graph_create(s->ctx, (size_t)cap);
    add_pipeline_leafs(s);
    for (int32_t i = 0; i < s->splits.n; i++) add_split_nodes(s, g, &s->splits.at[i]);
    for (int32_t i = 0; i < g->n_leafs; i++)
        sgraph_add(s, g->leafs[i], true, rt_sched_device_of(s, g->leafs[i]));
    return RT_OK;
}

//===--- what each split computes ---===//

/* Every split's graph holds its computing nodes: view-family nodes compute
 * nothing, and leaving them out keeps the queue's checks to real reads. */
static rt_status_t collect_split_nodes(rt_sched_t *s, const rt_graph_t *g) {
    if (!RT_SCHED_GROW(s, s->split_nodes, g->n_nodes > 0 ? g->n_nodes : 1))
        return no_memory("the split lists");
    int32_t n = 0;
    for (int32_t i = 0; i < s->splits.n; i++) {
        rt_sched_split_t *sp = &s->splits.at[i];
        const int32_t first = n;
        for (int32_t j = sp->i_start; j < sp->i_end; j++)
            if (!rt_op_is_view(g->nodes[j]->op)) s->split_nodes.at[n++] = g->nodes[j];
        memset(&sp->graph, 0, sizeof sp->graph);
        sp->graph.size = sp->graph.n_nodes = n - first;
        sp->graph.nodes = s->split_nodes.at + first;
    }
    s->split_nodes.n = n;
    return RT_OK;
}

rt_status_t rt_sched_split_graph(rt_sched_t *s, rt_graph_t *g) {
    rt_status_t st = cut(s, g);
    if (st == RT_OK) st = build_sgraph(s, g);
    if (st == RT_OK) st = collect_split_nodes(s, g);
    if (st != RT_OK) s->splits.n = s->inputs.n = 0; /* no half-made splits in the statistics */
    return st;
}
