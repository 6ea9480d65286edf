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
 * llama-bench on the same model and device (-dev none beside a CPU) in the
 * same run and prints its figures beside rt's, with the ratios
 * (bench_peer.h). On a machine whose load moves, --rounds N takes rt's
 * runs and llama-bench's in turn N times and reports each figure's median
 * over the rounds, so that the two see the same load.
 *
 * -d LIST (llama-bench's --n-depth) runs both tests again with that many
 * tokens already in the cache: the context is sized to fit the deepest,
 * and the depth's cells are taken with rtm_context_advance, not computed,
 * so a run costs its own tokens only. The attention of the timed tokens
 * reads those rows as it would read computed ones (whatever finite values
 * they hold: the arithmetic is the same), which is what a depth measures.
 * -fa and -ctk/-ctv choose the attention and the cache as rt-run does;
 * with --peer llama-bench runs at the same depths with -fa 0,1, and each
 * figure is put against the peer's of the same attention (fused or not). */
#include "../tests/conform/rng.h"
#include "bench.h"
#include "bench_ceilings.h"
#include "bench_peer.h"
#include "bundled_model.h"
#include "default_batch.h"
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
#define MODEL_MAX_DEPTHS 8
#define MODEL_MAX_ROUNDS 16

typedef struct model_args {
    const char *model;
    const char *device;   /* the one device to hold the weights, NULL: the library's choice */
    const char *peer;     /* a llama.cpp build directory, or NULL */
    int32_t n_prompt, n_gen, n_threads, n_batch, reps, n_ctx;
    int32_t rounds;       /* --rounds: rt's runs and the peer's, in turn */
    int32_t depth[MODEL_MAX_DEPTHS], n_depths; /* -d; one depth 0 unless given */
    int32_t flash_attn, type_k, type_v;       /* rtm_flash_attn_t, rt_type_t */
    bool json, no_graph_reuse, no_mmap;
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
            "  -d, --n-depth LIST   comma-separated tokens already in the cache before each\n"
            "                       test (default 0), at most %d depths\n"
            "  -c, --ctx-size N     context length (default, and at least: the deepest test's)\n"
            RT_CLI_ATTN_HELP
            RT_CLI_MMAP_HELP
            "  -b, --n-batch, --batch-size N  most tokens per graph (default: rt-run's, 512\n"
            "                       halved while the prompt graph would not fit the devices)\n"
            "      --reps N         timed runs of each, after one warm-up (default 5, at most %d)\n"
            "      --no-graph-reuse build and plan a graph for every token (to measure what\n"
            "                       reusing the decode graph saves)\n"
            "      --peer DIR       run llama.cpp's llama-bench (DIR/bin or DIR) on the same\n"
            "                       model and device and print its figures beside these, with\n"
            "                       the ratios\n"
            "      --rounds N       measure N times, rt then llama.cpp in turn, and report the\n"
            "                       medians of the rounds (default 1, at most %d): on a busy\n"
            "                       machine both see the same load\n"
            "      --json           the two rows as a JSON array\n"
            "  -h, --help           this text\n", MODEL_MAX_DEPTHS, MODEL_MAX_REPS, MODEL_MAX_ROUNDS);
}

/* -d's comma-separated depths into a; false after a message. */
static bool parse_depths(const char *name, const char *v, model_args_t *a) {
    char item[32];
    a->n_depths = 0;
    for (const char *p = v; *p != '\0' || a->n_depths == 0;) {
        const size_t n = strcspn(p, ",");
        if (a->n_depths == MODEL_MAX_DEPTHS || n == 0 || n >= sizeof item) {
            fprintf(stderr, TOOL ": %s wants at most %d comma-separated depths, not '%s'\n", name,
                    MODEL_MAX_DEPTHS, v);
            return false;
        }
        memcpy(item, p, n);
        item[n] = '\0';
        if (!rt_cli_int(TOOL, name, item, 0, 1 << 24, &a->depth[a->n_depths++])) return false;
        p += n + (p[n] == ',');
    }
    return true;
}

