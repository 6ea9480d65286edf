/* SPDX-License-Identifier: MIT */
/* gallocr.c: the graph allocator (rt_gallocr_t, docs/memory.md §3.3).
 * reserve plans a graph with a dry run in execution order: one rt_ga_dyn_t
 * per buffer hands out offsets (best fit over free blocks, neighbours
 * merged), use counts free a block after its last reader (views count for
 * their base), and elementwise ops take over a source's block in place. It
 * records the plan and allocates each buffer at its peak. alloc_graph
 * checks that a graph fits the plan and points its tensors at their slots.
 * The rules themselves are documented in abi/rt_alloc.h. */
#include "gallocr_impl.h"
#include "graph_impl.h"
#include "device_impl.h"
#include "registry_impl.h"

#include "../abi/rt_op_traits.h"

#include <stdio.h>
#include <string.h>

/* Per tensor state of one dry run, by plan index. */
typedef struct rt_ga_tinfo {
    rt_tensor_t *t;
    int32_t n_children; /* reads by nodes not placed yet */
    int32_t n_views;    /* views of it whose readers are not all placed */
    int32_t buffer_id;  /* where it goes; -1 when not ours */
    size_t offset;      /* of its block while allocated, bytes */
    size_t size;        /* of its block while allocated, bytes */
    bool ours;          /* the gallocr places it */
    bool allocated;     /* owns a block now */
    bool keep;          /* never freed: an OUTPUT, or viewed by an OUTPUT view */
} rt_ga_tinfo_t;

//===--- the dry-run allocator ---===//

static void dyn_remove(rt_ga_dyn_t *d, int32_t i) {
    memmove(&d->free[i], &d->free[i + 1], (size_t)(d->n_free - i - 1) * sizeof d->free[0]);
    d->n_free--;
}

/* The smallest free block of at least size bytes (lowest offset on ties). */
static int32_t dyn_best_fit(const rt_ga_dyn_t *d, size_t size) {
    int32_t best = -1;
    for (int32_t i = 0; i < d->n_free; i++)
        if (d->free[i].size >= size && (best < 0 || d->free[i].size < d->free[best].size))
            best = i;
    return best;
}

static size_t dyn_alloc(rt_ga_dyn_t *d, size_t size) {
    d->live += size;
    if (d->live > d->max_live) d->max_live = d->live;
    const int32_t i = dyn_best_fit(d, size);
    if (i < 0) { /* nothing below top fits: grow */
        const size_t offset = d->top;
        d->top += size;
        if (d->top > d->peak) d->peak = d->top;
        return offset;
    }
    const size_t offset = d->free[i].offset;
    d->free[i].offset += size;
    d->free[i].size -= size;
    if (d->free[i].size == 0) dyn_remove(d, i);
    return offset;
}

static void dyn_insert(rt_ga_dyn_t *d, int32_t i, size_t offset, size_t size) {
    /* At most one free block per live block plus one: reserve sized it. */
    RT_CHECK((size_t)d->n_free < d->cap_free, "gallocr: free list full (%d blocks)",
             (int)d->n_free);
    memmove(&d->free[i + 1], &d->free[i], (size_t)(d->n_free - i) * sizeof d->free[0]);
    d->free[i] = (rt_ga_block_t){offset, size};
    d->n_free++;
}

/* Returns [offset, offset + size) to the free list, merging it with the
 * blocks next to it and with the free space above top. */
static void dyn_free(rt_ga_dyn_t *d, size_t offset, size_t size) {
    if (size == 0) return;
    d->live -= size;
    if (offset + size == d->top) {
        d->top = offset;
        rt_ga_block_t *last = d->n_free > 0 ? &d->free[d->n_free - 1] : NULL;
        if (last != NULL && last->offset + last->size == d->top) {
            d->top = last->offset;
            d->n_free--;
        }
        return;
    }
    int32_t i = 0;
    while (i < d->n_free && d->free[i].offset < offset) i++;
    const bool prev = i > 0 && d->free[i - 1].offset + d->free[i - 1].size == offset;
    const bool next = i < d->n_free && offset + size == d->free[i].offset;
    if (prev && next) {
        d->free[i - 1].size += size + d->free[i].size;
        dyn_remove(d, i);
    } else if (prev) {
        d->free[i - 1].size += size;
    } else if (next) {
        d->free[i].offset = offset;
        d->free[i].size += size;
    } else {
        dyn_insert(d, i, offset, size);
    }
}

