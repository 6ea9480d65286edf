// SPDX-License-Identifier: MIT
// flash_attn.comp: FLASH_ATTN (abi/rt_tensor.h), softmax(cap(scale q.k) +
// mask) v without the scores of the whole context ever leaving the chip.
// One workgroup per (tile of BR queries, head, plane) walks the keys in
// tiles of BC with an online softmax: per query row a running max m and
// sum l in shared memory, the output rows in registers rescaled by
// exp(m_old - m_new) when the max grows, and a tile's scores only in
// shared memory. The row max and sum are subgroup reductions, one subgroup
// per row. A tile whose mask is -inf for every query is skipped whole (a
// causal mask's upper triangle); a masked score's dot product is not
// computed (but in the register blocks below, where it is discarded).
//
// Prompts (BR > 1): the tile of K, then the tile of V, is staged in shared
// memory, each element read once from memory and used by BR queries; where
// the shapes divide, an invocation's SPT scores share each K element it
// reads from shared memory, and its OPT outputs each V element.
// Decode (BR = 1): no element would be used twice, so none is staged: an
// invocation computes one key's score, reading its K row 16 bytes at a
// time (the rows a subgroup reads at once are a few KiB, cached); for p.v
// the invocations are groups of NGV, one V row per group at a time, each
// invocation 16 bytes of it (neighbouring lanes neighbouring words), KG
// groups over the keys whose sums meet in shared memory at the end.
//
// Split keys (OP_PARTIAL, decode on a GPU with few heads to keep busy):
// each workgroup takes one run of kv_chunk keys and writes its partial
// result (the unnormalised output row, m, l) to the queue's scratch buffer
// at binding 3; a second dispatch (OP_MERGE, one workgroup per query and
// head) reads the partials at binding 0 and writes
// sum_s exp(m_s - M) o_s / sum_s exp(m_s - M) l_s, M = max_s m_s.
//
// Bindings: 0 q (F32), 1 k, 2 v (F32 or F16, TYPE1 = TYPE2), 3 the output
// (F32, contiguous {DV, H, N, n3}), 5 the mask (type EXTRA, F32 or F16,
// read when OP has OP_MASK; binding 4 is the Metal plugin's push words). Tile
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
#define OP_MASK 1u
#define OP_PARTIAL 2u
#define OP_MERGE 4u

const uint WG = gl_WorkGroupSize.x;
const uint KS = D + 1u;                       // K tile row stride: a column read spreads over banks
const uint DMAX = D > DV ? D : DV;
const uint KV_SH = BR > 1u ? BC * (DMAX + 1u) : 1u;
const uint OPT = (BR * DV + WG - 1u) / WG;    // output elements per invocation (BR > 1)
const uint KSZ = TYPE1 == T_F16 ? 2u : 4u;
const uint MSZ = EXTRA == T_F16 ? 2u : 4u;
const uint VW = 16u / KSZ;                    // cache elements in 16 bytes
const uint NGV = (DV + VW - 1u) / VW;         // 16-byte groups of a V row
const uint KG = BR == 1u ? WG / NGV : 1u;     // decode's groups over the keys (WG >= NGV: ops_build.c)
const uint RED = BR == 1u ? KG * NGV * VW : 1u;
// Register blocks of a prompt's tile (when the shapes divide): an
// invocation's SPT scores share one key (one K element read per SPT
// products), its OPT output elements one column of V (likewise).
const uint RS = WG >= BC ? WG / BC : 1u;      // rows one pass over the scores covers
#define S_BLOCK (BR > 1u && WG % BC == 0u && BR % RS == 0u)
const uint SPT = (BR + RS - 1u) / RS;         // BR / RS where S_BLOCK
#define O_BLOCK (BR > 1u && WG % DV == 0u)
const uint RO = WG >= DV ? WG / DV : 1u;      // rows one pass over the output covers

