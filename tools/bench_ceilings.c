/* SPDX-License-Identifier: MIT */
/* bench_ceilings.c: see bench_ceilings.h. The FMA and read loops are
 * compiled for AVX-512 and AVX2 with target attributes and chosen by what
 * the CPU and the OS allow (CPUID and XCR0, as the CPU plugin does); the
 * threads are pinned one per processor of the process's affinity mask, as
 * the CPU plugin's queue pins its workers. A ceiling is the best of several
 * runs (interference only ever lowers it), and the read ceiling the best
 * of several ways of reading (streams per thread, prefetch distance). */
#include "bench_ceilings.h"
#include "bench.h"
#include "tools_os.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__)
#  include <cpuid.h>
#  include <immintrin.h>
#  define BENCH_X86 1
#endif

//===--- running a loop on every thread ---===//

/* A one-shot start line (pthread_barrier_t is not on every POSIX system):
 * every thread waits until all n have arrived. */
typedef struct mb_start {
    pthread_mutex_t lock;
    pthread_cond_t all_here;
    int n, arrived;
} mb_start_t;

static void mb_start_wait(mb_start_t *s) {
    pthread_mutex_lock(&s->lock);
    if (++s->arrived == s->n) pthread_cond_broadcast(&s->all_here);
    while (s->arrived < s->n) pthread_cond_wait(&s->all_here, &s->lock);
    pthread_mutex_unlock(&s->lock);
}

typedef struct mb_thread {
    void (*fn)(void *state, int ith);
    void *state;
    int ith, cpu;
    mb_start_t *start;
} mb_thread_t;

static void *mb_main(void *arg) {
    mb_thread_t *t = arg;
    if (t->cpu >= 0) rt_tools_pin_self(t->cpu);
    mb_start_wait(t->start);
    t->fn(t->state, t->ith);
    return NULL;
}

/* Seconds from the common start until the last thread is done. The caller
 * is thread 0 (pinned meanwhile), so no thread waits for a free core. */
static double mb_run(int threads, void (*fn)(void *, int), void *state) {
    pthread_t tid[64];
    mb_thread_t t[64];
    if (threads > 64) threads = 64;
    mb_start_t start = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, threads, 0 };
    for (int i = 1; i < threads; i++) {
        t[i] = (mb_thread_t){ fn, state, i, rt_tools_cpu_nth(i), &start };
        pthread_create(&tid[i], NULL, mb_main, &t[i]);
    }
    const int cpu0 = rt_tools_cpu_nth(0);
    if (cpu0 >= 0) rt_tools_pin_self(cpu0);
    mb_start_wait(&start);
    const double t0 = bench_now();
    fn(state, 0);
    for (int i = 1; i < threads; i++) pthread_join(tid[i], NULL);
    const double dt = bench_now() - t0;
    if (cpu0 >= 0) rt_tools_pin_self(-1);
    pthread_cond_destroy(&start.all_here);
    pthread_mutex_destroy(&start.lock);
    return dt;
}

//===--- what the machine runs ---===//

#ifdef BENCH_X86
static uint64_t xcr0(void) {
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

static int x86_level(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c >> 27 & 1) || !(c >> 12 & 1)) return 0;
    const uint64_t x = xcr0();
    if ((x & 6) != 6 || __get_cpuid_max(0, NULL) < 7) return 0;
    __cpuid_count(7, 0, a, b, c, d);
    if ((b >> 16 & 1) && (x & 0xe6) == 0xe6) return 2;
    return b >> 5 & 1;
}
#endif

//===--- FMA throughput ---===//

static volatile float mb_sink;

#ifdef BENCH_X86
/* 24 independent chains: more than latency times throughput on any core. */
__attribute__((target("avx512f"))) static void fma_zmm(void *state, int ith) {
    const long iters = *(const long *)state;
    __m512 acc[24];
    const __m512 b = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-6f);
    for (int i = 0; i < 24; i++) acc[i] = _mm512_set1_ps((float)(i + ith));
    for (long it = 0; it < iters; it++) {
#pragma GCC unroll 24
        for (int i = 0; i < 24; i++) acc[i] = _mm512_fmadd_ps(acc[i], b, c);
    }
    for (int i = 1; i < 24; i++) acc[0] = _mm512_add_ps(acc[0], acc[i]);
    mb_sink = _mm512_reduce_add_ps(acc[0]);
}

