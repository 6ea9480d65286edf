/* SPDX-License-Identifier: MIT */
/* cpu.h: what the files of the CPU plugin share, and nothing else sees. The
 * plugin is built against abi/ alone; this header names its objects (plugin,
 * device, buffer state, thread pool), the per-thread compute parameters
 * every kernel receives, the type table and row converters, the strided row
 * iterator that every row-wise kernel walks, and the kernels themselves.
 * Everything here has hidden visibility: entry.c exports the only symbol. */
#ifndef RT_CPU_H
#define RT_CPU_H

#include "../../abi/rt_base.h"
#include "../../abi/rt_device.h"
#include "../../abi/rt_plugin.h"
#include "../../abi/rt_op_traits.h"
#include "../../abi/rt_quant.h"
#include "../../abi/rt_tensor.h"
#include "kern.h"

#include <pthread.h>
#include <stdatomic.h>

#define RT_CPU_ALIGN 64 /* bytes: buffer alignment and scratch padding (one cache line) */

//===--- the device (device.c) ---===//

/* The one device of the plugin. Its tables are per instance (not static)
 * because they carry the host of the registry that created the plugin: two
 * registries in one process may hand over different allocators. */
typedef struct rt_cpu_device {
    const rt_host_t *host;              /* borrowed; valid until the plugin's destroy */
    rt_device_vtable_t vtable;          /* handed out by device_get */
    rt_device_ext_host_ptr_t host_ptr;  /* on vtable.next */
    rt_buffer_type_desc_t buft;         /* buffer type 0, "CPU" */
    rt_buffer_type_desc_t wbuft;        /* buffer type 1, "CPU_Weights" (weights.c) */
    bool weights;                       /* wbuft offered (RT_CPU_WEIGHTS is not 0) */
    char model[64];                     /* /proc/cpuinfo "model name", or "CPU" */
    int32_t n_cpus;                     /* online processors, >= 1 */
} rt_cpu_device_t;

void rt_cpu_device_init(rt_cpu_device_t *dev, const rt_host_t *host);

//===--- the operating system (os_linux.c, os_darwin.c) ---===//

/* The default thread count, >= 1: the processors this process may run on,
 * capped by its CPU quota where the OS has one. */
int32_t rt_cpu_os_count(void);
/* Processors' worth of time the cgroup CPU quota (v2 or v1) gives the
 * process whose /proc/PID/cgroup file is self_cgroup, under the cgroup
 * file system mounted at root; 0 when none or unknown (cgroup.c). */
int32_t rt_cpu_cgroup_cpus(const char *root, const char *self_cgroup);
/* Pins thread to processor cpu: 0, or an errno value (ENOTSUP where the
 * OS has no pinning). */
int rt_cpu_os_pin(pthread_t thread, int32_t cpu);
/* Bytes of memory available now, 0 when unknown. */
uint64_t rt_cpu_os_avail_bytes(void);
/* Asks that the whole 2 MiB pages inside [p, p + size) be backed by huge
 * pages where the OS does that on request (Linux's transparent huge pages
 * in "madvise" mode), before they are first touched; a hint, nothing
 * happens where it cannot be had. */
void rt_cpu_os_advise_huge(void *p, size_t size);

//===--- buffers (buffer.c) ---===//

/* The state behind one buffer (buffer_state_size bytes, allocated by the
 * core). mem is what was allocated and must be freed, NULL for memory the
 * caller owns (buffer_from_host_ptr); data is mem rounded up to RT_CPU_ALIGN. */
typedef struct rt_cpu_buffer {
    const rt_host_t *host;  /* for the allocator and tensor_nbytes */
    void *mem;              /* the allocation, or NULL when not ours */
    size_t mem_size;        /* bytes of mem */
    uint8_t *data;          /* first byte of the buffer */
    size_t size;            /* bytes usable from data */
} rt_cpu_buffer_t;

extern const rt_buffer_vtable_t rt_cpu_buffer_vtable;
rt_status_t rt_cpu_buffer_alloc(void *device, size_t size, void *state);
void rt_cpu_buffer_destroy(void *state);
void *rt_cpu_buffer_base(void *state);
rt_status_t rt_cpu_buffer_from_host_ptr(void *device, void *ptr, size_t size, void *state);

