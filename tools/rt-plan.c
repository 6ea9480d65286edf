/* SPDX-License-Identifier: MIT */
/* rt-plan: shows how a graph is laid out in memory and split over devices.
 * The graph is a decode step at its worst case (n_batch tokens at the end
 * of the context): with -m, the one the model library runs for that model,
 * the prompt graph its context reserves with (rtm_context_graph; the model
 * loaded with its weights used in place from the file, nothing computed),
 * its nodes named after their ops, the weights they read and their layers
 * (plan_names.h); else a built-in graph (graphs.h). Reserves it with a
 * gallocr on the CPU device's default buffer type (weights and KV cache
 * left out: they live in their own buffers), prints the plan as text and
 * writes it as an SVG picture (tensors named in their rectangles where the
 * name fits). --dot splits the graph with the scheduler over --devices and
 * the CPU, as the model's layers were placed there (a built-in graph: its
 * last --n-gpu-layers layers pinned to the first device), and writes it as
 * DOT: one cluster per layer, one colour per device, split inputs' copies
 * as notes. Output files are written whole or not at all (out_file.h).
 *
 *   rt-plan [-m MODEL] [options]        (rt-plan --help) */
#include "graphs.h"
#include "out_file.h"
#include "plan_dot.h"
#include "plan_names.h"
#include "tool_cli.h"

#include "../model/rt_model.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOOL "rt-plan"
/* Small enough to read, with a vocabulary that does not hide the rest. */
#define BUILTIN_N_LAYER 2
#define BUILTIN_N_EMBD 256
#define BUILTIN_N_VOCAB 1000
#define BUILTIN_N_BATCH 32
#define BUILTIN_N_CTX 256

static void write_file(const char *text, size_t len, void *user_data) {
    fwrite(text, 1, len, (FILE *)user_data);
}

static void usage(FILE *f) {
    fprintf(f, "usage: rt-plan [options]\n"
            "  -m, --model FILE     plan the graph the model library runs for this GGUF model\n"
            "                       (default: a built-in graph, options below)\n"
            "  -b, --n-batch, --batch-size N  tokens per step; the worst case has\n"
            "                       n_past = n_ctx - n_batch (default: with -m the model\n"
            "                       library's, 32; else %d)\n"
            "  -c, --n-ctx, --ctx-size N      KV cache length (default: with -m the model's,\n"
            "                       at most 2048; else %d)\n"
            "      --svg FILE       also write the plan as an SVG picture\n"
            "      --dot FILE       also write the graph as DOT, split over the devices\n"
            "  -dev, --device, --devices LIST  comma-separated devices for the model's layers\n"
            "                       and --dot, the CPU added last (default: every device)\n"
            "  -ngl, --n-gpu-layers N  the last N layers on the first device (default: with\n"
            "                       -m --split's placement; else none)\n"
            "      --split auto|fastest  with -m: auto, as many layers on GPUs as fit, by free\n"
            "                       memory (the default); fastest, the least predicted decode\n"
            "                       time (rt-run's default: measures each device once)\n"
            "      --explain        with -m: where the layers went (and fastest's plan)\n"
            "      --quiet          print the graph and buffer summary only\n"
            "  -h, --help           this text\n"
            "      --version        release, ABI and commit\n"
            "built-in graphs (without -m; default --graph llama --n-layer %d --n-embd %d\n"
            "--n-vocab %d):\n%s",
            BUILTIN_N_BATCH, BUILTIN_N_CTX, BUILTIN_N_LAYER, BUILTIN_N_EMBD, BUILTIN_N_VOCAB,
            tool_graph_usage);
}

typedef struct plan_args {
    tool_graph_params_t graph;  /* n_tokens, n_ctx 0: not given */
    const char *model, *svg, *dot, *devices;
    int32_t n_gpu_layers;       /* -1: not given */
    rtm_split_t split;          /* without -ngl */
    bool quiet, explain;
    bool shape_given;           /* a built-in graph's option (refused with -m) */
} plan_args_t;

enum { OPT_SVG = 0x2000, OPT_DOT, OPT_DEVICE, OPT_NGL, OPT_SPLIT, OPT_EXPLAIN, OPT_QUIET, OPT_VERSION };

static const struct option long_options[] = {
    {"model", required_argument, NULL, 'm'},
    TOOL_GRAPH_OPTIONS,
    {"svg", required_argument, NULL, OPT_SVG},
    {"dot", required_argument, NULL, OPT_DOT},
    RT_CLI_DEVICE_OPTIONS(OPT_DEVICE),
    RT_CLI_NGL_OPTIONS(OPT_NGL),
    {"split", required_argument, NULL, OPT_SPLIT},
    {"explain", no_argument, NULL, OPT_EXPLAIN},
    {"quiet", no_argument, NULL, OPT_QUIET},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0},
};

