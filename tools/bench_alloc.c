/* SPDX-License-Identifier: MIT */
/* bench_alloc.c: `rt-bench alloc`, the graph allocator on a llama-shaped
 * graph (by default 32 layers, n_embd 4096, n_batch 512, n_ctx 4096). It
 * reserves the worst case (n_batch tokens at the end of the context) on a
 * device's default buffer type, weights and KV cache left out, and prints
 * per buffer the peak, the lower bound (the most bytes live at one node),
 * their ratio and the bytes without any reuse; then the time of reserve and
 * of alloc_graph for a prompt and a one-token decode graph (medians). */
#include "bench.h"
#include "graphs.h"
#include "tool_cli.h"

#include <getopt.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct alloc_args {
    tool_graph_params_t graph;
    int32_t runs;
    const char *device;
} alloc_args_t;

#define TOOL "rt-bench alloc"

static void usage(FILE *f) {
    fprintf(f, "usage: rt-bench alloc [options]\n"
            "      --runs N         timed runs per figure, the median is shown (default 7)\n"
            "  -dev, --device, --devices NAME  device whose buffer type 0 is planned (default cpu0)\n"
            "  -h, --help           this text\n"
            "the graph (default --graph llama --n-layer 32 --n-embd 4096 --n-vocab 32000\n"
            "--n-batch 512 --n-ctx 4096):\n%s", tool_graph_usage);
}

