/* SPDX-License-Identifier: MIT */
/* sched_impl.h: the layout of rt_sched_t, shared by sched.c (lifetime,
 * reserve, alloc, statistics), sched_state.c (the questions all of them ask
 * of it), sched_assign.c (passes 1-4: a device for every tensor),
 * sched_split.c (pass 5, the scheduler's own graph, and the sources it
 * redirects in the user's graph and restores) and sched_compute.c (running
 * the splits).
 *
 * Per-tensor state lives in `hash`, a pointer set over the tensors of the
 * graph being scheduled (and pinned ones): tensor_device[slot] is the
 * device index or -1, tensor_input[slot * n_devices + d] the entry of the
 * tensor's copies on device d, or -1: an index into `inputs` when d is not
 * the tensor's own device, into `graph_inputs` when it is. Both are
 * cleared by reset.
 *
 * An input is a tensor read on a device that cannot use its buffer: it has
 * one copy per pipeline copy on that device, made in `ctx`, and belongs to
 * the split that first needs it. With n_copies > 1 the INPUT leafs the
 * gallocr places also get an entry in `graph_inputs` (on their own device),
 * whose copy cur_copy is the leaf itself, so each run writes its inputs to
 * fresh bytes.
 *
 * While a graph is allocated, node->src[j] of the nodes that read a split
 * input point at its copy; `redirects` remembers the originals for reset. */
#ifndef RT_SCHED_IMPL_H
#define RT_SCHED_IMPL_H

#include "graph_impl.h"
#include "device_impl.h"
#include "registry_impl.h"

typedef struct rt_sched_input {
    rt_tensor_t *src;                         /* where the data is computed or kept */
    int32_t src_device;                       /* device of src */
    int32_t device;                           /* device the copies live on */
    rt_tensor_t *copies[RT_SCHED_MAX_COPIES]; /* n_copies of them */
} rt_sched_input_t;

typedef struct rt_sched_split {
    int32_t device;
    int32_t i_start, i_end;        /* nodes [i_start, i_end) of the user graph */
    int32_t first_input, n_inputs; /* its inputs, consecutive in `inputs` */
    struct rt_graph graph;         /* the nodes it computes (views left out) */
} rt_sched_split_t;

typedef struct rt_sched_redirect {
    rt_tensor_t *node;
    int32_t src;                   /* index into node->src */
    rt_tensor_t *orig;             /* what node->src[src] was */
    int32_t input;                 /* the index in `inputs` it now reads */
} rt_sched_redirect_t;

/* A growable array: n used of cap elements. */
#define RT_SCHED_ARRAY(type) struct { type *at; int32_t n, cap; }

struct rt_sched {
    rt_allocator_t allocator;
    int32_t n_devices;
    rt_device_t *devices[RT_SCHED_MAX_DEVICES];
    rt_buffer_type_t *bufts[RT_SCHED_MAX_DEVICES];
    rt_queue_t *queues[RT_SCHED_MAX_DEVICES];
    void *events[RT_SCHED_MAX_DEVICES][RT_SCHED_MAX_COPIES]; /* NULL: synchronize instead */
    int32_t graph_size;
    int32_t n_copies, cur_copy, next_copy;
    rt_gallocr_t *galloc;          /* buffer i is device i's */

    rt_hash_set_t hash;            /* see above; max_keys tensors at most */
    int32_t n_keys, max_keys;
    int32_t *tensor_device;        /* hash.size */
    int32_t *tensor_input;         /* hash.size * n_devices */

    rt_graph_t *graph;             /* the user graph last split, or NULL */
    RT_SCHED_ARRAY(rt_sched_split_t) splits;
    RT_SCHED_ARRAY(rt_sched_input_t) inputs;
    RT_SCHED_ARRAY(rt_sched_input_t) graph_inputs;
    RT_SCHED_ARRAY(rt_sched_redirect_t) redirects;
    RT_SCHED_ARRAY(rt_tensor_t *) split_nodes;  /* behind every split's graph */

    /* The scheduler's graph: the user's with the copies, for the gallocr. */
    rt_context_t *ctx;             /* copies and the graph; remade per split */
    void *ctx_mem;                 /* its pool */
    size_t ctx_mem_size;           /* bytes */
    rt_graph_t *sgraph;
    RT_SCHED_ARRAY(int32_t) node_ids;   /* device of sgraph node i */
    RT_SCHED_ARRAY(int32_t) leaf_ids;
    RT_SCHED_ARRAY(int32_t) prev_node_ids; /* of the graph placed before */
    RT_SCHED_ARRAY(int32_t) prev_leaf_ids;

    bool is_reset, is_alloc;
    rt_device_t *oom_device;       /* last reserve's failure, or NULL */
    size_t oom_bytes;

    bool timing;                   /* rt_sched_set_timing: time every split */
    double time_compute[RT_SCHED_MAX_DEVICES], time_copy[RT_SCHED_MAX_DEVICES]; /* seconds */
    int64_t timed_splits[RT_SCHED_MAX_DEVICES];
};

//===--- shared state (sched_state.c) ---===//

/* Grows an RT_SCHED_ARRAY to hold n elements; false when out of host
 * memory (the array is unchanged then). */
RT_INTERNAL bool rt_sched_grow(rt_sched_t *s, void **at, int32_t *cap, int32_t n, size_t elem);
#define RT_SCHED_GROW(s, arr, want) \
    rt_sched_grow((s), (void **)&(arr).at, &(arr).cap, (want), sizeof *(arr).at)
/* The device slot of t (inserted when absent; the caller has checked
 * max_keys), and the device index, -1 when none. */
RT_INTERNAL int32_t *rt_sched_device_slot(rt_sched_t *s, const rt_tensor_t *t);
RT_INTERNAL int32_t rt_sched_device_of(const rt_sched_t *s, const rt_tensor_t *t);
/* The buffer of t's bytes when the caller placed them (not one of the
 * scheduler's compute buffers), or NULL. */
RT_INTERNAL const rt_buffer_t *rt_sched_placed_buffer(const rt_sched_t *s, const rt_tensor_t *t);
/* Whether t is a leaf (or a view of one) the caller placed: weights, a KV
 * cache; not an input, not in a compute buffer. */
RT_INTERNAL bool rt_sched_is_caller_placed(const rt_sched_t *s, const rt_tensor_t *t);
/* Whether device d can use t's bytes where they are (or will be: in the
 * compute buffer of t's device). */
RT_INTERNAL bool rt_sched_buffer_supported(const rt_sched_t *s, const rt_tensor_t *t, int32_t d);

//===--- the passes and the split ---===//

/* sched_assign.c: passes 1-4, a device for every node and leaf of g. */
RT_INTERNAL rt_status_t rt_sched_assign(rt_sched_t *s, rt_graph_t *g);

/* sched_split.c: pass 5, the splits and their inputs, then the copies and
 * the scheduler's graph (sgraph with node_ids and leaf_ids). */
RT_INTERNAL rt_status_t rt_sched_split_graph(rt_sched_t *s, rt_graph_t *g);
/* sched_split.c: points the redirected sources back at the originals. */
RT_INTERNAL void rt_sched_restore_sources(rt_sched_t *s);

/* sched_compute.c: copies each split's inputs and runs it on its queue. */
RT_INTERNAL rt_status_t rt_sched_compute_splits(rt_sched_t *s);
/* sched_compute.c: the events of pipeline copies, where devices have them. */
RT_INTERNAL rt_status_t rt_sched_events_create(rt_sched_t *s);
RT_INTERNAL void rt_sched_events_destroy(rt_sched_t *s);

#endif /* RT_SCHED_IMPL_H */
