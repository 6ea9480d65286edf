/* SPDX-License-Identifier: MIT */
/* copy.cu: the kernels that move elements without arithmetic. CONT and
 * CPY (and the plugin's own conversions for cuBLAS) walk the destination
 * row by row; each destination element k (in logical order) reads source
 * element k, found in the source's own shape, so reshaping copies work,
 * and directly at the same (i0..i3) when both shapes agree. Three kernels:
 * float destinations (any readable source, converted through float),
 * quantising destinations (one warp per Q8_0/Q4_0 block, the reference
 * quantisers of abi/rt_quant.h step for step, so results match the CPU
 * plugin's bit for bit), and same-type copies of types that are not floats
 * (I32, quantised blocks), moved as 16-bit words. GET_ROWS gathers rows by
 * I32 index into F32; SET_ROWS scatters F32 rows by I32 index into a float
 * destination. */
#include "common.cuh"

#include <math.h>

//===--- source cursor ---===//

/* Element (or block) k of src in logical order, for a source whose shape
 * differs from the destination's; ne0 counts the units of one row. */
__device__ __forceinline__ const char *rt_cu_src_at(const rt_cu_tensor_t &s, int64_t ne0,
                                                    int64_t k, int64_t *out_i0) {
    *out_i0 = k % ne0;
    k /= ne0;
    const int64_t i1 = k % s.ne[1];
    k /= s.ne[1];
    return rt_cu_row(s, i1, k % s.ne[2], k / s.ne[2]);
}

//===--- float destinations ---===//

__global__ void rt_cu_k_copy_float(rt_cu_tensor_t dst, rt_cu_tensor_t src, bool same_shape) {
    const int64_t r = (int64_t)blockIdx.x * blockDim.y + threadIdx.y;
    if (r >= rt_cu_nrows(dst)) return;
    const rt_cu_rowidx x = rt_cu_row_index(dst.ne, r);
    char *drow = rt_cu_row(dst, x.i1, x.i2, x.i3);
    const int64_t ne0 = dst.ne[0];
    if (same_shape) {
        const char *srow = rt_cu_row(src, x.i1, x.i2, x.i3);
        for (int64_t i0 = threadIdx.x; i0 < ne0; i0 += blockDim.x)
            rt_cu_store(dst.type, drow + i0 * dst.nb[0], rt_cu_load(src.type, srow, src.nb[0], i0));
        return;
    }
    for (int64_t i0 = threadIdx.x; i0 < ne0; i0 += blockDim.x) {
        int64_t j0;
        const char *srow = rt_cu_src_at(src, src.ne[0], r * ne0 + i0, &j0);
        rt_cu_store(dst.type, drow + i0 * dst.nb[0], rt_cu_load(src.type, srow, src.nb[0], j0));
    }
}

//===--- same-type copies of non-float types ---===//

/* unit: bytes per element or block (even for every type rt has). */
__global__ void rt_cu_k_copy_raw(rt_cu_tensor_t dst, rt_cu_tensor_t src, int64_t unit,
                                 int64_t blck, bool same_shape) {
    const int64_t r = (int64_t)blockIdx.x * blockDim.y + threadIdx.y;
    if (r >= rt_cu_nrows(dst)) return;
    const rt_cu_rowidx x = rt_cu_row_index(dst.ne, r);
    char *drow = rt_cu_row(dst, x.i1, x.i2, x.i3);
    const int64_t n = dst.ne[0] / blck, words = unit / 2;
    for (int64_t u = threadIdx.x; u < n; u += blockDim.x) {
        int64_t j0 = u;
        const char *srow = same_shape ? rt_cu_row(src, x.i1, x.i2, x.i3)
                                      : rt_cu_src_at(src, src.ne[0] / blck, r * n + u, &j0);
        const uint16_t *s = (const uint16_t *)(srow + j0 * src.nb[0]);
        uint16_t *d = (uint16_t *)(drow + u * dst.nb[0]);
        for (int64_t w = 0; w < words; w++) d[w] = s[w];
    }
}

//===--- quantising destinations ---===//

#define RT_CU_QUANT_WARPS 8 /* blocks quantised per thread block, one per warp */

