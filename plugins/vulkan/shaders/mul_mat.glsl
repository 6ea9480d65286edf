// SPDX-License-Identifier: MIT
// mul_mat.glsl: MUL_MAT for a few columns (n <= 8, decode), the body of
// mul_mat.comp and mul_mat_sg.comp. c[m, n] = dot(row m of a, row n of b)
// for every matrix (i2, i3) of b, a broadcast over b's dims 2 and 3. a is
// F32, F16, BF16 or any quantised type (dequant.glsl; rows contiguous), b
// is F32 with nb[0] = 4, and dims 1-3 of a, b and c take any strides.
//
// A workgroup computes ROWS rows of c against EXTRA (<= 8) rows of b. The
// rows are shared among "teams": with RT_MV_SUBGROUP a team is a subgroup
// (several rows in flight per workgroup, each reduced with subgroupAdd and
// no barrier at all), else the whole workgroup (reduced through shared
// memory: devices without subgroup arithmetic). A team takes TEAM_ROWS
// rows at once (a specialisation constant): its lanes read each piece of b
// (or of b's levels) once for all of them, so that b's loads, EXTRA per
// piece of a, are shared among TEAM_ROWS rows (the super-block types take
// their rows in turn). A team's lanes split K so that neighbouring lanes read
// neighbouring memory: 16 bytes of a float row per lane and load (vec4 /
// uvec4 views, when the offsets allow), or one unit of blocks of a
// quantised row, decoded once and used for every b row (rounded as
// dequant.glsl's DQ_RB says).
//
// OP: 0 (MV_ROUND) a team rounds b's blocks to levels itself, for each
// row of a; for the blocks of 32 the plugin (ops_build.c, rt_vk_mv_levels)
// instead dispatches the shader twice: 1 (MV_LEVELS) writes every block of
// b's levels to binding 3 (the queue's scratch; one invocation a block,
// LEVEL_WORDS uvec4 each: the 32 int8 levels, then d and s), and 2
// (MV_FROM_LEVELS) is the product reading them at binding 1.
#include "common.glsl"
#include "dequant.glsl"

#define NT_MAX 8u
#define TR_MAX 4u
#define WG_MAX 256u

// Rows of a team at once, 1..TR_MAX (0, a zeroed tuning's: 1).
layout(constant_id = 8) const uint TEAM_ROWS_SPEC = 1;
const uint TEAM_ROWS = TEAM_ROWS_SPEC > TR_MAX ? TR_MAX : TEAM_ROWS_SPEC < 1u ? 1u : TEAM_ROWS_SPEC;

layout(push_constant) uniform Push {
    uvec4 offs;
    uvec4 nb_a, nb_b, nb_d; // byte strides (nb_a.x and nb_b.x: element or block)
    uvec4 ne_d;             // {M, N, b2, b3}
    uint k;                 // K, elements per row
    uint r2, r3;            // b2 / a2, b3 / a3
    uint n_tiles;           // ceil(N / EXTRA)
} pc;

const bool QUANT = TYPE_IS_QUANT(TYPE0);
#define MV_LEVELS 1u
#define MV_FROM_LEVELS 2u
#define LEVEL_WORDS 3u
// b's d kept as binary16 and its levels rounded half away (b_levels).
const bool B_D16 = TYPE0 == T_Q4_0 || TYPE0 == T_Q8_0;
uint lv_row0; // MV_FROM_LEVELS: the levels' row of b row n0 (dims 1-3 flattened)

float acc[TR_MAX][NT_MAX]; // [row of the team][row of b]
float dsc[NT_MAX]; // b's rounding scales (dequant.glsl's DQ_RB) for the unit at hand
bool b_vec;        // b's rows start 16-byte aligned: read through the vec4 view

//===--- teams ---===//

