/* SPDX-License-Identifier: MIT */
/* bench_ops.c: `rt-bench ops`, the speed of single ops on a device (cpu0 by
 * default) at the shapes of a real transformer, through the public API:
 * each row is a one-op graph in its own context, placed by
 * rt_alloc_ctx_tensors, filled with random data and run on one queue; the
 * time is the median of repeated rt_queue_compute calls after a warm-up.
 *
 * MUL_MAT runs m x k weights (m 4096; k 4096 and 14336, the attention and
 * FFN projections of a 7B/8B model) of each weight type against n rows of
 * F32 activations (n 1 to 512: decode to prompt). The other ops run at
 * llama-7B sizes for a batch of --tokens rows. Each row prints the time,
 * GFLOPS and GB/s (bytes every operand occupies, read or written once), and
 * their ratios to the ceilings the same run measures (bench_ceilings.h):
 * the FMA peak of the queue's thread count, the read bandwidth of a buffer
 * as large as the op's weights (or all its operands), which tells the cache
 * level it lives in, and for F32 MUL_MAT the speed of OpenBLAS's sgemm on
 * the same shape ("n/a" without libopenblas.so.0). --json prints the same
 * rows as one JSON array.
 *
 * Quantised weights go into the device's weights buffer type (its own
 * repacked layout, RT_BUFT_FLAG_WEIGHTS) when it has one that takes them;
 * their type reads "q8_0(r)" then. --no-weights-buft keeps them in the
 * plain buffer type, in the GGUF layout.
 *
 * --peer DIR runs llama.cpp's test-backend-ops perf -o MUL_MAT on its
 * backend of the same device (its CPU for cpu0, Vulkan0 for vulkan0:
 * bench_peer_device) after rt's rows and adds its GFLOPS beside each
 * MUL_MAT row of the same weight type and shape, with the ratio
 * (bench_peer.h). */
#include "../tests/conform/rng.h"
#include "bench.h"
#include "bench_ceilings.h"
#include "bench_peer.h"
#include "tool_cli.h"
#include "tools_os.h"

#include "../abi/rt.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOOL "rt-bench ops"
#define OPS_MAX_LIST 16
#define OPS_MAX_REPS 256
#define OPS_N_EMBD 4096
#define OPS_N_FF 11008
#define OPS_N_HEAD 32
#define OPS_HEAD_DIM 128
#define OPS_N_HEAD_KV 8
#define OPS_N_VOCAB 32000
#define OPS_MAX_PEER 1024

typedef struct ops_args {
    const char *device;
    const char *ops;      /* comma list, NULL: all */
    const char *types;    /* comma list of weight types, NULL: all */
    const char *peer;     /* a llama.cpp build directory, or NULL */
    int64_t ns[OPS_MAX_LIST], ks[OPS_MAX_LIST];
    int n_ns, n_ks;
    int64_t m, tokens;
    int threads;          /* 0: the device's default */
    double min_time;      /* seconds of timed runs per row, at least 3 runs */
    int max_reps;
    bool json, no_blas;
    bool no_weights_buft; /* weights in buffer type 0 even when a weights type takes them */
} ops_args_t;

/* One result. flops 0: not an arithmetic op; blas_time 0: no comparison. */
typedef struct ops_row {
    const char *op;
    char types[32];
    int64_t m, n, k;
    double time, best, flops, bytes, blas_time; /* median and best seconds */
    size_t level_bytes;   /* the buffer size whose read bandwidth is the bound */
} ops_row_t;

/* Rows are kept and printed at the end, after the ceilings have been
 * measured a second time: a machine shared with other work lowers any one
 * measurement, and a ceiling is the best of them. */
typedef struct bench {
    const ops_args_t *a;
    rt_device_t *dev;
    rt_queue_t *q;
    bench_ceil_t ceil;
    ops_row_t *rows;
    int n_rows, cap_rows;
    int n_printed;        /* JSON rows so far */
    int failures;
    bench_peer_op_t *peer; /* llama.cpp's MUL_MAT rows (--peer) */
    int n_peer;
    char peer_why[512];   /* why there are none */
    char peer_backend[64]; /* its backend (-b) */
} bench_t;

//===--- arguments ---===//

/* Every weight type --type can name; without --type, the first five (the
 * block types of ABI 1.2 are asked for by name: --type q4_K,q6_K,...). */
static const rt_type_t all_types[] = {
    RT_TYPE_F32,  RT_TYPE_F16,  RT_TYPE_BF16, RT_TYPE_Q8_0,   RT_TYPE_Q4_0,
    RT_TYPE_Q4_1, RT_TYPE_Q5_0, RT_TYPE_Q5_1, RT_TYPE_IQ4_NL, RT_TYPE_Q2_K,
    RT_TYPE_Q3_K, RT_TYPE_Q4_K, RT_TYPE_Q5_K, RT_TYPE_Q6_K,   RT_TYPE_IQ4_XS,
};
#define DEFAULT_TYPES "f32,f16,bf16,q8_0,q4_0"

