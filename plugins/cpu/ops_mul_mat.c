/* SPDX-License-Identifier: MIT */
/* ops_mul_mat.c: MUL_MAT, c[m, n] = dot(row m of a, row n of b) for every
 * matrix of b's dims 2 and 3 (c = b . a^T), a broadcast over them as ggml
 * does (b's matrix i2 reads a's matrix i2 / (b2 / a2)). This file owns the
 * shapes, the strides and the threads; the arithmetic is the kernel table's
 * (kern.h). Four paths, by a's type and N = b's rows per matrix (and a
 * fifth for repacked weights, below):
 *
 *   N <= RT_CPU_MV_MAX_N, F32/F16/BF16 a: matvec, one pass over a per 4
 *       rows of b (from L2 after the first).
 *   N <= RT_CPU_MV_MAX_N, Q8_0/Q4_0 a:    phase 0 quantises b's rows to Q8_0
 *       once (shared scratch); phase 1 runs the integer dot products.
 *   larger N, F32/F16/BF16 a:             the blocked, packed gemm.
 *   larger N, Q8_0/Q4_0 a:                phase 0 rounds b's rows through
 *       Q8_0 into F32 (shared scratch), phase 1 the gemm; the products
 *       are the integer path's, so a result does not depend on N.
 *   the block types of ABI 1.2 (Q4_1 .. IQ4_XS): the same two, with their
 *       own activation format (Q8_K for super-blocks; kern_blocks.c). The
 *       integer mat-vec taking every N (it unpacks a weight block once for
 *       8 activation rows) measured no faster than the F32 gemm at N = 512
 *       on this loaded 2-core machine, so the gemm keeps large N.
 *
 * Work items are (matrix, run of rows of a), claimed dynamically from the
 * pool's counter so a thread slowed by a busy core takes fewer. Weights
 * in the CPU_Weights buffer type (r16 layout, repack.h; weights.c: Q8_0,
 * Q4_0 and Q4_1) take the integer path at every N, with their own activation rows
 * (quantize_q8r, then matvec_r, 8 rows of b a pass over a work item
 * small enough to stay in L2): with VNNI that is 3.1-3.6x the F32 gemm on
 * converted weights at N = 32..512 on this Zen 4, and without it (AVX2,
 * AVX-512 F) 1.05-1.2x (`rt-bench ops --op mul_mat --type q8_0,q4_0 --n
 * 32,128,512`, with and without --no-weights-buft). Work items are
 * RT_CPU_RP_ITEM_GROUPS groups of 16 rows (repack.h). b may be any view
 * whose rows are contiguous (attention's permuted Q, docs/memory.md §2.5): rows are read in
 * place, never copied. */
#include "cpu.h"
#include "repack.h"

/* b rows per matrix up to which the mat-vec kernels run: they take N in
 * passes of 4 (8 for the block types) over a work item's weights, which
 * stay in L2 from one pass to the next, where the gemm converts and packs
 * every weight once per product; at N = 16 and 32 (m = k = 4096, 2 threads)
 * the mat-vec kernels measured 1.25-1.85x the gemm for F32/F16 and 2-3.9x
 * for Q8_0, Q4_0, Q5_0, Q4_K. */
#define RT_CPU_MV_MAX_N 32
/* Bytes of a per mat-vec work item: the kernels prefetch the next rows of
 * the item, and each item starts without them, so an item is large (a
 * thread then streams long runs of rows) but stays in L2 for the passes. */
#define RT_CPU_MV_CHUNK_BYTES 262144

typedef enum {
    MM_MATVEC, MM_MATVEC_Q, MM_MATVEC_R, MM_GEMM, MM_GEMM_Q,
    MM_MATVEC_B, MM_GEMM_B /* the block types of ABI 1.2 (kern_blocks.c) */
} rt_cpu_mm_path_t;

static bool rt_cpu_is_quant(rt_type_t t) {
    return t == RT_TYPE_Q8_0 || t == RT_TYPE_Q4_0;
}