/* One option; 0 to go on, 1 answered (help, version), 2 bad. */
static int one_option(int c, const char *name, const char *v, plan_args_t *a) {
    const int graph = tool_graph_option(&a->graph, TOOL, c, name, v);
    if (graph != 0) {
        a->shape_given |= c != TOOL_OPT_N_BATCH && c != TOOL_OPT_N_CTX;
        return graph > 0 ? 0 : 2;
    }
    switch (c) {
    case 'm': a->model = v; return 0;
    case OPT_SVG: a->svg = v; return 0;
    case OPT_DOT: a->dot = v; return 0;
    case OPT_DEVICE: a->devices = v; return 0;
    case OPT_NGL: return rt_cli_int(TOOL, name, v, 0, INT32_MAX, &a->n_gpu_layers) ? 0 : 2;
    case OPT_SPLIT: return rt_cli_split(TOOL, v, &a->split) ? 0 : 2;
    case OPT_EXPLAIN: a->explain = true; return 0;
    case OPT_QUIET: a->quiet = true; return 0;
    case 'h': usage(stdout); return 1;
    case OPT_VERSION: rt_cli_print_version(stdout, TOOL); return 1;
    default: return 2; /* getopt said why */
    }
}

/* The built-in graph's sizes, defaults filled in. */
static bool builtin_sizes(plan_args_t *a) {
    tool_graph_params_t *g = &a->graph;
    if (g->n_tokens == 0) g->n_tokens = BUILTIN_N_BATCH;
    if (g->n_ctx == 0) g->n_ctx = BUILTIN_N_CTX;
    g->n_past = strcmp(g->name, "mlp") == 0 ? 0 : g->n_ctx - g->n_tokens;
    return tool_graph_params_check(g);
}

/* 0: run; 1: exit with success (help, version); 2: exit with a usage error. */
static int parse(int argc, char **argv, plan_args_t *a) {
    optind = 1;
    for (int c; (c = getopt_long_only(argc, argv, "m:b:c:h", long_options, NULL)) != -1;) {
        const int rc = one_option(c, optarg ? rt_cli_option_name(argv, optind) : NULL, optarg, a);
        if (rc != 0) return rc == 2 ? rt_cli_bad_usage(TOOL) : 1;
    }
    if (optind < argc) {
        fprintf(stderr, TOOL ": unexpected argument '%s'\n", argv[optind]);
        return rt_cli_bad_usage(TOOL);
    }
    if (a->model != NULL && a->shape_given) {
        fprintf(stderr, TOOL ": -m plans the model's own graph: --graph, --n-layer, --n-embd, "
                "--n-head, --n-ff and --n-vocab are for the built-in graphs\n");
        return 2;
    }
    return a->model != NULL || builtin_sizes(a) ? 0 : 2;
}

static int fail(const char *what, rt_status_t st) {
    fprintf(stderr, TOOL ": %s: %s: %s\n", what, rt_status_name(st), rt_last_error());
    return 1;
}

static int fail_model(const char *what) {
    fprintf(stderr, TOOL ": %s: %s\n", what, rtm_last_error());
    return 1;
}

//===--- output files ---===//

typedef void (*write_body_fn)(FILE *f, const void *what, const void *more);

/* Writes path through a temporary file beside it (out_file.h); the model,
 * if any, may not be the output. */
static int write_output(const char *path, const plan_args_t *a, write_body_fn body, const void *what,
                        const void *more) {
    const char *inputs[] = {a->model, NULL};
    rt_out_file_t of;
    if (rt_out_file_open(&of, path, inputs) != 0) {
        fprintf(stderr, "rt-plan: %s\n", of.error);
        return 1;
    }
    body(of.f, what, more);
    if (rt_out_file_commit(&of) != 0) {
        fprintf(stderr, "rt-plan: %s\n", of.error);
        return 1;
    }
    return 0;
}

static void svg_body(FILE *f, const void *ga, const void *unused) {
    (void)unused;
    rt_gallocr_write_plan_svg(ga, write_file, f);
}

static void dot_body(FILE *f, const void *g, const void *sched) { tool_plan_write_dot(g, sched, f); }

//===--- the plan ---===//

