/* SPDX-License-Identifier: MIT */
/* cuda_impl.h: the private shapes of the CUDA plugin, shared by its host
 * files (C11; kernels/kernels.h is the interface to the CUDA C++ side).
 * The plugin -> its devices -> their buffers and queues, cuBLAS loaded at
 * run time, and the internal functions each file offers the others.
 *
 * Linking: the CUDA runtime is linked statically (only the driver,
 * libcuda.so.1, is needed at run time; the runtime opens it itself, so a
 * machine without one still loads the plugin, which then reports zero
 * devices and why). cuBLAS is dlopen'ed at create (cublas.c): without it
 * MUL_MAT runs on the plugin's own kernels.
 *
 * Object graph and lifetimes: rt_cu_plugin_t owns its rt_cu_device_t array
 * and the cuBLAS library. A device owns its buffer types, tables and the
 * caching allocator of device memory (pool.c). Buffers (rt_cu_buffer_t,
 * state the core allocates) and queues (rt_cu_queue_t) point at their
 * device and are destroyed before it; the core guarantees that order.
 *
 * Threading: CUDA's current device is per thread, so every entry point
 * that touches a device first makes it current (rt_cu_device_use). A queue
 * is driven by one thread at a time (rt_plugin.h); the pool has a lock.
 *
 * Environment: RT_CUDA_GRAPHS=0 (no CUDA graph capture, graph.c),
 * RT_CUDA_MATMUL=f32|tiled (ops_mul_mat.c), RT_CUDA_CUBLAS=PATH|0
 * (cublas.c). */
#ifndef RT_CU_IMPL_H
#define RT_CU_IMPL_H

#include <cuda_runtime_api.h>

#include "../../abi/rt_op_traits.h"
#include "../../abi/rt_plugin.h"
#include "../common/plugin_os.h" /* OS services */
#include "kernels/kernels.h"

//===--- cuBLAS, loaded at run time (cublas.c) ---===//

typedef struct rt_cu_cublas rt_cu_cublas_t;

/* Opens libcublas and resolves what the plugin calls; never fails: when
 * the library is missing *out is NULL and reason says why. */
RT_CU_INTERNAL rt_cu_cublas_t *rt_cu_cublas_load(const rt_host_t *host, char *reason, size_t size);
RT_CU_INTERNAL void rt_cu_cublas_unload(const rt_host_t *host, rt_cu_cublas_t *lib);
/* "13.1.0", for descriptions. */
RT_CU_INTERNAL const char *rt_cu_cublas_version(const rt_cu_cublas_t *lib);

/* One cuBLAS GEMM in rt's orientation, column-major as cuBLAS sees it:
 * c (m x n, F32, ldc) = a^T (a: k x m, lda) . b (k x n, ldb), for batch
 * matrices. Batches are stride_* apart, or, when ptrs is set (device
 * memory), listed there: batch a pointers, then b's, then c's. Types are
 * cudaDataType values; a and b have the same one. */
typedef struct rt_cu_gemm {
    int m, n, k, batch;
    int type;                     /* cudaDataType of a and b: R_32F, R_16F, R_16BF */
    const void *a, *b;
    void *c;
    int lda, ldb, ldc;            /* elements */
    long long stride_a, stride_b, stride_c; /* elements */
    void **ptrs;                  /* 3 * batch device pointers, or NULL */
} rt_cu_gemm_t;

struct rt_cu_queue;
/* Enqueues g on the queue's stream with its own cuBLAS handle (created on
 * first use, with a workspace so that it can be captured in a graph). */
RT_CU_INTERNAL rt_status_t rt_cu_blas_gemm(struct rt_cu_queue *q, const rt_cu_gemm_t *g);
/* Releases the queue's handle and workspace; the queue must be idle. */
RT_CU_INTERNAL void rt_cu_blas_release(struct rt_cu_queue *q);

//===--- the plugin and its devices ---===//

typedef struct rt_cu_device rt_cu_device_t;

typedef struct rt_cu_plugin {
    const rt_host_t *host;
    rt_cu_device_t *devices;      /* n_devices used of cap_devices allocated */
    uint32_t n_devices, cap_devices;
    rt_cu_cublas_t *cublas;       /* NULL: own kernels only */
    int driver_version, runtime_version; /* 13000 for 13.0; 0 unknown */
    char cublas_reason[160];      /* why cublas is NULL */
} rt_cu_plugin_t;

/* Device memory cached for reuse instead of going back to cudaFree. */
typedef struct rt_cu_pool_block {
    void *ptr;
    size_t size;                  /* bytes, as cudaMalloc'd */
} rt_cu_pool_block_t;