/* The lane holding the largest |x| (the first one on ties), as the
 * reference quantisers pick it. */
__device__ __forceinline__ int rt_cu_warp_argmax_abs(float x) {
    float a = fabsf(x);
    int idx = threadIdx.x % RT_CU_WARP;
#pragma unroll
    for (int o = RT_CU_WARP / 2; o > 0; o >>= 1) {
        const float oa = __shfl_xor_sync(0xffffffffu, a, o);
        const int oi = __shfl_xor_sync(0xffffffffu, idx, o);
        if (oa > a || (oa == a && oi < idx)) {
            a = oa;
            idx = oi;
        }
    }
    return idx;
}

/* Lane j holds element j of the block; __fmul_rn keeps the products from
 * being fused into the additions, which the C reference does not do. */
__device__ void rt_cu_quantize_q8_0(float x, rt_block_q8_0_t *b) {
    const int lane = threadIdx.x % RT_CU_WARP;
    const float amax = rt_cu_warp_max(fabsf(x));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const float v = __fmul_rn(x, id);
    b->qs[lane] = (int8_t)(v < 0 ? -(int)(-v + 0.5f) : (int)(v + 0.5f));
    if (lane == 0) b->d = __half_as_ushort(__float2half_rn(d));
}

__device__ void rt_cu_quantize_q4_0(float x, rt_block_q4_0_t *b) {
    const int lane = threadIdx.x % RT_CU_WARP;
    const float max = __shfl_sync(0xffffffffu, x, rt_cu_warp_argmax_abs(x));
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const float xf = __fmul_rn(x, id) + 8.5f;
    const int q = xf < 15.0f ? (int)xf : 15;
    const int hi = __shfl_down_sync(0xffffffffu, q, RT_QK4_0 / 2);
    if (lane < RT_QK4_0 / 2) b->qs[lane] = (uint8_t)(q | (hi << 4));
    if (lane == 0) b->d = __half_as_ushort(__float2half_rn(d));
}

/* dst is contiguous; warp w of the block quantises block g of it. */
__global__ void rt_cu_k_copy_quant(rt_cu_tensor_t dst, rt_cu_tensor_t src, bool same_shape) {
    const int64_t per_row = dst.ne[0] / RT_QK8_0; /* RT_QK4_0 is the same 32 */
    const int64_t g = (int64_t)blockIdx.x * RT_CU_QUANT_WARPS + threadIdx.x / RT_CU_WARP;
    if (g >= per_row * rt_cu_nrows(dst)) return; /* the whole warp leaves together */
    const int64_t r = g / per_row, i0 = (g % per_row) * RT_QK8_0 + threadIdx.x % RT_CU_WARP;
    const rt_cu_rowidx x = rt_cu_row_index(dst.ne, r);
    int64_t j0 = i0;
    const char *srow = same_shape ? rt_cu_row(src, x.i1, x.i2, x.i3)
                                  : rt_cu_src_at(src, src.ne[0], r * dst.ne[0] + i0, &j0);
    const float v = rt_cu_load(src.type, srow, src.nb[0], j0);
    char *block = rt_cu_row(dst, x.i1, x.i2, x.i3) + (g % per_row) * dst.nb[0];
    if (dst.type == RT_TYPE_Q8_0) rt_cu_quantize_q8_0(v, (rt_block_q8_0_t *)block);
    else rt_cu_quantize_q4_0(v, (rt_block_q4_0_t *)block);
}

//===--- MUL_MAT's rounding of activations ---===//

/* One warp per run of rb elements (rb / 32 per lane): the run's max |x|
 * over the warp, then each element at its int8 level, as the CPU plugin's
 * activation quantisers (kern_blocks.c, abi/rt_quant.h's Q8_K) pick it. */
