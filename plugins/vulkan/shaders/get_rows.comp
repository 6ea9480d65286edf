// SPDX-License-Identifier: MIT
// get_rows.comp: GET_ROWS. Output element (i0, j, i2, i3) is element i0 of
// row b[j, i2, i3] of matrix (i2, i3) of a, converted to F32; a may be any
// float type or any quantised type (rows contiguous). An invocation writes
// one element of a float a, or one group of 16 of a quantised one (decoded
// once, by dequant.glsl). A row index out of range reads as zeros rather
// than outside the buffer. An a larger than one binding comes in chunks of
// rows (ops_chunk.c), one dispatch each, which write only their rows.
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
    uint row0;              // a chunk's first row (ops_chunk.c), else 0
    uint total_rows;        // rows of the whole a
} pc;

const bool QUANT = TYPE_IS_QUANT(TYPE0);
const uint G = QUANT ? 16u : 1u;

void main() {
    const uint i = thread_flat();
    if (i >= pc.n) return;
    const uvec4 id = unravel(i * G, pc.ne_d);
    const int r = loadi1(pc.offs.y + id.y * pc.nb_b.x + id.z * pc.nb_b.y + id.w * pc.nb_b.z);
    const int rc = r - int(pc.row0); // the row in this chunk of a
    const bool ok = rc >= 0 && uint(rc) < pc.n_rows;
    // another chunk's row; out of range rows are the first chunk's to zero
    if (!ok && ((r >= 0 && uint(r) < pc.total_rows) || pc.row0 != 0u)) return;
    const uint row = pc.offs.x + uint(ok ? rc : 0) * pc.nb_a.y + id.z * pc.nb_a.z + id.w * pc.nb_a.w;
    const uint d = pc.offs.w + offset4(id, pc.nb_d);
    if (QUANT) {
        float y[16];
        dq_row_group(row, id.x / 16u, y);
        for (uint e = 0u; e < 16u; e++) store3(d + e * pc.nb_d.x, ok ? y[e] : 0.0);
    } else {
        store3(d, ok ? load0(row + id.x * type_bytes(TYPE0)) : 0.0);
    }
}