/* 0: run; 1: help shown; 2: usage error. */
static int parse(int argc, char **argv, alloc_args_t *a) {
    enum { OPT_RUNS = 0x2000, OPT_DEVICE };
    static const struct option opts[] = {
        TOOL_GRAPH_OPTIONS,
        {"runs", required_argument, NULL, OPT_RUNS},
        RT_CLI_DEVICE_OPTIONS(OPT_DEVICE),
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    optind = 1;
    for (int c; (c = getopt_long_only(argc, argv, "b:c:h", opts, NULL)) != -1;) {
        const char *name = optarg ? rt_cli_option_name(argv, optind) : NULL;
        const int graph = tool_graph_option(&a->graph, TOOL, c, name, optarg);
        if (graph < 0) return rt_cli_bad_usage(TOOL);
        if (graph > 0) continue;
        if (c == 'h') return usage(stdout), 1;
        if (c == OPT_DEVICE) a->device = optarg;
        else if (c != OPT_RUNS || !rt_cli_int(TOOL, name, optarg, 1, 1 << 20, &a->runs)) return rt_cli_bad_usage(TOOL);
    }
    if (optind < argc) {
        fprintf(stderr, TOOL ": unexpected argument '%s'\n", argv[optind]);
        return rt_cli_bad_usage(TOOL);
    }
    a->graph.n_past = a->graph.n_ctx - a->graph.n_tokens;
    return tool_graph_params_check(&a->graph) ? 0 : 2;
}

static int fail(const char *what, rt_status_t st) {
    fprintf(stderr, "rt-bench alloc: %s: %s: %s\n", what, rt_status_name(st), rt_last_error());
    return 1;
}

static double mib(size_t bytes) { return (double)bytes / (1024.0 * 1024.0); }

/* Bytes the plan's blocks in buffer b would take if none were shared. */
static size_t bytes_without_reuse(const rt_gallocr_t *ga, int32_t b) {
    size_t total = 0;
    for (int32_t i = 0; i < rt_gallocr_plan_count(ga); i++) {
        rt_gallocr_plan_entry_t e = {.struct_size = sizeof e};
        if (rt_gallocr_plan_get(ga, i, &e) == RT_OK && e.buffer_id == b &&
            !(e.flags & RT_GALLOCR_PLAN_VIEW))
            total += e.size;
    }
    return total;
}

static void print_buffers(const rt_gallocr_t *ga) {
    for (int32_t b = 0; b < rt_gallocr_n_buffers(ga); b++) {
        const size_t peak = rt_gallocr_get_peak(ga, b), bound = rt_gallocr_get_lower_bound(ga, b);
        const size_t none = bytes_without_reuse(ga, b);
        printf("buffer %d (%s)\n", (int)b,
               rt_buffer_type_name(rt_buffer_get_type(rt_gallocr_get_buffer(ga, b))));
        printf("  peak            %14zu bytes  %10.2f MiB\n", peak, mib(peak));
        printf("  lower bound     %14zu bytes  %10.2f MiB\n", bound, mib(bound));
        printf("  peak / bound    %14.4f\n", bound > 0 ? (double)peak / (double)bound : 0.0);
        printf("  without reuse   %14zu bytes  %10.2f MiB  (%.1fx the peak)\n", none, mib(none),
               peak > 0 ? (double)none / (double)peak : 0.0);
    }
}

/* Median seconds of `runs` reserves of the worst case on a gallocr that
 * already holds its buffer (planning only); *first gets the first reserve,
 * which allocates. */
static rt_status_t time_reserve(rt_gallocr_t *ga, rt_graph_t *g, const int32_t *leaf_ids,
                                int runs, double *first, double *median) {
    double *t = calloc((size_t)runs, sizeof t[0]);
    if (t == NULL) return RT_ERR_OUT_OF_MEMORY;
    rt_status_t st = RT_OK;
    for (int r = -1; r < runs && st == RT_OK; r++) {
        const double t0 = bench_now();
        st = rt_gallocr_reserve_n(ga, g, NULL, leaf_ids);
        const double dt = bench_now() - t0;
        if (r < 0) *first = dt;
        else t[r] = dt;
    }
    *median = bench_median(t, (size_t)runs);
    free(t);
    return st;
}

/* Median seconds of alloc_graph on `runs` graphs built afresh for n_tokens
 * (built outside the timing), as each decode step would. */
static rt_status_t time_alloc_graph(rt_gallocr_t *ga, const alloc_args_t *a, int32_t n_tokens,
                                    double *median) {
    tool_graph_params_t p = a->graph;
    p.n_tokens = n_tokens;
    p.n_past = p.n_ctx - n_tokens;
    double *t = calloc((size_t)a->runs, sizeof t[0]);
    if (t == NULL) return RT_ERR_OUT_OF_MEMORY;
    rt_status_t st = RT_OK;
    for (int r = 0; r < a->runs && st == RT_OK; r++) {
        rt_context_t *ctx = NULL;
        rt_graph_t *g = tool_graph_build(&p, &ctx);
        const double t0 = bench_now();
        st = g != NULL ? rt_gallocr_alloc_graph(ga, g) : RT_ERR_INVALID_ARGUMENT;
        t[r] = bench_now() - t0;
        rt_context_destroy(ctx);
    }
    *median = bench_median(t, (size_t)a->runs);
    free(t);
    return st;
}

static int run(rt_device_t *dev, rt_graph_t *g, const alloc_args_t *a) {
    rt_gallocr_t *ga = NULL;
    rt_status_t st = rt_gallocr_create(rt_device_buffer_type(dev, 0), &ga);
    if (st != RT_OK) return fail("rt_gallocr_create", st);
    int32_t *leaf_ids = tool_graph_leaf_ids(g);
    double first = 0, again = 0, prompt = 0, decode = 0;
    st = leaf_ids != NULL ? time_reserve(ga, g, leaf_ids, a->runs, &first, &again)
                          : RT_ERR_OUT_OF_MEMORY;
    free(leaf_ids);
    if (st != RT_OK) {
        rt_gallocr_destroy(ga);
        return fail("rt_gallocr_reserve_n", st);
    }
    print_buffers(ga);
    const uint64_t n_allocs = rt_gallocr_get_n_allocs(ga);
    st = time_alloc_graph(ga, a, a->graph.n_tokens, &prompt);
    if (st == RT_OK) st = time_alloc_graph(ga, a, 1, &decode);
    if (st == RT_OK) {
        printf("reserve         first %.3f ms (allocates), then %.3f ms (median of %d)\n",
               first * 1e3, again * 1e3, a->runs);
        printf("alloc_graph     %.3f ms for %d tokens, %.3f ms for 1 token (medians of %d); "
               "%llu buffer allocations\n", prompt * 1e3, (int)a->graph.n_tokens, decode * 1e3,
               a->runs, (unsigned long long)(rt_gallocr_get_n_allocs(ga) - n_allocs));
    }
    rt_gallocr_destroy(ga);
    return st == RT_OK ? 0 : fail("rt_gallocr_alloc_graph", st);
}

int bench_alloc_main(int argc, char **argv) {
    alloc_args_t a = {
        .graph = {.name = "llama", .n_layer = 32, .n_embd = 4096, .n_tokens = 512, .n_ctx = 4096},
        .runs = 7,
        .device = "cpu0",
    };
    const int parsed = parse(argc, argv, &a);
    if (parsed != 0) return parsed == 1 ? 0 : 2;
    rt_registry_t *reg = NULL;
    rt_status_t st = rt_registry_create(NULL, &reg);
    if (st != RT_OK) return fail("rt_registry_create", st);
    rt_device_t *dev = rt_registry_device_by_name(reg, a.device);
    rt_context_t *ctx = NULL;
    rt_graph_t *g = dev != NULL ? tool_graph_build(&a.graph, &ctx) : NULL;
    int rc = 1;
    if (dev == NULL)
        fprintf(stderr, "rt-bench alloc: no device %s; plugins were searched in %s\n", a.device,
                rt_registry_search_path(reg));
    if (g != NULL) {
        printf("rt-bench alloc: %s, n_layer %d, n_embd %d, n_head %d, n_ff %d, n_vocab %d, "
               "n_batch %d, n_ctx %d\ngraph: %d nodes, %d leafs (worst case: n_past %d)\n",
               a.graph.name, a.graph.n_layer, a.graph.n_embd, a.graph.n_head, a.graph.n_ff,
               a.graph.n_vocab, a.graph.n_tokens, a.graph.n_ctx, (int)rt_graph_n_nodes(g),
               (int)rt_graph_n_leafs(g), a.graph.n_past);
        rc = run(dev, g, &a);
    }
    rt_context_destroy(ctx);
    rt_registry_destroy(reg);
    return rc;
}