#ifdef RT_MV_SUBGROUP
uint team_lane() { return gl_SubgroupInvocationID; }
uint team_size() { return gl_SubgroupSize; }
uint team_id() { return gl_SubgroupID; }
uint team_count() { return gl_NumSubgroups; }
void team_sum() {
    for (uint r = 0u; r < TEAM_ROWS; r++)
        for (uint j = 0u; j < EXTRA; j++) acc[r][j] = subgroupAdd(acc[r][j]);
}
#else
shared float red[NT_MAX * WG_MAX];
uint team_lane() { return gl_LocalInvocationID.x; }
uint team_size() { return gl_WorkGroupSize.x; }
uint team_id() { return 0u; }
uint team_count() { return 1u; }
// A tree over shared memory (the workgroup size is a power of two <= WG_MAX),
// one team row after the other; lane 0 ends with the sums.
void team_sum() {
    const uint t = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x;
    for (uint r = 0u; r < TEAM_ROWS; r++) {
        for (uint j = 0u; j < EXTRA; j++) red[j * wg + t] = acc[r][j];
        barrier();
        for (uint s = wg / 2u; s > 0u; s >>= 1) {
            if (t < s)
                for (uint j = 0u; j < EXTRA; j++) red[j * wg + t] += red[j * wg + t + s];
            barrier();
        }
        for (uint j = 0u; j < EXTRA; j++) acc[r][j] = red[j * wg];
        barrier();
    }
}
#endif

//===--- b ---===//

// Four elements of b from word index i (a multiple of 4).
vec4 load_b4(uint i) {
    if (b_vec) return b1_v4.v[i >> 2];
    return vec4(b1_f32.v[i], b1_f32.v[i + 1u], b1_f32.v[i + 2u], b1_f32.v[i + 3u]);
}

// Word index of element k0 of b row n0 + j.
uint b_word(uint b0, uint j, uint k0) { return (b0 + j * pc.nb_b.y) / 4u + k0; }

//===--- float a ---===//

// nr (<= TEAM_ROWS) float rows from a0, nb_a.y apart, each starting
// 16-byte aligned, K a multiple of 16 bytes' worth of elements: one
// 16-byte load per lane and row per step, lanes adjacent, and each vec4 of
// b loaded once for the nr rows.
void add_float_rows_wide(uint a0, uint nr, uint b0, uint n0) {
    const uint lane = team_lane(), lanes = team_size();
    const uint W = TYPE0 == T_F32 ? 4u : 8u;
    for (uint i = lane; i < pc.k / W; i += lanes) {
        vec4 x[TR_MAX][2];
        for (uint r = 0u; r < TEAM_ROWS; r++) {
            if (r >= nr) break;
            const uint w = (a0 + r * pc.nb_a.y) / 16u + i;
            if (TYPE0 == T_F32) x[r][0] = b0_v4.v[w];
            else dq_unpack8(b0_u4.v[w], x[r][0], x[r][1]);
        }
        for (uint j = 0u; j < EXTRA; j++) {
            if (n0 + j >= pc.ne_d.y) break;
            for (uint h = 0u; h < W / 4u; h++) {
                const vec4 y = load_b4(b_word(b0, j, W * i + 4u * h));
                for (uint r = 0u; r < TEAM_ROWS; r++)
                    if (r < nr) acc[r][j] += dot(x[r][h], y);
            }
        }
    }
}

// Row r of the team, element by element (any offsets).
void add_float_row(uint a0, uint r, uint b0, uint n0) {
    for (uint e = team_lane(); e < pc.k; e += team_size()) {
        const float av = load0(a0 + e * type_bytes(TYPE0));
        for (uint j = 0u; j < EXTRA; j++)
            if (n0 + j < pc.ne_d.y) acc[r][j] += av * b1_f32.v[b_word(b0, j, e)];
    }
}

void add_float_rows(uint a0, uint nr, uint b0, uint n0) {
    const uint W = TYPE0 == T_F32 ? 4u : 8u;
    if (b_vec && a0 % 16u == 0u && (nr == 1u || pc.nb_a.y % 16u == 0u) && pc.k % W == 0u) {
        add_float_rows_wide(a0, nr, b0, n0);
        return;
    }
    for (uint r = 0u; r < TEAM_ROWS; r++)
        if (r < nr) add_float_row(a0 + r * pc.nb_a.y, r, b0, n0);
}

//===--- quantised a ---===//

