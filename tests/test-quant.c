/* SPDX-License-Identifier: MIT */
/* test-quant.c: the block types of ABI 1.2 (Q4_1, Q5_0, Q5_1, Q2_K..Q6_K,
 * Q8_K, IQ4_NL, IQ4_XS) and their reference codecs in abi/rt_quant.h: the
 * traits rt reports, round trips within each format's error on data of
 * several shapes, and the decoders against an independent one (the gguf
 * Python package, tests/quant_gguf.py) on random blocks and on the real
 * files .ci/deps installs. No device is needed. */
#include "testutil.h"

#include "../abi/rt_quant.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

typedef struct quant_case {
    rt_type_t type;
    const char *name;
    int64_t blck;
    size_t size;
    double tol; /* normalised round-trip error on uniform data */
} quant_case_t;

/* The tolerances are each format's error on uniform data with some margin:
 * about 2^-bits of the range for the plain types, more for the K-quants,
 * whose sub-block scales are themselves quantised. */
static const quant_case_t cases[] = {
    {RT_TYPE_Q4_1, "q4_1", 32, 20, 0.08},    {RT_TYPE_Q5_0, "q5_0", 32, 22, 0.05},
    {RT_TYPE_Q5_1, "q5_1", 32, 24, 0.04},    {RT_TYPE_Q2_K, "q2_K", 256, 84, 0.35},
    {RT_TYPE_Q3_K, "q3_K", 256, 110, 0.18},  {RT_TYPE_Q4_K, "q4_K", 256, 144, 0.08},
    {RT_TYPE_Q5_K, "q5_K", 256, 176, 0.04},  {RT_TYPE_Q6_K, "q6_K", 256, 210, 0.02},
    {RT_TYPE_Q8_K, "q8_K", 256, 292, 0.01},  {RT_TYPE_IQ4_NL, "iq4_nl", 32, 18, 0.1},
    {RT_TYPE_IQ4_XS, "iq4_xs", 256, 136, 0.1},
};
#define N_CASES (sizeof cases / sizeof cases[0])

//===--- quant-1: traits and round trips ---===//

static void test_traits(void **state) {
    (void)state;
    for (size_t i = 0; i < N_CASES; i++) { /* quant-1.1 */
        const rt_type_traits_t *tr = rt_type_traits(cases[i].type);
        assert_non_null(tr);
        assert_string_equal(tr->name, cases[i].name);
        assert_int_equal(tr->block_size, cases[i].blck);
        assert_int_equal(tr->type_size, cases[i].size);
        assert_int_equal(tr->is_quantized, 1);
        assert_int_equal(rt_row_size(cases[i].type, 3 * cases[i].blck), 3 * cases[i].size);
    }
    TU_EXPECT_ABORT(rt_row_size(RT_TYPE_Q4_K, 4096 + 32), "q4_K"); /* quant-1.2 */
}

/* Fills n floats in one of the shapes that stress a quantiser: uniform,
 * mostly small with outliers (weights), all positive, all equal, zero. */
static void fill_shape(float *x, int64_t n, int shape) {
    for (int64_t i = 0; i < n; i++) {
        const float u = tu_uniform(-1.0f, 1.0f);
        switch (shape) {
        case 0: x[i] = u; break;
        case 1: x[i] = (tu_next() % 61 == 0) ? 8.0f * u : 0.05f * u; break;
        case 2: x[i] = 3.0f + u; break;
        case 3: x[i] = -0.75f; break;
        default: x[i] = 0.0f; break;
        }
    }
}

/* Round trip of n values: the error for the shape, and every decoded value
 * finite. */
