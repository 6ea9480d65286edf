/* SPDX-License-Identifier: MIT */
/* rope.cu: ROPE, the rotary position embedding. One block per row (head
 * i1 of token i2, i3); a thread per rotated pair, then the dimensions from
 * n_dims on pass through. Pair i of position p turns by
 * theta_i = p * freq_scale * freq_base^(-2i/n_dims), adjacent elements in
 * NORMAL mode and n_dims/2 apart in NEOX mode. The angle and its sine and
 * cosine are in double, as in the CPU plugin: positions reach 10^5, where
 * a float angle is already off by 10^-2 radians. */
#include "common.cuh"

#include <string.h>

__global__ void rt_cu_k_rope(rt_cu_tensor_t dst, rt_cu_tensor_t a, rt_cu_tensor_t pos,
                             int32_t n_dims, bool neox, double freq_base, double freq_scale) {
    const rt_cu_rowidx x = rt_cu_row_index(dst.ne, blockIdx.x);
    const char *arow = rt_cu_row(a, x.i1, x.i2, x.i3);
    char *drow = rt_cu_row(dst, x.i1, x.i2, x.i3);
    const int64_t half = n_dims / 2, rest = dst.ne[0] - n_dims;
    const double p = (double)*(const int32_t *)(pos.data + x.i2 * pos.nb[0]) * freq_scale;
    for (int64_t t = threadIdx.x; t < half + rest; t += blockDim.x) {
        if (t >= half) {
            const int64_t i0 = n_dims + (t - half);
            rt_cu_store(dst.type, drow + i0 * dst.nb[0], rt_cu_load(a.type, arow, a.nb[0], i0));
            continue;
        }
        const int64_t j0 = neox ? t : 2 * t, j1 = neox ? t + half : 2 * t + 1;
        double s, c;
        sincos(p * pow(freq_base, -2.0 * (double)t / (double)n_dims), &s, &c);
        const float x0 = rt_cu_load(a.type, arow, a.nb[0], j0);
        const float x1 = rt_cu_load(a.type, arow, a.nb[0], j1);
        const float cf = (float)c, sf = (float)s;
        rt_cu_store(dst.type, drow + j0 * dst.nb[0], x0 * cf - x1 * sf);
        rt_cu_store(dst.type, drow + j1 * dst.nb[0], x0 * sf + x1 * cf);
    }
}

cudaError_t rt_cu_launch_rope(const rt_cu_node_t *n, cudaStream_t stream) {
    const int64_t rows = rt_cu_nrows(n->dst);
    if (rows > 0x7fffffff) return cudaErrorInvalidConfiguration;
    float base, scale;
    memcpy(&base, &n->params[2], sizeof base);
    memcpy(&scale, &n->params[3], sizeof scale);
    const unsigned threads = n->dst.ne[0] / 2 > RT_CU_WARP ? 128u : (unsigned)RT_CU_WARP;
    rt_cu_k_rope<<<(unsigned)rows, threads, 0, stream>>>(n->dst, n->src[0], n->src[1], n->params[0],
                                                         n->params[1] == RT_ROPE_MODE_NEOX,
                                                         (double)base, (double)scale);
    return cudaGetLastError();
}
