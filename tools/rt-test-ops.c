/* SPDX-License-Identifier: MIT */
/* rt-test-ops: the op conformance check of every device (ggml's
 * test-backend-ops). It runs the conformance library's cases
 * (tests/conform/: ops, types, shapes, strided, permuted and broadcast
 * inputs, each with a double-precision reference; tests/test-ops runs the
 * same table on the CPU at strict tolerances) on each device that is not
 * the CPU plugin's, at the tolerances a device's own rounding allows
 * (cf_tolerance). Then a few multi-node graphs, placed by a gallocr so that
 * memory reuse, in-place ops and writes through views (a KV cache written
 * by SET_ROWS, then read) exercise the device's hazard tracking, are run on
 * the device and on the CPU plugin and compared by normalised error.
 *
 *   rt-test-ops [perf] [--device NAME] [--op NAME] [--rows-max N] [--rows-min N]
 *
 * --device may name the CPU's own device too. One line per case (OK, FAIL
 * with the failing checks below it, or not supported), then "N passed, N
 * failed, N unsupported"; the exit status is 1 when any case failed.
 * --rows-max/--rows-min keep the cases whose second source (MUL_MAT's b:
 * the product's columns) has at most/at least N rows, so that a check of
 * one kernel of a device (its mat-vec, N <= 8 on Vulkan; its mat-mul)
 * runs that kernel's cases only.
 * `perf` times larger cases and prints GFLOPS (MUL_MAT) or GB/s (the rest)
 * for the device and for the CPU. Uses the public API only. */
#include "../abi/rt.h"
#include "../tests/conform/conform.h"
#include "../tests/conform/nmse.h"
#include "../tests/conform/rng.h"

#include "tool_cli.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct opts {
    bool perf;
    const char *device, *op;
    int64_t rows_max, rows_min; /* 0: no bound */
} opts_t;

/* Whether case c's second source has a row count within o's bounds (a
 * case with no second source has none to bound: kept). */
static bool rows_kept(const opts_t *o, const cf_case_t *c) {
    if (c->src[1].ne[0] == 0) return true;
    const int64_t rows = c->src[1].ne[1] ? c->src[1].ne[1] : 1;
    return (!o->rows_max || rows <= o->rows_max) && (!o->rows_min || rows >= o->rows_min);
}

typedef struct totals {
    int passed, failed, unsupported;
} totals_t;

static void print_result(const char *dev, const char *desc, const char *what, totals_t *t, cf_result_t r) {
    printf("  %-8s %-64s %s\n", dev, desc, what);
    if (r == CF_PASS) t->passed++;
    else if (r == CF_FAIL) t->failed++;
    else t->unsupported++;
}

//===--- the conformance cases ---===//

/* Failing checks, indented under the case's line (printed after it). */
static char why[8192];

static void collect(void *user, const char *msg) {
    (void)user;
    const size_t n = strlen(why);
    snprintf(why + n, sizeof why - n, "      %s\n", msg);
}

static void run_conformance(rt_device_t *dev, rt_queue_t *q, const opts_t *o, totals_t *t) {
    static const int threads[1] = {0};
    const cf_target_t target = {.dev = dev, .queues = &q, .queue_threads = threads, .n_queues = 1,
                                .report = collect};
    for (size_t s = 0; s < cf_n_op_tests; s++) {
        const cf_op_test_t *test = &cf_op_tests[s];
        if (o->op && strcmp(o->op, rt_op_name(test->op)) != 0) continue;
        for (size_t k = 0, n = 0; k < cf_n_cases; k++) {
            if (!cf_case_applies(&cf_cases[k], test)) continue;
            ++n; /* ids stay those of the whole table */
            if (!rows_kept(o, &cf_cases[k])) continue;
            char id[32], desc[200], res[64];
            snprintf(id, sizeof id, "ops-%zu.%zu", s + 1, n);
            cf_describe(test->op, &cf_cases[k], desc, sizeof desc);
            why[0] = '\0';
            double err = 0;
            const cf_result_t r = cf_run_case(&target, test->op, &cf_cases[k], id, 1000 * s + n, &err);
            const double tol = cf_tolerance(test->op, &cf_cases[k], false);
            if (r == CF_PASS) snprintf(res, sizeof res, "OK   (err %.2e <= %.0e)", err, tol);
            else snprintf(res, sizeof res, r == CF_FAIL ? "FAIL" : "not supported");
            print_result(rt_device_name(dev), desc, res, t, r);
            if (r == CF_FAIL) fputs(why, stdout);
        }
    }
}

