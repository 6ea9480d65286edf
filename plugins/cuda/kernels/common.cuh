/* SPDX-License-Identifier: MIT */
/* common.cuh: what every kernel file shares. Element loads and stores for
 * each type of abi/rt_tensor.h (the type is a run-time value, uniform over
 * a launch, so one kernel serves every type without an instantiation per
 * type pair), row addressing, the launch geometry of row kernels, and warp
 * and block reductions. Device code only; included by each kernels/NAME.cu. */
#ifndef RT_CU_COMMON_CUH
#define RT_CU_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "dequant.cuh"
#include "kernels.h"

#define RT_CU_WARP 32

//===--- elements ---===//

__device__ __forceinline__ float rt_cu_half(uint16_t bits) {
    return __half2float(__ushort_as_half(bits));
}

__device__ __forceinline__ float rt_cu_bf16(uint16_t bits) {
    return __uint_as_float((uint32_t)bits << 16);
}

/* Element i0 of a row that starts at row. Quantised rows are contiguous
 * blocks (supports_op checks it), decoded by dequant.cuh. */
__device__ __forceinline__ float rt_cu_load(int32_t type, const char *row, int64_t nb0,
                                            int64_t i0) {
    switch (type) {
    case RT_TYPE_F32: return *(const float *)(row + i0 * nb0);
    case RT_TYPE_F16: return rt_cu_half(*(const uint16_t *)(row + i0 * nb0));
    case RT_TYPE_BF16: return rt_cu_bf16(*(const uint16_t *)(row + i0 * nb0));
    case RT_TYPE_I32: return (float)*(const int32_t *)(row + i0 * nb0);
    default: return rt_cu_dq_row(type, row, i0);
    }
}

/* Stores v as a float type (F32, F16, BF16), rounding to nearest even. */
__device__ __forceinline__ void rt_cu_store(int32_t type, char *p, float v) {
    switch (type) {
    case RT_TYPE_F32: *(float *)p = v; return;
    case RT_TYPE_F16: *(__half *)p = __float2half_rn(v); return;
    case RT_TYPE_BF16: *(__nv_bfloat16 *)p = __float2bfloat16_rn(v); return;
    default: return;
    }
}

/* A float op_param, stored by its bits (host code: launchers read them). */
static inline float rt_cu_param_f32(int32_t bits) {
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

//===--- rows ---===//

__device__ __forceinline__ char *rt_cu_row(const rt_cu_tensor_t &t, int64_t i1, int64_t i2,
                                           int64_t i3) {
    return t.data + i1 * t.nb[1] + i2 * t.nb[2] + i3 * t.nb[3];
}

/* Row r of a shape (rows counted i1 fastest) as (i1, i2, i3). */
struct rt_cu_rowidx {
    int64_t i1, i2, i3;
};

__device__ __forceinline__ rt_cu_rowidx rt_cu_row_index(const int64_t ne[RT_MAX_DIMS], int64_t r) {
    rt_cu_rowidx x;
    x.i1 = r % ne[1];
    r /= ne[1];
    x.i2 = r % ne[2];
    x.i3 = r / ne[2];
    return x;
}

__host__ __device__ __forceinline__ int64_t rt_cu_nrows(const rt_cu_tensor_t &t) {
    return t.ne[1] * t.ne[2] * t.ne[3];
}

//===--- reductions ---===//

__device__ __forceinline__ float rt_cu_warp_sum(float v) {
#pragma unroll
    for (int o = RT_CU_WARP / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float rt_cu_warp_max(float v) {
#pragma unroll
    for (int o = RT_CU_WARP / 2; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* Sum or max over a block of up to 1024 threads (a multiple of 32); every
 * thread gets the result. scratch holds 32 floats; the leading barrier lets
 * one scratch serve consecutive reductions. */
template <bool MAX>
__device__ __forceinline__ float rt_cu_block_reduce(float v, float *scratch) {
    v = MAX ? rt_cu_warp_max(v) : rt_cu_warp_sum(v);
    if (blockDim.x <= RT_CU_WARP) return v;
    const int warp = threadIdx.x / RT_CU_WARP, lane = threadIdx.x % RT_CU_WARP;
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    const int n_warps = blockDim.x / RT_CU_WARP;
    v = lane < n_warps ? scratch[lane] : (MAX ? -INFINITY : 0.0f);
    return MAX ? rt_cu_warp_max(v) : rt_cu_warp_sum(v);
}

//===--- launch geometry ---===//

/* Row kernels take a block of RT_CU_ROW_THREADS threads: tx threads along
 * a row (a power of two from 32 to RT_CU_ROW_THREADS, about the row's
 * length) and RT_CU_ROW_THREADS / tx rows side by side, so that short rows
 * still fill the block. */
#define RT_CU_ROW_THREADS 256

static inline dim3 rt_cu_row_block(int64_t ne0) {
    unsigned tx = RT_CU_WARP;
    while (tx < RT_CU_ROW_THREADS && (int64_t)tx < ne0) tx *= 2;
    return dim3(tx, RT_CU_ROW_THREADS / tx, 1);
}

/* Blocks for n_rows rows of block's shape; 0 when the grid would be too
 * large for one launch (the launcher then reports an error). */
static inline unsigned rt_cu_row_grid(int64_t n_rows, dim3 block) {
    const int64_t n = (n_rows + block.y - 1) / block.y;
    return n > 0x7fffffff ? 0u : (unsigned)n;
}

/* Threads for kernels that reduce a whole row in one block. */
static inline unsigned rt_cu_reduce_threads(int64_t ne0) {
    return ne0 <= 256 ? RT_CU_WARP : (ne0 <= 2048 ? 256u : 1024u);
}

/* A launch that cannot happen (grid too large) as a CUDA error. */
static inline cudaError_t rt_cu_launched(unsigned grid) {
    return grid == 0 ? cudaErrorInvalidConfiguration : cudaGetLastError();
}

#endif /* RT_CU_COMMON_CUH */