// acc[r][j] += the 16 elements of a at k0.. times those of b row n0 + j.
void add_group(float y[16], uint r, uint b0, uint k0, uint n0) {
    for (uint j = 0u; j < EXTRA; j++) {
        if (n0 + j >= pc.ne_d.y) break;
        const uint bi = b_word(b0, j, k0);
        float s = 0.0;
        for (uint q = 0u; q < 4u; q++) {
            vec4 x = load_b4(bi + 4u * q);
            if (DQ_RB != 0u)
                x = vec4(dq_round_b(x.x, dsc[j]), dq_round_b(x.y, dsc[j]), dq_round_b(x.z, dsc[j]),
                         dq_round_b(x.w, dsc[j]));
            s += dot(vec4(y[4u * q], y[4u * q + 1u], y[4u * q + 2u], y[4u * q + 3u]), x);
        }
        acc[r][j] += s;
    }
}

// b's scale for the DQ_RB elements from word index i (a multiple of 16).
float b_scale(uint i) {
    vec4 m = vec4(0.0);
    for (uint e = 0u; e < DQ_RB; e += 4u) m = max(m, abs(load_b4(i + e)));
    const float amax = max(max(m.x, m.y), max(m.z, m.w));
    return DQ_RB == 32u ? amax : amax / 127.0; // as dq_b_scale
}

// b's 32 elements from word index bi as int8 levels, as the CPU quantises
// activations: for Q4_0 and Q8_0 weights x / d rounded half away from zero
// with d = max|x| / 127, d kept as binary16 (d16); for the other blocks of
// 32 (kern_blocks.c) x * (127 / max|x|) to the nearest even, d binary16,
// and the offset's term s = d * sum(q) binary16 from the F32 d where the
// CPU's Q8_1 keeps it so (Q4_1, Q5_1), else the binary16 d's (exact).
// Returns d, 0 for a block of zeros.
float b_levels(uint bi, bool d16, out ivec4 qb[8], out float s) {
    vec4 x[8];
    vec4 mx = vec4(0.0);
    for (uint q = 0u; q < 8u; q++) {
        x[q] = load_b4(bi + 4u * q);
        mx = max(mx, abs(x[q]));
    }
    const float amax = max(max(mx.x, mx.y), max(mx.z, mx.w)), d = amax / 127.0;
    int qsum = 0;
    if (d16) {
        const float id = d != 0.0 ? 1.0 / d : 0.0;
        for (uint q = 0u; q < 8u; q++)
            qb[q] = clamp(ivec4(dq_round_away(x[q].x * id), dq_round_away(x[q].y * id),
                                dq_round_away(x[q].z * id), dq_round_away(x[q].w * id)), -127, 127);
    } else {
        const float id = amax != 0.0 ? 127.0 / amax : 0.0;
        for (uint q = 0u; q < 8u; q++) {
            qb[q] = clamp(ivec4(roundEven(x[q] * id)), -127, 127);
            qsum += qb[q].x + qb[q].y + qb[q].z + qb[q].w;
        }
    }
    const float dh = dq_through_f16(d);
    const bool q8_1 = TYPE0 == T_Q4_1 || TYPE0 == T_Q5_1;
    s = q8_1 ? dq_through_f16(d * float(qsum)) : dh * float(qsum);
    return dh;
}

int idot4(ivec4 a, ivec4 b) { return a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w; }

uint pack_i8x4(ivec4 v) {
    return uint(v.x & 255) | (uint(v.y & 255) << 8) | (uint(v.z & 255) << 16) | (uint(v.w & 255) << 24);
}
ivec4 unpack_i8x4(uint w) {
    const int i = int(w);
    return ivec4(bitfieldExtract(i, 0, 8), bitfieldExtract(i, 8, 8), bitfieldExtract(i, 16, 8),
                 bitfieldExtract(i, 24, 8));
}

// MV_LEVELS: invocation t rounds block t % (k/32) of b's row t / (k/32).
void write_levels() {
    const uint nb = pc.k / 32u, t = thread_flat();
    if (t >= nb * pc.ne_d.y * pc.ne_d.z * pc.ne_d.w) return;
    const uint u = t % nb, row = t / nb, j = row % pc.ne_d.y, i23 = row / pc.ne_d.y;
    const uint b0 = pc.offs.y + (i23 % pc.ne_d.z) * pc.nb_b.z + (i23 / pc.ne_d.z) * pc.nb_b.w + j * pc.nb_b.y;
    b_vec = b0 % 16u == 0u;
    ivec4 q[8];
    float s;
    const float d = b_levels(b0 / 4u + 32u * u, B_D16, q, s);
    const uint o = pc.offs.w / 16u + LEVEL_WORDS * t;
    b3_u4.v[o] = uvec4(pack_i8x4(q[0]), pack_i8x4(q[1]), pack_i8x4(q[2]), pack_i8x4(q[3]));
    b3_u4.v[o + 1u] = uvec4(pack_i8x4(q[4]), pack_i8x4(q[5]), pack_i8x4(q[6]), pack_i8x4(q[7]));
    b3_u4.v[o + 2u] = uvec4(floatBitsToUint(d), floatBitsToUint(s), 0u, 0u);
}