static rt_cpu_mm_path_t rt_cpu_mm_path(const rt_tensor_t *node) {
    const rt_type_t t = node->src[0]->type;
    const bool q = rt_cpu_is_quant(t), blocks = rt_cpu_is_blocks_type(t);
    if (rt_cpu_repacked(node->src[0])) return MM_MATVEC_R;
    if (node->src[1]->ne[1] <= RT_CPU_MV_MAX_N) return q ? MM_MATVEC_Q : blocks ? MM_MATVEC_B : MM_MATVEC;
    return q ? MM_GEMM_Q : blocks ? MM_GEMM_B : MM_GEMM;
}

bool rt_cpu_supports_mul_mat(const rt_tensor_t *node) {
    if (!rt_mul_mat_shapes_ok(node) || node->nb[0] != sizeof(float)) return false;
    const rt_tensor_t *a = node->src[0];
    const rt_cpu_type_t *ta = rt_cpu_type(a->type);
    return ta->to_f32 && a->nb[0] == ta->size && a->ne[0] % ta->blck == 0;
}

/* Bytes of one prepared row of b in the shared scratch (0: b used as is). */
static size_t rt_cpu_mm_prep_row(const rt_tensor_t *node) {
    const int64_t K = node->src[1]->ne[0];
    switch (rt_cpu_mm_path(node)) {
    case MM_MATVEC_Q: return rt_cpu_q8a_size(K);
    case MM_MATVEC_R: return rt_cpu_q8r_size(K);
    case MM_GEMM_Q: case MM_GEMM_B: return (size_t)K * sizeof(float);
    case MM_MATVEC_B: return rt_cpu_act_size(node->src[0]->type, K);
    default: return 0;
    }
}

size_t rt_cpu_wsize_mul_mat(const rt_tensor_t *node) {
    const rt_cpu_mm_path_t path = rt_cpu_mm_path(node);
    return path == MM_GEMM || path == MM_GEMM_Q || path == MM_GEMM_B ? rt_cpu_k->mm->gemm_wsize : 0;
}

size_t rt_cpu_shared_wsize_mul_mat(const rt_tensor_t *node) {
    return rt_cpu_mm_prep_row(node) * (size_t)rt_cpu_nelements(node->src[1]) /
           (size_t)node->src[1]->ne[0];
}

int32_t rt_cpu_phases_mul_mat(const rt_tensor_t *node) {
    return rt_cpu_mm_prep_row(node) ? 2 : 1;
}

//===--- phase 0: b's rows, prepared once ---===//

/* Row r of b (all matrices, rows fastest) to row r of the shared scratch. */
static void rt_cpu_mm_prepare(const rt_cpu_params_t *p, const rt_tensor_t *node) {
    const rt_tensor_t *b = node->src[1];
    const size_t row = rt_cpu_mm_prep_row(node);
    const rt_cpu_mm_path_t path = rt_cpu_mm_path(node);
    const rt_cpu_kern_quant_t *kq = rt_cpu_k->quant;
    const rt_cpu_kern_blocks_t *kb = rt_cpu_k->blocks;
    const rt_type_t atype = node->src[0]->type;
    rt_cpu_rows_t it;
    rt_cpu_rows_init(&it, b->ne, p);
    while (rt_cpu_rows_next(&it)) {
        const float *x = rt_cpu_row(b, it.i1, it.i2, it.i3);
        char *dst = (char *)p->shared + (size_t)it.ir * row;
        if (path == MM_MATVEC_Q)
            kq->quantize_q8a(x, b->ne[0], atype, dst);
        else if (path == MM_MATVEC_R)
            kq->quantize_q8r(x, b->ne[0], atype, dst);
        else if (path == MM_MATVEC_B)
            kb->quantize_act(x, b->ne[0], atype, dst);
        else if (path == MM_GEMM_B)
            kb->roundtrip_act(x, b->ne[0], atype, (float *)dst);
        else
            kq->roundtrip_q8(x, b->ne[0], (float *)dst);
    }
}

//===--- phase 1: work items ---===//

