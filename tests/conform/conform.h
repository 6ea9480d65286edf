/* SPDX-License-Identifier: MIT */
/* conform.h: the op conformance library. One table of cases (an op, its
 * inputs' types, shapes and layouts, its parameters and tolerance), the
 * layouts and fills they name, the graph each case builds through the
 * public API, and a double-precision reference written from the contract
 * text of abi/rt_tensor.h. Two suites run it: the cmocka test
 * tests/test-ops.c on the CPU device (strict tolerances, every case at 1, 3
 * and the default thread count) and tools/rt-test-ops on every device
 * (tolerances that allow a device's own rounding, see cf_tolerance). The
 * library links the core only (no cmocka): it reports through a callback.
 *
 * Adding a case is one row of tests/conform/cases.c; adding an element type
 * is one entry of CF_QUANT_TYPES in tests/conform/types.h. */
#ifndef RT_CONFORM_H
#define RT_CONFORM_H

#include "../../abi/rt.h"

#include "layout.h"

/* How an input reaches the op. The spec's ne is always the shape the op sees. */
enum {
    CF_LAY_CONT,    /* the leaf itself */
    CF_LAY_PERM,    /* permute(base, axes) of a contiguous base */
    CF_LAY_TRANS,   /* transpose(base) */
    CF_LAY_PAD,     /* view_Nd into a base two blocks wider and one row/plane larger,
                       offset one block and one row (a fused QKV's Q, generalised) */
    CF_LAY_PADPERM, /* permute(axes) of a CF_LAY_PAD view: a view of a view */
    CF_LAY_RESHAPE, /* reshape_Nd of a 1-D base */
    CF_LAY_VIEW1D,  /* reshape_Nd(view_1d(base, n, 2 elements in)): a cache's K */
    CF_LAY_VIEWT    /* view_tensor(base) */
};

enum {
    CF_FILL_UNIFORM, /* U(-1, 1) */
    CF_FILL_POS,     /* U(0.5, 2): divisors */
    CF_FILL_WIDE,    /* U(-6, 6): reaches the tails of gelu and silu */
    CF_FILL_CAUSAL,  /* U(-1, 1), -inf where i0 > i1 + 2: a mask */
    CF_FILL_CAUSAL0, /* as CF_FILL_CAUSAL, and row i1 = 0 all -inf: a query that sees nothing */
    CF_FILL_SEQRUNS, /* U(-1, 1) where key i0's run of 64 (i0 / 64 mod 4) is query i1's sequence
                        (i1 mod 4), else -inf: a decode step of 4 sequences in a shared cache */
    CF_FILL_TIES,    /* integers 1..4: argmax ties */
    CF_FILL_INDEX,   /* integers in [0, idx_hi): rows, positions */
    CF_FILL_DISTINCT /* as CF_FILL_INDEX, distinct along dim 0: SET_ROWS targets */
};

/* Sources a case may give: a, b, c and FLASH_ATTN's mask. */
#define CF_MAX_SRC 4

typedef struct cf_src {
    rt_type_t type;
    int layout;      /* CF_LAY_* */
    int fill;        /* CF_FILL_* */
    int axes[4];     /* CF_LAY_PERM, CF_LAY_PADPERM */
    int32_t idx_hi;  /* CF_FILL_INDEX, CF_FILL_DISTINCT */
    int64_t ne[4];   /* shape the op sees; 0 reads as 1; ne[0] == 0: no source */
} cf_src_t;

/* Template ops: one table row runs under several ops. */
enum { CF_OP_BINARY = -1, CF_OP_ROWNORM = -2, CF_OP_ACT = -3, CF_OP_VIEWS = -4 };

typedef struct cf_case {
    rt_op_t op;          /* RT_OP_* or CF_OP_* template */
    const char *name;
    cf_src_t src[CF_MAX_SRC]; /* a, b, c, d; for CPY b is the destination, for SET_ROWS a */
    float f[2];          /* SCALE s; NORM eps; SOFT_MAX scale; ROPE freq_base, freq_scale;
                            FLASH_ATTN scale, softcap */
    int32_t i[2];        /* DIAG n_past; ROPE n_dims, mode; CPY cast type */
    int64_t ne[4];       /* CONT: the cont_Nd shape (0: rt_cont) */
    bool ext;            /* soft_max_ext, rope_ext, rt_cast instead of rt_cpy */
    double tol;          /* CF_TOL_*: the bound for the CPU plugin */
} cf_case_t;

