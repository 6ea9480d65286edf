/* SPDX-License-Identifier: MIT */
/* rt-test-ops: the conformance check of every device against the CPU
 * plugin, op by op (ggml's test-backend-ops). For each device that is not
 * the CPU's and each case of the table below (ops, types, shapes, strided,
 * permuted and broadcast inputs), it builds the one-op graph twice, each in
 * its own no_alloc context placed with rt_alloc_ctx_tensors on buffer type
 * 0 of its device, fills both with the same seeded random inputs, runs one
 * on the device and one on the CPU, and compares the outputs by normalised
 * error, sqrt(sum (d - c)^2 / sum c^2), against the case's tolerance.
 * A few multi-node cases ("GRAPH", "KV") are placed by a gallocr instead, so
 * that memory reuse, in-place ops and writes through views (a KV cache
 * written by SET_ROWS, then read) exercise the device's hazard tracking.
 *
 *   rt-test-ops [perf] [--device NAME] [--op NAME]
 *
 * One line per case (OK, FAIL, or not supported), then "N passed, N failed,
 * N unsupported"; the exit status is 1 when any case failed. `perf` runs
 * larger cases and prints GFLOPS (MUL_MAT) or GB/s (the rest) for the
 * device and for the CPU. Uses the public API only. */
#include "../abi/rt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

//===--- the cases ---===//

#define NONE (-1)     /* no tensor of that role */
#define OP_GRAPH (-2) /* a small multi-node graph, not one op */
#define OP_KV (-3)    /* KV caches written by SET_ROWS, read back by MUL_MAT */

/* How an input tensor is laid out; its logical shape is always the case's. */
enum {
    LAY_CONT,      /* contiguous */
    LAY_PERMUTE,   /* dims 1 and 2 swapped in memory: rows contiguous, the rest strided */
    LAY_TRANSPOSE, /* dims 0 and 1 swapped in memory: nb[0] > nb[1] */
    LAY_PAD        /* rows with a gap after them, starting one element in */
};

typedef struct tcase {
    rt_op_t op;
    rt_type_t ta, tb;          /* types of a and b; tb NONE when there is no b */
    int64_t na[4], nb[4];      /* shapes of a and b (nb[0] == 0: b as a, or absent) */
    int lay_a, lay_b;          /* LAY_* */
    float f0, f1;              /* eps, scale, freq_base, freq_scale */
    int32_t i0, i1;            /* n_past, n_dims, rope mode */
    int32_t irange;            /* I32 inputs take values in [0, irange) */
    double tol;                /* largest normalised error that passes */
    bool distinct;             /* I32 inputs distinct within each row (SET_ROWS:
                                  repeated indices leave the result unspecified) */
} tcase_t;

/* Tolerances, as normalised errors. Conversions between float types are
 * exact (the contract fixes every bit: round to nearest even); a result
 * computed in F32 and stored as F16 may differ by the last bit (2^-11);
 * dot products and transcendental functions differ in their last bits of
 * F32 rounding. Quantising divides by the block's scale, which a device may
 * round differently by an ulp, moving a rare element by one step.
 * MUL_MAT with Q8_0/Q4_0 a: the CPU plugin rounds b through Q8_0 first (as
 * ggml does), a device may use b as it is, so the two differ by Q8_0's
 * rounding of b (~2^-8 relative); the dequantisation itself is checked
 * exactly by the GET_ROWS cases. */
#define TOL_QUANT 5e-3
#define TOL_QMM 2e-2

#define F32 RT_TYPE_F32
#define F16 RT_TYPE_F16
#define BF16 RT_TYPE_BF16
#define Q8 RT_TYPE_Q8_0
#define Q4 RT_TYPE_Q4_0
#define I32 RT_TYPE_I32
#define S(...) { __VA_ARGS__ }