//===--- repacked weights (weights.c) ---===//

/* The CPU_Weights buffer type: 2-D Q8_0/Q4_0 matrices kept in the r16
 * layout (repack.h), read only as src[0] of MUL_MAT. */
void rt_cpu_weights_buft_init(rt_cpu_device_t *dev);
/* Whether t itself (not a view of it) is in the r16 layout. */
bool rt_cpu_repacked(const rt_tensor_t *t);
/* false when node reads a repacked tensor other than as src[0] of
 * MUL_MAT, or a view of one, or writes into one. */
bool rt_cpu_repacked_uses_ok(const rt_tensor_t *node);

//===--- the thread pool (threadpool.c) ---===//

typedef struct rt_cpu_pool rt_cpu_pool_t;

/* n_threads >= 1 (the caller plus n_threads - 1 workers). Worker i (i >= 1)
 * is pinned to cpu_ids[i % n_cpu_ids] when cpu_ids is given. */
rt_status_t rt_cpu_pool_create(const rt_host_t *host, int32_t n_threads, const int32_t *cpu_ids,
                               int32_t n_cpu_ids, rt_cpu_pool_t **out_pool);
void rt_cpu_pool_destroy(rt_cpu_pool_t *pool);
/* Runs the nodes in order, each split over all threads; returns when done. */
rt_status_t rt_cpu_pool_compute(rt_cpu_pool_t *pool, rt_tensor_t *const *nodes, int32_t n_nodes);

//===--- compute parameters ---===//

/* A failure a kernel found in the data (not in the shapes, which
 * supports_op checked): the first one wins and stops the graph after the
 * current node. Written by one thread, read by the caller after a barrier. */
typedef struct rt_cpu_error {
    _Atomic int32_t claimed; /* 0 until a kernel reports */
    rt_status_t status;
    char message[160];
} rt_cpu_error_t;

/* What each thread gets for one node, as ggml's compute params: thread ith
 * of nth does its share, with wsize bytes of private scratch at wdata
 * (RT_CPU_ALIGN-aligned, as large as the node's rt_cpu_op_wsize asked) and
 * the node's shared scratch (rt_cpu_op_shared_wsize bytes, the same for
 * every thread). A node runs in rt_cpu_op_phases phases with a barrier
 * between them, so phase 1 may read what every thread wrote to the shared
 * scratch in phase 0. *counter is 0 when each phase starts: threads that
 * take work items dynamically count them off with rt_cpu_claim. */
typedef struct rt_cpu_params {
    int32_t ith, nth;
    int32_t phase;
    void *wdata;
    size_t wsize;
    void *shared;
    size_t shared_size;
    _Atomic int64_t *counter;
    rt_cpu_error_t *error;
} rt_cpu_params_t;

/* The next unclaimed work item of this phase (>= n_items when none is left). */
static inline int64_t rt_cpu_claim(const rt_cpu_params_t *p) {
    return atomic_fetch_add_explicit(p->counter, 1, memory_order_relaxed);
}

void rt_cpu_report(const rt_cpu_params_t *p, rt_status_t status, const char *fmt, ...)
    RT_PRINTF(3, 4);

/* Region k (0, 1, 2) of a thread's scratch, each room for n floats; an op
 * that uses k regions of n floats asks for rt_cpu_wsize_rows(k, n). */
size_t rt_cpu_wsize_rows(int32_t n_regions, int64_t n);
float *rt_cpu_scratch(const rt_cpu_params_t *p, int32_t region, int64_t n);

/* [*out_begin, *out_end): thread ith's share of n items. */
void rt_cpu_split(int64_t n, int32_t ith, int32_t nth, int64_t *out_begin, int64_t *out_end);

//===--- ops (ops.c) ---===//

