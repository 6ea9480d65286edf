/* SPDX-License-Identifier: MIT */
/* rt_alloc.h: placing tensors in buffers (docs/memory.md §3).
 *
 * rt_tallocr_t hands out a buffer's bytes in order, one tensor after the
 * other, for tensors that live as long as the buffer (weights, KV cache).
 *
 * rt_gallocr_t places a graph's intermediates. reserve walks the graph in
 * execution order without touching memory: it gives each tensor an offset,
 * frees a block once every node that reads it (or reads a view of it) has
 * been placed, lets an elementwise op write over its input, records the plan
 * and allocates each buffer at its peak. alloc_graph then points each
 * tensor of a graph with the same structure at its recorded offset, so a
 * graph reserved once for its worst case (n_batch tokens at the end of the
 * context) runs every later step without allocating.
 *
 *     rt_gallocr_t *ga;
 *     rt_gallocr_create(rt_device_buffer_type(dev, 0), &ga);
 *     rt_gallocr_reserve(ga, build_graph(ctx0, n_batch, n_ctx - n_batch));
 *     for (;;) {                                 // one decode step
 *         rt_context_t *ctx = ...;               // no_alloc, fresh each step
 *         rt_graph_t *g = build_graph(ctx, n_tokens, n_past);
 *         rt_gallocr_alloc_graph(ga, g);         // no allocation: fits the plan
 *         rt_tensor_set(tokens, ...);            // inputs (RT_TENSOR_FLAG_INPUT)
 *         rt_queue_compute(q, g);
 *         rt_tensor_get(logits, ...);            // outputs (RT_TENSOR_FLAG_OUTPUT)
 *         rt_context_destroy(ctx);
 *     }
 *     rt_gallocr_destroy(ga);
 *
 * Which tensors a gallocr places: every node and leaf that has no data yet
 * and is not a view, and those it placed itself on an earlier call (their
 * buffer is one of its own). Tensors whose data lives elsewhere (weights,
 * the KV cache) are read where they are and never written over. Views get
 * their data from view_src + view_offs (rt_view_init).
 *
 * In-place reuse: a node whose op is one of ADD, SUB, MUL, DIV, SCALE, GELU,
 * SILU, SWIGLU, NORM, RMS_NORM, SOFT_MAX, DIAG_MASK_INF, ROPE may take over
 * the block of a source (any source of ADD, SUB, MUL, DIV, SWIGLU; src[0]
 * of the others, whose other sources are masks and positions), or of the
 * base of such a source when it is a view at offset 0, when: the node is
 * that source's last reader (and, through a view, the base's), both have
 * the same type, ne and nb, both lie in the same buffer, and the source is
 * none of: a leaf, a view of a leaf, an INPUT, an OUTPUT (or a view of
 * one), a tensor with another view still to be read. These ops compute each
 * output element (or row) from the same element (or row) of their input, so
 * a plugin must let them run with dst equal to that input. CONT and CPY are
 * left out: a copy over itself is memcpy with equal pointers, which C
 * leaves undefined, and never useful.
 *
 * Lifetimes: leafs the gallocr places and INPUT nodes are live from node 0,
 * before anything runs, so nothing overwrites them before they are read.
 * A node is live from its own index. A block is free after the last node
 * that reads the tensor or a view of it. OUTPUT tensors, tensors nobody
 * reads and leafs without the INPUT flag (constants the application sets
 * once) stay live to the end of the graph; INPUT leafs are written again
 * before every run, so their bytes are reused after their last reader.
 *
 * Thread-safety: a gallocr is used by one thread at a time. Different
 * gallocrs are independent.
 */
#ifndef RT_ALLOC_H
#define RT_ALLOC_H

#include "rt.h"