static void usage(FILE *f) {
    fprintf(f, "usage: rt-bench ops [options]\n"
            "  --op LIST       ops to run (default all): mul_mat rms_norm norm soft_max rope silu\n"
            "                  gelu swiglu add mul scale get_rows cpy cont flash_attn\n"
            "  --type LIST     weight types for mul_mat and get_rows, and of flash_attn's\n"
            "                  KV cache (f32, f16) (default " DEFAULT_TYPES ";\n"
            "                  also q4_1 q5_0 q5_1 iq4_nl q2_K q3_K q4_K q5_K q6_K iq4_xs)\n"
            "  --n LIST        mul_mat activation rows, flash_attn queries (default\n"
            "                  1,2,4,8,32,128,512)\n"
            "  --k LIST        mul_mat depths (default 4096,14336)\n"
            "  --m M           mul_mat weight rows (default 4096)\n"
            "  --tokens T      rows of the other ops, flash_attn's keys in the cache\n"
            "                  (default 512)\n"
            "  -t, --threads N queue threads (default: the device's)\n"
            "  --time S        seconds of timed runs per row, at least 3 runs (default 0.3)\n"
            "  --reps N        at most N (3..256) timed runs per row (default 50)\n"
            "  --no-openblas   skip the OpenBLAS comparison\n"
            "  --no-weights-buft  mul_mat weights in the plain buffer type, not the device's\n"
            "                  repacked weights type (rows marked (r))\n"
            "  -dev, --device, --devices NAME  device to run on (default cpu0)\n"
            "  --peer DIR      llama.cpp's test-backend-ops (DIR/bin or DIR) beside each\n"
            "                  mul_mat row: its GFLOPS and rt's over it\n"
            "  --json          the rows as a JSON array\n"
            "  -h, --help      this text\n");
}

static int parse_list(const char *s, int64_t *out, int max) {
    int n = 0;
    for (char *end; *s && n < max; s = *end ? end + 1 : end) {
        const long long v = strtoll(s, &end, 10);
        if (end == s || v <= 0 || (*end && *end != ',')) return -1;
        out[n++] = v;
    }
    return n;
}

/* One value option; false after a message. */
static bool value_option(int c, const char *name, const char *v, ops_args_t *a) {
    int32_t i = 0;
    float f = 0;
    switch (c) {
    case 'o': a->ops = v; return true;
    case 'T': a->types = v; return true;
    case 'd': a->device = v; return true;
    case 'P': a->peer = v; return true;
    case 'n': a->n_ns = parse_list(v, a->ns, OPS_MAX_LIST); break;
    case 'k': a->n_ks = parse_list(v, a->ks, OPS_MAX_LIST); break;
    case 'M': return rt_cli_int(TOOL, name, v, 1, INT32_MAX, &i) && (a->m = i) > 0;
    case 'N': return rt_cli_int(TOOL, name, v, 1, INT32_MAX, &i) && (a->tokens = i) > 0;
    case 't': return rt_cli_int(TOOL, name, v, 1, 4096, &i) && (a->threads = i) > 0;
    case 's': return rt_cli_float(TOOL, name, v, &f) && (a->min_time = f) >= 0;
    case 'r': return rt_cli_int(TOOL, name, v, 3, OPS_MAX_REPS, &i) && (a->max_reps = i) > 0;
    default: return false; /* getopt said why */
    }
    if ((c == 'n' ? a->n_ns : a->n_ks) > 0) return true;
    fprintf(stderr, TOOL ": %s wants a comma-separated list of positive integers, not '%s'\n", name, v);
    return false;
}

/* 0: parsed; 1: help shown; 2: usage error. */
static int parse(int argc, char **argv, ops_args_t *a) {
    enum { OPT_JSON = 0x2000, OPT_NO_BLAS, OPT_NO_WEIGHTS_BUFT };
    static const struct option opts[] = {
        {"op", required_argument, NULL, 'o'}, {"type", required_argument, NULL, 'T'},
        RT_CLI_DEVICE_OPTIONS('d'), {"n", required_argument, NULL, 'n'},
        {"k", required_argument, NULL, 'k'}, {"m", required_argument, NULL, 'M'},
        {"tokens", required_argument, NULL, 'N'}, {"threads", required_argument, NULL, 't'},
        {"time", required_argument, NULL, 's'}, {"reps", required_argument, NULL, 'r'},
        {"json", no_argument, NULL, OPT_JSON}, {"no-openblas", no_argument, NULL, OPT_NO_BLAS},
        {"no-weights-buft", no_argument, NULL, OPT_NO_WEIGHTS_BUFT}, {"help", no_argument, NULL, 'h'},
        {"peer", required_argument, NULL, 'P'}, {NULL, 0, NULL, 0}};
    optind = 1;
    for (int c; (c = getopt_long_only(argc, argv, "t:h", opts, NULL)) != -1;) {
        if (c == 'h') return usage(stdout), 1;
        if (c == OPT_JSON) a->json = true;
        else if (c == OPT_NO_BLAS) a->no_blas = true;
        else if (c == OPT_NO_WEIGHTS_BUFT) a->no_weights_buft = true;
        else if (!value_option(c, optarg ? rt_cli_option_name(argv, optind) : "", optarg, a))
            return rt_cli_bad_usage(TOOL);
    }
    if (optind == argc) return 0;
    fprintf(stderr, TOOL ": unexpected argument '%s'\n", argv[optind]);
    return rt_cli_bad_usage(TOOL);
}

/* Whether `name` is in the comma list (NULL: every name is). */
static bool listed(const char *list, const char *name) {
    if (list == NULL) return true;
    const size_t n = strlen(name);
    for (const char *p = list; (p = strstr(p, name)) != NULL; p += n)
        if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == '\0')) return true;
    return false;
}

//===--- output ---===//

static double per(double x, double y) { return x > 0 && y > 0 ? x / y : -1; }

static void print_ratio(double r) {
    if (r < 0)
        printf("  %7s", "n/a");
    else
        printf("  %7.2f", r);
}

static void json_num(const char *key, double v, bool last) {
    if (v < 0)
        printf("\"%s\": null%s", key, last ? "" : ", ");
    else
        printf("\"%s\": %.6g%s", key, v, last ? "" : ", ");
}

