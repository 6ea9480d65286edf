/* SPDX-License-Identifier: MIT */
/* mul_mat.cu: the plugin's own MUL_MAT kernels, c[m, n] = dot(row m of a,
 * row n of b) for every matrix of dst's dims 2 and 3, a broadcast over them
 * (dst's matrix i2 reads a's i2 / r2). cuBLAS takes the large products
 * (ops_mul_mat.c); these take the rest.
 *
 * Matrix-vector (b with at most RT_CU_MMV_MAX_COLS rows): bound by reading
 * a once. A block of 4 warps owns MMV_ROWS rows of a and one row of b; the
 * warps split K, each lane taking a group of 8 consecutive elements per
 * step (a warp covers 256 contiguous elements, so loads coalesce), with b's
 * group kept in registers for all MMV_ROWS rows. One instantiation per type
 * of a, which decodes its group with the widest loads the alignment allows:
 * 16-byte loads for float rows that start on 16 bytes, 16-bit loads for
 * quantised blocks (18 and 34 bytes long, so only 2-byte aligned). A Q4_0
 * block's 32 elements are 4 groups: low nibbles of bytes 0-7 and 8-15,
 * then high nibbles of the same bytes.
 *
 * Float weights take F32 b and F32 arithmetic. Q8_0 and Q4_0 weights take
 * b already rounded to Q8_0 blocks (ops_mul_mat.c quantises it first, as
 * the CPU plugin does) and multiply integers, 4 bytes at a time (__dp4a):
 * per group sum((q_a - o) * q_b), o = 8 for Q4_0, scaled by both blocks'
 * scales. The other quantised types take F32 b and decode their group of 8
 * (which never crosses a block) through dequant.cuh, in F32.
 *
 * Tiled (any shape, any type of a): 64x64 output tiles in shared memory,
 * elements of a converted to float as they are loaded. */
#include "common.cuh"

#define MMV_WARPS 4
#define MMV_ROWS 4
#define MMV_GROUP 8 /* elements per lane per step */

/* The types whose matrix-vector product takes Q8_0 b and integer dots. */
__host__ __device__ constexpr bool rt_cu_is_quant(int type) {
    return type == RT_TYPE_Q8_0 || type == RT_TYPE_Q4_0;
}

//===--- matrix-vector: a group of b ---===//

/* Group g of a row of b: 8 floats, or 8 Q8_0 values with their scale. */
template <int TYPE, bool QUANT = rt_cu_is_quant(TYPE)>
struct rt_cu_bgroup {
    float v[MMV_GROUP];
};

template <int TYPE>
struct rt_cu_bgroup<TYPE, true> {
    int32_t q[2]; /* 8 int8, little-endian */
    float d;
};

/* The 8 bytes at p (2-byte aligned) as two little-endian words. */
__device__ __forceinline__ void rt_cu_load8_bytes(const uint8_t *p, uint32_t w[2]) {
    const uint16_t *q = (const uint16_t *)p;
    w[0] = (uint32_t)q[0] | ((uint32_t)q[1] << 16);
    w[1] = (uint32_t)q[2] | ((uint32_t)q[3] << 16);
}

template <int TYPE>
__device__ __forceinline__ void rt_cu_mmv_load_b(const char *row, int64_t g, bool vec,
                                                 rt_cu_bgroup<TYPE> &bg) {
    if constexpr (rt_cu_is_quant(TYPE)) {
        const rt_block_q8_0_t *b = (const rt_block_q8_0_t *)row + g / 4;
        uint32_t w[2];
        rt_cu_load8_bytes((const uint8_t *)b->qs + (g % 4) * MMV_GROUP, w);
        bg.q[0] = (int32_t)w[0];
        bg.q[1] = (int32_t)w[1];
        bg.d = rt_cu_half(b->d);
    } else {
        const float *p = (const float *)row + g * MMV_GROUP;
        if (vec) {
            const float4 u = ((const float4 *)p)[0], v = ((const float4 *)p)[1];
            bg.v[0] = u.x, bg.v[1] = u.y, bg.v[2] = u.z, bg.v[3] = u.w;
            bg.v[4] = v.x, bg.v[5] = v.y, bg.v[6] = v.z, bg.v[7] = v.w;
            return;
        }
#pragma unroll
        for (int j = 0; j < MMV_GROUP; j++) bg.v[j] = p[j];
    }
}

