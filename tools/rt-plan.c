/* SPDX-License-Identifier: MIT */
/* rt-plan: shows how a graph is laid out in memory and split over devices.
 * Builds the graph of a decode step at its worst case (n_batch tokens at
 * the end of the context) in a no_alloc context: a built-in graph, or with
 * -m the llama graph sized as that model (graph_model.h). Reserves it with
 * a gallocr on the CPU device's default buffer type (weights and KV cache
 * left out: they live in their own buffers), prints the plan as text and
 * writes it as an SVG picture (tensors named in their rectangles where the
 * name fits). --dot splits the graph with the scheduler over --devices (the
 * last --n-gpu-layers layers pinned to the first device) and writes it as
 * DOT: one cluster per layer, one colour per device, split inputs' copies
 * as notes. Output files are written whole or not at all (out_file.h).
 *
 *   rt-plan [-m MODEL] [--graph mlp|llama] [--n-layer N] [--n-embd N]
 *           [--n-batch N] [--n-ctx N] [--svg FILE] [--dot FILE]
 *           [--devices LIST] [--n-gpu-layers N] [--quiet] */
#include "graph_model.h"
#include "graphs.h"
#include "out_file.h"
#include "plan_dot.h"

#include "tool_cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void write_file(const char *text, size_t len, void *user_data) {
    fwrite(text, 1, len, (FILE *)user_data);
}

static void usage(FILE *f) {
    fprintf(f, "usage: rt-plan [options]\n%s"
            "  -m MODEL          the llama graph sized as this GGUF model (its hyperparameters)\n"
            "  --svg FILE        also write the plan as an SVG picture\n"
            "  --dot FILE        also write the graph as DOT, split over the devices\n"
            "  --device LIST     devices for --dot, priority order (default: every device);\n"
            "                    --devices is the same\n"
            "  --n-gpu-layers N  for --dot: the last N layers on the first device\n"
            "  --quiet           print the buffer summary only\n"
            "  --version         release, ABI and commit\n"
            "defaults: --graph llama --n-layer 2 --n-embd 256 --n-vocab 1000 --n-batch 32 "
            "--n-ctx 256\n", tool_graph_usage);
}

typedef struct plan_args {
    tool_graph_params_t graph;
    const char *model, *svg, *dot, *devices;
    int32_t n_gpu_layers;
    bool quiet;
} plan_args_t;

/* The value options of rt-plan itself: their field, or NULL. */
static const char **string_option(plan_args_t *a, const char *name) {
    if (strcmp(name, "-m") == 0 || strcmp(name, "--model") == 0) return &a->model;
    if (strcmp(name, "--svg") == 0) return &a->svg;
    if (strcmp(name, "--dot") == 0) return &a->dot;
    if (strcmp(name, "--device") == 0 || strcmp(name, "--devices") == 0) return &a->devices;
    return NULL;
}

/* 0: run; 1: exit with success (help); 2: exit with a usage error. */
static int parse(int argc, char **argv, plan_args_t *a) {
    for (int i = 1; i < argc;) {
        const int took = tool_graph_parse_arg(&a->graph, argc, argv, i);
        const char **field = string_option(a, argv[i]);
        if (took < 0) return 2;
        if (took > 0) {
            i += took;
        } else if (field != NULL && i + 1 < argc) {
            *field = argv[i + 1];
            i += 2;
        } else if (strcmp(argv[i], "--n-gpu-layers") == 0 && i + 1 < argc) {
            a->n_gpu_layers = atoi(argv[i + 1]);
            i += 2;
        } else if (strcmp(argv[i], "--quiet") == 0) {
            a->quiet = true;
            i++;
        } else if (strcmp(argv[i], "--version") == 0) {
            rt_cli_print_version(stdout, "rt-plan");
            return 1;
        } else {
            const bool help = strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0;
            if (!help) fprintf(stderr, "rt-plan: unknown option or missing value: %s\n", argv[i]);
            usage(help ? stdout : stderr);
            return help ? 1 : 2;
        }
    }
    if (a->model != NULL && !tool_graph_params_from_model(&a->graph, a->model)) return 2;
    a->graph.n_past = a->graph.n_ctx - a->graph.n_tokens;
    if (strcmp(a->graph.name, "mlp") == 0) a->graph.n_past = 0;
    return tool_graph_params_check(&a->graph) ? 0 : 2;
}