//===--- multi-node graphs against the CPU plugin ---===//

enum { G_BLOCK, G_KV };

typedef struct graph_case {
    int kind;
    rt_type_t type;   /* weights (G_BLOCK) or caches (G_KV) */
    int64_t d, n;     /* G_BLOCK: width, tokens; G_KV: n_embd, n_ctx */
    int64_t m;        /* G_KV: tokens written (m * d <= n) */
    double tol;
} graph_case_t;

static const graph_case_t graph_cases[] = {
    {G_BLOCK, RT_TYPE_F32, 64, 4, 0, 1e-5},
    {G_BLOCK, RT_TYPE_Q8_0, 128, 8, 0, 2e-2}, /* as cf_tolerance's quantised weights */
    {G_KV, RT_TYPE_F16, 16, 64, 3, 1e-5},
    {G_KV, RT_TYPE_F32, 32, 256, 7, 1e-5},
};

/* A small transformer-ish block: norm, two projections, SwiGLU, a third
 * projection, residual add, softmax. Several independent nodes, chains of
 * dependencies, and (under a gallocr) in-place reuse. */
static rt_tensor_t *build_block(rt_context_t *ctx, const graph_case_t *c) {
    const int64_t d = c->d, n = c->n, h = 2 * d;
    rt_tensor_t *x = rt_new_tensor_2d(ctx, RT_TYPE_F32, d, n);
    rt_tensor_t *w1 = rt_new_tensor_2d(ctx, c->type, d, h), *w3 = rt_new_tensor_2d(ctx, c->type, d, h);
    rt_tensor_t *w2 = rt_new_tensor_2d(ctx, c->type == RT_TYPE_F32 ? RT_TYPE_F32 : RT_TYPE_F16, h, d);
    rt_tensor_t *xn = rt_rms_norm(ctx, x, 1e-6f);
    rt_tensor_t *g = rt_swiglu(ctx, rt_mul_mat(ctx, w1, xn), rt_mul_mat(ctx, w3, xn));
    rt_tensor_t *y = rt_add(ctx, rt_mul_mat(ctx, w2, g), x);
    rt_tensor_t *s = rt_soft_max_ext(ctx, rt_scale(ctx, y, 0.5f), NULL, 1.0f);
    /* d is a multiple of n, so the n x n corner of y repeats into s. */
    rt_tensor_t *corner = rt_cont(ctx, rt_transpose(ctx, rt_view_2d(ctx, y, n, n, y->nb[1], 0)));
    return rt_add(ctx, s, corner);
}

/* The decode graph's KV cache, small: SET_ROWS writes the step's m rows
 * of K and, through a {1, n_ctx * n_embd} reshape, m * n_embd one-element
 * rows of the transposed V cache (indices in [0, n_ctx): one range for
 * every index tensor); MUL_MATs then read both caches through views of the
 * SET_ROWS results, so the reads must wait for the writes to the same
 * bytes. */
static rt_tensor_t *build_kv(rt_context_t *ctx, const graph_case_t *c) {
    const int64_t d = c->d, n_ctx = c->n, m = c->m;
    rt_tensor_t *k = rt_new_tensor_2d(ctx, c->type, d, n_ctx), *v = rt_new_tensor_2d(ctx, c->type, n_ctx, d);
    rt_tensor_t *k_cur = rt_new_tensor_2d(ctx, RT_TYPE_F32, d, m);
    rt_tensor_t *v_cur = rt_new_tensor_2d(ctx, RT_TYPE_F32, 1, d * m);
    rt_tensor_t *k_set = rt_set_rows(ctx, k, k_cur, rt_new_tensor_1d(ctx, RT_TYPE_I32, m));
    rt_tensor_t *v_set = rt_set_rows(ctx, rt_reshape_2d(ctx, v, 1, n_ctx * d), v_cur,
                                     rt_new_tensor_1d(ctx, RT_TYPE_I32, d * m));
    rt_tensor_t *q = rt_new_tensor_2d(ctx, RT_TYPE_F32, d, 3);
    rt_tensor_t *kq = rt_mul_mat(ctx, rt_view_2d(ctx, k_set, d, n_ctx, k->nb[1], 0), q);
    return rt_mul_mat(ctx, rt_view_2d(ctx, v_set, n_ctx, d, v->nb[1], 0), kq);
}