//===--- create, destroy ---===//

/* Scratch arrays are rebuilt by every reserve, so growing one need not
 * keep its contents: free, then allocate at least n (doubling). */
static bool regrow(rt_gallocr_t *ga, void **arr, size_t *cap, size_t n, size_t elem) {
    if (n <= *cap) return true;
    const size_t want = n > 2 * *cap ? n : 2 * *cap;
    rt_mem_free(&ga->allocator, *arr, *cap * elem);
    *arr = rt_mem_alloc(&ga->allocator, want * elem);
    *cap = *arr != NULL ? want : 0;
    return *arr != NULL;
}

rt_status_t rt_gallocr_create_n(rt_buffer_type_t *const *bufts, int32_t n_buffers,
                                rt_gallocr_t **out_galloc) {
    RT_ARMOR(out_galloc != NULL);
    *out_galloc = NULL;
    if (bufts == NULL || n_buffers <= 0)
        return rt_error(RT_ERR_INVALID_ARGUMENT, "%s: %d buffer types", __func__, (int)n_buffers);
    for (int32_t i = 0; i < n_buffers; i++)
        if (bufts[i] == NULL)
            return rt_error(RT_ERR_INVALID_ARGUMENT, "%s: buffer type %d is NULL", __func__, (int)i);
    const rt_allocator_t *a = &bufts[0]->device->registry->allocator;
    rt_gallocr_t *ga = rt_mem_calloc(a, sizeof *ga);
    if (ga == NULL) return rt_error(RT_ERR_OUT_OF_MEMORY, "%s: no memory", __func__);
    ga->allocator = *a;
    ga->n_buffers = n_buffers;
    ga->bufts = rt_mem_calloc(a, (size_t)n_buffers * sizeof ga->bufts[0]);
    ga->buffers = rt_mem_calloc(a, (size_t)n_buffers * sizeof ga->buffers[0]);
    ga->dyns = rt_mem_calloc(a, (size_t)n_buffers * sizeof ga->dyns[0]);
    if (ga->bufts == NULL || ga->buffers == NULL || ga->dyns == NULL) {
        rt_gallocr_destroy(ga);
        return rt_error(RT_ERR_OUT_OF_MEMORY, "%s: no memory for %d buffers", __func__,
                        (int)n_buffers);
    }
    memcpy(ga->bufts, bufts, (size_t)n_buffers * sizeof ga->bufts[0]);
    *out_galloc = ga;
    return RT_OK;
}

rt_status_t rt_gallocr_create(rt_buffer_type_t *buft, rt_gallocr_t **out_galloc) {
    return rt_gallocr_create_n(&buft, 1, out_galloc);
}

void rt_gallocr_destroy(rt_gallocr_t *ga) {
    if (ga == NULL) return;
    const rt_allocator_t a = ga->allocator;
    const size_t n = (size_t)ga->n_buffers;
    for (size_t i = 0; i < n; i++) {
        if (ga->buffers != NULL) rt_buffer_free(ga->buffers[i]);
        if (ga->dyns != NULL)
            rt_mem_free(&a, ga->dyns[i].free, ga->dyns[i].cap_free * sizeof(rt_ga_block_t));
    }
    rt_mem_free(&a, ga->bufts, n * sizeof ga->bufts[0]);
    rt_mem_free(&a, ga->buffers, n * sizeof ga->buffers[0]);
    rt_mem_free(&a, ga->dyns, n * sizeof ga->dyns[0]);
    rt_mem_free(&a, ga->plan, ga->cap_plan * sizeof ga->plan[0]);
    rt_mem_free(&a, ga->info, ga->cap_info * sizeof ga->info[0]);
    rt_mem_free(&a, ga->slot_plan, ga->cap_slots * sizeof ga->slot_plan[0]);
    rt_mem_free(&a, ga, sizeof *ga);
}