/* Plans g on dev's default buffer type and reports. */
static int plan(rt_device_t *dev, rt_graph_t *g, const plan_args_t *a) {
    rt_gallocr_t *ga = NULL;
    rt_status_t st = rt_gallocr_create(rt_device_buffer_type(dev, 0), &ga);
    if (st != RT_OK) return fail("rt_gallocr_create", st);
    int32_t *leaf_ids = tool_graph_leaf_ids(g);
    st = leaf_ids != NULL ? rt_gallocr_reserve_n(ga, g, NULL, leaf_ids) : RT_ERR_OUT_OF_MEMORY;
    free(leaf_ids);
    int rc = st == RT_OK ? 0 : fail("rt_gallocr_reserve_n", st);
    if (rc == 0 && !a->quiet) rt_gallocr_write_plan_text(ga, write_file, stdout);
    if (rc == 0 && a->quiet)
        printf("buffer 0 (%s): peak %zu bytes, lower bound %zu bytes\n",
               rt_buffer_type_name(rt_device_buffer_type(dev, 0)), rt_gallocr_get_peak(ga, 0),
               rt_gallocr_get_lower_bound(ga, 0));
    if (rc == 0 && a->svg != NULL) rc = write_output(a->svg, a, svg_body, ga, NULL);
    rt_gallocr_destroy(ga);
    return rc;
}

//===--- the devices ---===//

typedef struct plan_devices {
    rt_device_t *dev[RT_SCHED_MAX_DEVICES]; /* the scheduler's: GPUs in order, the CPU last */
    int32_t n;
} plan_devices_t;

static bool add_device(plan_devices_t *d, rt_device_t *dev, const rt_device_t *cpu) {
    for (int32_t i = 0; i < d->n; i++)
        if (d->dev[i] == dev) return true;
    if (dev == cpu) return true;
    if (d->n < RT_SCHED_MAX_DEVICES - 1) {
        d->dev[d->n++] = dev;
        return true;
    }
    fprintf(stderr, TOOL ": more than %d devices\n", RT_SCHED_MAX_DEVICES - 1);
    return false;
}

/* --devices in their order, else every device (each piece of hardware
 * once, as the model library's default), then the CPU, where inputs
 * start. False after a message for a name no device has. */
static bool pick_devices(rt_registry_t *reg, rt_device_t *cpu, const char *list, plan_devices_t *d) {
    d->n = 0;
    for (int32_t i = 0; list == NULL && i < rt_registry_device_count(reg); i++) {
        rt_device_t *dev = rt_registry_device(reg, i);
        if (rt_device_same_as(dev) == NULL && !add_device(d, dev, cpu)) return false;
    }
    char name[128];
    for (const char *p = list; p != NULL && *p;) {
        const size_t len = strcspn(p, ",");
        snprintf(name, sizeof name, "%.*s", (int)len, p);
        p += len + (p[len] == ',');
        rt_device_t *dev = name[0] ? rt_registry_device_by_name(reg, name) : cpu;
        if (dev == NULL) {
            fprintf(stderr, TOOL ": no device named '%s'\n", name);
            return false;
        }
        if (!add_device(d, dev, cpu)) return false;
    }
    d->dev[d->n++] = cpu;
    return true;
}

//===--- the split (--dot) ---===//

/* Pins every layer's nodes of a built-in graph: the last n_gpu_layers to
 * gpu, the others to cpu, as a layer placement would put their weights
 * (left unpinned, the first device's nodes would spread to every
 * neighbour, docs/memory.md §4). A model's weights are where its layers
 * were placed, and its nodes follow them as they do in the library. */
static void pin_layers(rt_sched_t *s, rt_graph_t *g, const plan_args_t *a, rt_device_t *gpu, rt_device_t *cpu) {
    for (int32_t i = 0; i < rt_graph_n_nodes(g); i++) {
        rt_tensor_t *t = rt_graph_node(g, i);
        const int32_t il = tool_tensor_layer(t->name);
        if (il >= 0) rt_sched_set_tensor_device(s, t, il >= a->graph.n_layer - a->n_gpu_layers ? gpu : cpu);
    }
}

static int split(const plan_devices_t *d, rt_graph_t *g, const plan_args_t *a, int32_t graph_size) {
    const rt_sched_options_t o = {.struct_size = sizeof o, .devices = d->dev,
                                  .n_devices = d->n, .graph_size = graph_size};
    rt_sched_t *s = NULL;
    rt_status_t st = rt_sched_create(&o, &s);
    if (st != RT_OK) return fail("rt_sched_create", st);
    if (a->model == NULL && d->n > 1 && a->n_gpu_layers > 0) pin_layers(s, g, a, d->dev[0], d->dev[d->n - 1]);
    st = rt_sched_alloc_graph(s, g);
    int rc = st == RT_OK ? write_output(a->dot, a, dot_body, g, s) : fail("rt_sched_alloc_graph", st);
    if (rc == 0) printf("%s: %d nodes in %d splits over %d devices\n", a->dot, (int)rt_graph_n_nodes(g),
                        (int)rt_sched_n_splits(s), (int)d->n);
    rt_sched_reset(s);
    rt_sched_destroy(s);
    return rc;
}

//===--- the graph ---===//

/* What the graph lives in: a built-in graph's context, or a model, its
 * context and the context of the graph's headers. */
typedef struct plan_graph {
    rt_context_t *gctx;
    rt_graph_t *g;
    rtm_model_t *model;
    rtm_context_t *ctx;
} plan_graph_t;