#ifdef __cplusplus
extern "C" {
#endif

//===--- rt_tallocr_t ---===//

/* A linear allocator over one buffer, in caller storage: init, then alloc
 * tensors in order. It owns nothing, so there is no deinit; the buffer must
 * outlive it. Fields are the library's: read them, do not write them. */
typedef struct rt_tallocr {
    uint32_t struct_size;        /* set by rt_tallocr_init */
    uint32_t reserved0;          /* zero */
    rt_buffer_t *buffer;         /* borrowed */
    void *base;                  /* rt_buffer_base(buffer) */
    size_t alignment;            /* of the buffer's type, bytes */
    size_t offset;               /* next free byte, from base */
    uint64_t reserved[4];        /* zero; room for later minor versions */
} rt_tallocr_t;

RT_STATIC_ASSERT(sizeof(rt_tallocr_t) == 72, "rt_tallocr_t 1.0 size");

/* Starts handing out buffer's bytes at its base (which the plugin aligns). Returns
 * RT_ERR_INVALID_ARGUMENT when talloc or buffer is NULL. */
RT_API rt_status_t rt_tallocr_init(rt_tallocr_t *talloc, rt_buffer_t *buffer);
/* Places t at the next aligned offset: its alloc size rounded up to the
 * buffer type's alignment. t must be a base tensor without data
 * (RT_ERR_INVALID_ARGUMENT otherwise). RT_ERR_OUT_OF_MEMORY, with a message
 * naming the tensor, the bytes asked and the bytes left, when it does not
 * fit; talloc is unchanged then. */
RT_API rt_status_t rt_tallocr_alloc(rt_tallocr_t *talloc, rt_tensor_t *t);

//===--- rt_gallocr_t ---===//

typedef struct rt_gallocr rt_gallocr_t;

/* One buffer (id 0) of buft. The gallocr's own memory comes from the
 * allocator of buft's registry. */
RT_API rt_status_t rt_gallocr_create(rt_buffer_type_t *buft, rt_gallocr_t **out_galloc);
/* n_buffers buffers, buffer id i of bufts[i]; for graphs that span devices
 * (reserve_n says which tensor goes where). bufts is copied. */
RT_API rt_status_t rt_gallocr_create_n(rt_buffer_type_t *const *bufts, int32_t n_buffers,
                                       rt_gallocr_t **out_galloc);
/* Frees the buffers: every tensor placed in them loses its memory. */
RT_API void rt_gallocr_destroy(rt_gallocr_t *galloc);

/* Planning options, for tests and measurements. */
enum {
    RT_GALLOCR_FLAG_NO_INPLACE = 1u << 0, /* never write a node over a source */
    RT_GALLOCR_FLAG_NO_FREE = 1u << 1,    /* never free a block before the graph ends */
    RT_GALLOCR_FLAG_NO_REUSE = (1u << 0) | (1u << 1) /* every tensor its own bytes */
};
/* Takes effect at the next reserve. */
RT_API void rt_gallocr_set_flags(rt_gallocr_t *galloc, uint32_t flags);

/* Plans g (every tensor in buffer 0) and grows buffer 0 to the plan's peak
 * when it is larger than the current buffer. Sets no tensor's data (and
 * clears it on g's tensors this gallocr had placed); g may be destroyed
 * afterwards. RT_ERR_OUT_OF_MEMORY (message: buffer type, bytes)
 * when the peak exceeds the type's max size or the allocation fails. */
RT_API rt_status_t rt_gallocr_reserve(rt_gallocr_t *galloc, rt_graph_t *g);
/* As reserve, with node i placed in buffer node_buffer_ids[i] and leaf i in
 * leaf_buffer_ids[i] (NULL arrays: all 0). A negative leaf id leaves that
 * leaf alone: the caller places it (weights loaded after the reserve). An
 * in-place reuse never crosses buffers. RT_ERR_INVALID_ARGUMENT for an id
 * >= n_buffers or a negative node id. */
RT_API rt_status_t rt_gallocr_reserve_n(rt_gallocr_t *galloc, rt_graph_t *g,
                                        const int32_t *node_buffer_ids,
                                        const int32_t *leaf_buffer_ids);
/* Points every tensor of g that the gallocr places at its planned offset,
 * and views at their base. g must have the structure of the graph last
 * reserved (the same sources for each node). It fits the plan when it has
 * as many nodes and leafs, each node has the op of its slot and no tensor
 * needs more bytes than its slot (a smaller n_tokens or n_past fits). When
 * it does not fit: with one buffer, reserves again for g (the one case where
 * this call allocates); with several, returns RT_ERR_DOES_NOT_FIT and the
 * caller reserves. Before any reserve, with one buffer, it reserves first. */
RT_API rt_status_t rt_gallocr_alloc_graph(rt_gallocr_t *galloc, rt_graph_t *g);

RT_API int32_t rt_gallocr_n_buffers(const rt_gallocr_t *galloc);
/* Bytes of buffer buffer_id as allocated (0 when none yet or a bad id). */
RT_API size_t rt_gallocr_get_buffer_size(const rt_gallocr_t *galloc, int32_t buffer_id);
/* The buffer itself (borrowed; replaced when a reserve grows it), or NULL. */
RT_API rt_buffer_t *rt_gallocr_get_buffer(const rt_gallocr_t *galloc, int32_t buffer_id);
/* The plan's peak for buffer_id: bytes the last reserve needed (also when
 * allocating them failed; 0 before any plan). */
RT_API size_t rt_gallocr_get_peak(const rt_gallocr_t *galloc, int32_t buffer_id);
/* The largest total of block bytes in buffer_id live at one node of the
 * last plan: no placement of the same lifetimes needs fewer bytes, so
 * peak / lower bound measures the placement's fragmentation. */
RT_API size_t rt_gallocr_get_lower_bound(const rt_gallocr_t *galloc, int32_t buffer_id);
/* rt_buffer_alloc calls this gallocr has made since it was created. */
RT_API uint64_t rt_gallocr_get_n_allocs(const rt_gallocr_t *galloc);

//===--- the plan ---===//

/* Plan entry flags. */
enum {
    RT_GALLOCR_PLAN_LEAF = 1u << 0,    /* a leaf of the graph (else a node) */
    RT_GALLOCR_PLAN_VIEW = 1u << 1,    /* a view: its bytes are its base's */
    RT_GALLOCR_PLAN_INPLACE = 1u << 2, /* took over the block of inplace_of */
    RT_GALLOCR_PLAN_INPUT = 1u << 3,   /* RT_TENSOR_FLAG_INPUT */
    RT_GALLOCR_PLAN_OUTPUT = 1u << 4   /* RT_TENSOR_FLAG_OUTPUT, or a view of one */
};

/* Where the last reserve put one tensor, and when it needs its bytes. Plan
 * index i: leaf i for i < n_leafs, node i - n_leafs after them. The fields
 * are copies: they stay valid after the graph is gone. */
typedef struct rt_gallocr_plan_entry {
    uint32_t struct_size; /* set by the caller; the library fills fields inside it */
    uint32_t flags;       /* RT_GALLOCR_PLAN_* */
    int32_t buffer_id;    /* -1: not placed by the gallocr (data was elsewhere) */
    int32_t index;        /* in the graph's leafs or nodes */
    size_t offset;        /* bytes from the buffer's start (views: base's + view_offs) */
    size_t size;          /* bytes: the block for placed tensors, nbytes for views */
    int32_t first;        /* first node index during which the bytes must be intact */
    int32_t last;         /* last such node index (inclusive) */
    int32_t base;         /* views: plan index of view_src, -1 if not in the graph */
    int32_t inplace_of;   /* INPLACE: plan index of the tensor whose block it took */
    rt_op_t op;
    rt_type_t type;
    char name[RT_MAX_NAME];
} rt_gallocr_plan_entry_t;

RT_STATIC_ASSERT(sizeof(rt_gallocr_plan_entry_t) == 120, "rt_gallocr_plan_entry_t 1.0 size");

/* n_leafs + n_nodes of the graph last planned (by a reserve, even one whose
 * buffer allocation failed); 0 before any plan. */
RT_API int32_t rt_gallocr_plan_count(const rt_gallocr_t *galloc);
/* Fills *out_entry (whose struct_size the caller sets). RT_ERR_INVALID_ARGUMENT
 * for an index out of range. */
RT_API rt_status_t rt_gallocr_plan_get(const rt_gallocr_t *galloc, int32_t i,
                                       rt_gallocr_plan_entry_t *out_entry);
/* The plan as text: a line per buffer (type, peak), then a line per entry. */
RT_API void rt_gallocr_write_plan_text(const rt_gallocr_t *galloc, rt_write_fn write,
                                       void *user_data);
/* The plan as an SVG picture: per buffer, x is the node index in execution
 * order, y the byte offset; a rectangle per placed tensor over its lifetime,
 * coloured by op, with its name, op, size and lifetime in a <title> (shown
 * on hover). */
RT_API void rt_gallocr_write_plan_svg(const rt_gallocr_t *galloc, rt_write_fn write,
                                      void *user_data);

#ifdef __cplusplus
}
#endif

#endif /* RT_ALLOC_H */
