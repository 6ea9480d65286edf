/* SPDX-License-Identifier: MIT */
/* rt.h: the application interface of rt. Build a graph of tensor ops in a
 * context, place its tensors in buffers of a device, run it on a queue.
 *
 *     rt_registry_t *reg;                       // loads the plugins
 *     rt_registry_create(NULL, &reg);
 *     rt_device_t *dev = rt_registry_device(reg, 0);
 *
 *     rt_context_t *ctx;                        // headers only: no_alloc
 *     rt_context_create(&(rt_context_params_t){ .mem_size = 1 << 20, .no_alloc = true }, &ctx);
 *     rt_tensor_t *w = rt_new_tensor_2d(ctx, RT_TYPE_F32, 4, 3);
 *     rt_tensor_t *x = rt_new_tensor_2d(ctx, RT_TYPE_F32, 4, 1);
 *     rt_tensor_t *y = rt_mul_mat(ctx, w, x);  // y = x . w^T, ne {3, 1}
 *     rt_graph_t *g = rt_graph_create(ctx, 16);
 *     rt_graph_build_forward_expand(g, y);
 *
 *     rt_buffer_t *buf;                          // every tensor of ctx
 *     rt_alloc_ctx_tensors(ctx, rt_device_buffer_type(dev, 0), &buf);
 *     rt_tensor_set(w, w_data, 0, sizeof w_data); rt_tensor_set(x, ...);
 *     rt_queue_t *q; rt_queue_create(dev, NULL, &q);
 *     rt_queue_compute(q, g);
 *     rt_tensor_get(y, out, 0, rt_nbytes(y));
 *
 * Errors: calls that can fail return rt_status_t; rt_last_error() has the
 * message. Programmer misuse of the graph builders (shapes that do not fit
 * an op's contract, a NULL context or tensor) aborts through the abort hook
 * with a message naming the op, the tensors and their shapes. Any other
 * function survives misuse (a NULL handle or out pointer, an index out of
 * range): it returns RT_ERR_MISUSE when it returns a status, and 0, -1,
 * false or NULL (or "?" and "" for names) otherwise, with the reason in
 * rt_last_error(). Ownership rules are in rt_base.h.
 *
 * Structs passed in or out start with struct_size, set by the application
 * to sizeof the struct it was compiled with. For option structs a zeroed
 * struct is valid: struct_size 0 reads as the 1.0 layout and every other 0
 * means "the default".
 */
#ifndef RT_H
#define RT_H

#include "rt_base.h"
#include "rt_device.h"
#include "rt_quant.h"
#include "rt_tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rt_context rt_context_t;
typedef struct rt_graph rt_graph_t;
typedef struct rt_registry rt_registry_t;
typedef struct rt_plugin_info rt_plugin_info_t;
typedef struct rt_device rt_device_t;
typedef struct rt_buffer_type rt_buffer_type_t;
typedef struct rt_buffer rt_buffer_t;
typedef struct rt_queue rt_queue_t;

//===--- version, errors, logging ---===//

/* RT_ABI_VERSION of the library actually loaded; compare with the header's. */
RT_API uint32_t rt_abi_version(void);
RT_API const char *rt_version_string(void);

/* "RT_ERR_OUT_OF_MEMORY", ...; never NULL. */
RT_API const char *rt_status_name(rt_status_t status);
/* The message of the last failure on this thread ("" if none). Valid until
 * the next failing call on the same thread. */
RT_API const char *rt_last_error(void);

/* Where log lines go; the default writes WARN and ERROR to stderr (and
 * everything when the environment sets RT_LOG=debug). */
typedef void (*rt_log_fn)(rt_log_level_t level, const char *message, void *user_data);
RT_API void rt_log_set(rt_log_fn fn, void *user_data);

/* Called with a message when the graph API is misused, then abort()s. The
 * hook may longjmp or exit instead (tests do); it is process-wide. */
typedef void (*rt_abort_fn)(const char *message, void *user_data);
RT_API void rt_abort_set(rt_abort_fn fn, void *user_data);

/* Writer callback for the text and DOT dumps. */
typedef void (*rt_write_fn)(const char *text, size_t len, void *user_data);
#if RT_TARGETS(1, 3)
/* abi >= 1.3: printf into such a writer, as the dumps write their lines
 * (libraries over rt that report through the same callback use it): one
 * call of write per call, a text longer than 1023 bytes cut there;
 * nothing when write or fmt is NULL. */
RT_API void rt_write_text(rt_write_fn write, void *user_data, const char *fmt, ...) RT_PRINTF(3, 4);
#endif

//===--- types ---===//

