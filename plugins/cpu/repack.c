/* SPDX-License-Identifier: MIT */
/* repack.c: conversions between the GGUF layout of Q8_0/Q4_0/Q4_1 matrices and
 * the CPU plugin's r16 layout (repack.h), run once when weights are loaded
 * or read back. Plain C: each 4-byte group moves once, and one direction is
 * the other with the copies turned round, so they cannot disagree. */
#include "repack.h"

#include "../../abi/rt_quant.h"

#include <string.h>

/* The GGUF block's bytes. */
static size_t rp_block_bytes(rt_type_t t) {
    return t == RT_TYPE_Q8_0   ? sizeof(rt_block_q8_0_t)
           : t == RT_TYPE_Q4_0 ? sizeof(rt_block_q4_0_t)
                               : sizeof(rt_block_q4_1_t);
}

/* One GGUF block (gguf) and its place in a group (quants of its block
 * column, its F16 scale slots) for row r: copies one way or the other. */
static void rp_block(rt_type_t t, char *gguf, char *quants, char *scale, int r, bool to_r16) {
    const int n_chunks = t == RT_TYPE_Q8_0 ? 8 : 4;
    const uint8_t flip = t == RT_TYPE_Q8_0 ? 0x80 : 0; /* Q8_0 stored unsigned */
    const int ns = rt_cpu_rp_nscales(t);
    char *qs = gguf + 2 * ns; /* every block type: F16 d (and m), then the quants */
    for (int c = 0; c < n_chunks; c++) {
        char *x = quants + 64 * c + 4 * r, *y = qs + 4 * c;
        for (int i = 0; i < 4; i++) {
            if (to_r16)
                x[i] = (char)((uint8_t)y[i] ^ flip);
            else
                y[i] = (char)((uint8_t)x[i] ^ flip);
        }
    }
    for (int j = 0; j < ns; j++) {
        if (to_r16)
            memcpy(scale + 32 * j + 2 * r, gguf + 2 * j, 2);
        else
            memcpy(gguf + 2 * j, scale + 32 * j + 2 * r, 2);
    }
}

/* Every block of row m (group-relative row r) in one direction. */
static void rp_row(rt_type_t t, char *gguf, char *group, int64_t K, int r, bool to_r16) {
    const size_t bs = rp_block_bytes(t), qb = RT_CPU_RP_ROWS * rt_cpu_rp_qbytes(t);
    const size_t sb = 32 * (size_t)rt_cpu_rp_nscales(t);
    char *scales = group + rt_cpu_rp_scales_at(t, K);
    for (int64_t b = 0; b < K / 32; b++)
        rp_block(t, gguf + (size_t)b * bs, group + (size_t)b * qb, scales + sb * b, r, to_r16);
}

/* A padding row: zero weights (Q8_0's 0 is 0x80 stored, Q4_0's nibble 8),
 * zero scales (and offsets). */
static void rp_pad_row(rt_type_t t, char *group, int64_t K, int r) {
    char zero[sizeof(rt_block_q8_0_t)];
    memset(zero, t == RT_TYPE_Q8_0 ? 0 : 0x88, sizeof zero);
    memset(zero, 0, 2 * (size_t)rt_cpu_rp_nscales(t));
    const size_t qb = RT_CPU_RP_ROWS * rt_cpu_rp_qbytes(t), sb = 32 * (size_t)rt_cpu_rp_nscales(t);
    char *scales = group + rt_cpu_rp_scales_at(t, K);
    for (int64_t b = 0; b < K / 32; b++)
        rp_block(t, zero, group + (size_t)b * qb, scales + sb * b, r, true);
}

void rt_cpu_rp_pack(rt_type_t t, const void *src, size_t src_row, int64_t M, int64_t K,
                    void *dst) {
    const size_t gb = rt_cpu_rp_group_bytes(t, K);
    for (int64_t g = 0; g < rt_cpu_rp_groups(M); g++) {
        char *group = (char *)dst + (size_t)g * gb;
        memset(group + rt_cpu_rp_scales_at(t, K), 0, gb - rt_cpu_rp_scales_at(t, K));
        for (int r = 0; r < RT_CPU_RP_ROWS; r++) {
            const int64_t m = g * RT_CPU_RP_ROWS + r;
            if (m < M)
                rp_row(t, (char *)src + (size_t)m * src_row, group, K, r, true);
            else
                rp_pad_row(t, group, K, r);
        }
    }
}

void rt_cpu_rp_unpack(rt_type_t t, const void *src, int64_t M, int64_t K, void *dst,
                      size_t dst_row) {
    const size_t gb = rt_cpu_rp_group_bytes(t, K);
    for (int64_t m = 0; m < M; m++) {
        char *group = (char *)src + (size_t)(m / RT_CPU_RP_ROWS) * gb;
        rp_row(t, (char *)dst + (size_t)m * dst_row, group, K, (int)(m % RT_CPU_RP_ROWS), false);
    }
}
