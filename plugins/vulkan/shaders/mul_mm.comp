// SPDX-License-Identifier: MIT
// mul_mm.comp: MUL_MAT for many columns (n > 8, prompts), with the same
// operands and push constants as mul_mat.comp plus the number of row
// tiles. A workgroup computes a 64 x 64 tile of c (64 rows of a against 64
// rows of b) in steps of 32 along K: each step decodes the 64 x 32 piece
// of a once into shared memory (two groups of 16 per row, through
// dequant.glsl, for quantised a) and loads the 32 x 64 piece of b, then
// every invocation accumulates a ROWS x EXTRA block of outputs from them
// (b rounded as dequant.glsl's DQ_RB says, as in mul_mat.comp). The
// register block is a specialisation constant (4 or 8 each way; the
// workgroup is then (64 / ROWS) x (64 / EXTRA) invocations) that
// pipeline.c chooses per device: larger blocks read shared memory less
// per multiply-add, smaller ones keep more invocations busy. Each element
// of a is decoded once per 64 columns instead of once per 8. Float a and
// unrounded b are read 16 bytes a load where the offsets allow, the
// neighbouring invocations along K (a GPU's loads coalesce; lavapipe pays
// per load).
#version 450
#include "common.glsl"
#include "dequant.glsl"

#define BM 64u
#define BN 64u
#define BK 32u
#define TM ROWS          // rows of c per invocation
#define TN EXTRA         // columns of c per invocation
#define T_MAX 8u
#define SM (BM / TM)     // invocations along a tile's rows

layout(push_constant) uniform Push {
    uvec4 offs;
    uvec4 nb_a, nb_b, nb_d; // byte strides
    uvec4 ne_d;             // {M, N, b2, b3}
    uint k;                 // K, elements per row
    uint r2, r3;            // b2 / a2, b3 / a3
    uint n_tiles;           // ceil(N / BN)
    uint m_tiles;           // ceil(M / BM)
} pc;

const bool QUANT = TYPE_IS_QUANT(TYPE0);

shared float as[BK][BM + 1u];
shared float bs[BK][BN + 1u];

// a's rows m0.., elements k0.. into as (zeros past M and K).
void load_a(uint a0, uint m0, uint k0) {
    const uint t = gl_LocalInvocationID.x;
    if (QUANT) {
        for (uint i = t; i < 2u * BM; i += gl_WorkGroupSize.x) {
            const uint r = i >> 1, h = i & 1u;
            float y[16];
            if (m0 + r < pc.ne_d.x) dq_row_group(a0 + (m0 + r) * pc.nb_a.y, k0 / 16u + h, y);
            else for (uint e = 0u; e < 16u; e++) y[e] = 0.0;
            for (uint e = 0u; e < 16u; e++) as[16u * h + e][r] = y[e];
        }
        return;
    }
    const uint W = TYPE0 == T_F32 ? 4u : 8u; // elements in 16 bytes
    if ((TYPE0 == T_F32 || TYPE0 == T_F16 || TYPE0 == T_BF16) && a0 % 16u == 0u &&
        pc.nb_a.y % 16u == 0u && k0 + BK <= pc.k) {
        // 16 bytes a load, neighbouring invocations along a row's BK
        for (uint i = t; i < BM * BK / W; i += gl_WorkGroupSize.x) {
            const uint kw = W * (i % (BK / W)), r = i / (BK / W);
            vec4 x[2] = vec4[2](vec4(0.0), vec4(0.0));
            const uint w = (a0 + (m0 + r) * pc.nb_a.y + k0 * type_bytes(TYPE0)) / 16u + kw / W;
            if (m0 + r < pc.ne_d.x) {
                if (TYPE0 == T_F32) x[0] = b0_v4.v[w];
                else dq_unpack8(b0_u4.v[w], x[0], x[1]);
            }
            for (uint e = 0u; e < W; e++) as[kw + e][r] = x[e / 4u][e % 4u];
        }
        return;
    }
    for (uint i = t; i < BM * BK; i += gl_WorkGroupSize.x) {
        const uint kk = i % BK, r = i / BK;
        const bool ok = m0 + r < pc.ne_d.x && k0 + kk < pc.k;
        as[kk][r] = ok ? load0(a0 + (m0 + r) * pc.nb_a.y + (k0 + kk) * type_bytes(TYPE0)) : 0.0;
    }
}

