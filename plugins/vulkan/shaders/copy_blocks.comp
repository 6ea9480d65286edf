// SPDX-License-Identifier: MIT
// copy_blocks.comp: CONT and CPY of a quantised tensor into the same type
// and shape: its rows of blocks moved as they are, one 16-bit word per
// invocation (every block size is even), from any row strides into any
// row strides.
#version 450
#include "common.glsl"

layout(push_constant) uniform Push {
    uvec4 offs;
    uvec4 ne;               // {words per row, rows over dims 1-3 as ne1, ne2, ne3}
    uvec4 nb_a, nb_d;       // byte strides (x unused: words are contiguous in a row)
    uint n;                 // words in all
} pc;

void main() {
    const uint i = thread_flat();
    if (i >= pc.n) return;
    const uvec4 id = unravel(i, pc.ne);
    const uvec4 row = uvec4(0u, id.yzw);
    b3_u16.v[(pc.offs.w + offset4(row, pc.nb_d)) / 2u + id.x] =
        b0_u16.v[(pc.offs.x + offset4(row, pc.nb_a)) / 2u + id.x];
}