/* NULL for an id that is not an implemented type. */
RT_API const rt_type_traits_t *rt_type_traits(rt_type_t type);
RT_API const char *rt_type_name(rt_type_t type);  /* "?" if unknown */
RT_API size_t rt_type_size(rt_type_t type);       /* bytes per block, 0 if unknown */
RT_API int64_t rt_blck_size(rt_type_t type);      /* elements per block, 0 if unknown */
/* Bytes of a contiguous row of ne0 elements (ne0 a multiple of the block). */
RT_API size_t rt_row_size(rt_type_t type, int64_t ne0);
RT_API const char *rt_op_name(rt_op_t op);        /* "MUL_MAT", "?" if unknown */

/* Float format conversions (rt_fp16_to_fp32, ...) are inline in rt_quant.h. */
/* Quantises n floats (n a multiple of 32) into dst of type Q8_0 or Q4_0,
 * or converts them to F32/F16/BF16. Returns the bytes written. */
RT_API size_t rt_quantize(rt_type_t type, const float *src, void *dst, int64_t n);
/* Converts n elements of type into floats. */
RT_API void rt_dequantize(rt_type_t type, const void *src, float *dst, int64_t n);

//===--- rt_context_t ---===//

/* A context is a fixed pool of memory that holds tensor headers, graphs and,
 * unless no_alloc, the tensors' data right after each header (see
 * docs/memory.md §3.1). Nothing in it is freed before the whole context is. */
typedef struct rt_context_params {
    uint32_t struct_size;
    size_t mem_size;                 /* pool bytes; 0: 16 MiB */
    void *mem_buffer;                /* caller's memory of mem_size bytes, or NULL */
    bool no_alloc;                   /* headers only; data comes from buffers */
    const rt_allocator_t *allocator; /* NULL: malloc; copied, not kept */
} rt_context_params_t;

/* Pool bytes one tensor header takes, to size a no_alloc context. */
RT_API size_t rt_tensor_overhead(void);
/* Pool bytes a graph of `size` nodes takes; aborts (RT_CHECK) when size is
 * past the largest graph: for a size the caller does not control, use
 * rt_graph_overhead_v2. */
RT_API size_t rt_graph_overhead(size_t size);
#if RT_TARGETS(1, 2)
/* abi >= 1.2: *out_bytes = the pool bytes of a graph of `size` nodes, or
 * RT_ERR_INVALID_ARGUMENT (with a message naming size and the limit, and
 * *out_bytes 0) when no graph can be that large. */
RT_API rt_status_t rt_graph_overhead_v2(size_t size, size_t *out_bytes);
#endif

RT_API rt_status_t rt_context_create(const rt_context_params_t *params, rt_context_t **out_ctx);
RT_API void rt_context_destroy(rt_context_t *ctx);
RT_API size_t rt_context_used_mem(const rt_context_t *ctx);
RT_API bool rt_context_get_no_alloc(const rt_context_t *ctx);
RT_API void rt_context_set_no_alloc(rt_context_t *ctx, bool no_alloc);
/* Tensors in creation order: first, then next until NULL. */
RT_API rt_tensor_t *rt_context_first_tensor(const rt_context_t *ctx);
RT_API rt_tensor_t *rt_context_next_tensor(const rt_context_t *ctx, const rt_tensor_t *t);
RT_API rt_tensor_t *rt_context_get_tensor(const rt_context_t *ctx, const char *name);

//===--- tensors ---===//

/* New tensors with contiguous strides. n_dims in 1..4. A pool that is too
 * small calls the abort hook (sizing a context is the programmer's job). */
RT_API rt_tensor_t *rt_new_tensor(rt_context_t *ctx, rt_type_t type, int n_dims,
                                  const int64_t *ne);
RT_API rt_tensor_t *rt_new_tensor_1d(rt_context_t *ctx, rt_type_t type, int64_t ne0);
RT_API rt_tensor_t *rt_new_tensor_2d(rt_context_t *ctx, rt_type_t type, int64_t ne0,
                                     int64_t ne1);
RT_API rt_tensor_t *rt_new_tensor_3d(rt_context_t *ctx, rt_type_t type, int64_t ne0,
                                     int64_t ne1, int64_t ne2);
RT_API rt_tensor_t *rt_new_tensor_4d(rt_context_t *ctx, rt_type_t type, int64_t ne0,
                                     int64_t ne1, int64_t ne2, int64_t ne3);
/* A new tensor with a's type and shape (contiguous, no data shared). */
RT_API rt_tensor_t *rt_dup_tensor(rt_context_t *ctx, const rt_tensor_t *a);