/* llama.cpp's GFLOPS for a MUL_MAT row ("q8_0(r) x f32": its weight type
 * is the name before any mark), or -1. */
static double peer_gflops(const bench_t *b, const ops_row_t *r) {
    char type[16];
    if (b->n_peer <= 0 || strcmp(r->op, "mul_mat") != 0) return -1;
    snprintf(type, sizeof type, "%.*s", (int)strcspn(r->types, "( "), r->types);
    const double g = bench_peer_op_gflops(b->peer, b->n_peer, type, r->m, r->n, r->k);
    return g > 0 ? g : -1;
}

static void row_json(bench_t *b, const ops_row_t *r, double gf, double gbs, double rf, double rr,
                     double rb) {
    const double bw = bench_ceil_read(&b->ceil, r->level_bytes);
    printf("%s\n  {\"op\": \"%s\", \"types\": \"%s\", \"m\": %lld, \"n\": %lld, \"k\": %lld, "
           "\"threads\": %d, ", b->n_printed++ ? "," : "", r->op, r->types, (long long)r->m,
           (long long)r->n, (long long)r->k, b->ceil.threads);
    json_num("time_ms", r->time > 0 ? r->time * 1e3 : -1, false);
    json_num("best_ms", r->best > 0 ? r->best * 1e3 : -1, false);
    json_num("gflops", gf, false);
    json_num("gbs", gbs, false);
    const double cb = r->flops > 0 ? -1 : bench_ceil_copy(&b->ceil, r->level_bytes);
    json_num("read_bw_gbs", bw, false);
    json_num("copy_bw_gbs", cb, false);
    json_num("ratio_to_fma_peak", rf, false);
    json_num("ratio_to_read_bw", rr, false);
    json_num("ratio_to_copy_bw", per(gbs, cb), false);
    json_num("ratio_to_openblas", rb, b->a->peer == NULL);
    if (b->a->peer != NULL) {
        json_num("peer_gflops", peer_gflops(b, r), false);
        json_num("ratio_to_peer", per(gf, peer_gflops(b, r)), true);
    }
    printf("}");
}

static void row_add(bench_t *b, const ops_row_t *r) {
    if (b->n_rows == b->cap_rows) {
        const int cap = b->cap_rows ? 2 * b->cap_rows : 64;
        ops_row_t *rows = realloc(b->rows, (size_t)cap * sizeof *rows);
        if (rows == NULL) {
            b->failures++;
            return;
        }
        b->rows = rows, b->cap_rows = cap;
    }
    b->rows[b->n_rows++] = *r;
    bench_ceil_read(&b->ceil, r->level_bytes); /* measured near the row's own run */
    if (r->flops == 0) bench_ceil_copy(&b->ceil, r->level_bytes);
    fprintf(stderr, ".");
}

static void row_print(bench_t *b, const ops_row_t *r) {
    const double gf = r->flops > 0 ? r->flops / r->time * 1e-9 : -1;
    const double gbs = r->bytes / r->time * 1e-9;
    const double rf = per(gf, bench_ceil_fma(&b->ceil));
    const double rr = per(gbs, bench_ceil_read(&b->ceil, r->level_bytes));
    const double rb = r->blas_time > 0 ? r->blas_time / r->time : -1;
    if (b->a->json) {
        row_json(b, r, gf, gbs, rf, rr, rb);
        return;
    }
    printf("%-9s %-12s %6lld %6lld %6lld %10.3f %10.3f", r->op, r->types, (long long)r->m,
           (long long)r->n, (long long)r->k, r->time * 1e3, r->best * 1e3);
    if (gf < 0)
        printf(" %9s", "-");
    else
        printf(" %9.1f", gf);
    printf(" %9.1f %9.1f", gbs, bench_ceil_read(&b->ceil, r->level_bytes));
    print_ratio(rf);
    print_ratio(rr);
    print_ratio(r->flops > 0 ? -1 : per(gbs, bench_ceil_copy(&b->ceil, r->level_bytes)));
    print_ratio(rb);
    if (b->a->peer != NULL) {
        const double pg = peer_gflops(b, r);
        if (pg < 0) printf(" %9s", "-");
        else printf(" %9.1f", pg);
        print_ratio(per(gf, pg));
    }
    printf("\n");
    fflush(stdout);
}

static void print_header(bench_t *b) {
    rt_device_props_t p = {.struct_size = sizeof p};
    rt_device_get_props(b->dev, &p);
    const double peak = b->ceil.fma_gflops;
    const size_t mem = bench_ceil_memory_bytes();
    if (b->a->json) {
        printf("[\n  {\"op\": \"fma_peak\", \"types\": \"%s\", \"m\": 0, \"n\": 0, \"k\": 0, "
               "\"threads\": %d, \"gflops\": %.6g, \"memory_read_gbs\": %.6g}", b->ceil.isa,
               b->ceil.threads, peak, bench_ceil_read(&b->ceil, mem));
        b->n_printed = 1;
        return;
    }
    printf("rt-bench ops: %s (%s)\n  %s\n", rt_device_name(b->dev), p.name, p.description);
    printf("ceilings, %d threads, best of runs before and after the ops: FMA %.1f GFLOPS (%s); "
           "read GB/s of a buffer the size of the row's weights (all operands for other ops);\n"
           "x copy: against copying a buffer of all the operands' size (half read, half written),\n"
           "the traffic bound of an op that writes what it reads\n"
           "time: median of runs (best beside it); rates and ratios from the median\n"
           "memory read ceiling %.1f GB/s (a %zu MiB buffer, past the caches)\n",
           b->ceil.threads, peak, b->ceil.isa, bench_ceil_read(&b->ceil, mem), mem >> 20);
    if (b->a->peer != NULL && b->n_peer > 0)
        printf("llama.cpp: %s's test-backend-ops perf -o MUL_MAT on %s, %d rows; x llama: rt's "
               "GFLOPS over its\n", b->a->peer, b->peer_backend, b->n_peer);
    else if (b->a->peer != NULL)
        printf("llama.cpp: skipped (%s)\n", b->peer_why);
    printf("%-9s %-12s %6s %6s %6s %10s %10s %9s %9s %9s  %7s  %7s  %7s  %7s", "op", "types",
           "m", "n", "k", "median ms", "best ms", "GFLOPS", "GB/s", "read GB/s", "x fma", "x read",
           "x copy", "x blas");
    if (b->a->peer != NULL) printf(" %9s  %7s", "llama GF", "x llama");
    printf("\n");
}

