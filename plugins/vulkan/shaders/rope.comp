// SPDX-License-Identifier: MIT
// rope.comp: ROPE. a {head_dim, n_head, n_tok, a3}, positions b[n_tok].
// Each invocation handles one rotated pair (adjacent elements in NORMAL
// mode, n_dims/2 apart in NEOX mode; pair i turns by
// p * freq_scale * freq_base^(-2i/n_dims)) or one element past n_dims,
// which passes through. It reads both elements of its pair before writing
// them, so the destination may be a's bytes.
#version 450
#include "common.glsl"

#define MODE_NEOX 2u

layout(push_constant) uniform Push {
    uvec4 offs;
    uvec4 ne_a, nb_a;
    uvec4 nb_d;
    uint nb_p;              // positions' stride in bytes
    uint n_dims;
    uint mode;
    float freq_base;
    float freq_scale;
    uint n;                 // invocations: units per row * rows
} pc;

void main() {
    const uint u = thread_flat();
    if (u >= pc.n) return;
    const uint half_dims = pc.n_dims / 2u;
    const uint per_row = half_dims + pc.ne_a.x - pc.n_dims;
    const uint k = u % per_row;
    const uvec4 ir = unravel_row(u / per_row, pc.ne_a);
    const uint a0 = pc.offs.x + offset4(ir, pc.nb_a), d0 = pc.offs.w + offset4(ir, pc.nb_d);
    if (k >= half_dims) {
        const uint e = pc.n_dims + (k - half_dims);
        store3(d0 + e * pc.nb_d.x, load0(a0 + e * pc.nb_a.x));
        return;
    }
    const float p = float(loadi1(pc.offs.y + ir.z * pc.nb_p));
    const float theta = p * pc.freq_scale * pow(pc.freq_base, -2.0 * float(k) / float(pc.n_dims));
    const float c = cos(theta), s = sin(theta);
    const uint e0 = pc.mode == MODE_NEOX ? k : 2u * k;
    const uint e1 = pc.mode == MODE_NEOX ? k + half_dims : 2u * k + 1u;
    const float x0 = load0(a0 + e0 * pc.nb_a.x), x1 = load0(a0 + e1 * pc.nb_a.x);
    store3(d0 + e0 * pc.nb_d.x, x0 * c - x1 * s);
    store3(d0 + e1 * pc.nb_d.x, x0 * s + x1 * c);
}
