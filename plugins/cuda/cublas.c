/* SPDX-License-Identifier: MIT */
/* cublas.c: cuBLAS, opened with dlopen when the plugin is created. Linking
 * it statically would add some 100 MB of kernels (with cublasLt) to the
 * plugin, and linking it dynamically would make the plugin fail to load on
 * machines without it; opened at run time it is optional: without it
 * MUL_MAT runs on the plugin's own kernels. RT_CUDA_CUBLAS names the
 * library to open instead of the usual sonames; RT_CUDA_CUBLAS=0 does
 * without it.
 *
 * Each queue has its own handle (handles are not to be shared between
 * threads), bound to the queue's stream, with a workspace of its own so
 * that cuBLAS never allocates while a graph is being captured. */
#include "cuda_impl.h"

#include <cublas_api.h>
#include <stdio.h>
#include <string.h>

/* The library's 32 MiB workspace recommendation for Hopper, enough for all. */
#define RT_CU_BLAS_WORKSPACE ((size_t)32 << 20)

typedef cublasStatus_t (*cu_create_fn)(cublasHandle_t *);
typedef cublasStatus_t (*cu_destroy_fn)(cublasHandle_t);
typedef cublasStatus_t (*cu_set_stream_fn)(cublasHandle_t, cudaStream_t);
typedef cublasStatus_t (*cu_set_workspace_fn)(cublasHandle_t, void *, size_t);
typedef cublasStatus_t (*cu_set_math_mode_fn)(cublasHandle_t, cublasMath_t);
typedef cublasStatus_t (*cu_get_property_fn)(libraryPropertyType, int *);
typedef const char *(*cu_status_string_fn)(cublasStatus_t);
typedef cublasStatus_t (*cu_gemm_strided_fn)(cublasHandle_t, cublasOperation_t, cublasOperation_t,
                                             int, int, int, const void *, const void *,
                                             cudaDataType, int, long long, const void *,
                                             cudaDataType, int, long long, const void *, void *,
                                             cudaDataType, int, long long, int,
                                             cublasComputeType_t, cublasGemmAlgo_t);
typedef cublasStatus_t (*cu_gemm_batched_fn)(cublasHandle_t, cublasOperation_t, cublasOperation_t,
                                             int, int, int, const void *, const void *const[],
                                             cudaDataType, int, const void *const[], cudaDataType,
                                             int, const void *, void *const[], cudaDataType, int,
                                             int, cublasComputeType_t, cublasGemmAlgo_t);

struct rt_cu_cublas {
    void *dl;
    char version[16];
    cu_create_fn create;
    cu_destroy_fn destroy;
    cu_set_stream_fn set_stream;
    cu_set_workspace_fn set_workspace;
    cu_set_math_mode_fn set_math_mode;
    cu_status_string_fn status_string;
    cu_gemm_strided_fn gemm_strided;
    cu_gemm_batched_fn gemm_batched;
};

//===--- loading ---===//

#define CU_STR2(x) #x
#define CU_STR(x) CU_STR2(x)

/* Resolves every entry point; the first one missing goes to reason. */
static bool cu_cublas_resolve(rt_cu_cublas_t *lib, char *reason, size_t size) {
    static const char *const names[] = {
        "cublasCreate_v2", "cublasDestroy_v2", "cublasSetStream_v2", "cublasSetWorkspace_v2",
        "cublasSetMathMode", "cublasGetStatusString", "cublasGemmStridedBatchedEx",
        "cublasGemmBatchedEx",
    };
    void *fn[sizeof names / sizeof names[0]];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        fn[i] = rt_plugin_dl_sym(lib->dl, names[i]);
        if (!fn[i]) {
            snprintf(reason, size, "libcublas lacks %s", names[i]);
            return false;
        }
    }
    /* dlsym returns object pointers; POSIX guarantees they convert to functions. */
    memcpy(&lib->create, &fn[0], sizeof fn[0]);
    memcpy(&lib->destroy, &fn[1], sizeof fn[0]);
    memcpy(&lib->set_stream, &fn[2], sizeof fn[0]);
    memcpy(&lib->set_workspace, &fn[3], sizeof fn[0]);
    memcpy(&lib->set_math_mode, &fn[4], sizeof fn[0]);
    memcpy(&lib->status_string, &fn[5], sizeof fn[0]);
    memcpy(&lib->gemm_strided, &fn[6], sizeof fn[0]);
    memcpy(&lib->gemm_batched, &fn[7], sizeof fn[0]);
    return true;
}

static void cu_cublas_version(rt_cu_cublas_t *lib) {
    void *sym = rt_plugin_dl_sym(lib->dl, "cublasGetProperty");
    cu_get_property_fn get;
    int v[3] = { 0, 0, 0 };
    snprintf(lib->version, sizeof lib->version, "?");
    if (!sym) return;
    memcpy(&get, &sym, sizeof sym);
    if (get(MAJOR_VERSION, &v[0]) == CUBLAS_STATUS_SUCCESS && get(MINOR_VERSION, &v[1]) ==
        CUBLAS_STATUS_SUCCESS && get(PATCH_LEVEL, &v[2]) == CUBLAS_STATUS_SUCCESS)
        snprintf(lib->version, sizeof lib->version, "%d.%d.%d", v[0], v[1], v[2]);
}

/* The soname of the cuBLAS the plugin was built with, then the toolkit's
 * usual place, unless RT_CUDA_CUBLAS names one. */
