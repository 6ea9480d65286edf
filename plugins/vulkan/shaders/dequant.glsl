// SPDX-License-Identifier: MIT
// dequant.glsl: the one decoder of every quantised weight type, for the
// shaders that read weights from binding 0 (mul_mat, mul_mm, get_rows).
// Included after common.glsl. A block is read as 16 consecutive elements at
// a time, a "group": every type has a scale (and min) per 16 or 32
// elements, so a group needs one scale, and 16 is the largest such unit
// that divides every block (32 or 256 elements). dq_group(off, g, y)
// writes elements 16g .. 16g+15 of the block at byte offset off.
//
// The layouts are GGUF's (ggml's block_* structs), in bytes; d and m are
// binary16, qs are the low bits (nibbles or crumbs), qh the high bits:
//
//   Q4_0   18  d, qs[16]                 elt j: nibble j%16 (low, then high); d*(q-8)
//   Q4_1   20  d, m, qs[16]              d*q + m
//   Q5_0   22  d, qh[4], qs[16]          q |= bit j of qh << 4; d*(q-16)
//   Q5_1   24  d, m, qh[4], qs[16]       d*q + m
//   Q8_0   34  d, qs[32] int8            d*q
//   IQ4_NL 18  d, qs[16]                 d*KV[q] (a fixed non-linear table)
//   Q2_K   84  sc[16], qs[64], d, dmin   16 groups; sc: 4-bit scale | 4-bit min << 4
//   Q3_K  110  hm[32], qs[64], sc[12], d 16 groups, 6-bit signed scales (-32)
//   Q4_K  144  d, dmin, sc[12], qs[128]  8 sub-blocks of 32, 6-bit scale and min
//   Q5_K  176  d, dmin, sc[12], qh[32], qs[128]
//   Q6_K  210  ql[128], qh[64], sc[16] int8, d
//   IQ4_XS 136 d, sh(u16), sl[4], qs[128]  8 sub-blocks, 6-bit scales (-32), KV[q]
//
// Every block size is even, so blocks start 2-byte aligned: everything is
// read through the 16-bit view (a 32-bit view would need 4-byte blocks).

// Elements per block (32 or 256).
const uint DQ_QK = TYPE_IS_K(TYPE0) ? 256u : 32u;
// Groups of 16 per block.
const uint DQ_GPB = DQ_QK / 16u;

uint dq_u16(uint off) { return uint(b0_u16.v[off >> 1]); }
uint dq_u32(uint off) { return dq_u16(off) | (dq_u16(off + 2u) << 16); }
uint dq_byte(uint off) { return byte0(off); }
float dq_half(uint off) { return half0(off); }

// 16 bytes at off (2-byte aligned), as four little-endian words.
void dq_load16(uint off, out uint w[4]) {
    for (uint i = 0u; i < 4u; i++) w[i] = dq_u32(off + 4u * i);
}
uint dq_b(uint w[4], uint l) { return (w[l >> 2] >> (8u * (l & 3u))) & 0xffu; }

// The non-linear 4-bit code book of IQ4_NL and IQ4_XS.
const float DQ_KV[16] = float[16](-127.0, -104.0, -83.0, -65.0, -49.0, -35.0, -22.0, -10.0,
                                  1.0, 13.0, 25.0, 38.0, 53.0, 69.0, 89.0, 113.0);

// 6-bit scale and min of sub-block j (0..7) packed in the 12 bytes at sc
// (Q4_K, Q5_K): j < 4 in the low 6 bits of bytes j and j+4; the others
// take 4 bits from byte j+4 and 2 from the top of bytes j-4 and j.
vec2 dq_scale_min_k4(uint sc, uint j) {
    if (j < 4u) return vec2(float(dq_byte(sc + j) & 63u), float(dq_byte(sc + j + 4u) & 63u));
    const uint b = dq_byte(sc + j + 4u);
    return vec2(float((b & 15u) | ((dq_byte(sc + j - 4u) >> 6) << 4)),
                float((b >> 4) | ((dq_byte(sc + j) >> 6) << 4)));
}

// 6-bit scale of group g (0..15) of Q3_K, stored biased by 32: the low 4
// bits are nibbles of bytes 0-7, the high 2 crumbs of bytes 8-11.
float dq_scale_q3_k(uint sc, uint g) {
    const uint lo = g < 8u ? dq_byte(sc + g) & 15u : dq_byte(sc + g - 8u) >> 4;
    const uint hi = (dq_byte(sc + 8u + (g & 3u)) >> (2u * (g >> 2))) & 3u;
    return float(int(lo | (hi << 4)) - 32);
}