//===--- matrix-vector: a group of a, dotted with b's ---===//

/* 8 16-bit values of a float row: one 16-byte load when aligned. */
__device__ __forceinline__ void rt_cu_load8_u16(const char *row, int64_t g, bool vec, uint16_t *h) {
    const uint16_t *p = (const uint16_t *)row + g * MMV_GROUP;
    if (vec) {
        const uint4 u = *(const uint4 *)p;
        const uint32_t w[4] = { u.x, u.y, u.z, u.w };
#pragma unroll
        for (int j = 0; j < 4; j++) {
            h[2 * j] = (uint16_t)(w[j] & 0xffffu);
            h[2 * j + 1] = (uint16_t)(w[j] >> 16);
        }
        return;
    }
#pragma unroll
    for (int j = 0; j < MMV_GROUP; j++) h[j] = p[j];
}

template <int TYPE>
__device__ __forceinline__ float rt_cu_mmv_dot(const char *row, int64_t g, bool vec,
                                               const rt_cu_bgroup<TYPE> &bg) {
    float s = 0.0f;
    if constexpr (TYPE == RT_TYPE_F32) {
        const float *p = (const float *)row + g * MMV_GROUP;
        float x[MMV_GROUP];
        if (vec) {
            const float4 u = ((const float4 *)p)[0], v = ((const float4 *)p)[1];
            x[0] = u.x, x[1] = u.y, x[2] = u.z, x[3] = u.w, x[4] = v.x, x[5] = v.y, x[6] = v.z, x[7] = v.w;
        } else {
#pragma unroll
            for (int j = 0; j < MMV_GROUP; j++) x[j] = p[j];
        }
#pragma unroll
        for (int j = 0; j < MMV_GROUP; j++) s += x[j] * bg.v[j];
    } else if constexpr (TYPE == RT_TYPE_F16 || TYPE == RT_TYPE_BF16) {
        uint16_t h[MMV_GROUP];
        rt_cu_load8_u16(row, g, vec, h);
#pragma unroll
        for (int j = 0; j < MMV_GROUP; j++)
            s += (TYPE == RT_TYPE_F16 ? rt_cu_half(h[j]) : rt_cu_bf16(h[j])) * bg.v[j];
    } else if constexpr (TYPE == RT_TYPE_Q8_0) {
        const rt_block_q8_0_t *b = (const rt_block_q8_0_t *)row + g / 4;
        uint32_t w[2];
        rt_cu_load8_bytes((const uint8_t *)b->qs + (g % 4) * MMV_GROUP, w);
        const int sumi = __dp4a((int)w[1], bg.q[1], __dp4a((int)w[0], bg.q[0], 0));
        s = rt_cu_half(b->d) * bg.d * (float)sumi;
    } else if constexpr (TYPE != RT_TYPE_Q4_0) { /* decoded in F32 */
        constexpr int qk = rt_cu_block_elems(TYPE), bytes = rt_cu_block_bytes(TYPE);
        const int64_t k0 = g * MMV_GROUP;
        const uint8_t *blk = (const uint8_t *)row + (k0 / qk) * bytes;
        const int j0 = (int)(k0 % qk);
#pragma unroll
        for (int j = 0; j < MMV_GROUP; j++) s += rt_cu_dq<TYPE>(blk, j0 + j) * bg.v[j];
    } else { /* Q4_0 */
        const rt_block_q4_0_t *b = (const rt_block_q4_0_t *)row + g / 4;
        const int sub = (int)(g % 4);
        uint32_t w[2];
        rt_cu_load8_bytes(b->qs + (sub % 2) * MMV_GROUP, w);
        const int shift = sub >= 2 ? 4 : 0;
        const int n0 = (int)((w[0] >> shift) & 0x0f0f0f0fu), n1 = (int)((w[1] >> shift) & 0x0f0f0f0fu);
        int sumi = __dp4a(n1, bg.q[1], __dp4a(n0, bg.q[0], 0));
        sumi -= 8 * __dp4a(0x01010101, bg.q[1], __dp4a(0x01010101, bg.q[0], 0));
        s = rt_cu_half(b->d) * bg.d * (float)sumi;
    }
    return s;
}