RT_API rt_tensor_t *rt_set_name(rt_tensor_t *t, const char *name);
RT_API rt_tensor_t *rt_format_name(rt_tensor_t *t, const char *fmt, ...) RT_PRINTF(2, 3);
RT_API const char *rt_get_name(const rt_tensor_t *t);
RT_API void rt_set_input(rt_tensor_t *t);
RT_API void rt_set_output(rt_tensor_t *t);
RT_API void rt_set_param(rt_tensor_t *t);

RT_API int64_t rt_nelements(const rt_tensor_t *t);
RT_API int64_t rt_nrows(const rt_tensor_t *t);         /* ne[1]*ne[2]*ne[3] */
RT_API size_t rt_nbytes(const rt_tensor_t *t);         /* bytes from first to last element */
RT_API size_t rt_element_size(const rt_tensor_t *t);   /* type size (bytes per block) */
RT_API int rt_n_dims(const rt_tensor_t *t);            /* 1 + index of the last ne > 1 */
RT_API bool rt_is_contiguous(const rt_tensor_t *t);
RT_API bool rt_is_transposed(const rt_tensor_t *t);    /* nb[0] > nb[1] */
RT_API bool rt_is_permuted(const rt_tensor_t *t);      /* strides not in increasing order */
RT_API bool rt_is_view(const rt_tensor_t *t);
RT_API bool rt_are_same_shape(const rt_tensor_t *a, const rt_tensor_t *b);
RT_API bool rt_can_repeat(const rt_tensor_t *b, const rt_tensor_t *a); /* b broadcasts to a */
/* Writes "name{ne0,ne1,ne2,ne3}:type" into buf, for messages. */
RT_API const char *rt_tensor_describe(const rt_tensor_t *t, char *buf, size_t size);

//===--- graph constructors: the view family ---===//

/* Views share a's bytes. view_Nd takes strides nb1.. from the caller and a
 * byte offset into a; reshape requires a contiguous a; permute sends
 * dimension i of a to position axis_i. None of them copies. */
RT_API rt_tensor_t *rt_view_1d(rt_context_t *ctx, rt_tensor_t *a, int64_t ne0, size_t offset);
RT_API rt_tensor_t *rt_view_2d(rt_context_t *ctx, rt_tensor_t *a, int64_t ne0, int64_t ne1,
                               size_t nb1, size_t offset);
RT_API rt_tensor_t *rt_view_3d(rt_context_t *ctx, rt_tensor_t *a, int64_t ne0, int64_t ne1,
                               int64_t ne2, size_t nb1, size_t nb2, size_t offset);
RT_API rt_tensor_t *rt_view_4d(rt_context_t *ctx, rt_tensor_t *a, int64_t ne0, int64_t ne1,
                               int64_t ne2, int64_t ne3, size_t nb1, size_t nb2, size_t nb3,
                               size_t offset);
RT_API rt_tensor_t *rt_view_tensor(rt_context_t *ctx, rt_tensor_t *a); /* same shape */
RT_API rt_tensor_t *rt_reshape(rt_context_t *ctx, rt_tensor_t *a, const rt_tensor_t *shape);
RT_API rt_tensor_t *rt_reshape_1d(rt_context_t *ctx, rt_tensor_t *a, int64_t ne0);
RT_API rt_tensor_t *rt_reshape_2d(rt_context_t *ctx, rt_tensor_t *a, int64_t ne0, int64_t ne1);
RT_API rt_tensor_t *rt_reshape_3d(rt_context_t *ctx, rt_tensor_t *a, int64_t ne0, int64_t ne1,
                                  int64_t ne2);
RT_API rt_tensor_t *rt_reshape_4d(rt_context_t *ctx, rt_tensor_t *a, int64_t ne0, int64_t ne1,
                                  int64_t ne2, int64_t ne3);
RT_API rt_tensor_t *rt_permute(rt_context_t *ctx, rt_tensor_t *a, int axis0, int axis1,
                               int axis2, int axis3);
RT_API rt_tensor_t *rt_transpose(rt_context_t *ctx, rt_tensor_t *a);

//===--- graph constructors: copies ---===//

RT_API rt_tensor_t *rt_cont(rt_context_t *ctx, rt_tensor_t *a);
RT_API rt_tensor_t *rt_cont_2d(rt_context_t *ctx, rt_tensor_t *a, int64_t ne0, int64_t ne1);
RT_API rt_tensor_t *rt_cont_3d(rt_context_t *ctx, rt_tensor_t *a, int64_t ne0, int64_t ne1,
                               int64_t ne2);
RT_API rt_tensor_t *rt_cont_4d(rt_context_t *ctx, rt_tensor_t *a, int64_t ne0, int64_t ne1,
                               int64_t ne2, int64_t ne3);
