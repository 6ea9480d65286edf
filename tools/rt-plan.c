/* SPDX-License-Identifier: MIT */
/* rt-plan: shows how the graph allocator lays out a built-in graph. Builds
 * the graph for its worst case (n_batch tokens at the end of the context)
 * in a no_alloc context, reserves it with a gallocr on the CPU device's
 * default buffer type (weights and KV cache left out: they live in their
 * own buffers), prints the plan as text and writes it as an SVG picture.
 *
 *   rt-plan [--graph mlp|llama] [--n-layer N] [--n-embd N] [--n-batch N]
 *           [--n-ctx N] [--svg FILE] [--quiet] */
#include "graphs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void write_file(const char *text, size_t len, void *user_data) {
    fwrite(text, 1, len, (FILE *)user_data);
}

static void usage(FILE *f) {
    fprintf(f, "usage: rt-plan [options]\n%s"
            "  --svg FILE     also write the plan as an SVG picture\n"
            "  --quiet        print the buffer summary only\n"
            "defaults: --graph llama --n-layer 2 --n-embd 256 --n-vocab 1000 --n-batch 32 "
            "--n-ctx 256\n", tool_graph_usage);
}

typedef struct plan_args {
    tool_graph_params_t graph;
    const char *svg;
    bool quiet;
} plan_args_t;

/* 0: run; 1: exit with success (help); 2: exit with a usage error. */
static int parse(int argc, char **argv, plan_args_t *a) {
    for (int i = 1; i < argc;) {
        const int took = tool_graph_parse_arg(&a->graph, argc, argv, i);
        if (took < 0) return 2;
        if (took > 0) {
            i += took;
        } else if (strcmp(argv[i], "--svg") == 0 && i + 1 < argc) {
            a->svg = argv[i + 1];
            i += 2;
        } else if (strcmp(argv[i], "--quiet") == 0) {
            a->quiet = true;
            i++;
        } else {
            const bool help = strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0;
            if (!help) fprintf(stderr, "rt-plan: unknown option %s\n", argv[i]);
            usage(help ? stdout : stderr);
            return help ? 1 : 2;
        }
    }
    a->graph.n_past = a->graph.n_ctx - a->graph.n_tokens;
    if (strcmp(a->graph.name, "mlp") == 0) a->graph.n_past = 0;
    return tool_graph_params_check(&a->graph) ? 0 : 2;
}

static int fail(const char *what, rt_status_t st) {
    fprintf(stderr, "rt-plan: %s: %s: %s\n", what, rt_status_name(st), rt_last_error());
    return 1;
}

static int write_svg(const rt_gallocr_t *ga, const char *path) {
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        perror(path);
        return 1;
    }
    rt_gallocr_write_plan_svg(ga, write_file, f);
    const bool ok = fclose(f) == 0;
    if (!ok) perror(path);
    return ok ? 0 : 1;
}

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
    if (rc == 0 && a->svg != NULL) rc = write_svg(ga, a->svg);
    rt_gallocr_destroy(ga);
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
        rt_context_destroy(ctx);
    }
    rt_registry_destroy(reg);
    return rc;
}
