/* SPDX-License-Identifier: MIT */
/* test-ops.c: the op conformance suite. Every op of abi/rt_tensor.h is run
 * through the public API alone (rt.h) on the CPU device: a one-op graph in a
 * no_alloc context, placed by rt_alloc_ctx_tensors on buffer type 0, inputs
 * filled with seeded random data, computed by rt_queue_compute with the
 * default thread count, 1 and 3 threads, read back and compared with a
 * double-precision reference written here from the contract text.
 *
 * The test keeps its own picture of every tensor (layout_t: type, ne, nb,
 * byte offset into the base). Inputs that the op sees through a view are
 * built twice: with the API (permute, view_Nd, reshape, ...) and with the
 * seed's formulas here; the headers must agree, and the reference reads the
 * bytes through the test's picture, never through the library's. Cases are
 * rows of one table; ADD/SUB/MUL/DIV, NORM/RMS_NORM and GELU/SILU share
 * template rows. Every failure names its check id (ops-<test>.<case>), the
 * op, the case, the shapes, the tolerance and the thread count, and a test
 * reports all its failing cases before it fails. (The seed's GPT-2
 * attention block, end to end, is tests/test-attention.c.)
 *
 * Tolerances (normalised error, tu_nmse_error, over the finite elements;
 * infinities must match exactly):
 *   TOL_EXACT 0     copies and conversions: the contract fixes every bit
 *                   (RNE for F16/BF16, GGUF's quantisers for blocks).
 *   TOL_F32   1e-6  one F32 op per element: a few ulp of 2^-24 (6e-8).
 *   TOL_DOT   1e-5  sums of up to K = 512 F32 products (mul_mat, and the
 *                   attention block): rounding grows like sqrt(K)*2^-24 plus
 *                   any summation order; rope: theta = p*base^(-2i/n) in
 *                   F32 for positions p < 32 carries ~32 ulp of phase.
 *   TOL_F16   1e-3  F16 results: one rounding to 11 bits is 2^-11 = 4.9e-4.
 * Quantised mul_mat weights are compared with the reference run on the
 * dequantised weights (rt_dequantize of the same bytes) and on b's rows
 * rounded through Q8_0 (rt_quantize then rt_dequantize: the CPU plugin's
 * integer dot products quantise activations so, as ggml's do), so only
 * float rounding counts and TOL_DOT applies. */
#include "layout.h"
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOL_EXACT 0.0
#define TOL_F32 1e-6
#define TOL_DOT 1e-5
#define TOL_F16 1e-3

//===--- case description ---===//

/* How an input reaches the op. The spec's ne is always the shape the op sees. */
enum {
    LAY_CONT,    /* the leaf itself */
    LAY_PERM,    /* permute(base, axes) of a contiguous base */
    LAY_TRANS,   /* transpose(base) */
    LAY_PAD,     /* view_Nd into a base one block wider and one row/plane larger,
                    offset one block and one row (the seed's Qcur, generalised) */
    LAY_PADPERM, /* permute(axes) of a LAY_PAD view: a view of a view */
    LAY_RESHAPE, /* reshape_Nd of a 1-D base */
    LAY_VIEW1D,  /* reshape_Nd(view_1d(base, n, 2 elements in)): the seed's cache K */
    LAY_VIEWT    /* view_tensor(base) */
};

enum {
    FILL_UNIFORM, /* U(-1, 1) */
    FILL_POS,     /* U(0.5, 2): divisors */
    FILL_WIDE,    /* U(-6, 6): reaches the tails of gelu and silu */
    FILL_CAUSAL,  /* U(-1, 1), -inf where i0 > i1 + 2: a mask */
    FILL_TIES,    /* integers 1..4: argmax ties */
    FILL_INDEX,   /* integers in [0, idx_hi): rows, positions */
    FILL_DISTINCT /* as FILL_INDEX, distinct along dim 0: SET_ROWS targets */
};

typedef struct src_spec {
    rt_type_t type;
    int layout;      /* LAY_* */
    int fill;        /* FILL_* */
    int axes[4];     /* LAY_PERM, LAY_PADPERM */
    int32_t idx_hi;  /* FILL_INDEX, FILL_DISTINCT */
    int64_t ne[4];   /* shape the op sees; 0 reads as 1; ne[0] == 0: no source */
} src_spec_t;

/* Template ops: one table row runs under several op tests. */
enum { OP_BINARY = -1, OP_ROWNORM = -2, OP_ACT = -3, OP_VIEWS = -4 };

typedef struct op_case {
    rt_op_t op;          /* RT_OP_* or OP_* template */
    const char *name;
    src_spec_t src[3];   /* a, b, c; for CPY b is the destination, for SET_ROWS a */
    float f[2];          /* SCALE s; NORM eps; SOFT_MAX scale; ROPE freq_base, freq_scale */
    int32_t i[2];        /* DIAG n_past; ROPE n_dims, mode; CPY cast type */
    int64_t ne[4];       /* CONT: the cont_Nd shape (0: rt_cont) */
    bool ext;            /* soft_max_ext, rope_ext, rt_cast instead of rt_cpy */
    double tol;          /* TOL_* */
} op_case_t;