__attribute__((target("avx2,fma"))) static void fma_ymm(void *state, int ith) {
    const long iters = *(const long *)state;
    __m256 acc[12];
    const __m256 b = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-6f);
    for (int i = 0; i < 12; i++) acc[i] = _mm256_set1_ps((float)(i + ith));
    for (long it = 0; it < iters; it++) {
#pragma GCC unroll 12
        for (int i = 0; i < 12; i++) acc[i] = _mm256_fmadd_ps(acc[i], b, c);
    }
    for (int i = 1; i < 12; i++) acc[0] = _mm256_add_ps(acc[0], acc[i]);
    float v[8];
    _mm256_storeu_ps(v, acc[0]);
    mb_sink = v[0] + v[7];
}
#endif

static void fma_scalar(void *state, int ith) {
    const long iters = *(const long *)state;
    float acc[8];
    for (int i = 0; i < 8; i++) acc[i] = (float)(i + ith);
    for (long it = 0; it < iters; it++)
        for (int i = 0; i < 8; i++) acc[i] = __builtin_fmaf(acc[i], 0.999999f, 1e-6f);
    mb_sink = acc[0] + acc[7];
}

void bench_ceil_init(bench_ceil_t *c, int threads) {
    memset(c, 0, sizeof *c);
    c->threads = threads > 0 ? threads : 1;
    c->isa = "scalar";
#ifdef BENCH_X86
    const int level = x86_level();
    c->isa = level == 2 ? "avx512" : level == 1 ? "avx2" : "scalar";
#endif
}

double bench_ceil_fma(bench_ceil_t *c) {
    if (c->fma_gflops > 0) return c->fma_gflops;
    void (*fn)(void *, int) = fma_scalar;
    double flops_per_iter = 8 * 2;
#ifdef BENCH_X86
    if (strcmp(c->isa, "avx512") == 0) fn = fma_zmm, flops_per_iter = 24 * 16 * 2;
    else if (strcmp(c->isa, "avx2") == 0) fn = fma_ymm, flops_per_iter = 12 * 8 * 2;
#endif
    long iters = 1 << 16;
    while (mb_run(c->threads, fn, &iters) < 0.05 && iters < (1L << 34)) iters *= 4;
    for (int r = 0; r < 7; r++) {
        const double g = flops_per_iter * (double)iters * c->threads / mb_run(c->threads, fn, &iters) * 1e-9;
        if (g > c->fma_gflops) c->fma_gflops = g;
    }
    return c->fma_gflops;
}

//===--- read bandwidth ---===//

/* A read pattern: how many independent sequential streams one thread
 * walks side by side (each keeps the hardware prefetcher busy on its own
 * page, so more misses are in flight), and how far ahead it asks for lines
 * itself (0: it leaves that to the hardware). Which pattern is fastest
 * depends on the core and the memory; the ceiling is the best of them. */
typedef struct rd_pattern {
    int streams;        /* 1..RD_MAX_STREAMS */
    size_t prefetch;    /* bytes ahead, or 0 */
} rd_pattern_t;

#define RD_MAX_STREAMS 8
#define RD_STEP 32      /* floats each stream reads a step: two cache lines */
/* The kernels' own ways too: one stream with its next lines asked for
 * 1.5-4 KB ahead (the F16 mat-vec), several side by side (the blocked
 * ones). With only the first four, a Zen 5's probe said 38 GB/s for a
 * buffer the size of TinyLlama-8's Q4_0 weights, which its decode then
 * streamed at 48.5. */
static const rd_pattern_t rd_patterns[] = {{1, 0},    {2, 0},    {4, 0},    {8, 0},
                                           {1, 1536}, {1, 4096}, {2, 1024}, {4, 2048}};