static int builtin_graph(const plan_args_t *a, plan_graph_t *w) {
    w->g = tool_graph_build(&a->graph, &w->gctx);
    if (w->g == NULL) return 1;
    printf("graph: built-in %s, %d layers, n_ctx %d, n_batch %d: %d tokens after %d: %d nodes, %d leafs\n",
           a->graph.name, (int)a->graph.n_layer, (int)a->graph.n_ctx, (int)a->graph.n_tokens,
           (int)a->graph.n_tokens, (int)a->graph.n_past, (int)rt_graph_n_nodes(w->g),
           (int)rt_graph_n_leafs(w->g));
    return 0;
}

/* The model on the devices (weights used in place from the file's mapping
 * where a device can, and never repacked: a device's own weight layout
 * changes no node of the graph), a context as rt-run would make it, and
 * the graph that context reserved its compute buffers for. */
static int model_graph(rt_registry_t *reg, const plan_args_t *a, const plan_devices_t *d, plan_graph_t *w) {
    const rtm_model_params_t mp = {
        .struct_size = sizeof mp, .registry = reg, .devices = d->dev, .n_devices = d->n,
        .split = a->n_gpu_layers >= 0 ? RTM_SPLIT_N_GPU_LAYERS : a->split,
        .n_gpu_layers = a->n_gpu_layers, .n_ctx = a->graph.n_ctx, .no_progress = true, .no_repack = true};
    if (rtm_model_load(a->model, &mp, &w->model) != RT_OK) return fail_model("rtm_model_load");
    if (a->explain) {
        rtm_model_write_placement(w->model, write_file, stdout);
        rtm_model_write_plan(w->model, write_file, stdout);
    }
    const rtm_context_params_t cp = {.struct_size = sizeof cp, .n_ctx = a->graph.n_ctx,
                                     .n_batch = a->graph.n_tokens};
    if (rtm_context_create(w->model, &cp, &w->ctx) != RT_OK) return fail_model("rtm_context_create");
    const int32_t n_ctx = rtm_context_n_ctx(w->ctx), n_batch = rtm_context_n_batch(w->ctx);
    if (rtm_context_graph(w->ctx, n_batch, n_ctx - n_batch, &w->gctx, &w->g) != RT_OK)
        return fail_model("rtm_context_graph");
    if (!tool_plan_name_nodes(w->g)) return fail("naming the nodes", RT_ERR_OUT_OF_MEMORY);
    printf("graph: %s (%s), %d layers, n_ctx %d, n_batch %d: %d tokens after %d: %d nodes, %d leafs\n",
           a->model, rtm_model_arch(w->model), (int)rtm_model_n_layer(w->model), (int)n_ctx, (int)n_batch,
           (int)n_batch, (int)(n_ctx - n_batch), (int)rt_graph_n_nodes(w->g), (int)rt_graph_n_leafs(w->g));
    return 0;
}

static void plan_graph_destroy(plan_graph_t *w) {
    rt_context_destroy(w->gctx); /* the headers first: they point at the cache and weights */
    rtm_context_destroy(w->ctx);
    rtm_model_destroy(w->model);
}

static int run(rt_registry_t *reg, rt_device_t *cpu, const plan_args_t *a) {
    plan_devices_t d;
    plan_graph_t w = {0};
    if (!pick_devices(reg, cpu, a->devices, &d)) return 2;
    int rc = a->model != NULL ? model_graph(reg, a, &d, &w) : builtin_graph(a, &w);
    if (rc == 0) rc = plan(cpu, w.g, a);
    if (rc == 0 && a->dot != NULL)
        rc = split(&d, w.g, a, rt_graph_n_nodes(w.g) + rt_graph_n_leafs(w.g) + 64);
    plan_graph_destroy(&w);
    return rc;
}

int main(int argc, char **argv) {
    plan_args_t a = {
        .graph = {.name = "llama", .n_layer = BUILTIN_N_LAYER, .n_embd = BUILTIN_N_EMBD,
                  .n_vocab = BUILTIN_N_VOCAB},
        .n_gpu_layers = -1,
    };
    const int parsed = parse(argc, argv, &a);
    if (parsed != 0) return parsed == 1 ? 0 : 2;
    rt_registry_t *reg = NULL;
    rt_status_t st = rt_registry_create(NULL, &reg);
    if (st != RT_OK) return fail("rt_registry_create", st);
    rt_device_t *cpu = rt_registry_device_by_name(reg, "cpu0");
    int rc = 1;
    if (cpu == NULL)
        fprintf(stderr, TOOL ": no CPU device (cpu0); plugins were searched in %s\n",
                rt_registry_search_path(reg));
    else
        rc = run(reg, cpu, &a);
    rt_registry_destroy(reg);
    return rc;
}
