/* SPDX-License-Identifier: MIT */
/* bench_split.c: rt-bench split, the planner against brute force. Two mock
 * GPUs (tests/plugins/mockgpu) emulate different speeds (RT_MOCKGPU_GBPS,
 * RT_MOCKGPU_COPY_US, set here from the options), the faster one with room
 * for only part of the model. A decode-shaped graph (a chain of
 * matrix-vector products, one F32 matrix a layer, its input starting on
 * the CPU) is split at every cut k the memory allows: layers 0..k-1 on
 * mock 0, the rest on mock 1, and each split's median step time measured.
 * The planner (RT_PLACEMENT_FASTEST over the mocks' measured figures; the
 * CPU holds no weights here) picks its own cut, which runs with the
 * scheduler's timing on, so each device's measured share shows beside its
 * predicted one. Printed: every cut's time, the planned and the best, and
 * their ratio (the target: at most 1.15). RT_PLUGIN_PATH must name the
 * mockgpu directory of the build (build/tests/plugins/mockgpu) and the CPU
 * plugin's. */
#include "bench.h"
#include "tool_cli.h"

#include "../abi/rt.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOOL "rt-bench split"
#define SPLIT_MAX_LAYERS 64

typedef struct split_args {
    int32_t dim, layers, steps;
    const char *gbps, *copy_us;
    double fit; /* share of the layers the fast mock has room for */
} split_args_t;

static void usage(FILE *f) {
    fprintf(f, "usage: rt-bench split [options]   (RT_PLUGIN_PATH: the mockgpu and cpu plugins)\n"
            "  --dim N       each layer's matrix, N x N F32 (default 1024)\n"
            "  --layers N    layers (default 12, at most 64)\n"
            "  --steps N     decode steps timed per split (default 15, median)\n"
            "  --gbps A,B    the mocks' emulated bandwidths, GB/s (default 2,0.5)\n"
            "  --copy-us U   their emulated copy time, microseconds (default 50)\n"
            "  --fit F       share of the layers mock 0 has room for (default 0.6)\n");
}

/* 0: parsed; 1: help shown; 2: usage error. */
static int parse(int argc, char **argv, split_args_t *a) {
    enum { OPT_DIM = 0x2000, OPT_LAYERS, OPT_STEPS, OPT_GBPS, OPT_COPY_US, OPT_FIT };
    static const struct option opts[] = {
        {"dim", required_argument, NULL, OPT_DIM},         {"layers", required_argument, NULL, OPT_LAYERS},
        {"steps", required_argument, NULL, OPT_STEPS},     {"gbps", required_argument, NULL, OPT_GBPS},
        {"copy-us", required_argument, NULL, OPT_COPY_US}, {"fit", required_argument, NULL, OPT_FIT},
        {"help", no_argument, NULL, 'h'},                  {NULL, 0, NULL, 0}};
    optind = 1;
    for (int c; (c = getopt_long(argc, argv, "h", opts, NULL)) != -1;) {
        const char *name = optarg ? rt_cli_option_name(argv, optind) : NULL;
        float fit = 0;
        bool ok = true;
        switch (c) {
        case 'h': return usage(stdout), 1;
        case OPT_DIM: ok = rt_cli_int(TOOL, name, optarg, 16, 1 << 16, &a->dim); break;
        case OPT_LAYERS: ok = rt_cli_int(TOOL, name, optarg, 1, SPLIT_MAX_LAYERS, &a->layers); break;
        case OPT_STEPS: ok = rt_cli_int(TOOL, name, optarg, 1, 1 << 20, &a->steps); break;
        case OPT_GBPS: a->gbps = optarg; break;
        case OPT_COPY_US: a->copy_us = optarg; break;
        case OPT_FIT:
            ok = rt_cli_float(TOOL, name, optarg, &fit);
            if (ok && !(fit > 0 && fit <= 1)) {
                fprintf(stderr, TOOL ": --fit wants a share in (0, 1], not '%s'\n", optarg);
                ok = false;
            }
            a->fit = fit;
            break;
        default: ok = false; /* getopt said why */
        }
        if (!ok) return rt_cli_bad_usage(TOOL);
    }
    if (optind == argc) return 0;
    fprintf(stderr, TOOL ": unexpected argument '%s'\n", argv[optind]);
    return rt_cli_bad_usage(TOOL);
}

/* The devices in the scheduler's order: mock 0, mock 1, the CPU. */
typedef struct split_env {
    const split_args_t *a;
    rt_registry_t *reg;
    rt_device_t *dev[3];
} split_env_t;

/* One cut's graph: the weights on their devices, the chain, the scheduler. */
typedef struct split_run {
    rt_context_t *wctx[2], *gctx;
    rt_buffer_t *wbuf[2];
    rt_tensor_t *x, *out;
    rt_graph_t *g;
    rt_sched_t *sched;
} split_run_t;