void rt_gallocr_set_flags(rt_gallocr_t *ga, uint32_t flags) {
    if (ga != NULL) ga->flags = flags;
}

//===--- which tensors are ours ---===//

static bool is_our_buffer(const rt_gallocr_t *ga, const rt_buffer_t *buf) {
    if (buf == NULL) return false;
    for (int32_t i = 0; i < ga->n_buffers; i++)
        if (ga->buffers[i] == buf) return true;
    return false;
}

/* A base tensor the gallocr gives bytes: no data yet, or data it gave. */
static bool needs_place(const rt_gallocr_t *ga, const rt_tensor_t *t) {
    return t->view_src == NULL && (t->data == NULL || is_our_buffer(ga, t->buffer));
}

static size_t block_size(const rt_gallocr_t *ga, int32_t buffer_id, const rt_tensor_t *t) {
    const rt_buffer_type_t *buft = ga->bufts[buffer_id];
    return rt_align_up(rt_buffer_type_alloc_size(buft, t), rt_buffer_type_alignment(buft));
}

//===--- planning: setup ---===//

static int32_t plan_index(const rt_gallocr_t *ga, const rt_graph_t *g, const rt_tensor_t *t) {
    const size_t slot = t != NULL ? rt_hash_find(&g->visited, t) : RT_HASH_NONE;
    return slot == RT_HASH_NONE ? -1 : ga->slot_plan[slot];
}

static rt_status_t ensure_capacity(rt_gallocr_t *ga, const rt_graph_t *g) {
    const size_t n = (size_t)g->n_leafs + (size_t)g->n_nodes;
    bool ok = regrow(ga, (void **)&ga->plan, &ga->cap_plan, n, sizeof ga->plan[0]) &&
              regrow(ga, (void **)&ga->info, &ga->cap_info, n, sizeof ga->info[0]) &&
              regrow(ga, (void **)&ga->slot_plan, &ga->cap_slots, g->visited.size,
                     sizeof ga->slot_plan[0]);
    for (int32_t b = 0; ok && b < ga->n_buffers; b++)
        ok = regrow(ga, (void **)&ga->dyns[b].free, &ga->dyns[b].cap_free, n + 1,
                    sizeof(rt_ga_block_t));
    if (!ok)
        return rt_error(RT_ERR_OUT_OF_MEMORY, "gallocr: no host memory to plan %zu tensors", n);
    return RT_OK;
}

static rt_status_t check_ids(const rt_gallocr_t *ga, const rt_graph_t *g,
                             const int32_t *node_ids, const int32_t *leaf_ids) {
    for (int32_t i = 0; node_ids != NULL && i < g->n_nodes; i++)
        if (node_ids[i] < 0 || node_ids[i] >= ga->n_buffers)
            return rt_error(RT_ERR_INVALID_ARGUMENT, "gallocr: node %d '%s' has buffer id %d, "
                            "not in 0..%d", (int)i, g->nodes[i]->name, (int)node_ids[i],
                            (int)ga->n_buffers - 1);
    for (int32_t i = 0; leaf_ids != NULL && i < g->n_leafs; i++)
        if (leaf_ids[i] >= ga->n_buffers)
            return rt_error(RT_ERR_INVALID_ARGUMENT, "gallocr: leaf %d '%s' has buffer id %d, "
                            "not below %d", (int)i, g->leafs[i]->name, (int)leaf_ids[i],
                            (int)ga->n_buffers);
    return RT_OK;
}

