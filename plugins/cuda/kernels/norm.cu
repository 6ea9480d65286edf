/* SPDX-License-Identifier: MIT */
/* norm.cu: ops that look at a whole row before writing it, one block per
 * row: NORM and RMS_NORM (eps from op_params), SOFT_MAX (scale and an
 * optional F32/F16 mask that broadcasts over dims 2 and 3) and ARGMAX.
 * Rows are read again for each pass (from L1/L2, rows are short next to
 * the caches) and each thread writes only the elements it read, so dst may
 * be the source. A SOFT_MAX row that is all -inf gives zeros, as the CPU
 * plugin does (ops_norm.c explains why). */
#include "common.cuh"

#include <math.h>

//===--- NORM, RMS_NORM ---===//

__global__ void rt_cu_k_norm(rt_cu_tensor_t dst, rt_cu_tensor_t a, bool rms, float eps) {
    __shared__ float scratch[RT_CU_WARP];
    const rt_cu_rowidx x = rt_cu_row_index(dst.ne, blockIdx.x);
    const char *arow = rt_cu_row(a, x.i1, x.i2, x.i3);
    char *drow = rt_cu_row(dst, x.i1, x.i2, x.i3);
    const int64_t n = dst.ne[0];
    float mean = 0.0f, sum = 0.0f;
    if (!rms) {
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x) sum += rt_cu_load(a.type, arow, a.nb[0], i);
        mean = rt_cu_block_reduce<false>(sum, scratch) / (float)n;
        sum = 0.0f;
    }
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        const float v = rt_cu_load(a.type, arow, a.nb[0], i) - mean;
        sum += v * v;
    }
    const float inv = 1.0f / sqrtf(rt_cu_block_reduce<false>(sum, scratch) / (float)n + eps);
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
        rt_cu_store(dst.type, drow + i * dst.nb[0], (rt_cu_load(a.type, arow, a.nb[0], i) - mean) * inv);
}

cudaError_t rt_cu_launch_norm(const rt_cu_node_t *n, cudaStream_t stream) {
    const int64_t rows = rt_cu_nrows(n->dst);
    if (rows > 0x7fffffff) return cudaErrorInvalidConfiguration;
    rt_cu_k_norm<<<(unsigned)rows, rt_cu_reduce_threads(n->dst.ne[0]), 0, stream>>>(
        n->dst, n->src[0], n->op == RT_OP_RMS_NORM, rt_cu_param_f32(n->params[0]));
    return cudaGetLastError();
}

//===--- SOFT_MAX ---===//

__device__ __forceinline__ float rt_cu_soft_max_in(const rt_cu_tensor_t &a, const char *arow,
                                                   const rt_cu_tensor_t &m, const char *mrow,
                                                   float scale, int64_t i) {
    const float v = rt_cu_load(a.type, arow, a.nb[0], i) * scale;
    return mrow ? v + rt_cu_load(m.type, mrow, m.nb[0], i) : v;
}

__global__ void rt_cu_k_soft_max(rt_cu_tensor_t dst, rt_cu_tensor_t a, rt_cu_tensor_t m,
                                 float scale) {
    __shared__ float scratch[RT_CU_WARP];
    const rt_cu_rowidx x = rt_cu_row_index(dst.ne, blockIdx.x);
    const char *arow = rt_cu_row(a, x.i1, x.i2, x.i3);
    /* Mask rows go by i1 (it has at least a's rows); its matrices repeat. */
    const char *mrow = m.data ? rt_cu_row(m, x.i1, x.i2 % m.ne[2], x.i3 % m.ne[3]) : nullptr;
    char *drow = rt_cu_row(dst, x.i1, x.i2, x.i3);
    const int64_t n = dst.ne[0];
    float max = -INFINITY;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
        max = fmaxf(max, rt_cu_soft_max_in(a, arow, m, mrow, scale, i));
    max = rt_cu_block_reduce<true>(max, scratch);
    float sum = 0.0f;
    if (max != -INFINITY)
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
            sum += expf(rt_cu_soft_max_in(a, arow, m, mrow, scale, i) - max);
    const float inv = max == -INFINITY ? 0.0f : 1.0f / rt_cu_block_reduce<false>(sum, scratch);
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        const float v = inv == 0.0f ? 0.0f : expf(rt_cu_soft_max_in(a, arow, m, mrow, scale, i) - max) * inv;
        rt_cu_store(dst.type, drow + i * dst.nb[0], v);
    }
}

cudaError_t rt_cu_launch_soft_max(const rt_cu_node_t *n, cudaStream_t stream) {
    const int64_t rows = rt_cu_nrows(n->dst);
    if (rows > 0x7fffffff) return cudaErrorInvalidConfiguration;
    rt_cu_k_soft_max<<<(unsigned)rows, rt_cu_reduce_threads(n->dst.ne[0]), 0, stream>>>(
        n->dst, n->src[0], n->src[1], rt_cu_param_f32(n->params[0]));
    return cudaGetLastError();
}

//===--- ARGMAX ---===//

/* Keeps (v, i) or takes (ov, oi): the larger value, the smaller index on
 * ties. NaN never compares larger, so it is never taken. */
__device__ __forceinline__ void rt_cu_argmax_take(float &v, int64_t &i, float ov, int64_t oi) {
    if (ov > v || (ov == v && oi < i)) {
        v = ov;
        i = oi;
    }
}

__global__ void rt_cu_k_argmax(rt_cu_tensor_t dst, rt_cu_tensor_t a) {
    __shared__ float sv[RT_CU_WARP];
    __shared__ int64_t si[RT_CU_WARP];
    const rt_cu_rowidx x = rt_cu_row_index(a.ne, blockIdx.x);
    const char *arow = rt_cu_row(a, x.i1, x.i2, x.i3);
    float v = -INFINITY;
    int64_t best = INT64_MAX;
    for (int64_t i = threadIdx.x; i < a.ne[0]; i += blockDim.x)
        rt_cu_argmax_take(v, best, rt_cu_load(a.type, arow, a.nb[0], i), i);
    for (int o = RT_CU_WARP / 2; o > 0; o >>= 1)
        rt_cu_argmax_take(v, best, __shfl_xor_sync(0xffffffffu, v, o),
                          __shfl_xor_sync(0xffffffffu, best, o));
    const int warp = threadIdx.x / RT_CU_WARP, lane = threadIdx.x % RT_CU_WARP;
    if (lane == 0) {
        sv[warp] = v;
        si[warp] = best;
    }
    __syncthreads();
    if (threadIdx.x != 0) return;
    for (int w = 1; w < (int)(blockDim.x / RT_CU_WARP); w++) rt_cu_argmax_take(v, best, sv[w], si[w]);
    /* A row with nothing above -inf (all -inf or NaN, or empty) gives 0. */
    const int32_t result = v == -INFINITY ? 0 : (int32_t)best;
    *(int32_t *)(dst.data + x.i1 * dst.nb[0] + x.i2 * dst.nb[1] + x.i3 * dst.nb[2]) = result;
}

cudaError_t rt_cu_launch_argmax(const rt_cu_node_t *n, cudaStream_t stream) {
    const int64_t rows = rt_cu_nrows(n->src[0]);
    if (rows > 0x7fffffff) return cudaErrorInvalidConfiguration;
    rt_cu_k_argmax<<<(unsigned)rows, rt_cu_reduce_threads(n->src[0].ne[0]), 0, stream>>>(n->dst, n->src[0]);
    return cudaGetLastError();
}
