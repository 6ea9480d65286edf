/* SPDX-License-Identifier: MIT */
/* graph.c: rt_graph_t, the execution order of a computation. A graph is one
 * object in its context's pool holding the struct, the nodes and leafs
 * arrays and the visited set with its use counts (graph_impl.h), so it
 * needs no allocator and dies with the context. Also the open-addressing
 * pointer set that gallocr and sched reuse.
 *
 * build_forward_expand is a depth-first walk (docs/memory.md §3.1): sources in src
 * order, then the view's base, then the tensor itself, so every tensor
 * comes after what it reads. Tensors with op NONE are leafs, the rest
 * nodes; each is added once however often it is reached. */
#include "graph_impl.h"
#include "tensor_impl.h"

#include <stdint.h>
#include <string.h>

//===--- rt_hash_set_t ---===//

/* Primes, each about twice the one before, for the set's slot counts. */
static const size_t hash_primes[] = {
    2,         3,         5,          11,         17,         37,         67,
    131,       257,       521,        1031,       2053,       4099,       8209,
    16411,     32771,     65537,      131101,     262147,     524309,     1048583,
    2097169,   4194319,   8388617,    16777259,   33554467,   67108879,   134217757,
    268435459, 536870923, 1073741827, 2147483659,
};

static bool is_prime(size_t n) {
    if (n < 2) return false;
    for (size_t d = 2; d <= n / d; d++)
        if (n % d == 0) return false;
    return true;
}

size_t rt_hash_size(size_t min_size) {
    const size_t n_primes = sizeof hash_primes / sizeof hash_primes[0];
    for (size_t i = 0; i < n_primes; i++)
        if (hash_primes[i] >= min_size) return hash_primes[i];
    size_t n = min_size | 1; /* past the table: the next odd prime */
    while (!is_prime(n)) n += 2;
    return n;
}

/* Tensors sit at least 64 bytes apart, so the low bits carry nothing. */
static size_t hash_slot(const rt_hash_set_t *set, const rt_tensor_t *t) {
    return (size_t)(((uintptr_t)t >> 6) % set->size);
}

/* The slot holding t, or the first empty slot of its probe run, or
 * RT_HASH_NONE when the set is full and t is not in it. */
static size_t hash_probe(const rt_hash_set_t *set, const rt_tensor_t *t) {
    size_t i = hash_slot(set, t);
    for (size_t n = 0; n < set->size; n++) {
        if (set->keys[i] == NULL || set->keys[i] == t) return i;
        i = i + 1 == set->size ? 0 : i + 1;
    }
    return RT_HASH_NONE;
}

size_t rt_hash_find(const rt_hash_set_t *set, const rt_tensor_t *t) {
    const size_t i = hash_probe(set, t);
    return i != RT_HASH_NONE && set->keys[i] == t ? i : RT_HASH_NONE;
}

size_t rt_hash_insert(rt_hash_set_t *set, const rt_tensor_t *t) {
    const size_t i = hash_probe(set, t);
    RT_CHECK(i != RT_HASH_NONE, "hash set full: all %zu slots taken while inserting %s",
             set->size, RT_DESC(t));
    set->keys[i] = t;
    return i;
}

//===--- layout ---===//

/* Byte offsets of the arrays behind the struct, all 8-byte aligned. */
typedef struct graph_layout {
    size_t nodes, leafs, use_counts, keys, total;
} graph_layout_t;

static graph_layout_t graph_layout(size_t size) {
    const size_t hash_size = rt_hash_size(2 * size + 1);
    graph_layout_t l;
    l.nodes = rt_align_up(sizeof(rt_graph_t), sizeof(void *));
    l.leafs = l.nodes + size * sizeof(rt_tensor_t *);
    l.use_counts = l.leafs + size * sizeof(rt_tensor_t *);
    l.keys = rt_align_up(l.use_counts + hash_size * sizeof(int32_t), sizeof(void *));
    l.total = l.keys + hash_size * sizeof(rt_tensor_t *);
    return l;
}

/* Keeps 2*size+1 and the array sizes far from overflow and int32 counts. */
#define GRAPH_MAX_SIZE ((size_t)INT32_MAX / 4)

size_t rt_graph_overhead(size_t size) {
    RT_CHECK(size <= GRAPH_MAX_SIZE, "rt_graph_overhead: size %zu is above %zu", size,
             GRAPH_MAX_SIZE);
    return rt_context_object_footprint(graph_layout(size).total);
}

rt_status_t rt_graph_overhead_v2(size_t size, size_t *out_bytes) {
    RT_ARMOR(out_bytes != NULL);
    *out_bytes = 0;
    if (size > GRAPH_MAX_SIZE)
        return rt_error(RT_ERR_INVALID_ARGUMENT, "%s: a graph of %zu nodes is above the largest, %zu",
                        __func__, size, GRAPH_MAX_SIZE);
    *out_bytes = rt_context_object_footprint(graph_layout(size).total);
    return RT_OK;
}

