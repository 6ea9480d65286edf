/* SPDX-License-Identifier: MIT */
/* flash_attn.cu: FLASH_ATTN's kernels (the plan and the layout are in
 * kernels.h, the online softmax in flash_attn.cuh). A block holds up to
 * RT_CU_FA_MAX_WARPS query rows that share one kv head (rows t = i * r +
 * hh of query i and head g * r + hh, r = H / H_kv: under grouped queries
 * the heads of one query sit side by side, so they also share the mask
 * row) and walks one key range a tile of 32 keys at a time:
 *
 *   1. each lane reads its key's mask value; a tile that no row of the
 *      block can see (every value -inf: the future under a causal mask)
 *      is skipped by the whole block, before anything is loaded;
 *   2. the block loads the tile's k and v rows into shared memory as F32
 *      (four elements per load where rows are aligned);
 *   3. each warp gives lane j key j's score (q pre-scaled in shared memory,
 *      k rows padded by four floats so that the lanes' 16-byte reads fall
 *      in distinct banks), takes the tile's max and sum with shuffles, and
 *      adds p_j v_j into its lanes' share of Dv (lane + 32 c).
 *
 * Arithmetic is F32 throughout (q and p are not rounded to the cache's
 * type). With one range the block writes the output; with several it
 * writes (m, l, acc) partials and rt_cu_k_fa_merge, one warp per row,
 * combines them. Head sizes 64 and 128 have their own instantiation
 * (loops unrolled, acc in registers sized exactly); others, up to
 * RT_CU_FA_MAX_DIM, take the generic one. */
#include "common.cuh"
#include "flash_attn.cuh"

#define RT_CU_FA_THREADS (RT_CU_WARP * RT_CU_FA_MAX_WARPS)

/* What every block of a launch shares besides the tensors. */
struct rt_cu_fa_args {
    float scale, cap;
    int D, Dv;            /* head sizes of q/k and of v */
    int64_t rows, r;      /* rows per kv head and plane; q heads per kv head */
    int64_t H_kv, n_kv, chunk;
    int64_t n_rows;       /* N * H * n3: rows of all heads and planes */
    int n_split;
    bool vec_k, vec_v;    /* rows can be read four elements at a time */
    float *part;          /* partials when n_split > 1 */
};

__host__ __device__ constexpr int rt_cu_fa_pad4(int n) { return (n + 3) & ~3; }

/* Shared floats of a block: k tile (rows padded by 4), v tile, q rows. */
__host__ __device__ constexpr size_t rt_cu_fa_smem(int D, int Dv, int n_warps) {
    return sizeof(float) * ((size_t)RT_CU_FA_TILE * (rt_cu_fa_pad4(D) + 4) +
                            (size_t)RT_CU_FA_TILE * rt_cu_fa_pad4(Dv) + (size_t)n_warps * rt_cu_fa_pad4(D));
}

/* Four elements d..d+3 of a k or v row; past n, zeros. */
__device__ __forceinline__ float4 rt_cu_fa_load4(int32_t type, const char *row, int d, int n, bool vec) {
    if (vec && type == RT_TYPE_F32) return *(const float4 *)(row + (size_t)d * 4);
    if (vec) {
        const uint2 u = *(const uint2 *)(row + (size_t)d * 2);
        const float2 a = __half22float2(*(const __half2 *)&u.x), b = __half22float2(*(const __half2 *)&u.y);
        return make_float4(a.x, a.y, b.x, b.y);
    }
    const int64_t es = type == RT_TYPE_F32 ? 4 : 2;
    float x[4];
#pragma unroll
    for (int c = 0; c < 4; c++) x[c] = d + c < n ? rt_cu_load(type, row, es, d + c) : 0.0f;
    return make_float4(x[0], x[1], x[2], x[3]);
}

/* Keys t0 .. t0 + 31 of a (g, i3) matrix into a tile of rows ld floats
 * apart; keys at or past end are zeros (their weights are 0, and 0 * 0
 * keeps the sums finite). */