shared float bscale[BN]; // b's rounding scale per column, for the DQ_RB elements from k0

// b's rows n0.., elements k0.. into bs (zeros past N and K), rounded as
// dequant.glsl's DQ_RB says: a new scale per column at each DQ_RB boundary
// (BK divides 32 and 256), from b itself.
void load_b(uint b0, uint n0, uint k0) {
    const uint t = gl_LocalInvocationID.x;
    if (DQ_RB != 0u && k0 % DQ_RB == 0u)
        for (uint c = t; c < BN; c += gl_WorkGroupSize.x)
            bscale[c] = n0 + c < pc.ne_d.y ? dq_b_scale((b0 + (n0 + c) * pc.nb_b.y) / 4u + k0) : 0.0;
    if (DQ_RB != 0u) barrier();
    const uint brow = pc.nb_b.y / 4u;
    if (DQ_RB == 0u && b0 % 16u == 0u && brow % 4u == 0u && k0 + BK <= pc.k) {
        // 16 bytes a load, 8 neighbouring invocations over a column's BK
        for (uint i = t; i < BN * BK / 4u; i += gl_WorkGroupSize.x) {
            const uint kq = 4u * (i % (BK / 4u)), c = i / (BK / 4u);
            const uint w = (b0 / 4u + (n0 + c) * brow + k0 + kq) / 4u;
            const vec4 x = n0 + c < pc.ne_d.y ? b1_v4.v[w] : vec4(0.0);
            bs[kq][c] = x.x;
            bs[kq + 1u][c] = x.y;
            bs[kq + 2u][c] = x.z;
            bs[kq + 3u][c] = x.w;
        }
        return;
    }
    for (uint i = t; i < BN * BK; i += gl_WorkGroupSize.x) {
        const uint kk = i % BK, c = i / BK;
        const bool ok = n0 + c < pc.ne_d.y && k0 + kk < pc.k;
        const float x = ok ? b1_f32.v[(b0 + (n0 + c) * pc.nb_b.y) / 4u + k0 + kk] : 0.0;
        bs[kk][c] = DQ_RB != 0u ? dq_round_b(x, bscale[c]) : x;
    }
}

void main() {
    uint g = group_flat();
    const uint mt = g % pc.m_tiles; g /= pc.m_tiles;
    const uint nt = g % pc.n_tiles; g /= pc.n_tiles;
    const uint i2 = g % pc.ne_d.z, i3 = g / pc.ne_d.z;
    if (i3 >= pc.ne_d.w) return;
    const uint m0 = mt * BM, n0 = nt * BN;
    const uint a0 = pc.offs.x + (i2 / pc.r2) * pc.nb_a.z + (i3 / pc.r3) * pc.nb_a.w;
    const uint b0 = pc.offs.y + i2 * pc.nb_b.z + i3 * pc.nb_b.w;
    // Invocation (tx, ty) owns rows tx + SM * i and columns ty + SN * j of
    // the tile: neighbours read neighbouring shared words.
    const uint SN = BN / TN;
    const uint tx = gl_LocalInvocationID.x % SM, ty = gl_LocalInvocationID.x / SM;
    float acc[T_MAX][T_MAX];
    for (uint i = 0u; i < TM; i++)
        for (uint j = 0u; j < TN; j++) acc[i][j] = 0.0;
    for (uint k0 = 0u; k0 < pc.k; k0 += BK) {
        load_a(a0, m0, k0);
        load_b(b0, n0, k0);
        barrier();
        for (uint kk = 0u; kk < BK; kk++) {
            float av[T_MAX], bv[T_MAX];
            for (uint i = 0u; i < TM; i++) av[i] = as[kk][tx + SM * i];
            for (uint j = 0u; j < TN; j++) bv[j] = bs[kk][ty + SN * j];
            for (uint i = 0u; i < TM; i++)
                for (uint j = 0u; j < TN; j++) acc[i][j] += av[i] * bv[j];
        }
        barrier();
    }
    const uint d0 = pc.offs.w + i2 * pc.nb_d.z + i3 * pc.nb_d.w;
    for (uint i = 0u; i < TM; i++)
        for (uint j = 0u; j < TN; j++) {
            const uint m = m0 + tx + SM * i, n = n0 + ty + SN * j;
            if (m < pc.ne_d.x && n < pc.ne_d.y) store3(d0 + m * pc.nb_d.x + n * pc.nb_d.y, acc[i][j]);
        }
}
