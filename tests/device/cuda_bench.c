/* SPDX-License-Identifier: MIT */
/* cuda_bench.c: MUL_MAT on a CUDA device through rt's public API, for
 * tests/device/cuda.sh. Two parts, one line of key=value pairs per result:
 *
 *   check  every path of the plugin's MUL_MAT at shapes rt-test-ops does
 *          not reach (matrix-vector with 16-byte loads, cuBLAS on tensor
 *          cores, pointer-array batches), for each weight type, against a
 *          double-precision reference computed here on sampled outputs;
 *          err is sqrt(sum (c - ref)^2 / sum ref^2), ok=1 when <= tol.
 *   perf   F16 GEMM m=n=k=8192 (TFLOP/s) and matrix-vector products of
 *          each quantised weight type with 65536 x 8192 weights (GB/s of
 *          weights read), each the mean of timed runs after two warm-ups
 *          (the second captures the CUDA graph), queued back to back.
 *
 *   cuda_bench [--device NAME] [--perf-only | --check-only]
 *
 * Exit status 1 when a check fails or something cannot run. */
#include "../../abi/rt.h"
#include "../conform/rng.h"
#include "../conform/act_round.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct mm {
    rt_context_t *ctx;
    rt_tensor_t *a, *b, *c;
    rt_graph_t *graph;
    rt_buffer_t *buf;
    void *a_host;            /* a's bytes as set, for the reference */
    float *b_host;           /* b's values */
} mm_t;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The tests' generator (conform/rng.h); a seed of 0 stands for a fixed one. */
static uint64_t rng_next(uint64_t *s) {
    if (*s == 0) *s = cf_rng_init(0);
    return cf_rng_next(s);
}

static float rng_float(uint64_t *s) {
    if (*s == 0) *s = cf_rng_init(0);
    return cf_rng_uniform(s, -1.0f, 1.0f);
}

//===--- a product on the device ---===//

static void mm_free(mm_t *m) {
    rt_buffer_free(m->buf);
    rt_context_destroy(m->ctx);
    free(m->a_host);
    free(m->b_host);
    memset(m, 0, sizeof *m);
}

#define MM_DISTINCT_ROWS 512

/* a {K, M, a2, 1} of type ta times b {K, N, b2, b3} F32, placed on dev.
 * a's rows are generated one at a time (quantised ones straight from
 * floats), so 65536 x 8192 weights need no 2 GiB of floats. */
static rt_status_t mm_build(mm_t *m, rt_device_t *dev, rt_type_t ta, const int64_t na[3],
                            const int64_t nb[4], uint64_t seed) {
    memset(m, 0, sizeof *m);
    rt_context_params_t p = { .struct_size = sizeof p, .no_alloc = true,
                              .mem_size = 8 * rt_tensor_overhead() + rt_graph_overhead(8) };
    rt_status_t st = rt_context_create(&p, &m->ctx);
    if (st != RT_OK) return st;
    m->a = rt_new_tensor_3d(m->ctx, ta, na[0], na[1], na[2]);
    m->b = rt_new_tensor_4d(m->ctx, RT_TYPE_F32, nb[0], nb[1], nb[2], nb[3]);
    m->c = rt_mul_mat(m->ctx, m->a, m->b);
    rt_set_output(m->c);
    m->graph = rt_graph_create(m->ctx, 8);
    rt_graph_build_forward_expand(m->graph, m->c);
    st = rt_alloc_ctx_tensors(m->ctx, rt_device_buffer_type(dev, 0), &m->buf);
    if (st != RT_OK) return st;
    const int64_t rows = na[1] * na[2], nbv = rt_nelements(m->b);
    const size_t row_bytes = m->a->nb[1];
    m->a_host = malloc(rt_nbytes(m->a));
    m->b_host = malloc((size_t)nbv * sizeof(float));
    float *row = malloc((size_t)na[0] * sizeof(float));
    if (!m->a_host || !m->b_host || !row) {
        free(row);
        return RT_ERR_OUT_OF_MEMORY;
    }
    /* MM_DISTINCT_ROWS rows quantised, then repeated: the reference
     * quantisers of the K-quants search for scales and would take minutes
     * over 65536 rows; the bytes still lie at distinct addresses. */
    for (int64_t r = 0; r < rows; r++) {
        char *dst = (char *)m->a_host + (size_t)r * row_bytes;
        if (r >= MM_DISTINCT_ROWS) {
            memcpy(dst, (char *)m->a_host + (size_t)(r % MM_DISTINCT_ROWS) * row_bytes, row_bytes);
            continue;
        }
        for (int64_t k = 0; k < na[0]; k++) row[k] = rng_float(&seed);
        rt_quantize(ta, row, dst, na[0]);
    }
    free(row);
    for (int64_t i = 0; i < nbv; i++) m->b_host[i] = rng_float(&seed);
    st = rt_tensor_set(m->a, m->a_host, 0, rt_nbytes(m->a));
    if (st == RT_OK) st = rt_tensor_set(m->b, m->b_host, 0, (size_t)nbv * sizeof(float));
    return st;
}