static const tcase_t cases[] = {
    /* copies: CONT (with and without reshape), CPY between float types and into blocks */
    { RT_OP_CONT, F32, NONE, S(10, 7, 3, 2), S(0), LAY_PERMUTE, 0, .tol = 0 },
    { RT_OP_CONT, F32, NONE, S(10, 7, 3, 2), S(0), LAY_TRANSPOSE, 0, .tol = 0 },
    { RT_OP_CONT, F16, NONE, S(33, 5, 4, 1), S(0), LAY_PAD, 0, .tol = 0 },
    { RT_OP_CONT, BF16, NONE, S(8, 9, 2, 3), S(0), LAY_TRANSPOSE, 0, .tol = 0 },
    { RT_OP_CONT, F32, NONE, S(12, 6, 5, 1), S(30, 12, 1, 1), LAY_PERMUTE, 0, .tol = 0 },
    { RT_OP_CPY, F32, F16, S(64, 5, 3, 1), S(0), LAY_CONT, LAY_CONT, .tol = 0 },
    { RT_OP_CPY, F16, F32, S(64, 5, 3, 1), S(0), LAY_TRANSPOSE, LAY_CONT, .tol = 0 },
    { RT_OP_CPY, F32, BF16, S(31, 7, 2, 2), S(0), LAY_PAD, LAY_PERMUTE, .tol = 0 },
    { RT_OP_CPY, BF16, F16, S(31, 7, 2, 2), S(0), LAY_CONT, LAY_TRANSPOSE, .tol = 0 },
    { RT_OP_CPY, F32, F32, S(17, 9, 4, 1), S(0), LAY_TRANSPOSE, LAY_PAD, .tol = 0 },
    { RT_OP_CPY, F32, Q8, S(128, 6, 2, 1), S(0), LAY_CONT, LAY_CONT, .tol = TOL_QUANT },
    { RT_OP_CPY, F32, Q4, S(64, 7, 3, 1), S(0), LAY_PERMUTE, LAY_CONT, .tol = TOL_QUANT },
    /* GET_ROWS from every type, batched */
    { RT_OP_GET_ROWS, F32, I32, S(20, 9, 1, 1), S(6, 1, 1, 1), LAY_CONT, 0, .irange = 9, .tol = 0 },
    { RT_OP_GET_ROWS, F16, I32, S(20, 9, 3, 2), S(5, 3, 2, 1), LAY_PAD, 0, .irange = 9, .tol = 0 },
    { RT_OP_GET_ROWS, BF16, I32, S(16, 7, 1, 1), S(4, 1, 1, 1), LAY_CONT, 0, .irange = 7, .tol = 0 },
    { RT_OP_GET_ROWS, Q8, I32, S(64, 10, 2, 1), S(7, 2, 1, 1), LAY_CONT, 0, .irange = 10, .tol = 1e-6 },
    { RT_OP_GET_ROWS, Q4, I32, S(96, 10, 1, 1), S(7, 1, 1, 1), LAY_PERMUTE, 0, .irange = 10, .tol = 1e-6 },
    /* SET_ROWS into every float type: a (pre-filled, so the untouched rows are
     * checked to keep their bytes) {n0, n1, n2, n3}, b F32 {n0, m, n2, n3};
     * rows of 64, batched, strided b, and the transposed V cache's rows of
     * one element, thousands of them */
    { RT_OP_SET_ROWS, F32, F32, S(64, 20, 1, 1), S(64, 7, 1, 1), LAY_CONT, LAY_CONT, .irange = 20, .distinct = true, .tol = 0 },
    { RT_OP_SET_ROWS, F16, F32, S(64, 16, 3, 2), S(64, 5, 3, 2), LAY_CONT, LAY_PERMUTE, .irange = 16, .distinct = true, .tol = 0 },
    { RT_OP_SET_ROWS, BF16, F32, S(64, 12, 2, 1), S(64, 12, 2, 1), LAY_CONT, LAY_TRANSPOSE, .irange = 12, .distinct = true, .tol = 0 },
    { RT_OP_SET_ROWS, F32, F32, S(33, 10, 2, 1), S(33, 4, 2, 1), LAY_PAD, LAY_PAD, .irange = 10, .distinct = true, .tol = 0 },
    { RT_OP_SET_ROWS, F16, F32, S(1, 8192, 1, 1), S(1, 3000, 1, 1), LAY_CONT, LAY_CONT, .irange = 8192, .distinct = true, .tol = 0 },
    { RT_OP_SET_ROWS, F32, F32, S(1, 4096, 1, 1), S(1, 2500, 1, 1), LAY_CONT, LAY_TRANSPOSE, .irange = 4096, .distinct = true, .tol = 0 },
    { RT_OP_SET_ROWS, BF16, F32, S(1, 5000, 2, 1), S(1, 2048, 2, 1), LAY_CONT, LAY_PERMUTE, .irange = 5000, .distinct = true, .tol = 0 },
    /* a transposed destination: columns, as the model writes its transposed V cache */
    { RT_OP_SET_ROWS, F16, F32, S(64, 300, 1, 1), S(64, 40, 1, 1), LAY_TRANSPOSE, LAY_CONT, .irange = 300, .distinct = true, .tol = 0 },
    { RT_OP_SET_ROWS, F32, F32, S(32, 1000, 1, 1), S(32, 700, 1, 1), LAY_TRANSPOSE, LAY_PERMUTE, .irange = 1000, .distinct = true, .tol = 0 },
    /* binary ops: same shape, broadcast, strided */
    { RT_OP_ADD, F32, F32, S(16, 5, 4, 3), S(16, 5, 4, 3), LAY_CONT, LAY_CONT, .tol = 1e-6 },
    { RT_OP_ADD, F32, F32, S(16, 5, 4, 3), S(16, 1, 4, 1), LAY_PERMUTE, LAY_CONT, .tol = 1e-6 },
    { RT_OP_ADD, F16, F16, S(16, 5, 4, 3), S(1, 5, 1, 3), LAY_CONT, LAY_CONT, .tol = 1e-3 },
    { RT_OP_SUB, F32, F32, S(7, 6, 5, 4), S(7, 1, 1, 1), LAY_TRANSPOSE, LAY_PAD, .tol = 1e-6 },
    { RT_OP_SUB, F16, F16, S(32, 8, 1, 1), S(32, 8, 1, 1), LAY_PAD, LAY_TRANSPOSE, .tol = 1e-3 },
    { RT_OP_MUL, F32, F32, S(64, 10, 2, 1), S(64, 1, 1, 1), LAY_CONT, LAY_CONT, .tol = 1e-6 },
    { RT_OP_MUL, F16, F16, S(10, 10, 3, 2), S(10, 10, 1, 2), LAY_PERMUTE, LAY_CONT, .tol = 1e-3 },
    { RT_OP_DIV, F32, F32, S(33, 3, 2, 2), S(33, 3, 2, 1), LAY_CONT, LAY_PERMUTE, .tol = 1e-6 },
    { RT_OP_DIV, F16, F16, S(16, 4, 1, 1), S(1, 4, 1, 1), LAY_CONT, LAY_CONT, .tol = 1e-3 },
    /* unary */
    { RT_OP_SCALE, F32, NONE, S(25, 6, 2, 1), S(0), LAY_PERMUTE, 0, 0.3f, .tol = 1e-6 },
    { RT_OP_SCALE, F16, NONE, S(25, 6, 2, 1), S(0), LAY_CONT, 0, -2.5f, .tol = 1e-3 },
    { RT_OP_GELU, F32, NONE, S(100, 8, 1, 1), S(0), LAY_CONT, 0, .tol = 1e-5 },
    { RT_OP_GELU, F16, NONE, S(50, 7, 3, 1), S(0), LAY_TRANSPOSE, 0, .tol = 2e-3 },
    { RT_OP_SILU, F32, NONE, S(100, 8, 1, 1), S(0), LAY_PAD, 0, .tol = 1e-5 },
    { RT_OP_SILU, F16, NONE, S(50, 7, 3, 1), S(0), LAY_CONT, 0, .tol = 2e-3 },
    { RT_OP_SWIGLU, F32, F32, S(64, 9, 2, 1), S(64, 9, 2, 1), LAY_CONT, LAY_PERMUTE, .tol = 1e-5 },
    { RT_OP_SWIGLU, F16, F16, S(64, 9, 2, 1), S(64, 9, 2, 1), LAY_PAD, LAY_CONT, .tol = 2e-3 },
    { RT_OP_DIAG_MASK_INF, F32, NONE, S(10, 10, 3, 1), S(0), LAY_CONT, 0, .i0 = 0, .tol = 0 },
    { RT_OP_DIAG_MASK_INF, F32, NONE, S(12, 5, 2, 2), S(0), LAY_PERMUTE, 0, .i0 = 7, .tol = 0 },
    /* rows */
    { RT_OP_NORM, F32, NONE, S(64, 10, 3, 1), S(0), LAY_CONT, 0, 1e-5f, .tol = 1e-5 },
    { RT_OP_NORM, F32, NONE, S(1000, 3, 2, 1), S(0), LAY_PERMUTE, 0, 1e-6f, .tol = 1e-5 },
    { RT_OP_RMS_NORM, F32, NONE, S(64, 10, 3, 1), S(0), LAY_CONT, 0, 1e-6f, .tol = 1e-5 },
    { RT_OP_RMS_NORM, F32, NONE, S(4096, 2, 1, 1), S(0), LAY_PAD, 0, 1e-5f, .tol = 1e-5 },
    { RT_OP_RMS_NORM, F32, NONE, S(17, 5, 2, 3), S(0), LAY_TRANSPOSE, 0, 1e-6f, .tol = 1e-5 },
    { RT_OP_SOFT_MAX, F32, NONE, S(32, 8, 4, 1), S(0), LAY_CONT, 0, 1.0f, .tol = 1e-5 },
    { RT_OP_SOFT_MAX, F32, F32, S(40, 8, 4, 2), S(40, 9, 1, 1), LAY_PERMUTE, LAY_CONT, 0.125f, .tol = 1e-5 },
    { RT_OP_SOFT_MAX, F32, F16, S(300, 5, 2, 1), S(300, 5, 2, 1), LAY_CONT, LAY_PAD, 0.5f, .tol = 1e-5 },
    { RT_OP_ARGMAX, F32, NONE, S(100, 20, 1, 1), S(0), LAY_CONT, 0, .tol = 0 },
    { RT_OP_ARGMAX, F32, NONE, S(5000, 3, 2, 1), S(0), LAY_PERMUTE, 0, .tol = 0 },
    /* ROPE, normal and neox, with pass-through dims */
    { RT_OP_ROPE, F32, I32, S(64, 4, 6, 1), S(0), LAY_CONT, 0, 10000.0f, 1.0f, 64, RT_ROPE_MODE_NORMAL, 64, .tol = 1e-4 },
    { RT_OP_ROPE, F32, I32, S(64, 4, 6, 1), S(0), LAY_PERMUTE, 0, 10000.0f, 1.0f, 32, RT_ROPE_MODE_NEOX, 64, .tol = 1e-4 },
    { RT_OP_ROPE, F16, I32, S(32, 2, 5, 2), S(0), LAY_CONT, 0, 500000.0f, 0.5f, 24, RT_ROPE_MODE_NEOX, 64, .tol = 2e-3 },
    { RT_OP_ROPE, F32, I32, S(18, 3, 4, 1), S(0), LAY_PAD, 0, 10000.0f, 1.0f, 16, RT_ROPE_MODE_NORMAL, 64, .tol = 1e-4 },
    /* MUL_MAT: every a type, vectors and matrices, broadcast, strided */
    { RT_OP_MUL_MAT, F32, F32, S(64, 16, 1, 1), S(64, 1, 1, 1), LAY_CONT, LAY_CONT, .tol = 1e-5 },
    { RT_OP_MUL_MAT, F32, F32, S(67, 13, 3, 1), S(67, 9, 3, 2), LAY_CONT, LAY_CONT, .tol = 1e-5 },
    { RT_OP_MUL_MAT, F32, F32, S(32, 12, 2, 2), S(32, 5, 6, 2), LAY_PERMUTE, LAY_PERMUTE, .tol = 1e-5 },
    { RT_OP_MUL_MAT, F32, F32, S(40, 8, 4, 1), S(40, 10, 4, 1), LAY_PAD, LAY_PAD, .tol = 1e-5 },
    { RT_OP_MUL_MAT, F16, F32, S(128, 32, 1, 1), S(128, 1, 1, 1), LAY_CONT, LAY_CONT, .tol = 1e-5 },
    { RT_OP_MUL_MAT, F16, F32, S(64, 20, 2, 1), S(64, 17, 4, 1), LAY_PERMUTE, LAY_CONT, .tol = 1e-5 },
    { RT_OP_MUL_MAT, BF16, F32, S(64, 16, 1, 1), S(64, 7, 1, 1), LAY_CONT, LAY_CONT, .tol = 1e-5 },
    { RT_OP_MUL_MAT, Q8, F32, S(256, 16, 1, 1), S(256, 1, 1, 1), LAY_CONT, LAY_CONT, .tol = TOL_QMM },
    { RT_OP_MUL_MAT, Q8, F32, S(128, 24, 2, 1), S(128, 11, 2, 3), LAY_CONT, LAY_PERMUTE, .tol = TOL_QMM },
    { RT_OP_MUL_MAT, Q4, F32, S(256, 16, 1, 1), S(256, 1, 1, 1), LAY_CONT, LAY_CONT, .tol = TOL_QMM },
    { RT_OP_MUL_MAT, Q4, F32, S(64, 9, 1, 2), S(64, 33, 3, 2), LAY_PAD, LAY_CONT, .tol = TOL_QMM },
    /* multi-node graphs placed by a gallocr: dependencies, reuse, in-place */
    { OP_GRAPH, F32, F32, S(64, 4, 1, 1), S(0), LAY_CONT, 0, 1e-5f, .tol = 1e-5 },
    { OP_GRAPH, Q8, F32, S(128, 8, 1, 1), S(0), LAY_CONT, 0, 1e-6f, .tol = TOL_QMM },
    /* KV caches of type ta, na = {n_embd, n_ctx}, m = nb[1] tokens; one index
     * range serves both caches, so m * n_embd <= n_ctx */
    { OP_KV, F16, F32, S(16, 64, 1, 1), S(16, 3, 1, 1), LAY_CONT, 0, .irange = 64, .distinct = true, .tol = 1e-5 },
    { OP_KV, F32, F32, S(32, 256, 1, 1), S(32, 7, 1, 1), LAY_CONT, 0, .irange = 256, .distinct = true, .tol = 1e-5 },
};