// The 32-element types: scale, min, high bits, and nibble shift per group.
void dq_group_32(uint off, uint g, out float y[16]) {
    uint w[4];
    const float d = dq_half(off);
    if (TYPE0 == T_Q8_0) {
        dq_load16(off + 2u + 16u * g, w);
        for (uint l = 0u; l < 16u; l++) { int q = int(dq_b(w, l)); y[l] = d * float(q - ((q & 0x80) << 1)); }
        return;
    }
    const bool has_m = TYPE0 == T_Q4_1 || TYPE0 == T_Q5_1;
    const bool has_h = TYPE0 == T_Q5_0 || TYPE0 == T_Q5_1;
    const float m = has_m ? dq_half(off + 2u) : 0.0;
    const uint qh_at = off + (has_m ? 4u : 2u);
    const uint qh = has_h ? dq_u32(qh_at) >> (16u * g) : 0u;
    dq_load16(qh_at + (has_h ? 4u : 0u), w);
    const float bias = TYPE0 == T_Q4_0 ? 8.0 : TYPE0 == T_Q5_0 ? 16.0 : 0.0;
    for (uint l = 0u; l < 16u; l++) {
        const uint q = ((dq_b(w, l) >> (4u * g)) & 15u) | (((qh >> l) & 1u) << 4);
        y[l] = TYPE0 == T_IQ4_NL ? d * DQ_KV[q] : d * (float(q) - bias) + m;
    }
}

// The integer levels of a block of 32 of Q4_1, Q5_0, Q5_1 or IQ4_NL, as
// the CPU's integer dot products take them: element j is d * u[j] + m,
// with (d, m) returned.
vec2 dq_levels_32(uint off, out int u[32]) {
    uint w[4];
    const float d = dq_half(off);
    const bool has_m = TYPE0 == T_Q4_1 || TYPE0 == T_Q5_1;
    const bool has_h = TYPE0 == T_Q5_0 || TYPE0 == T_Q5_1;
    const uint qh_at = off + (has_m ? 4u : 2u);
    const uint qh = has_h ? dq_u32(qh_at) : 0u;
    dq_load16(qh_at + (has_h ? 4u : 0u), w);
    for (uint l = 0u; l < 16u; l++) {
        const uint b = dq_b(w, l);
        const uint lo = (b & 15u) | (((qh >> l) & 1u) << 4), hi = (b >> 4) | (((qh >> (l + 16u)) & 1u) << 4);
        u[l] = TYPE0 == T_IQ4_NL ? int(DQ_KV[lo]) : int(lo);
        u[l + 16u] = TYPE0 == T_IQ4_NL ? int(DQ_KV[hi]) : int(hi);
    }
    const float m = has_m ? dq_half(off + 2u) : TYPE0 == T_Q5_0 ? -16.0 * d : 0.0;
    return vec2(d, m);
}

void dq_group_q2_k(uint off, uint g, out float y[16]) {
    uint w[4];
    const uint sc = dq_byte(off + g), shift = 2u * ((g & 7u) >> 1);
    const float dl = dq_half(off + 80u) * float(sc & 15u), ml = dq_half(off + 82u) * float(sc >> 4);
    dq_load16(off + 16u + 32u * (g >> 3) + 16u * (g & 1u), w);
    for (uint l = 0u; l < 16u; l++) y[l] = dl * float((dq_b(w, l) >> shift) & 3u) - ml;
}

void dq_group_q3_k(uint off, uint g, out float y[16]) {
    uint w[4], h[4];
    const uint j = (g & 7u) >> 1, hbit = 4u * (g >> 3) + j;
    const float dl = dq_half(off + 108u) * dq_scale_q3_k(off + 96u, g);
    dq_load16(off + 32u + 32u * (g >> 3) + 16u * (g & 1u), w);
    dq_load16(off + 16u * (g & 1u), h);
    for (uint l = 0u; l < 16u; l++) {
        const int q = int((dq_b(w, l) >> (2u * j)) & 3u) - (((dq_b(h, l) >> hbit) & 1u) != 0u ? 0 : 4);
        y[l] = dl * float(q);
    }
}

// Q4_K and Q5_K: sub-block g/2 of 32; its bytes are qs[32*(g/4) + 16*(g%2) ..],
// low nibbles for even sub-blocks, high for odd; Q5_K's fifth bit is bit
// g/2 of qh[16*(g%2) + l].
void dq_group_q45_k(uint off, uint g, out float y[16]) {
    uint w[4], h[4];
    const uint is = g >> 1;
    const vec2 sm = dq_scale_min_k4(off + 4u, is);
    const float dl = dq_half(off) * sm.x, ml = dq_half(off + 2u) * sm.y;
    const bool q5 = TYPE0 == T_Q5_K;
    dq_load16(off + (q5 ? 48u : 16u) + 32u * (g >> 2) + 16u * (g & 1u), w);
    if (q5) dq_load16(off + 16u + 16u * (g & 1u), h);
    for (uint l = 0u; l < 16u; l++) {
        const uint hb = q5 ? ((dq_b(h, l) >> is) & 1u) << 4 : 0u;
        y[l] = dl * float(((dq_b(w, l) >> (4u * (is & 1u))) & 15u) | hb) - ml;
    }
}