typedef struct rd_state {
    const float *p;
    size_t n;      /* floats, a multiple of RD_STEP * RD_MAX_STREAMS * threads */
    int threads;
    long reps;
    rd_pattern_t pat;
} rd_state_t;

#ifdef BENCH_X86
/* Eight accumulators, so that the adds never wait on each other and the
 * loads are the only bound. */
__attribute__((target("avx512f"))) static float rd_zmm(const float *p, size_t n, long reps,
                                                       rd_pattern_t pat) {
    __m512 acc[8];
    for (int i = 0; i < 8; i++) acc[i] = _mm512_setzero_ps();
    const size_t part = n / (size_t)pat.streams, ahead = pat.prefetch / sizeof(float);
    for (long r = 0; r < reps; r++)
        for (size_t i = 0; i < part; i += RD_STEP)
            for (int s = 0; s < pat.streams; s++) {
                const float *q = p + part * (size_t)s + i;
                if (ahead) _mm_prefetch((const char *)(q + ahead), _MM_HINT_T0);
                acc[2 * s & 7] = _mm512_add_ps(acc[2 * s & 7], _mm512_load_ps(q));
                acc[(2 * s + 1) & 7] = _mm512_add_ps(acc[(2 * s + 1) & 7], _mm512_load_ps(q + 16));
            }
    for (int i = 1; i < 8; i++) acc[0] = _mm512_add_ps(acc[0], acc[i]);
    return _mm512_reduce_add_ps(acc[0]);
}

__attribute__((target("avx2"))) static float rd_ymm(const float *p, size_t n, long reps,
                                                    rd_pattern_t pat) {
    __m256 acc[8];
    for (int i = 0; i < 8; i++) acc[i] = _mm256_setzero_ps();
    const size_t part = n / (size_t)pat.streams, ahead = pat.prefetch / sizeof(float);
    for (long r = 0; r < reps; r++)
        for (size_t i = 0; i < part; i += RD_STEP)
            for (int s = 0; s < pat.streams; s++) {
                const float *q = p + part * (size_t)s + i;
                if (ahead) _mm_prefetch((const char *)(q + ahead), _MM_HINT_T0);
                for (int k = 0; k < 4; k++)
                    acc[(4 * s + k) & 7] = _mm256_add_ps(acc[(4 * s + k) & 7],
                                                         _mm256_load_ps(q + 8 * k));
            }
    for (int i = 1; i < 8; i++) acc[0] = _mm256_add_ps(acc[0], acc[i]);
    float v[8];
    _mm256_storeu_ps(v, acc[0]);
    return v[0] + v[7];
}
#endif

static float rd_scalar(const float *p, size_t n, long reps, rd_pattern_t pat) {
    float s[8] = {0};
    const size_t part = n / (size_t)pat.streams;
    for (long r = 0; r < reps; r++)
        for (size_t i = 0; i < part; i += RD_STEP)
            for (int t = 0; t < pat.streams; t++)
                for (int k = 0; k < RD_STEP; k++) s[k & 7] += p[part * (size_t)t + i + k];
    return s[0] + s[7];
}

static const char *rd_isa; /* the vector width of the bandwidth loops */

/* dst = src, n floats (a multiple of 64), with ordinary stores as the ops
 * make (memcpy may stream past the cache). */
#ifdef BENCH_X86
__attribute__((target("avx512f"))) static void cp_zmm(float *dst, const float *src, size_t n, long reps) {
    for (long r = 0; r < reps; r++) {
        for (size_t i = 0; i < n; i += 32) {
            _mm512_store_ps(dst + i, _mm512_load_ps(src + i));
            _mm512_store_ps(dst + i + 16, _mm512_load_ps(src + i + 16));
        }
        __asm__ volatile("" : : "r"(dst) : "memory");
    }
}

