/* SPDX-License-Identifier: MIT */
/* elementwise.cu: ops that map each element on its own. Binary ops (ADD,
 * SUB, MUL, DIV with b repeating into a; SWIGLU with b of a's shape) and
 * unary ops (SCALE, GELU, SILU, and DIAG_MASK_INF, which only needs the
 * element's column and row). One thread per element of a row, rows side by
 * side in a block (common.cuh); any float type and any strides on every
 * side. Each thread reads its element before writing it, so dst may be a
 * source (the in-place contract of rt_plugin.h). */
#include "common.cuh"

#include <math.h>
#include <string.h>

__device__ __forceinline__ float rt_cu_silu(float x) {
    return x / (1.0f + expf(-x));
}

__device__ __forceinline__ float rt_cu_binary_op(int32_t op, float x, float y) {
    switch (op) {
    case RT_OP_ADD: return x + y;
    case RT_OP_SUB: return x - y;
    case RT_OP_MUL: return x * y;
    case RT_OP_DIV: return x / y;
    default: return rt_cu_silu(x) * y; /* SWIGLU */
    }
}

__global__ void rt_cu_k_binary(rt_cu_tensor_t dst, rt_cu_tensor_t a, rt_cu_tensor_t b, int32_t op) {
    const int64_t r = (int64_t)blockIdx.x * blockDim.y + threadIdx.y;
    if (r >= rt_cu_nrows(dst)) return;
    const rt_cu_rowidx x = rt_cu_row_index(dst.ne, r);
    const char *arow = rt_cu_row(a, x.i1, x.i2, x.i3);
    const char *brow = rt_cu_row(b, x.i1 % b.ne[1], x.i2 % b.ne[2], x.i3 % b.ne[3]);
    char *drow = rt_cu_row(dst, x.i1, x.i2, x.i3);
    for (int64_t i0 = threadIdx.x; i0 < dst.ne[0]; i0 += blockDim.x) {
        const float va = rt_cu_load(a.type, arow, a.nb[0], i0);
        const float vb = rt_cu_load(b.type, brow, b.nb[0], i0 % b.ne[0]);
        rt_cu_store(dst.type, drow + i0 * dst.nb[0], rt_cu_binary_op(op, va, vb));
    }
}

cudaError_t rt_cu_launch_binary(const rt_cu_node_t *n, cudaStream_t stream) {
    const dim3 block = rt_cu_row_block(n->dst.ne[0]);
    const unsigned grid = rt_cu_row_grid(rt_cu_nrows(n->dst), block);
    if (grid) rt_cu_k_binary<<<grid, block, 0, stream>>>(n->dst, n->src[0], n->src[1], n->op);
    return rt_cu_launched(grid);
}

/* f: SCALE's factor; n_past: DIAG_MASK_INF's. */
__device__ __forceinline__ float rt_cu_unary_op(int32_t op, float v, float f, int64_t n_past,
                                                int64_t i0, int64_t i1) {
    switch (op) {
    case RT_OP_SCALE: return v * f;
    case RT_OP_GELU: {
        const float c = 0.7978845608028654f; /* sqrt(2/pi) */
        return 0.5f * v * (1.0f + tanhf(c * (v + 0.044715f * v * v * v)));
    }
    case RT_OP_SILU: return rt_cu_silu(v);
    case RT_OP_TANH: return tanhf(v);
    default: return i0 > n_past + i1 ? -INFINITY : v; /* DIAG_MASK_INF */
    }
}

__global__ void rt_cu_k_unary(rt_cu_tensor_t dst, rt_cu_tensor_t a, int32_t op, float f,
                              int64_t n_past) {
    const int64_t r = (int64_t)blockIdx.x * blockDim.y + threadIdx.y;
    if (r >= rt_cu_nrows(dst)) return;
    const rt_cu_rowidx x = rt_cu_row_index(dst.ne, r);
    const char *arow = rt_cu_row(a, x.i1, x.i2, x.i3);
    char *drow = rt_cu_row(dst, x.i1, x.i2, x.i3);
    for (int64_t i0 = threadIdx.x; i0 < dst.ne[0]; i0 += blockDim.x) {
        const float v = rt_cu_load(a.type, arow, a.nb[0], i0);
        rt_cu_store(dst.type, drow + i0 * dst.nb[0], rt_cu_unary_op(op, v, f, n_past, i0, x.i1));
    }
}

cudaError_t rt_cu_launch_unary(const rt_cu_node_t *n, cudaStream_t stream) {
    float f;
    memcpy(&f, &n->params[0], sizeof f);
    const dim3 block = rt_cu_row_block(n->dst.ne[0]);
    const unsigned grid = rt_cu_row_grid(rt_cu_nrows(n->dst), block);
    if (grid)
        rt_cu_k_unary<<<grid, block, 0, stream>>>(n->dst, n->src[0], n->op, f,
                                                  (int64_t)n->params[0]);
    return rt_cu_launched(grid);
}