/* 0: parsed; 1: help shown; 2: usage error. */
static int parse(int argc, char **argv, model_args_t *a) {
    enum { OPT_DEVICE = 0x2000, OPT_REPS, OPT_NO_REUSE, OPT_JSON, OPT_PEER, OPT_FA, OPT_CTK, OPT_CTV,
           OPT_NO_MMAP, OPT_ROUNDS };
    static const struct option opts[] = {
        {"model", required_argument, NULL, 'm'}, RT_CLI_DEVICE_OPTIONS(OPT_DEVICE),
        {"threads", required_argument, NULL, 't'}, {"n-batch", required_argument, NULL, 'b'},
        {"batch-size", required_argument, NULL, 'b'}, {"reps", required_argument, NULL, OPT_REPS},
        {"no-graph-reuse", no_argument, NULL, OPT_NO_REUSE}, {"json", no_argument, NULL, OPT_JSON},
        RT_CLI_MMAP_OPTION(OPT_NO_MMAP),
        {"peer", required_argument, NULL, OPT_PEER}, {"rounds", required_argument, NULL, OPT_ROUNDS},
        {"help", no_argument, NULL, 'h'},
        {"n-depth", required_argument, NULL, 'd'}, {"ctx-size", required_argument, NULL, 'c'},
        RT_CLI_ATTN_OPTIONS(OPT_FA, OPT_CTK, OPT_CTV), {NULL, 0, NULL, 0}};
    optind = 1;
    for (int c; (c = getopt_long_only(argc, argv, "m:p:n:t:b:d:c:h", opts, NULL)) != -1;) {
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
        case 'd': ok = parse_depths(name, optarg, a); break;
        case 'c': ok = rt_cli_int(TOOL, name, optarg, 1, 1 << 24, &a->n_ctx); break;
        case OPT_FA: ok = rt_cli_flash_attn(TOOL, optarg, &a->flash_attn); break;
        case OPT_CTK: ok = rt_cli_cache_type(TOOL, name, optarg, &a->type_k); break;
        case OPT_CTV: ok = rt_cli_cache_type(TOOL, name, optarg, &a->type_v); break;
        case OPT_REPS: ok = rt_cli_int(TOOL, name, optarg, 1, MODEL_MAX_REPS, &a->reps); break;
        case OPT_ROUNDS: ok = rt_cli_int(TOOL, name, optarg, 1, MODEL_MAX_ROUNDS, &a->rounds); break;
        case OPT_NO_REUSE: a->no_graph_reuse = true; break;
        case OPT_NO_MMAP: a->no_mmap = true; break;
        case OPT_JSON: a->json = true; break;
        default: ok = false; /* getopt said why */
        }
        if (!ok) return rt_cli_bad_usage(TOOL);
    }
    if (optind == argc) return 0;
    fprintf(stderr, TOOL ": unexpected argument '%s'\n", argv[optind]);
    return rt_cli_bad_usage(TOOL);
}

/* One depth's figures: prompt median, best; generation median, best; and
 * llama.cpp's pp and tg without [0] and with [1] its flash attention. The
 * medians over the rounds of each round's (the best: the best of all). */
typedef struct depth_row {
    double tps[4];
    double peer[2][2];
    double round_tps[MODEL_MAX_ROUNDS][4];
    double round_peer[MODEL_MAX_ROUNDS][2][2];
} depth_row_t;

typedef struct model_run {
    const model_args_t *a;
    rtm_model_t *model;
    rtm_context_t *ctx;
    rtm_token_t *tokens;   /* n_prompt random ids */
    int32_t depth;         /* the depth being measured */
    depth_row_t row[MODEL_MAX_DEPTHS];
    double weights;        /* bytes of weights in the file */
    double ceiling;        /* the memory's read GB/s on the CPU's threads, 0: not measured */
    bool peer_any;         /* llama.cpp gave a figure */
    char peer_why[512];    /* why there is no peer figure */
} model_run_t;

/* The cache emptied, then r->depth cells taken (not computed: see the top). */
static bool at_depth(model_run_t *r) {
    rtm_context_clear(r->ctx);
    return rtm_context_advance(r->ctx, r->depth) == RT_OK;
}

/* Seconds to decode the prompt as one batch after the depth. */
static double time_prompt(model_run_t *r) {
    if (!at_depth(r)) return -1;
    const double t0 = bench_now();
    if (rtm_decode(r->ctx, r->tokens, r->a->n_prompt) != RT_OK) return -1;
    return bench_now() - t0;
}