/* Seconds per run, after two warm-up runs (eager, then captured). */
static double mm_time(rt_queue_t *q, const mm_t *m, int runs) {
    if (rt_queue_compute(q, m->graph) != RT_OK || rt_queue_compute(q, m->graph) != RT_OK) return -1.0;
    const double t0 = now_s();
    for (int i = 0; i < runs; i++)
        if (rt_queue_compute_async(q, m->graph) != RT_OK) return -1.0;
    if (rt_queue_synchronize(q) != RT_OK) return -1.0;
    return (now_s() - t0) / runs;
}

/* b's row as the product sees it: for Q8_0/Q4_0 weights rounded through
 * Q8_0, for the other block types per block at an f32 scale (the rule of
 * the CPU and CUDA plugins), else as it is. */
static const float *mm_b_row(const mm_t *m, const float *brow, float *tmp, void *blocks) {
    const int64_t K = m->b->ne[0], blck = rt_blck_size(m->a->type);
    if (m->a->type == RT_TYPE_Q8_0 || m->a->type == RT_TYPE_Q4_0) {
        rt_quantize(RT_TYPE_Q8_0, brow, blocks, K);
        rt_dequantize(RT_TYPE_Q8_0, blocks, tmp, K);
        return tmp;
    }
    if (blck <= 1) return brow;
    memcpy(tmp, brow, (size_t)K * sizeof *tmp); /* the other block types: act_round.h */
    for (int64_t k = 0; k < K; k += blck) cf_round_block_q8_f32(tmp + k, blck);
    return tmp;
}

/* The normalised error of n_samples outputs against a double reference. */
static double mm_error(const mm_t *m, int n_samples, uint64_t seed) {
    const rt_tensor_t *a = m->a, *b = m->b, *c = m->c;
    const int64_t K = a->ne[0];
    float *arow = malloc((size_t)K * sizeof *arow), *btmp = malloc((size_t)K * sizeof *btmp);
    void *blocks = malloc((size_t)K * sizeof(float));
    const bool have_row = arow && btmp && blocks;
    double num = 0.0, den = 0.0;
    for (int s = 0; have_row && s < n_samples; s++) {
        const int64_t i0 = (int64_t)(rng_next(&seed) % (uint64_t)c->ne[0]);
        const int64_t i1 = (int64_t)(rng_next(&seed) % (uint64_t)c->ne[1]);
        const int64_t i2 = (int64_t)(rng_next(&seed) % (uint64_t)c->ne[2]);
        const int64_t i3 = (int64_t)(rng_next(&seed) % (uint64_t)c->ne[3]);
        const int64_t a2 = i2 / (b->ne[2] / a->ne[2]);
        rt_dequantize(a->type, (const char *)m->a_host + i0 * a->nb[1] + a2 * a->nb[2], arow, K);
        const float *brow = mm_b_row(m, m->b_host + ((i3 * b->ne[2] + i2) * b->ne[1] + i1) * K,
                                     btmp, blocks);
        double ref = 0.0;
        for (int64_t k = 0; k < K; k++) ref += (double)arow[k] * (double)brow[k];
        float got = NAN;
        rt_tensor_get(c, &got, i0 * c->nb[0] + i1 * c->nb[1] + i2 * c->nb[2] + i3 * c->nb[3], sizeof got);
        num += ((double)got - ref) * ((double)got - ref);
        den += ref * ref;
    }
    free(arow);
    free(btmp);
    free(blocks);
    return have_row && den > 0.0 ? sqrt(num / den) : INFINITY;
}

//===--- checks ---===//

typedef struct check_case {
    const char *path;        /* which plugin path the shape is meant to take */
    int64_t na[3], nb[4];    /* (a type whose block does not divide K skips the case) */
    double tol_exact, tol_16; /* for F32 weights; for 16-bit and quantised ones */
} check_case_t;

static const check_case_t check_cases[] = {
    { "vec", { 4096, 1024, 1 }, { 4096, 1, 1, 1 }, 1e-5, 1e-5 },
    { "vec-cols", { 4096, 1000, 1 }, { 4096, 5, 1, 1 }, 1e-5, 1e-5 },
    { "vec-tail", { 4100, 300, 1 }, { 4100, 2, 1, 1 }, 1e-5, 1e-5 },
    { "vec-batch", { 256, 64, 4 }, { 256, 1, 8, 3 }, 1e-5, 1e-5 },
    { "blas", { 1024, 512, 1 }, { 1024, 64, 1, 1 }, 1e-5, 5e-3 },
    { "blas-batch", { 512, 128, 2 }, { 512, 100, 4, 3 }, 1e-5, 5e-3 },
    { "small", { 96, 40, 1 }, { 96, 20, 2, 1 }, 1e-5, 1e-5 },
};

/* Every weight type the plugin multiplies. */
static const rt_type_t check_types[] = {
    RT_TYPE_F32, RT_TYPE_F16, RT_TYPE_BF16, RT_TYPE_Q8_0, RT_TYPE_Q4_0, RT_TYPE_Q4_1,
    RT_TYPE_Q5_0, RT_TYPE_Q5_1, RT_TYPE_IQ4_NL, RT_TYPE_Q2_K, RT_TYPE_Q3_K, RT_TYPE_Q4_K,
    RT_TYPE_Q5_K, RT_TYPE_Q6_K, RT_TYPE_IQ4_XS,
};

