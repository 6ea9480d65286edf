/* SPDX-License-Identifier: MIT */
/* flash_attn.cu: FLASH_ATTN's kernels (the plan and the layout are in
 * kernels.h, the online softmax and the rows' addressing in
 * flash_attn.cuh). A block holds up to RT_CU_FA_MAX_WARPS warps of one or
 * (prompts) two query rows each, rows that share one kv head (rows t = i *
 * r + hh of query i and head g * r + hh, r = H / H_kv: under grouped
 * queries the heads of one query sit side by side, so they also share the
 * mask row), and walks one key range a tile of 32 keys at a time:
 *
 *   1. each lane reads its key's mask value; a tile that no row of the
 *      block can see (every value -inf: the future under a causal mask)
 *      is skipped by the whole block, before anything is loaded;
 *   2. the block loads the tile's k and v rows into shared memory as F32
 *      (four elements per load where rows are aligned);
 *   3. each warp gives lane j key j's score for each of its rows (q
 *      pre-scaled in shared memory, k rows padded by four floats so that
 *      the lanes' 16-byte reads fall in distinct banks; each k and v
 *      element read once for both rows), takes the tile's max and sum with
 *      shuffles, and adds p_j v_j into its lanes' share of Dv (lane + 32 c).
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
/* Blocks of RT_CU_FA_THREADS an SM must hold at once: 2 leaves 128
 * registers a thread, what two rows' acc in the generic kernel take
 * without spilling (with no minimum, nvcc 13 caps these kernels at 64 and
 * spills). */
#define RT_CU_FA_MIN_BLOCKS 2

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