__device__ __forceinline__ void rt_cu_fa_load_tile(float *tile, int ld, const rt_cu_tensor_t &t,
                                                   const char *base, int n, int64_t t0, int64_t end,
                                                   bool vec) {
    const int per = rt_cu_fa_pad4(n) / 4, tid = threadIdx.y * RT_CU_WARP + threadIdx.x;
    const int n_threads = blockDim.y * RT_CU_WARP;
    for (int idx = tid; idx < RT_CU_FA_TILE * per; idx += n_threads) {
        const int j = idx / per, d = (idx % per) * 4;
        const int64_t key = t0 + j;
        float4 x = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (key < end) x = rt_cu_fa_load4(t.type, base + key * t.nb[1], d, n, vec);
        *(float4 *)(tile + j * ld + d) = x;
    }
}

/* Lane's score of key (this lane's) against the warp's q row in qs. */
template <int D4>
__device__ __forceinline__ float rt_cu_fa_dot(const float *qs, const float *krow, int d4) {
    const int n4 = (D4 ? D4 : d4) / 4;
    const float4 *q4 = (const float4 *)qs, *k4 = (const float4 *)krow;
    float dot = 0.0f;
#pragma unroll 8
    for (int c = 0; c < n4; c++) {
        const float4 a = q4[c], b = k4[c];
        dot = fmaf(a.x, b.x, dot);
        dot = fmaf(a.y, b.y, dot);
        dot = fmaf(a.z, b.z, dot);
        dot = fmaf(a.w, b.w, dot);
    }
    return dot;
}