/* Seconds for n_gen single-token decodes after an 8-token prompt. */
static double time_gen(model_run_t *r) {
    if (!at_depth(r)) return -1;
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

/* The peer's figure (test 0: pp, 1: tg) with the attention rt ran. */
static double peer_same(const model_run_t *r, const depth_row_t *d, int test) {
    return d->peer[rtm_context_flash_attn(r->ctx)][test];
}

static void print_json(const model_run_t *r, const rtm_context_stats_t *st) {
    const model_args_t *a = r->a;
    printf("[\n");
    for (int32_t i = 0; i < a->n_depths; i++) {
        const depth_row_t *d = &r->row[i];
        const double *tps = d->tps, pp = peer_same(r, d, 0), tg = peer_same(r, d, 1);
        const int fa = rtm_context_flash_attn(r->ctx);
        printf("  {\"test\": \"prompt\", \"tokens\": %d, \"depth\": %d, \"flash_attn\": %d, "
               "\"tokens_per_s\": %.6g, \"best\": %.6g, \"peer_tokens_per_s\": %.6g, \"ratio\": %.4g, "
               "\"peer_fa0_tokens_per_s\": %.6g, \"peer_fa1_tokens_per_s\": %.6g},\n"
               "  {\"test\": \"generation\", \"tokens\": %d, \"depth\": %d, \"flash_attn\": %d, "
               "\"tokens_per_s\": %.6g, \"best\": %.6g, \"peer_tokens_per_s\": %.6g, \"ratio\": %.4g, "
               "\"peer_fa0_tokens_per_s\": %.6g, \"peer_fa1_tokens_per_s\": %.6g, \"weights_bytes\": %.0f, "
               "\"read_ceiling_gbs\": %.4g, \"tg_nodes\": %d, \"tg_splits\": %d, \"reserves\": %d, "
               "\"compute_buffer_changes\": %llu, \"graphs_run\": %d, \"graphs_built\": %d}%s\n",
               a->n_prompt, a->depth[i], fa, tps[0], tps[1], pp, ratio(tps[0], pp), d->peer[0][0],
               d->peer[1][0], a->n_gen, a->depth[i], fa, tps[2], tps[3], tg, ratio(tps[2], tg),
               d->peer[0][1], d->peer[1][1], r->weights, r->ceiling, st->tg_nodes, st->tg_splits,
               st->n_reserves, (unsigned long long)st->compute_bytes_changes, st->n_graphs,
               st->n_builds, i + 1 < a->n_depths ? "," : "");
    }
    printf("]\n");
}

/* llama.cpp's figure of the same attention under rt's and the ratio, the
 * other attention's beside it, or why there is none. */
static void print_peer(const model_run_t *r, const depth_row_t *d, int test, double rt) {
    if (r->a->peer == NULL) return;
    const int fa = rtm_context_flash_attn(r->ctx);
    const double peer = d->peer[fa][test], other = d->peer[!fa][test];
    if (peer <= 0) {
        printf("  llama.cpp: no %s figure (%s)\n", test ? "generation" : "prompt", r->peer_why);
        return;
    }
    printf("  llama.cpp %10.1f tokens/s; rt / llama.cpp %.2fx", peer, rt / peer);
    if (other > 0 && other != peer)
        printf(" (its flash attention %s; %s: %.1f tokens/s)", fa ? "on" : "off", fa ? "off" : "on", other);
    printf("\n");
}

/* " @ d1024" for a depth other than 0. */
static const char *depth_text(int32_t depth, char *buf, size_t size) {
    if (depth == 0) return "";
    snprintf(buf, size, " @ d%d", depth);
    return buf;
}

static void print_depth(const model_run_t *r, int32_t i) {
    const model_args_t *a = r->a;
    const depth_row_t *d = &r->row[i];
    char buf[32];
    const char *at = depth_text(a->depth[i], buf, sizeof buf);
    printf("prompt      %5d tokens%s  %10.1f tokens/s (best %.1f)\n", a->n_prompt, at, d->tps[0], d->tps[1]);
    print_peer(r, d, 0, d->tps[0]);
    printf("generation  %5d tokens%s  %10.1f tokens/s (best %.1f), %.3f ms a token\n", a->n_gen, at,
           d->tps[2], d->tps[3], 1e3 / d->tps[2]);
    print_peer(r, d, 1, d->tps[2]);
}

static void print_rows(const model_run_t *r) {
    rtm_context_stats_t st = {.struct_size = sizeof st};
    rtm_context_get_stats(r->ctx, &st);
    const model_args_t *a = r->a;
    if (a->json) {
        print_json(r, &st);
        return;
    }
    const rt_device_t *d0 = rtm_model_layer_device(r->model, 0);
    printf("model %s (%s, %d layers, n_embd %d) on %s, n_batch %d, n_ctx %d, attention %s, KV cache "
           "K %s V %s, %d graphs run, %d built\n", a->model, rtm_model_arch(r->model),
           rtm_model_n_layer(r->model), rtm_model_n_embd(r->model), d0 ? rt_device_name(d0) : "?",
           rtm_context_n_batch(r->ctx), rtm_context_n_ctx(r->ctx),
           rtm_context_flash_attn(r->ctx) ? "fused" : "unfused", rt_type_name((rt_type_t)a->type_k),
           rt_type_name((rt_type_t)a->type_v), st.n_graphs, st.n_builds);
    for (int32_t i = 0; i < a->n_depths; i++) print_depth(r, i);
    const double tg0 = r->row[0].tps[2];
    if (r->ceiling > 0)
        printf("  streams %.1f GB/s of weights (%.1f MiB a token): %.0f%% of the read ceiling "
               "of a buffer that size, %.1f GB/s\n", r->weights * tg0 * 1e-9,
               r->weights / 1048576.0, 100.0 * r->weights * tg0 * 1e-9 / r->ceiling,
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

/* llama-bench's -dev for the device every layer is on ("none": its CPU),
 * nothing when the layers are spread (its own default then, as rt's). */
static void peer_device(const model_run_t *r, char *buf, size_t size) {
    const rt_device_t *d0 = rtm_model_layer_device(r->model, 0);
    buf[0] = '\0';
    for (int32_t il = 1; il < rtm_model_n_layer(r->model); il++)
        if (rtm_model_layer_device(r->model, il) != d0) return;
    char name[64] = "none";
    if (!on_cpu(r->model)) bench_peer_device(rt_device_name(d0), name, sizeof name);
    snprintf(buf, size, "-dev %s ", name);
}

/* llama-bench once over every depth (plain pp/tg at depth 0 alone, as
 * before depths; -d LIST -fa 0,1 otherwise), into round's figures. */
static void measure_peer(model_run_t *r, int threads, int round) {
    const model_args_t *a = r->a;
    char args[512] = "";
    peer_device(r, args, sizeof args);
    size_t n = strlen(args);
    n += (size_t)snprintf(args + n, sizeof args - n, "-r %d ", a->reps); /* as many runs as rt's */
    if (a->n_depths > 1 || a->depth[0] != 0) {
        n += (size_t)snprintf(args + n, sizeof args - n, "-fa 0,1 -d ");
        for (int32_t i = 0; i < a->n_depths && n < sizeof args; i++)
            n += (size_t)snprintf(args + n, sizeof args - n, "%s%d", i ? "," : "", a->depth[i]);
        if (n < sizeof args) n += (size_t)snprintf(args + n, sizeof args - n, " ");
    }
    if (n < sizeof args)
        snprintf(args + n, sizeof args - n, "-p %d -n %d -t %d", a->n_prompt, a->n_gen, threads);
    char *out = bench_peer_llama_bench(a->peer, a->model, args, r->peer_why, sizeof r->peer_why);
    if (out == NULL) return;
    for (int32_t i = 0; i < a->n_depths; i++)
        for (int fa = 0; fa < 2; fa++) {
            const bench_peer_want_t w = {a->n_prompt, a->n_gen, a->depth[i], fa};
            double *f = r->row[i].round_peer[round][fa];
            bench_peer_parse_llama_bench_at(out, &w, &f[0], &f[1]);
            r->peer_any = r->peer_any || f[0] > 0 || f[1] > 0;
        }
    free(out);
    if (!r->peer_any) snprintf(r->peer_why, sizeof r->peer_why, "no pp%d or tg%d figure in llama-bench's "
                               "output", a->n_prompt, a->n_gen);
}

/* The read ceiling a CPU device's generation is put against, measured
 * after rt's runs so that it does not disturb them. */
static void measure_ceiling(model_run_t *r, int threads) {
    rtm_load_stats_t ls = {.struct_size = sizeof ls};
    if (rtm_model_get_load_stats(r->model, &ls) == RT_OK) r->weights = (double)ls.bytes_weights;
    if (on_cpu(r->model) && r->weights > 0) {
        bench_ceil_t c;
        bench_ceil_init(&c, threads);
        r->ceiling = bench_ceil_read(&c, (size_t)r->weights);
    }
}

/* The median of the n figures in v that are there (> 0), else 0. */
static double median_present(const double *v, int n) {
    double t[MODEL_MAX_ROUNDS];
    size_t got = 0;
    for (int i = 0; i < n; i++)
        if (v[i] > 0) t[got++] = v[i];
    return got ? bench_median(t, got) : 0;
}

/* Each depth's figures from its rounds': medians, and the best of all. */
static void combine_rounds(model_run_t *r) {
    const int rounds = r->a->rounds;
    for (int32_t i = 0; i < r->a->n_depths; i++) {
        depth_row_t *d = &r->row[i];
        double v[MODEL_MAX_ROUNDS];
        for (int k = 0; k < 4; k++) {
            for (int j = 0; j < rounds; j++) v[j] = d->round_tps[j][k];
            d->tps[k] = median_present(v, rounds);
            for (int j = 0; k % 2 == 1 && j < rounds; j++)
                if (v[j] > d->tps[k]) d->tps[k] = v[j];
        }
        for (int f = 0; f < 4; f++) {
            for (int j = 0; j < rounds; j++) v[j] = d->round_peer[j][f / 2][f % 2];
            d->peer[f / 2][f % 2] = median_present(v, rounds);
        }
    }
}

/* Positions the deepest test needs, or -c when larger. */
static int32_t context_length(const model_args_t *a) {
    int32_t deepest = 0;
    for (int32_t i = 0; i < a->n_depths; i++)
        if (a->depth[i] > deepest) deepest = a->depth[i];
    const int32_t gen = (a->n_prompt < 8 ? a->n_prompt : 8) + a->n_gen;
    const int32_t need = deepest + (a->n_prompt > gen ? a->n_prompt : gen);
    return a->n_ctx > need ? a->n_ctx : need;
}

static int run(model_run_t *r, rt_registry_t *reg) {
    const model_args_t *a = r->a;
    rt_device_t *dev = a->device ? rt_registry_device_by_name(reg, a->device) : NULL;
    if (a->device && dev == NULL) {
        fprintf(stderr, "rt-bench model: no device %s\n", a->device);
        return -2;
    }
    const int32_t n_ctx = context_length(a);
    const rtm_model_params_t mp = {.struct_size = sizeof mp, .registry = reg,
                                   .devices = dev ? &dev : NULL, .n_devices = dev ? 1 : 0,
                                   .n_ctx = n_ctx, .no_progress = true, .no_mmap = a->no_mmap};
    if (rtm_model_load(a->model, &mp, &r->model) != RT_OK) return -1;
    const int32_t n_batch = a->n_batch ? a->n_batch : rt_tool_default_n_batch(r->model, n_ctx);
    const rtm_context_params_t cp = {.struct_size = sizeof cp, .n_ctx = n_ctx,
                                     .n_batch = n_batch, .n_threads = a->n_threads,
                                     .no_graph_reuse = a->no_graph_reuse, .type_k = a->type_k,
                                     .type_v = a->type_v, .flash_attn = a->flash_attn};
    if (rtm_context_create(r->model, &cp, &r->ctx) != RT_OK) return -1;
    r->tokens = malloc((size_t)a->n_prompt * sizeof r->tokens[0]);
    if (r->tokens == NULL) return -1;
    uint64_t s = cf_rng_init(0); /* the tests' generator (tests/conform/rng.h) */
    for (int32_t i = 0; i < a->n_prompt; i++)
        r->tokens[i] = (rtm_token_t)((cf_rng_next(&s) >> 33) % (uint64_t)rtm_model_n_vocab(r->model));
    const int threads = a->n_threads > 0 ? a->n_threads : rt_tools_cpu_count();
    for (int round = 0; round < a->rounds; round++) {
        for (int32_t i = 0; i < a->n_depths; i++) {
            double *tps = r->row[i].round_tps[round];
            r->depth = a->depth[i];
            if (!measure(r, time_prompt, a->n_prompt, &tps[0], &tps[1]) ||
                !measure(r, time_gen, a->n_gen, &tps[2], &tps[3]))
                return -1;
        }
        if (a->peer != NULL) measure_peer(r, threads, round);
    }
    combine_rounds(r);
    measure_ceiling(r, threads);
    print_rows(r);
    return 0;
}

int bench_model_main(int argc, char **argv) {
    char path[PATH_MAX + 64];
    model_args_t a = {.n_prompt = 128, .n_gen = 64, .reps = 5, .n_depths = 1, .rounds = 1};
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