/* Larger shapes, for `perf`. */
static const tcase_t perf_cases[] = {
    { RT_OP_MUL_MAT, F32, F32, S(4096, 4096, 1, 1), S(4096, 1, 1, 1), LAY_CONT, LAY_CONT, .tol = 0 },
    { RT_OP_MUL_MAT, F16, F32, S(4096, 4096, 1, 1), S(4096, 1, 1, 1), LAY_CONT, LAY_CONT, .tol = 0 },
    { RT_OP_MUL_MAT, Q8, F32, S(4096, 4096, 1, 1), S(4096, 1, 1, 1), LAY_CONT, LAY_CONT, .tol = 0 },
    { RT_OP_MUL_MAT, Q4, F32, S(4096, 4096, 1, 1), S(4096, 1, 1, 1), LAY_CONT, LAY_CONT, .tol = 0 },
    { RT_OP_MUL_MAT, F16, F32, S(4096, 1024, 1, 1), S(4096, 64, 1, 1), LAY_CONT, LAY_CONT, .tol = 0 },
    { RT_OP_MUL_MAT, Q8, F32, S(4096, 1024, 1, 1), S(4096, 64, 1, 1), LAY_CONT, LAY_CONT, .tol = 0 },
    { RT_OP_ADD, F32, F32, S(4096, 1024, 1, 1), S(4096, 1, 1, 1), LAY_CONT, LAY_CONT, .tol = 0 },
    { RT_OP_CPY, F32, F16, S(4096, 1024, 1, 1), S(0), LAY_CONT, LAY_CONT, .tol = 0 },
    { RT_OP_RMS_NORM, F32, NONE, S(4096, 512, 1, 1), S(0), LAY_CONT, 0, 1e-6f, .tol = 0 },
    { RT_OP_SOFT_MAX, F32, F32, S(1024, 32, 32, 1), S(1024, 32, 1, 1), LAY_CONT, LAY_CONT, 0.125f, .tol = 0 },
    { RT_OP_ROPE, F32, I32, S(128, 32, 512, 1), S(0), LAY_CONT, 0, 10000.0f, 1.0f, 128, RT_ROPE_MODE_NEOX, 512, .tol = 0 },
    { RT_OP_GET_ROWS, Q8, I32, S(4096, 8192, 1, 1), S(512, 1, 1, 1), LAY_CONT, 0, .irange = 8192, .tol = 0 },
};

