/* SPDX-License-Identifier: MIT */
/* ops_mul_mat.c: how the CUDA plugin runs MUL_MAT (c = b . a^T per matrix
 * of dims 2 and 3, a broadcast over them). One plan per node picks the
 * path, and sizes the queue scratch it needs before anything runs (so
 * that nothing is allocated while a graph is captured):
 *
 *   VEC    b has at most RT_CU_MMV_MAX_COLS rows (decode): the plugin's
 *          matrix-vector kernel, every type of a.
 *   BLAS16 large products (at least RT_CU_MM_FAST_WORK multiply-adds)
 *          with 16-bit or quantised weights: cuBLAS on tensor cores, F32
 *          accumulation. b is rounded to a's type (BF16 for BF16 weights,
 *          F16 otherwise) into scratch, quantised a dequantised to F16 into
 *          scratch. This is ggml's trade: about 1e-3 relative error for an
 *          order of magnitude in speed.
 *   BLAS32 F32 weights: cuBLAS SGEMM on a and b in place (no TF32).
 *   TILED  everything else (small products, no cuBLAS): the plugin's
 *          tiled kernel, F32 arithmetic.
 *
 * Q8_0 and Q4_0 weights always meet b rounded through Q8_0 first (the
 * CPU plugin's rule, so that both agree to float rounding whatever the
 * path): VEC multiplies the Q8_0 blocks as integers, the other paths
 * convert them on to F32 or 16 bits. The other quantised types take b
 * rounded in F32 per 32 or 256 elements as the CPU plugin's activation
 * blocks round it (rt_cu_round_block), then VEC and TILED decode a in F32
 * and BLAS16 dequantises a to F16. RT_CUDA_MATMUL=f32 keeps every product off the
 * 16-bit path, =tiled uses the plugin's kernels only. Batches that are not
 * one stride apart (a broadcast over dims 2/3, permuted b) go to
 * cublasGemmBatchedEx with pointer arrays a kernel writes into scratch. */
#include "cuda_impl.h"

#include <library_types.h>
#include <string.h>

#define RT_CU_MM_FAST_WORK ((double)(1 << 22))
#define RT_CU_SCRATCH_ALIGN ((size_t)256)

typedef enum { CU_MM_VEC, CU_MM_BLAS16, CU_MM_BLAS32, CU_MM_TILED } cu_mm_path_t;

/* What one MUL_MAT does, and where its pieces go in the queue's scratch. */
typedef struct cu_mm_plan {
    cu_mm_path_t path;
    bool q8_b;                   /* b rounded through Q8_0 (quantised a) */
    rt_type_t b_type;            /* b converted to this type, or RT_TYPE_COUNT: as it is */
    bool convert_a;              /* BLAS16: a dequantised to F16 */
    int round_b;                 /* b rounded per this many elements first (rt_cu_round_block), or 0 */
    bool ptrs;                   /* pointer arrays instead of strides */
    size_t off_a, off_b8, off_rb, off_b, off_ptrs; /* bytes into the scratch */
    size_t scratch;              /* bytes in all */
} cu_mm_plan_t;

//===--- support ---===//

static size_t cu_type_size(rt_type_t t) {
    switch (t) {
    case RT_TYPE_F32: return 4;
    case RT_TYPE_F16: case RT_TYPE_BF16: return 2;
    default: return (size_t)rt_cu_block_bytes(t);
    }
}

static int64_t cu_type_blck(rt_type_t t) {
    return rt_cu_block_elems(t) ? rt_cu_block_elems(t) : 1;
}

bool rt_cu_mul_mat_supported(const rt_tensor_t *n) {
    if (!rt_mul_mat_shapes_ok(n)) return false;
    const rt_tensor_t *a = n->src[0];
    const size_t ts = cu_type_size(a->type);
    return ts != 0 && a->nb[0] == ts && a->ne[0] % cu_type_blck(a->type) == 0;
}

