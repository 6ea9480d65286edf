/* SPDX-License-Identifier: MIT */
/* bench_threads.c: rt-bench threads, the CPU pool when its threads cannot
 * all run. A graph shaped like a decode step (a chain of matrix-vector
 * products and RMS norms, one barrier a node) and like a prompt batch runs
 * with 1, 2, ... threads, first on idle cores and then with a busy-loop
 * competitor pinned to one processor of the affinity mask. A pool whose
 * waiting threads spin forever is slower with 2 threads than with 1 there
 * (the spinner holds the core the other thread needs); one that backs off
 * to sleeping is not. Printed: milliseconds per graph (median) and the
 * ratio of each thread count's time to 1 thread's, with the competitor;
 * the last line says whether 2 threads were never slower than 1 there
 * (beyond BENCH_NOISE: medians on a shared machine move that much from one
 * run to the next). */
#include "bench.h"
#include "tool_cli.h"
#include "tools_os.h"

#include <getopt.h>

#include "../abi/rt.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THREADS_MAX_REPS 200
#define BENCH_NOISE 1.05

typedef struct threads_args {
    int32_t dim, layers, max_threads;
    float min_time;
} threads_args_t;

#define TOOL "rt-bench threads"

static void usage(FILE *f) {
    fprintf(f, "usage: rt-bench threads [options]\n"
            "  --dim N          the matrices' size, N x N F32 (default 512)\n"
            "  --layers N       matrix products per graph (default 16)\n"
            "  --max-threads N  thread counts 1..N (default 2)\n"
            "  --min-time S     seconds timed per row (default 0.3)\n"
            "  -h, --help       this text\n");
}