static double round_trip(const quant_case_t *c, const float *x, int64_t n) {
    void *q = malloc(rt_row_size(c->type, n));
    float *y = malloc((size_t)n * sizeof y[0]);
    double *ref = malloc((size_t)n * sizeof ref[0]);
    assert_int_equal(rt_quantize(c->type, x, q, n), rt_row_size(c->type, n));
    rt_dequantize(c->type, q, y, n);
    for (int64_t i = 0; i < n; i++) {
        ref[i] = x[i];
        if (!isfinite(y[i])) fail_msg("quant-1.3 %s: element %lld not finite", c->name, (long long)i);
    }
    const double err = tu_nmse_error(ref, y, (size_t)n);
    free(q);
    free(y);
    free(ref);
    return err;
}

static void test_round_trip(void **state) {
    (void)state;
    enum { N = 4096 };
    float *x = malloc(N * sizeof x[0]);
    tu_seed(13);
    tu_n_failed = 0;
    for (size_t i = 0; i < N_CASES; i++) {
        for (int shape = 0; shape < 5; shape++) { /* quant-1.3 */
            fill_shape(x, N, shape);
            const double err = round_trip(&cases[i], x, N);
            /* outliers cost the small values their precision in any
               blocked format; constant blocks must come back nearly exact */
            const double tol = shape == 1 ? 3 * cases[i].tol : shape >= 3 ? 0.02 : cases[i].tol;
            if (!(err <= tol)) tu_report("quant-1.3 %s shape %d: error %g > %g", cases[i].name, shape, err, tol);
        }
        /* quant-1.4: one block alone (the smallest tail a row can have) */
        fill_shape(x, cases[i].blck, 0);
        const double err = round_trip(&cases[i], x, cases[i].blck);
        if (!(err <= 2 * cases[i].tol)) tu_report("quant-1.4 %s one block: error %g", cases[i].name, err);
    }
    free(x);
    assert_int_equal(tu_n_failed, 0);
}

/* quant-1.5: the library's conversions are the header's block codecs. */
static void test_header_codecs(void **state) {
    (void)state;
    float x[RT_QK_K], y[RT_QK_K], z[RT_QK_K];
    tu_seed(5);
    tu_fill(x, RT_QK_K, -2.0f, 2.0f);
    rt_block_q4_k_t b, lb;
    rt_quantize_block_q4_k(x, &b);
    assert_int_equal(rt_quantize(RT_TYPE_Q4_K, x, &lb, RT_QK_K), sizeof lb);
    assert_memory_equal(&b, &lb, sizeof b);
    rt_dequantize_block_q4_k(&b, y);
    rt_dequantize(RT_TYPE_Q4_K, &lb, z, RT_QK_K);
    assert_memory_equal(y, z, sizeof y);
    rt_block_q8_k_t k;
    rt_quantize_block_q8_k(x, &k);
    for (int j = 0; j < RT_QK_K / 16; j++) { /* bsums are the sums the K-quant dots use */
        int s = 0;
        for (int i = 0; i < 16; i++) s += k.qs[16 * j + i];
        assert_int_equal(k.bsums[j], s);
    }
}

//===--- quant-2: against the gguf package's decoder ---===//

static void test_against_gguf(void **state) {
    (void)state;
#if defined(__SANITIZE_ADDRESS__)
    /* python3 cannot load an AddressSanitizer build of librtcore through
     * ctypes (the runtime must come first); the plain build runs quant-2. */
    printf("quant-2: skipped: an ASan build's librtcore cannot be loaded by python3\n");
    skip();
#endif
    char models[4096], cmd[8192];
    tu_pip_models(models, sizeof models);
    snprintf(cmd, sizeof cmd, "python3 tests/quant_gguf.py %s/lib/librtcore.so%s 2>&1",
             tu_build_dir(), models);
    int status = 0;
    char *out = tu_run_capture(cmd, &status);
    assert_non_null(out);
    printf("%s", out);
    if (status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 77) {
        printf("quant-2: skipped: %s", out);
        free(out);
        skip();
    }
    if (models[0] == 0) printf("quant-2.2: no real files (pip install them as .ci/deps does)\n");
    const int ok = status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    free(out);
    assert_true(ok);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_traits),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_header_codecs),
        cmocka_unit_test(test_against_gguf),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