static void entry_init(rt_gallocr_t *ga, int32_t p, rt_tensor_t *t, int32_t index, bool leaf,
                       int32_t buffer_id) {
    rt_gallocr_plan_entry_t *e = &ga->plan[p];
    memset(e, 0, sizeof *e);
    e->struct_size = sizeof *e;
    e->flags = (leaf ? RT_GALLOCR_PLAN_LEAF : 0) |
               (t->view_src != NULL ? RT_GALLOCR_PLAN_VIEW : 0) |
               ((t->flags & RT_TENSOR_FLAG_INPUT) ? RT_GALLOCR_PLAN_INPUT : 0) |
               ((t->flags & RT_TENSOR_FLAG_OUTPUT) ? RT_GALLOCR_PLAN_OUTPUT : 0);
    e->buffer_id = -1;
    e->index = index;
    e->first = leaf ? -1 : index;
    e->last = -1;
    e->base = -1;
    e->inplace_of = -1;
    e->op = t->op;
    e->type = t->type;
    memcpy(e->name, t->name, sizeof e->name);
    e->name[sizeof e->name - 1] = 0;
    rt_ga_tinfo_t *ti = &ga->info[p];
    memset(ti, 0, sizeof *ti);
    ti->t = t;
    ti->ours = buffer_id >= 0 && needs_place(ga, t);
    ti->buffer_id = ti->ours ? buffer_id : -1;
    /* A leaf without INPUT is a constant the application sets once. */
    ti->keep = (t->flags & RT_TENSOR_FLAG_OUTPUT) || (leaf && !(t->flags & RT_TENSOR_FLAG_INPUT));
}

/* The hash slot of a tensor of g: every leaf and node was visited when it
 * was added (graph.c). */
static size_t slot_of(const rt_graph_t *g, const rt_tensor_t *t) {
    const size_t slot = rt_hash_find(&g->visited, t);
    RT_ASSERT(slot != RT_HASH_NONE);
    return slot;
}

/* Indexes every tensor, links views to their base and counts readers. */
static rt_status_t plan_setup(rt_gallocr_t *ga, rt_graph_t *g, const int32_t *node_ids,
                              const int32_t *leaf_ids) {
    memset(ga->slot_plan, 0xff, g->visited.size * sizeof ga->slot_plan[0]);
    const int32_t nl = g->n_leafs;
    for (int32_t i = 0; i < nl; i++) {
        entry_init(ga, i, g->leafs[i], i, true, leaf_ids != NULL ? leaf_ids[i] : 0);
        ga->slot_plan[slot_of(g, g->leafs[i])] = i;
    }
    for (int32_t i = 0; i < g->n_nodes; i++) {
        entry_init(ga, nl + i, g->nodes[i], i, false, node_ids != NULL ? node_ids[i] : 0);
        ga->slot_plan[slot_of(g, g->nodes[i])] = nl + i;
    }
    for (int32_t p = 0; p < nl + g->n_nodes; p++) {
        const rt_tensor_t *t = ga->info[p].t;
        const int32_t b = ga->plan[p].base = plan_index(ga, g, t->view_src);
        if (b >= 0 && p >= nl) ga->info[b].n_views++;
        if (b >= 0 && (t->flags & RT_TENSOR_FLAG_OUTPUT)) {
            ga->info[b].keep = true;
            ga->plan[b].flags |= RT_GALLOCR_PLAN_OUTPUT;
        }
        for (int s = 0; s < RT_MAX_SRC; s++) {
            if (t->src[s] == NULL) continue;
            const int32_t sp = plan_index(ga, g, t->src[s]);
            if (sp < 0)
                return rt_error(RT_ERR_INVALID_ARGUMENT, "gallocr: source %d of '%s' is not in "
                                "the graph (changed after build_forward_expand?)", s, t->name);
            ga->info[sp].n_children++;
        }
    }
    return RT_OK;
}

//===--- planning: the dry run ---===//

static void alloc_block(rt_gallocr_t *ga, int32_t p, int32_t at) {
    rt_ga_tinfo_t *ti = &ga->info[p];
    rt_gallocr_plan_entry_t *e = &ga->plan[p];
    ti->size = block_size(ga, ti->buffer_id, ti->t);
    ti->offset = dyn_alloc(&ga->dyns[ti->buffer_id], ti->size);
    ti->allocated = true;
    e->buffer_id = ti->buffer_id;
    e->offset = ti->offset;
    e->size = ti->size;
    e->first = at;
}