//===--- data ---===//

/* The tests' generator (tests/conform/rng.h): the same data every run. */
static uint64_t rng = 0x2545f4914f6cdd1dull;

static float rand_uniform(float lo, float hi) { return cf_rng_uniform(&rng, lo, hi); }

/* Random values in [lo, hi) in t's type, a batch of rows at a time
 * (contiguous tensors; I32 gets integers in [0, hi)); a tensor in a
 * weights buffer type takes its bytes in one whole set. */
static rt_status_t fill(rt_tensor_t *t, float lo, float hi) {
    const int64_t ne0 = t->ne[0], rows = rt_nrows(t), batch = 1024;
    const size_t row_bytes = rt_row_size(t->type, ne0);
    const bool whole = rt_buffer_type_is_weights(rt_buffer_get_type(t->buffer));
    float *v = malloc((size_t)(ne0 * batch) * sizeof *v);
    char *staging = malloc(row_bytes * (size_t)(whole ? rows : batch));
    rt_status_t st = v && staging ? RT_OK : RT_ERR_OUT_OF_MEMORY;
    for (int64_t r0 = 0; r0 < rows && st == RT_OK; r0 += batch) {
        const int64_t nr = rows - r0 < batch ? rows - r0 : batch;
        char *dst = staging + (whole ? (size_t)r0 * row_bytes : 0);
        for (int64_t i = 0; i < ne0 * nr; i++) {
            const float x = rand_uniform(lo, hi);
            if (t->type == RT_TYPE_I32) ((int32_t *)(void *)v)[i] = (int32_t)floorf(x);
            else v[i] = x;
        }
        if (t->type != RT_TYPE_I32) rt_quantize(t->type, v, dst, ne0 * nr);
        if (!whole)
            st = rt_tensor_set(t, t->type == RT_TYPE_I32 ? (void *)v : staging,
                               (size_t)r0 * row_bytes, (size_t)nr * row_bytes);
    }
    if (whole && st == RT_OK) st = rt_tensor_set(t, staging, 0, rt_nbytes(t));
    free(v);
    free(staging);
    return st;
}

//===--- timing ---===//

/* Runs g until a run is no longer OPS_WARM_GAIN faster than the best
 * before it (at least twice, at most OPS_WARM_MAX times or half the timed
 * runs' time); returns the last run's seconds. One run was not enough: an
 * operand that fits a cache level but was just evicted (by the read
 * ceiling's buffer of the same size, measured after the previous row, or
 * by fill's F32 source) comes back over several runs. Measured on Zen 4
 * (32 MB L3), Q8_0 m = k = 4096 (17.8 MB), n = 1: the warm-up run 0.76 ms,
 * then 0.37, 0.17, 0.14, 0.13, 0.13 ms; with one warm-up run those
 * first runs made the first n = 1 row of a weight matrix look slow. */
#define OPS_WARM_GAIN 0.95
#define OPS_WARM_MAX 32
static double warm_up(bench_t *b, rt_graph_t *g, rt_status_t *out_st) {
    double best = 0, last = 0, total = 0;
    for (int r = 0; r < OPS_WARM_MAX && total < b->a->min_time / 2; r++) {
        const double t0 = bench_now();
        *out_st = rt_queue_compute(b->q, g);
        last = bench_now() - t0;
        total += last;
        if (*out_st != RT_OK || (r > 0 && last > OPS_WARM_GAIN * best)) break;
        best = r == 0 || last < best ? last : best;
    }
    return last;
}

/* Median seconds of the graph after warm_up (*out_best the best); 0 on
 * failure. */
static double time_graph(bench_t *b, rt_graph_t *g, double *out_best) {
    double t[OPS_MAX_REPS], t0;
    rt_status_t st = RT_OK;
    const double once = warm_up(b, g, &st);
    int reps = once > 0 ? (int)(b->a->min_time / once) : 3;
    reps = reps < 3 ? 3 : reps > b->a->max_reps ? b->a->max_reps : reps;
    for (int r = 0; r < reps && st == RT_OK; r++) {
        t0 = bench_now();
        st = rt_queue_compute(b->q, g);
        t[r] = bench_now() - t0;
    }
    if (st != RT_OK) {
        fprintf(stderr, "rt-bench ops: rt_queue_compute: %s: %s\n", rt_status_name(st),
                rt_last_error());
        b->failures++;
        return 0;
    }
    *out_best = t[0];
    for (int r = 1; r < reps; r++) *out_best = t[r] < *out_best ? t[r] : *out_best;
    return bench_median(t, (size_t)reps);
}

/* Places ctx's tensors on the device, fills the inputs (NULL-terminated),
 * and times the graph of out. */