//===--- building a case's graph ---===//

static rt_tensor_t *input(rt_context_t *ctx, rt_type_t type, const int64_t ne[4], int lay) {
    const int64_t pad = rt_blck_size(type) > 1 ? rt_blck_size(type) : 3;
    switch (lay) {
    case LAY_PERMUTE:
        return rt_permute(ctx, rt_new_tensor_4d(ctx, type, ne[0], ne[2], ne[1], ne[3]), 0, 2, 1, 3);
    case LAY_TRANSPOSE:
        return rt_transpose(ctx, rt_new_tensor_4d(ctx, type, ne[1], ne[0], ne[2], ne[3]));
    case LAY_PAD: {
        rt_tensor_t *base = rt_new_tensor_4d(ctx, type, ne[0] + pad, ne[1], ne[2], ne[3]);
        const size_t offset = rt_blck_size(type) > 1 ? 0 : rt_type_size(type);
        return rt_view_4d(ctx, base, ne[0], ne[1], ne[2], ne[3], base->nb[1], base->nb[2],
                          base->nb[3], offset);
    }
    default:
        return rt_new_tensor_4d(ctx, type, ne[0], ne[1], ne[2], ne[3]);
    }
}

static const int64_t *shape_b(const tcase_t *c) { return c->nb[0] ? c->nb : c->na; }

static rt_tensor_t *build_binary(rt_context_t *ctx, const tcase_t *c, rt_tensor_t *a) {
    rt_tensor_t *b = input(ctx, c->tb, shape_b(c), c->lay_b);
    switch (c->op) {
    case RT_OP_ADD: return rt_add(ctx, a, b);
    case RT_OP_SUB: return rt_sub(ctx, a, b);
    case RT_OP_MUL: return rt_mul(ctx, a, b);
    case RT_OP_DIV: return rt_div(ctx, a, b);
    case RT_OP_SWIGLU: return rt_swiglu(ctx, a, b);
    default: return rt_mul_mat(ctx, a, b);
    }
}

static rt_tensor_t *build_copy(rt_context_t *ctx, const tcase_t *c, rt_tensor_t *a) {
    if (c->op == RT_OP_CPY) return rt_cpy(ctx, a, input(ctx, c->tb, c->na, c->lay_b));
    if (!c->nb[0]) return rt_cont(ctx, a);
    return rt_cont_4d(ctx, a, c->nb[0], c->nb[1], c->nb[2], c->nb[3]);
}