static void run_free(split_run_t *r) {
    rt_sched_destroy(r->sched);
    rt_context_destroy(r->gctx);
    for (int d = 0; d < 2; d++) {
        rt_buffer_free(r->wbuf[d]);
        rt_context_destroy(r->wctx[d]);
    }
    memset(r, 0, sizeof *r);
}

static rt_context_t *no_alloc_ctx(size_t tensors) {
    const rt_context_params_t p = {.struct_size = sizeof p,
                                   .mem_size = tensors * rt_tensor_overhead() + rt_graph_overhead(tensors + 8) + 4096,
                                   .no_alloc = true};
    rt_context_t *c = NULL;
    return rt_context_create(&p, &c) == RT_OK ? c : NULL;
}

/* Builds the chain with layers 0..k-1 on mock 0; 0 or 1 after a message. */
static int run_build(const split_env_t *e, int32_t k, split_run_t *r) {
    const split_args_t *a = e->a;
    rt_tensor_t *w[SPLIT_MAX_LAYERS];
    r->gctx = no_alloc_ctx((size_t)a->layers + 2);
    for (int d = 0; d < 2; d++) r->wctx[d] = no_alloc_ctx((size_t)a->layers);
    if (!r->gctx || !r->wctx[0] || !r->wctx[1]) return fprintf(stderr, "rt-bench split: no memory\n"), 1;
    for (int32_t il = 0; il < a->layers; il++)
        w[il] = rt_new_tensor_2d(r->wctx[il < k ? 0 : 1], RT_TYPE_F32, a->dim, a->dim);
    for (int d = 0; d < 2; d++) {
        const bool any = d == 0 ? k > 0 : k < a->layers;
        if (any && (rt_alloc_ctx_tensors(r->wctx[d], rt_device_buffer_type(e->dev[d], 0), &r->wbuf[d]) != RT_OK ||
                    rt_buffer_clear(r->wbuf[d], 0) != RT_OK))
            return fprintf(stderr, "rt-bench split: weights on %s: %s\n", rt_device_name(e->dev[d]),
                           rt_last_error()), 1;
    }
    r->x = rt_new_tensor_1d(r->gctx, RT_TYPE_F32, a->dim);
    rt_set_input(r->x);
    rt_tensor_t *h = r->x;
    for (int32_t il = 0; il < a->layers; il++) h = rt_mul_mat(r->gctx, w[il], h);
    r->out = h;
    r->g = rt_graph_create(r->gctx, (size_t)a->layers + 8);
    rt_graph_build_forward_expand(r->g, r->out);
    const rt_sched_options_t o = {.struct_size = sizeof o, .devices = e->dev, .n_devices = 3};
    if (rt_sched_create(&o, &r->sched) != RT_OK || rt_sched_alloc_graph(r->sched, r->g) != RT_OK)
        return fprintf(stderr, "rt-bench split: scheduler: %s\n", rt_last_error()), 1;
    return 0;
}

/* Median seconds of a step over a->steps after one warm-up; < 0 on failure. */
static double run_time(const split_env_t *e, split_run_t *r) {
    double t[256];
    const int n = e->a->steps < 256 ? e->a->steps : 256;
    float *zero = calloc((size_t)e->a->dim, sizeof *zero);
    if (!zero || rt_tensor_set(r->x, zero, 0, rt_nbytes(r->x)) != RT_OK) return free(zero), -1;
    free(zero);
    for (int i = -1; i < n; i++) {
        const double t0 = bench_now();
        if (rt_sched_graph_compute(r->sched, r->g) != RT_OK) return -1;
        if (i >= 0) t[i] = bench_now() - t0;
    }
    return bench_median(t, (size_t)n);
}

static double time_cut(const split_env_t *e, int32_t k, bool timing, split_run_t *keep) {
    split_run_t r = {0};
    double s = run_build(e, k, &r) == 0 ? 0 : -1;
    if (s == 0 && timing) rt_sched_set_timing(r.sched, true);
    if (s == 0) s = run_time(e, &r);
    if (keep && s >= 0) *keep = r;
    else run_free(&r);
    return s;
}

/* The planner's cut over the mocks' measured figures; -1 on failure. */
static int32_t planned_cut(const split_env_t *e, uint64_t fit_bytes, rt_placement_t **out) {
    const split_args_t *a = e->a;
    uint64_t layer[SPLIT_MAX_LAYERS];
    for (int32_t il = 0; il < a->layers; il++) layer[il] = (uint64_t)a->dim * (uint64_t)a->dim * 4;
    rt_device_speed_t speed[3];
    for (int d = 0; d < 3; d++)
        if (rt_device_speed(e->dev[d], false, &speed[d]) != RT_OK) return -1;
    speed[2].bytes_per_s = 1; /* the CPU holds no weights in this benchmark */
    const uint64_t free_bytes[3] = {fit_bytes, UINT64_MAX / 4, 0};
    const rt_placement_params_t pp = {
        .struct_size = sizeof pp, .mode = RT_PLACEMENT_FASTEST, .n_layers = a->layers,
        .layer_bytes = layer, .n_devices = 3, .devices = e->dev, .memory_free = free_bytes,
        .speed = speed};
    if (rt_placement_create(&pp, out) != RT_OK) return -1;
    return rt_placement_device_layers(*out, 0);
}