bool rt_cpu_op_supported(const rt_tensor_t *node);
bool rt_cpu_op_computes(rt_op_t op);  /* false for NONE and the view family */
size_t rt_cpu_op_wsize(const rt_tensor_t *node);  /* scratch bytes per thread */
size_t rt_cpu_op_shared_wsize(const rt_tensor_t *node); /* scratch bytes shared by the threads */
int32_t rt_cpu_op_phases(const rt_tensor_t *node);      /* >= 1 */
/* Threads worth splitting the node over, at most nth: one for a node so
 * small that the others' share would cost more in cache traffic and
 * waiting than it saves. */
int32_t rt_cpu_op_threads(const rt_tensor_t *node, int32_t nth);
/* Rough work of a node in elements touched (what rt_cpu_op_threads and
 * the pool's choice of thread count weigh). */
int64_t rt_cpu_op_work(const rt_tensor_t *node);
void rt_cpu_op_compute(const rt_cpu_params_t *p, rt_tensor_t *node);

//===--- types and row conversion (ops.c) ---===//

/* The element types kernels read: block geometry and contiguous converters
 * (n elements; a multiple of blck for quantised types). from_f32 is NULL
 * for I32. */
typedef struct rt_cpu_type {
    int64_t blck;   /* elements per block */
    size_t size;    /* bytes per block */
    bool is_float;  /* F32, F16 or BF16: one element per block, any stride */
    void (*to_f32)(const void *src, float *dst, int64_t n);
    void (*from_f32)(const float *src, void *dst, int64_t n);
} rt_cpu_type_t;

const rt_cpu_type_t *rt_cpu_type(rt_type_t type);  /* NULL if the plugin cannot read it */
bool rt_cpu_is_float(rt_type_t type);              /* F32, F16 or BF16 */

/* n elements of a row of t starting at row, stride t->nb[0], to and from
 * floats. Float types take any stride; quantised rows must be contiguous. */
void rt_cpu_row_to_f32(const rt_tensor_t *t, const void *row, float *dst, int64_t n);
void rt_cpu_row_from_f32(const rt_tensor_t *t, void *row, const float *src, int64_t n);
/* Strided conversions for float types: n elements stride bytes apart. */
void rt_cpu_load_f32(rt_type_t type, const void *src, size_t stride, float *dst, int64_t n);
void rt_cpu_store_f32(rt_type_t type, void *dst, size_t stride, const float *src, int64_t n);

/* A row of t as floats without a copy when t is F32 with nb[0] = 4;
 * otherwise converted into scratch. */
static inline bool rt_cpu_row_is_f32(const rt_tensor_t *t) {
    return t->type == RT_TYPE_F32 && t->nb[0] == sizeof(float);
}

static inline const float *rt_cpu_row_in(const rt_tensor_t *t, const void *row, int64_t n,
                                         float *scratch) {
    if (rt_cpu_row_is_f32(t)) return (const float *)row;
    rt_cpu_row_to_f32(t, row, scratch, n);
    return scratch;
}

/* Where to compute an output row: the row itself when it is plain F32,
 * else scratch; rt_cpu_row_commit then converts scratch into the row. */
static inline float *rt_cpu_row_out(const rt_tensor_t *t, void *row, float *scratch) {
    return rt_cpu_row_is_f32(t) ? (float *)row : scratch;
}

static inline void rt_cpu_row_commit(const rt_tensor_t *t, void *row, const float *out,
                                     int64_t n) {
    if ((const void *)out != row) rt_cpu_row_from_f32(t, row, out, n);
}

//===--- the strided row iterator (ops.c) ---===//

/* Walks the rows (i1, i2, i3) of a shape, i1 fastest, in runs the threads
 * of a node claim from the pool's counter, so a thread slowed by a busy
 * core takes fewer (the node's phase must not claim items otherwise):
 *
 *     rt_cpu_rows_t it;
 *     rt_cpu_rows_init(&it, dst->ne, p);
 *     while (rt_cpu_rows_next(&it)) { char *d = rt_cpu_row(dst, it.i1, it.i2, it.i3); ... }
 */
typedef struct rt_cpu_rows {
    int64_t ne1, ne2;       /* of the shape walked */
    int64_t nr, chunk;      /* rows in all; rows per claim */
    int64_t ir, end;        /* flat index of the current row; end of the current run */
    int64_t i1, i2, i3;     /* indices of the current row */
    _Atomic int64_t *counter;
    bool started;
} rt_cpu_rows_t;

