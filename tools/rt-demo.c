/* SPDX-License-Identifier: MIT */
/* rt-demo.c: a two-layer MLP, y = W2 . gelu(W1 . x + b1) + b2, run on one
 * device with the allocators of docs/memory.md §3. The weights and the
 * input are declared in a no_alloc context and placed by rt_alloc_ctx_tensors
 * in one buffer of the device's buffer type 0, then filled with rt_tensor_set
 * from deterministic values. The graph is built in a second no_alloc context
 * whose intermediates are placed by a graph allocator (docs/memory.md
 * §3.3: reserve, then alloc_graph into one compute buffer, with
 * early frees and in-place reuse). The output is printed with its shape,
 * next to the same MLP computed on the host in double, and the largest
 * difference; the exit status is 0 only when it is within 1e-4.
 *
 *   rt-demo [--device NAME] [--threads N]
 */
#include "../abi/rt.h"

#include "tool_cli.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N_IN = 16, N_HIDDEN = 32, N_OUT = 8, N_BATCH = 4 };

#define DEMO_TOL 1e-4 /* absolute; F32 sums of <= 32 terms with outputs below 10 round to ~1e-6 */

typedef struct demo_options {
    const char *device; /* NULL: the first device */
    int32_t n_threads;  /* 0: the device's default */
} demo_options_t;

/* The leafs: weights, biases and the input, in one buffer. */
typedef struct mlp {
    rt_context_t *ctx;
    rt_buffer_t *buf;
    rt_tensor_t *w1, *b1, *w2, *b2, *x;
} mlp_t;

typedef struct mlp_host {
    float w1[N_HIDDEN * N_IN], b1[N_HIDDEN], w2[N_OUT * N_HIDDEN], b2[N_OUT], x[N_BATCH * N_IN];
} mlp_host_t;

static void usage(FILE *f) {
    fprintf(f, "usage: rt-demo [options]\n"
               "  -d, --device NAME   the device to run on (default: the first found)\n"
               "                      (--devices is the same)\n"
               "  -t, --threads N     CPU threads, 1 to 1024 (default: the plugin's)\n"
               "  -h, --help          this text\n"
               "      --version       release, ABI and commit\n");
}