/* One side of a comparison: the graph placed on one device. */
typedef struct side {
    rt_device_t *dev;
    rt_queue_t *queue;
    rt_context_t *ctx;
    rt_graph_t *graph;
    rt_tensor_t *out;
    rt_gallocr_t *galloc;
} side_t;

static void side_free(side_t *s) {
    rt_gallocr_destroy(s->galloc);
    rt_context_destroy(s->ctx);
    s->galloc = NULL;
    s->ctx = NULL;
}

static rt_status_t side_build(side_t *s, const graph_case_t *c) {
    rt_context_params_t p = {.struct_size = sizeof p, .no_alloc = true,
                             .mem_size = 64 * rt_tensor_overhead() + rt_graph_overhead(64)};
    rt_status_t st = rt_context_create(&p, &s->ctx);
    if (st != RT_OK) return st;
    s->out = c->kind == G_KV ? build_kv(s->ctx, c) : build_block(s->ctx, c);
    rt_set_output(s->out);
    s->graph = rt_graph_create(s->ctx, 64);
    rt_graph_build_forward_expand(s->graph, s->out);
    for (int32_t i = 0; i < rt_graph_n_nodes(s->graph); i++)
        if (!rt_device_supports_op(s->dev, rt_graph_node(s->graph, i))) return RT_ERR_UNSUPPORTED;
    st = rt_gallocr_create(rt_device_buffer_type(s->dev, 0), &s->galloc);
    return st == RT_OK ? rt_gallocr_alloc_graph(s->galloc, s->graph) : st;
}

/* Leaf t's values from rng: floats in [-1, 1) in its type, or distinct
 * indices in [0, range) for I32. */
static rt_status_t fill_leaf(rt_tensor_t *t, int64_t range, uint64_t *rng) {
    const int64_t n = rt_nelements(t);
    float *f = malloc((size_t)n * sizeof *f);
    void *data = malloc(rt_nbytes(t));
    rt_status_t st = f && data ? RT_OK : RT_ERR_OUT_OF_MEMORY;
    if (st == RT_OK && t->type == RT_TYPE_I32) {
        if (!cf_draw_distinct(f, n, n, range, rng)) st = RT_ERR_INVALID_ARGUMENT;
        for (int64_t i = 0; st == RT_OK && i < n; i++) ((int32_t *)data)[i] = (int32_t)f[i];
    } else if (st == RT_OK) {
        for (int64_t i = 0; i < n; i++) f[i] = cf_rng_uniform(rng, -1.0f, 1.0f);
        rt_quantize(t->type, f, data, n);
    }
    if (st == RT_OK) st = rt_tensor_set(t, data, 0, rt_nbytes(t));
    free(f);
    free(data);
    return st;
}

static rt_status_t side_run(side_t *s, const graph_case_t *c, uint64_t seed) {
    uint64_t rng = cf_rng_init(seed);
    rt_status_t st = RT_OK;
    for (int32_t i = 0; st == RT_OK && i < rt_graph_n_leafs(s->graph); i++)
        st = fill_leaf(rt_graph_leaf(s->graph, i), c->n, &rng);
    return st == RT_OK ? rt_queue_compute(s->queue, s->graph) : st;
}

/* The output (F32) as floats, malloc'd; NULL on failure. */
static float *side_output(const side_t *s) {
    float *f = malloc(rt_nbytes(s->out));
    if (f != NULL && rt_tensor_get(s->out, f, 0, rt_nbytes(s->out)) == RT_OK) return f;
    free(f);
    return NULL;
}

/* The normalised error of the device's output against the CPU's; a
 * negative value when either side could not run (why says so). */