/* The block's key range [start, end), its partial or output per row. */
template <int D_CT, int DV_CT>
__global__ void __launch_bounds__(RT_CU_FA_THREADS)
    rt_cu_k_fa(rt_cu_tensor_t dst, rt_cu_tensor_t q, rt_cu_tensor_t k, rt_cu_tensor_t v,
               rt_cu_tensor_t mask, rt_cu_fa_args a) {
    constexpr int NC = DV_CT ? (DV_CT + RT_CU_WARP - 1) / RT_CU_WARP : RT_CU_FA_MAX_DIM / RT_CU_WARP;
    extern __shared__ float4 rt_cu_fa_shared[];
    const int D = D_CT ? D_CT : a.D, Dv = DV_CT ? DV_CT : a.Dv;
    const int D4 = rt_cu_fa_pad4(D), DV4 = rt_cu_fa_pad4(Dv), ks = D4 + 4;
    float *kt = (float *)rt_cu_fa_shared, *vt = kt + RT_CU_FA_TILE * ks;
    const int lane = threadIdx.x, w = threadIdx.y;
    float *qs = vt + RT_CU_FA_TILE * DV4 + w * D4;

    const int64_t t = (int64_t)blockIdx.x * blockDim.y + w;
    const bool active = t < a.rows; /* warp-uniform; idle warps still join every barrier */
    const rt_cu_fa_where x = rt_cu_fa_locate(active ? t : 0, blockIdx.y, a.H_kv, a.r);
    const int64_t g = x.g, i3 = x.i3, i = x.i, h = x.h;
    const float *qrow = (const float *)(q.data + i * q.nb[1] + h * q.nb[2] + i3 * q.nb[3]);
    for (int d = lane; d < D4; d += RT_CU_WARP) qs[d] = active && d < D ? qrow[d] * a.scale : 0.0f;
    const char *kbase = k.data + g * k.nb[2] + i3 * k.nb[3], *vbase = v.data + g * v.nb[2] + i3 * v.nb[3];
    const char *mrow = mask.data ? mask.data + i * mask.nb[1] : nullptr;

    const int64_t start = (int64_t)blockIdx.z * a.chunk;
    const int64_t end = start + a.chunk < a.n_kv ? start + a.chunk : a.n_kv;
    rt_cu_fa_state st = {-INFINITY, 0.0f};
    float acc[NC];
#pragma unroll
    for (int c = 0; c < NC; c++) acc[c] = 0.0f;

    for (int64_t t0 = start; t0 < end; t0 += RT_CU_FA_TILE) {
        const int64_t key = t0 + lane;
        float mv = key < end ? 0.0f : -INFINITY;
        if (mrow && active && key < end) mv = rt_cu_load(mask.type, mrow, mask.nb[0], key);
        const bool sees = active && mv != -INFINITY;
        if (!__syncthreads_or(sees)) continue; /* uniform: nothing was written this round */
        rt_cu_fa_load_tile(kt, ks, k, kbase, D, t0, end, a.vec_k);
        rt_cu_fa_load_tile(vt, DV4, v, vbase, Dv, t0, end, a.vec_v);
        __syncthreads();
        if (active) {
            const float s = sees ? rt_cu_fa_score(rt_cu_fa_dot<D_CT ? rt_cu_fa_pad4(D_CT) : 0>(qs, kt + lane * ks, D4),
                                                  a.cap, mv)
                                 : -INFINITY;
            float corr;
            if (rt_cu_fa_rescale(st, rt_cu_warp_max(s), &corr)) {
                const float p = rt_cu_fa_weight(s, st.m);
                st.l += rt_cu_warp_sum(p);
#pragma unroll
                for (int c = 0; c < NC; c++) acc[c] *= corr;
                for (int j = 0; j < RT_CU_FA_TILE; j++) {
                    const float pj = __shfl_sync(0xffffffffu, p, j);
                    const float *vr = vt + j * DV4;
#pragma unroll
                    for (int c = 0; c < NC; c++)
                        if (lane + RT_CU_WARP * c < Dv) acc[c] = fmaf(pj, vr[lane + RT_CU_WARP * c], acc[c]);
                }
            }
        }
        __syncthreads(); /* the next tile overwrites kt and vt */
    }
    if (!active) return;

    if (a.n_split == 1) {
        float *orow = (float *)(dst.data + h * dst.nb[1] + i * dst.nb[2] + i3 * dst.nb[3]);
        const float inv = rt_cu_fa_inv_l(st);
#pragma unroll
        for (int c = 0; c < NC; c++)
            if (lane + RT_CU_WARP * c < Dv) orow[lane + RT_CU_WARP * c] = acc[c] * inv;
        return;
    }
    float *part = a.part + rt_cu_fa_part_at(blockIdx.z, rt_cu_fa_rid(x, a.H_kv, a.rows), a.n_rows, Dv);
    if (lane == 0) {
        part[0] = st.m;
        part[1] = st.l;
    }
#pragma unroll
    for (int c = 0; c < NC; c++)
        if (lane + RT_CU_WARP * c < Dv) part[RT_CU_FA_PART_HEAD + lane + RT_CU_WARP * c] = acc[c];
}

/* One warp per row: the partials of its n_split ranges into the output. */
__global__ void rt_cu_k_fa_merge(rt_cu_tensor_t dst, rt_cu_fa_args a) {
    const int64_t rid = (int64_t)blockIdx.x * blockDim.y + threadIdx.y;
    if (rid >= a.n_rows) return;
    const rt_cu_fa_where x = rt_cu_fa_locate_rid(rid, a.H_kv, a.rows, a.r);
    const size_t stride = rt_cu_fa_part_at(1, 0, a.n_rows, a.Dv);
    const float *part = a.part + rt_cu_fa_part_at(0, rid, a.n_rows, a.Dv);
    float m, inv_l;
    rt_cu_fa_merge_scale(part, a.n_split, stride, &m, &inv_l);
    float *orow = (float *)(dst.data + x.h * dst.nb[1] + x.i * dst.nb[2] + x.i3 * dst.nb[3]);
    for (int e = threadIdx.x; e < a.Dv; e += RT_CU_WARP)
        orow[e] = rt_cu_fa_merge_elem(part, a.n_split, stride, m, inv_l, e);
}