/* Shared bytes of a block: k tile (rows padded by 4), v tile, q rows. */
__host__ __device__ constexpr size_t rt_cu_fa_smem(int D, int Dv, int n_rows) {
    return sizeof(float) * ((size_t)RT_CU_FA_TILE * (rt_cu_fa_pad4(D) + 4) +
                            (size_t)RT_CU_FA_TILE * rt_cu_fa_pad4(Dv) + (size_t)n_rows * rt_cu_fa_pad4(D));
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

/* Lane's key (krow) against the warp's RW q rows in qs (D4 floats each):
 * each k element is read once for all of them. */
template <int D4, int RW>
__device__ __forceinline__ void rt_cu_fa_dot(const float *qs, const float *krow, int d4, float dot[RW]) {
    const int n4 = (D4 ? D4 : d4) / 4; /* also the float4s between rows of qs */
    const float4 *q4 = (const float4 *)qs, *k4 = (const float4 *)krow;
#pragma unroll
    for (int rr = 0; rr < RW; rr++) dot[rr] = 0.0f;
#pragma unroll 8
    for (int c = 0; c < n4; c++) {
        const float4 b = k4[c];
#pragma unroll
        for (int rr = 0; rr < RW; rr++) {
            const float4 a = q4[rr * n4 + c];
            dot[rr] = fmaf(a.x, b.x, dot[rr]);
            dot[rr] = fmaf(a.y, b.y, dot[rr]);
            dot[rr] = fmaf(a.z, b.z, dot[rr]);
            dot[rr] = fmaf(a.w, b.w, dot[rr]);
        }
    }
}

/* One warp's rows over one loaded tile: scores, the online softmax, and
 * p_j v_j into acc (lane + 32 c of Dv). A row that sees no key of the
 * tile keeps its state (its weights are all 0). */
template <int D_CT, int DV_CT, int RW, int NC>
__device__ __forceinline__ void rt_cu_fa_tile(const float *qs, const float *kt, const float *vt, int ks, int D4,
                                              int DV4, int Dv, float cap, const float mv[RW], rt_cu_fa_state st[RW],
                                              float acc[RW][NC]) {
    const int lane = threadIdx.x;
    float dot[RW], p[RW];
    rt_cu_fa_dot<D_CT ? rt_cu_fa_pad4(D_CT) : 0, RW>(qs, kt + lane * ks, D4, dot);
#pragma unroll
    for (int rr = 0; rr < RW; rr++) {
        const float s = mv[rr] != -INFINITY ? rt_cu_fa_score(dot[rr], cap, mv[rr]) : -INFINITY;
        float corr = 1.0f;
        const bool seen = rt_cu_fa_rescale(st[rr], rt_cu_warp_max(s), &corr);
        p[rr] = seen ? rt_cu_fa_weight(s, st[rr].m) : 0.0f;
        st[rr].l += rt_cu_warp_sum(p[rr]);
#pragma unroll
        for (int c = 0; c < NC; c++) acc[rr][c] *= corr;
    }
    for (int j = 0; j < RT_CU_FA_TILE; j++) {
        float pj[RW];
#pragma unroll
        for (int rr = 0; rr < RW; rr++) pj[rr] = __shfl_sync(0xffffffffu, p[rr], j);
        const float *vr = vt + j * DV4;
#pragma unroll
        for (int c = 0; c < NC; c++) {
            if (lane + RT_CU_WARP * c >= Dv) continue;
            const float x = vr[lane + RT_CU_WARP * c];
#pragma unroll
            for (int rr = 0; rr < RW; rr++) acc[rr][c] = fmaf(pj[rr], x, acc[rr][c]);
        }
    }
}

/* A finished row: its output row (one range) or its range's partial. */
template <int NC>
__device__ __forceinline__ void rt_cu_fa_finish(const rt_cu_tensor_t &dst, const rt_cu_fa_args &a,
                                                const rt_cu_fa_where &x, int Dv, const rt_cu_fa_state &st,
                                                const float acc[NC]) {
    const int lane = threadIdx.x;
    float *out, scale = 1.0f;
    if (a.n_split == 1) {
        out = (float *)(dst.data + x.h * dst.nb[1] + x.i * dst.nb[2] + x.i3 * dst.nb[3]);
        scale = rt_cu_fa_inv_l(st);
    } else {
        float *part = a.part + rt_cu_fa_part_at(blockIdx.z, rt_cu_fa_rid(x, a.H_kv, a.rows), a.n_rows, Dv);
        if (lane == 0) {
            part[0] = st.m;
            part[1] = st.l;
        }
        out = part + RT_CU_FA_PART_HEAD;
    }
#pragma unroll
    for (int c = 0; c < NC; c++)
        if (lane + RT_CU_WARP * c < Dv) out[lane + RT_CU_WARP * c] = acc[c] * scale;
}

/* The block's key range [start, end): RW rows per warp, their partials or
 * outputs. */
template <int D_CT, int DV_CT, int RW>
__global__ void __launch_bounds__(RT_CU_FA_THREADS, RT_CU_FA_MIN_BLOCKS)
    rt_cu_k_fa(rt_cu_tensor_t dst, rt_cu_tensor_t q, rt_cu_tensor_t k, rt_cu_tensor_t v,
               rt_cu_tensor_t mask, rt_cu_fa_args a) {
    constexpr int NC = DV_CT ? (DV_CT + RT_CU_WARP - 1) / RT_CU_WARP : RT_CU_FA_MAX_DIM / RT_CU_WARP;
    extern __shared__ float4 rt_cu_fa_shared[];
    const int D = D_CT ? D_CT : a.D, Dv = DV_CT ? DV_CT : a.Dv;
    const int D4 = rt_cu_fa_pad4(D), DV4 = rt_cu_fa_pad4(Dv), ks = D4 + 4;
    float *kt = (float *)rt_cu_fa_shared, *vt = kt + RT_CU_FA_TILE * ks;
    const int lane = threadIdx.x, w = threadIdx.y;
    float *qs = vt + RT_CU_FA_TILE * DV4 + w * RW * D4;

    /* Rows past the last are idle (warp-uniform); idle warps still join every barrier. */
    bool active[RW];
    rt_cu_fa_where x[RW];
    const char *mrow[RW];
#pragma unroll
    for (int rr = 0; rr < RW; rr++) {
        const int64_t t = rt_cu_fa_row(blockIdx.x, w, rr, blockDim.y, RW);
        active[rr] = t < a.rows;
        x[rr] = rt_cu_fa_locate(active[rr] ? t : 0, blockIdx.y, a.H_kv, a.r);
        const float *qrow = (const float *)(q.data + x[rr].i * q.nb[1] + x[rr].h * q.nb[2] + x[rr].i3 * q.nb[3]);
        for (int d = lane; d < D4; d += RT_CU_WARP)
            qs[rr * D4 + d] = active[rr] && d < D ? qrow[d] * a.scale : 0.0f;
        mrow[rr] = mask.data ? mask.data + x[rr].i * mask.nb[1] : nullptr;
    }
    const int64_t g = x[0].g, i3 = x[0].i3;
    const char *kbase = k.data + g * k.nb[2] + i3 * k.nb[3], *vbase = v.data + g * v.nb[2] + i3 * v.nb[3];

    const int64_t start = (int64_t)blockIdx.z * a.chunk;
    const int64_t end = start + a.chunk < a.n_kv ? start + a.chunk : a.n_kv;
    rt_cu_fa_state st[RW];
    float acc[RW][NC];
#pragma unroll
    for (int rr = 0; rr < RW; rr++) {
        st[rr] = {-INFINITY, 0.0f};
#pragma unroll
        for (int c = 0; c < NC; c++) acc[rr][c] = 0.0f;
    }

    for (int64_t t0 = start; t0 < end; t0 += RT_CU_FA_TILE) {
        const int64_t key = t0 + lane;
        float mv[RW];
        bool sees = false;
#pragma unroll
        for (int rr = 0; rr < RW; rr++) {
            mv[rr] = active[rr] && key < end ? 0.0f : -INFINITY;
            if (mrow[rr] && mv[rr] == 0.0f) mv[rr] = rt_cu_load(mask.type, mrow[rr], mask.nb[0], key);
            sees = sees || mv[rr] != -INFINITY;
        }
        if (!__syncthreads_or(sees)) continue; /* uniform: nothing was written this round */
        rt_cu_fa_load_tile(kt, ks, k, kbase, D, t0, end, a.vec_k);
        rt_cu_fa_load_tile(vt, DV4, v, vbase, Dv, t0, end, a.vec_v);
        __syncthreads();
        if (active[0]) rt_cu_fa_tile<D_CT, DV_CT, RW, NC>(qs, kt, vt, ks, D4, DV4, Dv, a.cap, mv, st, acc);
        __syncthreads(); /* the next tile overwrites kt and vt */
    }
#pragma unroll
    for (int rr = 0; rr < RW; rr++)
        if (active[rr]) rt_cu_fa_finish<NC>(dst, a, x[rr], Dv, st[rr], acc[rr]);
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

template <int D_CT, int DV_CT, int RW>
static cudaError_t rt_cu_fa_launch_rw(const rt_cu_node_t *n, const rt_cu_fa_args &a, dim3 grid, dim3 block,
                                      cudaStream_t stream) {
    const size_t smem = rt_cu_fa_smem(a.D, a.Dv, (int)block.y * RW);
    if (smem > 48 * 1024) { /* only the generic kernel's largest heads; opting in is idempotent */
        const cudaError_t e = cudaFuncSetAttribute(rt_cu_k_fa<D_CT, DV_CT, RW>,
                                                   cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
        if (e != cudaSuccess) return e;
    }
    rt_cu_k_fa<D_CT, DV_CT, RW><<<grid, block, smem, stream>>>(n->dst, n->src[0], n->src[1], n->src[2], n->src[3], a);
    return cudaGetLastError();
}

template <int D_CT, int DV_CT>
static cudaError_t rt_cu_fa_launch(const rt_cu_node_t *n, const rt_cu_fa_args &a, int rows_per_warp, dim3 grid,
                                   dim3 block, cudaStream_t stream) {
    static_assert(RT_CU_FA_MAX_ROWS_PER_WARP == 2, "one instantiation per rows_per_warp");
    return rows_per_warp == 2 ? rt_cu_fa_launch_rw<D_CT, DV_CT, 2>(n, a, grid, block, stream)
                              : rt_cu_fa_launch_rw<D_CT, DV_CT, 1>(n, a, grid, block, stream);
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
    const int rw = plan->rows_per_warp;
    if (a.D == 64 && a.Dv == 64) e = rt_cu_fa_launch<64, 64>(n, a, rw, grid, block, stream);
    else if (a.D == 128 && a.Dv == 128) e = rt_cu_fa_launch<128, 128>(n, a, rw, grid, block, stream);
    else e = rt_cu_fa_launch<0, 0>(n, a, rw, grid, block, stream);
    if (e != cudaSuccess || a.n_split == 1) return e;
    const dim3 mblock(RT_CU_WARP, 4, 1);
    const int64_t mgrid = (a.n_rows + mblock.y - 1) / mblock.y;
    if (mgrid > 0x7fffffff) return cudaErrorInvalidConfiguration;
    rt_cu_k_fa_merge<<<(unsigned)mgrid, mblock, 0, stream>>>(n->dst, a);
    return cudaGetLastError();
}
