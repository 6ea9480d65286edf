/* SPDX-License-Identifier: MIT */
/* gallocr_impl.h: the layout of rt_gallocr_t, for gallocr.c (planning and
 * placing) and gallocr_plan.c (drawing the plan).
 *
 * The plan has one entry per leaf, then one per node, of the graph last
 * reserved (n_leafs + n_nodes entries, public layout). Buffer i belongs to
 * bufts[i]; buffers[i] is NULL until a reserve needs bytes in it, and is
 * never smaller than peaks[i] after a successful reserve. */
#ifndef RT_GALLOCR_IMPL_H
#define RT_GALLOCR_IMPL_H

#include "internal.h"

/* A free range of a dry-run buffer. */
typedef struct rt_ga_block {
    size_t offset; /* bytes */
    size_t size;   /* bytes */
} rt_ga_block_t;

/* The dry-run allocator of one buffer: free blocks below `top`, sorted by
 * offset and never adjacent (neighbours are merged); everything from `top`
 * up is free too. */
typedef struct rt_ga_dyn {
    rt_ga_block_t *free; /* n_free used of cap_free */
    int32_t n_free;
    size_t cap_free;
    size_t top;          /* end of the highest block in use, bytes */
    size_t peak;         /* largest top seen, bytes */
    size_t live;         /* bytes in blocks in use */
    size_t max_live;     /* largest live seen: the plan's lower bound, bytes */
} rt_ga_dyn_t;

struct rt_gallocr {
    rt_allocator_t allocator;
    int32_t n_buffers;
    rt_buffer_type_t **bufts;        /* n_buffers */
    rt_buffer_t **buffers;           /* n_buffers, NULL entries until needed */
    rt_ga_dyn_t *dyns;               /* n_buffers */
    uint32_t flags;                  /* RT_GALLOCR_FLAG_* */
    uint64_t n_allocs;               /* rt_buffer_alloc calls that succeeded */
    bool planned;                    /* the last reserve made a plan (plan, peaks) */
    bool reserved;                   /* ... and allocated its buffers: alloc_graph may use it */
    bool explicit_leaf_ids;          /* last reserve left some leaf to the caller */
    rt_gallocr_plan_entry_t *plan;   /* n_leafs + n_nodes entries of cap_plan */
    int32_t n_leafs, n_nodes;
    size_t cap_plan;
    /* Dry-run scratch, kept between reserves to avoid reallocation. */
    struct rt_ga_tinfo *info;        /* by plan index, cap_info entries */
    size_t cap_info;
    int32_t *slot_plan;              /* graph hash slot -> plan index, cap_slots entries */
    size_t cap_slots;
};

#endif /* RT_GALLOCR_IMPL_H */