//===--- launching ---===//

/* Rows (and the matrix bases) fall on 4-element boundaries. */
static bool rt_cu_fa_vec_ok(const rt_cu_tensor_t &t, int n) {
    const int64_t align = 4 * (t.type == RT_TYPE_F32 ? 4 : 2);
    return n % 4 == 0 && (uintptr_t)t.data % align == 0 && t.nb[1] % align == 0 && t.nb[2] % align == 0 &&
           t.nb[3] % align == 0;
}

template <int D_CT, int DV_CT>
static cudaError_t rt_cu_fa_launch(const rt_cu_node_t *n, const rt_cu_fa_args &a, dim3 grid, dim3 block,
                                   cudaStream_t stream) {
    const size_t smem = rt_cu_fa_smem(a.D, a.Dv, (int)block.y);
    if (smem > 48 * 1024) { /* only the generic kernel's largest heads; opting in is idempotent */
        const cudaError_t e = cudaFuncSetAttribute(rt_cu_k_fa<D_CT, DV_CT>,
                                                   cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
        if (e != cudaSuccess) return e;
    }
    rt_cu_k_fa<D_CT, DV_CT><<<grid, block, smem, stream>>>(n->dst, n->src[0], n->src[1], n->src[2], n->src[3], a);
    return cudaGetLastError();
}

cudaError_t rt_cu_launch_flash_attn(const rt_cu_node_t *n, const rt_cu_fa_plan_t *plan, float *partials,
                                    cudaStream_t stream) {
    const rt_cu_tensor_t &q = n->src[0], &k = n->src[1], &v = n->src[2];
    rt_cu_fa_args a;
    a.scale = rt_cu_param_f32(n->params[0]);
    a.cap = rt_cu_param_f32(n->params[1]);
    a.D = (int)q.ne[0];
    a.Dv = (int)v.ne[0];
    a.rows = plan->rows;
    a.r = q.ne[2] / k.ne[2];
    a.H_kv = k.ne[2];
    a.n_kv = k.ne[1];
    a.chunk = plan->chunk;
    a.n_rows = q.ne[1] * q.ne[2] * q.ne[3];
    a.n_split = plan->n_split;
    a.vec_k = rt_cu_fa_vec_ok(k, a.D);
    a.vec_v = rt_cu_fa_vec_ok(v, a.Dv);
    a.part = partials;
    if (a.D > RT_CU_FA_MAX_DIM || a.Dv > RT_CU_FA_MAX_DIM || (a.n_split > 1 && !partials))
        return cudaErrorInvalidValue;
    const int64_t gy = a.H_kv * q.ne[3];
    if (plan->row_blocks > 0x7fffffff || gy > 65535 || a.n_split > 65535) return cudaErrorInvalidConfiguration;
    const dim3 grid((unsigned)plan->row_blocks, (unsigned)gy, (unsigned)a.n_split);
    const dim3 block(RT_CU_WARP, (unsigned)plan->n_warps, 1);
    cudaError_t e;
    if (a.D == 64 && a.Dv == 64) e = rt_cu_fa_launch<64, 64>(n, a, grid, block, stream);
    else if (a.D == 128 && a.Dv == 128) e = rt_cu_fa_launch<128, 128>(n, a, grid, block, stream);
    else e = rt_cu_fa_launch<0, 0>(n, a, grid, block, stream);
    if (e != cudaSuccess || a.n_split == 1) return e;
    const dim3 mblock(RT_CU_WARP, 4, 1);
    const int64_t mgrid = (a.n_rows + mblock.y - 1) / mblock.y;
    if (mgrid > 0x7fffffff) return cudaErrorInvalidConfiguration;
    rt_cu_k_fa_merge<<<(unsigned)mgrid, mblock, 0, stream>>>(n->dst, a);
    return cudaGetLastError();
}