// MV_FROM_LEVELS: block u of b row n0 + j as write_levels left it.
float read_levels(uint j, uint u, out ivec4 q[8], out float s) {
    const uint o = pc.offs.y / 16u + LEVEL_WORDS * ((lv_row0 + j) * (pc.k / 32u) + u);
    const uvec4 lo = b1_u4.v[o], hi = b1_u4.v[o + 1u], ds = b1_u4.v[o + 2u];
    for (uint c = 0u; c < 4u; c++) {
        q[c] = unpack_i8x4(lo[c]);
        q[c + 4u] = unpack_i8x4(hi[c]);
    }
    s = uintBitsToFloat(ds.y);
    return uintBitsToFloat(ds.x);
}

// A block of 32 of each of nr rows of a as integer levels u (element j is
// d * u[j] + m), by b rounded per block as the CPU rounds it for a's type
// (read or rounded once for the nr rows): the integer dot product, scaled
// once (d * d_b * sum(u * q_b) + m * d_b * sum(q_b)), so that the device
// agrees with the CPU up to the order of the block sums.
void add_block_levels(ivec4 u[TR_MAX][8], vec2 dm[TR_MAX], uint nr, uint b0, uint k0, uint n0) {
    for (uint j = 0u; j < EXTRA; j++) {
        if (n0 + j >= pc.ne_d.y) break;
        ivec4 qb[8];
        float sb;
        const float db = OP == MV_FROM_LEVELS ? read_levels(j, k0 / 32u, qb, sb)
                                              : b_levels(b_word(b0, j, k0), B_D16, qb, sb);
        for (uint r = 0u; r < TEAM_ROWS; r++) {
            if (r >= nr) break;
            int isum = 0;
            for (uint q = 0u; q < 8u; q++) isum += idot4(u[r][q], qb[q]);
            acc[r][j] += dm[r].x * db * float(isum) + (dm[r].y != 0.0 ? dm[r].y * sb : 0.0);
        }
    }
}

// The levels of a block of 32: Q4_0 (nibble - 8) and Q8_0 (int8) read
// whole (9 or 17 16-bit loads), the others through dequant.glsl.
vec2 block_levels(uint off, out ivec4 u[8]) {
    uint w[4], v[4];
    if (TYPE0 == T_Q4_0) {
        dq_load16(off + 2u, w);
        for (uint q = 0u; q < 4u; q++) {
            const ivec4 by = ivec4(uvec4(w[q], w[q] >> 8, w[q] >> 16, w[q] >> 24) & 0xffu);
            u[q] = (by & 15) - 8;
            u[q + 4u] = (by >> 4) - 8;
        }
        return vec2(dq_half(off), 0.0);
    }
    if (TYPE0 == T_Q8_0) {
        dq_load16(off + 2u, w);
        dq_load16(off + 18u, v);
        for (uint q = 0u; q < 4u; q++) {
            u[q] = ivec4(bitfieldExtract(int(w[q]), 0, 8), bitfieldExtract(int(w[q]), 8, 8),
                         bitfieldExtract(int(w[q]), 16, 8), bitfieldExtract(int(w[q]), 24, 8));
            u[q + 4u] = ivec4(bitfieldExtract(int(v[q]), 0, 8), bitfieldExtract(int(v[q]), 8, 8),
                              bitfieldExtract(int(v[q]), 16, 8), bitfieldExtract(int(v[q]), 24, 8));
        }
        return vec2(dq_half(off), 0.0);
    }
    int l[32];
    const vec2 dm = dq_levels_32(off, l);
    for (uint q = 0u; q < 8u; q++) u[q] = ivec4(l[4u * q], l[4u * q + 1u], l[4u * q + 2u], l[4u * q + 3u]);
    return dm;
}