static double compare_graph(side_t *dev, side_t *cpu, const graph_case_t *c, uint64_t seed, char *msg, size_t size) {
    rt_status_t st = side_build(dev, c);
    if (st == RT_OK) st = side_build(cpu, c);
    if (st == RT_OK) st = side_run(dev, c, seed);
    if (st == RT_OK) st = side_run(cpu, c, seed);
    float *d = st == RT_OK ? side_output(dev) : NULL, *r = st == RT_OK ? side_output(cpu) : NULL;
    double err = -1;
    if (d != NULL && r != NULL) {
        const int64_t n = rt_nelements(cpu->out);
        double *ref = malloc((size_t)n * sizeof *ref);
        for (int64_t i = 0; i < n; i++) ref[i] = r[i];
        err = cf_nmse(ref, d, (size_t)n);
        free(ref);
    } else {
        snprintf(msg, size, "%s: %s", rt_status_name(st), rt_last_error());
        if (st == RT_ERR_UNSUPPORTED) err = -2;
    }
    free(d);
    free(r);
    side_free(dev);
    side_free(cpu);
    return err;
}

static void run_graphs(side_t *dev, side_t *cpu, totals_t *t) {
    for (size_t k = 0; k < sizeof graph_cases / sizeof graph_cases[0]; k++) {
        const graph_case_t *c = &graph_cases[k];
        char desc[160], res[300], msg[256] = "";
        snprintf(desc, sizeof desc, "%s %s d %lld n %lld (gallocr, against the CPU)",
                 c->kind == G_KV ? "KV" : "GRAPH", rt_type_name(c->type), (long long)c->d, (long long)c->n);
        const double err = compare_graph(dev, cpu, c, 77 + k, msg, sizeof msg);
        const cf_result_t r = err == -2 ? CF_UNSUPPORTED : err >= 0 && err <= c->tol ? CF_PASS : CF_FAIL;
        if (err >= 0) snprintf(res, sizeof res, "%s (err %.2e %s %.0e)", r == CF_PASS ? "OK  " : "FAIL", err,
                               r == CF_PASS ? "<=" : ">", c->tol);
        else snprintf(res, sizeof res, "%s (%s)", r == CF_UNSUPPORTED ? "not supported" : "FAIL", msg);
        print_result(rt_device_name(dev->dev), desc, res, t, r);
    }
}

//===--- perf ---===//

static void perf_print(rt_device_t *dev, rt_queue_t *q, const cf_case_t *c) {
    static const int threads[1] = {0};
    const cf_target_t target = {.dev = dev, .queues = &q, .queue_threads = threads, .n_queues = 1,
                                .report = collect};
    cf_timing_t tm = {0};
    why[0] = '\0';
    const cf_result_t r = cf_time_case(&target, c->op, c, 1, &tm);
    if (r == CF_UNSUPPORTED) printf("  %-8s not supported\n", rt_device_name(dev));
    else if (r != CF_PASS) printf("  %-8s failed:\n%s", rt_device_name(dev), why);
    else printf("  %-8s %9.3f ms  %8.2f %s\n", rt_device_name(dev), tm.seconds * 1e3, tm.work / tm.seconds * 1e-9,
                tm.flops ? "GFLOPS" : "GB/s");
}

static void run_perf(side_t *dev, side_t *cpu, const opts_t *o) {
    for (size_t k = 0; k < cf_n_perf_cases; k++) {
        const cf_case_t *c = &cf_perf_cases[k];
        if ((o->op && strcmp(o->op, rt_op_name(c->op)) != 0) || !rows_kept(o, c)) continue;
        char desc[200];
        printf("%s\n", cf_describe(c->op, c, desc, sizeof desc));
        perf_print(dev->dev, dev->queue, c);
        if (cpu->dev != dev->dev) perf_print(cpu->dev, cpu->queue, c);
    }
}

//===--- main ---===//

static void usage(FILE *f) {
    fprintf(f, "usage: rt-test-ops [perf] [options]\n"
               "Runs every conformance case on a device against the CPU (perf: times them).\n"
               "  -d, --device NAME   the device to check (default: the CPU); --devices too\n"
               "      --op NAME       only this op's cases (default: all)\n"
               "      --rows-max N    only cases whose second source (MUL_MAT's b) has at most\n"
               "                      N rows (default: no bound)\n"
               "      --rows-min N    ... at least N rows (default: no bound)\n"
               "  -h, --help          this text\n"
               "      --version       release, ABI and commit\n");
}