/* Returns 0 to go on, 1 after --help or --version, 2 on a bad option. */
static int parse_args(int argc, char **argv, demo_options_t *out_opt) {
    static const struct option opts[] = {
        {"device", required_argument, NULL, 'd'}, {"devices", required_argument, NULL, 'd'},
        {"threads", required_argument, NULL, 't'}, {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'}, {NULL, 0, NULL, 0}};
    memset(out_opt, 0, sizeof *out_opt);
    for (int c; (c = getopt_long(argc, argv, "d:t:h", opts, NULL)) != -1;) {
        if (c == 'd') out_opt->device = optarg;
        else if (c == 't' && !rt_cli_int("rt-demo", "--threads", optarg, 1, 1024, &out_opt->n_threads))
            return rt_cli_bad_usage("rt-demo");
        else if (c == 'h') return usage(stdout), 1;
        else if (c == 'V') return rt_cli_print_version(stdout, "rt-demo"), 1;
        else if (c != 't') return rt_cli_bad_usage("rt-demo");
    }
    if (optind < argc) {
        fprintf(stderr, "rt-demo: unexpected argument '%s'\n", argv[optind]);
        return rt_cli_bad_usage("rt-demo");
    }
    return 0;
}

static void print_plugins(const rt_registry_t *reg) {
    fprintf(stderr, "rt-demo: plugin search path: %s\n", rt_registry_search_path(reg));
    for (int32_t i = 0; i < rt_registry_plugin_count(reg); i++) {
        const rt_plugin_info_t *p = rt_registry_plugin(reg, i);
        fprintf(stderr, "  %s (%s): %s %s\n", p->name, p->path, rt_status_name(p->status), p->message);
    }
}

/* The device named, or the first; NULL (with a message) when there is none. */
static rt_device_t *pick_device(const rt_registry_t *reg, const char *name) {
    if (rt_registry_device_count(reg) == 0) {
        fprintf(stderr, "rt-demo: no device found: no plugin loaded or none has a device\n");
        print_plugins(reg);
        return NULL;
    }
    if (name == NULL) return rt_registry_device(reg, 0);
    rt_device_t *dev = rt_registry_device_by_name(reg, name);
    if (dev == NULL) {
        fprintf(stderr, "rt-demo: no device named '%s'; devices:", name);
        for (int32_t i = 0; i < rt_registry_device_count(reg); i++)
            fprintf(stderr, " %s", rt_device_name(rt_registry_device(reg, i)));
        fprintf(stderr, "\n");
    }
    return dev;
}

/* Deterministic values in (-0.5, 0.5): no zeros, different per tensor. */
static void fill_values(float *v, size_t n, float seed) {
    for (size_t i = 0; i < n; i++) v[i] = 0.5f * sinf(seed + 0.37f * (float)i + 0.011f * (float)(i * i % 97));
}

static void host_init(mlp_host_t *h) {
    fill_values(h->w1, N_HIDDEN * N_IN, 0.1f);
    fill_values(h->b1, N_HIDDEN, 1.3f);
    fill_values(h->w2, N_OUT * N_HIDDEN, 2.9f);
    fill_values(h->b2, N_OUT, 4.1f);
    fill_values(h->x, N_BATCH * N_IN, 5.7f);
}

static rt_status_t no_alloc_context(size_t mem_size, rt_context_t **out_ctx) {
    const rt_context_params_t p = {.struct_size = sizeof p, .mem_size = mem_size, .no_alloc = true};
    return rt_context_create(&p, out_ctx);
}

/* Declares the leafs, places them in one buffer of buft, uploads h. */
static rt_status_t mlp_load(rt_buffer_type_t *buft, const mlp_host_t *h, mlp_t *m) {
    rt_status_t st = no_alloc_context(8 * rt_tensor_overhead(), &m->ctx);
    if (st != RT_OK) return st;
    m->w1 = rt_set_name(rt_new_tensor_2d(m->ctx, RT_TYPE_F32, N_IN, N_HIDDEN), "w1");
    m->b1 = rt_set_name(rt_new_tensor_1d(m->ctx, RT_TYPE_F32, N_HIDDEN), "b1");
    m->w2 = rt_set_name(rt_new_tensor_2d(m->ctx, RT_TYPE_F32, N_HIDDEN, N_OUT), "w2");
    m->b2 = rt_set_name(rt_new_tensor_1d(m->ctx, RT_TYPE_F32, N_OUT), "b2");
    m->x = rt_set_name(rt_new_tensor_2d(m->ctx, RT_TYPE_F32, N_IN, N_BATCH), "x");
    rt_set_input(m->x);
    st = rt_alloc_ctx_tensors(m->ctx, buft, &m->buf);
    if (st == RT_OK) st = rt_tensor_set(m->w1, h->w1, 0, sizeof h->w1);
    if (st == RT_OK) st = rt_tensor_set(m->b1, h->b1, 0, sizeof h->b1);
    if (st == RT_OK) st = rt_tensor_set(m->w2, h->w2, 0, sizeof h->w2);
    if (st == RT_OK) st = rt_tensor_set(m->b2, h->b2, 0, sizeof h->b2);
    if (st == RT_OK) st = rt_tensor_set(m->x, h->x, 0, sizeof h->x);
    return st;
}

/* The graph: five leafs, five nodes. */
static rt_tensor_t *mlp_forward(rt_context_t *ctx, const mlp_t *m) {
    rt_tensor_t *h = rt_gelu(ctx, rt_add(ctx, rt_mul_mat(ctx, m->w1, m->x), m->b1));
    rt_tensor_t *y = rt_add(ctx, rt_mul_mat(ctx, m->w2, h), m->b2);
    rt_set_output(rt_set_name(y, "y"));
    return y;
}

/* Places the graph's intermediates with a graph allocator: reserve sizes
 * the compute buffer for the graph, alloc_graph points every node into it. */
static rt_status_t alloc_intermediates(rt_graph_t *g, rt_buffer_type_t *buft, rt_gallocr_t **out_ga) {
    rt_status_t st = rt_gallocr_create(buft, out_ga);
    if (st == RT_OK) st = rt_gallocr_reserve(*out_ga, g);
    if (st == RT_OK) st = rt_gallocr_alloc_graph(*out_ga, g);
    if (st == RT_OK)
        printf("compute buffer: %zu bytes for %d nodes (gallocr; `rt-plan --graph mlp --svg F` draws "
               "the plan)\n", rt_gallocr_get_buffer_size(*out_ga, 0), rt_graph_n_nodes(g));
    return st;
}

static double gelu(double v) { return 0.5 * v * (1.0 + tanh(sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v))); }

/* out[n*rows + r] = act(dot(w row r, in column n) + b[r]), in double. */
static void host_layer(const float *w, const float *b, const double *in, int k, int rows, bool act, double *out) {
    for (int n = 0; n < N_BATCH; n++)
        for (int r = 0; r < rows; r++) {
            double s = b[r];
            for (int j = 0; j < k; j++) s += (double)w[r * k + j] * in[n * k + j];
            out[n * rows + r] = act ? gelu(s) : s;
        }
}

static void host_forward(const mlp_host_t *h, double *y) {
    double x[N_BATCH * N_IN], hid[N_BATCH * N_HIDDEN];
    for (int i = 0; i < N_BATCH * N_IN; i++) x[i] = h->x[i];
    host_layer(h->w1, h->b1, x, N_IN, N_HIDDEN, true, hid);
    host_layer(h->w2, h->b2, hid, N_HIDDEN, N_OUT, false, y);
}

/* Prints y next to the host's result; returns the largest difference. */
static double print_result(const rt_tensor_t *y, const float *got, const double *want) {
    double max_diff = 0;
    printf("y: %s {%lld, %lld} (one line per batch row: device | host)\n", rt_type_name(y->type),
           (long long)y->ne[0], (long long)y->ne[1]);
    for (int n = 0; n < N_BATCH; n++) {
        printf("  [%d]", n);
        for (int r = 0; r < N_OUT; r++) printf(" %9.6f", got[n * N_OUT + r]);
        printf("\n   | ");
        for (int r = 0; r < N_OUT; r++) {
            const double d = fabs((double)got[n * N_OUT + r] - want[n * N_OUT + r]);
            max_diff = d > max_diff || isnan(d) ? d : max_diff;
            printf(" %9.6f", want[n * N_OUT + r]);
        }
        printf("\n");
    }
    return max_diff;
}

static rt_status_t run_mlp(rt_device_t *dev, int32_t n_threads, int *out_exit) {
    mlp_host_t host;
    mlp_t m = {0};
    rt_context_t *gctx = NULL;
    rt_gallocr_t *ga = NULL;
    rt_queue_t *q = NULL;
    float got[N_BATCH * N_OUT];
    double want[N_BATCH * N_OUT];
    rt_buffer_type_t *buft = rt_device_buffer_type(dev, 0);
    const rt_queue_options_t qopt = {.struct_size = sizeof qopt, .n_threads = n_threads};
    host_init(&host);
    rt_status_t st = buft != NULL ? mlp_load(buft, &host, &m) : RT_ERR_NOT_FOUND;
    if (st == RT_OK) st = no_alloc_context(16 * rt_tensor_overhead() + rt_graph_overhead(16), &gctx);
    rt_graph_t *g = st == RT_OK ? rt_graph_create(gctx, 16) : NULL;
    rt_tensor_t *y = st == RT_OK ? mlp_forward(gctx, &m) : NULL;
    if (st == RT_OK) {
        rt_graph_build_forward_expand(g, y);
        printf("graph: %d leafs, %d nodes on %s (%s), buffer type %s\n", rt_graph_n_leafs(g), rt_graph_n_nodes(g),
               rt_device_name(dev), rt_device_plugin_name(dev), rt_buffer_type_name(buft));
        st = alloc_intermediates(g, buft, &ga);
    }
    if (st == RT_OK) st = rt_queue_create(dev, &qopt, &q);
    if (st == RT_OK) st = rt_queue_compute(q, g);
    if (st == RT_OK) st = rt_tensor_get(y, got, 0, sizeof got);
    if (st == RT_OK) {
        host_forward(&host, want);
        const double max_diff = print_result(y, got, want);
        printf("max |device - host| = %.3g (tolerance %.0e)\n", max_diff, DEMO_TOL);
        *out_exit = max_diff <= DEMO_TOL ? 0 : 1;
    }
    rt_queue_destroy(q);
    rt_gallocr_destroy(ga);
    rt_context_destroy(gctx);
    rt_buffer_free(m.buf);
    rt_context_destroy(m.ctx);
    return st;
}

int main(int argc, char **argv) {
    demo_options_t opt;
    const int parsed = parse_args(argc, argv, &opt);
    if (parsed != 0) return parsed == 1 ? 0 : 2;
    rt_registry_t *reg = NULL;
    rt_status_t st = rt_registry_create(NULL, &reg);
    if (st != RT_OK) {
        fprintf(stderr, "rt-demo: cannot load plugins: %s: %s\n", rt_status_name(st), rt_last_error());
        return 2;
    }
    int exit_code = 2;
    rt_device_t *dev = pick_device(reg, opt.device);
    if (dev != NULL) {
        st = run_mlp(dev, opt.n_threads, &exit_code);
        if (st != RT_OK) fprintf(stderr, "rt-demo: %s: %s\n", rt_status_name(st), rt_last_error());
    }
    rt_registry_destroy(reg);
    return exit_code;
}