static void *cu_cublas_open(char *reason, size_t size) {
    const char *env = rt_plugin_getenv("RT_CUDA_CUBLAS");
    if (env && *env) return rt_plugin_dl_open(env, reason, size);
    static const char *const names[] = {
        "libcublas.so." CU_STR(CUBLAS_VER_MAJOR),
        "/usr/local/cuda/lib64/libcublas.so." CU_STR(CUBLAS_VER_MAJOR),
    };
    void *dl = NULL;
    for (size_t i = 0; !dl && i < sizeof names / sizeof names[0]; i++)
        dl = rt_plugin_dl_open(names[i], reason, size);
    return dl;
}

rt_cu_cublas_t *rt_cu_cublas_load(const rt_host_t *host, char *reason, size_t size) {
    reason[0] = '\0';
    const char *off = rt_plugin_getenv("RT_CUDA_CUBLAS");
    if (off && strcmp(off, "0") == 0) {
        snprintf(reason, size, "RT_CUDA_CUBLAS=0");
        return NULL;
    }
    rt_cu_cublas_t *lib = rt_cu_alloc(host, sizeof *lib);
    if (!lib) {
        snprintf(reason, size, "no memory");
        return NULL;
    }
    lib->dl = cu_cublas_open(reason, size);
    if (!lib->dl || !cu_cublas_resolve(lib, reason, size)) {
        rt_cu_cublas_unload(host, lib);
        return NULL;
    }
    cu_cublas_version(lib);
    return lib;
}

void rt_cu_cublas_unload(const rt_host_t *host, rt_cu_cublas_t *lib) {
    if (!lib) return;
    /* Not closed: its atexit handlers and threads must not outlive its code. */
    rt_cu_free(host, lib, sizeof *lib);
}

const char *rt_cu_cublas_version(const rt_cu_cublas_t *lib) { return lib ? lib->version : ""; }

//===--- handles and GEMM ---===//

static rt_status_t cu_blas_status(const rt_cu_cublas_t *lib, const rt_host_t *host,
                                  cublasStatus_t s, const char *what) {
    if (s == CUBLAS_STATUS_SUCCESS) return RT_OK;
    return host->set_error(s == CUBLAS_STATUS_ALLOC_FAILED ? RT_ERR_OUT_OF_MEMORY : RT_ERR_DEVICE,
                           "cuda: %s: %s", what, lib->status_string(s));
}

/* The queue's handle, made on first use (the device is current). */
static rt_status_t cu_blas_handle(rt_cu_queue_t *q, const rt_cu_cublas_t *lib) {
    if (q->blas) return RT_OK;
    const rt_host_t *host = q->dev->host;
    cublasHandle_t h = NULL;
    rt_status_t st = cu_blas_status(lib, host, lib->create(&h), "cublasCreate");
    if (st == RT_OK) st = rt_cu_pool_alloc(q->dev, RT_CU_BLAS_WORKSPACE, &q->blas_ws, &q->blas_ws_size);
    if (st == RT_OK) st = cu_blas_status(lib, host, lib->set_stream(h, q->stream), "cublasSetStream");
    if (st == RT_OK)
        st = cu_blas_status(lib, host, lib->set_workspace(h, q->blas_ws, q->blas_ws_size),
                            "cublasSetWorkspace");
    /* Default math: F32 products stay F32 (no TF32); 16-bit ones use tensor cores. */
    if (st == RT_OK)
        st = cu_blas_status(lib, host, lib->set_math_mode(h, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    if (st == RT_OK) {
        q->blas = h;
        return RT_OK;
    }
    if (h) lib->destroy(h);
    rt_cu_pool_free(q->dev, q->blas_ws, q->blas_ws_size);
    q->blas_ws = NULL;
    q->blas_ws_size = 0;
    return st;
}

void rt_cu_blas_release(rt_cu_queue_t *q) {
    const rt_cu_cublas_t *lib = q->dev->plugin->cublas;
    if (q->blas && lib) lib->destroy(q->blas);
    q->blas = NULL;
    rt_cu_pool_free(q->dev, q->blas_ws, q->blas_ws_size);
    q->blas_ws = NULL;
    q->blas_ws_size = 0;
}

rt_status_t rt_cu_blas_gemm(rt_cu_queue_t *q, const rt_cu_gemm_t *g) {
    const rt_cu_cublas_t *lib = q->dev->plugin->cublas;
    const rt_host_t *host = q->dev->host;
    if (!lib) return host->set_error(RT_ERR_INTERNAL, "%s: no cuBLAS", __func__);
    rt_status_t st = cu_blas_handle(q, lib);
    if (st != RT_OK) return st;
    const float one = 1.0f, zero = 0.0f;
    const cudaDataType t = (cudaDataType)g->type;
    cublasStatus_t s;
    if (g->ptrs)
        s = lib->gemm_batched(q->blas, CUBLAS_OP_T, CUBLAS_OP_N, g->m, g->n, g->k, &one,
                              (const void *const *)g->ptrs, t, g->lda,
                              (const void *const *)(g->ptrs + g->batch), t, g->ldb, &zero,
                              g->ptrs + 2 * g->batch, CUDA_R_32F, g->ldc, g->batch,
                              CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    else
        s = lib->gemm_strided(q->blas, CUBLAS_OP_T, CUBLAS_OP_N, g->m, g->n, g->k, &one, g->a, t,
                              g->lda, g->stride_a, g->b, t, g->ldb, g->stride_b, &zero, g->c,
                              CUDA_R_32F, g->ldc, g->stride_c, g->batch, CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT);
    return cu_blas_status(lib, host, s, g->ptrs ? "cublasGemmBatchedEx" : "cublasGemmStridedBatchedEx");
}