static void print_shares(const split_env_t *e, const split_run_t *r, const rt_placement_t *p) {
    for (int d = 0; d < 3; d++) {
        double compute = 0, copy = 0;
        int64_t n = 0;
        rt_sched_device_time(r->sched, d, &compute, &copy, &n);
        const double steps = e->a->steps + 1.0; /* the warm-up was timed too */
        printf("  %s: measured %.3f ms a step (%.3f computing, %.3f copying in), predicted %.3f\n",
               rt_device_name(e->dev[d]), (compute + copy) / steps * 1e3, compute / steps * 1e3,
               copy / steps * 1e3, rt_placement_predicted_s(p, d) * 1e3);
    }
}

static int bench(split_env_t *e) {
    const split_args_t *a = e->a;
    const uint64_t layer_bytes = (uint64_t)a->dim * (uint64_t)a->dim * 4;
    const int32_t max_k = (int32_t)(a->fit * a->layers);
    rt_placement_t *p = NULL;
    const int32_t plan_k = planned_cut(e, (uint64_t)max_k * layer_bytes, &p);
    if (plan_k < 0) return fprintf(stderr, "rt-bench split: planning: %s\n", rt_last_error()), 1;
    printf("cut k: layers 0..k-1 on %s, the rest on %s; %d layers of %.2f MiB, %s can hold %d\n",
           rt_device_name(e->dev[0]), rt_device_name(e->dev[1]), a->layers,
           (double)layer_bytes / 1048576.0, rt_device_name(e->dev[0]), max_k);
    double best = -1, planned = -1, at[SPLIT_MAX_LAYERS + 1];
    int32_t best_k = -1;
    for (int32_t k = 0; k <= max_k; k++) {
        const double t = at[k] = time_cut(e, k, false, NULL);
        if (t < 0) return fprintf(stderr, "rt-bench split: cut %d: %s\n", k, rt_last_error()), 1;
        printf("  k=%-3d %.3f ms a step%s\n", k, t * 1e3, k == plan_k ? "  (planned)" : "");
        if (best < 0 || t < best) best = t, best_k = k;
    }
    split_run_t r = {0};
    planned = time_cut(e, plan_k, true, &r);
    if (planned < 0) return fprintf(stderr, "rt-bench split: %s\n", rt_last_error()), 1;
    printf("planned k=%d: %.3f ms a step (timed again, each split waited for), predicted %.3f\n",
           plan_k, planned * 1e3, rt_placement_predicted_s(p, -1) * 1e3);
    print_shares(e, &r, p);
    run_free(&r);
    /* the planned cut as the sweep measured it (untimed), against the best */
    printf("best k=%d: %.3f ms a step\n", best_k, best * 1e3);
    printf("ratio planned/best: %.3f\n", at[plan_k] / best);
    rt_placement_destroy(p);
    return 0;
}

int bench_split_main(int argc, char **argv) {
    split_args_t a = {.dim = 1024, .layers = 12, .steps = 15, .gbps = "2,0.5", .copy_us = "50",
                      .fit = 0.6};
    const int rc = parse(argc, argv, &a);
    if (rc != 0) return rc == 1 ? 0 : rc;
    setenv("RT_MOCKGPU_COUNT", "2", 1);
    setenv("RT_MOCKGPU_GBPS", a.gbps, 1);
    setenv("RT_MOCKGPU_COPY_US", a.copy_us, 1);
    split_env_t e = {.a = &a};
    if (rt_registry_create(NULL, &e.reg) != RT_OK)
        return fprintf(stderr, "rt-bench split: %s\n", rt_last_error()), 1;
    e.dev[0] = rt_registry_device_by_name(e.reg, "mockgpu0");
    e.dev[1] = rt_registry_device_by_name(e.reg, "mockgpu1");
    e.dev[2] = rt_registry_device_by_name(e.reg, "cpu0");
    int status = 1;
    if (!e.dev[0] || !e.dev[1] || !e.dev[2])
        fprintf(stderr, "rt-bench split: needs mockgpu0, mockgpu1 and cpu0 (RT_PLUGIN_PATH: the "
                "build's tests/plugins/mockgpu and lib/rt-plugins)\n");
    else
        status = bench(&e);
    rt_registry_destroy(e.reg);
    return status;
}
