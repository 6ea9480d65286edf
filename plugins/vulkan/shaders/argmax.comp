// SPDX-License-Identifier: MIT
// argmax.comp: ARGMAX, the index of the first largest element of each row,
// one workgroup per row. NaN never compares larger; a row with nothing
// larger than -inf gives 0, as on the CPU.
#version 450
#include "common.glsl"

layout(push_constant) uniform Push {
    uvec4 offs;
    uvec4 ne_a, nb_a;
    uvec4 nb_d;             // the destination's strides over {n1, n2, n3}
    uint n_rows;
} pc;

#define WG_MAX 256
shared float best_v[WG_MAX];
shared uint best_i[WG_MAX];

// True when (v, i) beats (w, j): larger, or as large and earlier.
bool beats(float v, uint i, float w, uint j) { return v > w || (v == w && i < j); }

void main() {
    const uint row = group_flat();
    if (row >= pc.n_rows) return;
    const uvec4 ir = unravel_row(row, pc.ne_a);
    const uint a0 = pc.offs.x + offset4(ir, pc.nb_a);
    const uint t = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x;
    float bv = NEG_INF;
    uint bi = 0xffffffffu;
    for (uint k = t; k < pc.ne_a.x; k += wg) {
        const float x = load0(a0 + k * pc.nb_a.x);
        if (x > bv) { bv = x; bi = k; }
    }
    best_v[t] = bv;
    best_i[t] = bi;
    barrier();
    for (uint s = wg / 2u; s > 0u; s >>= 1) {
        if (t < s && beats(best_v[t + s], best_i[t + s], best_v[t], best_i[t])) {
            best_v[t] = best_v[t + s];
            best_i[t] = best_i[t + s];
        }
        barrier();
    }
    if (t == 0u) {
        const uint i = best_i[0] == 0xffffffffu ? 0u : best_i[0];
        storei3(pc.offs.w + ir.y * pc.nb_d.x + ir.z * pc.nb_d.y + ir.w * pc.nb_d.z, int(i));
    }
}
