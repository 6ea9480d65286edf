/* SPDX-License-Identifier: MIT */
/* flash_attn.cuh: FLASH_ATTN's arithmetic, shared by its kernels
 * (kernels/flash_attn.cu) and by the host check (tests/test-cuda-flash-attn.cu),
 * so that the part of the kernel most likely to be wrong, the online
 * softmax around -inf, is run here without a GPU. A query's scores are seen
 * one tile of RT_CU_FA_TILE keys at a time: the state keeps the running
 * max m (-inf until a finite score arrives) and l = sum exp(s - m); the
 * weighted sum of v lives in the caller's registers, rescaled with l. Key
 * ranges processed by different blocks leave (m, l, acc) partials that the
 * merge combines; a query that saw no finite score anywhere gets zeros,
 * as the contract (abi/rt_tensor.h) wants. Host and device code, no CUDA
 * runtime calls. */
#ifndef RT_CU_FLASH_ATTN_CUH
#define RT_CU_FLASH_ATTN_CUH

#include <math.h>
#include <stddef.h>

#include "kernels.h"

#define RT_CU_FA_HD __host__ __device__ __forceinline__

/* One query's online softmax (see the file comment). */
struct rt_cu_fa_state {
    float m; /* largest score so far, -inf before any finite one */
    float l; /* sum of exp(s - m) over the scores so far */
};

/* A score as the contract defines it: cap(q.k) + mask, q already scaled;
 * cap(x) = c tanh(x / c) when c != 0. */
RT_CU_FA_HD float rt_cu_fa_score(float dot, float cap, float mask) {
    if (cap != 0.0f) dot = cap * tanhf(dot / cap);
    return dot + mask;
}

/* A tile whose largest score is tile_max arrives: st.m becomes the new max
 * and st.l is rescaled by *out_corr, the factor the caller applies to its
 * acc. False while nothing finite has been seen (the tile adds nothing and
 * the state stays as it is: exp(-inf - -inf) would be NaN). */
RT_CU_FA_HD bool rt_cu_fa_rescale(rt_cu_fa_state &st, float tile_max, float *out_corr) {
    const float m = fmaxf(st.m, tile_max);
    if (m == -INFINITY) return false;
    *out_corr = st.m == -INFINITY ? 0.0f : expf(st.m - m);
    st.m = m;
    st.l *= *out_corr;
    return true;
}

/* A key's weight under a finite max m: exp(s - m), exactly 0 for a masked
 * key (so that a masked key's v, whatever it holds, is never touched). */
RT_CU_FA_HD float rt_cu_fa_weight(float s, float m) {
    return s == -INFINITY ? 0.0f : expf(s - m);
}

/* What 1/l a finished state divides acc by: 0 for a query that saw
 * nothing (acc is then all zeros, so the output is zeros). */
RT_CU_FA_HD float rt_cu_fa_inv_l(const rt_cu_fa_state &st) {
    return st.m == -INFINITY ? 0.0f : 1.0f / st.l;
}

/* Where a block's warp works (kernels/flash_attn.cu's grid: x over row
 * blocks, y over kv heads g and planes i3, z over key ranges). Warp w of
 * row block bx takes rows t = (bx n_warps + w) rows_per_warp + rr. Row t
 * of a kv head is query i = t / r under head g * r + t % r (r = H / H_kv);
 * rows of all heads and planes are numbered rid = (i3 H_kv + g) rows + t,
 * which orders the partials and the merge's warps. */
RT_CU_FA_HD int64_t rt_cu_fa_row(int64_t bx, int64_t w, int64_t rr, int64_t n_warps, int64_t rows_per_warp) {
    return (bx * n_warps + w) * rows_per_warp + rr;
}

struct rt_cu_fa_where {
    int64_t t, g, i3, i, h;
};

RT_CU_FA_HD rt_cu_fa_where rt_cu_fa_locate(int64_t t, int64_t gy, int64_t H_kv, int64_t r) {
    rt_cu_fa_where x;
    x.t = t;
    x.g = gy % H_kv;
    x.i3 = gy / H_kv;
    x.i = t / r;
    x.h = x.g * r + t % r;
    return x;
}

RT_CU_FA_HD int64_t rt_cu_fa_rid(const rt_cu_fa_where &x, int64_t H_kv, int64_t rows) {
    return (x.i3 * H_kv + x.g) * rows + x.t;
}

/* The merge's inverse of rt_cu_fa_rid. */
RT_CU_FA_HD rt_cu_fa_where rt_cu_fa_locate_rid(int64_t rid, int64_t H_kv, int64_t rows, int64_t r) {
    return rt_cu_fa_locate(rid % rows, rid / rows, H_kv, r);
}

/* Floats from the partials' start to range s's record of row rid. */
RT_CU_FA_HD size_t rt_cu_fa_part_at(int64_t s, int64_t rid, int64_t n_rows, int64_t Dv) {
    return ((size_t)s * (size_t)n_rows + (size_t)rid) * (size_t)(Dv + RT_CU_FA_PART_HEAD);
}

/* The partials of one query row: n_split records of (m, l, acc[Dv]),
 * stride floats apart (RT_CU_FA_PART_HEAD floats, then acc). The max M over
 * the splits and 1/L, L = sum_s exp(m_s - M) l_s; false (and *out_inv_l 0)
 * when no split saw a finite score. L >= 1 otherwise: the split whose m_s
 * is M counted its max key as exp(0). */
RT_CU_FA_HD bool rt_cu_fa_merge_scale(const float *part, int n_split, size_t stride, float *out_m,
                                      float *out_inv_l) {
    float m = -INFINITY, l = 0.0f;
    for (int s = 0; s < n_split; s++) m = fmaxf(m, part[s * stride]);
    *out_m = m;
    *out_inv_l = 0.0f;
    if (m == -INFINITY) return false;
    for (int s = 0; s < n_split; s++) l += rt_cu_fa_weight(part[s * stride], m) * part[s * stride + 1];
    *out_inv_l = 1.0f / l;
    return true;
}

/* Output element e of a row from its partials (after rt_cu_fa_merge_scale
 * gave m and inv_l). */
RT_CU_FA_HD float rt_cu_fa_merge_elem(const float *part, int n_split, size_t stride, float m,
                                      float inv_l, int64_t e) {
    float y = 0.0f;
    for (int s = 0; s < n_split; s++)
        y += rt_cu_fa_weight(part[s * stride], m) * part[s * stride + RT_CU_FA_PART_HEAD + e];
    return y * inv_l;
}

#endif /* RT_CU_FLASH_ATTN_CUH */
