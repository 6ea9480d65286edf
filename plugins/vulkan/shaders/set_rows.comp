// SPDX-License-Identifier: MIT
// set_rows.comp: SET_ROWS, the scatter counterpart of get_rows.comp.
// Element (i0, i, i2, i3) of b (F32, any strides) is stored, converted to
// the destination's type, as element i0 of row c[i, i2, i3] of matrix
// (i2, i3) of the destination (a's bytes: the node is a view of a, any
// strides: the transposed V cache takes columns). One invocation per
// element of b, not one workgroup per row: a decode step writes a single
// row per cache, so the work is in its elements. A shader cannot fail the graph, so an index outside
// [0, a->ne[1]) writes nothing for its row rather than outside a (the CPU
// plugin fails the graph instead); the other rows of a keep their bytes.
#version 450
#include "common.glsl"

layout(push_constant) uniform Push {
    uvec4 offs;             // byte offset of each binding's tensor (x unused)
    uvec4 ne_b, nb_b;       // b {n0, m, n2, n3}: elements, byte strides
    uvec4 nb_c;             // c's strides over {m, n2, n3} (w unused)
    uvec4 nb_d;             // the destination's (a's) strides
    uint n;                 // elements of b
    uint n_rows;            // a->ne[1]
} pc;

void main() {
    const uint i = thread_flat();
    if (i >= pc.n) return;
    const uvec4 id = unravel(i, pc.ne_b);
    const int r = loadi2(pc.offs.z + id.y * pc.nb_c.x + id.z * pc.nb_c.y + id.w * pc.nb_c.z);
    if (r < 0 || uint(r) >= pc.n_rows) return;
    const float x = load1(pc.offs.y + offset4(id, pc.nb_b));
    store3(pc.offs.w + offset4(uvec4(id.x, uint(r), id.z, id.w), pc.nb_d), x);
}