static void free_block(rt_gallocr_t *ga, int32_t p, int32_t at) {
    rt_ga_tinfo_t *ti = &ga->info[p];
    if (!ti->allocated || ti->keep || (ga->flags & RT_GALLOCR_FLAG_NO_FREE)) return;
    dyn_free(&ga->dyns[ti->buffer_id], ti->offset, ti->size);
    ti->allocated = false;
    ga->plan[p].last = at;
}

static bool same_layout(const rt_tensor_t *a, const rt_tensor_t *b) {
    if (a->type != b->type) return false;
    for (int i = 0; i < RT_MAX_DIMS; i++)
        if (a->ne[i] != b->ne[i] || a->nb[i] != b->nb[i]) return false;
    return true;
}

/* The plan index of the block node p may take over from source sp, or -1. */
static int32_t inplace_block(const rt_gallocr_t *ga, int32_t p, int32_t sp) {
    const rt_ga_tinfo_t *node = &ga->info[p], *src = &ga->info[sp];
    const int32_t bp = src->t->view_src != NULL ? ga->plan[sp].base : sp;
    if (bp < 0) return -1;
    const rt_ga_tinfo_t *base = &ga->info[bp];
    const uint32_t never = RT_GALLOCR_PLAN_LEAF | RT_GALLOCR_PLAN_INPUT | RT_GALLOCR_PLAN_OUTPUT;
    if (!base->allocated || base->keep || (ga->plan[bp].flags & never) ||
        (src->t->flags & (RT_TENSOR_FLAG_INPUT | RT_TENSOR_FLAG_OUTPUT)) ||
        base->buffer_id != node->buffer_id || !same_layout(node->t, src->t) ||
        src->n_children != 1 || src->n_views != 0)
        return -1;
    if (bp != sp && (base->n_views != 1 || base->n_children != 0 || src->t->view_offs != 0))
        return -1;
    return bp;
}

static bool try_inplace(rt_gallocr_t *ga, rt_graph_t *g, int32_t p, int32_t at) {
    const rt_tensor_t *t = ga->info[p].t;
    if ((ga->flags & RT_GALLOCR_FLAG_NO_INPLACE) || !rt_op_can_inplace(t->op)) return false;
    const int n_src = rt_op_inplace_any_src(t->op) ? RT_MAX_SRC : 1;
    for (int s = 0; s < n_src; s++) {
        const int32_t bp = t->src[s] != NULL ? inplace_block(ga, p, plan_index(ga, g, t->src[s])) : -1;
        if (bp < 0) continue;
        rt_ga_tinfo_t *ti = &ga->info[p], *base = &ga->info[bp];
        ti->offset = base->offset;
        ti->size = base->size;
        ti->allocated = true;
        base->allocated = false;
        ga->plan[bp].last = at;
        rt_gallocr_plan_entry_t *e = &ga->plan[p];
        e->flags |= RT_GALLOCR_PLAN_INPLACE;
        e->inplace_of = bp;
        e->buffer_id = ti->buffer_id;
        e->offset = ti->offset;
        e->size = ti->size;
        e->first = at;
        return true;
    }
    return false;
}

/* Node `at` has read source sp: once nothing else will, free its block (a
 * view's block is its base's, freed after the base's last view). */
static void release_src(rt_gallocr_t *ga, int32_t sp, int32_t at) {
    rt_ga_tinfo_t *src = &ga->info[sp];
    rt_gallocr_plan_entry_t *e = &ga->plan[sp];
    if (e->first < 0) e->first = at;
    e->last = at;
    if (--src->n_children > 0 || src->n_views > 0) return;
    if (src->t->view_src == NULL) {
        free_block(ga, sp, at);
        return;
    }
    const int32_t bp = e->base;
    if (bp >= 0 && --ga->info[bp].n_views == 0 && ga->info[bp].n_children == 0)
        free_block(ga, bp, at);
}

/* Inputs first (INPUT leafs, then other leafs we place, then INPUT
 * nodes): they are written before the graph runs, so they live from 0. */
