// SPDX-License-Identifier: MIT
// unary.comp: one output element per invocation from the element of the
// same logical index in the source: CONT and CPY between float types (the
// shapes may differ, the counts match), SCALE, GELU, SILU, DIAG_MASK_INF
// and TANH. Source and destination may be the same bytes.
// EXTRA = 1 when both are contiguous: element i is then at i * its size,
// and the index arithmetic (divisions, slow on software devices) is skipped.
#version 450
#include "common.glsl"

#define OP_COPY 0u
#define OP_SCALE 1u
#define OP_GELU 2u
#define OP_SILU 3u
#define OP_DIAG_MASK_INF 4u
#define OP_TANH 5u

layout(push_constant) uniform Push {
    uvec4 offs;             // byte offset of each binding's tensor
    uvec4 ne_a, nb_a;       // source: elements, byte strides
    uvec4 ne_d, nb_d;       // destination
    uint n;                 // elements
    float f;                // SCALE: the factor
    int i;                  // DIAG_MASK_INF: n_past
} pc;

float gelu(float x) {
    const float c = 0.7978845608028654; // sqrt(2/pi)
    const float u = clamp(c * (x + 0.044715 * x * x * x), -15.0, 15.0);
    return 0.5 * x * (1.0 + tanh(u));
}

void main() {
    const uint i = thread_flat();
    if (i >= pc.n) return;
    const bool direct = EXTRA == 1u && OP != OP_DIAG_MASK_INF;
    const uvec4 id = direct ? uvec4(0u) : unravel(i, pc.ne_d);
    const uint oa = direct ? i * type_bytes(TYPE0) : offset4(unravel(i, pc.ne_a), pc.nb_a);
    const uint od = direct ? i * type_bytes(TYPE3) : offset4(id, pc.nb_d);
    const float x = load0(pc.offs.x + oa);
    float y = x;
    if (OP == OP_SCALE) y = x * pc.f;
    else if (OP == OP_GELU) y = gelu(x);
    else if (OP == OP_SILU) y = x / (1.0 + exp(-x));
    else if (OP == OP_DIAG_MASK_INF && int(id.x) > pc.i + int(id.y)) y = NEG_INF;
    // clamped as in gelu: tanh(15) is 1 in F32, and e^x/e^x past ~88 is inf/inf
    else if (OP == OP_TANH) y = tanh(clamp(x, -15.0, 15.0));
    store3(pc.offs.w + od, y);
}
