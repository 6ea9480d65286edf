// SPDX-License-Identifier: MIT
// mul_mat.comp: MUL_MAT for a few columns (n <= 8, decode), c[m, n] =
// dot(row m of a, row n of b) for every matrix (i2, i3) of b, a broadcast
// over b's dims 2 and 3. a is F32, F16, BF16 or any quantised type
// (dequant.glsl; rows contiguous), b is F32 with nb[0] = 4, and dims 1-3
// of a, b and c take any strides. One workgroup computes one row m of a
// against EXTRA (<= 8) rows of b: its invocations split K, each decoding
// its share of the a row once (16 elements at a time for quantised rows)
// and using it for every b row (rounded as dequant.glsl's DQ_RB says), then
// the partial sums are added across the workgroup. Larger n goes to mul_mm.comp, which reuses a across columns.
#version 450
#include "common.glsl"
#include "dequant.glsl"

#define NT_MAX 8u
#define WG_MAX 128u

layout(push_constant) uniform Push {
    uvec4 offs;
    uvec4 nb_a, nb_b, nb_d; // byte strides (nb_a.x and nb_b.x: element or block)
    uvec4 ne_d;             // {M, N, b2, b3}
    uint k;                 // K, elements per row
    uint r2, r3;            // b2 / a2, b3 / a3
    uint n_tiles;           // ceil(N / EXTRA)
} pc;

shared float red[NT_MAX * WG_MAX];

const bool QUANT = TYPE_IS_QUANT(TYPE0);

float acc[NT_MAX];

float dsc[NT_MAX]; // b's rounding scales (dequant.glsl's DQ_RB) for the unit at hand

// acc[j] += the 16 elements of a at k0.. times those of b row n0 + j.
void add_group(float y[16], uint b_row0, uint k0, uint n0) {
    for (uint j = 0u; j < EXTRA; j++) {
        if (n0 + j >= pc.ne_d.y) break;
        const uint bi = (b_row0 + j * pc.nb_b.y) / 4u + k0;
        float s = 0.0;
        for (uint e = 0u; e < 16u; e++) s += y[e] * dq_round_b(b1_f32.v[bi + e], dsc[j]);
        acc[j] += s;
    }
}

// The units of a row an invocation takes in turn: DQ_RB elements when b is
// rounded (its scale is then one per unit and b row), else one group of 16.
void add_quant_row(uint a0, uint b0, uint n0) {
    const uint t = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x;
    const uint U = DQ_RB == 0u ? 16u : DQ_RB;
    float y[16];
    for (uint u = t; u < pc.k / U; u += wg) {
        for (uint j = 0u; j < EXTRA; j++)
            dsc[j] = DQ_RB != 0u && n0 + j < pc.ne_d.y ? dq_b_scale((b0 + j * pc.nb_b.y) / 4u + u * U) : 0.0;
        for (uint G = u * (U / 16u); G < (u + 1u) * (U / 16u); G++) {
            dq_row_group(a0, G, y);
            add_group(y, b0, 16u * G, n0);
        }
    }
}

void main() {
    uint g = group_flat();
    const uint m = g % pc.ne_d.x; g /= pc.ne_d.x;
    const uint tile = g % pc.n_tiles; g /= pc.n_tiles;
    const uint i2 = g % pc.ne_d.z, i3 = g / pc.ne_d.z;
    if (i3 >= pc.ne_d.w) return;
    const uint t = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x;
    const uint n0 = tile * EXTRA;
    const uint a0 = pc.offs.x + m * pc.nb_a.y + (i2 / pc.r2) * pc.nb_a.z + (i3 / pc.r3) * pc.nb_a.w;
    const uint b0 = pc.offs.y + i2 * pc.nb_b.z + i3 * pc.nb_b.w + n0 * pc.nb_b.y;
    for (uint j = 0u; j < NT_MAX; j++) acc[j] = 0.0;
    if (QUANT) {
        add_quant_row(a0, b0, n0);
    } else {
        for (uint e = t; e < pc.k; e += wg) {
            const float av = load0(a0 + e * type_bytes(TYPE0));
            for (uint j = 0u; j < EXTRA; j++)
                if (n0 + j < pc.ne_d.y) acc[j] += av * b1_f32.v[(b0 + j * pc.nb_b.y) / 4u + e];
        }
    }
    for (uint j = 0u; j < EXTRA; j++) red[j * wg + t] = acc[j];
    barrier();
    for (uint s = wg / 2u; s > 0u; s >>= 1) {
        if (t < s)
            for (uint j = 0u; j < EXTRA; j++) red[j * wg + t] += red[j * wg + t + s];
        barrier();
    }
    if (t < EXTRA && n0 + t < pc.ne_d.y)
        store3(pc.offs.w + m * pc.nb_d.x + (n0 + t) * pc.nb_d.y + i2 * pc.nb_d.z + i3 * pc.nb_d.w, red[t * wg]);
}