/* 0 to go on, 1 after --help or --version, 2 on a bad command line. */
static int parse_args(int argc, char **argv, opts_t *o) {
    static const struct option opts[] = {
        {"device", required_argument, NULL, 'd'}, {"devices", required_argument, NULL, 'd'},
        {"op", required_argument, NULL, 'o'}, {"help", no_argument, NULL, 'h'},
        {"rows-max", required_argument, NULL, 'M'}, {"rows-min", required_argument, NULL, 'm'},
        {"version", no_argument, NULL, 'V'}, {NULL, 0, NULL, 0}};
    for (int c; (c = getopt_long(argc, argv, "d:h", opts, NULL)) != -1;) {
        if (c == 'd') o->device = optarg;
        else if (c == 'o') o->op = optarg;
        else if (c == 'M' || c == 'm') {
            int32_t v = 0;
            if (!rt_cli_int("rt-test-ops", c == 'M' ? "--rows-max" : "--rows-min", optarg, 1, INT32_MAX, &v))
                return rt_cli_bad_usage("rt-test-ops");
            *(c == 'M' ? &o->rows_max : &o->rows_min) = v;
        }
        else if (c == 'h') return usage(stdout), 1;
        else if (c == 'V') return rt_cli_print_version(stdout, "rt-test-ops"), 1;
        else return rt_cli_bad_usage("rt-test-ops");
    }
    for (int i = optind; i < argc; i++) {
        if (strcmp(argv[i], "perf") != 0) {
            fprintf(stderr, "rt-test-ops: unexpected argument '%s'\n", argv[i]);
            return rt_cli_bad_usage("rt-test-ops");
        }
        o->perf = true;
    }
    return 0;
}

static void test_device(rt_device_t *dev, rt_device_t *cpu, const opts_t *o, totals_t *t) {
    side_t d = {.dev = dev}, c = {.dev = cpu};
    if (rt_queue_create(dev, NULL, &d.queue) != RT_OK || rt_queue_create(cpu, NULL, &c.queue) != RT_OK) {
        printf("  %-8s cannot create a queue: %s\n", rt_device_name(dev), rt_last_error());
        t->failed++;
    } else if (o->perf) {
        run_perf(&d, &c, o);
    } else {
        run_conformance(dev, d.queue, o, t);
        if (!o->op || strcmp(o->op, "GRAPH") == 0) run_graphs(&d, &c, t);
    }
    rt_queue_destroy(d.queue);
    rt_queue_destroy(c.queue);
}

static bool is_cpu(rt_device_t *dev) { return strcmp(rt_device_plugin_name(dev), "cpu") == 0; }

int main(int argc, char **argv) {
    opts_t o = {0};
    const int parsed = parse_args(argc, argv, &o);
    if (parsed != 0) return parsed == 1 ? 0 : 2;
    rt_registry_t *reg;
    if (rt_registry_create(NULL, &reg) != RT_OK) {
        fprintf(stderr, "rt-test-ops: %s\n", rt_last_error());
        return 1;
    }
    rt_device_t *cpu = NULL;
    for (int32_t i = 0; i < rt_registry_device_count(reg) && !cpu; i++)
        if (is_cpu(rt_registry_device(reg, i))) cpu = rt_registry_device(reg, i);
    totals_t t = {0};
    int tested = 0;
    for (int32_t i = 0; cpu && i < rt_registry_device_count(reg); i++) {
        rt_device_t *dev = rt_registry_device(reg, i);
        if (o.device ? strcmp(o.device, rt_device_name(dev)) != 0 : is_cpu(dev)) continue;
        printf("%s (%s):\n", rt_device_name(dev), rt_device_plugin_name(dev));
        test_device(dev, cpu, &o, &t);
        tested++;
    }
    if (!cpu) fprintf(stderr, "rt-test-ops: no CPU device to compare the graphs with\n");
    else if (!tested) printf("no device other than the CPU%s%s; nothing to test\n",
                             o.device ? " named " : "", o.device ? o.device : "");
    printf("%d passed, %d failed, %d unsupported\n", t.passed, t.failed, t.unsupported);
    rt_registry_destroy(reg);
    return !cpu || t.failed ? 1 : 0;
}