/* Copies a into b (converting types); the result is a view of b. */
RT_API rt_tensor_t *rt_cpy(rt_context_t *ctx, rt_tensor_t *a, rt_tensor_t *b);
/* A new contiguous tensor of `type` with a's shape, filled by CPY from a. */
RT_API rt_tensor_t *rt_cast(rt_context_t *ctx, rt_tensor_t *a, rt_type_t type);

//===--- graph constructors: compute ---===//

RT_API rt_tensor_t *rt_get_rows(rt_context_t *ctx, rt_tensor_t *a, rt_tensor_t *rows);
#if RT_TARGETS(1, 1)
/* abi >= 1.1: writes the rows of b over rows `rows` of a (SET_ROWS); the
 * result is a view of a. */
RT_API rt_tensor_t *rt_set_rows(rt_context_t *ctx, rt_tensor_t *a, rt_tensor_t *b,
                                rt_tensor_t *rows);
#endif
RT_API rt_tensor_t *rt_add(rt_context_t *ctx, rt_tensor_t *a, rt_tensor_t *b);
RT_API rt_tensor_t *rt_sub(rt_context_t *ctx, rt_tensor_t *a, rt_tensor_t *b);
RT_API rt_tensor_t *rt_mul(rt_context_t *ctx, rt_tensor_t *a, rt_tensor_t *b);
RT_API rt_tensor_t *rt_div(rt_context_t *ctx, rt_tensor_t *a, rt_tensor_t *b);
RT_API rt_tensor_t *rt_scale(rt_context_t *ctx, rt_tensor_t *a, float s);
RT_API rt_tensor_t *rt_norm(rt_context_t *ctx, rt_tensor_t *a, float eps);
RT_API rt_tensor_t *rt_rms_norm(rt_context_t *ctx, rt_tensor_t *a, float eps);
RT_API rt_tensor_t *rt_mul_mat(rt_context_t *ctx, rt_tensor_t *a, rt_tensor_t *b);
RT_API rt_tensor_t *rt_soft_max(rt_context_t *ctx, rt_tensor_t *a);
/* softmax(a*scale + mask); mask may be NULL. */
RT_API rt_tensor_t *rt_soft_max_ext(rt_context_t *ctx, rt_tensor_t *a, rt_tensor_t *mask,
                                    float scale);
RT_API rt_tensor_t *rt_diag_mask_inf(rt_context_t *ctx, rt_tensor_t *a, int n_past);
RT_API rt_tensor_t *rt_gelu(rt_context_t *ctx, rt_tensor_t *a);
RT_API rt_tensor_t *rt_silu(rt_context_t *ctx, rt_tensor_t *a);
#if RT_TARGETS(1, 2)
/* abi >= 1.2: tanh(a), elementwise (RT_OP_TANH) */
RT_API rt_tensor_t *rt_tanh(rt_context_t *ctx, rt_tensor_t *a);
#endif
#if RT_TARGETS(1, 3)
/* abi >= 1.3: softmax(cap(scale * K^T Q) + mask) V in one op (RT_OP_FLASH_ATTN):
 * q {D, N, H, n3}, k {D, n_kv, H_kv, n3}, v {Dv, n_kv, H_kv, n3}, mask
 * {n_kv, >= N} or NULL -> {Dv, H, N, n3}; softcap 0 for none. */
RT_API rt_tensor_t *rt_flash_attn(rt_context_t *ctx, rt_tensor_t *q, rt_tensor_t *k, rt_tensor_t *v,
                                  rt_tensor_t *mask, float scale, float softcap);
#endif
RT_API rt_tensor_t *rt_swiglu(rt_context_t *ctx, rt_tensor_t *a, rt_tensor_t *b);
/* rope with freq_base 10000 and freq_scale 1 (llama's defaults). */
RT_API rt_tensor_t *rt_rope(rt_context_t *ctx, rt_tensor_t *a, rt_tensor_t *pos, int n_dims,
                            int mode);
RT_API rt_tensor_t *rt_rope_ext(rt_context_t *ctx, rt_tensor_t *a, rt_tensor_t *pos, int n_dims,
                                int mode, float freq_base, float freq_scale);
RT_API rt_tensor_t *rt_argmax(rt_context_t *ctx, rt_tensor_t *a);

//===--- rt_graph_t ---===//

/* A graph lives in its context's pool (rt_graph_overhead bytes) and dies
 * with it. build_forward_expand adds t and everything it depends on in
 * topological order: tensors with an op (or a view) become nodes, the rest
 * leafs. Expanding twice with shared ancestors adds them once. */