/* A small transformer-ish block: norm, two projections, SwiGLU, a third
 * projection, residual add, softmax. Several independent nodes, chains of
 * dependencies, and (under a gallocr) in-place reuse. */
static rt_tensor_t *build_graph(rt_context_t *ctx, const tcase_t *c, rt_tensor_t *x) {
    const int64_t d = c->na[0], n = c->na[1], h = 2 * d;
    rt_tensor_t *w1 = rt_new_tensor_2d(ctx, c->ta, d, h), *w3 = rt_new_tensor_2d(ctx, c->ta, d, h);
    rt_tensor_t *w2 = rt_new_tensor_2d(ctx, c->ta == RT_TYPE_F32 ? RT_TYPE_F32 : RT_TYPE_F16, h, d);
    rt_tensor_t *xn = rt_rms_norm(ctx, x, c->f0);
    rt_tensor_t *g = rt_swiglu(ctx, rt_mul_mat(ctx, w1, xn), rt_mul_mat(ctx, w3, xn));
    rt_tensor_t *y = rt_add(ctx, rt_mul_mat(ctx, w2, g), x);
    rt_tensor_t *s = rt_soft_max_ext(ctx, rt_scale(ctx, y, 0.5f), NULL, 1.0f);
    /* d is a multiple of n, so the n x n corner of y repeats into s. */
    rt_tensor_t *corner = rt_cont(ctx, rt_transpose(ctx, rt_view_2d(ctx, y, n, n, y->nb[1], 0)));
    return rt_add(ctx, s, corner);
}

/* The decode graph's KV cache, small: SET_ROWS writes the step's m rows
 * of K and, through a {1, n_ctx * n_embd} reshape, m * n_embd one-element
 * rows of the transposed V cache (indices in [0, n_ctx): the case draws
 * one range for every index tensor); MUL_MATs then read both caches
 * through views of the SET_ROWS results, so the reads must wait for the
 * writes to the same bytes. */
static rt_tensor_t *build_kv(rt_context_t *ctx, const tcase_t *c) {
    const int64_t d = c->na[0], n_ctx = c->na[1], m = c->nb[1];
    rt_tensor_t *k = rt_new_tensor_2d(ctx, c->ta, d, n_ctx), *v = rt_new_tensor_2d(ctx, c->ta, n_ctx, d);
    rt_tensor_t *k_cur = rt_new_tensor_2d(ctx, RT_TYPE_F32, d, m);
    rt_tensor_t *v_cur = rt_new_tensor_2d(ctx, RT_TYPE_F32, 1, d * m);
    rt_tensor_t *k_set = rt_set_rows(ctx, k, k_cur, rt_new_tensor_1d(ctx, RT_TYPE_I32, m));
    rt_tensor_t *v_set = rt_set_rows(ctx, rt_reshape_2d(ctx, v, 1, n_ctx * d), v_cur,
                                     rt_new_tensor_1d(ctx, RT_TYPE_I32, d * m));
    rt_tensor_t *q = rt_new_tensor_2d(ctx, RT_TYPE_F32, d, 3);
    rt_tensor_t *kq = rt_mul_mat(ctx, rt_view_2d(ctx, k_set, d, n_ctx, k->nb[1], 0), q);
    return rt_mul_mat(ctx, rt_view_2d(ctx, v_set, n_ctx, d, v->nb[1], 0), kq);
}

static rt_tensor_t *build_op(rt_context_t *ctx, const tcase_t *c) {
    if (c->op == OP_KV) return build_kv(ctx, c);
    const rt_type_t ta = c->op == OP_GRAPH ? RT_TYPE_F32 : c->ta;
    rt_tensor_t *a = input(ctx, ta, c->na, c->lay_a);
    switch (c->op) {
    case OP_GRAPH: return build_graph(ctx, c, a);
    case RT_OP_CONT: case RT_OP_CPY: return build_copy(ctx, c, a);
    case RT_OP_GET_ROWS: return rt_get_rows(ctx, a, rt_new_tensor_3d(ctx, RT_TYPE_I32, c->nb[0], c->nb[1], c->nb[2]));
    case RT_OP_SET_ROWS:
        return rt_set_rows(ctx, a, input(ctx, c->tb, c->nb, c->lay_b),
                           rt_new_tensor_3d(ctx, RT_TYPE_I32, c->nb[1], c->nb[2], c->nb[3]));
    case RT_OP_SCALE: return rt_scale(ctx, a, c->f0);
    case RT_OP_NORM: return rt_norm(ctx, a, c->f0);
    case RT_OP_RMS_NORM: return rt_rms_norm(ctx, a, c->f0);
    case RT_OP_GELU: return rt_gelu(ctx, a);
    case RT_OP_SILU: return rt_silu(ctx, a);
    case RT_OP_DIAG_MASK_INF: return rt_diag_mask_inf(ctx, a, c->i0);
    case RT_OP_ARGMAX: return rt_argmax(ctx, a);
    case RT_OP_SOFT_MAX:
        return rt_soft_max_ext(ctx, a, c->tb == NONE ? NULL : input(ctx, c->tb, c->nb, c->lay_b), c->f0);
    case RT_OP_ROPE:
        return rt_rope_ext(ctx, a, rt_new_tensor_1d(ctx, RT_TYPE_I32, c->na[2]), c->i0, c->i1,
                           c->f0, c->f1);
    default: return build_binary(ctx, c, a);
    }
}

//===--- one side of a comparison: a graph placed on one device ---===//

