/* SPDX-License-Identifier: MIT */
/* graph_impl.h: the layout of rt_graph_t and its hash set, for the graph
 * module and the allocators and scheduler that walk graphs.
 *
 * A graph and its arrays live in one pool object of rt_graph_overhead(size)
 * bytes. `visited` is an open-addressing set of tensor pointers with
 * hash_size slots (a prime > 2*size); use_counts is indexed by the same
 * slot as the tensor's key. */
#ifndef RT_GRAPH_IMPL_H
#define RT_GRAPH_IMPL_H

#include "internal.h"

typedef struct rt_hash_set {
    size_t size;                /* slots */
    const rt_tensor_t **keys;   /* NULL = empty slot */
} rt_hash_set_t;

struct rt_graph {
    int32_t size;               /* capacity of nodes and of leafs */
    int32_t n_nodes;
    int32_t n_leafs;
    rt_tensor_t **nodes;        /* execution order */
    rt_tensor_t **leafs;
    int32_t *use_counts;        /* per hash slot: nodes reading the tensor */
    rt_hash_set_t visited;
};

#define RT_HASH_NONE ((size_t)-1)

/* Slot holding t, or RT_HASH_NONE. */
RT_INTERNAL size_t rt_hash_find(const rt_hash_set_t *set, const rt_tensor_t *t);
/* Inserts t (if absent) and returns its slot; aborts if the set is full. */
RT_INTERNAL size_t rt_hash_insert(rt_hash_set_t *set, const rt_tensor_t *t);
/* A prime number of slots for at least min_size keys. */
RT_INTERNAL size_t rt_hash_size(size_t min_size);

#endif /* RT_GRAPH_IMPL_H */