// Q6_K: halves of 128; in a half, quarter k (0..3) of 32 takes nibble k/2
// of ql[64*half + 32*(k%2) + l] and crumb k of qh[32*half + l].
void dq_group_q6_k(uint off, uint g, out float y[16]) {
    uint w[4], h[4];
    const uint half_ = g >> 3, k = (g & 7u) >> 1, l0 = 16u * (g & 1u);
    int sc = int(dq_byte(off + 192u + g));
    const float dl = dq_half(off + 208u) * float(sc - ((sc & 0x80) << 1));
    dq_load16(off + 64u * half_ + 32u * (k & 1u) + l0, w);
    dq_load16(off + 128u + 32u * half_ + l0, h);
    for (uint l = 0u; l < 16u; l++) {
        const uint q = ((dq_b(w, l) >> (4u * (k >> 1))) & 15u) | (((dq_b(h, l) >> (2u * k)) & 3u) << 4);
        y[l] = dl * float(int(q) - 32);
    }
}

// IQ4_XS: sub-block g/2 of 32 elements, bytes qs[16*(g/2) ..], low nibbles
// for even g, high for odd.
void dq_group_iq4_xs(uint off, uint g, out float y[16]) {
    uint w[4];
    const uint ib = g >> 1;
    const uint ls = ((dq_byte(off + 4u + (ib >> 1)) >> (4u * (ib & 1u))) & 15u) |
                    (((dq_u16(off + 2u) >> (2u * ib)) & 3u) << 4);
    const float dl = dq_half(off) * float(int(ls) - 32);
    dq_load16(off + 8u + 16u * ib, w);
    for (uint l = 0u; l < 16u; l++) y[l] = dl * DQ_KV[(dq_b(w, l) >> (4u * (g & 1u))) & 15u];
}

void dq_group(uint off, uint g, out float y[16]) {
    if (TYPE0 == T_Q2_K) dq_group_q2_k(off, g, y);
    else if (TYPE0 == T_Q3_K) dq_group_q3_k(off, g, y);
    else if (TYPE0 == T_Q4_K || TYPE0 == T_Q5_K) dq_group_q45_k(off, g, y);
    else if (TYPE0 == T_Q6_K) dq_group_q6_k(off, g, y);
    else if (TYPE0 == T_IQ4_XS) dq_group_iq4_xs(off, g, y);
    else dq_group_32(off, g, y);
}

// Group G (counted from the row's start) of a quantised row at off.
void dq_row_group(uint off, uint G, out float y[16]) {
    dq_group(off + (G / DQ_GPB) * type_bytes(TYPE0), G % DQ_GPB, y);
}

// How b is rounded before it meets these weights: as the CPU plugin's
// integer dot products see it (the MUL_MAT contract allows it), so that a
// model's results do not depend on the device. 32: per 32 elements, int8
// levels x * (127 / max|x|) to the nearest even, of the scale max|x| / 127
// kept as binary16 (the CPU's blocks of 32, plugins/cpu/kern_blocks.c: the
// types of 32-blocks but Q8_0 and Q4_0); 256: Q8_K's, per 256, x / d
// (the super-block types); 0: b as it is (float weights, and Q8_0 and
// Q4_0, whose b is left unrounded as before).
const uint DQ_RB = TYPE_IS_K(TYPE0) ? 256u :
                   (TYPE0 == T_Q4_1 || TYPE0 == T_Q5_0 || TYPE0 == T_Q5_1 || TYPE0 == T_IQ4_NL) ? 32u : 0u;

int dq_round_away(float v) { return v < 0.0 ? -int(-v + 0.5) : int(v + 0.5); }

float dq_through_f16(float v) { return unpackHalf2x16(f32_to_f16(v)).x; }

// x rounded to its block's level; s is dq_b_scale's figure for the block
// (max|x| for DQ_RB 32, the scale d for 256).
float dq_round_b(float x, float s) {
    if (DQ_RB == 0u || s == 0.0) return DQ_RB == 0u ? x : 0.0;
    if (DQ_RB == 32u) return dq_through_f16(s / 127.0) * float(clamp(int(roundEven(x * (127.0 / s))), -127, 127));
    return s * float(clamp(dq_round_away(x / s), -127, 127));
}

// What dq_round_b takes for the DQ_RB elements from b's F32 binding at
// word index i.
float dq_b_scale(uint i) {
    float amax = 0.0;
    for (uint e = 0u; e < DQ_RB; e++) amax = max(amax, abs(b1_f32.v[i + e]));
    return DQ_RB == 32u ? amax : amax / 127.0;
}


// Eight elements of an F16 or BF16 row of binding 0, packed two to a word.
void dq_unpack8(uvec4 w, out vec4 lo, out vec4 hi) {
    if (TYPE0 == T_BF16) {
        lo = vec4(uintBitsToFloat(w.x << 16), uintBitsToFloat(w.x & 0xffff0000u),
                  uintBitsToFloat(w.y << 16), uintBitsToFloat(w.y & 0xffff0000u));
        hi = vec4(uintBitsToFloat(w.z << 16), uintBitsToFloat(w.z & 0xffff0000u),
                  uintBitsToFloat(w.w << 16), uintBitsToFloat(w.w & 0xffff0000u));
    } else {
        lo = vec4(unpackHalf2x16(w.x), unpackHalf2x16(w.y));
        hi = vec4(unpackHalf2x16(w.z), unpackHalf2x16(w.w));
    }
}
