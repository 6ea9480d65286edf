/* SPDX-License-Identifier: MIT */
/* cases.c: the conformance table. Every row is one case: an op (or a
 * template: ADD/SUB/MUL/DIV, NORM/RMS_NORM and GELU/SILU share rows), its
 * inputs (type, shape as the op sees it, layout, fill), its parameters and
 * the CPU's tolerance; a new case is one row. Also the ops a suite runs
 * (cf_op_tests), which rows apply to each, the tolerance a device gets,
 * and a case's description. */
#include "conform.h"

#include <stdio.h>

#define IN(ty, ...) {.type = RT_TYPE_##ty, .ne = {__VA_ARGS__}}
#define INL(ty, lay, ...) {.type = RT_TYPE_##ty, .layout = CF_LAY_##lay, .ne = {__VA_ARGS__}}
#define INF(ty, fl, ...) {.type = RT_TYPE_##ty, .fill = CF_FILL_##fl, .ne = {__VA_ARGS__}}
#define INP(ty, x0, x1, x2, x3, ...) \
    {.type = RT_TYPE_##ty, .layout = CF_LAY_PERM, .axes = {x0, x1, x2, x3}, .ne = {__VA_ARGS__}}
#define INPP(ty, x0, x1, x2, x3, ...) \
    {.type = RT_TYPE_##ty, .layout = CF_LAY_PADPERM, .axes = {x0, x1, x2, x3}, .ne = {__VA_ARGS__}}
#define IDX(hi, ...) {.type = RT_TYPE_I32, .fill = CF_FILL_INDEX, .idx_hi = hi, .ne = {__VA_ARGS__}}
#define DIST(hi, ...) {.type = RT_TYPE_I32, .fill = CF_FILL_DISTINCT, .idx_hi = hi, .ne = {__VA_ARGS__}}
#define POS(ty, lay, ...) {.type = RT_TYPE_##ty, .layout = CF_LAY_##lay, .fill = CF_FILL_POS, .ne = {__VA_ARGS__}}

/* The weight types of GGUF files beyond Q8_0 and Q4_0 (whose rows are
 * written out below), each with a K of three of its blocks: odd block
 * counts, and super-blocks of 256 for the K-quants and IQ4_XS. */
#define CF_WEIGHT_TYPES(X)                                                              \
    X(Q4_1, "q4_1", 96) X(Q5_0, "q5_0", 96) X(Q5_1, "q5_1", 96) X(IQ4_NL, "iq4_nl", 96) \
    X(Q2_K, "q2_k", 768) X(Q3_K, "q3_k", 768) X(Q4_K, "q4_k", 768) X(Q5_K, "q5_k", 768) \
    X(Q6_K, "q6_k", 768) X(IQ4_XS, "iq4_xs", 768)

/* Quantised embeddings: contiguous; padded rows, batched over dim 2. */
#define CF_GET_ROWS_CASES(T, name, K)                                                             \
    {RT_OP_GET_ROWS, name, {IN(T, K, 10), IDX(10, 5)}, .tol = CF_TOL_EXACT},                      \
    {RT_OP_GET_ROWS, name " padded rows, batched", {INL(T, PAD, K, 6, 3), IDX(6, 4, 3)}, .tol = CF_TOL_EXACT},

/* Weights: matrix-vector (N = 1, decode) with an odd M; N = 32 (the
 * widest small batch, the CPU's mat-vec path) and N = 33 (a prompt: past
 * any device's few-column path) with padded b; a broadcast over permuted
 * b; padded a rows. */
#define CF_MUL_MAT_CASES(T, name, K)                                                              \
    {RT_OP_MUL_MAT, name " matrix-vector, M = 67", {IN(T, K, 67), IN(F32, K, 1)}, .tol = CF_TOL_DOT}, \
    {RT_OP_MUL_MAT, name " N = 32, padded b", {IN(T, K, 37), INL(F32, PAD, K, 32)}, .tol = CF_TOL_DOT}, \
    {RT_OP_MUL_MAT, name " N = 33, padded b", {IN(T, K, 70), INL(F32, PAD, K, 33)}, .tol = CF_TOL_DOT}, \
    {RT_OP_MUL_MAT, name " a broadcast, permuted b, N = 4",                                       \
     {IN(T, K, 13, 2), INP(F32, 0, 2, 1, 3, K, 4, 4)}, .tol = CF_TOL_DOT},                        \
    {RT_OP_MUL_MAT, name " padded a rows, N = 9", {INL(T, PAD, K, 9, 2), IN(F32, K, 9, 2)}, .tol = CF_TOL_DOT},

const cf_case_t cf_cases[] = {
    /* FLASH_ATTN: q as the model hands it over (a permute of {D, H, N}), k
       and v as views of a cache ({D, H_kv, n_ctx} permuted), F32 and F16
       caches, grouped queries, masks with padded rows, soft-capping, a query
       that sees no key, Dv != D and a plane dimension. */
    {RT_OP_FLASH_ATTN, "f32, one head, no mask", {IN(F32, 8, 3, 1), IN(F32, 8, 5, 1), IN(F32, 8, 5, 1)},
     .f = {1.0f, 0.0f}, .tol = CF_TOL_DOT},
    {RT_OP_FLASH_ATTN, "f32 cache views, 4 heads over 2, causal mask",
     {INP(F32, 0, 2, 1, 3, 64, 7, 4), INP(F32, 0, 2, 1, 3, 64, 19, 2), INP(F32, 0, 2, 1, 3, 64, 19, 2),
      INF(F32, CAUSAL, 19, 8)}, .f = {0.125f, 0.0f}, .tol = CF_TOL_DOT},
    {RT_OP_FLASH_ATTN, "f16 cache, decode, n_kv = 300",
     {INP(F32, 0, 2, 1, 3, 64, 1, 8), INP(F16, 0, 2, 1, 3, 64, 300, 2), INP(F16, 0, 2, 1, 3, 64, 300, 2),
      IN(F16, 300, 1)}, .f = {0.125f, 0.0f}, .tol = CF_TOL_DOT},
    {RT_OP_FLASH_ATTN, "f16, soft-capped, a query that sees nothing",
     {IN(F32, 32, 5, 4), IN(F16, 32, 40, 4), IN(F16, 32, 40, 4), INF(F16, CAUSAL0, 40, 6)},
     .f = {0.5f, 3.0f}, .tol = CF_TOL_DOT},
    {RT_OP_FLASH_ATTN, "f32, Dv = 24 != D = 16, two planes",
     {IN(F32, 16, 3, 2, 2), IN(F32, 16, 9, 1, 2), IN(F32, 24, 9, 1, 2), INF(F32, CAUSAL, 9, 3)},
     .f = {0.25f, 0.0f}, .tol = CF_TOL_DOT},
    {RT_OP_FLASH_ATTN, "f16 cache, head_dim 128, prompt of 16 over 520 keys",
     {INP(F32, 0, 2, 1, 3, 128, 16, 4), INP(F16, 0, 2, 1, 3, 128, 520, 1), INP(F16, 0, 2, 1, 3, 128, 520, 1),
      INF(F16, CAUSAL, 520, 16)}, .f = {0.0884f, 0.0f}, .tol = CF_TOL_DOT},

    /* The view family, seen through CONT: header checks plus the copied values. */
    {CF_OP_VIEWS, "permute 0,2,1,3", {INP(F32, 0, 2, 1, 3, 7, 5, 3, 2)}, .tol = CF_TOL_EXACT},
    {CF_OP_VIEWS, "permute 1,2,0,3 (a V cache's view)", {INP(F32, 1, 2, 0, 3, 7, 5, 3, 2)}, .tol = CF_TOL_EXACT},
    {CF_OP_VIEWS, "permute 3,2,1,0", {INP(F32, 3, 2, 1, 0, 7, 5, 3, 2)}, .tol = CF_TOL_EXACT},
    {CF_OP_VIEWS, "permute 2,0,3,1", {INP(F32, 2, 0, 3, 1, 4, 5, 3, 2)}, .tol = CF_TOL_EXACT},
    {CF_OP_VIEWS, "transpose", {INL(F32, TRANS, 33, 7)}, .tol = CF_TOL_EXACT},
    {CF_OP_VIEWS, "transpose ne0 = 1", {INL(F32, TRANS, 1, 9)}, .tol = CF_TOL_EXACT},
    {CF_OP_VIEWS, "view_2d with row padding (Qcur)", {INL(F32, PAD, 33, 7)}, .tol = CF_TOL_EXACT},
    {CF_OP_VIEWS, "view_3d padded", {INL(F32, PAD, 7, 5, 3)}, .tol = CF_TOL_EXACT},
    {CF_OP_VIEWS, "view_4d padded", {INL(F32, PAD, 7, 5, 3, 2)}, .tol = CF_TOL_EXACT},
    {CF_OP_VIEWS, "permute of a padded view", {INPP(F32, 0, 2, 1, 3, 7, 5, 3, 2)}, .tol = CF_TOL_EXACT},
    {CF_OP_VIEWS, "reshape_1d", {INL(F32, RESHAPE, 100)}, .tol = CF_TOL_EXACT},
    {CF_OP_VIEWS, "reshape_2d", {INL(F32, RESHAPE, 10, 10)}, .tol = CF_TOL_EXACT},
    {CF_OP_VIEWS, "reshape_3d", {INL(F32, RESHAPE, 5, 4, 5)}, .tol = CF_TOL_EXACT},
    {CF_OP_VIEWS, "reshape_4d", {INL(F32, RESHAPE, 3, 2, 4, 5)}, .tol = CF_TOL_EXACT},
    {CF_OP_VIEWS, "view_1d at an offset", {INL(F32, VIEW1D, 45)}, .tol = CF_TOL_EXACT},
    {CF_OP_VIEWS, "reshape_3d of view_1d (cache K)", {INL(F32, VIEW1D, 8, 4, 5)}, .tol = CF_TOL_EXACT},
    {CF_OP_VIEWS, "view_tensor", {INL(F32, VIEWT, 7, 5)}, .tol = CF_TOL_EXACT},
    {CF_OP_VIEWS, "f16 permute of a padded view", {INPP(F16, 1, 0, 2, 3, 9, 4, 3)}, .tol = CF_TOL_EXACT},

    /* CONT: any strides, same type; cont_Nd reshapes in the copy. */
    {RT_OP_CONT, "contiguous", {IN(F32, 33, 7, 3, 2)}, .tol = CF_TOL_EXACT},
    {RT_OP_CONT, "ne0 = 1 permuted", {INP(F32, 0, 2, 1, 3, 1, 5, 3)}, .tol = CF_TOL_EXACT},
    {RT_OP_CONT, "cont_2d of permute (final attention cont)", {INP(F32, 0, 2, 1, 3, 8, 3, 4)},
     .ne = {24, 4}, .tol = CF_TOL_EXACT},
    {RT_OP_CONT, "cont_3d of a padded view (Q)", {INL(F32, PAD, 12, 5)}, .ne = {4, 3, 5}, .tol = CF_TOL_EXACT},
    {RT_OP_CONT, "cont_3d of permute 1,2,0,3 (V_trans)", {INP(F32, 1, 2, 0, 3, 6, 4, 3)},
     .ne = {6, 4, 3}, .tol = CF_TOL_EXACT},
    {RT_OP_CONT, "cont_4d of transpose", {INL(F32, TRANS, 6, 4, 2)}, .ne = {3, 2, 4, 2}, .tol = CF_TOL_EXACT},
    {RT_OP_CONT, "f16 transposed", {INL(F16, TRANS, 33, 7)}, .tol = CF_TOL_EXACT},
    {RT_OP_CONT, "bf16 permuted", {INP(BF16, 0, 2, 1, 3, 100, 3, 2)}, .tol = CF_TOL_EXACT},
    {RT_OP_CONT, "q8_0 padded rows", {INL(Q8_0, PAD, 64, 5, 3)}, .tol = CF_TOL_EXACT},
    {RT_OP_CONT, "q4_0 padded rows", {INL(Q4_0, PAD, 32, 3)}, .tol = CF_TOL_EXACT},

    /* CPY: F32/F16/BF16 to each other, F32 to Q8_0/Q4_0; b in its own layout. */
    {RT_OP_CPY, "f32 -> f32, permuted src", {INP(F32, 0, 2, 1, 3, 7, 5, 3, 2), IN(F32, 7, 5, 3, 2)}, .tol = CF_TOL_EXACT},
    {RT_OP_CPY, "f32 -> f16, permuted src", {INP(F32, 0, 2, 1, 3, 7, 5, 3, 2), IN(F16, 7, 5, 3, 2)}, .tol = CF_TOL_EXACT},
    {RT_OP_CPY, "f32 -> bf16, permuted src", {INP(F32, 0, 2, 1, 3, 7, 5, 3, 2), IN(BF16, 7, 5, 3, 2)}, .tol = CF_TOL_EXACT},
    {RT_OP_CPY, "f16 -> f32, transposed src", {INL(F16, TRANS, 33, 7), IN(F32, 33, 7)}, .tol = CF_TOL_EXACT},
    {RT_OP_CPY, "f16 -> f16, transposed src", {INL(F16, TRANS, 33, 7), IN(F16, 33, 7)}, .tol = CF_TOL_EXACT},
    {RT_OP_CPY, "f16 -> bf16, transposed src", {INL(F16, TRANS, 33, 7), IN(BF16, 33, 7)}, .tol = CF_TOL_EXACT},
    {RT_OP_CPY, "bf16 -> f32, padded src", {INL(BF16, PAD, 7, 5, 3), IN(F32, 7, 5, 3)}, .tol = CF_TOL_EXACT},
    {RT_OP_CPY, "bf16 -> f16, padded src", {INL(BF16, PAD, 7, 5, 3), IN(F16, 7, 5, 3)}, .tol = CF_TOL_EXACT},
    {RT_OP_CPY, "bf16 -> bf16, padded src", {INL(BF16, PAD, 7, 5, 3), IN(BF16, 7, 5, 3)}, .tol = CF_TOL_EXACT},
    {RT_OP_CPY, "f32 -> f16 into a padded view (cache write)", {INL(F32, TRANS, 16, 3), INL(F16, PAD, 16, 3)},
     .tol = CF_TOL_EXACT},
    {RT_OP_CPY, "f32 -> f32 into view_1d of a cache", {INL(F32, PAD, 16, 3), INL(F32, VIEW1D, 48)}, .tol = CF_TOL_EXACT},
    {RT_OP_CPY, "f32 -> f32 into a permuted dst", {IN(F32, 7, 5, 3), INP(F32, 1, 0, 2, 3, 7, 5, 3)}, .tol = CF_TOL_EXACT},
    {RT_OP_CPY, "f16 -> bf16 reshaping copy", {INP(F16, 1, 0, 2, 3, 6, 4, 2), IN(BF16, 8, 6)}, .tol = CF_TOL_EXACT},
    {RT_OP_CPY, "ne0 = 1 f32 -> f16", {IN(F32, 1, 7), IN(F16, 1, 7)}, .tol = CF_TOL_EXACT},
    {RT_OP_CPY, "f32 -> q8_0", {IN(F32, 64, 3, 2), IN(Q8_0, 64, 3, 2)}, .tol = CF_TOL_EXACT},
    {RT_OP_CPY, "f32 -> q8_0, permuted src", {INP(F32, 0, 2, 1, 3, 64, 3, 2), IN(Q8_0, 64, 3, 2)}, .tol = CF_TOL_EXACT},
    {RT_OP_CPY, "f32 -> q4_0", {IN(F32, 96, 5), IN(Q4_0, 96, 5)}, .tol = CF_TOL_EXACT},
    {RT_OP_CPY, "f32 -> q4_0, padded src", {INL(F32, PAD, 32, 4, 2), IN(Q4_0, 32, 4, 2)}, .tol = CF_TOL_EXACT},
    {RT_OP_CPY, "cast f32 -> f16, transposed", {INL(F32, TRANS, 7, 5)}, .i = {RT_TYPE_F16}, .ext = true,
     .tol = CF_TOL_EXACT},
    {RT_OP_CPY, "cast bf16 -> f32", {IN(BF16, 33, 3)}, .i = {RT_TYPE_F32}, .ext = true, .tol = CF_TOL_EXACT},
    {RT_OP_CPY, "cast f32 -> q4_0", {IN(F32, 64, 2)}, .i = {RT_TYPE_Q4_0}, .ext = true, .tol = CF_TOL_EXACT},

    /* GET_ROWS: every source type, batched, strided a, ne0 = 1. */
    {RT_OP_GET_ROWS, "f32", {IN(F32, 7, 10), IDX(10, 5)}, .tol = CF_TOL_EXACT},
    {RT_OP_GET_ROWS, "f16", {IN(F16, 33, 10), IDX(10, 5)}, .tol = CF_TOL_EXACT},
    {RT_OP_GET_ROWS, "bf16", {IN(BF16, 100, 10), IDX(10, 5)}, .tol = CF_TOL_EXACT},
    {RT_OP_GET_ROWS, "q8_0", {IN(Q8_0, 64, 10), IDX(10, 5)}, .tol = CF_TOL_EXACT},
    {RT_OP_GET_ROWS, "q4_0", {IN(Q4_0, 64, 10), IDX(10, 5)}, .tol = CF_TOL_EXACT},
    {RT_OP_GET_ROWS, "f32 batched over dims 2, 3", {IN(F32, 7, 6, 3, 2), IDX(6, 4, 3, 2)}, .tol = CF_TOL_EXACT},
    {RT_OP_GET_ROWS, "q8_0 batched over dim 2", {IN(Q8_0, 32, 6, 3), IDX(6, 4, 3)}, .tol = CF_TOL_EXACT},
    {RT_OP_GET_ROWS, "f32 padded rows", {INL(F32, PAD, 33, 10), IDX(10, 7)}, .tol = CF_TOL_EXACT},
    {RT_OP_GET_ROWS, "q4_0 padded rows", {INL(Q4_0, PAD, 64, 10), IDX(10, 7)}, .tol = CF_TOL_EXACT},
    {RT_OP_GET_ROWS, "f16 permuted 0,2,1,3", {INP(F16, 0, 2, 1, 3, 16, 10, 3), IDX(10, 4, 3)}, .tol = CF_TOL_EXACT},
    {RT_OP_GET_ROWS, "ne0 = 1", {IN(F32, 1, 10), IDX(10, 7)}, .tol = CF_TOL_EXACT},
    CF_WEIGHT_TYPES(CF_GET_ROWS_CASES)
    /* 40 rows of 630 bytes: more than one binding when a device's is small (test-vulkan) */
    {RT_OP_GET_ROWS, "q6_k 40 rows", {IN(Q6_K, 768, 40), IDX(40, 4)}, .tol = CF_TOL_EXACT},

    /* ADD, SUB, MUL, DIV: b repeats into a in every dim; F16 where allowed. */
    {CF_OP_BINARY, "contiguous", {IN(F32, 33, 7, 3, 2), POS(F32, CONT, 33, 7, 3, 2)}, .tol = CF_TOL_F32},
    {CF_OP_BINARY, "b broadcast dim 0", {IN(F32, 33, 7, 3, 2), POS(F32, CONT, 1, 7, 3, 2)}, .tol = CF_TOL_F32},
    {CF_OP_BINARY, "b broadcast dim 1", {IN(F32, 33, 7, 3, 2), POS(F32, CONT, 33, 1, 3, 2)}, .tol = CF_TOL_F32},
    {CF_OP_BINARY, "b broadcast dim 2", {IN(F32, 33, 7, 3, 2), POS(F32, CONT, 33, 7, 1, 2)}, .tol = CF_TOL_F32},
    {CF_OP_BINARY, "b broadcast dim 3", {IN(F32, 33, 7, 3, 2), POS(F32, CONT, 33, 7, 3, 1)}, .tol = CF_TOL_F32},
    {CF_OP_BINARY, "b a row (bias)", {IN(F32, 100, 7, 3), POS(F32, CONT, 100)}, .tol = CF_TOL_F32},
    {CF_OP_BINARY, "b tiled (a->ne % b->ne == 0)", {IN(F32, 6, 4, 2, 3), POS(F32, CONT, 3, 2, 1, 3)}, .tol = CF_TOL_F32},
    {CF_OP_BINARY, "a permuted, b transposed", {INP(F32, 0, 2, 1, 3, 7, 5, 3, 2), POS(F32, TRANS, 7, 5, 3, 2)},
     .tol = CF_TOL_F32},
    {CF_OP_BINARY, "a padded view, b broadcast", {INL(F32, PAD, 100, 3, 2), POS(F32, CONT, 100, 1, 2)}, .tol = CF_TOL_F32},
    {CF_OP_BINARY, "a from a cache view, b broadcast", {INL(F32, VIEW1D, 16, 4, 3), POS(F32, CONT, 16, 4)},
     .tol = CF_TOL_F32},
    {CF_OP_BINARY, "ne0 = 1", {IN(F32, 1, 5, 3), POS(F32, CONT, 1, 5, 3)}, .tol = CF_TOL_F32},
    {CF_OP_BINARY, "f16 contiguous", {IN(F16, 33, 7, 3), POS(F16, CONT, 33, 7, 3)}, .tol = CF_TOL_F16},
    {CF_OP_BINARY, "f16 a transposed, b broadcast", {INL(F16, TRANS, 7, 5, 2), POS(F16, CONT, 7, 1, 2)},
     .tol = CF_TOL_F16},

    /* SCALE */
    {RT_OP_SCALE, "contiguous", {IN(F32, 33, 7, 3, 2)}, .f = {0.37f}, .tol = CF_TOL_F32},
    {RT_OP_SCALE, "transposed", {INL(F32, TRANS, 7, 5, 3)}, .f = {-2.5f}, .tol = CF_TOL_F32},
    {RT_OP_SCALE, "padded view", {INL(F32, PAD, 100, 3)}, .f = {1.5f}, .tol = CF_TOL_F32},
    {RT_OP_SCALE, "ne0 = 1", {IN(F32, 1, 7)}, .f = {3.0f}, .tol = CF_TOL_F32},
    {RT_OP_SCALE, "f16 contiguous", {IN(F16, 33, 7)}, .f = {0.5f}, .tol = CF_TOL_F16},
    {RT_OP_SCALE, "f16 permuted", {INP(F16, 0, 2, 1, 3, 7, 5, 3)}, .f = {-0.3f}, .tol = CF_TOL_F16},

    /* NORM and RMS_NORM: per row; rows contiguous, dims 1-3 any strides. */
    {CF_OP_ROWNORM, "contiguous", {IN(F32, 33, 7, 3, 2)}, .f = {1e-5f}, .tol = CF_TOL_F32},
    {CF_OP_ROWNORM, "ne0 = 100", {IN(F32, 100, 3)}, .f = {1e-6f}, .tol = CF_TOL_F32},
    {CF_OP_ROWNORM, "ne0 = 7", {IN(F32, 7, 5)}, .f = {1e-5f}, .tol = CF_TOL_F32},
    {CF_OP_ROWNORM, "ne0 = 1", {IN(F32, 1, 5)}, .f = {1e-5f}, .tol = CF_TOL_F32},
    {CF_OP_ROWNORM, "padded view", {INL(F32, PAD, 7, 5, 3)}, .f = {1e-5f}, .tol = CF_TOL_F32},
    {CF_OP_ROWNORM, "permuted 0,2,1,3", {INP(F32, 0, 2, 1, 3, 33, 5, 3)}, .f = {1e-4f}, .tol = CF_TOL_F32},

    /* MUL_MAT: c = b . a^T; a F32/F16/BF16/Q8_0/Q4_0, broadcast over b's dims 2, 3. */
    {RT_OP_MUL_MAT, "f32 K = 37", {IN(F32, 37, 11), IN(F32, 37, 5)}, .tol = CF_TOL_DOT},
    {RT_OP_MUL_MAT, "f32 K = 1", {IN(F32, 1, 7), IN(F32, 1, 3)}, .tol = CF_TOL_DOT},
    {RT_OP_MUL_MAT, "f32 matrix-vector K = 256", {IN(F32, 256, 33), IN(F32, 256, 1)}, .tol = CF_TOL_DOT},
    {RT_OP_MUL_MAT, "f32 K = 100 N = 33", {IN(F32, 100, 17), IN(F32, 100, 33)}, .tol = CF_TOL_DOT},
    {RT_OP_MUL_MAT, "f32 K = 7", {IN(F32, 7, 64), IN(F32, 7, 48)}, .tol = CF_TOL_DOT},
    {RT_OP_MUL_MAT, "f32 K = 512 64x48", {IN(F32, 512, 64), IN(F32, 512, 48)}, .tol = CF_TOL_DOT},
    {RT_OP_MUL_MAT, "q8_0 K = 512 64x48", {IN(Q8_0, 512, 64), IN(F32, 512, 48)}, .tol = CF_TOL_DOT},
    {RT_OP_MUL_MAT, "f32 a broadcast over dims 2, 3", {IN(F32, 32, 9, 2, 3), IN(F32, 32, 5, 4, 6)}, .tol = CF_TOL_DOT},
    {RT_OP_MUL_MAT, "attention's permuted K and Q", {INP(F32, 0, 2, 1, 3, 16, 10, 4), INP(F32, 0, 2, 1, 3, 16, 6, 4)},
     .tol = CF_TOL_DOT},
    {RT_OP_MUL_MAT, "padded a and b", {INL(F32, PAD, 33, 7, 2), INL(F32, PAD, 33, 5, 2)}, .tol = CF_TOL_DOT},
    {RT_OP_MUL_MAT, "a broadcast, b permuted", {IN(F32, 32, 9, 2), INP(F32, 0, 2, 1, 3, 32, 5, 4)}, .tol = CF_TOL_DOT},
    {RT_OP_MUL_MAT, "f16 a, broadcast", {IN(F16, 64, 13, 2), IN(F32, 64, 7, 4)}, .tol = CF_TOL_DOT},
    {RT_OP_MUL_MAT, "f16 a padded, K = 33", {INL(F16, PAD, 33, 9), IN(F32, 33, 4)}, .tol = CF_TOL_DOT},
    {RT_OP_MUL_MAT, "bf16 a", {IN(BF16, 64, 13, 2), IN(F32, 64, 7, 2)}, .tol = CF_TOL_DOT},
    {RT_OP_MUL_MAT, "q8_0 a, broadcast", {IN(Q8_0, 64, 13, 2), IN(F32, 64, 7, 4)}, .tol = CF_TOL_DOT},
    {RT_OP_MUL_MAT, "q8_0 matrix-vector K = 256", {IN(Q8_0, 256, 33), IN(F32, 256, 1)}, .tol = CF_TOL_DOT},
    /* 18 KiB of a: in chunks of rows under test-vulkan's binding limit */
    {RT_OP_MUL_MAT, "q8_0 K = 256, M = 67, N = 3", {IN(Q8_0, 256, 67), IN(F32, 256, 3)}, .tol = CF_TOL_DOT},
    {RT_OP_MUL_MAT, "q8_0 a padded rows", {INL(Q8_0, PAD, 64, 9, 2), IN(F32, 64, 5, 2)}, .tol = CF_TOL_DOT},
    {RT_OP_MUL_MAT, "q4_0 a, broadcast", {IN(Q4_0, 64, 13, 2), IN(F32, 64, 7, 4)}, .tol = CF_TOL_DOT},
    {RT_OP_MUL_MAT, "q4_0 K = 256 N = 33", {IN(Q4_0, 256, 17), IN(F32, 256, 33)}, .tol = CF_TOL_DOT},
    {RT_OP_MUL_MAT, "q4_0 a permuted 0,2,1,3", {INP(Q4_0, 0, 2, 1, 3, 32, 9, 3), IN(F32, 32, 5, 3)}, .tol = CF_TOL_DOT},
    /* N > 8: the blocked path, b read in place through its strides */
    {RT_OP_MUL_MAT, "permuted K and Q, N = 20", {INP(F32, 0, 2, 1, 3, 16, 10, 4), INP(F32, 0, 2, 1, 3, 16, 20, 4)},
     .tol = CF_TOL_DOT},
    {RT_OP_MUL_MAT, "f32 M = 400 (several work items), padded b", {IN(F32, 64, 400), INL(F32, PAD, 64, 20)},
     .tol = CF_TOL_DOT},
    {RT_OP_MUL_MAT, "bf16 K = 544 (two depth blocks)", {IN(BF16, 544, 50), IN(F32, 544, 17)}, .tol = CF_TOL_DOT},
    {RT_OP_MUL_MAT, "q8_0 a, permuted b, N = 12", {IN(Q8_0, 64, 13, 3), INP(F32, 0, 2, 1, 3, 64, 12, 3)},
     .tol = CF_TOL_DOT},
    {RT_OP_MUL_MAT, "q4_0 K = 96 (odd blocks), N = 3", {IN(Q4_0, 96, 21), IN(F32, 96, 3)}, .tol = CF_TOL_DOT},
    /* small batches, N = 16 and 32, with b's rows padded */
    {RT_OP_MUL_MAT, "f32 N = 32, padded b", {IN(F32, 80, 21), INL(F32, PAD, 80, 32)}, .tol = CF_TOL_DOT},
    {RT_OP_MUL_MAT, "f16 N = 32, padded b", {IN(F16, 96, 21), INL(F32, PAD, 96, 32)}, .tol = CF_TOL_DOT},
    {RT_OP_MUL_MAT, "bf16 N = 16, padded b", {IN(BF16, 96, 21), INL(F32, PAD, 96, 16)}, .tol = CF_TOL_DOT},
    {RT_OP_MUL_MAT, "q8_0 N = 32, padded b", {IN(Q8_0, 96, 21), INL(F32, PAD, 96, 32)}, .tol = CF_TOL_DOT},
    {RT_OP_MUL_MAT, "q4_0 N = 16, padded b", {IN(Q4_0, 160, 21), INL(F32, PAD, 160, 16)}, .tol = CF_TOL_DOT},
    CF_WEIGHT_TYPES(CF_MUL_MAT_CASES)

    /* SOFT_MAX: with and without mask (F32 and F16), mask broadcast, scale. */
    {RT_OP_SOFT_MAX, "no mask (rt_soft_max)", {IN(F32, 33, 7, 3, 2)}, .tol = CF_TOL_F32},
    {RT_OP_SOFT_MAX, "no mask, scale 0.25", {IN(F32, 33, 7, 3)}, .f = {0.25f}, .ext = true, .tol = CF_TOL_F32},
    {RT_OP_SOFT_MAX, "f32 causal mask over dims 2, 3", {IN(F32, 33, 7, 3, 2), INF(F32, CAUSAL, 33, 7)},
     .f = {0.5f}, .ext = true, .tol = CF_TOL_F32},
    {RT_OP_SOFT_MAX, "f16 mask with more rows, broadcast over dim 3",
     {IN(F32, 33, 7, 3, 2), INF(F16, CAUSAL, 33, 9, 3)}, .f = {0.125f}, .ext = true, .tol = CF_TOL_F32},
    {RT_OP_SOFT_MAX, "f32 mask broadcast over dim 2", {IN(F32, 16, 5, 3, 2), INF(F32, CAUSAL, 16, 5, 1, 2)},
     .f = {1.0f}, .ext = true, .tol = CF_TOL_F32},
    {RT_OP_SOFT_MAX, "ne0 = 100, random f16 mask", {IN(F32, 100, 3), IN(F16, 100, 3)}, .f = {2.0f}, .ext = true,
     .tol = CF_TOL_F32},
    {RT_OP_SOFT_MAX, "padded a", {INL(F32, PAD, 7, 5, 3), INF(F32, CAUSAL, 7, 5)}, .f = {1.0f}, .ext = true,
     .tol = CF_TOL_F32},
    {RT_OP_SOFT_MAX, "ne0 = 1", {IN(F32, 1, 5)}, .tol = CF_TOL_F32},

    /* DIAG_MASK_INF */
    {RT_OP_DIAG_MASK_INF, "n_past 0", {IN(F32, 7, 5, 3)}, .i = {0}, .tol = CF_TOL_EXACT},
    {RT_OP_DIAG_MASK_INF, "n_past 3, 4-d", {IN(F32, 10, 4, 2, 2)}, .i = {3}, .tol = CF_TOL_EXACT},
    {RT_OP_DIAG_MASK_INF, "square 33", {IN(F32, 33, 33)}, .i = {0}, .tol = CF_TOL_EXACT},
    {RT_OP_DIAG_MASK_INF, "ne0 = 1", {IN(F32, 1, 3)}, .i = {0}, .tol = CF_TOL_EXACT},
    {RT_OP_DIAG_MASK_INF, "padded view", {INL(F32, PAD, 9, 4, 2)}, .i = {2}, .tol = CF_TOL_EXACT},

    /* GELU, SILU and TANH */
    {CF_OP_ACT, "contiguous", {INF(F32, WIDE, 33, 7, 3, 2)}, .tol = CF_TOL_F32},
    {CF_OP_ACT, "transposed", {{.type = RT_TYPE_F32, .layout = CF_LAY_TRANS, .fill = CF_FILL_WIDE, .ne = {7, 5, 3}}},
     .tol = CF_TOL_F32},
    {CF_OP_ACT, "padded view", {INL(F32, PAD, 100, 3)}, .tol = CF_TOL_F32},
    {CF_OP_ACT, "ne0 = 1", {INF(F32, WIDE, 1, 7)}, .tol = CF_TOL_F32},
    {CF_OP_ACT, "f16 contiguous", {INF(F16, WIDE, 33, 7)}, .tol = CF_TOL_F16},
    {CF_OP_ACT, "f16 transposed", {INL(F16, TRANS, 7, 5)}, .tol = CF_TOL_F16},

    /* SWIGLU */
    {RT_OP_SWIGLU, "contiguous", {INF(F32, WIDE, 33, 7, 3), IN(F32, 33, 7, 3)}, .tol = CF_TOL_F32},
    {RT_OP_SWIGLU, "a permuted", {INP(F32, 0, 2, 1, 3, 7, 5, 3), IN(F32, 7, 5, 3)}, .tol = CF_TOL_F32},
    {RT_OP_SWIGLU, "a padded, b transposed", {INL(F32, PAD, 7, 5), INL(F32, TRANS, 7, 5)}, .tol = CF_TOL_F32},
    {RT_OP_SWIGLU, "ne0 = 1", {IN(F32, 1, 7), IN(F32, 1, 7)}, .tol = CF_TOL_F32},
    {RT_OP_SWIGLU, "f16", {INF(F16, WIDE, 100, 3), IN(F16, 100, 3)}, .tol = CF_TOL_F16},

    /* ROPE: normal and neox, n_dims < head_dim, freq_base/freq_scale, F16. */
    {RT_OP_ROPE, "normal", {IN(F32, 16, 4, 5), IDX(32, 5)}, .i = {16, RT_ROPE_MODE_NORMAL}, .tol = CF_TOL_DOT},
    {RT_OP_ROPE, "neox", {IN(F32, 16, 4, 5), IDX(32, 5)}, .i = {16, RT_ROPE_MODE_NEOX}, .tol = CF_TOL_DOT},
    {RT_OP_ROPE, "normal n_dims 8 < head_dim 16", {IN(F32, 16, 3, 5), IDX(32, 5)},
     .i = {8, RT_ROPE_MODE_NORMAL}, .tol = CF_TOL_DOT},
    {RT_OP_ROPE, "neox n_dims 6 < head_dim 10", {IN(F32, 10, 3, 4), IDX(32, 4)},
     .i = {6, RT_ROPE_MODE_NEOX}, .tol = CF_TOL_DOT},
    {RT_OP_ROPE, "normal base 500 scale 0.25, 4-d", {IN(F32, 8, 3, 6, 2), IDX(32, 6)},
     .i = {8, RT_ROPE_MODE_NORMAL}, .f = {500.0f, 0.25f}, .ext = true, .tol = CF_TOL_DOT},
    {RT_OP_ROPE, "neox base 1e6 scale 2", {IN(F32, 32, 2, 3), IDX(32, 3)},
     .i = {32, RT_ROPE_MODE_NEOX}, .f = {1e6f, 2.0f}, .ext = true, .tol = CF_TOL_DOT},
    {RT_OP_ROPE, "normal padded view (fused QKV)", {INL(F32, PAD, 16, 4, 5), IDX(32, 5)},
     .i = {16, RT_ROPE_MODE_NORMAL}, .tol = CF_TOL_DOT},
    {RT_OP_ROPE, "f16 normal", {IN(F16, 16, 4, 5), IDX(32, 5)}, .i = {16, RT_ROPE_MODE_NORMAL}, .tol = CF_TOL_F16},
    {RT_OP_ROPE, "f16 neox n_dims 8", {IN(F16, 16, 4, 5), IDX(32, 5)}, .i = {8, RT_ROPE_MODE_NEOX},
     .tol = CF_TOL_F16},

    /* ARGMAX */
    {RT_OP_ARGMAX, "4-d", {IN(F32, 33, 7, 3, 2)}, .tol = CF_TOL_EXACT},
    {RT_OP_ARGMAX, "ne0 = 100", {IN(F32, 100, 3)}, .tol = CF_TOL_EXACT},
    {RT_OP_ARGMAX, "ne0 = 1", {IN(F32, 1, 5)}, .tol = CF_TOL_EXACT},
    {RT_OP_ARGMAX, "ties: the first wins", {INF(F32, TIES, 16, 9)}, .tol = CF_TOL_EXACT},
    {RT_OP_ARGMAX, "padded view", {INL(F32, PAD, 7, 5, 3)}, .tol = CF_TOL_EXACT},

    /* SET_ROWS: into F32/F16/BF16, batched, b strided, one-element rows (the
       transposed V cache); rows not named keep their bytes. */
    {RT_OP_SET_ROWS, "f32", {IN(F32, 7, 10), IN(F32, 7, 4), DIST(10, 4)}, .tol = CF_TOL_EXACT},
    {RT_OP_SET_ROWS, "into f16", {IN(F16, 33, 10), IN(F32, 33, 5), DIST(10, 5)}, .tol = CF_TOL_EXACT},
    {RT_OP_SET_ROWS, "into bf16", {IN(BF16, 100, 9), IN(F32, 100, 9), DIST(9, 9)}, .tol = CF_TOL_EXACT},
    {RT_OP_SET_ROWS, "batched over dims 2, 3", {IN(F32, 7, 6, 3, 2), IN(F32, 7, 4, 3, 2), DIST(6, 4, 3, 2)},
     .tol = CF_TOL_EXACT},
    {RT_OP_SET_ROWS, "b permuted 0,2,1,3", {IN(F16, 16, 10, 3), INP(F32, 0, 2, 1, 3, 16, 4, 3), DIST(10, 4, 3)},
     .tol = CF_TOL_EXACT},
    {RT_OP_SET_ROWS, "into a padded view", {INL(F32, PAD, 33, 10), IN(F32, 33, 3), DIST(10, 3)}, .tol = CF_TOL_EXACT},
    {RT_OP_SET_ROWS, "one-element rows (V cache)", {IN(F16, 1, 300), IN(F32, 1, 64), DIST(300, 64)},
     .tol = CF_TOL_EXACT},
    {RT_OP_SET_ROWS, "into a transposed a (columns: the V cache)", {INL(F16, TRANS, 16, 40), IN(F32, 16, 5), DIST(40, 5)},
     .tol = CF_TOL_EXACT},
    {RT_OP_SET_ROWS, "transposed a, 130 rows (runs of 64 and a tail)",
     {INL(F32, TRANS, 8, 300), INP(F32, 1, 0, 2, 3, 8, 130), DIST(300, 130)}, .tol = CF_TOL_EXACT},

    /* Larger and other-strided shapes: rows of 1000 and 4096, thousands of
       one-element SET_ROWS rows, padded and permuted destinations, every
       layout as b. "perm" is permute 0,2,1,3 (dims 1 and 2 swapped). */
    {RT_OP_CONT, "perm 10x7x3x2", {INP(F32, 0, 2, 1, 3, 10, 7, 3, 2)}, .tol = CF_TOL_EXACT},
    {RT_OP_CONT, "transposed 10x7x3x2", {INL(F32, TRANS, 10, 7, 3, 2)}, .tol = CF_TOL_EXACT},
    {RT_OP_CONT, "f16 padded 33x5x4", {INL(F16, PAD, 33, 5, 4)}, .tol = CF_TOL_EXACT},
    {RT_OP_CONT, "bf16 transposed 8x9x2x3", {INL(BF16, TRANS, 8, 9, 2, 3)}, .tol = CF_TOL_EXACT},
    {RT_OP_CONT, "cont_2d 30x12 of perm 12x6x5", {INP(F32, 0, 2, 1, 3, 12, 6, 5)}, .ne = {30, 12},
     .tol = CF_TOL_EXACT},
    {RT_OP_CPY, "f32 -> f16 64x5x3", {IN(F32, 64, 5, 3), IN(F16, 64, 5, 3)}, .tol = CF_TOL_EXACT},
    {RT_OP_CPY, "f16 transposed -> f32", {INL(F16, TRANS, 64, 5, 3), IN(F32, 64, 5, 3)}, .tol = CF_TOL_EXACT},
    {RT_OP_CPY, "f32 padded -> bf16 perm", {INL(F32, PAD, 31, 7, 2, 2), INP(BF16, 0, 2, 1, 3, 31, 7, 2, 2)},
     .tol = CF_TOL_EXACT},
    {RT_OP_CPY, "bf16 -> f16 transposed", {IN(BF16, 31, 7, 2, 2), INL(F16, TRANS, 31, 7, 2, 2)},
     .tol = CF_TOL_EXACT},
    {RT_OP_CPY, "f32 transposed -> f32 padded", {INL(F32, TRANS, 17, 9, 4), INL(F32, PAD, 17, 9, 4)},
     .tol = CF_TOL_EXACT},
    {RT_OP_CPY, "f32 -> q8_0 128x6x2", {IN(F32, 128, 6, 2), IN(Q8_0, 128, 6, 2)}, .tol = CF_TOL_EXACT},
    {RT_OP_CPY, "f32 perm -> q4_0 64x7x3", {INP(F32, 0, 2, 1, 3, 64, 7, 3), IN(Q4_0, 64, 7, 3)},
     .tol = CF_TOL_EXACT},
    {RT_OP_GET_ROWS, "f32 20x9", {IN(F32, 20, 9), IDX(9, 6)}, .tol = CF_TOL_EXACT},
    {RT_OP_GET_ROWS, "f16 padded, batched 20x9x3x2", {INL(F16, PAD, 20, 9, 3, 2), IDX(9, 5, 3, 2)},
     .tol = CF_TOL_EXACT},
    {RT_OP_GET_ROWS, "bf16 16x7", {IN(BF16, 16, 7), IDX(7, 4)}, .tol = CF_TOL_EXACT},
    {RT_OP_GET_ROWS, "q8_0 batched 64x10x2", {IN(Q8_0, 64, 10, 2), IDX(10, 7, 2)}, .tol = CF_TOL_EXACT},
    {RT_OP_GET_ROWS, "q4_0 perm 96x10", {INP(Q4_0, 0, 2, 1, 3, 96, 10), IDX(10, 7)}, .tol = CF_TOL_EXACT},
    {RT_OP_SET_ROWS, "f32 rows of 64", {IN(F32, 64, 20), IN(F32, 64, 7), DIST(20, 7)}, .tol = CF_TOL_EXACT},
    {RT_OP_SET_ROWS, "into f16, b perm, batched", {IN(F16, 64, 16, 3, 2), INP(F32, 0, 2, 1, 3, 64, 5, 3, 2),
     DIST(16, 5, 3, 2)}, .tol = CF_TOL_EXACT},
    {RT_OP_SET_ROWS, "into bf16, b transposed", {IN(BF16, 64, 12, 2), INL(F32, TRANS, 64, 12, 2), DIST(12, 12, 2)},
     .tol = CF_TOL_EXACT},
    {RT_OP_SET_ROWS, "padded a and b", {INL(F32, PAD, 33, 10, 2), INL(F32, PAD, 33, 4, 2), DIST(10, 4, 2)},
     .tol = CF_TOL_EXACT},
    {RT_OP_SET_ROWS, "into f16, 3000 one-element rows", {IN(F16, 1, 8192), IN(F32, 1, 3000), DIST(8192, 3000)},
     .tol = CF_TOL_EXACT},
    {RT_OP_SET_ROWS, "2500 one-element rows, b transposed", {IN(F32, 1, 4096), INL(F32, TRANS, 1, 2500),
     DIST(4096, 2500)}, .tol = CF_TOL_EXACT},
    {RT_OP_SET_ROWS, "into bf16, 2048 one-element rows, b perm", {IN(BF16, 1, 5000, 2),
     INP(F32, 0, 2, 1, 3, 1, 2048, 2), DIST(5000, 2048, 2)}, .tol = CF_TOL_EXACT},
    {RT_OP_SET_ROWS, "into a transposed f16 a, 40 columns", {INL(F16, TRANS, 64, 300), IN(F32, 64, 40),
     DIST(300, 40)}, .tol = CF_TOL_EXACT},
    {RT_OP_SET_ROWS, "into a transposed a, 700 columns, b perm", {INL(F32, TRANS, 32, 1000),
     INP(F32, 0, 2, 1, 3, 32, 700), DIST(1000, 700)}, .tol = CF_TOL_EXACT},
    {RT_OP_ADD, "16x5x4x3", {IN(F32, 16, 5, 4, 3), IN(F32, 16, 5, 4, 3)}, .tol = CF_TOL_F32},
    {RT_OP_ADD, "a perm, b broadcast dims 1, 3", {INP(F32, 0, 2, 1, 3, 16, 5, 4, 3), IN(F32, 16, 1, 4, 1)},
     .tol = CF_TOL_F32},
    {RT_OP_ADD, "f16, b broadcast dims 0, 2", {IN(F16, 16, 5, 4, 3), IN(F16, 1, 5, 1, 3)}, .tol = CF_TOL_F16},
    {RT_OP_SUB, "a transposed, b a padded row", {INL(F32, TRANS, 7, 6, 5, 4), INL(F32, PAD, 7)}, .tol = CF_TOL_F32},
    {RT_OP_SUB, "f16 a padded, b transposed", {INL(F16, PAD, 32, 8), INL(F16, TRANS, 32, 8)}, .tol = CF_TOL_F16},
    {RT_OP_MUL, "b a row", {IN(F32, 64, 10, 2), IN(F32, 64)}, .tol = CF_TOL_F32},
    {RT_OP_MUL, "f16 a perm, b broadcast dim 2", {INP(F16, 0, 2, 1, 3, 10, 10, 3, 2), IN(F16, 10, 10, 1, 2)},
     .tol = CF_TOL_F16},
    {RT_OP_DIV, "b perm, broadcast dim 3", {IN(F32, 33, 3, 2, 2), {.type = RT_TYPE_F32, .layout = CF_LAY_PERM, .fill = CF_FILL_POS, .axes = {0, 2, 1, 3},
     .ne = {33, 3, 2}}}, .tol = CF_TOL_F32},
    {RT_OP_DIV, "f16, b a column", {IN(F16, 16, 4), POS(F16, CONT, 1, 4)}, .tol = CF_TOL_F16},
    {RT_OP_SCALE, "perm", {INP(F32, 0, 2, 1, 3, 25, 6, 2)}, .f = {0.3f}, .tol = CF_TOL_F32},
    {RT_OP_SCALE, "f16 25x6x2", {IN(F16, 25, 6, 2)}, .f = {-2.5f}, .tol = CF_TOL_F16},
    {RT_OP_GELU, "100x8", {IN(F32, 100, 8)}, .tol = CF_TOL_F32},
    {RT_OP_GELU, "f16 transposed", {INL(F16, TRANS, 50, 7, 3)}, .tol = CF_TOL_F16},
    {RT_OP_SILU, "padded 100x8", {INL(F32, PAD, 100, 8)}, .tol = CF_TOL_F32},
    {RT_OP_SILU, "f16 50x7x3", {IN(F16, 50, 7, 3)}, .tol = CF_TOL_F16},
    {RT_OP_TANH, "100x8", {IN(F32, 100, 8)}, .tol = CF_TOL_F32},
    {RT_OP_TANH, "f16 perm", {INP(F16, 0, 2, 1, 3, 25, 6, 2)}, .tol = CF_TOL_F16},
    {RT_OP_SWIGLU, "b perm", {IN(F32, 64, 9, 2), INP(F32, 0, 2, 1, 3, 64, 9, 2)}, .tol = CF_TOL_F32},
    {RT_OP_SWIGLU, "f16 a padded", {INL(F16, PAD, 64, 9, 2), IN(F16, 64, 9, 2)}, .tol = CF_TOL_F16},
    {RT_OP_DIAG_MASK_INF, "square 10, batched", {IN(F32, 10, 10, 3)}, .i = {0}, .tol = CF_TOL_EXACT},
    {RT_OP_DIAG_MASK_INF, "perm, n_past 7", {INP(F32, 0, 2, 1, 3, 12, 5, 2, 2)}, .i = {7}, .tol = CF_TOL_EXACT},
    {RT_OP_NORM, "64x10x3", {IN(F32, 64, 10, 3)}, .f = {1e-5f}, .tol = CF_TOL_DOT},
    {RT_OP_NORM, "ne0 = 1000, perm", {INP(F32, 0, 2, 1, 3, 1000, 3, 2)}, .f = {1e-6f}, .tol = CF_TOL_DOT},
    {RT_OP_RMS_NORM, "64x10x3", {IN(F32, 64, 10, 3)}, .f = {1e-6f}, .tol = CF_TOL_DOT},
    {RT_OP_RMS_NORM, "ne0 = 4096, padded", {INL(F32, PAD, 4096, 2)}, .f = {1e-5f}, .tol = CF_TOL_DOT},
    {RT_OP_RMS_NORM, "transposed", {INL(F32, TRANS, 17, 5, 2, 3)}, .f = {1e-6f}, .tol = CF_TOL_DOT},
    {RT_OP_SOFT_MAX, "32x8x4", {IN(F32, 32, 8, 4)}, .f = {1.0f}, .ext = true, .tol = CF_TOL_F32},
    {RT_OP_SOFT_MAX, "a perm, mask with more rows", {INP(F32, 0, 2, 1, 3, 40, 8, 4, 2), IN(F32, 40, 9)},
     .f = {0.125f}, .ext = true, .tol = CF_TOL_F32},
    {RT_OP_SOFT_MAX, "ne0 = 300, padded f16 mask", {IN(F32, 300, 5, 2), INL(F16, PAD, 300, 5, 2)}, .f = {0.5f},
     .ext = true, .tol = CF_TOL_F32},
    {RT_OP_ARGMAX, "100x20", {IN(F32, 100, 20)}, .tol = CF_TOL_EXACT},
    {RT_OP_ARGMAX, "ne0 = 5000, perm", {INP(F32, 0, 2, 1, 3, 5000, 3, 2)}, .tol = CF_TOL_EXACT},
    {RT_OP_ROPE, "normal 64x4x6, positions < 64", {IN(F32, 64, 4, 6), IDX(64, 6)}, .i = {64, RT_ROPE_MODE_NORMAL},
     .tol = CF_TOL_DOT},
    {RT_OP_ROPE, "neox n_dims 32 of 64, perm", {INP(F32, 0, 2, 1, 3, 64, 4, 6), IDX(64, 6)},
     .i = {32, RT_ROPE_MODE_NEOX}, .tol = CF_TOL_DOT},
    {RT_OP_ROPE, "f16 neox n_dims 24, base 5e5 scale 0.5, 4-d", {IN(F16, 32, 2, 5, 2), IDX(64, 5)},
     .i = {24, RT_ROPE_MODE_NEOX}, .f = {500000.0f, 0.5f}, .ext = true, .tol = CF_TOL_F16},
    {RT_OP_ROPE, "normal n_dims 16 of 18, padded", {INL(F32, PAD, 18, 3, 4), IDX(64, 4)},
     .i = {16, RT_ROPE_MODE_NORMAL}, .tol = CF_TOL_DOT},
    {RT_OP_MUL_MAT, "f32 matrix-vector K = 64", {IN(F32, 64, 16), IN(F32, 64, 1)}, .tol = CF_TOL_DOT},
    {RT_OP_MUL_MAT, "f32 K = 67, broadcast over dim 3", {IN(F32, 67, 13, 3), IN(F32, 67, 9, 3, 2)},
     .tol = CF_TOL_DOT},
    {RT_OP_MUL_MAT, "f32 a and b perm, broadcast", {INP(F32, 0, 2, 1, 3, 32, 12, 2, 2),
     INP(F32, 0, 2, 1, 3, 32, 5, 6, 2)}, .tol = CF_TOL_DOT},
    {RT_OP_MUL_MAT, "f32 a and b padded, 3-d", {INL(F32, PAD, 40, 8, 4), INL(F32, PAD, 40, 10, 4)},
     .tol = CF_TOL_DOT},
    {RT_OP_MUL_MAT, "f16 matrix-vector K = 128", {IN(F16, 128, 32), IN(F32, 128, 1)}, .tol = CF_TOL_DOT},
    {RT_OP_MUL_MAT, "f16 a perm, broadcast", {INP(F16, 0, 2, 1, 3, 64, 20, 2), IN(F32, 64, 17, 4)},
     .tol = CF_TOL_DOT},
    {RT_OP_MUL_MAT, "bf16 64x16, N = 7", {IN(BF16, 64, 16), IN(F32, 64, 7)}, .tol = CF_TOL_DOT},
    {RT_OP_MUL_MAT, "q8_0 matrix-vector K = 256, M = 16", {IN(Q8_0, 256, 16), IN(F32, 256, 1)}, .tol = CF_TOL_DOT},
    {RT_OP_MUL_MAT, "q8_0 a, b perm, broadcast over dim 3", {IN(Q8_0, 128, 24, 2),
     INP(F32, 0, 2, 1, 3, 128, 11, 2, 3)}, .tol = CF_TOL_DOT},
    {RT_OP_MUL_MAT, "q4_0 matrix-vector K = 256, M = 16", {IN(Q4_0, 256, 16), IN(F32, 256, 1)}, .tol = CF_TOL_DOT},
    {RT_OP_MUL_MAT, "q4_0 a padded, broadcast over dim 2", {INL(Q4_0, PAD, 64, 9, 1, 2), IN(F32, 64, 33, 3, 2)},
     .tol = CF_TOL_DOT},
    /* FLASH_ATTN with few queries over many keys, which a device may split
       across its threads and merge: a query that sees nothing, and key
       ranges that no query sees (the mask's -inf beyond i1 + 2). */
    {RT_OP_FLASH_ATTN, "f16 cache, 6 heads over 2, 600 keys, a query that sees nothing",
     {INP(F32, 0, 2, 1, 3, 64, 4, 6), INP(F16, 0, 2, 1, 3, 64, 600, 2), INP(F16, 0, 2, 1, 3, 64, 600, 2),
      INF(F16, CAUSAL0, 600, 4)}, .f = {0.125f, 0.0f}, .tol = CF_TOL_DOT},
    /* A decode step of 4 sequences whose cache rows come in runs of 64: a
       device may skip the runs a query does not see, if it keeps apart
       the queries that see different ones. */
    {RT_OP_FLASH_ATTN, "f32 cache, 4 sequences' decode step, runs of 64 keys, 9 heads over 3, 700 keys",
     {INP(F32, 0, 2, 1, 3, 64, 4, 9), INP(F32, 0, 2, 1, 3, 64, 700, 3), INP(F32, 0, 2, 1, 3, 64, 700, 3),
      INF(F32, SEQRUNS, 700, 4)}, .f = {0.125f, 0.0f}, .tol = CF_TOL_DOT},
    {RT_OP_FLASH_ATTN, "f16 cache, 4 sequences' decode step, runs of 64 keys, 4 heads over 4, 300 keys",
     {INP(F32, 0, 2, 1, 3, 64, 4, 4), INP(F16, 0, 2, 1, 3, 64, 300, 4), INP(F16, 0, 2, 1, 3, 64, 300, 4),
      INF(F16, SEQRUNS, 300, 4)}, .f = {0.125f, 0.0f}, .tol = CF_TOL_DOT},
    {RT_OP_FLASH_ATTN, "f32 cache, decode, 9 heads over 3, 1000 keys, no mask",
     {INP(F32, 0, 2, 1, 3, 64, 1, 9), INP(F32, 0, 2, 1, 3, 64, 1000, 3), INP(F32, 0, 2, 1, 3, 64, 1000, 3)},
     .f = {0.125f, 0.0f}, .tol = CF_TOL_DOT},
    /* FLASH_ATTN: a head of 256 (a device's tiles shrink to fit its shared
       memory) under an F32 mask; decode without a mask, heads of no power
       of two, Dv != D, grouped, over two planes. */
    {RT_OP_FLASH_ATTN, "f16 cache, head_dim 256, prompt of 20 over 70 keys, f32 mask",
     {INP(F32, 0, 2, 1, 3, 256, 20, 2), INP(F16, 0, 2, 1, 3, 256, 70, 1), INP(F16, 0, 2, 1, 3, 256, 70, 1),
      INF(F32, CAUSAL, 70, 20)}, .f = {0.0625f, 0.0f}, .tol = CF_TOL_DOT},
    {RT_OP_FLASH_ATTN, "f32, decode without a mask, D = 96, Dv = 80, 6 heads over 3, two planes",
     {IN(F32, 96, 1, 6, 2), IN(F32, 96, 133, 3, 2), IN(F32, 80, 133, 3, 2)}, .f = {0.1f, 0.0f}, .tol = CF_TOL_DOT},
    {RT_OP_FLASH_ATTN, "f16 cache, wide scores (U(-6, 6) q and k), 10 queries, 9 heads over 3, 40 keys",
     {INF(F32, WIDE, 64, 10, 9), INF(F16, WIDE, 64, 40, 3), IN(F16, 64, 40, 3), INF(F32, CAUSAL, 40, 10)},
     .f = {0.125f, 0.0f}, .tol = CF_TOL_DOT},
    {RT_OP_FLASH_ATTN, "f32 cache, wide scores, decode, 9 heads over 3, 300 keys",
     {INF(F32, WIDE, 64, 1, 9), INF(F32, WIDE, 64, 300, 3), IN(F32, 64, 300, 3)},
     .f = {0.125f, 0.0f}, .tol = CF_TOL_DOT},
    {RT_OP_FLASH_ATTN, "f32, soft-capped, 8 heads over 2, 8 queries over 100 keys, one sees nothing",
     {INP(F32, 0, 2, 1, 3, 48, 8, 8), INP(F32, 0, 2, 1, 3, 48, 100, 2), INP(F32, 0, 2, 1, 3, 40, 100, 2),
      INF(F32, CAUSAL0, 100, 8)}, .f = {0.3f, 4.0f}, .tol = CF_TOL_DOT},
};

const size_t cf_n_cases = sizeof cf_cases / sizeof cf_cases[0];

/* Decode's product for each weight type (K unused: 4096 is whole blocks of all). */
#define CF_PERF_MAT_VEC(T, name, K) \
    {RT_OP_MUL_MAT, name " mat-vec 4096x4096", {IN(T, 4096, 4096), IN(F32, 4096, 1)}, .tol = 0},

/* Transformer-sized shapes for `rt-test-ops perf` (timed, not checked). */
const cf_case_t cf_perf_cases[] = {
    {RT_OP_MUL_MAT, "f32 mat-vec 4096x4096", {IN(F32, 4096, 4096), IN(F32, 4096, 1)}, .tol = 0},
    {RT_OP_MUL_MAT, "f16 mat-vec 4096x4096", {IN(F16, 4096, 4096), IN(F32, 4096, 1)}, .tol = 0},
    {RT_OP_MUL_MAT, "q8_0 mat-vec 4096x4096", {IN(Q8_0, 4096, 4096), IN(F32, 4096, 1)}, .tol = 0},
    {RT_OP_MUL_MAT, "q4_0 mat-vec 4096x4096", {IN(Q4_0, 4096, 4096), IN(F32, 4096, 1)}, .tol = 0},
    CF_WEIGHT_TYPES(CF_PERF_MAT_VEC)
    {RT_OP_MUL_MAT, "q4_k 4096x1024, N = 64", {IN(Q4_K, 4096, 1024), IN(F32, 4096, 64)}, .tol = 0},
    {RT_OP_MUL_MAT, "f16 4096x1024, N = 64", {IN(F16, 4096, 1024), IN(F32, 4096, 64)}, .tol = 0},
    {RT_OP_MUL_MAT, "q8_0 4096x1024, N = 64", {IN(Q8_0, 4096, 1024), IN(F32, 4096, 64)}, .tol = 0},
    {RT_OP_ADD, "4096x1024 + a row", {IN(F32, 4096, 1024), IN(F32, 4096)}, .tol = 0},
    {RT_OP_CPY, "f32 -> f16 4096x1024", {IN(F32, 4096, 1024), IN(F16, 4096, 1024)}, .tol = 0},
    {RT_OP_RMS_NORM, "4096x512", {IN(F32, 4096, 512)}, .f = {1e-6f}},
    {RT_OP_SOFT_MAX, "1024x32x32, mask", {IN(F32, 1024, 32, 32), IN(F32, 1024, 32)}, .f = {0.125f}, .ext = true},
    {RT_OP_ROPE, "neox 128x32x512", {IN(F32, 128, 32, 512), IDX(512, 512)}, .i = {128, RT_ROPE_MODE_NEOX}},
    {RT_OP_GET_ROWS, "q8_0 512 rows of 4096", {IN(Q8_0, 4096, 8192), IDX(8192, 512)}, .tol = 0},
    {RT_OP_FLASH_ATTN, "decode, 32 heads over 8 of 128, f16 cache of 4096",
     {INP(F32, 0, 2, 1, 3, 128, 1, 32), INP(F16, 0, 2, 1, 3, 128, 4096, 8), INP(F16, 0, 2, 1, 3, 128, 4096, 8),
      IN(F16, 4096, 1)}, .f = {0.0884f, 0.0f}, .tol = 0},
    {RT_OP_FLASH_ATTN, "prompt of 512 at depth 3584, 32 heads over 8, f16 cache",
     {INP(F32, 0, 2, 1, 3, 128, 512, 32), INP(F16, 0, 2, 1, 3, 128, 4096, 8), INP(F16, 0, 2, 1, 3, 128, 4096, 8),
      INF(F16, CAUSAL, 4096, 512)}, .f = {0.0884f, 0.0f}, .tol = 0},
    /* The prompt at 8 heads over 2: its unfused scores (below) fit one
       binding of a device whose bindings are 128 MiB (lavapipe); 32 heads'
       (256 MiB) do not. */
    {RT_OP_FLASH_ATTN, "prompt of 512 at depth 3584, 8 heads over 2, f16 cache",
     {INP(F32, 0, 2, 1, 3, 128, 512, 8), INP(F16, 0, 2, 1, 3, 128, 4096, 2), INP(F16, 0, 2, 1, 3, 128, 4096, 2),
      INF(F16, CAUSAL, 4096, 512)}, .f = {0.0884f, 0.0f}, .tol = 0},
    /* The same attentions unfused, as a device without FLASH_ATTN runs
       them: k.q (a broadcast of the cache's heads over q's), softmax, then
       p.v against the transposed V cache. */
    {RT_OP_MUL_MAT, "unfused decode k.q, 4096 keys, 32 heads over 8, f16 cache",
     {IN(F16, 128, 4096, 8), IN(F32, 128, 1, 32)}, .tol = 0},
    {RT_OP_SOFT_MAX, "unfused decode softmax 4096x1x32, mask", {IN(F32, 4096, 1, 32), IN(F32, 4096, 1)},
     .f = {0.0884f}, .ext = true},
    {RT_OP_MUL_MAT, "unfused decode p.v, 4096 keys, 32 heads over 8, f16 cache",
     {IN(F16, 4096, 128, 8), IN(F32, 4096, 1, 32)}, .tol = 0},
    {RT_OP_MUL_MAT, "unfused prompt k.q, 512 over 4096 keys, 8 heads over 2, f16 cache",
     {IN(F16, 128, 4096, 2), IN(F32, 128, 512, 8)}, .tol = 0},
    {RT_OP_SOFT_MAX, "unfused prompt softmax 4096x512x8, mask", {IN(F32, 4096, 512, 8), IN(F32, 4096, 512)},
     .f = {0.0884f}, .ext = true},
    {RT_OP_MUL_MAT, "unfused prompt p.v, 512 over 4096 keys, 8 heads over 2, f16 cache",
     {IN(F16, 4096, 128, 2), IN(F32, 4096, 512, 8)}, .tol = 0},
    {RT_OP_FLASH_ATTN, "prompt of 512 over 4096 keys all visible, 32 heads over 8, f16 cache",
     {INP(F32, 0, 2, 1, 3, 128, 512, 32), INP(F16, 0, 2, 1, 3, 128, 4096, 8), INP(F16, 0, 2, 1, 3, 128, 4096, 8),
      IN(F16, 4096, 512)}, .f = {0.0884f, 0.0f}, .tol = 0},
    /* A small model's decode (SmolLM2: head_dim 64, 9 heads over 3), fused
       and unfused, the narrow layout at 3 rows a block. */
    {RT_OP_FLASH_ATTN, "decode, 9 heads over 3 of 64, f16 cache of 4096",
     {INP(F32, 0, 2, 1, 3, 64, 1, 9), INP(F16, 0, 2, 1, 3, 64, 4096, 3), INP(F16, 0, 2, 1, 3, 64, 4096, 3),
      IN(F16, 4096, 1)}, .f = {0.125f, 0.0f}, .tol = 0},
    {RT_OP_MUL_MAT, "unfused decode k.q, 4096 keys, 9 heads over 3 of 64, f16 cache",
     {IN(F16, 64, 4096, 3), IN(F32, 64, 1, 9)}, .tol = 0},
    {RT_OP_SOFT_MAX, "unfused decode softmax 4096x1x9, mask", {IN(F32, 4096, 1, 9), IN(F32, 4096, 1)},
     .f = {0.125f}, .ext = true},
    {RT_OP_MUL_MAT, "unfused decode p.v, 4096 keys, 9 heads over 3 of 64, f16 cache",
     {IN(F16, 4096, 64, 3), IN(F32, 4096, 1, 9)}, .tol = 0},
};

const size_t cf_n_perf_cases = sizeof cf_perf_cases / sizeof cf_perf_cases[0];

const cf_op_test_t cf_op_tests[] = {
    {"view family", CF_OP_VIEWS, RT_OP_CONT}, {"CONT", RT_OP_CONT, RT_OP_CONT},
    {"CPY", RT_OP_CPY, RT_OP_CPY}, {"GET_ROWS", RT_OP_GET_ROWS, RT_OP_GET_ROWS},
    {"ADD", RT_OP_ADD, RT_OP_ADD}, {"SUB", RT_OP_SUB, RT_OP_SUB},
    {"MUL", RT_OP_MUL, RT_OP_MUL}, {"DIV", RT_OP_DIV, RT_OP_DIV},
    {"SCALE", RT_OP_SCALE, RT_OP_SCALE}, {"NORM", RT_OP_NORM, RT_OP_NORM},
    {"RMS_NORM", RT_OP_RMS_NORM, RT_OP_RMS_NORM}, {"MUL_MAT", RT_OP_MUL_MAT, RT_OP_MUL_MAT},
    {"SOFT_MAX", RT_OP_SOFT_MAX, RT_OP_SOFT_MAX}, {"DIAG_MASK_INF", RT_OP_DIAG_MASK_INF, RT_OP_DIAG_MASK_INF},
    {"GELU", RT_OP_GELU, RT_OP_GELU}, {"SILU", RT_OP_SILU, RT_OP_SILU},
    {"SWIGLU", RT_OP_SWIGLU, RT_OP_SWIGLU}, {"ROPE", RT_OP_ROPE, RT_OP_ROPE},
    {"ARGMAX", RT_OP_ARGMAX, RT_OP_ARGMAX}, {"SET_ROWS", RT_OP_SET_ROWS, RT_OP_SET_ROWS},
    {"TANH", RT_OP_TANH, RT_OP_TANH}, /* abi >= 1.2 */
    {"FLASH_ATTN", RT_OP_FLASH_ATTN, RT_OP_FLASH_ATTN}, /* abi >= 1.3 */
};

const size_t cf_n_op_tests = sizeof cf_op_tests / sizeof cf_op_tests[0];

bool cf_case_applies(const cf_case_t *c, const cf_op_test_t *t) {
    switch (c->op) {
    case CF_OP_BINARY: return t->sel >= RT_OP_ADD && t->sel <= RT_OP_DIV;
    case CF_OP_ROWNORM: return t->sel == RT_OP_NORM || t->sel == RT_OP_RMS_NORM;
    case CF_OP_ACT: return t->sel == RT_OP_GELU || t->sel == RT_OP_SILU || t->sel == RT_OP_TANH;
    default: return c->op == t->sel;
    }
}

static bool has_quant_input(const cf_case_t *c, int k) { return c->src[k].ne[0] != 0 && lay_is_quant(c->src[k].type); }

/* The result's type: b's for copies into b, the cast type, else a's. */
static rt_type_t out_type(rt_op_t op, const cf_case_t *c) {
    if (op == RT_OP_CPY) return c->ext ? (rt_type_t)c->i[0] : c->src[1].type;
    return c->src[0].type;
}

/* Q4_1/Q5_1 weights' offsets meet b's sums per run of 32, which the CPU
 * plugin keeps in F16 as ggml's Q8_1 does (s = d * sum(q)): an error of
 * ~2^-12 of the offsets' term that no rounding of b expresses. */
#define CF_TOL_Q8_1_SUMS 2e-3

double cf_tolerance(rt_op_t op, const cf_case_t *c, bool strict) {
    const bool q8_1 = op == RT_OP_MUL_MAT && (c->src[0].type == RT_TYPE_Q4_1 || c->src[0].type == RT_TYPE_Q5_1);
    if (strict) return q8_1 && c->tol < CF_TOL_Q8_1_SUMS ? CF_TOL_Q8_1_SUMS : c->tol;
    double t = c->tol > 1e-5 ? c->tol : 1e-5;
    if (op == RT_OP_CPY && lay_is_quant(out_type(op, c))) return t > 5e-3 ? t : 5e-3;
    if (op == RT_OP_GET_ROWS && has_quant_input(c, 0)) return 1e-6; /* d*q, in any order of rounding */
    if (op == RT_OP_CPY || op == RT_OP_CONT || op == RT_OP_GET_ROWS || op == RT_OP_SET_ROWS ||
        op == RT_OP_DIAG_MASK_INF || op == RT_OP_ARGMAX)
        return c->tol; /* conversions, block copies and selections: every bit is fixed */
    if (op == RT_OP_MUL_MAT && has_quant_input(c, 0)) return 2e-2;
    /* The contract lets a device round q and the weights p to an F16
       cache's type before the products: ~2^-11 relative on each. */
    if (op == RT_OP_FLASH_ATTN && c->src[1].type == RT_TYPE_F16) return t > 2e-3 ? t : 2e-3;
    if (out_type(op, c) == RT_TYPE_F16) t = t > 2e-3 ? t : 2e-3;
    if (op == RT_OP_ROPE) t = t > 1e-4 ? t : 1e-4;
    return t;
}

const char *cf_describe(rt_op_t op, const cf_case_t *c, char *buf, size_t size) {
    snprintf(buf, size, "%s [%s]", rt_op_name(op), c->name);
    return buf;
}
