// SPDX-License-Identifier: MIT
// flash_attn.comp: FLASH_ATTN (abi/rt_tensor.h), softmax(cap(scale q.k) +
// mask) v without the scores of the whole context ever leaving the chip.
// One workgroup per (tile of BR queries, head, plane) walks the keys in
// tiles of BC with an online softmax: per query row a running max m and
// sum l in shared memory, the output rows in registers rescaled by
// exp(m_old - m_new) when the max grows, and a tile's scores only in
// shared memory. The row max and sum are subgroup reductions, one subgroup
// per row. A tile whose mask is -inf for every query is skipped whole (a
// causal mask's upper triangle), a masked score's dot product is not
// computed.
//
// Prompts (BR > 1): the tile of K, then the tile of V, is staged in shared
// memory, each element read once from memory and used by BR queries.
// Decode (BR = 1): no element would be used twice, so none is staged: a
// subgroup computes one key's score at a time (lanes along the head, a
// subgroupAdd), and the workgroup's invocations each own output elements
// and read V rows directly, neighbouring lanes neighbouring words.
//
// Bindings: 0 q (F32), 1 k, 2 v (F32 or F16, TYPE1 = TYPE2), 3 the output
// (F32, contiguous {DV, H, N, n3}), 5 the mask (type EXTRA, F32 or F16,
// read when OP != 0; binding 4 is the Metal plugin's push words). Tile
// sizes and the head sizes are specialisation constants (ops_build.c
// chooses them per device and checks the shared memory below fits).
#version 450
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"

RT_BINDING(5, EXTRA)

layout(constant_id = 8) const uint BC = 32;  // keys per tile
layout(constant_id = 9) const uint D = 64;   // head size of q and k
layout(constant_id = 10) const uint DV = 64; // head size of v and the output
#define BR ROWS                               // queries per workgroup

const uint WG = gl_WorkGroupSize.x;
const uint KS = D + 1u;                       // K tile row stride: a column read spreads over banks
const uint DMAX = D > DV ? D : DV;
const uint KV_SH = BR > 1u ? BC * (DMAX + 1u) : 1u;
const uint OPT = (BR * DV + WG - 1u) / WG;    // output elements per invocation
const uint KSZ = TYPE1 == T_F16 ? 2u : 4u;
const uint MSZ = EXTRA == T_F16 ? 2u : 4u;

layout(push_constant) uniform Push {
    uvec4 offs;       // q, k, v, output: bytes from the bound offset
    uint off_m;       // the mask's, likewise
    uint n_q, n_head, n_kv, gqa, n_qtiles, n3;
    uint nb_q1, nb_q2, nb_q3, nb_k1, nb_k2, nb_k3, nb_v1, nb_v2, nb_v3, nb_m1;
    float scale, softcap;
} pc;

shared float qs[BR * D];      // the query tile, times scale
shared float ss[BR * BC];     // the mask, then the scores, then exp(s - m)
shared float kvs[KV_SH];      // the K tile, then the V tile (BR > 1)
shared float row_m[BR], row_l[BR], row_a[BR];
shared uint live_sg[2u * WG]; // per subgroup: a tile has a live score (two tiles' worth)

// c * tanh(x / c), tanh from one exp that cannot overflow.
float cap(float x) {
    if (pc.softcap == 0.0) return x;
    const float y = x / pc.softcap, t = exp(-2.0 * abs(y));
    return pc.softcap * sign(y) * (1.0 - t) / (1.0 + t);
}

// The tile's mask (or 0) into ss, -inf past the keys and the queries;
// whether any entry is live, for the whole workgroup (after a barrier).
bool tile_live(uint i0, uint kb, uint nk, uint parity) {
    bool live = false;
    for (uint e = gl_LocalInvocationID.x; e < BR * BC; e += WG) {
        const uint r = e / BC, c = e % BC, i = i0 + r;
        float m = NEG_INF;
        if (c < nk && i < pc.n_q) m = OP != 0u ? load5(pc.off_m + i * pc.nb_m1 + (kb + c) * MSZ) : 0.0;
        ss[e] = m;
        live = live || m != NEG_INF;
    }
    const uint any_sg = subgroupMax(live ? 1u : 0u);
    if (subgroupElect()) live_sg[parity * WG + gl_SubgroupID] = any_sg;
    barrier();
    bool any = false;
    for (uint s = 0u; s < gl_NumSubgroups; s++) any = any || live_sg[parity * WG + s] != 0u;
    return any;
}