typedef struct ops_input {
    rt_tensor_t *t;
    float lo, hi;
} ops_input_t;

static double run_graph(bench_t *b, rt_context_t *ctx, rt_tensor_t *out, const ops_input_t *in,
                        double *out_best) {
    rt_graph_t *g = rt_graph_create(ctx, 16);
    rt_graph_build_forward_expand(g, out);
    rt_buffer_t *buf = NULL;
    rt_status_t st = rt_alloc_ctx_tensors(ctx, rt_device_buffer_type(b->dev, 0), &buf);
    for (int i = 0; in[i].t != NULL && st == RT_OK; i++) st = fill(in[i].t, in[i].lo, in[i].hi);
    double t = 0;
    if (st == RT_OK) {
        t = time_graph(b, g, out_best);
    } else {
        fprintf(stderr, "rt-bench ops: %s: %s\n", rt_status_name(st), rt_last_error());
        b->failures++;
    }
    rt_buffer_free(buf);
    return t;
}

static rt_context_t *new_context(void) {
    rt_context_t *ctx = NULL;
    const rt_context_params_t p = {.struct_size = sizeof p, .mem_size = 1 << 20, .no_alloc = true};
    return rt_context_create(&p, &ctx) == RT_OK ? ctx : NULL;
}

//===--- MUL_MAT ---===//

/* OpenBLAS on the same F32 shape: the same weights, random activations. */
static double blas_time(bench_t *b, const float *a_host, int64_t M, int64_t N, int64_t K) {
    float *bh = malloc((size_t)(N * K) * sizeof *bh), *ch = malloc((size_t)(N * M) * sizeof *ch);
    double t = 0;
    if (bh && ch) {
        for (int64_t i = 0; i < N * K; i++) bh[i] = rand_uniform(-1, 1);
        t = bench_blas_sgemm(a_host, bh, ch, M, N, K, b->ceil.threads, 3);
    }
    free(bh);
    free(ch);
    return t;
}

static void bench_mul_mat_n(bench_t *b, rt_tensor_t *a, const float *a_host, int64_t n) {
    rt_context_t *ctx = new_context();
    if (ctx == NULL) return;
    const int64_t K = a->ne[0], M = a->ne[1];
    rt_tensor_t *bt = rt_new_tensor_2d(ctx, RT_TYPE_F32, K, n);
    rt_tensor_t *c = rt_mul_mat(ctx, a, bt);
    const ops_input_t in[] = {{bt, -1, 1}, {NULL, 0, 0}};
    ops_row_t r = {.op = "mul_mat", .m = M, .n = n, .k = K, .flops = 2.0 * (double)(M * n * K)};
    snprintf(r.types, sizeof r.types, "%s%s x f32", rt_type_name(a->type),
             rt_buffer_type_is_weights(rt_buffer_get_type(a->buffer)) ? "(r)" : "");
    r.time = run_graph(b, ctx, c, in, &r.best);
    r.bytes = (double)(rt_nbytes(a) + rt_nbytes(bt) + rt_nbytes(c));
    r.level_bytes = rt_nbytes(a);
    if (r.time > 0 && a_host) r.blas_time = blas_time(b, a_host, M, n, K);
    if (r.time > 0) row_add(b, &r);
    rt_context_destroy(ctx);
}

/* The device's weights buffer type that takes a, else its default one. */
static rt_buffer_type_t *weights_buft(const bench_t *b, const rt_tensor_t *a) {
    for (int32_t i = 1; i < rt_device_buffer_type_count(b->dev) && !b->a->no_weights_buft; i++) {
        rt_buffer_type_t *buft = rt_device_buffer_type(b->dev, i);
        if (rt_buffer_type_is_weights(buft) && rt_buffer_type_supports_tensor(buft, a)) return buft;
    }
    return rt_device_buffer_type(b->dev, 0);
}

/* One weight matrix, then every n against it. */
static void bench_mul_mat_weights(bench_t *b, rt_type_t type, int64_t k) {
    rt_context_t *ctx = new_context();
    rt_tensor_t *a = ctx ? rt_new_tensor_2d(ctx, type, k, b->a->m) : NULL;
    rt_buffer_t *buf = NULL;
    float *a_host = NULL;
    rt_status_t st = a ? rt_alloc_ctx_tensors(ctx, weights_buft(b, a), &buf)
                       : RT_ERR_OUT_OF_MEMORY;
    if (st == RT_OK) st = fill(a, -1, 1);
    if (st == RT_OK && type == RT_TYPE_F32 && !b->a->no_blas && bench_blas_available()) {
        a_host = malloc(rt_nbytes(a));
        if (a_host && rt_tensor_get(a, a_host, 0, rt_nbytes(a)) != RT_OK) free(a_host), a_host = NULL;
    }
    if (st != RT_OK) {
        fprintf(stderr, "rt-bench ops: weights %s {%lld, %lld}: %s: %s\n", rt_type_name(type),
                (long long)k, (long long)b->a->m, rt_status_name(st), rt_last_error());
        b->failures++;
    }
    for (int i = 0; i < b->a->n_ns && st == RT_OK; i++) bench_mul_mat_n(b, a, a_host, b->a->ns[i]);
    free(a_host);
    rt_buffer_free(buf);
    rt_context_destroy(ctx);
}

static void bench_mul_mat(bench_t *b) {
    for (size_t t = 0; t < sizeof all_types / sizeof all_types[0]; t++) {
        if (!listed(b->a->types ? b->a->types : DEFAULT_TYPES, rt_type_name(all_types[t]))) continue;
        for (int i = 0; i < b->a->n_ks; i++) bench_mul_mat_weights(b, all_types[t], b->a->ks[i]);
    }
}