rt_graph_t *rt_graph_create(rt_context_t *ctx, size_t size) {
    RT_CHECK(size > 0 && size <= GRAPH_MAX_SIZE, "rt_graph_create: size %zu is not in 1..%zu",
             size, GRAPH_MAX_SIZE);
    const graph_layout_t l = graph_layout(size);
    char *p = rt_context_alloc_object(ctx, RT_OBJECT_GRAPH, l.total);
    rt_graph_t *g = (rt_graph_t *)p;
    memset(g, 0, sizeof *g);
    g->size = (int32_t)size;
    g->nodes = (rt_tensor_t **)(p + l.nodes);
    g->leafs = (rt_tensor_t **)(p + l.leafs);
    g->use_counts = (int32_t *)(p + l.use_counts);
    g->visited.size = rt_hash_size(2 * size + 1);
    g->visited.keys = (const rt_tensor_t **)(p + l.keys);
    rt_graph_reset(g);
    return g;
}

void rt_graph_reset(rt_graph_t *g) {
    if (g == NULL) return;
    g->n_nodes = 0;
    g->n_leafs = 0;
    memset(g->use_counts, 0, g->visited.size * sizeof g->use_counts[0]);
    memset(g->visited.keys, 0, g->visited.size * sizeof g->visited.keys[0]);
}

//===--- building ---===//

static void graph_add(rt_graph_t *g, rt_tensor_t *t) {
    const bool leaf = t->op == RT_OP_NONE;
    int32_t *n = leaf ? &g->n_leafs : &g->n_nodes;
    RT_CHECK(*n < g->size,
             "graph full: %d %s (size %d) while adding %s %s; create the graph with a larger "
             "size", (int)*n, leaf ? "leafs" : "nodes", (int)g->size, rt_op_name(t->op),
             RT_DESC(t));
    (leaf ? g->leafs : g->nodes)[(*n)++] = t;
}

/* Marks t visited first, so a tensor reached again while its own sources
 * are being walked is not added twice. */
static void visit(rt_graph_t *g, rt_tensor_t *t) {
    if (rt_hash_find(&g->visited, t) != RT_HASH_NONE) return;
    rt_hash_insert(&g->visited, t);
    for (int i = 0; i < RT_MAX_SRC; i++) {
        if (t->src[i] == NULL) continue;
        visit(g, t->src[i]);
        g->use_counts[rt_hash_find(&g->visited, t->src[i])]++;
    }
    if (t->view_src != NULL) visit(g, t->view_src);
    graph_add(g, t);
}

void rt_graph_build_forward_expand(rt_graph_t *g, rt_tensor_t *t) {
    RT_CHECK(g != NULL, "rt_graph_build_forward_expand: graph is NULL");
    RT_CHECK(t != NULL, "rt_graph_build_forward_expand: tensor is NULL");
    visit(g, t);
}

//===--- queries ---===//

/* A NULL graph is misuse the queries survive: 0, -1 or NULL. */
int32_t rt_graph_size(const rt_graph_t *g) { return g != NULL ? g->size : 0; }

int32_t rt_graph_n_nodes(const rt_graph_t *g) { return g != NULL ? g->n_nodes : 0; }

int32_t rt_graph_n_leafs(const rt_graph_t *g) { return g != NULL ? g->n_leafs : 0; }

/* Entry i of one of the graph's arrays; negative i counts from the end.
 * NULL, with RT_ERR_MISUSE recorded, out of range. */
static rt_tensor_t *array_at(rt_tensor_t *const *arr, int32_t n, int32_t i, const char *what) {
    const int32_t j = i < 0 ? n + i : i;
    if (j >= 0 && j < n) return arr[j];
    rt_error(RT_ERR_MISUSE, "rt_graph_%s: index %d is out of range for %d %ss", what, (int)i,
             (int)n, what);
    return NULL;
}

rt_tensor_t *rt_graph_node(const rt_graph_t *g, int32_t i) {
    return g != NULL ? array_at(g->nodes, g->n_nodes, i, "node") : NULL;
}

rt_tensor_t *rt_graph_leaf(const rt_graph_t *g, int32_t i) {
    return g != NULL ? array_at(g->leafs, g->n_leafs, i, "leaf") : NULL;
}

rt_tensor_t *const *rt_graph_nodes(const rt_graph_t *g) { return g != NULL ? g->nodes : NULL; }

int32_t rt_graph_use_count(const rt_graph_t *g, const rt_tensor_t *t) {
    if (g == NULL || t == NULL) return -1;
    const size_t i = rt_hash_find(&g->visited, t);
    return i == RT_HASH_NONE ? -1 : g->use_counts[i];
}

bool rt_graph_contains(const rt_graph_t *g, const rt_tensor_t *t) {
    return g != NULL && t != NULL && rt_hash_find(&g->visited, t) != RT_HASH_NONE;
}

static rt_tensor_t *find_named(rt_tensor_t *const *arr, int32_t n, const char *name) {
    for (int32_t i = 0; i < n; i++)
        if (strcmp(arr[i]->name, name) == 0) return arr[i];
    return NULL;
}

/* Leafs first, as ggml_graph_get_tensor. */
rt_tensor_t *rt_graph_get_tensor(const rt_graph_t *g, const char *name) {
    if (g == NULL || name == NULL) return NULL;
    rt_tensor_t *t = find_named(g->leafs, g->n_leafs, name);
    return t != NULL ? t : find_named(g->nodes, g->n_nodes, name);
}
