/* SPDX-License-Identifier: MIT */
/* test-cuda-dequant.cu: the CUDA plugin's decoders of the quantised types
 * (plugins/cuda/kernels/dequant.cuh), compiled by nvcc as host code, so
 * that a machine without a GPU (CI) checks the layouts every CUDA kernel
 * reads. For each type, blocks made by the reference quantiser of
 * abi/rt_quant.h from seeded random rows (odd scales, negative and
 * positive values, an all-zero block), and blocks of random bytes (every
 * bit pattern a file may hold, with finite scales), are decoded element by
 * element with rt_cu_dq_row and compared with the reference dequantiser.
 * The two evaluate the same products in the same order, so they agree to
 * the last bit on the host (a kernel may fuse a multiply-add and differ by
 * an ulp there, which rt-test-ops' tolerances cover).
 *
 *   cudq-1.<type>  reference-quantised rows decode as the reference does
 *   cudq-2.<type>  random blocks decode as the reference does
 *   cudq-3         the kernels' block sizes and bytes are abi/rt_tensor.h's */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

extern "C" {
#include <cmocka.h>
}

#include "../abi/rt_quant.h"
#include "../plugins/cuda/kernels/dequant.cuh"

#define N_BLOCKS 8
#define MAX_QK 256
#define MAX_BYTES 256

/* One type: its id, block, and the reference codec as byte-level calls. */
typedef struct qtype {
    const char *name;
    int32_t type;
    int qk, bytes;
    void (*quantize)(const float *x, void *block);
    void (*dequantize)(const void *block, float *y);
} qtype_t;

#define QT(c, T, QK)                                                                         \
    { #c, RT_TYPE_##T, QK, (int)sizeof(rt_block_##c##_t),                                    \
      [](const float *x, void *b) { rt_quantize_block_##c(x, (rt_block_##c##_t *)b); },      \
      [](const void *b, float *y) { rt_dequantize_block_##c((const rt_block_##c##_t *)b, y); } }

static const qtype_t qtypes[] = {
    QT(q4_0, Q4_0, 32), QT(q4_1, Q4_1, 32), QT(q5_0, Q5_0, 32), QT(q5_1, Q5_1, 32),
    QT(q8_0, Q8_0, 32), QT(iq4_nl, IQ4_NL, 32), QT(q2_k, Q2_K, 256), QT(q3_k, Q3_K, 256),
    QT(q4_k, Q4_K, 256), QT(q5_k, Q5_K, 256), QT(q6_k, Q6_K, 256), QT(iq4_xs, IQ4_XS, 256),
};
#define N_QTYPES (sizeof qtypes / sizeof qtypes[0])

static uint32_t rng_state = 12345u;
static uint32_t rng(void) {
    rng_state = rng_state * 1664525u + 1013904223u;
    return rng_state >> 8;
}
static float rng_f(float lo, float hi) { return lo + (hi - lo) * (float)(rng() & 0xffffff) / 16777216.0f; }

/* A binary16 with a finite value of modest size (random bytes would give
 * infinities and NaNs, which compare unequal to themselves). */
static uint16_t rng_half(void) { return rt_fp32_to_fp16(rng_f(-2.0f, 2.0f)); }

/* The byte offsets of a type's binary16 scales inside its block. */
static int half_offsets(int32_t type, int out[2]) {
    switch (type) {
    case RT_TYPE_Q4_0: case RT_TYPE_Q5_0: case RT_TYPE_Q8_0: case RT_TYPE_IQ4_NL: case RT_TYPE_IQ4_XS:
        out[0] = 0; return 1;
    case RT_TYPE_Q4_1: case RT_TYPE_Q5_1: case RT_TYPE_Q4_K: case RT_TYPE_Q5_K:
        out[0] = 0; out[1] = 2; return 2;
    case RT_TYPE_Q2_K: out[0] = 80; out[1] = 82; return 2;
    case RT_TYPE_Q3_K: out[0] = 108; return 1;
    case RT_TYPE_Q6_K: out[0] = 208; return 1;
    default: return 0;
    }
}

/* Every element of n blocks at data, decoded both ways, bit for bit. */
static void compare_blocks(const qtype_t *t, const uint8_t *data, int n, const char *id) {
    float ref[MAX_QK];
    for (int b = 0; b < n; b++) {
        t->dequantize(data + b * t->bytes, ref);
        for (int j = 0; j < t->qk; j++) {
            const float got = rt_cu_dq_row(t->type, (const char *)data, (int64_t)b * t->qk + j);
            if (memcmp(&got, &ref[j], sizeof got) != 0)
                fail_msg("%s %s: block %d element %d: %.9g, the reference %.9g", id, t->name, b, j,
                         (double)got, (double)ref[j]);
        }
    }
}

static void test_quantised_rows(void **state) {
    (void)state;
    static float x[N_BLOCKS * MAX_QK];
    static uint8_t data[N_BLOCKS * MAX_BYTES];
    for (size_t i = 0; i < N_QTYPES; i++) {
        const qtype_t *t = &qtypes[i];
        for (int b = 0; b < N_BLOCKS; b++) {
            /* block 0 all zeros; the others at scales from 1e-3 to 1e2, some one-signed */
            const float scale = b == 0 ? 0.0f : 1e-3f * (float)(1 << (2 * b));
            const float lo = b % 3 == 1 ? 0.0f : -scale;
            for (int j = 0; j < t->qk; j++) x[b * t->qk + j] = rng_f(lo, scale);
            t->quantize(x + b * t->qk, data + b * t->bytes);
        }
        compare_blocks(t, data, N_BLOCKS, "cudq-1");
    }
}

static void test_random_blocks(void **state) {
    (void)state;
    static uint8_t data[N_BLOCKS * MAX_BYTES];
    for (size_t i = 0; i < N_QTYPES; i++) {
        const qtype_t *t = &qtypes[i];
        int offs[2];
        const int n_half = half_offsets(t->type, offs);
        assert_true(n_half > 0);
        for (int b = 0; b < N_BLOCKS; b++) {
            uint8_t *blk = data + b * t->bytes;
            for (int k = 0; k < t->bytes; k++) blk[k] = (uint8_t)rng();
            for (int h = 0; h < n_half; h++) {
                const uint16_t v = rng_half();
                memcpy(blk + offs[h], &v, sizeof v);
            }
        }
        compare_blocks(t, data, N_BLOCKS, "cudq-2");
    }
}

static void test_sizes(void **state) {
    (void)state;
    for (size_t i = 0; i < N_QTYPES; i++) {
        const qtype_t *t = &qtypes[i];
        assert_int_equal(rt_cu_block_elems(t->type), t->qk);   /* cudq-3 */
        assert_int_equal(rt_cu_block_bytes(t->type), t->bytes); /* cudq-3 */
    }
    assert_int_equal(rt_cu_block_elems(RT_TYPE_F32), 0);
    assert_int_equal(rt_cu_block_elems(RT_TYPE_BF16), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quantised_rows),
        cmocka_unit_test(test_random_blocks),
        cmocka_unit_test(test_sizes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
