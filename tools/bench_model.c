/* SPDX-License-Identifier: MIT */
/* bench_model.c: `rt-bench model -m FILE`, whole-model speed through the
 * model library (model/rt_model.h) as an application sees it: prompt
 * processing (a batch of -p tokens decoded at once, the cache cleared
 * before each run) and generation (-n tokens decoded one at a time after a
 * short prompt, each the greedy choice of the last), in tokens per second,
 * median and best of --reps runs after one warm-up. Token ids are drawn
 * from the vocabulary with a fixed seed, so the text means nothing and the
 * timing everything. Also shows what a token costs beyond its arithmetic:
 * the one-token graph's nodes and splits, and whether decoding ever planned
 * or allocated again (reserves and compute-buffer changes after creation).
 * On a CPU device, generation is also put against the read ceiling of a
 * buffer the size of the weights (bench_ceilings.h, the same threads; the
 * memory's for any model past the caches): the weights a token streams
 * over the fastest any read loop streams them. --peer DIR runs llama.cpp's
 * llama-bench on the same model in the same run and prints its figures
 * beside rt's, with the ratios (bench_peer.h). */
#include "../tests/conform/rng.h"
#include "bench.h"
#include "bench_ceilings.h"
#include "bench_peer.h"
#include "bundled_model.h"
#include "tool_cli.h"
#include "tools_os.h"

#include "../abi/rt.h"
#include "../model/rt_model.h"

#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MODEL_MAX_REPS 64

typedef struct model_args {
    const char *model;
    const char *device;   /* the one device to hold the weights, NULL: the library's choice */
    const char *peer;     /* a llama.cpp build directory, or NULL */
    int32_t n_prompt, n_gen, n_threads, n_batch, reps;
    bool json, no_graph_reuse;
} model_args_t;

#define TOOL "rt-bench model"

static void usage(FILE *f) {
    fprintf(f, "usage: rt-bench model [-m FILE] [options]\n"
            "  -m, --model FILE     GGUF model (default: the bundled stories260K.gguf)\n"
            "  -p N                 prompt tokens per prompt run (default 128)\n"
            "  -n N                 tokens generated per generation run (default 64)\n"
            "  -dev, --device, --devices NAME  put every layer on this device (cpu0, vulkan0,\n"
            "                       ...; default: the model library's placement over every device)\n"
            "  -t, --threads N      CPU threads (default: the plugin's)\n"
            "  -b, --n-batch, --batch-size N  most tokens per graph (default: the model\n"
            "                       library's, 32)\n"
            "      --reps N         timed runs of each, after one warm-up (default 5, at most %d)\n"
            "      --no-graph-reuse build and plan a graph for every token (to measure what\n"
            "                       reusing the decode graph saves)\n"
            "      --peer DIR       run llama.cpp's llama-bench (DIR/bin or DIR) on the same\n"
            "                       model and print its figures beside these, with the ratios\n"
            "      --json           the two rows as a JSON array\n"
            "  -h, --help           this text\n", MODEL_MAX_REPS);
}