typedef struct side {
    rt_device_t *dev;
    rt_queue_t *queue;
    rt_context_t *ctx;
    rt_graph_t *graph;
    rt_tensor_t *out;
    rt_buffer_t *buf;        /* rt_alloc_ctx_tensors, or NULL */
    rt_gallocr_t *galloc;    /* for OP_GRAPH cases, or NULL */
} side_t;

static void side_free(side_t *s) {
    rt_buffer_free(s->buf);
    rt_gallocr_destroy(s->galloc);
    rt_context_destroy(s->ctx);
    s->buf = NULL;
    s->galloc = NULL;
    s->ctx = NULL;
}

static rt_status_t side_build(side_t *s, const tcase_t *c) {
    rt_context_params_t p = { .struct_size = sizeof p, .no_alloc = true,
                              .mem_size = 64 * rt_tensor_overhead() + rt_graph_overhead(64) };
    rt_status_t st = rt_context_create(&p, &s->ctx);
    if (st != RT_OK) return st;
    s->out = build_op(s->ctx, c);
    rt_set_output(s->out);
    s->graph = rt_graph_create(s->ctx, 64);
    rt_graph_build_forward_expand(s->graph, s->out);
    return RT_OK;
}

static bool side_supported(const side_t *s) {
    for (int32_t i = 0; i < rt_graph_n_nodes(s->graph); i++)
        if (!rt_device_supports_op(s->dev, rt_graph_node(s->graph, i))) return false;
    return true;
}

static rt_status_t side_place(side_t *s, const tcase_t *c) {
    rt_buffer_type_t *buft = rt_device_buffer_type(s->dev, 0);
    if (c->op != OP_GRAPH && c->op != OP_KV) return rt_alloc_ctx_tensors(s->ctx, buft, &s->buf);
    rt_status_t st = rt_gallocr_create(buft, &s->galloc);
    return st == RT_OK ? rt_gallocr_alloc_graph(s->galloc, s->graph) : st;
}

//===--- inputs ---===//

