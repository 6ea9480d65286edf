// SPDX-License-Identifier: MIT
// binary.comp: ADD, SUB, MUL, DIV with b repeating into a (each index of b
// taken modulo its ne), and SWIGLU (silu(a) * b, same shapes). One element
// per invocation; the destination may be a's bytes.
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
    const uvec4 ia = unravel(i, pc.ne_a);
    const uvec4 ib = ia % pc.ne_b;
    const float x = load0(pc.offs.x + offset4(ia, pc.nb_a));
    const float y = load1(pc.offs.y + offset4(ib, pc.nb_b));
    float r;
    if (OP == OP_ADD) r = x + y;
    else if (OP == OP_SUB) r = x - y;
    else if (OP == OP_MUL) r = x * y;
    else if (OP == OP_DIV) r = x / y;
    else r = x / (1.0 + exp(-x)) * y;
    store3(pc.offs.w + offset4(ia, pc.nb_d), r);
}