layout(push_constant) uniform Push {
    uvec4 offs;       // q, k, v, output: bytes from the bound offset
    uint off_m;       // the mask's, likewise
    uint n_q, n_head, n_kv, gqa, n_qtiles, n3;
    uint nb_q1, nb_q2, nb_q3, nb_k1, nb_k2, nb_k3, nb_v1, nb_v2, nb_v3, nb_m1;
    float scale, softcap;
    uint n_split, kv_chunk; // key runs per query and head (1: no split), keys per run
} pc;

shared float qs[BR * D + 8u]; // the query tile, times scale (then zeros: decode reads 8 at a time)
shared float ss[BR * BC];     // the mask, then the scores, then exp(s - m)
shared float kvs[KV_SH];      // the K tile, then the V tile (BR > 1)
shared float row_m[BR], row_l[BR], row_a[BR];
shared uint live_sg[2u * WG]; // per subgroup: a tile has a live score (two tiles' worth)
shared float red[RED];        // decode: each key group's output row, summed at the end

// VW elements of a K (binding 1) or V (2) row at byte offset `at` from
// element d, in lo and hi (F32: hi is 0): one 16-byte load when vec (row
// and head aligned to 16 bytes, a uniform condition), else one at a time
// with zeros from element len on. Vectors, not arrays: a CPU running the
// shader keeps an array it cannot prove constant-indexed in memory.
#define RT_ROW_LOAD(n)                                                                \
float at##n(uint at, uint e, uint len) { return e < len ? load##n(at + e * KSZ) : 0.0; } \
void row##n(uint at, uint d, uint len, bool vec, out vec4 lo, out vec4 hi) {          \
    if (vec && TYPE##n == T_F16) {                                                    \
        const uvec4 u = b##n##_u4.v[(at + d * 2u) >> 4];                              \
        lo = vec4(unpackHalf2x16(u.x), unpackHalf2x16(u.y));                          \
        hi = vec4(unpackHalf2x16(u.z), unpackHalf2x16(u.w));                          \
    } else if (vec) {                                                                 \
        lo = b##n##_v4.v[(at + d * 4u) >> 4];                                         \
        hi = vec4(0.0);                                                               \
    } else {                                                                          \
        lo = vec4(at##n(at, d, len), at##n(at, d + 1u, len), at##n(at, d + 2u, len), at##n(at, d + 3u, len)); \
        hi = VW == 8u ? vec4(at##n(at, d + 4u, len), at##n(at, d + 5u, len), at##n(at, d + 6u, len), \
                             at##n(at, d + 7u, len)) : vec4(0.0);                     \
    }                                                                                 \
}
RT_ROW_LOAD(1)
RT_ROW_LOAD(2)

// Element j < 8 of (lo, hi).
float elem(vec4 lo, vec4 hi, uint j) { return j < 4u ? lo[j] : hi[j - 4u]; }

bool k_vec, v_vec;

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
        if (c < nk && i < pc.n_q) m = (OP & OP_MASK) != 0u ? load5(pc.off_m + i * pc.nb_m1 + (kb + c) * MSZ) : 0.0;
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
        const uint ng = (D + VW - 1u) / VW;
        for (uint e = gl_LocalInvocationID.x; e < BC * ng; e += WG) {
            const uint c = e / ng, d = (e % ng) * VW;
            vec4 lo = vec4(0.0), hi = vec4(0.0);
            if (c < nk) row1(k0 + (kb + c) * pc.nb_k1, d, D, k_vec, lo, hi);
            for (uint j = 0u; j < VW; j++)
                if (d + j < D) kvs[c * KS + d + j] = elem(lo, hi, j);
        }
        barrier();
        if (S_BLOCK) {
            const uint c = gl_LocalInvocationID.x % BC, r0 = gl_LocalInvocationID.x / BC;
            float s[SPT];
            for (uint k = 0u; k < SPT; k++) s[k] = 0.0;
            for (uint d = 0u; d < D; d++) {
                const float kv = kvs[c * KS + d];
                for (uint k = 0u; k < SPT; k++) s[k] += qs[(r0 + k * RS) * D + d] * kv;
            }
            for (uint k = 0u; k < SPT; k++) {
                const uint e = (r0 + k * RS) * BC + c;
                if (ss[e] != NEG_INF) ss[e] += cap(s[k]);
            }
        } else {
            for (uint e = gl_LocalInvocationID.x; e < BR * BC; e += WG) {
                if (ss[e] == NEG_INF) continue;
                const uint qr = (e / BC) * D, kr = (e % BC) * KS;
                float s = 0.0;
                for (uint d = 0u; d < D; d++) s += qs[qr + d] * kvs[kr + d];
                ss[e] += cap(s);
            }
        }
    } else {
        for (uint c = gl_LocalInvocationID.x; c < nk; c += WG) {
            if (ss[c] == NEG_INF) continue;
            const uint kr = k0 + (kb + c) * pc.nb_k1;
            float s = 0.0;
            for (uint d = 0u; d < D; d += VW) {
                vec4 lo, hi;
                row1(kr, d, D, k_vec, lo, hi);
                s += dot(lo, vec4(qs[d], qs[d + 1u], qs[d + 2u], qs[d + 3u]));
                if (VW == 8u) s += dot(hi, vec4(qs[d + 4u], qs[d + 5u], qs[d + 6u], qs[d + 7u]));
            }
            ss[c] += cap(s);
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

// OP_MERGE: one workgroup per (query, head, plane) row of the output.
void merge(uint row) {
    const uint rec = row * pc.n_split, n = DV + 2u;
    float mx = NEG_INF;
    for (uint s = 0u; s < pc.n_split; s++) mx = max(mx, load0(((rec + s) * n + DV) * 4u));
    float l = 0.0;
    if (mx != NEG_INF)
        for (uint s = 0u; s < pc.n_split; s++) {
            const uint m_at = ((rec + s) * n + DV) * 4u;
            l += load0(m_at + 4u) * exp(load0(m_at) - mx);
        }
    for (uint d = gl_LocalInvocationID.x; d < DV; d += WG) {
        float o = 0.0;
        for (uint s = 0u; s < pc.n_split && l > 0.0; s++) {
            const uint at = (rec + s) * n;
            o += load0((at + d) * 4u) * exp(load0((at + DV) * 4u) - mx);
        }
        store3(pc.offs.w + (row * DV + d) * 4u, l > 0.0 ? o / l : 0.0);
    }
}

void main() {
    const uint tid = gl_LocalInvocationID.x, g0 = group_flat();
    if ((OP & OP_MERGE) != 0u) {
        if (g0 < pc.n3 * pc.n_q * pc.n_head) merge(g0);
        return;
    }
    const uint split = g0 % pc.n_split, g = g0 / pc.n_split;
    const uint qt = g % pc.n_qtiles, h = (g / pc.n_qtiles) % pc.n_head, i3 = g / (pc.n_qtiles * pc.n_head);
    if (i3 >= pc.n3) return; // the padding of a dispatch spread over y and z
    const uint k_begin = split * pc.kv_chunk, k_end = min(pc.n_kv, k_begin + pc.kv_chunk);
    k_vec = D % VW == 0u && ((pc.offs.y | pc.nb_k1 | pc.nb_k2 | pc.nb_k3) & 15u) == 0u;
    v_vec = DV % VW == 0u && ((pc.offs.z | pc.nb_v1 | pc.nb_v2 | pc.nb_v3) & 15u) == 0u;
    const uint i0 = qt * BR, hk = h / pc.gqa;
    const uint q0 = pc.offs.x + h * pc.nb_q2 + i3 * pc.nb_q3;
    const uint k0 = pc.offs.y + hk * pc.nb_k2 + i3 * pc.nb_k3;
    const uint v0 = pc.offs.z + hk * pc.nb_v2 + i3 * pc.nb_v3;
    for (uint e = tid; e < BR * D + 8u; e += WG) {
        const uint r = e / D, i = i0 + r;
        qs[e] = r < BR && i < pc.n_q ? load0(q0 + i * pc.nb_q1 + (e % D) * 4u) * pc.scale : 0.0;
    }
    for (uint r = tid; r < BR; r += WG) {
        row_m[r] = NEG_INF;
        row_l[r] = 0.0;
    }
    float acc[OPT];
    for (uint k = 0u; k < OPT; k++) acc[k] = 0.0;
    vec4 acc_lo = vec4(0.0), acc_hi = vec4(0.0);
    const uint dg = tid % NGV, kl = tid / NGV; // decode: this invocation's 16 bytes of V, key group
    barrier();
    uint parity = 0u;
    for (uint kb = k_begin; kb < k_end; kb += BC, parity ^= 1u) {
        const uint nk = min(BC, k_end - kb);
        if (!tile_live(i0, kb, nk, parity)) continue; // the same answer everywhere
        tile_scores(k0, kb, nk);
        if (BR > 1u)
            for (uint e = tid; e < BC * NGV; e += WG) {
                const uint c = e / NGV, d = (e % NGV) * VW;
                vec4 lo = vec4(0.0), hi = vec4(0.0);
                if (c < nk) row2(v0 + (kb + c) * pc.nb_v1, d, DV, v_vec, lo, hi);
                for (uint j = 0u; j < VW; j++)
                    if (d + j < DV) kvs[c * DV + d + j] = elem(lo, hi, j);
            }
        tile_softmax();
        barrier();
        if (O_BLOCK) { // element k of this invocation's: column d of row r0 + k * RO
            const uint d = tid % DV, r0 = tid / DV;
            for (uint k = 0u; k < OPT; k++)
                if (r0 + k * RO < BR) acc[k] *= row_a[r0 + k * RO];
            for (uint c = 0u; c < nk; c++) {
                const float v = kvs[c * DV + d];
                for (uint k = 0u; k < OPT; k++)
                    if (r0 + k * RO < BR) acc[k] += ss[(r0 + k * RO) * BC + c] * v;
            }
        } else if (BR > 1u) {
            for (uint k = 0u; k < OPT; k++) {
                const uint e = tid + k * WG, r = e / DV, d = e % DV;
                if (e < BR * DV) {
                    float a = acc[k] * row_a[r];
                    for (uint c = 0u; c < nk; c++) a += ss[r * BC + c] * kvs[c * DV + d];
                    acc[k] = a;
                }
            }
        } else if (kl < KG) {
            const float a = row_a[0];
            acc_lo *= a;
            acc_hi *= a;
            for (uint c = kl; c < nk; c += KG) {
                const float p = ss[c];
                if (p == 0.0) continue;
                vec4 lo, hi;
                row2(v0 + (kb + c) * pc.nb_v1, dg * VW, DV, v_vec, lo, hi);
                acc_lo += p * lo;
                acc_hi += p * hi;
            }
        }
        barrier();
    }
    if (BR == 1u) { // the key groups' sums, element k of this invocation's at acc[k]
        if (kl < KG)
            for (uint j = 0u; j < VW; j++) red[(kl * NGV + dg) * VW + j] = elem(acc_lo, acc_hi, j);
        barrier();
        for (uint k = 0u; k < OPT; k++) {
            const uint d = tid + k * WG;
            acc[k] = 0.0;
            for (uint g = 0u; g < KG && d < DV; g++) acc[k] += red[(g * NGV + d / VW) * VW + d % VW];
        }
    }
    for (uint k = 0u; k < OPT; k++) {
        const uint e = tid + k * WG, r = e / DV, i = i0 + r, d = e % DV;
        if (e >= BR * DV || i >= pc.n_q) continue;
        const uint row = (i3 * pc.n_q + i) * pc.n_head + h;
        const float l = row_l[r];
        if ((OP & OP_PARTIAL) != 0u) {
            const uint at = ((row * pc.n_split + split) * (DV + 2u)) * 4u;
            store3(at + d * 4u, acc[k]);
            if (d == 0u) {
                store3(at + DV * 4u, row_m[r]);
                store3(at + DV * 4u + 4u, l);
            }
        } else {
            store3(pc.offs.w + (row * DV + d) * 4u, l > 0.0 ? acc[k] / l : 0.0);
        }
    }
}