__attribute__((target("avx2"))) static void cp_ymm(float *dst, const float *src, size_t n, long reps) {
    for (long r = 0; r < reps; r++) {
        for (size_t i = 0; i < n; i += 16) {
            _mm256_store_ps(dst + i, _mm256_load_ps(src + i));
            _mm256_store_ps(dst + i + 8, _mm256_load_ps(src + i + 8));
        }
        __asm__ volatile("" : : "r"(dst) : "memory");
    }
}
#endif

static void cp_scalar(float *dst, const float *src, size_t n, long reps) {
    for (long r = 0; r < reps; r++) {
        memcpy(dst, src, n * sizeof dst[0]);
        __asm__ volatile("" : : "r"(dst) : "memory");
    }
}

static void rd_thread(void *state, int ith) {
    const rd_state_t *s = state;
    const size_t part = s->n / (size_t)s->threads;
    const float *p = s->p + part * (size_t)ith;
#ifdef BENCH_X86
    if (strcmp(rd_isa, "avx512") == 0) {
        mb_sink = rd_zmm(p, part, s->reps, s->pat);
        return;
    }
    if (strcmp(rd_isa, "avx2") == 0) {
        mb_sink = rd_ymm(p, part, s->reps, s->pat);
        return;
    }
#endif
    mb_sink = rd_scalar(p, part, s->reps, s->pat);
}

typedef struct cp_state {
    float *src, *dst;
    size_t n;      /* floats per side */
    int threads;
    long reps;
} cp_state_t;

static void cp_thread(void *state, int ith) {
    const cp_state_t *s = state;
    const size_t part = s->n / (size_t)s->threads;
    float *d = s->dst + part * (size_t)ith;
    const float *x = s->src + part * (size_t)ith;
#ifdef BENCH_X86
    if (strcmp(rd_isa, "avx512") == 0) {
        cp_zmm(d, x, part, s->reps);
        return;
    }
    if (strcmp(rd_isa, "avx2") == 0) {
        cp_ymm(d, x, part, s->reps);
        return;
    }
#endif
    cp_scalar(d, x, part, s->reps);
}

static double copy_measure(const bench_ceil_t *c, size_t bytes) {
    const size_t unit = 128 * sizeof(float) * (size_t)c->threads;
    bytes = (bytes + unit - 1) / unit * unit;
    float *p = aligned_alloc(64, bytes);
    if (p == NULL) return 0;
    memset(p, 1, bytes);
    rd_isa = c->isa;
    cp_state_t s = { p, p + bytes / 2 / sizeof(float), bytes / 2 / sizeof(float), c->threads, 1 };
    mb_run(c->threads, cp_thread, &s);
    s.reps = (long)(1e9 / (double)bytes) + 1;
    double best = 0;
    for (int r = 0; r < 5; r++) {
        const double g = (double)bytes * (double)s.reps / mb_run(c->threads, cp_thread, &s) * 1e-9;
        if (g > best) best = g;
    }
    free(p);
    return best;
}

double bench_ceil_copy(bench_ceil_t *c, size_t bytes) {
    for (int i = 0; i < c->n_copy; i++)
        if (c->copy_sizes[i] == bytes) return c->copy_gbs[i];
    const double g = copy_measure(c, bytes);
    if (c->n_copy < BENCH_CEIL_MAX_SIZES) {
        c->copy_sizes[c->n_copy] = bytes;
        c->copy_gbs[c->n_copy++] = g;
    }
    return g;
}

/* A buffer for the loops, in 2 MiB pages where the OS offers them: the
 * weights a kernel streams may sit in huge pages, and TLB misses must not
 * be what bounds the ceiling. */
static float *bench_buffer(size_t bytes) {
    const size_t huge = (size_t)2 << 20;
    const size_t size = (bytes + huge - 1) / huge * huge;
    float *p = aligned_alloc(huge, size);
    rt_tools_advise_huge(p, size);
    return p;
}

/* Best of several runs of each read pattern: the ceiling is what the best
 * way of reading reaches. */