//===--- the other ops ---===//

/* An op graph at llama-7B sizes for T tokens: out, its inputs, and the
 * bytes its operands occupy. */
typedef struct ops_case {
    rt_tensor_t *out;
    ops_input_t in[5]; /* up to 4, then one with t NULL: where the readers stop */
    int64_t m, n;
} ops_case_t;

static void in_set(ops_case_t *c, int i, rt_tensor_t *t, float lo, float hi) {
    c->in[i] = (ops_input_t){t, lo, hi};
}

static rt_tensor_t *x2(rt_context_t *ctx, int64_t ne0, int64_t T, ops_case_t *c, int i) {
    rt_tensor_t *t = rt_new_tensor_2d(ctx, RT_TYPE_F32, ne0, T);
    in_set(c, i, t, -2, 2);
    c->m = ne0, c->n = T;
    return t;
}

static void build_rowwise(rt_context_t *ctx, const char *op, int64_t T, ops_case_t *c) {
    const bool ff = strcmp(op, "silu") == 0 || strcmp(op, "gelu") == 0 || strcmp(op, "swiglu") == 0;
    rt_tensor_t *x = x2(ctx, ff ? OPS_N_FF : OPS_N_EMBD, T, c, 0);
    if (strcmp(op, "rms_norm") == 0) c->out = rt_rms_norm(ctx, x, 1e-5f);
    else if (strcmp(op, "norm") == 0) c->out = rt_norm(ctx, x, 1e-5f);
    else if (strcmp(op, "silu") == 0) c->out = rt_silu(ctx, x);
    else if (strcmp(op, "gelu") == 0) c->out = rt_gelu(ctx, x);
    else if (strcmp(op, "scale") == 0) c->out = rt_scale(ctx, x, 0.125f);
    else if (strcmp(op, "swiglu") == 0) c->out = rt_swiglu(ctx, x, x2(ctx, OPS_N_FF, T, c, 1));
    else if (strcmp(op, "add") == 0) c->out = rt_add(ctx, x, x2(ctx, OPS_N_EMBD, T, c, 1));
    else if (strcmp(op, "mul") == 0) c->out = rt_mul(ctx, x, x2(ctx, OPS_N_EMBD, 1, c, 1));
    c->m = x->ne[0], c->n = T;
}

/* KQ of every head over a causal window of T keys, scaled and masked. */
static void build_soft_max(rt_context_t *ctx, int64_t T, ops_case_t *c) {
    rt_tensor_t *kq = rt_new_tensor_3d(ctx, RT_TYPE_F32, T, T, OPS_N_HEAD);
    rt_tensor_t *mask = rt_new_tensor_2d(ctx, RT_TYPE_F32, T, T);
    in_set(c, 0, kq, -4, 4);
    in_set(c, 1, mask, -1, 0);
    c->out = rt_soft_max_ext(ctx, kq, mask, 1.0f / sqrtf(OPS_HEAD_DIM));
    c->m = T, c->n = T * OPS_N_HEAD;
}

static void build_rope(rt_context_t *ctx, int64_t T, ops_case_t *c) {
    rt_tensor_t *q = rt_new_tensor_3d(ctx, RT_TYPE_F32, OPS_HEAD_DIM, OPS_N_HEAD, T);
    rt_tensor_t *pos = rt_new_tensor_1d(ctx, RT_TYPE_I32, T);
    in_set(c, 0, q, -2, 2);
    in_set(c, 1, pos, 0, 4096);
    c->out = rt_rope(ctx, q, pos, OPS_HEAD_DIM, RT_ROPE_MODE_NORMAL);
    c->m = OPS_HEAD_DIM, c->n = OPS_N_HEAD * T;
}

static void build_get_rows(rt_context_t *ctx, rt_type_t type, int64_t T, ops_case_t *c) {
    rt_tensor_t *emb = rt_new_tensor_2d(ctx, type, OPS_N_EMBD, OPS_N_VOCAB);
    rt_tensor_t *ids = rt_new_tensor_1d(ctx, RT_TYPE_I32, T);
    in_set(c, 0, emb, -1, 1);
    in_set(c, 1, ids, 0, OPS_N_VOCAB);
    c->out = rt_get_rows(ctx, emb, ids);
    c->m = OPS_N_EMBD, c->n = T;
}

/* cpy: this step's K into an F16 cache; cont: permuted heads made contiguous. */
static void build_copy(rt_context_t *ctx, const char *op, int64_t T, ops_case_t *c) {
    if (strcmp(op, "cpy") == 0) {
        rt_tensor_t *k = x2(ctx, OPS_N_EMBD, T, c, 0);
        rt_tensor_t *cache = rt_new_tensor_1d(ctx, RT_TYPE_F16, OPS_N_EMBD * T * 2);
        c->out = rt_cpy(ctx, k, rt_view_2d(ctx, cache, OPS_N_EMBD, T, OPS_N_EMBD * 2,
                                           (size_t)(OPS_N_EMBD * T) * 2));
        return;
    }
    rt_tensor_t *q = rt_new_tensor_3d(ctx, RT_TYPE_F32, OPS_HEAD_DIM, OPS_N_HEAD, T);
    in_set(c, 0, q, -2, 2);
    c->out = rt_cont(ctx, rt_permute(ctx, q, 0, 2, 1, 3));
    c->m = OPS_HEAD_DIM, c->n = OPS_N_HEAD * T;
}