__global__ void rt_cu_k_round_b(rt_cu_tensor_t dst, rt_cu_tensor_t src, int rb) {
    const int64_t runs_per_row = src.ne[0] / rb;
    const int64_t run = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / RT_CU_WARP;
    if (run >= runs_per_row * rt_cu_nrows(src)) return; /* whole warps leave together */
    const int lane = threadIdx.x % RT_CU_WARP, per_lane = rb / RT_CU_WARP;
    const rt_cu_rowidx x = rt_cu_row_index(src.ne, run / runs_per_row);
    const int64_t k0 = (run % runs_per_row) * rb;
    const float *s = (const float *)rt_cu_row(src, x.i1, x.i2, x.i3) + k0;
    float *d = (float *)rt_cu_row(dst, x.i1, x.i2, x.i3) + k0;
    float amax = 0.0f;
    for (int e = 0; e < per_lane; e++) amax = fmaxf(amax, fabsf(s[lane + RT_CU_WARP * e]));
    const float scale = rt_cu_warp_max(amax) / 127.0f;
    for (int e = 0; e < per_lane; e++) {
        const float v = s[lane + RT_CU_WARP * e];
        const float r = rb == 32 ? v * (1.0f / scale) : v / scale;
        const int q = r < 0.0f ? -(int)(-r + 0.5f) : (int)(r + 0.5f);
        d[lane + RT_CU_WARP * e] = scale != 0.0f ? scale * (float)max(-127, min(127, q)) : 0.0f;
    }
}

cudaError_t rt_cu_launch_round_b(const rt_cu_node_t *n, cudaStream_t stream) {
    const rt_cu_tensor_t &s = n->src[0];
    const int rb = n->params[0];
    if (rb != 32 && rb != 256) return cudaErrorInvalidValue;
    const int64_t warps = s.ne[0] / rb * rt_cu_nrows(s), per_block = 256 / RT_CU_WARP;
    const int64_t grid = (warps + per_block - 1) / per_block;
    if (grid == 0) return cudaSuccess;
    if (grid > 0x7fffffff) return cudaErrorInvalidConfiguration;
    rt_cu_k_round_b<<<(unsigned)grid, 256, 0, stream>>>(n->dst, s, rb);
    return cudaGetLastError();
}

//===--- launchers ---===//

static bool rt_cu_same_shape(const rt_cu_tensor_t &a, const rt_cu_tensor_t &b) {
    return a.ne[0] == b.ne[0] && a.ne[1] == b.ne[1] && a.ne[2] == b.ne[2] && a.ne[3] == b.ne[3];
}

static bool rt_cu_is_float(int32_t type) {
    return type == RT_TYPE_F32 || type == RT_TYPE_F16 || type == RT_TYPE_BF16;
}

/* Bytes per element or block, and elements per block, of a type moved raw. */
static void rt_cu_raw_unit(int32_t type, int64_t *out_unit, int64_t *out_blck) {
    const int qk = rt_cu_block_elems(type);
    *out_blck = qk ? qk : 1;
    *out_unit = qk ? rt_cu_block_bytes(type) : 4; /* I32 */
}

cudaError_t rt_cu_launch_copy(const rt_cu_node_t *n, cudaStream_t stream) {
    const rt_cu_tensor_t &d = n->dst, &s = n->src[0];
    const bool same = rt_cu_same_shape(d, s);
    if (d.type == RT_TYPE_Q8_0 || d.type == RT_TYPE_Q4_0) {
        if (s.type == d.type) {
            /* falls through to the raw copy below */
        } else {
            const int64_t blocks = d.ne[0] / RT_QK8_0 * rt_cu_nrows(d);
            const int64_t grid = (blocks + RT_CU_QUANT_WARPS - 1) / RT_CU_QUANT_WARPS;
            if (grid > 0x7fffffff) return cudaErrorInvalidConfiguration;
            rt_cu_k_copy_quant<<<(unsigned)grid, RT_CU_QUANT_WARPS * RT_CU_WARP, 0, stream>>>(d, s, same);
            return cudaGetLastError();
        }
    }
    if (!rt_cu_is_float(d.type)) {
        int64_t unit, blck;
        rt_cu_raw_unit(d.type, &unit, &blck);
        const dim3 block = rt_cu_row_block(d.ne[0] / blck);
        const unsigned grid = rt_cu_row_grid(rt_cu_nrows(d), block);
        if (grid) rt_cu_k_copy_raw<<<grid, block, 0, stream>>>(d, s, unit, blck, same);
        return rt_cu_launched(grid);
    }
    const dim3 block = rt_cu_row_block(d.ne[0]);
    const unsigned grid = rt_cu_row_grid(rt_cu_nrows(d), block);
    if (grid) rt_cu_k_copy_float<<<grid, block, 0, stream>>>(d, s, same);
    return rt_cu_launched(grid);
}