static uint64_t rng_next(uint64_t *state) { /* splitmix64 */
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static float rng_float(uint64_t *state) { /* uniform in [-1, 1) */
    return (float)((double)(rng_next(state) >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}

/* n indices, row after row of ne0, each row the first ne0 values of a
 * random permutation of [0, irange) (a partial Fisher-Yates shuffle).
 * RT_ERR_INVALID_ARGUMENT when a row is longer than the range. */
static rt_status_t fill_distinct(int32_t *out, int64_t n, int64_t ne0, int32_t irange,
                                 uint64_t *seed) {
    if (ne0 > irange) return RT_ERR_INVALID_ARGUMENT;
    int32_t *perm = malloc((size_t)(irange > 0 ? irange : 1) * sizeof *perm);
    if (!perm) return RT_ERR_OUT_OF_MEMORY;
    for (int64_t r = 0; r < n; r += ne0) {
        for (int32_t i = 0; i < irange; i++) perm[i] = i;
        for (int64_t j = 0; j < ne0; j++) {
            const int64_t k = j + (int64_t)(rng_next(seed) % (uint64_t)(irange - j));
            const int32_t x = perm[k];
            perm[k] = perm[j];
            out[r + j] = perm[j] = x;
        }
    }
    free(perm);
    return RT_OK;
}

/* t's bytes (a contiguous leaf), drawn from seed: floats in [-1, 1)
 * converted to its type, or indices in [0, c->irange) for I32, distinct
 * within each row when the case asks. f holds rt_nelements(t) floats. */
static rt_status_t fill_values(const rt_tensor_t *t, const tcase_t *c, uint64_t seed, void *data,
                               float *f) {
    const int64_t n = rt_nelements(t);
    if (t->type == RT_TYPE_I32 && c->distinct) return fill_distinct(data, n, t->ne[0], c->irange, &seed);
    const uint64_t range = (uint64_t)(c->irange > 0 ? c->irange : 1);
    for (int64_t i = 0; i < n; i++) {
        if (t->type == RT_TYPE_I32) ((int32_t *)data)[i] = (int32_t)(rng_next(&seed) % range);
        else f[i] = rng_float(&seed);
    }
    if (t->type != RT_TYPE_I32) rt_quantize(t->type, f, data, n);
    return RT_OK;
}

/* Fills leaf t with values drawn from seed (fill_values). */
static rt_status_t fill(rt_tensor_t *t, const tcase_t *c, uint64_t seed) {
    const int64_t n = rt_nelements(t);
    const size_t bytes = rt_nbytes(t);
    void *data = malloc(bytes ? bytes : 1);
    float *f = malloc((size_t)(n ? n : 1) * sizeof *f);
    rt_status_t st = data && f ? fill_values(t, c, seed, data, f) : RT_ERR_OUT_OF_MEMORY;
    if (st == RT_OK) st = rt_tensor_set(t, data, 0, bytes);
    free(data);
    free(f);
    return st;
}

static rt_status_t side_fill(side_t *s, const tcase_t *c, uint64_t seed) {
    rt_status_t st = RT_OK;
    for (int32_t i = 0; st == RT_OK && i < rt_graph_n_leafs(s->graph); i++)
        st = fill(rt_graph_leaf(s->graph, i), c, seed * 1000003u + (uint64_t)i);
    return st;
}

/* The output's bytes as doubles: the whole base tensor when it is a view
 * (CPY writes into b), converted from its type. NULL on failure. */
static double *side_output(const side_t *s, int64_t *out_n) {
    const rt_tensor_t *t = s->out->view_src ? s->out->view_src : s->out;
    const int64_t n = rt_nelements(t);
    const size_t bytes = rt_nbytes(t);
    void *raw = malloc(bytes ? bytes : 1);
    float *f = malloc((size_t)(n ? n : 1) * sizeof *f);
    double *d = malloc((size_t)(n ? n : 1) * sizeof *d);
    bool ok = raw && f && d && rt_tensor_get(t, raw, 0, bytes) == RT_OK;
    if (ok && t->type != RT_TYPE_I32) rt_dequantize(t->type, raw, f, n);
    for (int64_t i = 0; ok && i < n; i++)
        d[i] = t->type == RT_TYPE_I32 ? (double)((const int32_t *)raw)[i] : (double)f[i];
    free(raw);
    free(f);
    if (!ok) {
        free(d);
        return NULL;
    }
    *out_n = n;
    return d;
}

//===--- comparing ---===//

/* sqrt(sum (x - y)^2 / sum y^2) over finite pairs; infinity when the two
 * disagree on a non-finite value. y is the reference. */
static double nmse(const double *x, const double *y, int64_t n) {
    double num = 0.0, den = 0.0;
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(x[i]) || !isfinite(y[i])) {
            const bool same = (isnan(x[i]) && isnan(y[i])) || x[i] == y[i];
            if (!same) return INFINITY;
            continue;
        }
        num += (x[i] - y[i]) * (x[i] - y[i]);
        den += y[i] * y[i];
    }
    if (num == 0.0) return 0.0;
    return sqrt(num / (den > 0.0 ? den : 1.0));
}

//===--- running a case ---===//

typedef enum { RES_OK, RES_FAIL, RES_UNSUPPORTED } result_t;

typedef struct run {
    side_t dev, cpu;
    const tcase_t *c;
    uint64_t seed;
    double err;
    char why[256];
} run_t;

static result_t run_fail(run_t *r, const char *what, rt_status_t st) {
    snprintf(r->why, sizeof r->why, "%s: %s: %s", what, rt_status_name(st), rt_last_error());
    return RES_FAIL;
}

static rt_status_t side_prepare(side_t *s, const tcase_t *c, uint64_t seed) {
    rt_status_t st = side_place(s, c);
    if (st == RT_OK) st = side_fill(s, c, seed);
    return st;
}

static result_t run_case(run_t *r) {
    rt_status_t st = side_build(&r->dev, r->c);
    if (st == RT_OK) st = side_build(&r->cpu, r->c);
    if (st != RT_OK) return run_fail(r, "context", st);
    if (!side_supported(&r->dev)) return RES_UNSUPPORTED;
    if (!side_supported(&r->cpu)) {
        snprintf(r->why, sizeof r->why, "the CPU plugin does not support it");
        return RES_UNSUPPORTED;
    }
    if ((st = side_prepare(&r->dev, r->c, r->seed)) != RT_OK) return run_fail(r, "device setup", st);
    if ((st = side_prepare(&r->cpu, r->c, r->seed)) != RT_OK) return run_fail(r, "CPU setup", st);
    if ((st = rt_queue_compute(r->dev.queue, r->dev.graph)) != RT_OK) return run_fail(r, "device compute", st);
    if ((st = rt_queue_compute(r->cpu.queue, r->cpu.graph)) != RT_OK) return run_fail(r, "CPU compute", st);
    int64_t nd = 0, nc = 0;
    double *d = side_output(&r->dev, &nd), *c = side_output(&r->cpu, &nc);
    if (!d || !c || nd != nc) {
        free(d);
        free(c);
        return run_fail(r, "reading the outputs", RT_ERR_INTERNAL);
    }
    r->err = nmse(d, c, nd);
    free(d);
    free(c);
    return r->err <= r->c->tol ? RES_OK : RES_FAIL;
}

//===--- describing a case ---===//

static const char *op_label(rt_op_t op) {
    return op == OP_GRAPH ? "GRAPH" : op == OP_KV ? "KV" : rt_op_name(op);
}

static const char *lay_name(int lay) {
    static const char *const names[] = {"", " permuted", " transposed", " padded"};
    return names[lay];
}

static void describe(const tcase_t *c, char *buf, size_t size) {
    const int64_t *a = c->na, *b = shape_b(c);
    int n = snprintf(buf, size, "%s %s[%lld,%lld,%lld,%lld]%s", op_label(c->op), rt_type_name(c->ta),
                     (long long)a[0], (long long)a[1], (long long)a[2], (long long)a[3],
                     lay_name(c->lay_a));
    if (n < 0 || (size_t)n >= size) return;
    if (c->op == RT_OP_ROPE)
        snprintf(buf + n, size - (size_t)n, " n_dims %d %s", c->i0,
                 c->i1 == RT_ROPE_MODE_NEOX ? "neox" : "normal");
    else if (c->op == RT_OP_DIAG_MASK_INF)
        snprintf(buf + n, size - (size_t)n, " n_past %d", c->i0);
    else if (c->tb != NONE)
        snprintf(buf + n, size - (size_t)n, " %s[%lld,%lld,%lld,%lld]%s", rt_type_name(c->tb),
                 (long long)b[0], (long long)b[1], (long long)b[2], (long long)b[3],
                 lay_name(c->lay_b));
}

//===--- perf ---===//

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Seconds per run of the side's graph: at least 3 runs and 0.3 s. */
static double time_side(side_t *s) {
    if (rt_queue_compute(s->queue, s->graph) != RT_OK) return -1.0; /* warm-up, pipelines */
    const double t0 = now_s();
    int runs = 0;
    do {
        if (rt_queue_compute(s->queue, s->graph) != RT_OK) return -1.0;
        runs++;
    } while (runs < 3 || now_s() - t0 < 0.3);
    return (now_s() - t0) / runs;
}

/* Work of one run: FLOPs for MUL_MAT, else bytes read and written. */
static double case_work(const side_t *s, bool *out_flops) {
    const rt_tensor_t *o = s->out;
    *out_flops = o->op == RT_OP_MUL_MAT;
    if (*out_flops) return 2.0 * (double)o->src[0]->ne[0] * (double)rt_nelements(o);
    double bytes = (double)rt_nbytes(o);
    for (int i = 0; i < RT_MAX_SRC && o->src[i]; i++)
        if (o->op != RT_OP_CPY || i == 0) bytes += (double)rt_nbytes(o->src[i]);
    return bytes;
}

static void perf_print(const char *name, const side_t *s, double t) {
    bool flops;
    const double work = case_work(s, &flops);
    if (t <= 0.0) printf("  %-8s failed: %s\n", name, rt_last_error());
    else printf("  %-8s %9.3f ms  %8.2f %s\n", name, t * 1e3, work / t * 1e-9, flops ? "GFLOPS" : "GB/s");
}

static result_t perf_case(run_t *r) {
    if (side_build(&r->dev, r->c) != RT_OK || side_build(&r->cpu, r->c) != RT_OK) return RES_FAIL;
    if (!side_supported(&r->dev) || !side_supported(&r->cpu)) return RES_UNSUPPORTED;
    if (side_prepare(&r->dev, r->c, r->seed) != RT_OK) return run_fail(r, "device setup", RT_ERR_OUT_OF_MEMORY);
    if (side_prepare(&r->cpu, r->c, r->seed) != RT_OK) return run_fail(r, "CPU setup", RT_ERR_OUT_OF_MEMORY);
    perf_print(rt_device_name(r->dev.dev), &r->dev, time_side(&r->dev));
    perf_print(rt_device_name(r->cpu.dev), &r->cpu, time_side(&r->cpu));
    return RES_OK;
}

//===--- main ---===//

typedef struct opts {
    bool perf;
    const char *device, *op;
} opts_t;

typedef struct totals {
    int passed, failed, unsupported;
} totals_t;

static bool parse_args(int argc, char **argv, opts_t *o) {
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "perf") == 0) o->perf = true;
        else if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) o->device = argv[++i];
        else if (strcmp(argv[i], "--op") == 0 && i + 1 < argc) o->op = argv[++i];
        else {
            fprintf(stderr, "usage: %s [perf] [--device NAME] [--op NAME]\n", argv[0]);
            return false;
        }
    }
    return true;
}