//===--- planning ---===//

static bool cu_env_is(const char *name, const char *value) {
    const char *v = rt_plugin_getenv(name);
    return v && strcmp(v, value) == 0;
}

/* Matrices t, t+1, ... of dims 2 and 3 are one stride apart. */
static bool cu_batch_flat(const rt_tensor_t *t) {
    return t->ne[3] == 1 || t->nb[3] == t->nb[2] * (size_t)t->ne[2];
}

/* cuBLAS can read t as a column-major matrix with elements of esize bytes:
 * dense rows of at least K elements, strides in whole elements, dims in int. */
static bool cu_blas_layout(const rt_tensor_t *t, size_t esize, int64_t k) {
    if (t->nb[0] != esize || t->nb[1] % esize || t->nb[2] % esize || t->nb[3] % esize) return false;
    if ((uintptr_t)t->data % esize) return false;
    return (int64_t)(t->nb[1] / esize) >= k && t->nb[1] / esize <= 0x7fffffff &&
           t->ne[1] <= 0x7fffffff;
}

static cu_mm_path_t cu_mm_path(const rt_cu_device_t *dev, const rt_tensor_t *n) {
    const rt_tensor_t *a = n->src[0], *b = n->src[1];
    const int64_t K = a->ne[0], M = a->ne[1], N = b->ne[1];
    if (N <= RT_CU_MMV_MAX_COLS) return CU_MM_VEC;
    if (!dev->plugin->cublas || cu_env_is("RT_CUDA_MATMUL", "tiled")) return CU_MM_TILED;
    if (K > 0x7fffffff || n->ne[2] * n->ne[3] > 0x7fffffff || !cu_blas_layout(n, 4, M))
        return CU_MM_TILED;
    const bool big = (double)K * (double)M * (double)N >= RT_CU_MM_FAST_WORK;
    if (a->type != RT_TYPE_F32 && big && !cu_env_is("RT_CUDA_MATMUL", "f32")) {
        const bool in_place = a->type == RT_TYPE_F16 || a->type == RT_TYPE_BF16;
        return !in_place || cu_blas_layout(a, 2, K) ? CU_MM_BLAS16 : CU_MM_TILED;
    }
    if (a->type == RT_TYPE_F32 && cu_blas_layout(a, 4, K) && cu_blas_layout(b, 4, K))
        return CU_MM_BLAS32;
    return CU_MM_TILED;
}

static size_t cu_scratch_take(size_t *at, size_t bytes) {
    const size_t off = *at;
    *at += (bytes + RT_CU_SCRATCH_ALIGN - 1) / RT_CU_SCRATCH_ALIGN * RT_CU_SCRATCH_ALIGN;
    return off;
}

/* One stride between consecutive matrices of dst's dims 2 and 3 for all of
 * a (broadcast only as a whole: stride 0), b and dst; else pointer arrays. */
static bool cu_mm_needs_ptrs(const rt_tensor_t *n, bool a_dense, bool b_dense) {
    const rt_tensor_t *a = n->src[0], *b = n->src[1];
    if (n->ne[2] * n->ne[3] <= 1) return false;
    const bool a_ok = (a->ne[2] == 1 && a->ne[3] == 1) ||
                      (a->ne[2] == n->ne[2] && a->ne[3] == n->ne[3] && (a_dense || cu_batch_flat(a)));
    return !(a_ok && (b_dense || cu_batch_flat(b)) && cu_batch_flat(n));
}

/* Bytes of a dense tensor of t's shape in type (F32, F16, BF16, Q8_0). */
static size_t cu_dense_bytes(const rt_tensor_t *t, rt_type_t type) {
    const size_t n = (size_t)(t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]);
    return type == RT_TYPE_Q8_0 ? n / 32 * sizeof(rt_block_q8_0_t) : n * cu_type_size(type);
}