/* Tolerances (normalised error over the finite elements; infinities must
 * match exactly):
 *   CF_TOL_EXACT 0     copies and conversions: the contract fixes every bit
 *                      (RNE for F16/BF16, GGUF's quantisers for blocks).
 *   CF_TOL_F32   1e-6  one F32 op per element: a few ulp of 2^-24 (6e-8).
 *   CF_TOL_DOT   1e-5  sums of up to K = 4096 F32 products (mul_mat, norms):
 *                      rounding grows like sqrt(K)*2^-24 plus any summation
 *                      order; rope: theta = p*base^(-2i/n) in F32 for
 *                      positions p < 64 carries ~64 ulp of phase.
 *   CF_TOL_F16   1e-3  F16 results: one rounding to 11 bits is 2^-11 = 4.9e-4.
 * Quantised mul_mat weights are compared with the reference run on the
 * dequantised weights and on b's rows rounded through Q8_0 (the CPU
 * plugin's integer dot products quantise activations so), so only float
 * rounding counts and CF_TOL_DOT applies to the CPU. */
#define CF_TOL_EXACT 0.0
#define CF_TOL_F32 1e-6
#define CF_TOL_DOT 1e-5
#define CF_TOL_F16 1e-3

extern const cf_case_t cf_cases[];
extern const size_t cf_n_cases;

/* The ops a suite runs, each over the table rows that apply to it (its own
 * rows and the templates it belongs to). */
typedef struct cf_op_test {
    const char *name;
    rt_op_t sel; /* the table rows it runs (an op or a template) */
    rt_op_t op;  /* the op they run as */
} cf_op_test_t;

extern const cf_op_test_t cf_op_tests[];
extern const size_t cf_n_op_tests;
bool cf_case_applies(const cf_case_t *c, const cf_op_test_t *t);

/* The tolerance a case gets on a device: the case's own when strict (the
 * CPU plugin, whose rounding the table was written for); otherwise at
 * least what a device's own rounding explains: 1e-5 for F32 (fused or
 * reordered arithmetic, its own exp and tanh), 2e-3 for F16 results, 1e-4
 * for ROPE (its own sin and cos of large angles), 5e-3 for quantising
 * copies (a scale rounded an ulp apart moves an element by one step), 2e-2
 * for quantised mul_mat weights (a device may skip rounding b through Q8_0,
 * a difference of ~2^-8 relative), 1e-6 for get_rows of blocks; other
 * copies, conversions and selections stay exact. */
double cf_tolerance(rt_op_t op, const cf_case_t *c, bool strict);

/* Where a suite runs a case. report receives one line per failing check. */
typedef struct cf_target {
    rt_device_t *dev;
    rt_queue_t *const *queues; /* each case runs once on each */
    const int *queue_threads;  /* for the labels (0: the device's default) */
    int n_queues;
    bool strict;               /* cf_tolerance, and byte-exact quantising copies */
    void (*report)(void *user, const char *msg);
    void *user;
} cf_target_t;

typedef enum { CF_PASS, CF_FAIL, CF_UNSUPPORTED } cf_result_t;

/* Runs case c as op (c->op, or the op a template row runs as) on t, with
 * inputs drawn from seed; id names the case in every message. out_err
 * (may be NULL) receives the largest normalised error seen. */
cf_result_t cf_run_case(const cf_target_t *t, rt_op_t op, const cf_case_t *c, const char *id, uint64_t seed,
                        double *out_err);

/* The larger shapes `rt-test-ops perf` times (cases.c). */
extern const cf_case_t cf_perf_cases[];
extern const size_t cf_n_perf_cases;

/* Seconds per run of case c on t's first queue (at least 3 runs and 0.3 s,
 * after a warm-up run), and its work: FLOPs for MUL_MAT, else the bytes
 * read and written. No reference is computed. */
typedef struct cf_timing {
    double seconds, work;
    bool flops;
} cf_timing_t;
cf_result_t cf_time_case(const cf_target_t *t, rt_op_t op, const cf_case_t *c, uint64_t seed, cf_timing_t *out);

/* n values, row after row of m, each row the first m of a random
 * permutation of [0, hi) (a partial Fisher-Yates shuffle): SET_ROWS
 * indices, which must not repeat within a row. False when m > hi. */
bool cf_draw_distinct(float *v, int64_t n, int64_t m, int64_t hi, uint64_t *rng);

/* "ADD [b broadcast dim 0]"-style description of a case, into buf. */
const char *cf_describe(rt_op_t op, const cf_case_t *c, char *buf, size_t size);

#endif /* RT_CONFORM_H */
