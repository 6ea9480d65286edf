// SPDX-License-Identifier: MIT
// quantize.comp: CPY from F32 (any strides) into a contiguous Q8_0 or Q4_0
// tensor, one block of 32 elements per invocation, with the reference
// quantisers of abi/rt_quant.h.
#version 450
#include "common.glsl"

layout(push_constant) uniform Push {
    uvec4 offs;
    uvec4 ne_a, nb_a;
    uint n_blocks;
} pc;

float x[32];

// Round half away from zero, as the reference does.
int round_away(float v) { return v < 0.0 ? -int(-v + 0.5) : int(v + 0.5); }

void write_q8_0(uint off) {
    float amax = 0.0;
    for (uint j = 0u; j < 32u; j++) amax = max(amax, abs(x[j]));
    const float d = amax / 127.0, id = d != 0.0 ? 1.0 / d : 0.0;
    store16_3(off, f32_to_f16(d));
    for (uint j = 0u; j < 32u; j += 2u) {
        const uint q0 = uint(round_away(x[j] * id)) & 0xffu, q1 = uint(round_away(x[j + 1u] * id)) & 0xffu;
        store16_3(off + 2u + j, q0 | (q1 << 8));
    }
}

void write_q4_0(uint off) {
    float amax = 0.0, m = 0.0;
    for (uint j = 0u; j < 32u; j++)
        if (abs(x[j]) > amax) { amax = abs(x[j]); m = x[j]; }
    const float d = m / -8.0, id = d != 0.0 ? 1.0 / d : 0.0;
    store16_3(off, f32_to_f16(d));
    uint q[16];
    for (uint j = 0u; j < 16u; j++) {
        const uint q0 = uint(min(15, int(x[j] * id + 8.5))), q1 = uint(min(15, int(x[j + 16u] * id + 8.5)));
        q[j] = q0 | (q1 << 4);
    }
    for (uint j = 0u; j < 16u; j += 2u) store16_3(off + 2u + j, q[j] | (q[j + 1u] << 8));
}

void main() {
    const uint b = thread_flat();
    if (b >= pc.n_blocks) return;
    for (uint j = 0u; j < 32u; j++) x[j] = load0(pc.offs.x + offset4(unravel(b * 32u + j, pc.ne_a), pc.nb_a));
    if (TYPE3 == T_Q8_0) write_q8_0(pc.offs.w + b * 34u);
    else write_q4_0(pc.offs.w + b * 18u);
}