static void cu_mm_plan(const rt_cu_device_t *dev, const rt_tensor_t *n, cu_mm_plan_t *p) {
    const rt_tensor_t *a = n->src[0], *b = n->src[1];
    memset(p, 0, sizeof *p);
    p->path = cu_mm_path(dev, n);
    const bool quant = rt_cu_block_elems(a->type) > 0;
    /* Q8_0/Q4_0: b through Q8_0 (the integer mat-vec); the other block types:
     * b rounded per 32 or 256 in F32 (every path then reads that) */
    p->q8_b = a->type == RT_TYPE_Q8_0 || a->type == RT_TYPE_Q4_0;
    p->round_b = rt_cu_round_block(a->type);
    p->b_type = RT_TYPE_COUNT;
    if (p->path == CU_MM_BLAS16) p->b_type = a->type == RT_TYPE_BF16 ? RT_TYPE_BF16 : RT_TYPE_F16;
    else if (p->q8_b && p->path != CU_MM_VEC) p->b_type = RT_TYPE_F32;
    p->convert_a = p->path == CU_MM_BLAS16 && quant;
    size_t at = 0;
    if (p->convert_a) p->off_a = cu_scratch_take(&at, cu_dense_bytes(a, RT_TYPE_F16));
    if (p->q8_b) p->off_b8 = cu_scratch_take(&at, cu_dense_bytes(b, RT_TYPE_Q8_0));
    if (p->round_b) p->off_rb = cu_scratch_take(&at, cu_dense_bytes(b, RT_TYPE_F32));
    if (p->b_type != RT_TYPE_COUNT) p->off_b = cu_scratch_take(&at, cu_dense_bytes(b, p->b_type));
    if (p->path == CU_MM_BLAS16 || p->path == CU_MM_BLAS32) {
        p->ptrs = cu_mm_needs_ptrs(n, p->convert_a, p->b_type != RT_TYPE_COUNT || p->round_b);
        if (p->ptrs)
            p->off_ptrs = cu_scratch_take(&at, 3 * (size_t)(n->ne[2] * n->ne[3]) * sizeof(void *));
    }
    p->scratch = at;
}

size_t rt_cu_mul_mat_scratch(const rt_cu_device_t *dev, const rt_tensor_t *node) {
    cu_mm_plan_t p;
    cu_mm_plan(dev, node, &p);
    return p.scratch;
}

//===--- running ---===//

/* like's shape as a dense tensor of type (F32, F16, BF16, Q8_0) at data. */
static void cu_dense(const rt_cu_tensor_t *like, rt_type_t type, char *data, rt_cu_tensor_t *out) {
    *out = *like;
    out->type = type;
    out->data = data;
    out->nb[0] = type == RT_TYPE_Q8_0 ? (int64_t)sizeof(rt_block_q8_0_t) : (int64_t)cu_type_size(type);
    out->nb[1] = out->nb[0] * (out->ne[0] / cu_type_blck(type));
    for (int i = 2; i < RT_MAX_DIMS; i++) out->nb[i] = out->nb[i - 1] * out->ne[i - 1];
}

static rt_status_t cu_mm_error(const rt_cu_queue_t *q, cudaError_t e, const char *what) {
    if (e == cudaSuccess) return RT_OK;
    return q->dev->host->set_error(RT_ERR_DEVICE, "cuda: MUL_MAT: %s: %s", what, cudaGetErrorString(e));
}

/* *t converted (quantised, dequantised) into a dense tensor of type in
 * scratch; *t becomes that tensor. */
static rt_status_t cu_mm_convert(const rt_cu_queue_t *q, rt_cu_tensor_t *t, rt_type_t type,
                                 size_t off) {
    rt_cu_node_t c;
    memset(&c, 0, sizeof c);
    c.op = RT_OP_CPY;
    c.src[0] = *t;
    cu_dense(t, type, (char *)q->scratch + off, &c.dst);
    *t = c.dst;
    return cu_mm_error(q, rt_cu_launch_copy(&c, q->stream), "converting an operand");
}

