// SPDX-License-Identifier: MIT
// norm.comp: NORM ((x - mean) / sqrt(var + eps)) and RMS_NORM
// (x / sqrt(mean(x^2) + eps)), one workgroup per row, any strides. Each
// invocation reads and writes only its own elements, so the destination
// may be the source's bytes.
#version 450
#include "common.glsl"
#include "reduce.glsl"

#define OP_NORM 0u
#define OP_RMS_NORM 1u

layout(push_constant) uniform Push {
    uvec4 offs;
    uvec4 ne_a, nb_a;
    uvec4 nb_d;
    float eps;
    uint n_rows;
} pc;

void main() {
    const uint row = group_flat();
    if (row >= pc.n_rows) return;
    const uvec4 ir = unravel_row(row, pc.ne_a);
    const uint a0 = pc.offs.x + offset4(ir, pc.nb_a), d0 = pc.offs.w + offset4(ir, pc.nb_d);
    const uint n = pc.ne_a.x, t = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x;
    float mean = 0.0;
    if (OP == OP_NORM) {
        float s = 0.0;
        for (uint k = t; k < n; k += wg) s += load0(a0 + k * pc.nb_a.x);
        mean = wg_sum(s) / float(n);
    }
    float s2 = 0.0;
    for (uint k = t; k < n; k += wg) {
        const float x = load0(a0 + k * pc.nb_a.x) - mean;
        s2 += x * x;
    }
    const float inv = inversesqrt(wg_sum(s2) / float(n) + pc.eps);
    for (uint k = t; k < n; k += wg) store3(d0 + k * pc.nb_d.x, (load0(a0 + k * pc.nb_a.x) - mean) * inv);
}