typedef struct rt_cu_pool {
    rt_plugin_mutex_t lock;           /* everything below */
    rt_cu_pool_block_t *free;     /* n_free cached blocks */
    uint32_t n_free, cap_free;
    size_t cached;                /* bytes in free */
    size_t limit;                 /* most bytes kept cached */
} rt_cu_pool_t;

enum { RT_CU_BUFT_DEVICE = 0, RT_CU_BUFT_HOST = 1, RT_CU_N_BUFT = 2 };

struct rt_cu_device {
    rt_cu_plugin_t *plugin;
    const rt_host_t *host;
    int ordinal;                  /* CUDA device number */
    uint32_t index;               /* among the plugin's devices: "CUDA<index>" */
    rt_device_props_t props;      /* filled at start; memory refreshed by get_props */
    int cc_major, cc_minor;       /* compute capability */
    int n_sm;
    bool integrated;              /* shares host memory */
    bool can_register;            /* offers buffer_from_host_ptr (cudaHostRegister) */
    _Atomic int32_t numa_node;    /* NUMA node nearest the device, -1 unknown */
    rt_buffer_type_desc_t bufts[RT_CU_N_BUFT];
    char buft_names[RT_CU_N_BUFT][32];
    rt_device_vtable_t vtable;    /* per device: its next chain points into it */
    rt_device_ext_async_t async;
    rt_device_ext_host_ptr_t host_ptr;
    rt_cu_pool_t pool;
};

/* Makes the device current for the calling thread; RT_OK or a message. */
RT_CU_INTERNAL rt_status_t rt_cu_device_use(const rt_cu_device_t *dev);
/* RT_OK for cudaSuccess; otherwise sets the error "func: what: <name>:
 * <string>" and returns RT_ERR_OUT_OF_MEMORY or RT_ERR_DEVICE. */
RT_CU_INTERNAL rt_status_t rt_cu_status(const rt_host_t *host, cudaError_t e, const char *func,
                                        const char *what);
#define RT_CU_TRY(host, call) rt_cu_status((host), (call), __func__, #call)
RT_CU_INTERNAL void *rt_cu_alloc(const rt_host_t *host, size_t size); /* zeroed */
RT_CU_INTERNAL void rt_cu_free(const rt_host_t *host, void *p, size_t size);

//===--- devices (device.c) ---===//

RT_CU_INTERNAL rt_status_t rt_cu_plugin_start(rt_cu_plugin_t *p);
RT_CU_INTERNAL void rt_cu_plugin_stop(rt_cu_plugin_t *p);

//===--- device memory (pool.c) ---===//

RT_CU_INTERNAL bool rt_cu_pool_init(rt_cu_pool_t *pool, size_t limit);
/* Frees every cached block and the pool itself; the device must be current. */
RT_CU_INTERNAL void rt_cu_pool_deinit(const rt_host_t *host, rt_cu_pool_t *pool);
/* size bytes (>= 1) of device memory; *out_size is what was really taken
 * (give it back to rt_cu_pool_free). The device must be current. */
RT_CU_INTERNAL rt_status_t rt_cu_pool_alloc(rt_cu_device_t *dev, size_t size, void **out_ptr,
                                            size_t *out_size);
RT_CU_INTERNAL void rt_cu_pool_free(rt_cu_device_t *dev, void *ptr, size_t size);

//===--- buffers (buffer.c) ---===//

/* A buffer's state, in the buffer_state_size bytes the core allocates. */
#define RT_CU_BUFFER_MAGIC 0x43554246u /* "FBUC" */
typedef enum rt_cu_buffer_kind {
    RT_CU_MEM_DEVICE = 0,         /* device memory from the pool */
    RT_CU_MEM_PINNED = 1,         /* cudaHostAlloc'd host memory */
    RT_CU_MEM_REGISTERED = 2      /* the caller's host memory, cudaHostRegister'ed */
} rt_cu_buffer_kind_t;

typedef struct rt_cu_buffer {
    uint32_t magic;
    rt_cu_buffer_kind_t kind;
    rt_cu_device_t *dev;
    char *ptr;                    /* first byte: a device or a host address */
    size_t size;                  /* bytes asked for */
    size_t alloc_size;            /* bytes taken from the pool */
} rt_cu_buffer_t;

RT_CU_INTERNAL void rt_cu_buffer_types_init(rt_cu_device_t *dev);
RT_CU_INTERNAL rt_status_t rt_cu_buffer_from_host_ptr(void *device, void *ptr, size_t size,
                                                      void *state);