RT_API rt_graph_t *rt_graph_create(rt_context_t *ctx, size_t size);
RT_API void rt_graph_build_forward_expand(rt_graph_t *g, rt_tensor_t *t);
RT_API void rt_graph_reset(rt_graph_t *g);  /* empty again, same capacity */
RT_API int32_t rt_graph_size(const rt_graph_t *g);
RT_API int32_t rt_graph_n_nodes(const rt_graph_t *g);
RT_API int32_t rt_graph_n_leafs(const rt_graph_t *g);
/* Node i in execution order; a negative i counts from the end (-1: last). */
RT_API rt_tensor_t *rt_graph_node(const rt_graph_t *g, int32_t i);
RT_API rt_tensor_t *rt_graph_leaf(const rt_graph_t *g, int32_t i);
RT_API rt_tensor_t *const *rt_graph_nodes(const rt_graph_t *g);
/* How many nodes of g read t as a source; -1 when t is not in g. */
RT_API int32_t rt_graph_use_count(const rt_graph_t *g, const rt_tensor_t *t);
RT_API bool rt_graph_contains(const rt_graph_t *g, const rt_tensor_t *t);
RT_API rt_tensor_t *rt_graph_get_tensor(const rt_graph_t *g, const char *name);
/* One line per leaf and node: index, op, type, shape, strides, sources. */
RT_API void rt_graph_write_text(const rt_graph_t *g, rt_write_fn write, void *user_data);
/* The graph in Graphviz DOT: leafs as boxes, nodes as ellipses, edges src -> node. */
RT_API void rt_graph_write_dot(const rt_graph_t *g, rt_write_fn write, void *user_data);

//===--- rt_topology_t: the machine's layout ---===//

/* What hwloc says about the machine (or about the recorded topology named
 * by HWLOC_XMLFILE or by the xml_path argument). Without hwloc, available
 * is false and the counts come from the OS where it tells them. */
typedef struct rt_topology rt_topology_t;
typedef struct rt_topology_summary {
    uint32_t struct_size;
    bool available;          /* from hwloc */
    int32_t n_packages;
    int32_t n_numa_nodes;
    int32_t n_cores;
    int32_t n_pus;           /* hardware threads */
    uint64_t memory_total;   /* bytes */
    uint64_t l1d_size;       /* bytes of one L1 data cache, 0 if unknown */
    uint64_t l2_size;        /* bytes of one L2 cache, 0 if unknown */
    uint64_t l3_size;        /* bytes of one L3 cache, 0 if unknown */
    int32_t n_l3;            /* number of L3 caches */
    bool is_this_system;     /* this machine, not a recorded file: ids may be pinned to */
} rt_topology_summary_t;

/* xml_path NULL: this machine, or HWLOC_XMLFILE when set. */
RT_API rt_status_t rt_topology_create(const char *xml_path, rt_topology_t **out_topo);
/* The topology the runtime's own decisions use (device NUMA nodes, thread
 * pinning): this machine's, or the file HWLOC_XMLFILE names when set. Each
 * is loaded on first use and kept until the library is unloaded; borrowed,
 * never destroy it. NULL when it cannot be loaded (logged). Thread-safe. */
RT_API const rt_topology_t *rt_topology_get_shared(void);
RT_API void rt_topology_destroy(rt_topology_t *topo);
RT_API rt_status_t rt_topology_get_summary(const rt_topology_t *topo,
                                           rt_topology_summary_t *out_summary);
/* NUMA node (hwloc logical index) nearest the PCI device "dddd:bb:dd.f";
 * -1 when unknown. */
RT_API int32_t rt_topology_numa_node_of_pci(const rt_topology_t *topo, const char *pci_bus_id);
/* A human summary: packages, NUMA nodes with memory, cores, caches. */
RT_API void rt_topology_write_text(const rt_topology_t *topo, rt_write_fn write, void *user_data);

/* The OS processor ids of NUMA node `node` (logical index) that this
 * process may use, ascending. Writes at most max_ids of them into
 * out_cpu_ids and sets *out_n_ids to how many there are (call with
 * max_ids 0 to size the array). RT_ERR_NOT_FOUND for a node that does not
 * exist, RT_ERR_UNSUPPORTED without hwloc. Thread-safe. */
RT_API rt_status_t rt_topology_numa_node_cpus(const rt_topology_t *topo, int32_t node,
                                              int32_t max_ids, int32_t *out_cpu_ids,
                                              int32_t *out_n_ids);