#define IN(ty, ...) {.type = RT_TYPE_##ty, .ne = {__VA_ARGS__}}
#define INL(ty, lay, ...) {.type = RT_TYPE_##ty, .layout = LAY_##lay, .ne = {__VA_ARGS__}}
#define INF(ty, fl, ...) {.type = RT_TYPE_##ty, .fill = FILL_##fl, .ne = {__VA_ARGS__}}
#define INP(ty, x0, x1, x2, x3, ...) \
    {.type = RT_TYPE_##ty, .layout = LAY_PERM, .axes = {x0, x1, x2, x3}, .ne = {__VA_ARGS__}}
#define INPP(ty, x0, x1, x2, x3, ...) \
    {.type = RT_TYPE_##ty, .layout = LAY_PADPERM, .axes = {x0, x1, x2, x3}, .ne = {__VA_ARGS__}}
#define IDX(hi, ...) {.type = RT_TYPE_I32, .fill = FILL_INDEX, .idx_hi = hi, .ne = {__VA_ARGS__}}
#define DIST(hi, ...) {.type = RT_TYPE_I32, .fill = FILL_DISTINCT, .idx_hi = hi, .ne = {__VA_ARGS__}}
#define POS(ty, lay, ...) {.type = RT_TYPE_##ty, .layout = LAY_##lay, .fill = FILL_POS, .ne = {__VA_ARGS__}}

static const op_case_t cases[] = {
    /* The view family, seen through CONT: header checks plus the copied values. */
    {OP_VIEWS, "permute 0,2,1,3", {INP(F32, 0, 2, 1, 3, 7, 5, 3, 2)}, .tol = TOL_EXACT},
    {OP_VIEWS, "permute 1,2,0,3 (the seed's V)", {INP(F32, 1, 2, 0, 3, 7, 5, 3, 2)}, .tol = TOL_EXACT},
    {OP_VIEWS, "permute 3,2,1,0", {INP(F32, 3, 2, 1, 0, 7, 5, 3, 2)}, .tol = TOL_EXACT},
    {OP_VIEWS, "permute 2,0,3,1", {INP(F32, 2, 0, 3, 1, 4, 5, 3, 2)}, .tol = TOL_EXACT},
    {OP_VIEWS, "transpose", {INL(F32, TRANS, 33, 7)}, .tol = TOL_EXACT},
    {OP_VIEWS, "transpose ne0 = 1", {INL(F32, TRANS, 1, 9)}, .tol = TOL_EXACT},
    {OP_VIEWS, "view_2d with row padding (Qcur)", {INL(F32, PAD, 33, 7)}, .tol = TOL_EXACT},
    {OP_VIEWS, "view_3d padded", {INL(F32, PAD, 7, 5, 3)}, .tol = TOL_EXACT},
    {OP_VIEWS, "view_4d padded", {INL(F32, PAD, 7, 5, 3, 2)}, .tol = TOL_EXACT},
    {OP_VIEWS, "permute of a padded view", {INPP(F32, 0, 2, 1, 3, 7, 5, 3, 2)}, .tol = TOL_EXACT},
    {OP_VIEWS, "reshape_1d", {INL(F32, RESHAPE, 100)}, .tol = TOL_EXACT},
    {OP_VIEWS, "reshape_2d", {INL(F32, RESHAPE, 10, 10)}, .tol = TOL_EXACT},
    {OP_VIEWS, "reshape_3d", {INL(F32, RESHAPE, 5, 4, 5)}, .tol = TOL_EXACT},
    {OP_VIEWS, "reshape_4d", {INL(F32, RESHAPE, 3, 2, 4, 5)}, .tol = TOL_EXACT},
    {OP_VIEWS, "view_1d at an offset", {INL(F32, VIEW1D, 45)}, .tol = TOL_EXACT},
    {OP_VIEWS, "reshape_3d of view_1d (cache K)", {INL(F32, VIEW1D, 8, 4, 5)}, .tol = TOL_EXACT},
    {OP_VIEWS, "view_tensor", {INL(F32, VIEWT, 7, 5)}, .tol = TOL_EXACT},
    {OP_VIEWS, "f16 permute of a padded view", {INPP(F16, 1, 0, 2, 3, 9, 4, 3)}, .tol = TOL_EXACT},

    /* CONT: any strides, same type; cont_Nd reshapes in the copy. */
    {RT_OP_CONT, "contiguous", {IN(F32, 33, 7, 3, 2)}, .tol = TOL_EXACT},
    {RT_OP_CONT, "ne0 = 1 permuted", {INP(F32, 0, 2, 1, 3, 1, 5, 3)}, .tol = TOL_EXACT},
    {RT_OP_CONT, "cont_2d of permute (final attention cont)", {INP(F32, 0, 2, 1, 3, 8, 3, 4)},
     .ne = {24, 4}, .tol = TOL_EXACT},
    {RT_OP_CONT, "cont_3d of a padded view (Q)", {INL(F32, PAD, 12, 5)}, .ne = {4, 3, 5}, .tol = TOL_EXACT},
    {RT_OP_CONT, "cont_3d of permute 1,2,0,3 (V_trans)", {INP(F32, 1, 2, 0, 3, 6, 4, 3)},
     .ne = {6, 4, 3}, .tol = TOL_EXACT},
    {RT_OP_CONT, "cont_4d of transpose", {INL(F32, TRANS, 6, 4, 2)}, .ne = {3, 2, 4, 2}, .tol = TOL_EXACT},
    {RT_OP_CONT, "f16 transposed", {INL(F16, TRANS, 33, 7)}, .tol = TOL_EXACT},
    {RT_OP_CONT, "bf16 permuted", {INP(BF16, 0, 2, 1, 3, 100, 3, 2)}, .tol = TOL_EXACT},
    {RT_OP_CONT, "q8_0 padded rows", {INL(Q8_0, PAD, 64, 5, 3)}, .tol = TOL_EXACT},
    {RT_OP_CONT, "q4_0 padded rows", {INL(Q4_0, PAD, 32, 3)}, .tol = TOL_EXACT},

    /* CPY: F32/F16/BF16 to each other, F32 to Q8_0/Q4_0; b in its own layout. */
    {RT_OP_CPY, "f32 -> f32, permuted src", {INP(F32, 0, 2, 1, 3, 7, 5, 3, 2), IN(F32, 7, 5, 3, 2)}, .tol = TOL_EXACT},
    {RT_OP_CPY, "f32 -> f16, permuted src", {INP(F32, 0, 2, 1, 3, 7, 5, 3, 2), IN(F16, 7, 5, 3, 2)}, .tol = TOL_EXACT},
    {RT_OP_CPY, "f32 -> bf16, permuted src", {INP(F32, 0, 2, 1, 3, 7, 5, 3, 2), IN(BF16, 7, 5, 3, 2)}, .tol = TOL_EXACT},
    {RT_OP_CPY, "f16 -> f32, transposed src", {INL(F16, TRANS, 33, 7), IN(F32, 33, 7)}, .tol = TOL_EXACT},
    {RT_OP_CPY, "f16 -> f16, transposed src", {INL(F16, TRANS, 33, 7), IN(F16, 33, 7)}, .tol = TOL_EXACT},
    {RT_OP_CPY, "f16 -> bf16, transposed src", {INL(F16, TRANS, 33, 7), IN(BF16, 33, 7)}, .tol = TOL_EXACT},
    {RT_OP_CPY, "bf16 -> f32, padded src", {INL(BF16, PAD, 7, 5, 3), IN(F32, 7, 5, 3)}, .tol = TOL_EXACT},
    {RT_OP_CPY, "bf16 -> f16, padded src", {INL(BF16, PAD, 7, 5, 3), IN(F16, 7, 5, 3)}, .tol = TOL_EXACT},
    {RT_OP_CPY, "bf16 -> bf16, padded src", {INL(BF16, PAD, 7, 5, 3), IN(BF16, 7, 5, 3)}, .tol = TOL_EXACT},
    {RT_OP_CPY, "f32 -> f16 into a padded view (cache write)", {INL(F32, TRANS, 16, 3), INL(F16, PAD, 16, 3)},
     .tol = TOL_EXACT},
    {RT_OP_CPY, "f32 -> f32 into view_1d of a cache", {INL(F32, PAD, 16, 3), INL(F32, VIEW1D, 48)}, .tol = TOL_EXACT},
    {RT_OP_CPY, "f32 -> f32 into a permuted dst", {IN(F32, 7, 5, 3), INP(F32, 1, 0, 2, 3, 7, 5, 3)}, .tol = TOL_EXACT},
    {RT_OP_CPY, "f16 -> bf16 reshaping copy", {INP(F16, 1, 0, 2, 3, 6, 4, 2), IN(BF16, 8, 6)}, .tol = TOL_EXACT},
    {RT_OP_CPY, "ne0 = 1 f32 -> f16", {IN(F32, 1, 7), IN(F16, 1, 7)}, .tol = TOL_EXACT},
    {RT_OP_CPY, "f32 -> q8_0", {IN(F32, 64, 3, 2), IN(Q8_0, 64, 3, 2)}, .tol = TOL_EXACT},
    {RT_OP_CPY, "f32 -> q8_0, permuted src", {INP(F32, 0, 2, 1, 3, 64, 3, 2), IN(Q8_0, 64, 3, 2)}, .tol = TOL_EXACT},
    {RT_OP_CPY, "f32 -> q4_0", {IN(F32, 96, 5), IN(Q4_0, 96, 5)}, .tol = TOL_EXACT},
    {RT_OP_CPY, "f32 -> q4_0, padded src", {INL(F32, PAD, 32, 4, 2), IN(Q4_0, 32, 4, 2)}, .tol = TOL_EXACT},
    {RT_OP_CPY, "cast f32 -> f16, transposed", {INL(F32, TRANS, 7, 5)}, .i = {RT_TYPE_F16}, .ext = true,
     .tol = TOL_EXACT},
    {RT_OP_CPY, "cast bf16 -> f32", {IN(BF16, 33, 3)}, .i = {RT_TYPE_F32}, .ext = true, .tol = TOL_EXACT},
    {RT_OP_CPY, "cast f32 -> q4_0", {IN(F32, 64, 2)}, .i = {RT_TYPE_Q4_0}, .ext = true, .tol = TOL_EXACT},

    /* GET_ROWS: every source type, batched, strided a, ne0 = 1. */
    {RT_OP_GET_ROWS, "f32", {IN(F32, 7, 10), IDX(10, 5)}, .tol = TOL_EXACT},
    {RT_OP_GET_ROWS, "f16", {IN(F16, 33, 10), IDX(10, 5)}, .tol = TOL_EXACT},
    {RT_OP_GET_ROWS, "bf16", {IN(BF16, 100, 10), IDX(10, 5)}, .tol = TOL_EXACT},
    {RT_OP_GET_ROWS, "q8_0", {IN(Q8_0, 64, 10), IDX(10, 5)}, .tol = TOL_EXACT},
    {RT_OP_GET_ROWS, "q4_0", {IN(Q4_0, 64, 10), IDX(10, 5)}, .tol = TOL_EXACT},
    {RT_OP_GET_ROWS, "f32 batched over dims 2, 3", {IN(F32, 7, 6, 3, 2), IDX(6, 4, 3, 2)}, .tol = TOL_EXACT},
    {RT_OP_GET_ROWS, "q8_0 batched over dim 2", {IN(Q8_0, 32, 6, 3), IDX(6, 4, 3)}, .tol = TOL_EXACT},
    {RT_OP_GET_ROWS, "f32 padded rows", {INL(F32, PAD, 33, 10), IDX(10, 7)}, .tol = TOL_EXACT},
    {RT_OP_GET_ROWS, "q4_0 padded rows", {INL(Q4_0, PAD, 64, 10), IDX(10, 7)}, .tol = TOL_EXACT},
    {RT_OP_GET_ROWS, "f16 permuted 0,2,1,3", {INP(F16, 0, 2, 1, 3, 16, 10, 3), IDX(10, 4, 3)}, .tol = TOL_EXACT},
    {RT_OP_GET_ROWS, "ne0 = 1", {IN(F32, 1, 10), IDX(10, 7)}, .tol = TOL_EXACT},

    /* ADD, SUB, MUL, DIV: b repeats into a in every dim; F16 where allowed. */
    {OP_BINARY, "contiguous", {IN(F32, 33, 7, 3, 2), POS(F32, CONT, 33, 7, 3, 2)}, .tol = TOL_F32},
    {OP_BINARY, "b broadcast dim 0", {IN(F32, 33, 7, 3, 2), POS(F32, CONT, 1, 7, 3, 2)}, .tol = TOL_F32},
    {OP_BINARY, "b broadcast dim 1", {IN(F32, 33, 7, 3, 2), POS(F32, CONT, 33, 1, 3, 2)}, .tol = TOL_F32},
    {OP_BINARY, "b broadcast dim 2", {IN(F32, 33, 7, 3, 2), POS(F32, CONT, 33, 7, 1, 2)}, .tol = TOL_F32},
    {OP_BINARY, "b broadcast dim 3", {IN(F32, 33, 7, 3, 2), POS(F32, CONT, 33, 7, 3, 1)}, .tol = TOL_F32},
    {OP_BINARY, "b a row (bias)", {IN(F32, 100, 7, 3), POS(F32, CONT, 100)}, .tol = TOL_F32},
    {OP_BINARY, "b tiled (a->ne % b->ne == 0)", {IN(F32, 6, 4, 2, 3), POS(F32, CONT, 3, 2, 1, 3)}, .tol = TOL_F32},
    {OP_BINARY, "a permuted, b transposed", {INP(F32, 0, 2, 1, 3, 7, 5, 3, 2), POS(F32, TRANS, 7, 5, 3, 2)},
     .tol = TOL_F32},
    {OP_BINARY, "a padded view, b broadcast", {INL(F32, PAD, 100, 3, 2), POS(F32, CONT, 100, 1, 2)}, .tol = TOL_F32},
    {OP_BINARY, "a from a cache view, b broadcast", {INL(F32, VIEW1D, 16, 4, 3), POS(F32, CONT, 16, 4)},
     .tol = TOL_F32},
    {OP_BINARY, "ne0 = 1", {IN(F32, 1, 5, 3), POS(F32, CONT, 1, 5, 3)}, .tol = TOL_F32},
    {OP_BINARY, "f16 contiguous", {IN(F16, 33, 7, 3), POS(F16, CONT, 33, 7, 3)}, .tol = TOL_F16},
    {OP_BINARY, "f16 a transposed, b broadcast", {INL(F16, TRANS, 7, 5, 2), POS(F16, CONT, 7, 1, 2)},
     .tol = TOL_F16},

    /* SCALE */
    {RT_OP_SCALE, "contiguous", {IN(F32, 33, 7, 3, 2)}, .f = {0.37f}, .tol = TOL_F32},
    {RT_OP_SCALE, "transposed", {INL(F32, TRANS, 7, 5, 3)}, .f = {-2.5f}, .tol = TOL_F32},
    {RT_OP_SCALE, "padded view", {INL(F32, PAD, 100, 3)}, .f = {1.5f}, .tol = TOL_F32},
    {RT_OP_SCALE, "ne0 = 1", {IN(F32, 1, 7)}, .f = {3.0f}, .tol = TOL_F32},
    {RT_OP_SCALE, "f16 contiguous", {IN(F16, 33, 7)}, .f = {0.5f}, .tol = TOL_F16},
    {RT_OP_SCALE, "f16 permuted", {INP(F16, 0, 2, 1, 3, 7, 5, 3)}, .f = {-0.3f}, .tol = TOL_F16},

    /* NORM and RMS_NORM: per row; rows contiguous, dims 1-3 any strides. */
    {OP_ROWNORM, "contiguous", {IN(F32, 33, 7, 3, 2)}, .f = {1e-5f}, .tol = TOL_F32},
    {OP_ROWNORM, "ne0 = 100", {IN(F32, 100, 3)}, .f = {1e-6f}, .tol = TOL_F32},
    {OP_ROWNORM, "ne0 = 7", {IN(F32, 7, 5)}, .f = {1e-5f}, .tol = TOL_F32},
    {OP_ROWNORM, "ne0 = 1", {IN(F32, 1, 5)}, .f = {1e-5f}, .tol = TOL_F32},
    {OP_ROWNORM, "padded view", {INL(F32, PAD, 7, 5, 3)}, .f = {1e-5f}, .tol = TOL_F32},
    {OP_ROWNORM, "permuted 0,2,1,3", {INP(F32, 0, 2, 1, 3, 33, 5, 3)}, .f = {1e-4f}, .tol = TOL_F32},

    /* MUL_MAT: c = b . a^T; a F32/F16/BF16/Q8_0/Q4_0, broadcast over b's dims 2, 3. */
    {RT_OP_MUL_MAT, "f32 K = 37", {IN(F32, 37, 11), IN(F32, 37, 5)}, .tol = TOL_DOT},
    {RT_OP_MUL_MAT, "f32 K = 1", {IN(F32, 1, 7), IN(F32, 1, 3)}, .tol = TOL_DOT},
    {RT_OP_MUL_MAT, "f32 matrix-vector K = 256", {IN(F32, 256, 33), IN(F32, 256, 1)}, .tol = TOL_DOT},
    {RT_OP_MUL_MAT, "f32 K = 100 N = 33", {IN(F32, 100, 17), IN(F32, 100, 33)}, .tol = TOL_DOT},
    {RT_OP_MUL_MAT, "f32 K = 7", {IN(F32, 7, 64), IN(F32, 7, 48)}, .tol = TOL_DOT},
    {RT_OP_MUL_MAT, "f32 K = 512 64x48", {IN(F32, 512, 64), IN(F32, 512, 48)}, .tol = TOL_DOT},
    {RT_OP_MUL_MAT, "q8_0 K = 512 64x48", {IN(Q8_0, 512, 64), IN(F32, 512, 48)}, .tol = TOL_DOT},
    {RT_OP_MUL_MAT, "f32 a broadcast over dims 2, 3", {IN(F32, 32, 9, 2, 3), IN(F32, 32, 5, 4, 6)}, .tol = TOL_DOT},
    {RT_OP_MUL_MAT, "seed's permuted K and Q", {INP(F32, 0, 2, 1, 3, 16, 10, 4), INP(F32, 0, 2, 1, 3, 16, 6, 4)},
     .tol = TOL_DOT},
    {RT_OP_MUL_MAT, "padded a and b", {INL(F32, PAD, 33, 7, 2), INL(F32, PAD, 33, 5, 2)}, .tol = TOL_DOT},
    {RT_OP_MUL_MAT, "a broadcast, b permuted", {IN(F32, 32, 9, 2), INP(F32, 0, 2, 1, 3, 32, 5, 4)}, .tol = TOL_DOT},
    {RT_OP_MUL_MAT, "f16 a, broadcast", {IN(F16, 64, 13, 2), IN(F32, 64, 7, 4)}, .tol = TOL_DOT},
    {RT_OP_MUL_MAT, "f16 a padded, K = 33", {INL(F16, PAD, 33, 9), IN(F32, 33, 4)}, .tol = TOL_DOT},
    {RT_OP_MUL_MAT, "bf16 a", {IN(BF16, 64, 13, 2), IN(F32, 64, 7, 2)}, .tol = TOL_DOT},
    {RT_OP_MUL_MAT, "q8_0 a, broadcast", {IN(Q8_0, 64, 13, 2), IN(F32, 64, 7, 4)}, .tol = TOL_DOT},
    {RT_OP_MUL_MAT, "q8_0 matrix-vector K = 256", {IN(Q8_0, 256, 33), IN(F32, 256, 1)}, .tol = TOL_DOT},
    {RT_OP_MUL_MAT, "q8_0 a padded rows", {INL(Q8_0, PAD, 64, 9, 2), IN(F32, 64, 5, 2)}, .tol = TOL_DOT},
    {RT_OP_MUL_MAT, "q4_0 a, broadcast", {IN(Q4_0, 64, 13, 2), IN(F32, 64, 7, 4)}, .tol = TOL_DOT},
    {RT_OP_MUL_MAT, "q4_0 K = 256 N = 33", {IN(Q4_0, 256, 17), IN(F32, 256, 33)}, .tol = TOL_DOT},
    {RT_OP_MUL_MAT, "q4_0 a permuted 0,2,1,3", {INP(Q4_0, 0, 2, 1, 3, 32, 9, 3), IN(F32, 32, 5, 3)}, .tol = TOL_DOT},
    /* N > 8: the blocked path, b read in place through its strides */
    {RT_OP_MUL_MAT, "permuted K and Q, N = 20", {INP(F32, 0, 2, 1, 3, 16, 10, 4), INP(F32, 0, 2, 1, 3, 16, 20, 4)},
     .tol = TOL_DOT},
    {RT_OP_MUL_MAT, "f32 M = 400 (several work items), padded b", {IN(F32, 64, 400), INL(F32, PAD, 64, 20)},
     .tol = TOL_DOT},
    {RT_OP_MUL_MAT, "bf16 K = 544 (two depth blocks)", {IN(BF16, 544, 50), IN(F32, 544, 17)}, .tol = TOL_DOT},
    {RT_OP_MUL_MAT, "q8_0 a, permuted b, N = 12", {IN(Q8_0, 64, 13, 3), INP(F32, 0, 2, 1, 3, 64, 12, 3)},
     .tol = TOL_DOT},
    {RT_OP_MUL_MAT, "q4_0 K = 96 (odd blocks), N = 3", {IN(Q4_0, 96, 21), IN(F32, 96, 3)}, .tol = TOL_DOT},

    /* SOFT_MAX: with and without mask (F32 and F16), mask broadcast, scale. */
    {RT_OP_SOFT_MAX, "no mask (rt_soft_max)", {IN(F32, 33, 7, 3, 2)}, .tol = TOL_F32},
    {RT_OP_SOFT_MAX, "no mask, scale 0.25", {IN(F32, 33, 7, 3)}, .f = {0.25f}, .ext = true, .tol = TOL_F32},
    {RT_OP_SOFT_MAX, "f32 causal mask over dims 2, 3", {IN(F32, 33, 7, 3, 2), INF(F32, CAUSAL, 33, 7)},
     .f = {0.5f}, .ext = true, .tol = TOL_F32},
    {RT_OP_SOFT_MAX, "f16 mask with more rows, broadcast over dim 3",
     {IN(F32, 33, 7, 3, 2), INF(F16, CAUSAL, 33, 9, 3)}, .f = {0.125f}, .ext = true, .tol = TOL_F32},
    {RT_OP_SOFT_MAX, "f32 mask broadcast over dim 2", {IN(F32, 16, 5, 3, 2), INF(F32, CAUSAL, 16, 5, 1, 2)},
     .f = {1.0f}, .ext = true, .tol = TOL_F32},
    {RT_OP_SOFT_MAX, "ne0 = 100, random f16 mask", {IN(F32, 100, 3), IN(F16, 100, 3)}, .f = {2.0f}, .ext = true,
     .tol = TOL_F32},
    {RT_OP_SOFT_MAX, "padded a", {INL(F32, PAD, 7, 5, 3), INF(F32, CAUSAL, 7, 5)}, .f = {1.0f}, .ext = true,
     .tol = TOL_F32},
    {RT_OP_SOFT_MAX, "ne0 = 1", {IN(F32, 1, 5)}, .tol = TOL_F32},

    /* DIAG_MASK_INF */
    {RT_OP_DIAG_MASK_INF, "n_past 0", {IN(F32, 7, 5, 3)}, .i = {0}, .tol = TOL_EXACT},
    {RT_OP_DIAG_MASK_INF, "n_past 3, 4-d", {IN(F32, 10, 4, 2, 2)}, .i = {3}, .tol = TOL_EXACT},
    {RT_OP_DIAG_MASK_INF, "square 33", {IN(F32, 33, 33)}, .i = {0}, .tol = TOL_EXACT},
    {RT_OP_DIAG_MASK_INF, "ne0 = 1", {IN(F32, 1, 3)}, .i = {0}, .tol = TOL_EXACT},
    {RT_OP_DIAG_MASK_INF, "padded view", {INL(F32, PAD, 9, 4, 2)}, .i = {2}, .tol = TOL_EXACT},

    /* GELU and SILU */
    {OP_ACT, "contiguous", {INF(F32, WIDE, 33, 7, 3, 2)}, .tol = TOL_F32},
    {OP_ACT, "transposed", {{.type = RT_TYPE_F32, .layout = LAY_TRANS, .fill = FILL_WIDE, .ne = {7, 5, 3}}},
     .tol = TOL_F32},
    {OP_ACT, "padded view", {INL(F32, PAD, 100, 3)}, .tol = TOL_F32},
    {OP_ACT, "ne0 = 1", {INF(F32, WIDE, 1, 7)}, .tol = TOL_F32},
    {OP_ACT, "f16 contiguous", {INF(F16, WIDE, 33, 7)}, .tol = TOL_F16},
    {OP_ACT, "f16 transposed", {INL(F16, TRANS, 7, 5)}, .tol = TOL_F16},

    /* SWIGLU */
    {RT_OP_SWIGLU, "contiguous", {INF(F32, WIDE, 33, 7, 3), IN(F32, 33, 7, 3)}, .tol = TOL_F32},
    {RT_OP_SWIGLU, "a permuted", {INP(F32, 0, 2, 1, 3, 7, 5, 3), IN(F32, 7, 5, 3)}, .tol = TOL_F32},
    {RT_OP_SWIGLU, "a padded, b transposed", {INL(F32, PAD, 7, 5), INL(F32, TRANS, 7, 5)}, .tol = TOL_F32},
    {RT_OP_SWIGLU, "ne0 = 1", {IN(F32, 1, 7), IN(F32, 1, 7)}, .tol = TOL_F32},
    {RT_OP_SWIGLU, "f16", {INF(F16, WIDE, 100, 3), IN(F16, 100, 3)}, .tol = TOL_F16},

    /* ROPE: normal and neox, n_dims < head_dim, freq_base/freq_scale, F16. */
    {RT_OP_ROPE, "normal", {IN(F32, 16, 4, 5), IDX(32, 5)}, .i = {16, RT_ROPE_MODE_NORMAL}, .tol = TOL_DOT},
    {RT_OP_ROPE, "neox", {IN(F32, 16, 4, 5), IDX(32, 5)}, .i = {16, RT_ROPE_MODE_NEOX}, .tol = TOL_DOT},
    {RT_OP_ROPE, "normal n_dims 8 < head_dim 16", {IN(F32, 16, 3, 5), IDX(32, 5)},
     .i = {8, RT_ROPE_MODE_NORMAL}, .tol = TOL_DOT},
    {RT_OP_ROPE, "neox n_dims 6 < head_dim 10", {IN(F32, 10, 3, 4), IDX(32, 4)},
     .i = {6, RT_ROPE_MODE_NEOX}, .tol = TOL_DOT},
    {RT_OP_ROPE, "normal base 500 scale 0.25, 4-d", {IN(F32, 8, 3, 6, 2), IDX(32, 6)},
     .i = {8, RT_ROPE_MODE_NORMAL}, .f = {500.0f, 0.25f}, .ext = true, .tol = TOL_DOT},
    {RT_OP_ROPE, "neox base 1e6 scale 2", {IN(F32, 32, 2, 3), IDX(32, 3)},
     .i = {32, RT_ROPE_MODE_NEOX}, .f = {1e6f, 2.0f}, .ext = true, .tol = TOL_DOT},
    {RT_OP_ROPE, "normal padded view (fused QKV)", {INL(F32, PAD, 16, 4, 5), IDX(32, 5)},
     .i = {16, RT_ROPE_MODE_NORMAL}, .tol = TOL_DOT},
    {RT_OP_ROPE, "f16 normal", {IN(F16, 16, 4, 5), IDX(32, 5)}, .i = {16, RT_ROPE_MODE_NORMAL}, .tol = TOL_F16},
    {RT_OP_ROPE, "f16 neox n_dims 8", {IN(F16, 16, 4, 5), IDX(32, 5)}, .i = {8, RT_ROPE_MODE_NEOX},
     .tol = TOL_F16},

    /* ARGMAX */
    {RT_OP_ARGMAX, "4-d", {IN(F32, 33, 7, 3, 2)}, .tol = TOL_EXACT},
    {RT_OP_ARGMAX, "ne0 = 100", {IN(F32, 100, 3)}, .tol = TOL_EXACT},
    {RT_OP_ARGMAX, "ne0 = 1", {IN(F32, 1, 5)}, .tol = TOL_EXACT},
    {RT_OP_ARGMAX, "ties: the first wins", {INF(F32, TIES, 16, 9)}, .tol = TOL_EXACT},
    {RT_OP_ARGMAX, "padded view", {INL(F32, PAD, 7, 5, 3)}, .tol = TOL_EXACT},

    /* SET_ROWS: into F32/F16/BF16, batched, b strided, one-element rows (the
       transposed V cache); rows not named keep their bytes. */
    {RT_OP_SET_ROWS, "f32", {IN(F32, 7, 10), IN(F32, 7, 4), DIST(10, 4)}, .tol = TOL_EXACT},
    {RT_OP_SET_ROWS, "into f16", {IN(F16, 33, 10), IN(F32, 33, 5), DIST(10, 5)}, .tol = TOL_EXACT},
    {RT_OP_SET_ROWS, "into bf16", {IN(BF16, 100, 9), IN(F32, 100, 9), DIST(9, 9)}, .tol = TOL_EXACT},
    {RT_OP_SET_ROWS, "batched over dims 2, 3", {IN(F32, 7, 6, 3, 2), IN(F32, 7, 4, 3, 2), DIST(6, 4, 3, 2)},
     .tol = TOL_EXACT},
    {RT_OP_SET_ROWS, "b permuted 0,2,1,3", {IN(F16, 16, 10, 3), INP(F32, 0, 2, 1, 3, 16, 4, 3), DIST(10, 4, 3)},
     .tol = TOL_EXACT},
    {RT_OP_SET_ROWS, "into a padded view", {INL(F32, PAD, 33, 10), IN(F32, 33, 3), DIST(10, 3)}, .tol = TOL_EXACT},
    {RT_OP_SET_ROWS, "one-element rows (V cache)", {IN(F16, 1, 300), IN(F32, 1, 64), DIST(300, 64)},
     .tol = TOL_EXACT},
    {RT_OP_SET_ROWS, "into a transposed a (columns: the V cache)", {INL(F16, TRANS, 16, 40), IN(F32, 16, 5), DIST(40, 5)},
     .tol = TOL_EXACT},
    {RT_OP_SET_ROWS, "transposed a, 130 rows (runs of 64 and a tail)",
     {INL(F32, TRANS, 8, 300), INP(F32, 1, 0, 2, 3, 8, 130), DIST(300, 130)}, .tol = TOL_EXACT},
};

#define N_CASES (sizeof cases / sizeof cases[0])

//===--- failures ---===//


typedef struct cmp_result {
    double err;      /* normalised error over finite elements; INFINITY on an inf/nan mismatch */
    int64_t worst;   /* element with the largest difference */
} cmp_result_t;

/* Infinities must match exactly; the finite rest is measured by tu_nmse_error. */
static cmp_result_t compare_values(const double *ref, const double *got, int64_t n) {
    cmp_result_t r = {0, 0};
    double *rf = malloc((size_t)n * sizeof *rf), worst = -1;
    float *gf = malloc((size_t)n * sizeof *gf);
    size_t m = 0;
    bool bad_any = false;
    for (int64_t k = 0; k < n; k++) {
        const bool inf = isinf(ref[k]) || isinf(got[k]);
        const bool bad = isnan(got[k]) || (inf && ref[k] != got[k]);
        const double d = bad ? INFINITY : inf ? 0.0 : fabs(got[k] - ref[k]);
        if (d > worst) worst = d, r.worst = k;
        bad_any |= bad;
        if (inf) continue;
        rf[m] = ref[k];
        gf[m++] = (float)got[k];
    }
    r.err = bad_any ? INFINITY : tu_nmse_error(rf, gf, m);
    free(rf);
    free(gf);
    return r;
}

//===--- inputs ---===//

typedef struct input {
    const src_spec_t *spec;
    rt_tensor_t *base;   /* the leaf that owns the bytes */
    rt_tensor_t *t;      /* what the op sees: base or a view of it */
    layout_t base_lay;   /* the test's picture of base */
    layout_t lay;        /* the test's picture of t */
    rt_op_t view_op;     /* the op t must carry (RT_OP_NONE for the base) */
    uint8_t *bytes;      /* the base's bytes as uploaded */
} input_t;

static rt_tensor_t *new_from(rt_context_t *ctx, const layout_t *l) {
    return rt_new_tensor(ctx, l->type, lay_ne_dims(l->ne), l->ne);
}

static rt_tensor_t *reshape_nd(rt_context_t *ctx, rt_tensor_t *a, const int64_t ne[4]) {
    switch (lay_ne_dims(ne)) {
    case 1: return rt_reshape_1d(ctx, a, ne[0]);
    case 2: return rt_reshape_2d(ctx, a, ne[0], ne[1]);
    case 3: return rt_reshape_3d(ctx, a, ne[0], ne[1], ne[2]);
    default: return rt_reshape_4d(ctx, a, ne[0], ne[1], ne[2], ne[3]);
    }
}

/* view_Nd (N >= 2 from the shape) with l's strides; dims past N get the
 * seed's nb[i] = nb[i-1]*ne[i-1], so l is updated to match. */
static rt_tensor_t *view_nd(rt_context_t *ctx, rt_tensor_t *a, layout_t *l) {
    const int n = lay_ne_dims(l->ne) < 2 ? 2 : lay_ne_dims(l->ne);
    for (int i = n; i < 4; i++) l->nb[i] = l->nb[i - 1] * (size_t)l->ne[i - 1];
    const int64_t *ne = l->ne;
    const size_t *nb = l->nb;
    switch (n) {
    case 2: return rt_view_2d(ctx, a, ne[0], ne[1], nb[1], l->offs);
    case 3: return rt_view_3d(ctx, a, ne[0], ne[1], ne[2], nb[1], nb[2], l->offs);
    default: return rt_view_4d(ctx, a, ne[0], ne[1], ne[2], ne[3], nb[1], nb[2], nb[3], l->offs);
    }
}

static void make_padded(rt_context_t *ctx, input_t *in, const int64_t vne[4]) {
    const int64_t blk = lay_blck(in->spec->type);
    const int64_t bne[4] = {vne[0] + 2 * blk, vne[1] + 1, vne[2] + 1, vne[3]};
    in->base_lay = lay_contig(in->spec->type, bne);
    in->base = new_from(ctx, &in->base_lay);
    layout_t v = in->base_lay;
    memcpy(v.ne, vne, sizeof v.ne);
    v.offs = in->base_lay.nb[0] + in->base_lay.nb[1]; /* one block in, one row down */
    in->t = view_nd(ctx, in->base, &v);
    in->lay = v;
    in->view_op = RT_OP_VIEW;
}

static void make_permuted(rt_context_t *ctx, input_t *in, const int64_t ne[4], const int axes[4], bool trans) {
    int64_t bne[4];
    for (int i = 0; i < 4; i++) bne[i] = ne[axes[i]];
    in->base_lay = lay_contig(in->spec->type, bne);
    in->base = new_from(ctx, &in->base_lay);
    in->lay = lay_permute(&in->base_lay, axes);
    in->t = trans ? rt_transpose(ctx, in->base)
                  : rt_permute(ctx, in->base, axes[0], axes[1], axes[2], axes[3]);
    in->view_op = trans ? RT_OP_TRANSPOSE : RT_OP_PERMUTE;
}

static void make_input(rt_context_t *ctx, const src_spec_t *s, input_t *in) {
    static const int trans_axes[4] = {1, 0, 2, 3};
    int64_t ne[4];
    lay_norm_ne(s->ne, ne);
    in->spec = s;
    in->view_op = RT_OP_NONE;
    const int64_t n = ne[0] * ne[1] * ne[2] * ne[3];
    switch (s->layout) {
    case LAY_PERM: make_permuted(ctx, in, ne, s->axes, false); break;
    case LAY_TRANS: make_permuted(ctx, in, ne, trans_axes, true); break;
    case LAY_PAD: make_padded(ctx, in, ne); break;
    case LAY_PADPERM: {
        int64_t vne[4];
        for (int i = 0; i < 4; i++) vne[i] = ne[s->axes[i]];
        make_padded(ctx, in, vne);
        in->lay = lay_permute(&in->lay, s->axes);
        in->t = rt_permute(ctx, in->t, s->axes[0], s->axes[1], s->axes[2], s->axes[3]);
        in->view_op = RT_OP_PERMUTE;
        break;
    }
    case LAY_RESHAPE:
        in->base_lay = lay_contig(s->type, (int64_t[4]){n, 1, 1, 1});
        in->base = new_from(ctx, &in->base_lay);
        in->t = reshape_nd(ctx, in->base, ne);
        in->lay = lay_contig(s->type, ne);
        in->view_op = RT_OP_RESHAPE;
        break;
    case LAY_VIEW1D: {
        in->base_lay = lay_contig(s->type, (int64_t[4]){n + 3, 1, 1, 1});
        in->base = new_from(ctx, &in->base_lay);
        in->lay = lay_contig(s->type, ne);
        in->lay.offs = 2 * lay_type_bytes(s->type);
        rt_tensor_t *v = rt_view_1d(ctx, in->base, n, in->lay.offs);
        in->t = lay_ne_dims(ne) > 1 ? reshape_nd(ctx, v, ne) : v;
        in->view_op = lay_ne_dims(ne) > 1 ? RT_OP_RESHAPE : RT_OP_VIEW;
        break;
    }
    default:
        in->base_lay = lay_contig(s->type, ne);
        in->base = new_from(ctx, &in->base_lay);
        in->lay = in->base_lay;
        in->t = s->layout == LAY_VIEWT ? rt_view_tensor(ctx, in->base) : in->base;
        in->view_op = s->layout == LAY_VIEWT ? RT_OP_VIEW : RT_OP_NONE;
        break;
    }
}

static float fill_value(const src_spec_t *s, const layout_t *bl, int64_t k) {
    int64_t idx[4];
    switch (s->fill) {
    case FILL_POS: return tu_uniform(0.5f, 2.0f);
    case FILL_WIDE: return tu_uniform(-6.0f, 6.0f);
    case FILL_TIES: return (float)(1 + tu_next() % 4);
    case FILL_INDEX: return (float)(tu_next() % (uint64_t)s->idx_hi);
    case FILL_CAUSAL:
        lay_unravel(k, bl->ne, idx);
        return idx[0] > idx[1] + 2 ? -INFINITY : tu_uniform(-1.0f, 1.0f);
    default: return tu_uniform(-1.0f, 1.0f);
    }
}

/* FILL_DISTINCT: each run of ne[0] values a random pick without repeats
 * from [0, idx_hi) (a partial Fisher-Yates shuffle). */
static void fill_distinct(const src_spec_t *s, const layout_t *bl, float *v) {
    const int64_t n = lay_nelem(bl), m = bl->ne[0], hi = s->idx_hi;
    int64_t *pool = malloc((size_t)hi * sizeof *pool);
    assert_true(m <= hi);
    for (int64_t r = 0; r < n; r += m) {
        for (int64_t k = 0; k < hi; k++) pool[k] = k;
        for (int64_t k = 0; k < m; k++) {
            const int64_t j = k + (int64_t)(tu_next() % (uint64_t)(hi - k));
            const int64_t t = pool[k];
            pool[k] = pool[j];
            pool[j] = t;
            v[r + k] = (float)pool[k];
        }
    }
    free(pool);
}

/* Random values (never all zero) for the base, encoded in its type. */
static void fill_input(input_t *in) {
    const int64_t n = lay_nelem(&in->base_lay);
    float *v = malloc((size_t)n * sizeof *v);
    if (in->spec->fill == FILL_DISTINCT)
        fill_distinct(in->spec, &in->base_lay, v);
    else
        for (int64_t k = 0; k < n; k++) v[k] = fill_value(in->spec, &in->base_lay, k);
    in->bytes = calloc(lay_span(&in->base_lay), 1);
    lay_write(&in->base_lay, in->bytes, v);
    free(v);
}

static bool upload(const input_t *in) {
    const rt_status_t st = rt_tensor_set(in->base, in->bytes, 0, lay_span(&in->base_lay));
    if (st != RT_OK) tu_report("rt_tensor_set: %s: %s", rt_status_name(st), rt_last_error());
    return st == RT_OK;
}

static double in_at(const input_t *in, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    const int64_t idx[4] = {i0, i1, i2, i3};
    return lay_get(&in->lay, in->bytes, idx);
}

//===--- header checks ---===//

static bool header_is(const char *label, const char *what, const rt_tensor_t *t, const layout_t *l) {
    char want[160], got[160];
    layout_t g = {.type = t->type, .offs = l->offs};
    memcpy(g.ne, t->ne, sizeof g.ne);
    memcpy(g.nb, t->nb, sizeof g.nb);
    if (g.type == l->type && memcmp(g.ne, l->ne, sizeof g.ne) == 0 && memcmp(g.nb, l->nb, sizeof g.nb) == 0)
        return true;
    tu_report("%s: %s header is %s, want %s", label, what, lay_str(&g, got, sizeof got), lay_str(l, want, sizeof want));
    return false;
}

/* The view the API built must be the one the seed's formulas give. */
static bool check_view(const char *label, const input_t *in) {
    const rt_tensor_t *t = in->t;
    if (!header_is(label, "input view", t, &in->lay)) return false;
    if (t == in->base) return true;
    if (t->view_src != in->base || t->view_offs != in->lay.offs || t->op != in->view_op) {
        tu_report("%s: view has view_src %p (base %p), view_offs %zu (want %zu), op %d (want %d)", label,
               (void *)t->view_src, (void *)in->base, t->view_offs, in->lay.offs, t->op, in->view_op);
        return false;
    }
    const int *ax = in->spec->axes;
    if (t->op == RT_OP_PERMUTE && memcmp(t->op_params, ax, 4 * sizeof ax[0]) != 0) {
        tu_report("%s: permute op_params {%d,%d,%d,%d}, want {%d,%d,%d,%d}", label, t->op_params[0],
               t->op_params[1], t->op_params[2], t->op_params[3], ax[0], ax[1], ax[2], ax[3]);
        return false;
    }
    return true;
}

static bool param_f(const char *label, const rt_tensor_t *t, int slot, float want) {
    if ((uint32_t)t->op_params[slot] == rt_f32_bits(want)) return true;
    tu_report("%s: op_params[%d] = %g, want %g", label, slot, rt_bits_f32((uint32_t)t->op_params[slot]), want);
    return false;
}

static bool param_i(const char *label, const rt_tensor_t *t, int slot, int32_t want) {
    if (t->op_params[slot] == want) return true;
    tu_report("%s: op_params[%d] = %d, want %d", label, slot, t->op_params[slot], want);
    return false;
}

/* op_params as rt_tensor.h lays them out. rt_rope's defaults are ggml's
 * (freq_base 10000, freq_scale 1); rt.h does not state them. */
static bool check_params(const char *label, rt_op_t op, const op_case_t *c, const rt_tensor_t *t) {
    switch (op) {
    case RT_OP_SCALE:
    case RT_OP_NORM:
    case RT_OP_RMS_NORM: return param_f(label, t, 0, c->f[0]);
    case RT_OP_SOFT_MAX: return param_f(label, t, 0, c->ext ? c->f[0] : 1.0f);
    case RT_OP_DIAG_MASK_INF: return param_i(label, t, 0, c->i[0]);
    case RT_OP_ROPE:
        return param_i(label, t, 0, c->i[0]) && param_i(label, t, 1, c->i[1]) &&
               param_f(label, t, 2, c->ext ? c->f[0] : 10000.0f) && param_f(label, t, 3, c->ext ? c->f[1] : 1.0f);
    default: return true;
    }
}

//===--- building and reference ---===//

static rt_tensor_t *build_cont(rt_context_t *ctx, rt_tensor_t *a, const int64_t *ne) {
    switch (ne[0] == 0 ? 0 : lay_ne_dims(ne)) {
    case 0: return rt_cont(ctx, a);
    case 2: return rt_cont_2d(ctx, a, ne[0], ne[1]);
    case 3: return rt_cont_3d(ctx, a, ne[0], ne[1], ne[2]);
    default: return rt_cont_4d(ctx, a, ne[0], ne[1], ne[2], ne[3]);
    }
}

static rt_tensor_t *build_op(rt_context_t *ctx, rt_op_t op, const op_case_t *c, const input_t *in) {
    rt_tensor_t *a = in[0].t, *b = in[1].t;
    switch (op) {
    case RT_OP_CONT: return build_cont(ctx, a, c->ne);
    case RT_OP_CPY: return c->ext ? rt_cast(ctx, a, c->i[0]) : rt_cpy(ctx, a, b);
    case RT_OP_GET_ROWS: return rt_get_rows(ctx, a, b);
    case RT_OP_ADD: return rt_add(ctx, a, b);
    case RT_OP_SUB: return rt_sub(ctx, a, b);
    case RT_OP_MUL: return rt_mul(ctx, a, b);
    case RT_OP_DIV: return rt_div(ctx, a, b);
    case RT_OP_SCALE: return rt_scale(ctx, a, c->f[0]);
    case RT_OP_NORM: return rt_norm(ctx, a, c->f[0]);
    case RT_OP_RMS_NORM: return rt_rms_norm(ctx, a, c->f[0]);
    case RT_OP_MUL_MAT: return rt_mul_mat(ctx, a, b);
    case RT_OP_SOFT_MAX: return c->ext ? rt_soft_max_ext(ctx, a, b, c->f[0]) : rt_soft_max(ctx, a);
    case RT_OP_DIAG_MASK_INF: return rt_diag_mask_inf(ctx, a, c->i[0]);
    case RT_OP_GELU: return rt_gelu(ctx, a);
    case RT_OP_SILU: return rt_silu(ctx, a);
    case RT_OP_SWIGLU: return rt_swiglu(ctx, a, b);
    case RT_OP_ROPE:
        return c->ext ? rt_rope_ext(ctx, a, b, c->i[0], c->i[1], c->f[0], c->f[1])
                      : rt_rope(ctx, a, b, c->i[0], c->i[1]);
    case RT_OP_ARGMAX: return rt_argmax(ctx, a);
    case RT_OP_SET_ROWS: return rt_set_rows(ctx, a, b, in[2].t);
    default: fail_msg("build_op: op %d has no builder", op);
    }
    return NULL;
}

/* The result's shape and type, from the contract. */
static layout_t expect_out(rt_op_t op, const op_case_t *c, const input_t *in) {
    const int64_t *a = in[0].lay.ne, *b = in[1].lay.ne;
    int64_t ne[4] = {a[0], a[1], a[2], a[3]};
    rt_type_t type = in[0].lay.type;
    switch (op) {
    case RT_OP_CONT:
        if (c->ne[0] != 0) lay_norm_ne(c->ne, ne);
        break;
    case RT_OP_CPY:
        if (!c->ext) return in[1].lay;
        type = c->i[0];
        break;
    case RT_OP_SET_ROWS: return in[0].lay;
    case RT_OP_GET_ROWS: memcpy(ne, (int64_t[4]){a[0], b[0], b[1], b[2]}, sizeof ne); type = RT_TYPE_F32; break;
    case RT_OP_MUL_MAT: memcpy(ne, (int64_t[4]){a[1], b[1], b[2], b[3]}, sizeof ne); type = RT_TYPE_F32; break;
    case RT_OP_ARGMAX: memcpy(ne, (int64_t[4]){a[1], a[2], a[3], 1}, sizeof ne); type = RT_TYPE_I32; break;
    default: break;
    }
    return lay_contig(type, ne);
}

static double silu(double x) { return x / (1.0 + exp(-x)); }

static double gelu(double x) {
    return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

/* Ops that map element (i0..i3) of a (and b) to the same element of the result. */
static double ref_element(rt_op_t op, const op_case_t *c, const input_t *in, const int64_t i[4]) {
    const double x = in_at(&in[0], i[0], i[1], i[2], i[3]);
    const int64_t *bn = in[1].lay.ne;
    double y = 0;
    if (op >= RT_OP_ADD && op <= RT_OP_DIV) /* b repeats into a */
        y = in_at(&in[1], i[0] % bn[0], i[1] % bn[1], i[2] % bn[2], i[3] % bn[3]);
    switch (op) {
    case RT_OP_ADD: return x + y;
    case RT_OP_SUB: return x - y;
    case RT_OP_MUL: return x * y;
    case RT_OP_DIV: return x / y;
    case RT_OP_SCALE: return x * c->f[0];
    case RT_OP_DIAG_MASK_INF: return i[0] > c->i[0] + i[1] ? -INFINITY : x;
    case RT_OP_GELU: return gelu(x);
    case RT_OP_SILU: return silu(x);
    case RT_OP_SWIGLU: return silu(x) * in_at(&in[1], i[0], i[1], i[2], i[3]);
    default: fail_msg("ref_element: op %d", op);
    }
    return 0;
}

static void ref_rope_row(const op_case_t *c, const double *x, int64_t n0, double p, double *y) {
    const int n_dims = c->i[0];
    const double base = c->ext ? c->f[0] : 10000.0, fs = c->ext ? c->f[1] : 1.0;
    memcpy(y, x, (size_t)n0 * sizeof y[0]);
    for (int i = 0; i < n_dims / 2; i++) {
        const double theta = p * fs * pow(base, -2.0 * i / n_dims);
        const int64_t u = c->i[1] == RT_ROPE_MODE_NEOX ? i : 2 * i;
        const int64_t v = c->i[1] == RT_ROPE_MODE_NEOX ? i + n_dims / 2 : 2 * i + 1;
        y[u] = x[u] * cos(theta) - x[v] * sin(theta);
        y[v] = x[u] * sin(theta) + x[v] * cos(theta);
    }
}

static void ref_softmax_row(const op_case_t *c, const input_t *in, const int64_t r[4], double *x, double *y) {
    const int64_t n0 = in[0].lay.ne[0];
    const double scale = c->ext ? c->f[0] : 1.0;
    const bool mask = c->ext && in[1].spec != NULL;
    double mx = -INFINITY, sum = 0;
    for (int64_t k = 0; k < n0; k++) {
        const int64_t *m = in[1].lay.ne;
        x[k] = x[k] * scale + (mask ? in_at(&in[1], k, r[1], r[2] % m[2], r[3] % m[3]) : 0.0);
        mx = fmax(mx, x[k]);
    }
    for (int64_t k = 0; k < n0; k++) sum += y[k] = exp(x[k] - mx);
    for (int64_t k = 0; k < n0; k++) y[k] /= sum;
}

/* One row of a row op: x is row r of a; y the row of the result. */
static void ref_row(rt_op_t op, const op_case_t *c, const input_t *in, const int64_t r[4], double *x, double *y) {
    const int64_t n0 = in[0].lay.ne[0];
    double s1 = 0, s2 = 0;
    for (int64_t k = 0; k < n0; k++) s1 += x[k], s2 += x[k] * x[k];
    const double mean = s1 / (double)n0;
    switch (op) {
    case RT_OP_NORM: {
        double var = 0;
        for (int64_t k = 0; k < n0; k++) var += (x[k] - mean) * (x[k] - mean);
        const double d = sqrt(var / (double)n0 + c->f[0]);
        for (int64_t k = 0; k < n0; k++) y[k] = (x[k] - mean) / d;
        break;
    }
    case RT_OP_RMS_NORM:
        for (int64_t k = 0; k < n0; k++) y[k] = x[k] / sqrt(s2 / (double)n0 + c->f[0]);
        break;
    case RT_OP_SOFT_MAX: ref_softmax_row(c, in, r, x, y); break;
    case RT_OP_ROPE: ref_rope_row(c, x, n0, in_at(&in[1], r[2], 0, 0, 0), y); break;
    case RT_OP_ARGMAX: {
        int64_t best = 0;
        for (int64_t k = 1; k < n0; k++)
            if (x[k] > x[best]) best = k;
        y[0] = (double)best;
        break;
    }
    default: fail_msg("ref_row: op %d", op);
    }
}

static void ref_rows(rt_op_t op, const op_case_t *c, const input_t *in, double *y) {
    const layout_t *a = &in[0].lay;
    const int64_t n0 = a->ne[0], rows_ne[4] = {1, a->ne[1], a->ne[2], a->ne[3]};
    const int64_t out_n0 = op == RT_OP_ARGMAX ? 1 : n0;
    double *x = malloc((size_t)n0 * sizeof *x);
    int64_t r[4];
    for (int64_t row = 0; row < lay_nelem(a) / n0; row++) {
        lay_unravel(row, rows_ne, r);
        for (int64_t k = 0; k < n0; k++) x[k] = in_at(&in[0], k, r[1], r[2], r[3]);
        ref_row(op, c, in, r, x, y + row * out_n0);
    }
    free(x);
}

/* b's logical values; with quantised weights each row rounded through
 * Q8_0 (rt_quantize, then rt_dequantize), as integer dot products see them. */
static double *ref_mul_mat_b(const input_t *in) {
    const layout_t *l = &in[1].lay;
    const int64_t n = lay_nelem(l), K = l->ne[0];
    double *b = malloc((size_t)n * sizeof *b);
    lay_read(l, in[1].bytes, b);
    if (!lay_is_quant(in[0].lay.type)) return b;
    float *row = malloc((size_t)K * sizeof *row);
    rt_block_q8_0_t *q = malloc((size_t)(K / 32) * sizeof *q);
    for (int64_t r = 0; r < n / K; r++) {
        for (int64_t j = 0; j < K; j++) row[j] = (float)b[r * K + j];
        rt_quantize(RT_TYPE_Q8_0, row, q, K);
        rt_dequantize(RT_TYPE_Q8_0, q, row, K);
        for (int64_t j = 0; j < K; j++) b[r * K + j] = row[j];
    }
    free(q);
    free(row);
    return b;
}

static void ref_mul_mat(const input_t *in, const layout_t *out, double *y) {
    const int64_t *an = in[0].lay.ne, *bn = in[1].lay.ne;
    const int64_t r2 = bn[2] / an[2], r3 = bn[3] / an[3]; /* b's i2 reads a's i2/r2 (ggml) */
    double *b = ref_mul_mat_b(in);
    int64_t i[4];
    for (int64_t k = 0; k < lay_nelem(out); k++) {
        lay_unravel(k, out->ne, i);
        const double *brow = b + ((i[3] * bn[2] + i[2]) * bn[1] + i[1]) * bn[0];
        double s = 0;
        for (int64_t j = 0; j < an[0]; j++) s += in_at(&in[0], j, i[0], i[2] / r2, i[3] / r3) * brow[j];
        y[k] = s;
    }
    free(b);
}

static void ref_get_rows(const input_t *in, const layout_t *out, double *y) {
    int64_t i[4];
    for (int64_t k = 0; k < lay_nelem(out); k++) {
        lay_unravel(k, out->ne, i);
        const int64_t row = (int64_t)in_at(&in[1], i[1], i[2], i[3], 0);
        y[k] = in_at(&in[0], i[0], row, i[2], i[3]);
    }
}

/* a's elements in logical order, as floats (every source type is exact in F32). */
static float *logical_floats(const input_t *a) {
    const int64_t n = lay_nelem(&a->lay);
    double *d = malloc((size_t)n * sizeof *d);
    float *v = malloc((size_t)n * sizeof *v);
    lay_read(&a->lay, a->bytes, d);
    for (int64_t k = 0; k < n; k++) v[k] = (float)d[k];
    free(d);
    return v;
}

/* CPY and CONT: expected bytes of the checked tensor (b's whole base for
 * rt_cpy, so bytes outside the view must stay as uploaded). */
static uint8_t *ref_copy_bytes(rt_op_t op, const op_case_t *c, const input_t *in, const layout_t *chk) {
    uint8_t *bytes = calloc(lay_span(chk), 1);
    layout_t dst = *chk;
    if (op == RT_OP_CPY && !c->ext) {
        memcpy(bytes, in[1].bytes, lay_span(chk));
        dst = in[1].lay;
    }
    float *v = logical_floats(&in[0]);
    if (op == RT_OP_CONT && lay_is_quant(dst.type)) { /* a block copy: source blocks as they are */
        int64_t i[4], j[4];
        for (int64_t k = 0; k < lay_nelem(&dst); k += 32) {
            lay_unravel(k, dst.ne, i);
            lay_unravel(k, in[0].lay.ne, j);
            memcpy(bytes + lay_addr(&dst, i), in[0].bytes + lay_addr(&in[0].lay, j), lay_type_bytes(dst.type));
        }
    } else {
        lay_write(&dst, bytes, v);
    }
    free(v);
    return bytes;
}

/* SET_ROWS: a's whole base as uploaded, with b's rows encoded over the
 * rows the indices name. */
static uint8_t *ref_set_rows_bytes(const input_t *in) {
    const layout_t *a = &in[0].lay, *b = &in[1].lay;
    uint8_t *bytes = malloc(lay_span(&in[0].base_lay));
    memcpy(bytes, in[0].bytes, lay_span(&in[0].base_lay));
    int64_t i[4];
    for (int64_t k = 0; k < lay_nelem(b); k++) {
        lay_unravel(k, b->ne, i);
        const int64_t at[4] = {i[0], (int64_t)in_at(&in[2], i[1], i[2], i[3], 0), i[2], i[3]};
        lay_encode(a->type, bytes + lay_addr(a, at), (float)in_at(&in[1], i[0], i[1], i[2], i[3]));
    }
    return bytes;
}

//===--- running one case ---===//

static rt_device_t *dev;
static rt_queue_t *queues[3];
static const int queue_threads[3] = {0, 1, 3}; /* 0: the device's default */

/* Static so that it survives a longjmp out of an aborting graph builder. */
static struct case_run {
    char label[512];
    rt_context_t *ctx;
    rt_buffer_t *buf;
    rt_graph_t *graph;
    input_t in[3];
    rt_tensor_t *out;
    rt_tensor_t *chk_t;   /* the tensor whose bytes are compared */
    layout_t chk;         /* its picture */
    uint8_t *want_bytes;  /* copies: expected bytes */
    uint8_t *got_bytes;
    double *ref, *got;
} run;

static void run_free(void) {
    for (int k = 0; k < 3; k++) free(run.in[k].bytes);
    free(run.want_bytes);
    free(run.got_bytes);
    free(run.ref);
    free(run.got);
    rt_buffer_free(run.buf);
    rt_context_destroy(run.ctx);
    memset(&run, 0, sizeof run);
}

static void append_label(const char *what, const layout_t *l) {
    char s[160];
    const size_t n = strlen(run.label);
    snprintf(run.label + n, sizeof run.label - n, " %s %s", what, lay_str(l, s, sizeof s));
}

static bool check_out(rt_op_t op, const op_case_t *c) {
    const layout_t want = expect_out(op, c, run.in);
    const rt_tensor_t *t = run.out;
    if (t == NULL || t->op != op) {
        tu_report("%s: result op %d, want %d", run.label, t ? t->op : -1, op);
        return false;
    }
    append_label("->", &want);
    if (op == RT_OP_CPY && !c->ext && t->view_src != run.in[1].base) {
        tu_report("%s: the CPY result is not a view of b", run.label);
        return false;
    }
    if (op == RT_OP_SET_ROWS && t->view_src != run.in[0].base) {
        tu_report("%s: the SET_ROWS result is not a view of a", run.label);
        return false;
    }
    return header_is(run.label, "result", t, &want) && check_params(run.label, op, c, t);
}

static void compute_ref(rt_op_t op, const op_case_t *c) {
    const layout_t *o = &run.chk;
    switch (op) {
    case RT_OP_CONT:
    case RT_OP_CPY:
        run.want_bytes = ref_copy_bytes(op, c, run.in, o);
        lay_read(o, run.want_bytes, run.ref);
        break;
    case RT_OP_GET_ROWS: ref_get_rows(run.in, o, run.ref); break;
    case RT_OP_SET_ROWS:
        run.want_bytes = ref_set_rows_bytes(run.in);
        lay_read(o, run.want_bytes, run.ref);
        break;
    case RT_OP_MUL_MAT: ref_mul_mat(run.in, o, run.ref); break;
    case RT_OP_NORM:
    case RT_OP_RMS_NORM:
    case RT_OP_SOFT_MAX:
    case RT_OP_ROPE:
    case RT_OP_ARGMAX: ref_rows(op, c, run.in, run.ref); break;
    default: {
        int64_t i[4];
        for (int64_t k = 0; k < lay_nelem(o); k++) {
            lay_unravel(k, o->ne, i);
            run.ref[k] = ref_element(op, c, run.in, i);
        }
    }
    }
}

/* Quantise-on-copy: every element within the format's error of the input:
 * Q8_0 half a step (amax/254), Q4_0 one step at the clamped end (amax/8),
 * each plus the F16 rounding of the scale (amax*2^-10 with margin). */
static bool check_quant_error(const char *label, const double *got) {
    const layout_t *o = &run.chk;
    float *x = logical_floats(&run.in[0]);
    const double step = o->type == RT_TYPE_Q8_0 ? 1.0 / 254 : 1.0 / 8;
    bool ok = true;
    for (int64_t b = 0; b < lay_nelem(o) && ok; b += 32) {
        double amax = 0;
        for (int k = 0; k < 32; k++) amax = fmax(amax, fabs(x[b + k]));
        for (int k = 0; k < 32 && ok; k++) {
            const double err = fabs(got[b + k] - x[b + k]), bound = amax * (step + 1.0 / 1024) + 1e-7;
            if (!(err <= bound)) {
                tu_report("%s: element %lld is %g for input %g: error %g > format bound %g", label,
                       (long long)(b + k), got[b + k], x[b + k], err, bound);
                ok = false;
            }
        }
    }
    free(x);
    return ok;
}

static bool run_once(rt_op_t op, const op_case_t *c, int q) {
    char label[600];
    snprintf(label, sizeof label, "%s (threads %d)", run.label, queue_threads[q]);
    for (int k = 0; k < 3 && run.in[k].spec != NULL; k++)
        if (!upload(&run.in[k])) return false;
    if (run.chk_t == run.out) rt_tensor_memset(run.out, 0xff, 0, rt_nbytes(run.out)); /* NaN / -1 */
    rt_status_t st = rt_queue_compute(queues[q], run.graph);
    if (st == RT_OK) st = rt_tensor_get(run.chk_t, run.got_bytes, 0, lay_span(&run.chk));
    if (st != RT_OK) {
        tu_report("%s: %s: %s", label, rt_status_name(st), rt_last_error());
        return false;
    }
    lay_read(&run.chk, run.got_bytes, run.got);
    const int64_t n = lay_nelem(&run.chk);
    const cmp_result_t r = compare_values(run.ref, run.got, n);
    if (!(r.err <= c->tol)) {
        int64_t i[4];
        lay_unravel(r.worst, run.chk.ne, i);
        tu_report("%s: nmse %.3g > tol %.0e; worst at [%lld,%lld,%lld,%lld]: expected %.9g, got %.9g", label, r.err,
               c->tol, (long long)i[0], (long long)i[1], (long long)i[2], (long long)i[3], run.ref[r.worst],
               run.got[r.worst]);
        return false;
    }
    if (op == RT_OP_CPY && lay_is_quant(run.chk.type)) {
        if (memcmp(run.want_bytes, run.got_bytes, lay_span(&run.chk)) != 0) {
            tu_report("%s: bytes differ from rt_quantize of the same data", label);
            return false;
        }
        return check_quant_error(label, run.got);
    }
    return true;
}

static bool supported(void) {
    for (int k = 0; k < 3 && run.in[k].spec != NULL; k++)
        if (run.in[k].t != run.in[k].base && !rt_device_supports_op(dev, run.in[k].t)) {
            tu_report("%s: supports_op is false for input view %d (op %d)", run.label, k, run.in[k].t->op);
            return false;
        }
    if (rt_device_supports_op(dev, run.out)) return true;
    tu_report("%s: supports_op is false for the result", run.label);
    return false;
}

static void case_body(rt_op_t op, const op_case_t *c) {
    run.ctx = tu_context(16, true);
    for (int k = 0; k < 3 && c->src[k].ne[0] != 0; k++) {
        make_input(run.ctx, &c->src[k], &run.in[k]);
        append_label(k == 0 ? "a" : k == 1 ? "b" : "c", &run.in[k].lay);
        if (!check_view(run.label, &run.in[k])) return;
    }
    run.out = build_op(run.ctx, op, c, run.in);
    if (!check_out(op, c)) return;
    run.graph = rt_graph_create(run.ctx, 64);
    rt_graph_build_forward_expand(run.graph, run.out);
    if (!supported()) return;
    const rt_status_t st = rt_alloc_ctx_tensors(run.ctx, rt_device_buffer_type(dev, 0), &run.buf);
    if (st != RT_OK) {
        tu_report("%s: rt_alloc_ctx_tensors: %s: %s", run.label, rt_status_name(st), rt_last_error());
        return;
    }
    for (int k = 0; k < 3 && run.in[k].spec != NULL; k++) fill_input(&run.in[k]);
    /* Copies into a destination are checked over its whole base. */
    const int into = op == RT_OP_CPY && !c->ext ? 1 : op == RT_OP_SET_ROWS ? 0 : -1;
    run.chk_t = into >= 0 ? run.in[into].base : run.out;
    run.chk = into >= 0 ? run.in[into].base_lay : expect_out(op, c, run.in);
    const int64_t n = lay_nelem(&run.chk);
    run.ref = malloc((size_t)n * sizeof *run.ref);
    run.got = malloc((size_t)n * sizeof *run.got);
    run.got_bytes = malloc(lay_span(&run.chk));
    compute_ref(op, c);
    for (int q = 0; q < 3; q++)
        if (!run_once(op, c, q)) break;
}

static void run_case(rt_op_t op, const op_case_t *c, const char *id) {
    jmp_buf jb;
    memset(&run, 0, sizeof run);
    snprintf(run.label, sizeof run.label, "%s %s [%s]", id, rt_op_name(op), c->name);
    tu_abort_target = &jb;
    rt_abort_set(tu_abort_hook, NULL);
    if (setjmp(jb) == 0)
        case_body(op, c);
    else
        tu_report("%s: the graph API aborted: %s", run.label, tu_abort_message);
    rt_abort_set(NULL, NULL);
    tu_abort_target = NULL;
    run_free();
}

//===--- the cmocka tests ---===//

typedef struct op_test {
    const char *name;
    rt_op_t sel; /* the table rows it runs (an op or a template) */
    rt_op_t op;  /* the op they run as */
} op_test_t;

static const op_test_t op_tests[] = {
    {"view family", OP_VIEWS, RT_OP_CONT}, {"CONT", RT_OP_CONT, RT_OP_CONT},
    {"CPY", RT_OP_CPY, RT_OP_CPY}, {"GET_ROWS", RT_OP_GET_ROWS, RT_OP_GET_ROWS},
    {"ADD", RT_OP_ADD, RT_OP_ADD}, {"SUB", RT_OP_SUB, RT_OP_SUB},
    {"MUL", RT_OP_MUL, RT_OP_MUL}, {"DIV", RT_OP_DIV, RT_OP_DIV},
    {"SCALE", RT_OP_SCALE, RT_OP_SCALE}, {"NORM", RT_OP_NORM, RT_OP_NORM},
    {"RMS_NORM", RT_OP_RMS_NORM, RT_OP_RMS_NORM}, {"MUL_MAT", RT_OP_MUL_MAT, RT_OP_MUL_MAT},
    {"SOFT_MAX", RT_OP_SOFT_MAX, RT_OP_SOFT_MAX}, {"DIAG_MASK_INF", RT_OP_DIAG_MASK_INF, RT_OP_DIAG_MASK_INF},
    {"GELU", RT_OP_GELU, RT_OP_GELU}, {"SILU", RT_OP_SILU, RT_OP_SILU},
    {"SWIGLU", RT_OP_SWIGLU, RT_OP_SWIGLU}, {"ROPE", RT_OP_ROPE, RT_OP_ROPE},
    {"ARGMAX", RT_OP_ARGMAX, RT_OP_ARGMAX}, {"SET_ROWS", RT_OP_SET_ROWS, RT_OP_SET_ROWS},
};

#define N_OP_TESTS (sizeof op_tests / sizeof op_tests[0])

static bool case_applies(const op_case_t *c, const op_test_t *t) {
    switch (c->op) {
    case OP_BINARY: return t->sel >= RT_OP_ADD && t->sel <= RT_OP_DIV;
    case OP_ROWNORM: return t->sel == RT_OP_NORM || t->sel == RT_OP_RMS_NORM;
    case OP_ACT: return t->sel == RT_OP_GELU || t->sel == RT_OP_SILU;
    default: return c->op == t->sel;
    }
}

static void test_op_cases(void **state) {
    const op_test_t *t = *state;
    const int test_no = (int)(t - op_tests) + 1;
    int n_run = 0;
    tu_n_failed = 0;
    for (size_t k = 0; k < N_CASES; k++) {
        if (!case_applies(&cases[k], t)) continue;
        char id[32];
        snprintf(id, sizeof id, "ops-%d.%d", test_no, ++n_run);
        tu_seed(0x5eed0000u + (uint64_t)test_no * 1000 + (uint64_t)n_run);
        run_case(t->op, &cases[k], id);
    }
    assert_true(n_run > 0);
    if (tu_n_failed > 0) fail_msg("%s: %d failing check(s) in %d case(s), listed above", t->name, tu_n_failed, n_run);
}

//===--- main ---===//

static int group_setup(void **state) {
    (void)state;
    dev = tu_cpu_device();
    for (int q = 0; q < 3; q++) {
        const rt_queue_options_t opt = {.struct_size = sizeof opt, .n_threads = queue_threads[q]};
        const rt_status_t st = rt_queue_create(dev, q == 0 ? NULL : &opt, &queues[q]);
        if (st != RT_OK) {
            print_error("rt_queue_create(%d threads): %s: %s\n", queue_threads[q], rt_status_name(st),
                        rt_last_error());
            return -1;
        }
    }
    return 0;
}

static int group_teardown(void **state) {
    (void)state;
    for (int q = 0; q < 3; q++) rt_queue_destroy(queues[q]);
    return 0;
}

int main(void) {
    static struct CMUnitTest tests[N_OP_TESTS];
    for (size_t k = 0; k < N_OP_TESTS; k++)
        tests[k] = (struct CMUnitTest){.name = op_tests[k].name, .test_func = test_op_cases,
                                       .initial_state = (void *)&op_tests[k]};
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
