/* SPDX-License-Identifier: MIT */
/* repack.h: the CPU plugin's repacked weight layout ("r16"), in which the
 * CPU_Weights buffer type (weights.c) keeps 2-D Q8_0, Q4_0 and Q4_1 matrices, and
 * the activation rows its kernels multiply them by. The GGUF layout puts a
 * row's blocks side by side, so a SIMD dot product needs a horizontal sum
 * per row and, for 4-byte multiply-add groups, byte shuffles; here 16 rows
 * are interleaved so that one 64-byte load holds 4 consecutive weights of
 * each of 16 rows, and one VNNI vpdpbusd against the activation's matching
 * 4 bytes (broadcast) adds 16 rows' partial sums in 16 lanes: no shuffles,
 * no reductions, and the scale work is done once per block for 16 rows.
 *
 *   Rows are taken 16 at a time (a group); the last group is padded with
 *   rows of zero weights and zero scales. Group g starts at g * group
 *   bytes (rt_cpu_rp_group_bytes: a multiple of 64, so every chunk below
 *   is one cache line). Within a group, for the K/32 blocks b:
 *
 *     quants, block b at b * 16 * qbytes (qbytes 32 for Q8_0, 16 for Q4_0
 *       and Q4_1),
 *       in 64-byte chunks; chunk c holds row r's 4 bytes c*4 .. c*4 + 3 of
 *       its block at 4r:
 *         Q8_0  8 chunks: the weights w xor 0x80 (w + 128, unsigned: x86's
 *               byte products are unsigned by signed);
 *         Q4_0, Q4_1  4 chunks: the GGUF bytes qs[4c .. 4c+3] as they are:
 *               their low nibbles are elements 4c.., their high ones 16 + 4c...
 *       "Virtual chunk" k (0..7) is elements 4k .. 4k+3 of the block: for
 *       Q8_0 chunk k, for Q4_0/Q4_1 the low (k < 4) or high (k >= 4) nibbles of
 *       chunk k & 3, so the activation bytes are always those at 4k.
 *     scales, after all quants (at K/32 * 16 * qbytes): block b's 16 F16
 *       scales d at 32 b * nscales, row r's at 2r; for Q4_1 (nscales 2)
 *       its 16 F16 offsets m follow them, row r's at 32 b * 2 + 32 + 2r.
 *
 * Bytes per group: K/32 * 16 * (qbytes + 2 nscales), the GGUF size of 16
 * rows, rounded up to 64. Repacking is exact (rt_cpu_rp_pack/unpack are
 * inverses on the rows that exist).
 *
 * Activation rows for these kernels ("q8r", rt_cpu_q8r_size bytes): block b
 * at 40 b holds the 32 int8 of the activation's Q8_0 block, its scale d
 * (F32, the F16 value) at +32 and at +36 an int32 correction that the
 * integer sums start from, chosen by the kernel variant for the weights'
 * type (-128 times the sum of the bytes for unsigned Q8_0 weights, -8
 * times it for Q4_0's nibbles; 0 where the variant multiplies signed).
 * For Q4_1 the block is the Q8_1 block of the GGUF-layout kernels
 * (kern_blocks.c, rounded by the same rule): +36 holds the F32 s, d times
 * the levels' sum (an F16 value), which m multiplies; the sums start at 0. */
#ifndef RT_CPU_REPACK_H
#define RT_CPU_REPACK_H

#include "../../abi/rt_tensor.h"

#include <stddef.h>
#include <stdint.h>

#define RT_CPU_RP_ROWS 16 /* rows per group */
#define RT_CPU_Q8R_BLOCK 40 /* bytes per block of a q8r activation row */
/* Work items of the repacked mat-vec (ops_mul_mat.c) are multiples of this
 * many groups, so that the kernel's widest tile (4 groups at n = 1,
 * kern_quant.c) is never cut into narrower, slower ones: k = 14336 made
 * items of 2 groups, which ran at 1 group a tile, 0.75x the speed. */
#define RT_CPU_RP_ITEM_GROUPS 4

/* The types the layout holds. */
static inline bool rt_cpu_rp_type(rt_type_t t) {
    return t == RT_TYPE_Q8_0 || t == RT_TYPE_Q4_0 || t == RT_TYPE_Q4_1;
}

/* Quant bytes per row and block: 32 for Q8_0, 16 for Q4_0 and Q4_1. */
static inline size_t rt_cpu_rp_qbytes(rt_type_t t) {
    return t == RT_TYPE_Q8_0 ? 32 : 16;
}

/* F16 scales per row and block: d, and Q4_1's m. */
static inline int rt_cpu_rp_nscales(rt_type_t t) {
    return t == RT_TYPE_Q4_1 ? 2 : 1;
}

static inline int64_t rt_cpu_rp_groups(int64_t M) {
    return (M + RT_CPU_RP_ROWS - 1) / RT_CPU_RP_ROWS;
}

/* Bytes from a group's quants to its scales. */
static inline size_t rt_cpu_rp_scales_at(rt_type_t t, int64_t K) {
    return (size_t)(K / 32) * RT_CPU_RP_ROWS * rt_cpu_rp_qbytes(t);
}

static inline size_t rt_cpu_rp_group_bytes(rt_type_t t, int64_t K) {
    const size_t n = rt_cpu_rp_scales_at(t, K) + (size_t)(K / 32) * RT_CPU_RP_ROWS * 2 * rt_cpu_rp_nscales(t);
    return (n + 63) / 64 * 64;
}

static inline size_t rt_cpu_rp_bytes(rt_type_t t, int64_t M, int64_t K) {
    return (size_t)rt_cpu_rp_groups(M) * rt_cpu_rp_group_bytes(t, K);
}

static inline size_t rt_cpu_q8r_size(int64_t K) {
    return ((size_t)(K / 32) * RT_CPU_Q8R_BLOCK + 63) / 64 * 64;
}

/* M rows of K elements, src_row bytes apart in the GGUF layout, into the
 * r16 layout at dst (rt_cpu_rp_bytes); and back. */
void rt_cpu_rp_pack(rt_type_t t, const void *src, size_t src_row, int64_t M, int64_t K,
                    void *dst);
void rt_cpu_rp_unpack(rt_type_t t, const void *src, int64_t M, int64_t K, void *dst,
                      size_t dst_row);

#endif /* RT_CPU_REPACK_H */