/* Where n_threads worker threads would be pinned: the OS processor id for
 * thread i is out_cpu_ids[i]. Decides only; pins nothing, so a recorded
 * topology can be asked too. Only PUs this process may use are chosen.
 *   COMPACT: the NUMA node of the first PU, then the following nodes; in
 *            each, one PU per core first, then the SMT siblings.
 *   SPREAD:  the same per-node order, taking one PU from each node in turn.
 *   NONE:    no ids (*out_n_ids is 0).
 *   DEFAULT: rt_topology_default_placement().
 * n_threads 0 means one thread per usable PU; more threads than PUs wrap
 * around the list. Writes at most max_ids ids and sets *out_n_ids to
 * n_threads (0 for NONE). RT_ERR_INVALID_ARGUMENT for a negative n_threads
 * or an unknown placement, RT_ERR_UNSUPPORTED without hwloc. Thread-safe. */
RT_API rt_status_t rt_topology_place_threads(const rt_topology_t *topo,
                                             rt_cpu_placement_t placement, int32_t n_threads,
                                             int32_t max_ids, int32_t *out_cpu_ids,
                                             int32_t *out_n_ids);
/* What RT_CPU_PLACEMENT_DEFAULT means now: the environment's
 * RT_CPU_PLACEMENT (compact, spread or none), else COMPACT. An unknown
 * value is logged and reads as COMPACT. */
RT_API rt_cpu_placement_t rt_topology_default_placement(void);
/* "compact", "spread", "none", "default"; "?" if unknown. */
RT_API const char *rt_cpu_placement_name(rt_cpu_placement_t placement);

//===--- rt_registry_t: plugins and devices ---===//

/* The registry loads plugins and lists their devices. Where it looks, in
 * order, taking each plugin name once (the first found wins):
 *   1. RT_PLUGIN_PATH, colon-separated directories (ignored in setuid and
 *      setgid processes);
 *   2. the directory rt-plugins/ next to the core library;
 *   3. the install directory (PREFIX/lib/rt-plugins).
 * Never the current directory, never a relative path. Plugin files are
 * named rt-plugin-NAME.so. RT_PLUGINS (comma-separated names or globs)
 * keeps only the plugins it matches and RT_PLUGINS_DISABLE drops those it
 * matches, before any file is opened. A plugin that cannot be loaded is
 * recorded with the reason and skipped; the others still load.
 * Creating the registry opens and queries each plugin; a plugin is started
 * (its create, which opens its driver) only when it is first needed: a
 * lookup by name starts the plugin that name points at ("cpu0": plugin
 * cpu) and no other, and anything that lists or counts plugins or devices
 * starts them all. The answers are the same as if every plugin had
 * started at creation; what a process never asks about costs it nothing. */
/* (optional) Asked before each plugin file is opened, with its absolute
 * path: return RT_OK to let the registry open it, anything else to have it
 * recorded as not loaded with that status and `reason` (written by the
 * callback, at most reason_size bytes) as its message. For tools that test
 * a plugin in a child process first (rt-devices --probe). */
typedef rt_status_t (*rt_plugin_admit_fn)(void *user_data, const char *path, char *reason,
                                          size_t reason_size);

typedef struct rt_registry_options {
    uint32_t struct_size;
    const rt_allocator_t *allocator; /* NULL: malloc */
    bool no_scan;                    /* load nothing now; use rt_registry_load_plugin */
    const char *plugin_path;         /* used instead of RT_PLUGIN_PATH when not NULL */
#if RT_TARGETS(1, 2)
    /* abi >= 1.2 */
    rt_plugin_admit_fn admit;        /* NULL: every file that passes the checks is opened */
    void *admit_user_data;
#endif
} rt_registry_options_t;

/* The ABI 1.0 entry point, kept for applications built before 1.2 (and
 * for those that target 1.0 or 1.1, RT_TARGET_ABI): they are treated as
 * 1.0 (the safe side: they see less, never what they would misuse). */
RT_API rt_status_t rt_registry_create(const rt_registry_options_t *options,
                                      rt_registry_t **out_registry);
#if RT_TARGETS(1, 2)
/* abi >= 1.2: creates a registry for an application built against ABI
 * app_abi_version (rt_base.h, rule 8): it sees only the buffer types, ops
 * and types that version defines (a 1.0 application never sees a weights
 * buffer type). Applications call it through the rt_registry_create macro
 * below, which passes the ABI they target (RT_TARGET_ABI). */
RT_API rt_status_t rt_registry_create_v2(const rt_registry_options_t *options,
                                         uint32_t app_abi_version, rt_registry_t **out_registry);
#define rt_registry_create(options, out_registry) \
    rt_registry_create_v2((options), (uint32_t)(RT_TARGET_ABI), (out_registry))