static void alloc_inputs(rt_gallocr_t *ga, const rt_graph_t *g) {
    const int32_t nl = g->n_leafs, n = nl + g->n_nodes;
    for (int pass = 0; pass < 3; pass++) {
        for (int32_t p = pass < 2 ? 0 : nl; p < (pass < 2 ? nl : n); p++) {
            const bool input = (ga->plan[p].flags & RT_GALLOCR_PLAN_INPUT) != 0;
            if (ga->info[p].ours && !ga->info[p].allocated && (pass == 1 ? !input : input))
                alloc_block(ga, p, 0);
        }
    }
}

static void plan_views_and_ends(rt_gallocr_t *ga, const rt_graph_t *g) {
    const int32_t n = g->n_leafs + g->n_nodes, end = g->n_nodes > 0 ? g->n_nodes - 1 : 0;
    for (int32_t p = 0; p < n; p++) {
        rt_gallocr_plan_entry_t *e = &ga->plan[p];
        if (e->first < 0) e->first = 0;
        if (ga->info[p].allocated || e->last < 0) e->last = end; /* live to the end */
        if (e->base < 0 || ga->plan[e->base].buffer_id < 0) continue;
        e->buffer_id = ga->plan[e->base].buffer_id;
        e->offset = ga->plan[e->base].offset + ga->info[p].t->view_offs;
        e->size = rt_nbytes(ga->info[p].t);
    }
}

static void plan_run(rt_gallocr_t *ga, rt_graph_t *g) {
    for (int32_t b = 0; b < ga->n_buffers; b++) {
        ga->dyns[b].n_free = 0;
        ga->dyns[b].top = ga->dyns[b].peak = 0;
        ga->dyns[b].live = ga->dyns[b].max_live = 0;
    }
    alloc_inputs(ga, g);
    const int32_t nl = g->n_leafs;
    for (int32_t i = 0; i < g->n_nodes; i++) {
        const int32_t p = nl + i;
        rt_ga_tinfo_t *ti = &ga->info[p];
        if (ti->ours && !ti->allocated && !try_inplace(ga, g, p, i)) alloc_block(ga, p, i);
        for (int s = 0; s < RT_MAX_SRC; s++)
            if (ti->t->src[s] != NULL) release_src(ga, plan_index(ga, g, ti->t->src[s]), i);
    }
    plan_views_and_ends(ga, g);
}

//===--- reserve ---===//

/* Tensors of g placed in a buffer about to be replaced lose their data, so
 * that alloc_graph places them again rather than take them for foreign. */
static void forget_placements(rt_gallocr_t *ga, rt_graph_t *g) {
    for (int32_t p = 0; p < g->n_leafs + g->n_nodes; p++) {
        rt_tensor_t *t = ga->info[p].t;
        if (t->data != NULL && is_our_buffer(ga, t->buffer)) {
            t->data = NULL;
            t->buffer = NULL;
        }
    }
}

static rt_status_t alloc_buffer(rt_gallocr_t *ga, int32_t b) {
    const size_t peak = ga->dyns[b].peak;
    if (peak == 0 || (ga->buffers[b] != NULL && rt_buffer_size(ga->buffers[b]) >= peak))
        return RT_OK;
    rt_buffer_type_t *buft = ga->bufts[b];
    if (peak > rt_buffer_type_max_size(buft))
        return rt_error(RT_ERR_OUT_OF_MEMORY, "gallocr: buffer %d needs %zu bytes, more than "
                        "the largest buffer of type %s (%zu bytes)", (int)b, peak,
                        rt_buffer_type_name(buft), rt_buffer_type_max_size(buft));
    rt_buffer_free(ga->buffers[b]);
    ga->buffers[b] = NULL;
    const rt_status_t st = rt_buffer_alloc(buft, peak, &ga->buffers[b]);
    if (st != RT_OK)
        return rt_error_wrap(st, "gallocr: buffer %d of type %s, %zu bytes", (int)b,
                             rt_buffer_type_name(buft), peak);
    ga->n_allocs++;
    return RT_OK;
}