static void report(const run_t *r, result_t res, const char *dev, const char *desc, totals_t *t) {
    if (res == RES_OK) {
        t->passed++;
        printf("  %-8s %-60s OK   (err %.2e <= %.0e)\n", dev, desc, r->err, r->c->tol);
    } else if (res == RES_UNSUPPORTED) {
        t->unsupported++;
        printf("  %-8s %-60s not supported%s%s\n", dev, desc, r->why[0] ? ": " : "", r->why);
    } else {
        t->failed++;
        if (r->why[0]) printf("  %-8s %-60s FAIL (%s)\n", dev, desc, r->why);
        else printf("  %-8s %-60s FAIL (err %.2e > %.0e)\n", dev, desc, r->err, r->c->tol);
    }
}

static void test_device(rt_device_t *dev, rt_device_t *cpu, const opts_t *o, totals_t *t) {
    run_t r = { .dev.dev = dev, .cpu.dev = cpu };
    if (rt_queue_create(dev, NULL, &r.dev.queue) != RT_OK || rt_queue_create(cpu, NULL, &r.cpu.queue) != RT_OK) {
        printf("  %-8s cannot create a queue: %s\n", rt_device_name(dev), rt_last_error());
        t->failed++;
    }
    const tcase_t *table = o->perf ? perf_cases : cases;
    const size_t n = o->perf ? sizeof perf_cases / sizeof perf_cases[0] : sizeof cases / sizeof cases[0];
    for (size_t i = 0; r.dev.queue && r.cpu.queue && i < n; i++) {
        if (o->op && strcmp(o->op, op_label(table[i].op)) != 0) continue;
        char desc[160];
        describe(&table[i], desc, sizeof desc);
        r.c = &table[i];
        r.seed = 1 + i;
        r.err = 0.0;
        r.why[0] = '\0';
        if (o->perf) printf("%s\n", desc);
        const result_t res = o->perf ? perf_case(&r) : run_case(&r);
        if (!o->perf || res != RES_OK) report(&r, res, rt_device_name(dev), desc, t);
        else t->passed++;
        side_free(&r.dev);
        side_free(&r.cpu);
    }
    rt_queue_destroy(r.dev.queue);
    rt_queue_destroy(r.cpu.queue);
}

int main(int argc, char **argv) {
    opts_t o = { 0 };
    if (!parse_args(argc, argv, &o)) return 2;
    rt_registry_t *reg;
    if (rt_registry_create(NULL, &reg) != RT_OK) {
        fprintf(stderr, "rt-test-ops: %s\n", rt_last_error());
        return 1;
    }
    rt_device_t *cpu = NULL;
    for (int32_t i = 0; i < rt_registry_device_count(reg) && !cpu; i++)
        if (strcmp(rt_device_plugin_name(rt_registry_device(reg, i)), "cpu") == 0) cpu = rt_registry_device(reg, i);
    totals_t t = { 0 };
    int tested = 0;
    for (int32_t i = 0; cpu && i < rt_registry_device_count(reg); i++) {
        rt_device_t *dev = rt_registry_device(reg, i);
        if (dev == cpu || strcmp(rt_device_plugin_name(dev), "cpu") == 0) continue;
        if (o.device && strcmp(o.device, rt_device_name(dev)) != 0) continue;
        printf("%s (%s):\n", rt_device_name(dev), rt_device_plugin_name(dev));
        test_device(dev, cpu, &o, &t);
        tested++;
    }
    if (!cpu) fprintf(stderr, "rt-test-ops: no CPU device to compare with\n");
    else if (!tested) printf("no device other than the CPU%s%s; nothing to test\n",
                             o.device ? " named " : "", o.device ? o.device : "");
    printf("%d passed, %d failed, %d unsupported\n", t.passed, t.failed, t.unsupported);
    rt_registry_destroy(reg);
    return !cpu || t.failed ? 1 : 0;
}