static int parse(int argc, char **argv, threads_args_t *a) {
    enum { OPT_DIM = 0x2000, OPT_LAYERS, OPT_MAX_THREADS, OPT_MIN_TIME };
    static const struct option opts[] = {
        {"dim", required_argument, NULL, OPT_DIM}, {"layers", required_argument, NULL, OPT_LAYERS},
        {"max-threads", required_argument, NULL, OPT_MAX_THREADS},
        {"min-time", required_argument, NULL, OPT_MIN_TIME}, {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    optind = 1;
    for (int c; (c = getopt_long_only(argc, argv, "h", opts, NULL)) != -1;) {
        const char *name = optarg ? rt_cli_option_name(argv, optind) : NULL;
        bool ok = false;
        if (c == 'h') return usage(stdout), 1;
        if (c == OPT_DIM) ok = rt_cli_int(TOOL, name, optarg, 16, 1 << 16, &a->dim);
        else if (c == OPT_LAYERS) ok = rt_cli_int(TOOL, name, optarg, 1, 1 << 16, &a->layers);
        else if (c == OPT_MAX_THREADS) ok = rt_cli_int(TOOL, name, optarg, 1, 64, &a->max_threads);
        else if (c == OPT_MIN_TIME) ok = rt_cli_float(TOOL, name, optarg, &a->min_time) && a->min_time > 0;
        if (!ok) return rt_cli_bad_usage(TOOL);
    }
    if (optind == argc) return 0;
    fprintf(stderr, TOOL ": unexpected argument '%s'\n", argv[optind]);
    return rt_cli_bad_usage(TOOL);
}

//===--- the competitor ---===//

typedef struct competitor {
    pthread_t thread;
    int cpu;
    atomic_bool stop;
} competitor_t;

static void *competitor_main(void *arg) {
    competitor_t *c = arg;
    rt_tools_pin_self(c->cpu);
    volatile uint64_t x = 0;
    while (!atomic_load_explicit(&c->stop, memory_order_relaxed)) x = x * 3 + 1;
    return NULL;
}

//===--- the graph ---===//

typedef struct threads_graph {
    rt_context_t *ctx;
    rt_graph_t *g;
    rt_buffer_t *buf;
} threads_graph_t;

static rt_status_t fill_const(rt_tensor_t *t, float v) {
    const size_t n = (size_t)rt_nelements(t);
    float *x = malloc(n * sizeof *x);
    if (!x) return RT_ERR_OUT_OF_MEMORY;
    for (size_t i = 0; i < n; i++) x[i] = v * (float)((i * 2654435761u) % 1000) / 1000.0f;
    const rt_status_t st = rt_tensor_set(t, x, 0, n * sizeof *x);
    free(x);
    return st;
}

/* h = rms_norm(W_l h) for each layer l, tokens columns of h. */
static rt_status_t graph_build(threads_graph_t *tg, rt_device_t *dev, const threads_args_t *a,
                               int32_t tokens) {
    const rt_context_params_t p = {.struct_size = sizeof p, .mem_size = 1 << 20, .no_alloc = true};
    rt_status_t st = rt_context_create(&p, &tg->ctx);
    if (st != RT_OK) return st;
    rt_tensor_t *h = rt_new_tensor_2d(tg->ctx, RT_TYPE_F32, a->dim, tokens);
    rt_tensor_t *x = h;
    rt_tensor_t *w[256];
    const int32_t layers = a->layers > 256 ? 256 : a->layers;
    for (int32_t l = 0; l < layers; l++) {
        w[l] = rt_new_tensor_2d(tg->ctx, RT_TYPE_F32, a->dim, a->dim);
        h = rt_rms_norm(tg->ctx, rt_mul_mat(tg->ctx, w[l], h), 1e-6f);
    }
    rt_set_output(h);
    tg->g = rt_graph_create(tg->ctx, 4 * layers + 16);
    rt_graph_build_forward_expand(tg->g, h);
    st = rt_alloc_ctx_tensors(tg->ctx, rt_device_buffer_type(dev, 0), &tg->buf);
    for (int32_t l = 0; l < layers && st == RT_OK; l++) st = fill_const(w[l], 0.01f);
    if (st == RT_OK) st = fill_const(x, 1.0f);
    return st;
}

static void graph_free(threads_graph_t *tg) {
    rt_buffer_free(tg->buf);
    rt_context_destroy(tg->ctx);
}

/* Median seconds per graph over about min_time, after two warm-up runs. */
static double time_queue(rt_queue_t *q, rt_graph_t *g, double min_time) {
    double t[THREADS_MAX_REPS], total = 0;
    int n = 0;
    for (int i = 0; i < 2; i++)
        if (rt_queue_compute(q, g) != RT_OK) return -1;
    while (n < THREADS_MAX_REPS && (total < min_time || n < 5)) {
        const double t0 = bench_now();
        if (rt_queue_compute(q, g) != RT_OK) return -1;
        t[n] = bench_now() - t0;
        total += t[n++];
    }
    return bench_median(t, (size_t)n);
}

static double time_threads(rt_device_t *dev, rt_graph_t *g, int32_t threads, double min_time) {
    const rt_queue_options_t o = {.struct_size = sizeof o, .n_threads = threads};
    rt_queue_t *q = NULL;
    if (rt_queue_create(dev, &o, &q) != RT_OK) return -1;
    const double s = time_queue(q, g, min_time);
    rt_queue_destroy(q);
    return s;
}

//===--- the table ---===//

/* One row per thread count: idle, then with the competitor; returns
 * whether 2 threads were no slower than 1 with the competitor. */
static bool run_shape(rt_device_t *dev, const threads_args_t *a, int32_t tokens, int cpu,
                      int *failures) {
    threads_graph_t tg = {0};
    if (graph_build(&tg, dev, a, tokens) != RT_OK) {
        fprintf(stderr, "rt-bench threads: cannot build the graph: %s\n", rt_last_error());
        ++*failures;
        graph_free(&tg);
        return false;
    }
    double idle[65], busy[65];
    for (int32_t n = 1; n <= a->max_threads; n++) idle[n] = time_threads(dev, tg.g, n, a->min_time);
    competitor_t c = {.cpu = cpu};
    atomic_init(&c.stop, false);
    const bool started = pthread_create(&c.thread, NULL, competitor_main, &c) == 0;
    for (int32_t n = 1; n <= a->max_threads; n++) busy[n] = time_threads(dev, tg.g, n, a->min_time);
    atomic_store(&c.stop, true);
    if (started) pthread_join(c.thread, NULL);
    bool ok = true;
    for (int32_t n = 1; n <= a->max_threads; n++) {
        if (idle[n] < 0 || busy[n] < 0) ++*failures;
        printf("%-7d %-7d %12.3f %12.3f %10.2f\n", (int)tokens, (int)n, idle[n] * 1e3,
               busy[n] * 1e3, busy[1] > 0 ? busy[n] / busy[1] : -1);
        if (n == 2 && busy[2] > busy[1] * BENCH_NOISE) ok = false;
    }
    graph_free(&tg);
    return ok;
}

int bench_threads_main(int argc, char **argv) {
    threads_args_t a = {.dim = 512, .layers = 16, .max_threads = 2, .min_time = 0.3};
    const int parsed = parse(argc, argv, &a);
    if (parsed != 0) return parsed == 1 ? 0 : 2;
    rt_registry_t *reg = NULL;
    if (rt_registry_create(NULL, &reg) != RT_OK) {
        fprintf(stderr, "rt-bench threads: rt_registry_create: %s\n", rt_last_error());
        return 1;
    }
    rt_device_t *dev = rt_registry_device_by_name(reg, "cpu0");
    if (!dev) {
        fprintf(stderr, "rt-bench threads: no cpu0\n");
        rt_registry_destroy(reg);
        return 1;
    }
    const int cpu = rt_tools_cpu_nth(rt_tools_cpu_count() - 1);
    printf("# %d x %d F32, %d layers; competitor: a busy loop on cpu %d\n", (int)a.dim, (int)a.dim,
           (int)a.layers, cpu);
    printf("%-7s %-7s %12s %12s %10s\n", "tokens", "threads", "idle ms", "busy ms", "busy/1");
    int failures = 0;
    bool ok = run_shape(dev, &a, 1, cpu, &failures);
    ok = run_shape(dev, &a, 16, cpu, &failures) && ok;
    if (a.max_threads >= 2)
        printf("2 threads %s slower than 1 (beyond %.0f%% noise) with a competitor\n",
               ok ? "never" : "WERE", (BENCH_NOISE - 1) * 100);
    rt_registry_destroy(reg);
    return failures ? 1 : 0;
}
