// SPDX-License-Identifier: MIT
// get_rows.comp: GET_ROWS. Output element (i0, j, i2, i3) is element i0 of
// row b[j, i2, i3] of matrix (i2, i3) of a, converted to F32; a may be any
// float type or any quantised type (rows contiguous). An invocation writes
// one element of a float a, or one group of 16 of a quantised one (decoded
// once, by dequant.glsl). A row index out of range reads as zeros rather
// than outside the buffer.
#version 450
#include "common.glsl"
#include "dequant.glsl"

layout(push_constant) uniform Push {
    uvec4 offs;
    uvec4 ne_d, nb_d;       // destination {n0, m, n2, n3}
    uvec4 nb_a;             // a's strides (nb_a.x unused: rows are contiguous)
    uvec4 nb_b;             // b's strides over {m, n2, n3}
    uint n;                 // invocations: elements (groups of 16 for quantised a) of the destination
    uint n_rows;            // a->ne[1]
} pc;

const bool QUANT = TYPE_IS_QUANT(TYPE0);
const uint G = QUANT ? 16u : 1u;

void main() {
    const uint i = thread_flat();
    if (i >= pc.n) return;
    const uvec4 id = unravel(i * G, pc.ne_d);
    const int r = loadi1(pc.offs.y + id.y * pc.nb_b.x + id.z * pc.nb_b.y + id.w * pc.nb_b.z);
    const bool ok = r >= 0 && uint(r) < pc.n_rows;
    const uint row = pc.offs.x + uint(ok ? r : 0) * pc.nb_a.y + id.z * pc.nb_a.z + id.w * pc.nb_a.w;
    const uint d = pc.offs.w + offset4(id, pc.nb_d);
    if (QUANT) {
        float y[16];
        dq_row_group(row, id.x / 16u, y);
        for (uint e = 0u; e < 16u; e++) store3(d + e * pc.nb_d.x, ok ? y[e] : 0.0);
    } else {
        store3(d, ok ? load0(row + id.x * type_bytes(TYPE0)) : 0.0);
    }
}
