// SPDX-License-Identifier: MIT
// binary.comp: ADD, SUB, MUL, DIV with b repeating into a (each index of b
// taken modulo its ne), and SWIGLU (silu(a) * b, same shapes). One element
// per invocation; the destination may be a's bytes. EXTRA bit 0: a and the
// destination are contiguous; bit 1: b is too, with a's shape. Such
// operands are addressed as i * element size, skipping the divisions.
#version 450
#include "common.glsl"

#define OP_ADD 0u
#define OP_SUB 1u
#define OP_MUL 2u
#define OP_DIV 3u
#define OP_SWIGLU 4u

layout(push_constant) uniform Push {
    uvec4 offs;
    uvec4 ne_a, nb_a;       // a, and the destination's shape
    uvec4 ne_b, nb_b;
    uvec4 nb_d;
    uint n;                 // elements of a
} pc;

void main() {
    const uint i = thread_flat();
    if (i >= pc.n) return;
    const bool flat_a = (EXTRA & 1u) != 0u, flat_b = (EXTRA & 2u) != 0u;
    const uvec4 ia = flat_a && flat_b ? uvec4(0u) : unravel(i, pc.ne_a);
    const uint oa = flat_a ? i * type_bytes(TYPE0) : offset4(ia, pc.nb_a);
    const uint ob = flat_b ? i * type_bytes(TYPE1) : offset4(ia % pc.ne_b, pc.nb_b);
    const uint od = flat_a ? i * type_bytes(TYPE3) : offset4(ia, pc.nb_d);
    const float x = load0(pc.offs.x + oa);
    const float y = load1(pc.offs.y + ob);
    float r;
    if (OP == OP_ADD) r = x + y;
    else if (OP == OP_SUB) r = x - y;
    else if (OP == OP_MUL) r = x * y;
    else if (OP == OP_DIV) r = x / y;
    else r = x / (1.0 + exp(-x)) * y;
    store3(pc.offs.w + od, r);
}
