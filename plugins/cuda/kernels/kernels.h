/* SPDX-License-Identifier: MIT */
/* kernels.h: the one interface between the CUDA plugin's host files (C11)
 * and its kernels (CUDA C++ in kernels/NAME.cu). The host side packs each node
 * into an rt_cu_node_t (plain shapes, byte strides and device addresses, so
 * that no kernel reads an rt_tensor_t the core may change afterwards) and
 * calls one launcher per kernel family on the queue's stream. Launchers
 * only enqueue: they return the launch's cudaError_t and never synchronise,
 * so that the same calls work eagerly and under CUDA graph capture.
 *
 * Element types are those of abi/rt_tensor.h. Kernels read any F32, F16,
 * BF16 row and any row of a quantised type rt_cu_block_elems names
 * (kernels/dequant.cuh decodes them; rows contiguous, nb[0] the block
 * size) and write F32, F16 or BF16 (Q8_0/Q4_0 only through
 * rt_cu_launch_copy). */
#ifndef RT_CU_KERNELS_H
#define RT_CU_KERNELS_H

#include <cuda_runtime_api.h>

#include "../../../abi/rt_tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RT_CU_INTERNAL __attribute__((visibility("hidden")))

/* Type facts both sides use: constant expressions in kernels. */
#ifdef __CUDACC__
#define RT_CU_TYPE_FN constexpr __host__ __device__
#else
#define RT_CU_TYPE_FN
#endif


/* Elements per block of a quantised type the kernels decode, 0 for any
 * other type; and bytes per block (GGUF's layouts, kernels/dequant.cuh). */
static inline RT_CU_TYPE_FN int rt_cu_block_elems(int32_t type) {
    switch (type) {
    case RT_TYPE_Q4_0: case RT_TYPE_Q4_1: case RT_TYPE_Q5_0: case RT_TYPE_Q5_1:
    case RT_TYPE_Q8_0: case RT_TYPE_IQ4_NL:
        return 32;
    case RT_TYPE_Q2_K: case RT_TYPE_Q3_K: case RT_TYPE_Q4_K: case RT_TYPE_Q5_K:
    case RT_TYPE_Q6_K: case RT_TYPE_IQ4_XS:
        return 256;
    default: return 0;
    }
}

/* The block over which MUL_MAT rounds b to int8 levels for weights of
 * type (as the CPU plugin's integer dot products see it, so that results
 * do not depend on the device): 32 for Q4_1, Q5_0, Q5_1 and IQ4_NL (f32
 * scale, x * (1/d)), 256 for the super-block types (Q8_K's, x / d); 0 for
 * the others (Q8_0/Q4_0 go through Q8_0 blocks, floats are not rounded). */
static inline RT_CU_TYPE_FN int rt_cu_round_block(int32_t type) {
    switch (type) {
    case RT_TYPE_Q4_1: case RT_TYPE_Q5_0: case RT_TYPE_Q5_1: case RT_TYPE_IQ4_NL: return 32;
    case RT_TYPE_Q2_K: case RT_TYPE_Q3_K: case RT_TYPE_Q4_K: case RT_TYPE_Q5_K:
    case RT_TYPE_Q6_K: case RT_TYPE_IQ4_XS: return 256;
    default: return 0;
    }
}

static inline RT_CU_TYPE_FN int rt_cu_block_bytes(int32_t type) {
    switch (type) {
    case RT_TYPE_Q4_0: case RT_TYPE_IQ4_NL: return 18;
    case RT_TYPE_Q4_1: return 20;
    case RT_TYPE_Q5_0: return 22;
    case RT_TYPE_Q5_1: return 24;
    case RT_TYPE_Q8_0: return 34;
    case RT_TYPE_Q2_K: return 84;
    case RT_TYPE_Q3_K: return 110;
    case RT_TYPE_Q4_K: return 144;
    case RT_TYPE_Q5_K: return 176;
    case RT_TYPE_Q6_K: return 210;
    case RT_TYPE_IQ4_XS: return 136;
    default: return 0;
    }
}

/* A tensor as a kernel sees it: element (i0, i1, i2, i3) is at
 * data + i0*nb[0] + i1*nb[1] + i2*nb[2] + i3*nb[3] (i0 in blocks for a
 * quantised type). */
typedef struct rt_cu_tensor {
    char *data;                 /* device address of element 0 */
    int32_t type;               /* RT_TYPE_* */
    int32_t reserved;
    int64_t ne[RT_MAX_DIMS];    /* elements per dimension */
    int64_t nb[RT_MAX_DIMS];    /* stride in bytes per dimension */
} rt_cu_tensor_t;