static const char *type_name(rt_type_t t) { return rt_type_name(t); }

static int run_check(rt_device_t *dev, rt_queue_t *q, const check_case_t *cc, rt_type_t t,
                     uint64_t seed) {
    mm_t m;
    rt_status_t st = mm_build(&m, dev, t, cc->na, cc->nb, seed);
    if (st == RT_OK) st = rt_queue_compute(q, m.graph);
    const double tol = t == RT_TYPE_F32 ? cc->tol_exact : cc->tol_16;
    int failed = 1;
    if (st != RT_OK) {
        printf("check name=mm_%s_%s ok=0 error=\"%s\"\n", cc->path, type_name(t), rt_last_error());
    } else {
        const double err = mm_error(&m, 64, seed ^ 0x5555);
        failed = !(err <= tol);
        printf("check name=mm_%s_%s K=%lld M=%lld N=%lld err=%.3g tol=%.0e ok=%d\n", cc->path,
               type_name(t), (long long)cc->na[0], (long long)cc->na[1], (long long)cc->nb[1], err,
               tol, !failed);
    }
    mm_free(&m);
    return failed;
}

static int run_checks(rt_device_t *dev, rt_queue_t *q) {
    int failed = 0;
    for (size_t i = 0; i < sizeof check_cases / sizeof check_cases[0]; i++)
        for (size_t j = 0; j < sizeof check_types / sizeof check_types[0]; j++) {
            if (check_cases[i].na[0] % rt_blck_size(check_types[j]) != 0) continue;
            failed += run_check(dev, q, &check_cases[i], check_types[j], 1000 * i + j);
        }
    return failed;
}

//===--- performance ---===//

/* One timed product: TFLOP/s, or GB/s of a's bytes for matrix-vector. */
static int run_perf(rt_device_t *dev, rt_queue_t *q, const char *name, rt_type_t t, int64_t K,
                    int64_t M, int64_t N, int runs) {
    const int64_t na[3] = { K, M, 1 }, nb[4] = { K, N, 1, 1 };
    mm_t m;
    rt_status_t st = mm_build(&m, dev, t, na, nb, 42);
    const double s = st == RT_OK ? mm_time(q, &m, runs) : -1.0;
    int failed = 0;
    if (s <= 0.0) {
        printf("perf name=%s ok=0 error=\"%s\"\n", name, rt_last_error());
        failed = 1;
    } else if (N > 8) {
        const double err = mm_error(&m, 32, 7);
        printf("perf name=%s K=%lld M=%lld N=%lld ms=%.3f tflops=%.1f err=%.3g\n", name,
               (long long)K, (long long)M, (long long)N, s * 1e3, 2.0 * K * M * N / s * 1e-12, err);
    } else {
        const double err = mm_error(&m, 32, 7);
        printf("perf name=%s K=%lld M=%lld N=%lld ms=%.4f gbps=%.1f err=%.3g\n", name, (long long)K,
               (long long)M, (long long)N, s * 1e3, (double)rt_nbytes(m.a) / s * 1e-9, err);
    }
    mm_free(&m);
    return failed;
}

static int run_perfs(rt_device_t *dev, rt_queue_t *q) {
    int failed = run_perf(dev, q, "gemm_f16", RT_TYPE_F16, 8192, 8192, 8192, 10);
    char name[32];
    for (size_t j = 3; j < sizeof check_types / sizeof check_types[0]; j++) {
        snprintf(name, sizeof name, "mmv_%s", type_name(check_types[j]));
        failed += run_perf(dev, q, name, check_types[j], 8192, 65536, 1, 50);
    }
    return failed;
}

int main(int argc, char **argv) {
    const char *name = "cuda0";
    bool checks = true, perf = true;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) name = argv[++i];
        else if (strcmp(argv[i], "--perf-only") == 0) checks = false;
        else if (strcmp(argv[i], "--check-only") == 0) perf = false;
        else {
            fprintf(stderr, "usage: %s [--device NAME] [--perf-only | --check-only]\n", argv[0]);
            return 2;
        }
    }
    rt_registry_t *reg = NULL;
    rt_queue_t *q = NULL;
    if (rt_registry_create(NULL, &reg) != RT_OK) {
        fprintf(stderr, "cuda_bench: %s\n", rt_last_error());
        return 1;
    }
    rt_device_t *dev = rt_registry_device_by_name(reg, name);
    if (!dev || rt_queue_create(dev, NULL, &q) != RT_OK) {
        fprintf(stderr, "cuda_bench: no device %s or no queue: %s\n", name, rt_last_error());
        rt_registry_destroy(reg);
        return 1;
    }
    int failed = 0;
    if (checks) failed += run_checks(dev, q);
    if (perf) failed += run_perfs(dev, q);
    printf("cuda_bench: %d failed\n", failed);
    rt_queue_destroy(q);
    rt_registry_destroy(reg);
    return failed ? 1 : 0;
}
