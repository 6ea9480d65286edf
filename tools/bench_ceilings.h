/* SPDX-License-Identifier: MIT */
/* bench_ceilings.h: the machine's ceilings that `rt-bench ops` measures
 * itself, in the same run as the ops, to put its figures in proportion:
 * the FMA throughput of all its threads, the read bandwidth of a buffer of
 * a given size (so of the cache level or the memory such a buffer lives
 * in), the bandwidth of copying one, and OpenBLAS's sgemm, opened with dlopen so rt never depends on it.
 *
 *     bench_ceil_t c;
 *     bench_ceil_init(&c, 2);                     // 2 threads
 *     double peak = bench_ceil_fma(&c);           // GFLOPS, measured once
 *     double bw = bench_ceil_read(&c, 64 << 20);  // GB/s over 64 MiB
 *     double mem = bench_ceil_read(&c, bench_ceil_memory_bytes());
 *     if (bench_blas_available()) bench_blas_sgemm(...);
 */
#ifndef RT_TOOLS_BENCH_CEILINGS_H
#define RT_TOOLS_BENCH_CEILINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BENCH_CEIL_MAX_SIZES 64

typedef struct bench_ceil {
    int threads;
    const char *isa;     /* vector width the FMA loop used: "avx512", "avx2", "scalar" */
    double fma_gflops;   /* 0 until measured */
    int n_sizes;         /* read bandwidths measured so far */
    size_t sizes[BENCH_CEIL_MAX_SIZES];
    double gbs[BENCH_CEIL_MAX_SIZES];
    int n_copy;          /* copy bandwidths measured so far */
    size_t copy_sizes[BENCH_CEIL_MAX_SIZES];
    double copy_gbs[BENCH_CEIL_MAX_SIZES];
} bench_ceil_t;

void bench_ceil_init(bench_ceil_t *c, int threads);
/* Best of several runs of independent FMA chains on every thread. */
double bench_ceil_fma(bench_ceil_t *c);
/* Best of several runs reading a buffer of `bytes` (split over the
 * threads) again and again, each thread in several independent streams,
 * with and without software prefetch; remembered per size. */
double bench_ceil_read(bench_ceil_t *c, size_t bytes);
/* A buffer size past the last-level cache (4 times it, 256 to 512 MiB),
 * whose read bandwidth is the memory's. */
size_t bench_ceil_memory_bytes(void);
/* The same for copying: half the bytes read, the other half written, the
 * bound of an op that writes as much as it reads (bytes counted once). */
double bench_ceil_copy(bench_ceil_t *c, size_t bytes);

/* OpenBLAS's cblas_sgemm, when libopenblas.so.0 can be opened. */
bool bench_blas_available(void);
/* Seconds (median of reps) for c[N][M] = b[N][K] . a[M][K]^T on `threads`. */
double bench_blas_sgemm(const float *a, const float *b, float *c, int64_t M, int64_t N, int64_t K,
                        int threads, int reps);

#endif /* RT_TOOLS_BENCH_CEILINGS_H */