/* FLASH_ATTN reads four sources (q, k, v, mask); the others fewer. */
#define RT_CU_MAX_SRC 4

/* One node: its op, op_params, result and the sources its kernel reads. */
typedef struct rt_cu_node {
    int32_t op;                                  /* RT_OP_* */
    int32_t params[RT_MAX_OP_PARAMS / 4];        /* the node's op_params */
    rt_cu_tensor_t dst;
    rt_cu_tensor_t src[RT_CU_MAX_SRC];           /* unused ones are zero */
} rt_cu_node_t;

//===--- launchers: each enqueues one node's kernel on stream ---===//

/* CONT and CPY: src[0] -> dst in logical order. Any readable type to F32,
 * F16 or BF16; F32/F16/BF16 to Q8_0/Q4_0 (dst contiguous); any type to
 * itself (I32 and quantised blocks are moved as bytes). Also the plugin's
 * own conversions (weights to F16, activations to F16/BF16 for cuBLAS). */
RT_CU_INTERNAL cudaError_t rt_cu_launch_copy(const rt_cu_node_t *n, cudaStream_t stream);
/* MUL_MAT's rounding of b (rt_cu_round_block): src[0] F32 (nb[0] = 4, any
 * row strides) into dst, dense F32 of its shape, each run of params[0]
 * (32 or 256) elements of a row at the int8 levels of max|x| / 127. */
RT_CU_INTERNAL cudaError_t rt_cu_launch_round_b(const rt_cu_node_t *n, cudaStream_t stream);
/* GET_ROWS: dst F32 row (i1, i2, i3) = row src[1][i1, i2, i3] of src[0]'s
 * matrix (i2, i3); an index out of range gives a row of zeros. */
RT_CU_INTERNAL cudaError_t rt_cu_launch_get_rows(const rt_cu_node_t *n, cudaStream_t stream);
/* SET_ROWS: F32 row src[1][:, i1, i2, i3], converted to dst's float type,
 * over row src[2][i1, i2, i3] of dst's matrix (i2, i3); dst is a view of
 * src[0], whose other rows keep their bytes. An index out of range writes
 * nothing (a kernel cannot fail the graph). */
RT_CU_INTERNAL cudaError_t rt_cu_launch_set_rows(const rt_cu_node_t *n, cudaStream_t stream);
/* ADD, SUB, MUL, DIV (src[1] repeating into src[0]) and SWIGLU. */
RT_CU_INTERNAL cudaError_t rt_cu_launch_binary(const rt_cu_node_t *n, cudaStream_t stream);
/* SCALE, GELU, SILU, DIAG_MASK_INF. */
RT_CU_INTERNAL cudaError_t rt_cu_launch_unary(const rt_cu_node_t *n, cudaStream_t stream);
/* NORM, RMS_NORM. */
RT_CU_INTERNAL cudaError_t rt_cu_launch_norm(const rt_cu_node_t *n, cudaStream_t stream);
/* SOFT_MAX with an optional mask in src[1]. */
RT_CU_INTERNAL cudaError_t rt_cu_launch_soft_max(const rt_cu_node_t *n, cudaStream_t stream);
RT_CU_INTERNAL cudaError_t rt_cu_launch_argmax(const rt_cu_node_t *n, cudaStream_t stream);
RT_CU_INTERNAL cudaError_t rt_cu_launch_rope(const rt_cu_node_t *n, cudaStream_t stream);

/* MUL_MAT, matrix times a few vectors: every type of a, F32 accumulation,
 * for b->ne[1] <= RT_CU_MMV_MAX_COLS. */
#define RT_CU_MMV_MAX_COLS 8
RT_CU_INTERNAL cudaError_t rt_cu_launch_mul_mat_vec(const rt_cu_node_t *n, cudaStream_t stream);
/* MUL_MAT, any shape: shared-memory tiles, F32 arithmetic throughout. The
 * fallback when cuBLAS is missing, and the exact path for small products. */
RT_CU_INTERNAL cudaError_t rt_cu_launch_mul_mat_tiled(const rt_cu_node_t *n, cudaStream_t stream);