/* 0: parsed; 1: help shown; 2: usage error. */
static int parse(int argc, char **argv, model_args_t *a) {
    enum { OPT_DEVICE = 0x2000, OPT_REPS, OPT_NO_REUSE, OPT_JSON, OPT_PEER };
    static const struct option opts[] = {
        {"model", required_argument, NULL, 'm'}, RT_CLI_DEVICE_OPTIONS(OPT_DEVICE),
        {"threads", required_argument, NULL, 't'}, {"n-batch", required_argument, NULL, 'b'},
        {"batch-size", required_argument, NULL, 'b'}, {"reps", required_argument, NULL, OPT_REPS},
        {"no-graph-reuse", no_argument, NULL, OPT_NO_REUSE}, {"json", no_argument, NULL, OPT_JSON},
        {"peer", required_argument, NULL, OPT_PEER}, {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    optind = 1;
    for (int c; (c = getopt_long_only(argc, argv, "m:p:n:t:b:h", opts, NULL)) != -1;) {
        const char *name = optarg ? rt_cli_option_name(argv, optind) : NULL;
        bool ok = true;
        switch (c) {
        case 'h': return usage(stdout), 1;
        case 'm': a->model = optarg; break;
        case OPT_DEVICE: a->device = optarg; break;
        case OPT_PEER: a->peer = optarg; break;
        case 'p': ok = rt_cli_int(TOOL, name, optarg, 1, INT32_MAX, &a->n_prompt); break;
        case 'n': ok = rt_cli_int(TOOL, name, optarg, 1, INT32_MAX, &a->n_gen); break;
        case 't': ok = rt_cli_int(TOOL, name, optarg, 1, 4096, &a->n_threads); break;
        case 'b': ok = rt_cli_int(TOOL, name, optarg, 1, INT32_MAX, &a->n_batch); break;
        case OPT_REPS: ok = rt_cli_int(TOOL, name, optarg, 1, MODEL_MAX_REPS, &a->reps); break;
        case OPT_NO_REUSE: a->no_graph_reuse = true; break;
        case OPT_JSON: a->json = true; break;
        default: ok = false; /* getopt said why */
        }
        if (!ok) return rt_cli_bad_usage(TOOL);
    }
    if (optind == argc) return 0;
    fprintf(stderr, TOOL ": unexpected argument '%s'\n", argv[optind]);
    return rt_cli_bad_usage(TOOL);
}

typedef struct model_run {
    const model_args_t *a;
    rtm_model_t *model;
    rtm_context_t *ctx;
    rtm_token_t *tokens;   /* n_prompt random ids */
    double tps[4];         /* prompt median, best; generation median, best */
    double weights;        /* bytes of weights in the file */
    double ceiling;        /* the memory's read GB/s on the CPU's threads, 0: not measured */
    double peer_pp, peer_tg; /* llama.cpp's tokens per second, 0: none */
    char peer_why[512];    /* why there is no peer figure */
} model_run_t;

/* Seconds to decode the prompt as one batch from an empty cache. */
static double time_prompt(model_run_t *r) {
    rtm_context_clear(r->ctx);
    const double t0 = bench_now();
    if (rtm_decode(r->ctx, r->tokens, r->a->n_prompt) != RT_OK) return -1;
    return bench_now() - t0;
}

/* Seconds for n_gen single-token decodes after an 8-token prompt. */
static double time_gen(model_run_t *r) {
    rtm_context_clear(r->ctx);
    const int32_t n0 = r->a->n_prompt < 8 ? r->a->n_prompt : 8;
    if (rtm_decode(r->ctx, r->tokens, n0) != RT_OK) return -1;
    const int32_t n_vocab = rtm_model_n_vocab(r->model);
    const double t0 = bench_now();
    for (int32_t i = 0; i < r->a->n_gen; i++) {
        const float *l = rtm_get_logits(r->ctx);
        rtm_token_t best = 0;
        for (int32_t j = 1; j < n_vocab; j++)
            if (l[j] > l[best]) best = j;
        if (rtm_decode(r->ctx, &best, 1) != RT_OK) return -1;
    }
    return bench_now() - t0;
}

/* Median and best tokens per second over reps runs after a warm-up. */
static bool measure(model_run_t *r, double (*fn)(model_run_t *), int32_t n_tokens, double *median,
                    double *best) {
    double t[MODEL_MAX_REPS];
    if (fn(r) < 0) return false;
    *best = 0;
    for (int i = 0; i < r->a->reps; i++) {
        const double s = fn(r);
        if (s <= 0) return false;
        t[i] = n_tokens / s;
        if (t[i] > *best) *best = t[i];
    }
    *median = bench_median(t, (size_t)r->a->reps);
    return true;
}

static double ratio(double rt, double peer) { return peer > 0 ? rt / peer : 0; }

static void print_json(const model_run_t *r, const rtm_context_stats_t *st) {
    const model_args_t *a = r->a;
    const double *tps = r->tps;
    printf("[\n  {\"test\": \"prompt\", \"tokens\": %d, \"tokens_per_s\": %.6g, \"best\": %.6g, "
           "\"peer_tokens_per_s\": %.6g, \"ratio\": %.4g},\n"
           "  {\"test\": \"generation\", \"tokens\": %d, \"tokens_per_s\": %.6g, \"best\": %.6g, "
           "\"peer_tokens_per_s\": %.6g, \"ratio\": %.4g, \"weights_bytes\": %.0f, "
           "\"read_ceiling_gbs\": %.4g, \"tg_nodes\": %d, \"tg_splits\": %d, \"reserves\": %d, "
           "\"compute_buffer_changes\": %llu, \"graphs_run\": %d, \"graphs_built\": %d}\n]\n",
           a->n_prompt, tps[0], tps[1], r->peer_pp, ratio(tps[0], r->peer_pp), a->n_gen, tps[2],
           tps[3], r->peer_tg, ratio(tps[2], r->peer_tg), r->weights, r->ceiling, st->tg_nodes,
           st->tg_splits, st->n_reserves, (unsigned long long)st->compute_bytes_changes,
           st->n_graphs, st->n_builds);
}

/* llama.cpp's figure under rt's and the ratio, or why there is none. */
static void print_peer(const model_run_t *r, const char *what, double rt, double peer) {
    if (r->a->peer == NULL) return;
    if (peer > 0) printf("  llama.cpp %10.1f tokens/s; rt / llama.cpp %.2fx\n", peer, rt / peer);
    else printf("  llama.cpp: no %s figure (%s)\n", what, r->peer_why);
}

static void print_rows(const model_run_t *r) {
    rtm_context_stats_t st = {.struct_size = sizeof st};
    rtm_context_get_stats(r->ctx, &st);
    const model_args_t *a = r->a;
    const double *tps = r->tps;
    if (a->json) {
        print_json(r, &st);
        return;
    }
    const rt_device_t *d0 = rtm_model_layer_device(r->model, 0);
    printf("model %s (%s, %d layers, n_embd %d) on %s, n_batch %d, %d graphs run, %d built\n",
           a->model, rtm_model_arch(r->model), rtm_model_n_layer(r->model), rtm_model_n_embd(r->model),
           d0 ? rt_device_name(d0) : "?", rtm_context_n_batch(r->ctx), st.n_graphs, st.n_builds);
    printf("prompt      %5d tokens  %10.1f tokens/s (best %.1f)\n", a->n_prompt, tps[0], tps[1]);
    print_peer(r, "prompt", tps[0], r->peer_pp);
    printf("generation  %5d tokens  %10.1f tokens/s (best %.1f), %.3f ms a token\n", a->n_gen,
           tps[2], tps[3], 1e3 / tps[2]);
    print_peer(r, "generation", tps[2], r->peer_tg);
    if (r->ceiling > 0)
        printf("  streams %.1f GB/s of weights (%.1f MiB a token): %.0f%% of the read ceiling "
               "of a buffer that size, %.1f GB/s\n", r->weights * tps[2] * 1e-9,
               r->weights / 1048576.0, 100.0 * r->weights * tps[2] * 1e-9 / r->ceiling,
               r->ceiling);
    printf("a token's graph: %d nodes, %d split(s); reserves %d (3 at creation), compute buffers "
           "resized %llu time(s) since\n", st.tg_nodes, st.tg_splits, st.n_reserves,
           (unsigned long long)st.compute_bytes_changes);
}

static bool on_cpu(const rtm_model_t *model) {
    rt_device_props_t props = {.struct_size = sizeof props};
    const rt_device_t *d0 = rtm_model_layer_device(model, 0);
    return d0 != NULL && rt_device_get_props(d0, &props) == RT_OK &&
           props.kind == RT_DEVICE_KIND_CPU;
}

/* What the run is put against: the read ceiling (on a CPU device) and
 * llama.cpp's figures (with --peer), both measured after rt's own runs so
 * that neither disturbs them. */
static void measure_against(model_run_t *r) {
    const model_args_t *a = r->a;
    const int threads = a->n_threads > 0 ? a->n_threads : rt_tools_cpu_count();
    rtm_load_stats_t ls = {.struct_size = sizeof ls};
    if (rtm_model_get_load_stats(r->model, &ls) == RT_OK) r->weights = (double)ls.bytes_weights;
    if (on_cpu(r->model) && r->weights > 0) {
        bench_ceil_t c;
        bench_ceil_init(&c, threads);
        r->ceiling = bench_ceil_read(&c, (size_t)r->weights);
    }
    if (a->peer != NULL)
        bench_peer_model(a->peer, a->model, a->n_prompt, a->n_gen, threads, &r->peer_pp,
                         &r->peer_tg, r->peer_why, sizeof r->peer_why);
}

static int run(model_run_t *r, rt_registry_t *reg) {
    const model_args_t *a = r->a;
    rt_device_t *dev = a->device ? rt_registry_device_by_name(reg, a->device) : NULL;
    if (a->device && dev == NULL) {
        fprintf(stderr, "rt-bench model: no device %s\n", a->device);
        return -2;
    }
    const rtm_model_params_t mp = {.struct_size = sizeof mp, .registry = reg,
                                   .devices = dev ? &dev : NULL, .n_devices = dev ? 1 : 0,
                                   .n_ctx = a->n_prompt + a->n_gen + 16, .no_progress = true};
    if (rtm_model_load(a->model, &mp, &r->model) != RT_OK) return -1;
    const rtm_context_params_t cp = {.struct_size = sizeof cp, .n_ctx = a->n_prompt + a->n_gen + 16,
                                     .n_batch = a->n_batch, .n_threads = a->n_threads,
                                     .no_graph_reuse = a->no_graph_reuse};
    if (rtm_context_create(r->model, &cp, &r->ctx) != RT_OK) return -1;
    r->tokens = malloc((size_t)a->n_prompt * sizeof r->tokens[0]);
    if (r->tokens == NULL) return -1;
    uint64_t s = cf_rng_init(0); /* the tests' generator (tests/conform/rng.h) */
    for (int32_t i = 0; i < a->n_prompt; i++)
        r->tokens[i] = (rtm_token_t)((cf_rng_next(&s) >> 33) % (uint64_t)rtm_model_n_vocab(r->model));
    if (!measure(r, time_prompt, a->n_prompt, &r->tps[0], &r->tps[1]) ||
        !measure(r, time_gen, a->n_gen, &r->tps[2], &r->tps[3]))
        return -1;
    measure_against(r);
    print_rows(r);
    return 0;
}

int bench_model_main(int argc, char **argv) {
    char path[PATH_MAX + 64];
    model_args_t a = {.n_prompt = 128, .n_gen = 64, .reps = 5};
    const int parsed = parse(argc, argv, &a);
    if (parsed != 0) return parsed == 1 ? 0 : 2;
    if (a.model == NULL) a.model = rt_tools_bundled_model(path, sizeof path);
    rt_registry_t *reg = NULL;
    if (rt_registry_create(NULL, &reg) != RT_OK) {
        fprintf(stderr, "rt-bench model: rt_registry_create: %s\n", rt_last_error());
        return 1;
    }
    model_run_t r = {.a = &a};
    const int rc = run(&r, reg);
    if (rc == -1) fprintf(stderr, "rt-bench model: %s: %s\n", a.model, rtm_last_error());
    free(r.tokens);
    rtm_context_destroy(r.ctx);
    rtm_model_destroy(r.model);
    rt_registry_destroy(reg);
    return rc == 0 ? 0 : 1;
}
