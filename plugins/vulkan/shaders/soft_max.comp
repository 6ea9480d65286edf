// SPDX-License-Identifier: MIT
// soft_max.comp: SOFT_MAX, softmax(a*scale + mask) per row, one workgroup
// per row. The mask (F32 or F16, optional) is read at row i1 and repeats
// over dims 2 and 3. A row that is all -inf gives zeros (as the CPU plugin
// does). Values are recomputed rather than stored between passes, so the
// destination may be a's bytes.
#version 450
#include "common.glsl"
#include "reduce.glsl"

layout(push_constant) uniform Push {
    uvec4 offs;
    uvec4 ne_a, nb_a;
    uvec4 ne_m, nb_m;       // the mask's shape and strides
    uvec4 nb_d;
    float scale;
    uint has_mask;
    uint n_rows;
} pc;

uint m0;
float value(uint a0, uint k) {
    float v = load0(a0 + k * pc.nb_a.x) * pc.scale;
    if (pc.has_mask != 0u) v += load1(m0 + k * pc.nb_m.x);
    return v;
}

void main() {
    const uint row = group_flat();
    if (row >= pc.n_rows) return;
    const uvec4 ir = unravel_row(row, pc.ne_a);
    const uint a0 = pc.offs.x + offset4(ir, pc.nb_a), d0 = pc.offs.w + offset4(ir, pc.nb_d);
    m0 = pc.offs.y + ir.y * pc.nb_m.y + (ir.z % pc.ne_m.z) * pc.nb_m.z + (ir.w % pc.ne_m.w) * pc.nb_m.w;
    const uint n = pc.ne_a.x, t = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x;
    float mx = NEG_INF;
    for (uint k = t; k < n; k += wg) mx = max(mx, value(a0, k));
    mx = wg_max(mx);
    float s = 0.0;
    for (uint k = t; k < n; k += wg) s += exp(value(a0, k) - mx);
    s = wg_sum(s);
    const float inv = mx == NEG_INF ? 0.0 : 1.0 / s;
    for (uint k = t; k < n; k += wg) {
        const float e = mx == NEG_INF ? 0.0 : exp(value(a0, k) - mx);
        store3(d0 + k * pc.nb_d.x, e * inv);
    }
}