//===--- matrix-vector: the kernel ---===//

/* Block (x, y, z): rows MMV_ROWS*x.. of a, row y of b, matrices z, z +
 * gridDim.z, ... of dst. vec_a and vec_b: every row of a (of b) starts on
 * 16 bytes, so float rows may be read 16 bytes at a time. */
template <int TYPE>
__global__ void __launch_bounds__(MMV_WARPS * RT_CU_WARP)
rt_cu_k_mmv(rt_cu_tensor_t dst, rt_cu_tensor_t a, rt_cu_tensor_t b, bool vec_a, bool vec_b) {
    __shared__ float partial[MMV_WARPS][MMV_ROWS];
    const int64_t K = a.ne[0], M = a.ne[1], m0 = (int64_t)blockIdx.x * MMV_ROWS, col = blockIdx.y;
    const int64_t r2 = dst.ne[2] / a.ne[2], r3 = dst.ne[3] / a.ne[3];
    const int warp = threadIdx.x / RT_CU_WARP, lane = threadIdx.x % RT_CU_WARP;
    const int64_t n_groups = K / MMV_GROUP;
    for (int64_t t = blockIdx.z; t < dst.ne[2] * dst.ne[3]; t += gridDim.z) {
        const int64_t i2 = t % dst.ne[2], i3 = t / dst.ne[2];
        const char *brow = rt_cu_row(b, col, i2, i3);
        const char *arow[MMV_ROWS];
        float acc[MMV_ROWS];
#pragma unroll
        for (int r = 0; r < MMV_ROWS; r++) {
            /* Rows past M read row M-1 (valid memory); their sums are dropped. */
            arow[r] = rt_cu_row(a, m0 + r < M ? m0 + r : M - 1, i2 / r2, i3 / r3);
            acc[r] = 0.0f;
        }
        for (int64_t g = (int64_t)warp * RT_CU_WARP + lane; g < n_groups; g += MMV_WARPS * RT_CU_WARP) {
            rt_cu_bgroup<TYPE> bg;
            rt_cu_mmv_load_b<TYPE>(brow, g, vec_b, bg);
#pragma unroll
            for (int r = 0; r < MMV_ROWS; r++) acc[r] += rt_cu_mmv_dot<TYPE>(arow[r], g, vec_a, bg);
        }
        if constexpr (!rt_cu_is_quant(TYPE)) {
            /* K % 8 elements of float rows (quantised rows come in whole groups). */
            for (int64_t i = n_groups * MMV_GROUP + threadIdx.x; i < K; i += blockDim.x) {
                const float bi = ((const float *)brow)[i];
#pragma unroll
                for (int r = 0; r < MMV_ROWS; r++) acc[r] += rt_cu_load(a.type, arow[r], a.nb[0], i) * bi;
            }
        }
#pragma unroll
        for (int r = 0; r < MMV_ROWS; r++) {
            const float s = rt_cu_warp_sum(acc[r]);
            if (lane == 0) partial[warp][r] = s;
        }
        __syncthreads();
        if (threadIdx.x < MMV_ROWS && m0 + threadIdx.x < M) {
            float s = 0.0f;
            for (int w = 0; w < MMV_WARPS; w++) s += partial[w][threadIdx.x];
            *(float *)(rt_cu_row(dst, col, i2, i3) + (m0 + threadIdx.x) * dst.nb[0]) = s;
        }
        __syncthreads();
    }
}