/* Our buffer state behind a tensor's buffer (of any CUDA device), or NULL. */
RT_CU_INTERNAL rt_cu_buffer_t *rt_cu_buffer_of(const rt_host_t *host, const rt_tensor_t *t);
/* RT_OK when bytes [offset, offset + size) of t lie in b; else the error. */
RT_CU_INTERNAL rt_status_t rt_cu_buffer_range(const rt_cu_buffer_t *b, const rt_tensor_t *t,
                                              size_t offset, size_t size);

//===--- queues, events, transfers (queue.c) ---===//

/* The key of a captured graph: what its kernels' parameters were made of. */
typedef struct rt_cu_graph_key {
    unsigned char *bytes;
    size_t size, cap;             /* bytes used and allocated */
} rt_cu_graph_key_t;

typedef struct rt_cu_queue {
    rt_cu_device_t *dev;
    cudaStream_t stream;
    cudaEvent_t order;            /* orders cross-queue copies */
    void *blas;                   /* cublasHandle_t, created on first use */
    void *blas_ws;                /* its workspace (pool memory) */
    size_t blas_ws_size;
    void *scratch;                /* conversions for cuBLAS (pool memory) */
    size_t scratch_size;
    /* CUDA graphs (graph.c): the graph captured for key `captured` is
     * replayed while nodes keep producing that key; `seen` is the key of
     * the last graph run eagerly, so a graph is captured on its second
     * identical run. */
    bool graphs;                  /* RT_CUDA_GRAPHS != 0 */
    cudaGraphExec_t exec;
    rt_cu_graph_key_t captured, seen, next;
} rt_cu_queue_t;

RT_CU_INTERNAL rt_status_t rt_cu_queue_create(void *device, const rt_queue_options_t *options,
                                              void **out_queue);
RT_CU_INTERNAL void rt_cu_queue_destroy(void *queue);
RT_CU_INTERNAL rt_status_t rt_cu_queue_synchronize(void *queue);
RT_CU_INTERNAL void rt_cu_async_init(rt_cu_device_t *dev);
/* Makes the queue's scratch hold size bytes (waits for the queue when it
 * must grow). Invalidates a captured graph when the address changes. */
RT_CU_INTERNAL rt_status_t rt_cu_queue_scratch(rt_cu_queue_t *q, size_t size);

//===--- graphs and ops (graph.c, ops.c, ops_mul_mat.c, ops_flash_attn.c) ---===//

RT_CU_INTERNAL rt_status_t rt_cu_graph_compute(void *queue, rt_tensor_t *const *nodes,
                                               int32_t n_nodes);
RT_CU_INTERNAL void rt_cu_graph_release(rt_cu_queue_t *q);
RT_CU_INTERNAL bool rt_cu_supports_op(void *device, const rt_tensor_t *node);
/* False for NONE and the view family, and for empty nodes. */
RT_CU_INTERNAL bool rt_cu_node_computes(const rt_tensor_t *node);
/* Checks every node before anything runs; fills *out_scratch with the
 * scratch bytes the largest node needs. */
RT_CU_INTERNAL rt_status_t rt_cu_graph_check(rt_cu_queue_t *q, rt_tensor_t *const *nodes,
                                             int32_t n_nodes, size_t *out_scratch);
/* Enqueues one node's kernels on the queue's stream. */
RT_CU_INTERNAL rt_status_t rt_cu_node_run(rt_cu_queue_t *q, const rt_tensor_t *node);
RT_CU_INTERNAL void rt_cu_tensor_pack(const rt_tensor_t *t, rt_cu_tensor_t *out);

RT_CU_INTERNAL bool rt_cu_mul_mat_supported(const rt_tensor_t *node);
RT_CU_INTERNAL size_t rt_cu_mul_mat_scratch(const rt_cu_device_t *dev, const rt_tensor_t *node);
RT_CU_INTERNAL rt_status_t rt_cu_mul_mat_run(rt_cu_queue_t *q, const rt_tensor_t *node,
                                             const rt_cu_node_t *n);
RT_CU_INTERNAL bool rt_cu_flash_attn_supported(const rt_tensor_t *node);
RT_CU_INTERNAL size_t rt_cu_flash_attn_scratch(const rt_cu_device_t *dev, const rt_tensor_t *node);
RT_CU_INTERNAL rt_status_t rt_cu_flash_attn_run(rt_cu_queue_t *q, const rt_tensor_t *node,
                                                const rt_cu_node_t *n);

#endif /* RT_CU_IMPL_H */