/* *t rounded per rb elements into a dense F32 tensor in scratch, which *t
 * becomes. */
static rt_status_t cu_mm_round_b(const rt_cu_queue_t *q, rt_cu_tensor_t *t, int rb, size_t off) {
    rt_cu_node_t c;
    memset(&c, 0, sizeof c);
    c.op = RT_OP_MUL_MAT;
    c.params[0] = rb;
    c.src[0] = *t;
    cu_dense(t, RT_TYPE_F32, (char *)q->scratch + off, &c.dst);
    *t = c.dst;
    return cu_mm_error(q, rt_cu_launch_round_b(&c, q->stream), "rounding b");
}

static int cu_blas_type(rt_type_t t) {
    return t == RT_TYPE_F32 ? CUDA_R_32F : t == RT_TYPE_BF16 ? CUDA_R_16BF : CUDA_R_16F;
}

static rt_status_t cu_mm_blas(rt_cu_queue_t *q, const rt_cu_node_t *n, const cu_mm_plan_t *p) {
    const rt_cu_tensor_t *a = &n->src[0], *b = &n->src[1], *d = &n->dst;
    const int64_t es = p->path == CU_MM_BLAS16 ? 2 : 4;
    rt_cu_gemm_t g = {
        .m = (int)a->ne[1], .n = (int)b->ne[1], .k = (int)a->ne[0], .batch = (int)(d->ne[2] * d->ne[3]),
        .type = cu_blas_type(a->type),
        .a = a->data, .b = b->data, .c = d->data,
        .lda = (int)(a->nb[1] / es), .ldb = (int)(b->nb[1] / es), .ldc = (int)(d->nb[1] / 4),
        .stride_a = a->ne[2] * a->ne[3] == 1 ? 0 : a->nb[2] / es,
        .stride_b = b->nb[2] / es, .stride_c = d->nb[2] / 4,
    };
    rt_status_t st = RT_OK;
    if (p->ptrs) {
        g.ptrs = (void **)((char *)q->scratch + p->off_ptrs);
        st = cu_mm_error(q, rt_cu_launch_gemm_ptrs(a, b, d, g.ptrs, q->stream), "batch pointers");
    }
    if (st == RT_OK) st = rt_cu_blas_gemm(q, &g);
    return st;
}

rt_status_t rt_cu_mul_mat_run(rt_cu_queue_t *q, const rt_tensor_t *node, const rt_cu_node_t *n) {
    cu_mm_plan_t p;
    cu_mm_plan(q->dev, node, &p);
    if (p.scratch > q->scratch_size)
        return q->dev->host->set_error(RT_ERR_INTERNAL, "cuda: MUL_MAT '%s': scratch of %zu bytes, "
                                       "%zu needed", node->name, q->scratch_size, p.scratch);
    rt_cu_node_t m = *n; /* its operands, as the chosen kernel takes them */
    rt_status_t st = RT_OK;
    if (p.convert_a) st = cu_mm_convert(q, &m.src[0], RT_TYPE_F16, p.off_a);
    if (st == RT_OK && p.q8_b) st = cu_mm_convert(q, &m.src[1], RT_TYPE_Q8_0, p.off_b8);
    if (st == RT_OK && p.round_b) st = cu_mm_round_b(q, &m.src[1], p.round_b, p.off_rb);
    if (st == RT_OK && p.b_type != RT_TYPE_COUNT) st = cu_mm_convert(q, &m.src[1], p.b_type, p.off_b);
    if (st != RT_OK) return st;
    switch (p.path) {
    case CU_MM_VEC: return cu_mm_error(q, rt_cu_launch_mul_mat_vec(&m, q->stream), "matrix-vector kernel");
    case CU_MM_TILED: return cu_mm_error(q, rt_cu_launch_mul_mat_tiled(&m, q->stream), "tiled kernel");
    default: return cu_mm_blas(q, &m, &p);
    }
}