/* FLASH_ATTN (kernels/flash_attn.cu): src[0] q F32, src[1] k and src[2] v
 * (F32 or F16), src[3] the mask (F32/F16, or zero), params[0] scale and
 * params[1] the soft-cap; dst F32 {Dv, H, N, n3}. Blocks of n_warps warps,
 * rows_per_warp query rows (a query and one of the heads that share a kv
 * head) per warp, walk their key range one tile of RT_CU_FA_TILE keys (one
 * per lane) at a time through shared memory; a warp reads each key once
 * for all its rows. Decode has too few rows to fill the
 * GPU, so the keys are split into n_split ranges whose partials a second
 * kernel merges; partials takes the plan's scratch bytes (NULL when
 * n_split is 1). Head sizes up to RT_CU_FA_MAX_DIM. */
#define RT_CU_FA_TILE 32
#define RT_CU_FA_MAX_WARPS 8
#define RT_CU_FA_MAX_DIM 256
#define RT_CU_FA_MAX_ROWS_PER_WARP 2
#define RT_CU_FA_PART_HEAD 2 /* floats before acc in a partial record: m, l */

typedef struct rt_cu_fa_plan {
    int64_t rows;        /* query rows per kv head and plane: N * (H / H_kv) */
    int64_t row_blocks;  /* blocks over those rows: ceil(rows / (n_warps * rows_per_warp)) */
    int n_warps;         /* warps per block */
    int rows_per_warp;   /* 1, or RT_CU_FA_MAX_ROWS_PER_WARP for prompts */
    int n_split;         /* key ranges, merged by a second kernel when > 1 */
    int64_t chunk;       /* keys per range, whole tiles */
    size_t scratch;      /* bytes of partials (0 when n_split is 1) */
} rt_cu_fa_plan_t;

/* The plan for q {D, N, H, n3} over n_kv keys of H_kv heads, Dv values,
 * on a GPU of n_sm multiprocessors: split the keys only as far as needed
 * to give every multiprocessor two blocks, and never below a few tiles per
 * range (each range costs a partial record and its merge). */
static inline rt_cu_fa_plan_t rt_cu_fa_plan(int64_t N, int64_t H, int64_t H_kv, int64_t n3, int64_t n_kv,
                                            int64_t Dv, int n_sm) {
    rt_cu_fa_plan_t p;
    const int64_t min_tiles = 4;
    p.rows = N * (H / H_kv);
    p.rows_per_warp = p.rows >= RT_CU_FA_MAX_ROWS_PER_WARP * RT_CU_FA_MAX_WARPS ? RT_CU_FA_MAX_ROWS_PER_WARP : 1;
    const int64_t warps = (p.rows + p.rows_per_warp - 1) / p.rows_per_warp;
    p.n_warps = warps < RT_CU_FA_MAX_WARPS ? (int)(warps > 0 ? warps : 1) : RT_CU_FA_MAX_WARPS;
    const int64_t per_block = (int64_t)p.n_warps * p.rows_per_warp;
    p.row_blocks = (p.rows + per_block - 1) / per_block;
    const int64_t blocks = p.row_blocks * H_kv * n3, target = 2 * (int64_t)(n_sm > 0 ? n_sm : 1);
    const int64_t tiles = (n_kv + RT_CU_FA_TILE - 1) / RT_CU_FA_TILE;
    int64_t want = blocks >= target ? 1 : (target + blocks - 1) / blocks;
    int64_t per = want > 1 ? (tiles + want - 1) / want : tiles;
    if (per < min_tiles) per = min_tiles;
    p.chunk = per * RT_CU_FA_TILE;
    p.n_split = tiles > per ? (int)((tiles + per - 1) / per) : 1;
    p.scratch = p.n_split > 1 ? (size_t)p.n_split * (size_t)(N * H * n3) * (size_t)(Dv + RT_CU_FA_PART_HEAD) * sizeof(float) : 0;
    return p;
}

RT_CU_INTERNAL cudaError_t rt_cu_launch_flash_attn(const rt_cu_node_t *n, const rt_cu_fa_plan_t *plan,
                                                   float *partials, cudaStream_t stream);

/* The pointer arrays of cublasGemmBatchedEx for a MUL_MAT whose batch
 * cannot be one stride: batch t (i2 = t % b2, i3 = t / b2 over dst's dims 2
 * and 3) gets a + (i2/r2)*a.nb2 + (i3/r3)*a.nb3, and the same for b and
 * dst without broadcast. ptrs holds 3 * n_batch pointers: a's, b's, dst's. */
RT_CU_INTERNAL cudaError_t rt_cu_launch_gemm_ptrs(const rt_cu_tensor_t *a, const rt_cu_tensor_t *b,
                                                  const rt_cu_tensor_t *dst, void **ptrs,
                                                  cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* RT_CU_KERNELS_H */
