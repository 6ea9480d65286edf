// SPDX-License-Identifier: MIT
// norm.comp: NORM ((x - mean) / sqrt(var + eps)) and RMS_NORM
// (x / sqrt(mean(x^2) + eps)), one workgroup per row, any strides. Each
// invocation reads and writes only its own elements, so the destination
// may be the source's bytes. OP_RMS_NORM_MUL is RMS_NORM followed by the
// MUL of its result by w (binding 1, broadcast over rows as binary.comp
// does): one dispatch writes both the norm (binding 2, for any other
// reader) and the product (binding 3).
#version 450
#include "common.glsl"
#include "reduce.glsl"

#define OP_NORM 0u
#define OP_RMS_NORM 1u
#define OP_RMS_NORM_MUL 2u

layout(push_constant) uniform Push {
    uvec4 offs;
    uvec4 ne_a, nb_a;
    uvec4 nb_d;             // the norm's strides (binding 3, or 2 when fused)
    float eps;
    uint n_rows;
    uint pad0, pad1;
    uvec4 ne_w, nb_w, nb_m; // OP_RMS_NORM_MUL: w, and the product's strides
} pc;

// Stores the normalised element k of the row at 4-index ir.
void put(uvec4 ir, uint k, float y) {
    if (OP != OP_RMS_NORM_MUL) {
        store3(pc.offs.w + offset4(ir, pc.nb_d) + k * pc.nb_d.x, y);
        return;
    }
    store2(pc.offs.z + offset4(ir, pc.nb_d) + k * pc.nb_d.x, y);
    const float w = load1(pc.offs.y + offset4(ir % pc.ne_w, pc.nb_w) + k * pc.nb_w.x);
    store3(pc.offs.w + offset4(ir, pc.nb_m) + k * pc.nb_m.x, y * w);
}

void main() {
    const uint row = group_flat();
    if (row >= pc.n_rows) return;
    const uvec4 ir = unravel_row(row, pc.ne_a);
    const uint a0 = pc.offs.x + offset4(ir, pc.nb_a);
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
    for (uint k = t; k < n; k += wg) put(ir, k, (load0(a0 + k * pc.nb_a.x) - mean) * inv);
}