rt_status_t rt_gallocr_reserve_n(rt_gallocr_t *ga, rt_graph_t *g, const int32_t *node_ids,
                                 const int32_t *leaf_ids) {
    RT_ARMOR(ga != NULL && g != NULL);
    rt_status_t st = check_ids(ga, g, node_ids, leaf_ids);
    if (st != RT_OK) return st;
    ga->reserved = ga->planned = false;
    st = ensure_capacity(ga, g);
    if (st != RT_OK) return st;
    ga->n_leafs = g->n_leafs;
    ga->n_nodes = g->n_nodes;
    st = plan_setup(ga, g, node_ids, leaf_ids);
    if (st != RT_OK) return st;
    plan_run(ga, g);
    ga->planned = true;
    forget_placements(ga, g);
    for (int32_t b = 0; st == RT_OK && b < ga->n_buffers; b++) st = alloc_buffer(ga, b);
    ga->explicit_leaf_ids = false;
    for (int32_t i = 0; leaf_ids != NULL && i < g->n_leafs; i++)
        ga->explicit_leaf_ids |= leaf_ids[i] < 0;
    ga->reserved = st == RT_OK;
    return st;
}

rt_status_t rt_gallocr_reserve(rt_gallocr_t *ga, rt_graph_t *g) {
    return rt_gallocr_reserve_n(ga, g, NULL, NULL);
}

//===--- alloc_graph ---===//

static rt_status_t slot_fits(const rt_gallocr_t *ga, const rt_tensor_t *t,
                             const rt_gallocr_plan_entry_t *e) {
    const char *what = (e->flags & RT_GALLOCR_PLAN_LEAF) ? "leaf" : "node";
    if ((t->view_src != NULL) != ((e->flags & RT_GALLOCR_PLAN_VIEW) != 0))
        return rt_error(RT_ERR_DOES_NOT_FIT, "gallocr: %s %d '%s' is %sa view, its slot '%s' "
                        "is %s", what, (int)e->index, t->name, t->view_src ? "" : "not ",
                        e->name, t->view_src ? "not" : "one");
    if (!needs_place(ga, t)) return RT_OK;
    if (e->buffer_id < 0) {
        if (e->flags & RT_GALLOCR_PLAN_LEAF) return RT_OK; /* the caller's to place */
        return rt_error(RT_ERR_DOES_NOT_FIT, "gallocr: node %d '%s' needs bytes, its slot '%s' "
                        "had data of its own", (int)e->index, t->name, e->name);
    }
    const size_t need = block_size(ga, e->buffer_id, t);
    if (need > e->size)
        return rt_error(RT_ERR_DOES_NOT_FIT, "gallocr: %s %d '%s' needs %zu bytes, its slot "
                        "'%s' has %zu", what, (int)e->index, t->name, need, e->name, e->size);
    return RT_OK;
}

static rt_status_t check_fit(const rt_gallocr_t *ga, const rt_graph_t *g) {
    if (!ga->reserved) return rt_error(RT_ERR_DOES_NOT_FIT, "gallocr: nothing reserved yet");
    if (g->n_nodes != ga->n_nodes || g->n_leafs != ga->n_leafs)
        return rt_error(RT_ERR_DOES_NOT_FIT, "gallocr: the graph has %d nodes and %d leafs, "
                        "the plan %d and %d", (int)g->n_nodes, (int)g->n_leafs,
                        (int)ga->n_nodes, (int)ga->n_leafs);
    rt_status_t st = RT_OK;
    for (int32_t i = 0; st == RT_OK && i < g->n_leafs; i++)
        st = slot_fits(ga, g->leafs[i], &ga->plan[i]);
    for (int32_t i = 0; st == RT_OK && i < g->n_nodes; i++) {
        const rt_gallocr_plan_entry_t *e = &ga->plan[g->n_leafs + i];
        if (g->nodes[i]->op != e->op)
            return rt_error(RT_ERR_DOES_NOT_FIT, "gallocr: node %d '%s' is %s, its slot '%s' %s",
                            (int)i, g->nodes[i]->name, rt_op_name(g->nodes[i]->op), e->name,
                            rt_op_name(e->op));
        st = slot_fits(ga, g->nodes[i], e);
    }
    return st;
}