// The blocks of 32 of nr rows of the team from a0 (nb_a.y apart) a lane
// takes in turn, each block of b used for all of them.
void add_quant_rows_32(uint a0, uint nr, uint b0, uint n0) {
    for (uint u = team_lane(); u < pc.k / 32u; u += team_size()) {
        ivec4 lv[TR_MAX][8];
        vec2 dm[TR_MAX];
        for (uint r = 0u; r < TEAM_ROWS; r++) {
            if (r >= nr) break;
            dm[r] = block_levels(a0 + r * pc.nb_a.y + u * type_bytes(TYPE0), lv[r]);
        }
        add_block_levels(lv, dm, nr, b0, 32u * u, n0);
    }
}

// The units of row r of the team a lane takes in turn: a super-block of
// 256 (b rounded per 256: its scale is then one per unit and b row).
void add_quant_row(uint a0, uint r, uint b0, uint n0) {
    const uint lane = team_lane(), lanes = team_size();
    const uint U = DQ_RB == 256u ? 256u : 32u;
    float y[16];
    for (uint u = lane; u < pc.k / U; u += lanes) {
        for (uint j = 0u; j < EXTRA; j++)
            dsc[j] = DQ_RB != 0u && n0 + j < pc.ne_d.y ? b_scale(b_word(b0, j, u * U)) : 0.0;
        for (uint G = u * (U / 16u); G < (u + 1u) * (U / 16u); G++) {
            dq_row_group(a0, G, y);
            add_group(y, r, b0, 16u * G, n0);
        }
    }
}

//===--- main ---===//

void main() {
    if (OP == MV_LEVELS) {
        write_levels();
        return;
    }
    uint g = group_flat();
    const uint m_groups = (pc.ne_d.x + ROWS - 1u) / ROWS;
    const uint mg = g % m_groups; g /= m_groups;
    const uint tile = g % pc.n_tiles; g /= pc.n_tiles;
    const uint i2 = g % pc.ne_d.z, i3 = g / pc.ne_d.z;
    if (i3 >= pc.ne_d.w) return;
    const uint n0 = tile * EXTRA;
    const uint a00 = pc.offs.x + (i2 / pc.r2) * pc.nb_a.z + (i3 / pc.r3) * pc.nb_a.w;
    const uint b0 = pc.offs.y + i2 * pc.nb_b.z + i3 * pc.nb_b.w + n0 * pc.nb_b.y;
    b_vec = b0 % 16u == 0u && (EXTRA == 1u || pc.nb_b.y % 16u == 0u);
    lv_row0 = (i3 * pc.ne_d.z + i2) * pc.ne_d.y + n0;
    // Every lane of a team takes the same rows, so the reductions see
    // uniform control flow.
    for (uint r0 = team_id() * TEAM_ROWS; r0 < ROWS; r0 += team_count() * TEAM_ROWS) {
        const uint m0 = mg * ROWS + r0;
        if (m0 >= pc.ne_d.x) break;
        const uint nr = min(TEAM_ROWS, min(ROWS - r0, pc.ne_d.x - m0));
        for (uint r = 0u; r < TR_MAX; r++)
            for (uint j = 0u; j < NT_MAX; j++) acc[r][j] = 0.0;
        const uint a0 = a00 + m0 * pc.nb_a.y;
        if (QUANT && DQ_QK == 32u) {
            add_quant_rows_32(a0, nr, b0, n0);
        } else if (QUANT) {
            for (uint r = 0u; r < TEAM_ROWS; r++)
                if (r < nr) add_quant_row(a0 + r * pc.nb_a.y, r, b0, n0);
        } else {
            add_float_rows(a0, nr, b0, n0);
        }
        team_sum();
        if (team_lane() == 0u)
            for (uint r = 0u; r < TEAM_ROWS; r++)
                for (uint j = 0u; j < EXTRA; j++)
                    if (r < nr && n0 + j < pc.ne_d.y)
                        store3(pc.offs.w + (m0 + r) * pc.nb_d.x + (n0 + j) * pc.nb_d.y +
                               i2 * pc.nb_d.z + i3 * pc.nb_d.w, acc[r][j]);
    }
}