//===--- GET_ROWS ---===//

__global__ void rt_cu_k_get_rows(rt_cu_tensor_t dst, rt_cu_tensor_t a, rt_cu_tensor_t idx) {
    const int64_t r = (int64_t)blockIdx.x * blockDim.y + threadIdx.y;
    if (r >= rt_cu_nrows(dst)) return;
    const rt_cu_rowidx x = rt_cu_row_index(dst.ne, r);
    const int32_t i = *(const int32_t *)(idx.data + x.i1 * idx.nb[0] + x.i2 * idx.nb[1] +
                                         x.i3 * idx.nb[2]);
    char *drow = rt_cu_row(dst, x.i1, x.i2, x.i3);
    const bool ok = i >= 0 && i < a.ne[1];
    const char *arow = ok ? rt_cu_row(a, i, x.i2, x.i3) : nullptr;
    for (int64_t i0 = threadIdx.x; i0 < dst.ne[0]; i0 += blockDim.x)
        rt_cu_store(dst.type, drow + i0 * dst.nb[0], ok ? rt_cu_load(a.type, arow, a.nb[0], i0) : 0.0f);
}

cudaError_t rt_cu_launch_get_rows(const rt_cu_node_t *n, cudaStream_t stream) {
    const dim3 block = rt_cu_row_block(n->dst.ne[0]);
    const unsigned grid = rt_cu_row_grid(rt_cu_nrows(n->dst), block);
    if (grid) rt_cu_k_get_rows<<<grid, block, 0, stream>>>(n->dst, n->src[0], n->src[1]);
    return rt_cu_launched(grid);
}

//===--- SET_ROWS ---===//

#define RT_CU_SET_ROWS_THREADS 256

/* One thread per element of src (b), not one block per row: a decode step
 * writes a single row per cache, so the work is in its elements; dst may
 * have any strides (the transposed V cache takes columns). Element
 * (i0, i1, i2, i3) of src goes to element i0 of row idx[i1, i2, i3] of dst's
 * matrix (i2, i3); dst is the node, a view of the destination a. A kernel
 * cannot fail the graph, so an index outside [0, dst.ne[1]) writes nothing
 * for its row (the CPU plugin fails the graph instead). */
__global__ void rt_cu_k_set_rows(rt_cu_tensor_t dst, rt_cu_tensor_t src, rt_cu_tensor_t idx,
                                 int64_t n) {
    const int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n) return;
    const int64_t i0 = k % src.ne[0];
    const rt_cu_rowidx x = rt_cu_row_index(src.ne, k / src.ne[0]);
    const int32_t i = *(const int32_t *)(idx.data + x.i1 * idx.nb[0] + x.i2 * idx.nb[1] +
                                         x.i3 * idx.nb[2]);
    if (i < 0 || i >= dst.ne[1]) return;
    const float v = rt_cu_load(src.type, rt_cu_row(src, x.i1, x.i2, x.i3), src.nb[0], i0);
    rt_cu_store(dst.type, rt_cu_row(dst, i, x.i2, x.i3) + i0 * dst.nb[0], v);
}

cudaError_t rt_cu_launch_set_rows(const rt_cu_node_t *n, cudaStream_t stream) {
    const rt_cu_tensor_t &src = n->src[1];
    const int64_t elems = src.ne[0] * rt_cu_nrows(src);
    if (elems == 0) return cudaSuccess;
    const int64_t grid = (elems + RT_CU_SET_ROWS_THREADS - 1) / RT_CU_SET_ROWS_THREADS;
    const unsigned g = grid > 0x7fffffff ? 0u : (unsigned)grid;
    if (g) rt_cu_k_set_rows<<<g, RT_CU_SET_ROWS_THREADS, 0, stream>>>(n->dst, src, n->src[2], elems);
    return rt_cu_launched(g);
}