/* abi >= 1.2: the version the registry's application declared. */
RT_API uint32_t rt_registry_app_abi_version(const rt_registry_t *reg);
#endif
/* Destroys devices, plugins and every buffer and queue still alive. */
RT_API void rt_registry_destroy(rt_registry_t *reg);
/* Loads one plugin file by absolute path. The returned status is also
 * recorded in the plugin list. */
RT_API rt_status_t rt_registry_load_plugin(rt_registry_t *reg, const char *path);

/* Every plugin file the registry considered, loaded or not. */
struct rt_plugin_info {
    uint32_t struct_size;    /* of the library's struct; read only fields inside it */
    const char *path;        /* the file */
    const char *name;        /* the plugin's name, or the file's if unknown */
    uint32_t abi_version;    /* what it declared; 0 if it got that far */
    rt_status_t status;      /* RT_OK when loaded */
    const char *message;     /* why not loaded; for a plugin loaded with no devices, why
                                it has none (the last line it logged); else "" */
    uint32_t n_devices;
};
RT_API int32_t rt_registry_plugin_count(const rt_registry_t *reg);
RT_API const rt_plugin_info_t *rt_registry_plugin(const rt_registry_t *reg, int32_t i);
/* Directories searched, in order, as one colon-separated string. */
RT_API const char *rt_registry_search_path(const rt_registry_t *reg);

/* Devices of every loaded plugin, best first: discrete GPUs, integrated
 * GPUs, accelerators, the CPU, then software emulations (they run on the
 * CPU's cores, only slower, and are there to be named); within a kind by
 * free memory (most first, as get_props said at load), then by plugin name
 * and the plugin's order, so the order is total and stable. With
 * RT_DEVICE_ORDER=plugin the order is plugin name, then the plugin's
 * order. Names do not depend on the order: "cuda1" is the plugin's device
 * 1 wherever it sits. Index 0 is the default device. */
RT_API int32_t rt_registry_device_count(const rt_registry_t *reg);
RT_API rt_device_t *rt_registry_device(const rt_registry_t *reg, int32_t i);
/* By name ("cpu0", "vulkan1"); NULL if none. Starts only the plugin the
 * name points at (and, for a name it does not have, all of them), so a
 * device's place in rt_registry_device's order may change when another
 * plugin starts later; handles stay valid. Thread-safe, as are the
 * lookups above. */
RT_API rt_device_t *rt_registry_device_by_name(const rt_registry_t *reg, const char *name);

//===--- rt_device_t ---===//

RT_API const char *rt_device_name(const rt_device_t *dev);         /* "cpu0" */
RT_API const char *rt_device_plugin_name(const rt_device_t *dev);  /* "cpu" */
/* Fills props (its struct_size must be set by the caller). */
RT_API rt_status_t rt_device_get_props(const rt_device_t *dev, rt_device_props_t *props);
/* The first device (lower index) that is the same hardware as dev (same
 * PCI bus id or UUID), or NULL when dev is the first or only one. */
RT_API rt_device_t *rt_device_same_as(const rt_device_t *dev);
/* The NUMA node (hwloc logical index) nearest the device, from its PCI bus
 * id in the machine's topology (HWLOC_XMLFILE when set); -1 when unknown:
 * no hwloc, no PCI bus id (the CPU), or a bus id the topology lacks. The
 * topology is loaded on first use and kept. Thread-safe. */
RT_API int32_t rt_device_numa_node(const rt_device_t *dev);
/* The OS processor ids of that node, as rt_topology_numa_node_cpus;
 * RT_ERR_NOT_FOUND when the node is unknown. */
RT_API rt_status_t rt_device_numa_cpus(const rt_device_t *dev, int32_t max_ids,
                                       int32_t *out_cpu_ids, int32_t *out_n_ids);
RT_API int32_t rt_device_buffer_type_count(const rt_device_t *dev);
RT_API rt_buffer_type_t *rt_device_buffer_type(const rt_device_t *dev, int32_t i);
RT_API bool rt_device_supports_op(const rt_device_t *dev, const rt_tensor_t *node);
RT_API bool rt_device_supports_buft(const rt_device_t *dev, const rt_buffer_type_t *buft);

//===--- buffer types and buffers ---===//

RT_API const char *rt_buffer_type_name(const rt_buffer_type_t *buft);
RT_API size_t rt_buffer_type_alignment(const rt_buffer_type_t *buft);
RT_API size_t rt_buffer_type_max_size(const rt_buffer_type_t *buft); /* SIZE_MAX: no limit */
RT_API size_t rt_buffer_type_alloc_size(const rt_buffer_type_t *buft, const rt_tensor_t *t);
RT_API bool rt_buffer_type_is_host(const rt_buffer_type_t *buft);
#if RT_TARGETS(1, 1)
/* abi >= 1.1: a type that keeps weights in the device's own layout
 * (RT_BUFT_FLAG_WEIGHTS in rt_plugin.h: whole-tensor set and get only, used
 * only by the ops the device accepts them for), and whether it takes t. */
