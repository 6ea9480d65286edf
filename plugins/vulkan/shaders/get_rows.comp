// SPDX-License-Identifier: MIT
// get_rows.comp: GET_ROWS. Output element (i0, j, i2, i3) is element i0 of
// row b[j, i2, i3] of matrix (i2, i3) of a, converted to F32; a may be any
// float type or Q8_0/Q4_0 (rows contiguous). A row index out of range reads
// as zeros rather than outside the buffer.
#version 450
#include "common.glsl"

layout(push_constant) uniform Push {
    uvec4 offs;
    uvec4 ne_d, nb_d;       // destination {n0, m, n2, n3}
    uvec4 nb_a;             // a's strides (nb_a.x unused: rows are contiguous)
    uvec4 nb_b;             // b's strides over {m, n2, n3}
    uint n;                 // elements of the destination
    uint n_rows;            // a->ne[1]
} pc;

void main() {
    const uint i = thread_flat();
    if (i >= pc.n) return;
    const uvec4 id = unravel(i, pc.ne_d);
    const int r = loadi1(pc.offs.y + id.y * pc.nb_b.x + id.z * pc.nb_b.y + id.w * pc.nb_b.z);
    float x = 0.0;
    if (r >= 0 && uint(r) < pc.n_rows)
        x = row0(pc.offs.x + uint(r) * pc.nb_a.y + id.z * pc.nb_a.z + id.w * pc.nb_a.w, id.x);
    store3(pc.offs.w + offset4(id, pc.nb_d), x);
}