/* The product for b's matrix `batch` (i2 fastest). */
static rt_cpu_mm_t rt_cpu_mm_operands(const rt_cpu_params_t *p, const rt_tensor_t *node,
                                      int64_t batch) {
    const rt_tensor_t *a = node->src[0], *b = node->src[1];
    const int64_t i2 = batch % b->ne[2], i3 = batch / b->ne[2];
    const int64_t a2 = i2 / (b->ne[2] / a->ne[2]), a3 = i3 / (b->ne[3] / a->ne[3]);
    rt_cpu_mm_t g = {
        .a = (const char *)a->data + a2 * a->nb[2] + a3 * a->nb[3],
        .lda = a->nb[1],
        .atype = a->type,
        .M = a->ne[1],
        .K = a->ne[0],
        .b = (const char *)b->data + i2 * b->nb[2] + i3 * b->nb[3],
        .ldb = b->nb[1],
        .N = b->ne[1],
        .c = (char *)node->data + i2 * node->nb[2] + i3 * node->nb[3],
        .ldc = node->nb[1],
        .packed = rt_cpu_repacked(a),
    };
    if (g.packed) g.lda = rt_cpu_rp_group_bytes(a->type, a->ne[0]);
    const size_t row = rt_cpu_mm_prep_row(node);
    if (row) {
        g.b = (const char *)p->shared + (size_t)(batch * b->ne[1]) * row;
        g.ldb = row;
    }
    return g;
}

/* Rows of a per work item: a gemm block, or enough bytes to amortise a
 * claim, but no more than leaves four items per thread. */
static int64_t rt_cpu_mm_chunk(const rt_cpu_params_t *p, const rt_tensor_t *node) {
    const rt_tensor_t *a = node->src[0];
    const rt_cpu_mm_path_t path = rt_cpu_mm_path(node);
    if (path == MM_GEMM || path == MM_GEMM_Q || path == MM_GEMM_B) return rt_cpu_k->mm->gemm_rows;
    const int64_t bytes = RT_CPU_MV_CHUNK_BYTES;
    int64_t rows = bytes / (int64_t)(a->nb[1] ? a->nb[1] : 1);
    const int64_t fair = (a->ne[1] + 4 * p->nth - 1) / (4 * p->nth);
    if (rows > fair) rows = fair;
    const int64_t unit = path == MM_MATVEC_R ? RT_CPU_RP_ROWS * RT_CPU_RP_ITEM_GROUPS : 4;
    return rows < unit ? unit : (rows + unit - 1) / unit * unit;
}

static void rt_cpu_mm_run(const rt_cpu_params_t *p, const rt_cpu_mm_t *g,
                          rt_cpu_mm_path_t path, int64_t m0, int64_t m1) {
    switch (path) {
    case MM_MATVEC: rt_cpu_k->mm->matvec(g, m0, m1); return;
    case MM_MATVEC_Q: rt_cpu_k->quant->matvec_q(g, m0, m1); return;
    case MM_MATVEC_R: rt_cpu_k->quant->matvec_r(g, m0, m1); return;
    case MM_MATVEC_B: rt_cpu_k->blocks->matvec(g, m0, m1); return;
    default: rt_cpu_k->mm->gemm(g, m0, m1, p->wdata); return;
    }
}

void rt_cpu_compute_mul_mat(const rt_cpu_params_t *p, rt_tensor_t *dst) {
    if (p->phase == 0 && rt_cpu_phases_mul_mat(dst) == 2) {
        rt_cpu_mm_prepare(p, dst);
        return;
    }
    const rt_tensor_t *b = dst->src[1];
    const rt_cpu_mm_path_t path = rt_cpu_mm_path(dst);
    const int64_t M = dst->src[0]->ne[1], chunk = rt_cpu_mm_chunk(p, dst);
    const int64_t n_chunks = (M + chunk - 1) / chunk, n_items = n_chunks * b->ne[2] * b->ne[3];
    for (int64_t item = rt_cpu_claim(p); item < n_items; item = rt_cpu_claim(p)) {
        const rt_cpu_mm_t g = rt_cpu_mm_operands(p, dst, item / n_chunks);
        const int64_t m0 = item % n_chunks * chunk;
        rt_cpu_mm_run(p, &g, path, m0, m0 + chunk < M ? m0 + chunk : M);
    }
}