static rt_status_t place(rt_gallocr_t *ga, rt_tensor_t *t, const rt_gallocr_plan_entry_t *e) {
    if (t->view_src != NULL) {
        if (t->data != NULL && !is_our_buffer(ga, t->buffer)) return RT_OK;
        if (t->view_src->data == NULL) return RT_OK; /* its base is the caller's to place */
        t->data = NULL;
        t->buffer = NULL;
        return rt_view_init(t);
    }
    if (e->buffer_id < 0 || !needs_place(ga, t)) return RT_OK;
    rt_buffer_t *buf = ga->buffers[e->buffer_id];
    t->data = NULL;
    t->buffer = NULL;
    return rt_tensor_alloc(buf, t, (char *)rt_buffer_base(buf) + e->offset);
}

rt_status_t rt_gallocr_alloc_graph(rt_gallocr_t *ga, rt_graph_t *g) {
    RT_ARMOR(ga != NULL && g != NULL);
    rt_status_t st = check_fit(ga, g);
    if (st == RT_ERR_DOES_NOT_FIT) {
        if (ga->n_buffers != 1 || ga->explicit_leaf_ids)
            return rt_error_wrap(st, "gallocr: reserve again (the gallocr has %d buffers%s)",
                                 (int)ga->n_buffers,
                                 ga->explicit_leaf_ids ? " and leafs left to the caller" : "");
        rt_log(RT_LOG_DEBUG, "%s; reserving again", rt_last_error());
        st = rt_gallocr_reserve(ga, g);
    }
    for (int32_t i = 0; st == RT_OK && i < g->n_leafs; i++)
        st = place(ga, g->leafs[i], &ga->plan[i]);
    for (int32_t i = 0; st == RT_OK && i < g->n_nodes; i++)
        st = place(ga, g->nodes[i], &ga->plan[g->n_leafs + i]);
    return st;
}

//===--- queries ---===//

int32_t rt_gallocr_n_buffers(const rt_gallocr_t *ga) { return ga != NULL ? ga->n_buffers : 0; }

static bool valid_id(const rt_gallocr_t *ga, int32_t b) {
    return ga != NULL && b >= 0 && b < ga->n_buffers;
}

size_t rt_gallocr_get_buffer_size(const rt_gallocr_t *ga, int32_t b) {
    return valid_id(ga, b) ? rt_buffer_size(ga->buffers[b]) : 0;
}

rt_buffer_t *rt_gallocr_get_buffer(const rt_gallocr_t *ga, int32_t b) {
    return valid_id(ga, b) ? ga->buffers[b] : NULL;
}

size_t rt_gallocr_get_peak(const rt_gallocr_t *ga, int32_t b) {
    return valid_id(ga, b) && ga->planned ? ga->dyns[b].peak : 0;
}

size_t rt_gallocr_get_lower_bound(const rt_gallocr_t *ga, int32_t b) {
    return valid_id(ga, b) && ga->planned ? ga->dyns[b].max_live : 0;
}

uint64_t rt_gallocr_get_n_allocs(const rt_gallocr_t *ga) { return ga != NULL ? ga->n_allocs : 0; }

int32_t rt_gallocr_plan_count(const rt_gallocr_t *ga) {
    return ga != NULL && ga->planned ? ga->n_leafs + ga->n_nodes : 0;
}

rt_status_t rt_gallocr_plan_get(const rt_gallocr_t *ga, int32_t i,
                                rt_gallocr_plan_entry_t *out_entry) {
    RT_ARMOR(ga != NULL && out_entry != NULL);
    if (i < 0 || i >= rt_gallocr_plan_count(ga))
        return rt_error(RT_ERR_MISUSE, "%s: index %d is not in 0..%d", __func__, (int)i,
                        (int)rt_gallocr_plan_count(ga) - 1);
    rt_struct_copy_out(out_entry, &ga->plan[i], sizeof ga->plan[i], sizeof *out_entry);
    return RT_OK;
}