static int fail(const char *what, rt_status_t st) {
    fprintf(stderr, "rt-plan: %s: %s: %s\n", what, rt_status_name(st), rt_last_error());
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

//===--- the split (--dot) ---===//

/* The scheduler's devices: --devices in order, else every device; the CPU
 * last either way (where inputs start). Returns the count. */
static int32_t pick_devices(rt_registry_t *reg, rt_device_t *cpu, const char *list, rt_device_t **out, int32_t max) {
    int32_t n = 0;
    for (int32_t i = 0; i < rt_registry_device_count(reg) && n < max - 1; i++) {
        rt_device_t *d = rt_registry_device(reg, i);
        const char *name = rt_device_name(d);
        const char *hit = list != NULL ? strstr(list, name) : NULL;
        const size_t len = strlen(name);
        const bool listed = hit != NULL && (hit == list || hit[-1] == ',') && (hit[len] == 0 || hit[len] == ',');
        if (d != cpu && (list == NULL || listed)) out[n++] = d;
    }
    out[n++] = cpu;
    return n;
}

/* Pins every layer's nodes (names ending ".N"): the last n_gpu_layers to
 * gpu, the others to cpu, as a layer placement would put their weights
 * (left unpinned, the first device's nodes would spread to every
 * neighbour, docs/memory.md §4). */
static void pin_layers(rt_sched_t *s, rt_graph_t *g, const plan_args_t *a, rt_device_t *gpu, rt_device_t *cpu) {
    for (int32_t i = 0; i < rt_graph_n_nodes(g); i++) {
        rt_tensor_t *t = rt_graph_node(g, i);
        const char *dot = strrchr(t->name, '.');
        if (dot == NULL || dot[1] < '0' || dot[1] > '9') continue;
        rt_sched_set_tensor_device(s, t, atoi(dot + 1) >= a->graph.n_layer - a->n_gpu_layers ? gpu : cpu);
    }
}

static int split(rt_registry_t *reg, rt_device_t *cpu, rt_graph_t *g, const plan_args_t *a) {
    rt_device_t *devs[RT_SCHED_MAX_DEVICES];
    const int32_t n = pick_devices(reg, cpu, a->devices, devs, RT_SCHED_MAX_DEVICES);
    const rt_sched_options_t o = {.struct_size = sizeof o, .devices = devs, .n_devices = n,
                                  .graph_size = rt_graph_n_nodes(g) + rt_graph_n_leafs(g) + 64};
    rt_sched_t *s = NULL;
    rt_status_t st = rt_sched_create(&o, &s);
    if (st != RT_OK) return fail("rt_sched_create", st);
    if (n > 1 && a->n_gpu_layers > 0) pin_layers(s, g, a, devs[0], cpu);
    st = rt_sched_alloc_graph(s, g);
    int rc = st == RT_OK ? write_output(a->dot, a, dot_body, g, s) : fail("rt_sched_alloc_graph", st);
    if (rc == 0) printf("%s: %d nodes in %d splits over %d devices\n", a->dot, (int)rt_graph_n_nodes(g),
                        (int)rt_sched_n_splits(s), (int)n);
    rt_sched_reset(s);
    rt_sched_destroy(s);
    return rc;
}

int main(int argc, char **argv) {
    plan_args_t a = {
        /* Small enough to read, with a vocabulary that does not hide the rest. */
        .graph = {.name = "llama", .n_layer = 2, .n_embd = 256, .n_vocab = 1000, .n_tokens = 32,
                  .n_ctx = 256},
    };
    const int parsed = parse(argc, argv, &a);
    if (parsed != 0) return parsed == 1 ? 0 : 2;
    rt_registry_t *reg = NULL;
    rt_status_t st = rt_registry_create(NULL, &reg);
    if (st != RT_OK) return fail("rt_registry_create", st);
    rt_device_t *dev = rt_registry_device_by_name(reg, "cpu0");
    int rc = 1;
    if (dev == NULL) {
        fprintf(stderr, "rt-plan: no CPU device (cpu0); plugins were searched in %s\n",
                rt_registry_search_path(reg));
    } else {
        rt_context_t *ctx = NULL;
        rt_graph_t *g = tool_graph_build(&a.graph, &ctx);
        rc = g != NULL ? plan(dev, g, &a) : 1;
        if (rc == 0 && a.dot != NULL) rc = split(reg, dev, g, &a);
        rt_context_destroy(ctx);
    }
    rt_registry_destroy(reg);
    return rc;
}