/* Bytes of the result and of every input (each touched once). */
static double case_bytes(const ops_case_t *c) {
    double bytes = (double)rt_nbytes(c->out);
    for (int i = 0; c->in[i].t != NULL; i++) {
        const rt_tensor_t *t = c->in[i].t;
        bytes += t->ne[1] == OPS_N_VOCAB ? (double)(rt_row_size(t->type, t->ne[0]) * (size_t)c->n)
                                         : (double)rt_nbytes(t);
    }
    return bytes;
}

static void bench_other(bench_t *b, const char *op, rt_type_t type) {
    rt_context_t *ctx = new_context();
    if (ctx == NULL) return;
    const int64_t T = b->a->tokens;
    ops_case_t c = {0};
    if (strcmp(op, "soft_max") == 0) build_soft_max(ctx, T, &c);
    else if (strcmp(op, "rope") == 0) build_rope(ctx, T, &c);
    else if (strcmp(op, "get_rows") == 0) build_get_rows(ctx, type, T, &c);
    else if (strcmp(op, "cpy") == 0 || strcmp(op, "cont") == 0) build_copy(ctx, op, T, &c);
    else build_rowwise(ctx, op, T, &c);
    ops_row_t r = {.op = op, .m = c.m, .n = c.n};
    snprintf(r.types, sizeof r.types, "%s", strcmp(op, "cpy") == 0 ? "f32 -> f16"
                                             : rt_type_name(c.in[0].t->type));
    r.time = run_graph(b, ctx, c.out, c.in, &r.best);
    r.bytes = case_bytes(&c);
    r.level_bytes = (size_t)r.bytes;
    if (r.time > 0) row_add(b, &r);
    rt_context_destroy(ctx);
}

/* Decode (n = 1) or a small batch's attention at depth: n queries of 32
 * heads of 128 against T keys of 8 kv heads (Llama 3 8B's grouping), K and
 * V views of a cache that keeps a token's heads side by side, as the
 * model's does; rows, bytes and the bound are the cache's. */
static void bench_flash_attn_n(bench_t *b, rt_type_t type, int64_t n) {
    rt_context_t *ctx = new_context();
    if (ctx == NULL) return;
    const int64_t T = b->a->tokens, D = OPS_HEAD_DIM, H = OPS_N_HEAD, H_kv = OPS_N_HEAD_KV;
    ops_case_t c = {0};
    rt_tensor_t *q = rt_new_tensor_3d(ctx, RT_TYPE_F32, D, H, n);
    rt_tensor_t *ck = rt_new_tensor_2d(ctx, type, D * H_kv, T);
    rt_tensor_t *cv = rt_new_tensor_2d(ctx, type, D * H_kv, T);
    rt_tensor_t *mask = rt_new_tensor_2d(ctx, RT_TYPE_F32, T, n);
    in_set(&c, 0, q, -2, 2);
    in_set(&c, 1, ck, -1, 1);
    in_set(&c, 2, cv, -1, 1);
    in_set(&c, 3, mask, -1, 0);
    rt_tensor_t *k = rt_view_3d(ctx, ck, D, T, H_kv, ck->nb[1], (size_t)D * ck->nb[0], 0);
    rt_tensor_t *v = rt_view_3d(ctx, cv, D, T, H_kv, cv->nb[1], (size_t)D * cv->nb[0], 0);
    c.out = rt_flash_attn(ctx, rt_permute(ctx, q, 0, 2, 1, 3), k, v, mask, 1.0f / sqrtf((float)D), 0.0f);
    ops_row_t r = {.op = "flash_attn", .m = T, .n = n, .k = D, .flops = 4.0 * (double)(n * H * T * D)};
    snprintf(r.types, sizeof r.types, "%s", rt_type_name(type));
    r.time = run_graph(b, ctx, c.out, c.in, &r.best);
    r.bytes = case_bytes(&c);
    r.level_bytes = rt_nbytes(ck) + rt_nbytes(cv);
    if (r.time > 0) row_add(b, &r);
    rt_context_destroy(ctx);
}

static void bench_flash_attn(bench_t *b) {
    const rt_type_t types[] = {RT_TYPE_F32, RT_TYPE_F16};
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        if (!listed(b->a->types ? b->a->types : DEFAULT_TYPES, rt_type_name(types[t]))) continue;
        for (int i = 0; i < b->a->n_ns; i++) bench_flash_attn_n(b, types[t], b->a->ns[i]);
    }
}

static const char *const other_ops[] = {"rms_norm", "norm", "soft_max", "rope", "silu", "gelu",
                                        "swiglu", "add", "mul", "scale", "get_rows", "cpy", "cont"};

static void bench_others(bench_t *b) {
    for (size_t i = 0; i < sizeof other_ops / sizeof other_ops[0]; i++) {
        if (!listed(b->a->ops, other_ops[i])) continue;
        if (strcmp(other_ops[i], "get_rows") != 0) {
            bench_other(b, other_ops[i], RT_TYPE_F32);
            continue;
        }
        for (size_t t = 0; t < sizeof all_types / sizeof all_types[0]; t++)
            if (listed(b->a->types ? b->a->types : DEFAULT_TYPES, rt_type_name(all_types[t])))
                bench_other(b, other_ops[i], all_types[t]);
    }
}

//===--- main ---===//

/* Every ceiling again, keeping the best of the two measurements. */
static void remeasure(bench_t *b) {
    bench_ceil_t again = b->ceil;
    again.fma_gflops = 0, again.n_sizes = 0;
    const double fma = bench_ceil_fma(&again);
    if (fma > b->ceil.fma_gflops) b->ceil.fma_gflops = fma;
    for (int i = 0; i < b->ceil.n_sizes; i++) {
        const double g = bench_ceil_read(&again, b->ceil.sizes[i]);
        if (g > b->ceil.gbs[i]) b->ceil.gbs[i] = g;
    }
    for (int i = 0; i < b->ceil.n_copy; i++) {
        const double g = bench_ceil_copy(&again, b->ceil.copy_sizes[i]);
        if (g > b->ceil.copy_gbs[i]) b->ceil.copy_gbs[i] = g;
    }
}