void rt_cpu_rows_init(rt_cpu_rows_t *it, const int64_t ne[RT_MAX_DIMS], const rt_cpu_params_t *p);
bool rt_cpu_rows_next(rt_cpu_rows_t *it);
/* Takes the current row and those after it in the same (i2, i3) within the
 * thread's run, for a kernel that does short rows several at a time;
 * returns how many (>= 1). it.i1 is left on the last of them. */
int64_t rt_cpu_rows_span(rt_cpu_rows_t *it);

static inline void *rt_cpu_row(const rt_tensor_t *t, int64_t i1, int64_t i2, int64_t i3) {
    return (char *)t->data + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3];
}

/* The loop of every op that maps each row of a (src[0], dst's shape) to
 * the same row of dst: fn gets the row as floats (x) and where to write
 * the result (d, possibly x itself); conversion in and out is done here,
 * in scratch regions 0 and 1. */
typedef void (*rt_cpu_row_fn)(const rt_tensor_t *dst, const rt_cpu_rows_t *it, float *d,
                              const float *x, int64_t n);
void rt_cpu_map_rows(const rt_cpu_params_t *p, rt_tensor_t *dst, rt_cpu_row_fn fn);

/* The row of b that broadcasts onto row (i1, i2, i3) of a larger shape. */
static inline void *rt_cpu_row_bcast(const rt_tensor_t *b, int64_t i1, int64_t i2, int64_t i3) {
    return rt_cpu_row(b, i1 % b->ne[1], i2 % b->ne[2], i3 % b->ne[3]);
}

static inline int64_t rt_cpu_nelements(const rt_tensor_t *t) {
    return t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
}

static inline bool rt_cpu_same_shape(const rt_tensor_t *a, const rt_tensor_t *b) {
    return a->ne[0] == b->ne[0] && a->ne[1] == b->ne[1] && a->ne[2] == b->ne[2] &&
           a->ne[3] == b->ne[3];
}

static inline float rt_cpu_param_f32(const rt_tensor_t *t, int i) {
    return rt_bits_f32((uint32_t)t->op_params[i]);
}

//===--- kernels: supports, scratch, compute (ops_*.c) ---===//

/* Each op has one of each; ops.c maps op codes onto them. */
#define RT_CPU_KERNEL(name)                                               \
    bool rt_cpu_supports_##name(const rt_tensor_t *node);                 \
    size_t rt_cpu_wsize_##name(const rt_tensor_t *node);                  \
    void rt_cpu_compute_##name(const rt_cpu_params_t *p, rt_tensor_t *node)

RT_CPU_KERNEL(copy);       /* CONT, CPY (ops_copy.c) */
RT_CPU_KERNEL(get_rows);   /* ops_copy.c */
RT_CPU_KERNEL(set_rows);   /* ops_set_rows.c */
RT_CPU_KERNEL(binary);     /* ADD, SUB, MUL, DIV, SWIGLU (ops_elementwise.c) */
RT_CPU_KERNEL(unary);      /* SCALE, GELU, SILU (ops_elementwise.c) */
RT_CPU_KERNEL(norm);       /* NORM, RMS_NORM (ops_norm.c) */
RT_CPU_KERNEL(soft_max);   /* ops_norm.c */
RT_CPU_KERNEL(diag_mask_inf); /* ops_norm.c */
RT_CPU_KERNEL(argmax);     /* ops_norm.c */
RT_CPU_KERNEL(mul_mat);    /* ops_mul_mat.c */
size_t rt_cpu_shared_wsize_mul_mat(const rt_tensor_t *node);
int32_t rt_cpu_phases_mul_mat(const rt_tensor_t *node);
RT_CPU_KERNEL(rope);       /* ops_rope.c */
RT_CPU_KERNEL(flash_attn); /* ops_flash_attn.c */
size_t rt_cpu_shared_wsize_flash_attn(const rt_tensor_t *node);
int32_t rt_cpu_phases_flash_attn(const rt_tensor_t *node);

#endif /* RT_CPU_H */