static bool rt_cu_rows_aligned16(const rt_cu_tensor_t &t) {
    return (uintptr_t)t.data % 16 == 0 && t.nb[1] % 16 == 0 && t.nb[2] % 16 == 0 && t.nb[3] % 16 == 0;
}

static unsigned rt_cu_grid_z(int64_t n_batch) {
    return n_batch < 65535 ? (unsigned)n_batch : 65535u;
}

cudaError_t rt_cu_launch_mul_mat_vec(const rt_cu_node_t *n, cudaStream_t stream) {
    const rt_cu_tensor_t &d = n->dst, &a = n->src[0], &b = n->src[1];
    const int64_t gx = (a.ne[1] + MMV_ROWS - 1) / MMV_ROWS;
    if (gx > 0x7fffffff || b.ne[1] > RT_CU_MMV_MAX_COLS) return cudaErrorInvalidConfiguration;
    const dim3 grid((unsigned)gx, (unsigned)b.ne[1], rt_cu_grid_z(d.ne[2] * d.ne[3]));
    const dim3 block(MMV_WARPS * RT_CU_WARP);
    const bool va = rt_cu_rows_aligned16(a), vb = rt_cu_rows_aligned16(b);
    /* Quantised weights take Q8_0 activations; float weights F32 ones. */
    if (b.type != (rt_cu_is_quant(a.type) ? RT_TYPE_Q8_0 : RT_TYPE_F32)) return cudaErrorInvalidValue;
    switch (a.type) {
    case RT_TYPE_F32: rt_cu_k_mmv<RT_TYPE_F32><<<grid, block, 0, stream>>>(d, a, b, va, vb); break;
    case RT_TYPE_F16: rt_cu_k_mmv<RT_TYPE_F16><<<grid, block, 0, stream>>>(d, a, b, va, vb); break;
    case RT_TYPE_BF16: rt_cu_k_mmv<RT_TYPE_BF16><<<grid, block, 0, stream>>>(d, a, b, va, vb); break;
    case RT_TYPE_Q8_0: rt_cu_k_mmv<RT_TYPE_Q8_0><<<grid, block, 0, stream>>>(d, a, b, va, vb); break;
    case RT_TYPE_Q4_0: rt_cu_k_mmv<RT_TYPE_Q4_0><<<grid, block, 0, stream>>>(d, a, b, va, vb); break;
#define RT_CU_MMV_CASE(T) case T: rt_cu_k_mmv<T><<<grid, block, 0, stream>>>(d, a, b, va, vb); break;
    RT_CU_MMV_CASE(RT_TYPE_Q4_1) RT_CU_MMV_CASE(RT_TYPE_Q5_0) RT_CU_MMV_CASE(RT_TYPE_Q5_1)
    RT_CU_MMV_CASE(RT_TYPE_IQ4_NL) RT_CU_MMV_CASE(RT_TYPE_Q2_K) RT_CU_MMV_CASE(RT_TYPE_Q3_K)
    RT_CU_MMV_CASE(RT_TYPE_Q4_K) RT_CU_MMV_CASE(RT_TYPE_Q5_K) RT_CU_MMV_CASE(RT_TYPE_Q6_K)
    RT_CU_MMV_CASE(RT_TYPE_IQ4_XS)
#undef RT_CU_MMV_CASE
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

//===--- tiled ---===//

#define MM_TILE 64
#define MM_TK 16
#define MM_THREADS 256 /* 16 x 16, each computing 4 x 4 outputs */

__global__ void __launch_bounds__(MM_THREADS)
rt_cu_k_mm_tiled(rt_cu_tensor_t dst, rt_cu_tensor_t a, rt_cu_tensor_t b) {
    __shared__ float as[MM_TK][MM_TILE + 1], bs[MM_TK][MM_TILE + 1];
    const int64_t K = a.ne[0], M = a.ne[1], N = b.ne[1];
    const int64_t m0 = (int64_t)blockIdx.x * MM_TILE, n0 = (int64_t)blockIdx.y * MM_TILE;
    const int64_t r2 = dst.ne[2] / a.ne[2], r3 = dst.ne[3] / a.ne[3];
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    for (int64_t t = blockIdx.z; t < dst.ne[2] * dst.ne[3]; t += gridDim.z) {
        const int64_t i2 = t % dst.ne[2], i3 = t / dst.ne[2];
        float acc[4][4] = {};
        for (int64_t k0 = 0; k0 < K; k0 += MM_TK) {
            for (int e = threadIdx.x; e < MM_TILE * MM_TK; e += MM_THREADS) {
                const int kk = e % MM_TK, rr = e / MM_TK;
                const int64_t k = k0 + kk, m = m0 + rr, nn = n0 + rr;
                as[kk][rr] = m < M && k < K ? rt_cu_load(a.type, rt_cu_row(a, m, i2 / r2, i3 / r3), a.nb[0], k) : 0.0f;
                bs[kk][rr] = nn < N && k < K ? ((const float *)rt_cu_row(b, nn, i2, i3))[k] : 0.0f;
            }
            __syncthreads();
#pragma unroll
            for (int kk = 0; kk < MM_TK; kk++)
#pragma unroll
                for (int i = 0; i < 4; i++)
#pragma unroll
                    for (int j = 0; j < 4; j++) acc[i][j] += as[kk][tx + 16 * i] * bs[kk][ty + 16 * j];
            __syncthreads();
        }
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const int64_t m = m0 + tx + 16 * i, nn = n0 + ty + 16 * j;
                if (m < M && nn < N) *(float *)(rt_cu_row(dst, nn, i2, i3) + m * dst.nb[0]) = acc[i][j];
            }
    }
}

cudaError_t rt_cu_launch_mul_mat_tiled(const rt_cu_node_t *n, cudaStream_t stream) {
    const rt_cu_tensor_t &d = n->dst, &a = n->src[0], &b = n->src[1];
    const int64_t gx = (a.ne[1] + MM_TILE - 1) / MM_TILE, gy = (b.ne[1] + MM_TILE - 1) / MM_TILE;
    if (gx > 0x7fffffff || gy > 65535) return cudaErrorInvalidConfiguration;
    const dim3 grid((unsigned)gx, (unsigned)gy, rt_cu_grid_z(d.ne[2] * d.ne[3]));
    rt_cu_k_mm_tiled<<<grid, MM_THREADS, 0, stream>>>(d, a, b);
    return cudaGetLastError();
}

//===--- pointer arrays for cublasGemmBatchedEx ---===//

__global__ void rt_cu_k_gemm_ptrs(rt_cu_tensor_t a, rt_cu_tensor_t b, rt_cu_tensor_t dst, void **ptrs) {
    const int64_t n_batch = dst.ne[2] * dst.ne[3];
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n_batch) return;
    const int64_t i2 = t % dst.ne[2], i3 = t / dst.ne[2];
    const int64_t r2 = dst.ne[2] / a.ne[2], r3 = dst.ne[3] / a.ne[3];
    ptrs[t] = a.data + (i2 / r2) * a.nb[2] + (i3 / r3) * a.nb[3];
    ptrs[n_batch + t] = b.data + i2 * b.nb[2] + i3 * b.nb[3];
    ptrs[2 * n_batch + t] = dst.data + i2 * dst.nb[2] + i3 * dst.nb[3];
}

cudaError_t rt_cu_launch_gemm_ptrs(const rt_cu_tensor_t *a, const rt_cu_tensor_t *b,
                                   const rt_cu_tensor_t *dst, void **ptrs, cudaStream_t stream) {
    const int64_t n_batch = dst->ne[2] * dst->ne[3], grid = (n_batch + 255) / 256;
    if (grid > 0x7fffffff) return cudaErrorInvalidConfiguration;
    rt_cu_k_gemm_ptrs<<<(unsigned)grid, 256, 0, stream>>>(*a, *b, *dst, ptrs);
    return cudaGetLastError();
}