/* Appends "|name" to the alternatives in re unless it is there already. */
static void add_alternative(char *re, size_t size, const char *name) {
    char item[40];
    snprintf(item, sizeof item, "|%s|", name);
    if (strstr(re, item) == NULL) snprintf(re + strlen(re), size - strlen(re), "%s|", name);
}

/* test-backend-ops' -p: only the weight types, m and n of rt's MUL_MAT
 * rows, so that llama.cpp runs few cases without an rt row beside it (on
 * a slow device its n = 512 rows alone take minutes). */
static void peer_filter(const bench_t *b, char *re, size_t size) {
    char types[512] = "|", ms[256] = "|", ns[256] = "|", name[32];
    for (int i = 0; i < b->n_rows; i++) {
        const ops_row_t *r = &b->rows[i];
        if (strcmp(r->op, "mul_mat") != 0) continue;
        snprintf(name, sizeof name, "%.*s", (int)strcspn(r->types, "( "), r->types);
        add_alternative(types, sizeof types, name);
        snprintf(name, sizeof name, "%lld", (long long)r->m);
        add_alternative(ms, sizeof ms, name);
        snprintf(name, sizeof name, "%lld", (long long)r->n);
        add_alternative(ns, sizeof ns, name);
    }
    types[strlen(types) - 1] = ms[strlen(ms) - 1] = ns[strlen(ns) - 1] = '\0'; /* the last '|' */
    snprintf(re, size, "type_a=(%s),type_b=f32,m=(%s),n=(%s),", types + 1, ms + 1, ns + 1);
}

/* llama.cpp's rows, after rt's so that neither run disturbs the other. */
static void run_peer(bench_t *b) {
    char re[1152]; /* peer_filter's three lists and its text */
    b->peer = calloc(OPS_MAX_PEER, sizeof *b->peer);
    if (b->peer == NULL) {
        snprintf(b->peer_why, sizeof b->peer_why, "no memory");
        return;
    }
    peer_filter(b, re, sizeof re);
    if (strncmp(re, "type_a=()", 9) == 0) {
        snprintf(b->peer_why, sizeof b->peer_why, "no mul_mat row to compare");
        return;
    }
    fprintf(stderr, "rt-bench ops: running llama.cpp's test-backend-ops from %s (-p '%s')\n",
            b->a->peer, re);
    bench_peer_device(rt_device_name(b->dev), b->peer_backend, sizeof b->peer_backend);
    b->n_peer = bench_peer_ops(b->a->peer, b->peer_backend, re, b->peer, OPS_MAX_PEER, b->peer_why,
                               sizeof b->peer_why);
}

static int run(bench_t *b) {
    fprintf(stderr, "rt-bench ops: measuring");
    bench_ceil_fma(&b->ceil);
    bench_ceil_read(&b->ceil, bench_ceil_memory_bytes());
    if (listed(b->a->ops, "mul_mat")) bench_mul_mat(b);
    bench_others(b);
    if (listed(b->a->ops, "flash_attn")) bench_flash_attn(b);
    remeasure(b);
    fprintf(stderr, "\n");
    if (b->a->peer != NULL) run_peer(b);
    print_header(b);
    for (int i = 0; i < b->n_rows; i++) row_print(b, &b->rows[i]);
    if (b->a->json) printf("\n]\n");
    free(b->rows);
    free(b->peer);
    return b->failures ? 1 : 0;
}

static int open_queue(bench_t *b, rt_registry_t *reg) {
    b->dev = rt_registry_device_by_name(reg, b->a->device);
    if (b->dev == NULL) {
        fprintf(stderr, "rt-bench ops: no device %s (plugins searched in %s)\n", b->a->device,
                rt_registry_search_path(reg));
        return 1;
    }
    int threads = b->a->threads;
    if (threads == 0) threads = rt_tools_cpu_count();
    const rt_queue_options_t o = {.struct_size = sizeof o, .n_threads = threads};
    const rt_status_t st = rt_queue_create(b->dev, &o, &b->q);
    if (st != RT_OK) {
        fprintf(stderr, "rt-bench ops: rt_queue_create: %s: %s\n", rt_status_name(st),
                rt_last_error());
        return 1;
    }
    bench_ceil_init(&b->ceil, threads);
    return 0;
}

int bench_ops_main(int argc, char **argv) {
    ops_args_t a = {.device = "cpu0", .ns = {1, 2, 4, 8, 32, 128, 512}, .n_ns = 7,
                    .ks = {4096, 14336}, .n_ks = 2, .m = 4096, .tokens = 512, .min_time = 0.3,
                    .max_reps = 50};
    const int parsed = parse(argc, argv, &a);
    if (parsed != 0) return parsed == 1 ? 0 : 2;
    rt_registry_t *reg = NULL;
    rt_status_t st = rt_registry_create(NULL, &reg);
    if (st != RT_OK) {
        fprintf(stderr, "rt-bench ops: rt_registry_create: %s: %s\n", rt_status_name(st),
                rt_last_error());
        return 1;
    }
    bench_t b = {.a = &a};
    int rc = open_queue(&b, reg);
    if (rc == 0) rc = run(&b);
    rt_queue_destroy(b.q);
    rt_registry_destroy(reg);
    return rc;
}