#define RD_PATTERN_S 0.1
static double read_measure(const bench_ceil_t *c, size_t bytes) {
    const size_t unit = RD_STEP * RD_MAX_STREAMS * sizeof(float) * (size_t)c->threads;
    bytes = (bytes + unit - 1) / unit * unit;
    float *p = bench_buffer(bytes);
    if (p == NULL) return 0;
    memset(p, 0, bytes);
    rd_isa = c->isa;
    rd_state_t s = { p, bytes / sizeof(float), c->threads, 1, rd_patterns[0] };
    mb_run(c->threads, rd_thread, &s); /* into the caches (or not) */
    /* A quarter GB a run: milliseconds even in L1, and one pass over a
     * buffer past the caches, which nothing would be gained by repeating. */
    s.reps = (long)(256e6 / (double)bytes) + 1;
    double best = 0;
    for (size_t k = 0; k < sizeof rd_patterns / sizeof rd_patterns[0]; k++) {
        s.pat = rd_patterns[k];
        /* at least 3 runs and RD_PATTERN_S seconds of them: a shared
           machine's quiet moments are what a ceiling is made of */
        double spent = 0;
        for (int r = 0; r < 3 || spent < RD_PATTERN_S; r++) {
            const double t = mb_run(c->threads, rd_thread, &s);
            const double g = (double)bytes * (double)s.reps / t * 1e-9;
            spent += t;
            if (g > best) best = g;
        }
    }
    free(p);
    return best;
}

size_t bench_ceil_memory_bytes(void) {
    long llc = -1;
#ifdef _SC_LEVEL3_CACHE_SIZE
    llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (llc <= 0) llc = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
    /* Some hypervisors report a socket's cache, or more, to a guest: the
     * buffer stays within a size any machine that runs models has. */
    const size_t lo = (size_t)256 << 20, hi = (size_t)512 << 20;
    const size_t want = llc > 0 ? (size_t)llc * 4 : lo;
    return want < lo ? lo : want > hi ? hi : want;
}

double bench_ceil_read(bench_ceil_t *c, size_t bytes) {
    for (int i = 0; i < c->n_sizes; i++)
        if (c->sizes[i] == bytes) return c->gbs[i];
    const double g = read_measure(c, bytes);
    if (c->n_sizes < BENCH_CEIL_MAX_SIZES) {
        c->sizes[c->n_sizes] = bytes;
        c->gbs[c->n_sizes++] = g;
    }
    return g;
}

//===--- OpenBLAS ---===//

enum { CBLAS_ROW_MAJOR = 101, CBLAS_NO_TRANS = 111, CBLAS_TRANS = 112 };
typedef void (*sgemm_fn)(int order, int ta, int tb, int m, int n, int k, float alpha,
                         const float *a, int lda, const float *b, int ldb, float beta, float *c,
                         int ldc);

static struct {
    bool tried;
    sgemm_fn sgemm;
    void (*set_threads)(int);
} blas;

bool bench_blas_available(void) {
    if (!blas.tried) {
        blas.tried = true;
        void *h = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
        if (h != NULL) {
            blas.sgemm = (sgemm_fn)dlsym(h, "cblas_sgemm");
            blas.set_threads = (void (*)(int))dlsym(h, "openblas_set_num_threads");
        }
    }
    return blas.sgemm != NULL;
}

double bench_blas_sgemm(const float *a, const float *b, float *c, int64_t M, int64_t N, int64_t K,
                        int threads, int reps) {
    if (!bench_blas_available()) return 0;
    if (blas.set_threads) blas.set_threads(threads);
    double t[64];
    if (reps > 64) reps = 64;
    for (int r = -1; r < reps; r++) { /* the first run warms up */
        const double t0 = bench_now();
        blas.sgemm(CBLAS_ROW_MAJOR, CBLAS_NO_TRANS, CBLAS_TRANS, (int)N, (int)M, (int)K, 1.0f, b,
                   (int)K, a, (int)K, 0.0f, c, (int)M);
        if (r >= 0) t[r] = bench_now() - t0;
    }
    return bench_median(t, (size_t)reps);
}