RT_API bool rt_buffer_type_is_weights(const rt_buffer_type_t *buft);
RT_API bool rt_buffer_type_supports_tensor(const rt_buffer_type_t *buft, const rt_tensor_t *t);
#endif
RT_API rt_device_t *rt_buffer_type_device(const rt_buffer_type_t *buft);

RT_API rt_status_t rt_buffer_alloc(rt_buffer_type_t *buft, size_t size, rt_buffer_t **out_buf);
RT_API void rt_buffer_free(rt_buffer_t *buf);
RT_API void *rt_buffer_base(const rt_buffer_t *buf);
RT_API size_t rt_buffer_size(const rt_buffer_t *buf);
RT_API rt_buffer_type_t *rt_buffer_get_type(const rt_buffer_t *buf);
RT_API rt_status_t rt_buffer_clear(rt_buffer_t *buf, uint8_t value);
/* Wraps [ptr, ptr + size) of host memory the caller owns as a buffer of
 * dev, without copying (how mmapped weights are used in place). Needs
 * RT_DEVICE_CAP_BUFFER_FROM_HOST_PTR, else RT_ERR_UNSUPPORTED. The memory
 * must outlive the buffer; freeing the buffer does not free it. */
RT_API rt_status_t rt_device_buffer_from_host_ptr(rt_device_t *dev, void *ptr, size_t size,
                                                  rt_buffer_t **out_buf);
/* Places t at addr inside buf (docs/memory.md §3.2): t must be a base
 * tensor with no data yet and [addr, addr + alloc size) inside buf. */
RT_API rt_status_t rt_tensor_alloc(rt_buffer_t *buf, rt_tensor_t *t, void *addr);
/* Gives a view its data from its view_src (which must have data). */
RT_API rt_status_t rt_view_init(rt_tensor_t *t);

/* Sizes and allocates one buffer of buft for every tensor of a no_alloc
 * context that has no data yet, and places them in order (docs/memory.md
 * §3.2). Views get their data from their base. When the tensors
 * exceed the type's max size they are split, in creation order, over
 * several buffers: *out_buf is the first, freeing it frees the others, and
 * rt_buffer_base/rt_buffer_size describe the first part. A single tensor
 * larger than the max size: RT_ERR_UNSUPPORTED. */
RT_API rt_status_t rt_alloc_ctx_tensors(rt_context_t *ctx, rt_buffer_type_t *buft,
                                        rt_buffer_t **out_buf);

/* Bytes [offset, offset + size) of a tensor's data, to and from host memory,
 * through its buffer (or directly for context memory). */
RT_API rt_status_t rt_tensor_set(rt_tensor_t *t, const void *data, size_t offset, size_t size);
RT_API rt_status_t rt_tensor_get(const rt_tensor_t *t, void *data, size_t offset, size_t size);
RT_API rt_status_t rt_tensor_memset(rt_tensor_t *t, uint8_t value, size_t offset, size_t size);
/* Copies src's bytes into dst (same type and shape, both contiguous). */
RT_API rt_status_t rt_tensor_copy(const rt_tensor_t *src, rt_tensor_t *dst);

//===--- rt_queue_t: running graphs ---===//

/* options NULL: all defaults. On a CPU device given no cpu_ids, the core
 * pins the workers where rt_topology_place_threads(cpu_placement,
 * n_threads) says, on this machine's topology (never a recorded one's). */
RT_API rt_status_t rt_queue_create(rt_device_t *dev, const rt_queue_options_t *options,
                                   rt_queue_t **out_queue);
RT_API void rt_queue_destroy(rt_queue_t *q);
RT_API rt_device_t *rt_queue_device(const rt_queue_t *q);
/* Runs the graph's nodes on the queue and waits for them. Every tensor the
 * graph touches must have data in a buffer the device supports. */
RT_API rt_status_t rt_queue_compute(rt_queue_t *q, const rt_graph_t *g);
/* Submits without waiting (where the device is asynchronous). */
RT_API rt_status_t rt_queue_compute_async(rt_queue_t *q, const rt_graph_t *g);
RT_API rt_status_t rt_queue_synchronize(rt_queue_t *q);

#ifdef __cplusplus
}
#endif

#include "rt_alloc.h" /* tallocr and gallocr: placing tensors in buffers */
#include "rt_gguf.h"  /* GGUF files: reading and writing */
#include "rt_sched.h" /* the scheduler: one graph across several devices */

#endif /* RT_H */