// Scores of the tile added to the mask in ss, where it is not -inf.
void tile_scores(uint k0, uint kb, uint nk) {
    if (BR > 1u) {
        for (uint e = gl_LocalInvocationID.x; e < BC * D; e += WG) {
            const uint c = e / D, d = e % D;
            kvs[c * KS + d] = c < nk ? load1(k0 + (kb + c) * pc.nb_k1 + d * KSZ) : 0.0;
        }
        barrier();
        for (uint e = gl_LocalInvocationID.x; e < BR * BC; e += WG) {
            if (ss[e] == NEG_INF) continue;
            const uint qr = (e / BC) * D, kr = (e % BC) * KS;
            float s = 0.0;
            for (uint d = 0u; d < D; d++) s += qs[qr + d] * kvs[kr + d];
            ss[e] += cap(s);
        }
    } else {
        for (uint c = gl_SubgroupID; c < nk; c += gl_NumSubgroups) {
            if (ss[c] == NEG_INF) continue; // the same c across the subgroup
            const uint kr = k0 + (kb + c) * pc.nb_k1;
            float s = 0.0;
            for (uint d = gl_SubgroupInvocationID; d < D; d += gl_SubgroupSize) s += qs[d] * load1(kr + d * KSZ);
            s = subgroupAdd(s);
            if (subgroupElect()) ss[c] += cap(s);
        }
    }
    barrier();
}

// The online softmax step of each row: the new max, p = exp(s - m) in ss,
// the factor the rows' sums and outputs so far are scaled by.
void tile_softmax() {
    for (uint r = gl_SubgroupID; r < BR; r += gl_NumSubgroups) {
        float mx = NEG_INF;
        for (uint c = gl_SubgroupInvocationID; c < BC; c += gl_SubgroupSize) mx = max(mx, ss[r * BC + c]);
        mx = subgroupMax(mx);
        const float m_old = row_m[r], m_new = max(m_old, mx);
        float sum = 0.0;
        for (uint c = gl_SubgroupInvocationID; c < BC; c += gl_SubgroupSize) {
            const float p = m_new == NEG_INF ? 0.0 : exp(ss[r * BC + c] - m_new);
            ss[r * BC + c] = p;
            sum += p;
        }
        sum = subgroupAdd(sum);
        if (subgroupElect()) {
            const float a = m_new == NEG_INF ? 1.0 : exp(m_old - m_new);
            row_a[r] = a;
            row_l[r] = row_l[r] * a + sum;
            row_m[r] = m_new;
        }
    }
}

void main() {
    const uint tid = gl_LocalInvocationID.x, g = group_flat();
    const uint qt = g % pc.n_qtiles, h = (g / pc.n_qtiles) % pc.n_head, i3 = g / (pc.n_qtiles * pc.n_head);
    if (i3 >= pc.n3) return; // the padding of a dispatch spread over y and z
    const uint i0 = qt * BR, hk = h / pc.gqa;
    const uint q0 = pc.offs.x + h * pc.nb_q2 + i3 * pc.nb_q3;
    const uint k0 = pc.offs.y + hk * pc.nb_k2 + i3 * pc.nb_k3;
    const uint v0 = pc.offs.z + hk * pc.nb_v2 + i3 * pc.nb_v3;
    for (uint e = tid; e < BR * D; e += WG) {
        const uint r = e / D, i = i0 + r;
        qs[e] = i < pc.n_q ? load0(q0 + i * pc.nb_q1 + (e % D) * 4u) * pc.scale : 0.0;
    }
    for (uint r = tid; r < BR; r += WG) {
        row_m[r] = NEG_INF;
        row_l[r] = 0.0;
    }
    float acc[OPT];
    for (uint k = 0u; k < OPT; k++) acc[k] = 0.0;
    barrier();
    uint parity = 0u;
    for (uint kb = 0u; kb < pc.n_kv; kb += BC, parity ^= 1u) {
        const uint nk = min(BC, pc.n_kv - kb);
        if (!tile_live(i0, kb, nk, parity)) continue; // the same answer everywhere
        tile_scores(k0, kb, nk);
        if (BR > 1u)
            for (uint e = tid; e < BC * DV; e += WG) {
                const uint c = e / DV;
                kvs[e] = c < nk ? load2(v0 + (kb + c) * pc.nb_v1 + (e % DV) * KSZ) : 0.0;
            }
        tile_softmax();
        barrier();
        for (uint k = 0u; k < OPT; k++) {
            const uint e = tid + k * WG, r = e / DV, d = e % DV;
            if (e >= BR * DV) break;
            float a = acc[k] * row_a[r];
            if (BR > 1u) {
                for (uint c = 0u; c < nk; c++) a += ss[r * BC + c] * kvs[c * DV + d];
            } else {
                for (uint c = 0u; c < nk; c++) {
                    const float p = ss[c]; // the same c across the workgroup
                    if (p != 0.0) a += p * load2(v0 + (kb + c) * pc.nb_v1 + d * KSZ);
                }
            }
            acc[k] = a;
        }
        barrier();
    }
    for (uint k = 0u; k < OPT; k++) {
        const uint e = tid + k * WG, r = e / DV, i = i0 + r;
        if (e >= BR * DV || i >= pc.n_q) break;
        const float l = row_l[r];
        const uint o = pc.offs.w + (((i3 * pc.n_q + i) * pc.n_head + h) * DV + e % DV) * 4u;
        store3(o, l > 0.0 ? acc[k] / l : 0.0);
    }
}
