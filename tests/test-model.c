/* SPDX-License-Identifier: MIT */
/* test-model.c: the model library (model/rt_model.h) on stories260K, a
 * real llama model (5 layers, GQA 8/4 heads, 512 tokens). Loading maps the
 * weights with nothing copied on the CPU; greedy output is the same on
 * every run, thread count, ubatch size and device split (CPU alone, CPU
 * with a mock GPU, two mock GPUs), with logits that agree; the first
 * logits match an independent forward pass written here in double
 * precision from the same GGUF; decoding never reserves or grows a compute
 * buffer; sampling is deterministic for a seed; bad files and requests fail
 * with their status and one line; a one-layer llama written here with
 * rt_gguf_writer loads with the optional keys defaulted and tied
 * embeddings, and its broken variants name what is wrong; on the Vulkan
 * device, alone and split with the CPU, greedy output is the CPU's (the
 * only skip: configure built no Vulkan plugin); decoding builds a graph
 * once per 32 cache rows, not per token, allocates nothing in between and
 * gives the same tokens and logits as rebuilding every step; an embeddings
 * context's hidden states times the output matrix are the logits, and its
 * pooled vector is their mean (or the last one), normalised. Tests run from
 * the repository root; RT_TEST_MODELS_DIR overrides models/ (the bundled ones). */
#include "testutil.h"

#include "../model/rt_model.h"
#include "plugins/mockgpu/mockgpu.h"

#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MODEL "stories260K.gguf"
#define PROMPT "Once upon a time, there was a"
#define N_GEN 32

/* Logits of two runs that differ only in how the work is cut (threads,
 * ubatches, devices) can differ only by rounding in another summation
 * order. With the CPU plugin and the mock (which computes with it) they
 * are bit-identical; 1e-5 leaves room for kernels that sum differently,
 * while a wrong result is off by ~1e-1. */
#define TOL_SAME_MODEL 1e-5
/* Against the double-precision reference: F32 dot products of at most 172
 * terms (unit roundoff 6e-8, error growing ~sqrt(n)) through 5 layers give
 * ~1e-6 normalised error; 1e-4 is the brief's bound, far below the ~1e-1
 * of any wrong op (rope pairing, mask, GQA head mapping, scale). */
#define TOL_REFERENCE 1e-4

//===--- files and registries ---===//


/* A registry of the CPU plugin and, when n_gpus > 0, that many mock GPUs
 * of `memory` each (RT_MOCKGPU_MEMORY syntax). The mock reads its
 * environment when created, so only one such registry lives at a time. */
static rt_registry_t *registry_open_with(int n_gpus, const char *memory, const rt_allocator_t *alloc) {
    char count[8], path[2 * PATH_MAX + 64];
    snprintf(count, sizeof count, "%d", n_gpus);
    setenv("RT_MOCKGPU_COUNT", count, 1);
    setenv("RT_MOCKGPU_MEMORY", memory ? memory : "1G", 1);
    setenv("RT_PLUGINS", n_gpus > 0 ? "cpu,mockgpu" : "cpu", 1);
    snprintf(path, sizeof path, "%s/tests/plugins/mockgpu:%s/lib/rt-plugins", tu_build_dir_abs(), tu_build_dir_abs());
    const rt_registry_options_t o = {.struct_size = sizeof o, .plugin_path = path, .allocator = alloc};
    rt_registry_t *reg = NULL;
    if (rt_registry_create(&o, &reg) != RT_OK) fail_msg("rt_registry_create: %s", rt_last_error());
    assert_non_null(rt_registry_device_by_name(reg, "cpu0"));
    return reg;
}

static rt_registry_t *registry_open(int n_gpus, const char *memory) {
    return registry_open_with(n_gpus, memory, NULL);
}

static rt_device_t *device(rt_registry_t *reg, const char *name) {
    rt_device_t *d = rt_registry_device_by_name(reg, name);
    if (d == NULL) fail_msg("no device %s", name);
    return d;
}


//===--- running the model ---===//

/* How one run is set up; zero fields are the defaults. */
typedef struct run_cfg {
    const rtm_model_params_t *mp; /* registry and devices */
    int32_t n_threads, n_batch;
    bool logits_all;
    bool mock;                    /* record the mock GPUs' allocated bytes */
} run_cfg_t;

typedef struct run_out {
    rtm_token_t tokens[N_GEN];
    float *logits0;               /* n_vocab logits after the prompt */
    int32_t n_prompt;
    rtm_context_stats_t before, after; /* stats after creation and after the run */
    uint64_t mock_before, mock_after;  /* bytes the mock GPUs hold, likewise */
} run_out_t;

static uint64_t mock_allocated(void) {
    mockgpu_counters_t c;
    uint64_t sum = 0;
    for (uint32_t d = 0; tu_mock_counters()->get(d, &c); d++) sum += c.allocated;
    return sum;
}

static rtm_model_t *load_model(const rtm_model_params_t *mp) {
    char path[1024];
    rtm_model_t *m = NULL;
    if (rtm_model_load(tu_model_path(MODEL, path, sizeof path), mp, &m) != RT_OK)
        fail_msg("%s: %s", path, rtm_last_error());
    return m;
}

static int32_t tokenize_prompt(const rtm_model_t *m, rtm_token_t *t, int32_t n_max) {
    int32_t n = 0;
    assert_int_equal(rtm_vocab_tokenize(rtm_model_vocab(m), PROMPT, strlen(PROMPT), true, false,
                                        t, n_max, &n), RT_OK);
    return n;
}

static void stats(const rtm_context_t *c, rtm_context_stats_t *s) {
    s->struct_size = sizeof *s;
    assert_int_equal(rtm_context_get_stats(c, s), RT_OK);
}

/* The prompt, then N_GEN greedy tokens. */
static void greedy_run(rtm_model_t *m, const run_cfg_t *cfg, run_out_t *out) {
    const rtm_context_params_t cp = {.struct_size = sizeof cp, .n_ctx = 256, .n_batch = cfg->n_batch,
                                     .n_threads = cfg->n_threads, .logits_all = cfg->logits_all};
    rtm_context_t *c = NULL;
    rtm_sampler_t *s = NULL;
    rtm_token_t t[64];
    if (rtm_context_create(m, &cp, &c) != RT_OK) fail_msg("rtm_context_create: %s", rtm_last_error());
    assert_int_equal(rtm_sampler_create(NULL, &s), RT_OK);
    stats(c, &out->before);
    if (cfg->mock) out->mock_before = mock_allocated();
    out->n_prompt = tokenize_prompt(m, t, 64);
    const int32_t n_vocab = rtm_model_n_vocab(m);
    for (int32_t i = 0; i < N_GEN; i++) {
        if (rtm_decode(c, i == 0 ? t : &out->tokens[i - 1], i == 0 ? out->n_prompt : 1) != RT_OK)
            fail_msg("rtm_decode: %s", rtm_last_error());
        if (i == 0) {
            out->logits0 = malloc((size_t)n_vocab * sizeof(float));
            memcpy(out->logits0, rtm_get_logits(c), (size_t)n_vocab * sizeof(float));
        }
        out->tokens[i] = rtm_sampler_sample(s, rtm_get_logits(c), n_vocab);
    }
    stats(c, &out->after);
    if (cfg->mock) out->mock_after = mock_allocated();
    rtm_sampler_destroy(s);
    rtm_context_destroy(c);
}

static void run_free(run_out_t *r) { free(r->logits0); }

/* Same tokens, logits within TOL_SAME_MODEL; `what` names the check. */
static void expect_same(const run_out_t *a, const run_out_t *b, int32_t n_vocab, const char *what) {
    for (int i = 0; i < N_GEN; i++)
        if (a->tokens[i] != b->tokens[i])
            fail_msg("%s: token %d is %d, not %d", what, i, b->tokens[i], a->tokens[i]);
    const double e = tu_nmse_error_f32(a->logits0, b->logits0, (size_t)n_vocab);
    if (!(e <= TOL_SAME_MODEL)) fail_msg("%s: logits differ by %.3g (> %g)", what, e, TOL_SAME_MODEL);
    print_message("%s: same %d tokens, logits within %.3g\n", what, N_GEN, e);
}

/* Decoding allocated nothing: no reserve after the three of creation, and
 * the compute buffers never changed size. */
static void expect_no_realloc(const run_out_t *r, const char *what) {
    if (r->before.n_reserves != 3 || r->after.n_reserves != 3)
        fail_msg("%s: %d then %d reserves, expected 3", what, r->before.n_reserves, r->after.n_reserves);
    if (r->after.compute_bytes_changes != 0 || r->after.compute_bytes != r->before.compute_bytes)
        fail_msg("%s: compute buffers went from %llu to %llu bytes (%llu changes)", what,
                 (unsigned long long)r->before.compute_bytes, (unsigned long long)r->after.compute_bytes,
                 (unsigned long long)r->after.compute_bytes_changes);
    if (r->after.n_graphs < N_GEN) fail_msg("%s: only %d graphs ran", what, r->after.n_graphs);
    if (r->mock_after != r->mock_before)
        fail_msg("%s: the mock GPUs went from %llu to %llu bytes allocated", what,
                 (unsigned long long)r->mock_before, (unsigned long long)r->mock_after);
}

//===--- model-1: loading through the mapping ---===//

static void test_load_mapped(void **state) {
    (void)state;
    rt_registry_t *reg = registry_open(0, NULL);
    rtm_model_params_t mp = {.struct_size = sizeof mp, .registry = reg, .no_progress = true};
    rtm_model_t *m = load_model(&mp);
    rtm_load_stats_t ls = {.struct_size = sizeof ls};
    assert_int_equal(rtm_model_get_load_stats(m, &ls), RT_OK);
    /* model-1.1: the architecture and shape the file says. */
    assert_string_equal(rtm_model_arch(m), "llama");
    assert_int_equal(rtm_model_n_layer(m), 5);
    assert_int_equal(rtm_model_n_embd(m), 64);
    assert_int_equal(rtm_model_n_vocab(m), 512);
    assert_int_equal(ls.n_tensors, 48);
    /* model-1.2: every weight used in place from the mapping, none copied. */
    assert_int_equal(ls.bytes_weights, 1171200);
    assert_int_equal(ls.bytes_mapped, 1171200);
    assert_int_equal(ls.bytes_copied, 0);
    for (int32_t il = -1; il <= 5; il++) assert_ptr_equal(rtm_model_layer_device(m, il), device(reg, "cpu0"));
    rtm_model_destroy(m);
    /* model-1.3: with no_mmap every byte is copied, and the output is the same. */
    mp.no_mmap = true;
    m = load_model(&mp);
    assert_int_equal(rtm_model_get_load_stats(m, &ls), RT_OK);
    assert_int_equal(ls.bytes_mapped, 0);
    assert_int_equal(ls.bytes_copied, 1171200);
    rtm_model_destroy(m);
    rt_registry_destroy(reg);
}

//===--- model-2: the same output however the work is cut ---===//

static void test_deterministic_cpu(void **state) {
    (void)state;
    rt_registry_t *reg = registry_open(0, NULL);
    const rtm_model_params_t mp = {.struct_size = sizeof mp, .registry = reg, .no_progress = true};
    rtm_model_t *m = load_model(&mp);
    const int32_t n_vocab = rtm_model_n_vocab(m);
    run_out_t base = {0}, r = {0};
    greedy_run(m, &(run_cfg_t){.mp = &mp, .n_threads = 1, .n_batch = 32}, &base);
    expect_no_realloc(&base, "model-2.1");
    /* model-2.2: again, identical. */
    greedy_run(m, &(run_cfg_t){.mp = &mp, .n_threads = 1, .n_batch = 32}, &r);
    expect_same(&base, &r, n_vocab, "model-2.2 (second run)");
    run_free(&r);
    /* model-2.3: 2 and 3 threads. */
    for (int32_t th = 2; th <= 3; th++) {
        memset(&r, 0, sizeof r);
        greedy_run(m, &(run_cfg_t){.mp = &mp, .n_threads = th, .n_batch = 32}, &r);
        expect_same(&base, &r, n_vocab, th == 2 ? "model-2.3 (2 threads)" : "model-2.3 (3 threads)");
        run_free(&r);
    }
    /* model-2.4: ubatches of 1 and 7 tokens (the prompt has more than 7). */
    const int32_t batches[] = {1, 7};
    for (int i = 0; i < 2; i++) {
        memset(&r, 0, sizeof r);
        greedy_run(m, &(run_cfg_t){.mp = &mp, .n_threads = 2, .n_batch = batches[i]}, &r);
        assert_true(r.n_prompt > 7);
        expect_same(&base, &r, n_vocab, i == 0 ? "model-2.4 (n_batch 1)" : "model-2.4 (n_batch 7)");
        expect_no_realloc(&r, "model-2.4");
        run_free(&r);
    }
    run_free(&base);
    rtm_model_destroy(m);
    rt_registry_destroy(reg);
}

/* The CPU-only run of the split tests' baseline, in their registry. */
static void cpu_baseline(rt_registry_t *reg, run_out_t *base) {
    rt_device_t *cpu = device(reg, "cpu0");
    const rtm_model_params_t mp = {.struct_size = sizeof mp, .registry = reg, .devices = &cpu,
                                   .n_devices = 1, .no_progress = true};
    rtm_model_t *m = load_model(&mp);
    greedy_run(m, &(run_cfg_t){.mp = &mp, .n_batch = 7}, base);
    rtm_model_destroy(m);
}

static void test_split_devices(void **state) {
    (void)state;
    rt_registry_t *reg = registry_open(2, "1G");
    run_out_t base = {0}, r = {0};
    cpu_baseline(reg, &base);
    /* model-2.5: the last 3 layers on mockgpu0, the rest on the CPU. */
    rt_device_t *devs[] = {device(reg, "mockgpu0"), device(reg, "cpu0")};
    rtm_model_params_t mp = {.struct_size = sizeof mp, .registry = reg, .devices = devs,
                             .n_devices = 2, .split = RTM_SPLIT_N_GPU_LAYERS, .n_gpu_layers = 3,
                             .no_progress = true};
    rtm_model_t *m = load_model(&mp);
    assert_ptr_equal(rtm_model_layer_device(m, 1), devs[1]);
    assert_ptr_equal(rtm_model_layer_device(m, 2), devs[0]);
    assert_ptr_equal(rtm_model_layer_device(m, 5), devs[0]);
    tu_mock_counters()->reset();
    greedy_run(m, &(run_cfg_t){.mp = &mp, .n_batch = 7, .mock = true}, &r);
    assert_true(r.mock_before > 0);
    mockgpu_counters_t mc;
    assert_true(tu_mock_counters()->get(0, &mc));
    assert_true(mc.n_graphs >= N_GEN); /* the GPU part really ran on the mock */
    expect_same(&base, &r, rtm_model_n_vocab(m), "model-2.5 (cpu + mockgpu0)");
    /* model-2.6: a split graph allocates nothing per step either. */
    expect_no_realloc(&r, "model-2.6");
    assert_true(r.after.tg_splits >= 2);
    print_message("model-2.6: %d splits per token, %d copies, %llu bytes copied into mockgpu0, "
                  "%llu graphs run there\n", r.after.tg_splits, r.after.n_copies,
                  (unsigned long long)mc.bytes_in, (unsigned long long)mc.n_graphs);
    run_free(&r);
    rtm_model_destroy(m);
    /* model-2.7: automatic split over both mock GPUs (the CPU only stages inputs). */
    rt_device_t *gpus[] = {device(reg, "mockgpu0"), device(reg, "mockgpu1")};
    mp = (rtm_model_params_t){.struct_size = sizeof mp, .registry = reg, .devices = gpus,
                              .n_devices = 2, .no_progress = true};
    m = load_model(&mp);
    assert_ptr_equal(rtm_model_layer_device(m, 0), gpus[0]);
    assert_ptr_equal(rtm_model_layer_device(m, 4), gpus[1]);
    memset(&r, 0, sizeof r);
    greedy_run(m, &(run_cfg_t){.mp = &mp, .n_batch = 32, .mock = true}, &r);
    expect_same(&base, &r, rtm_model_n_vocab(m), "model-2.7 (mockgpu0 + mockgpu1)");
    expect_no_realloc(&r, "model-2.7");
    run_free(&r);
    rtm_model_destroy(m);
    run_free(&base);
    rt_registry_destroy(reg);
}

//===--- model-3: an independent forward pass in double ---===//

/* The model as the file has it: pointers to F32 data in the mapping. */
typedef struct ref_model {
    int n_embd, n_layer, n_ff, n_head, n_head_kv, hd, n_rot, n_vocab;
    double eps, base;
    const float *emb, *out_norm, *out;
} ref_model_t;

static const float *ref_tensor(const rt_gguf_t *g, const char *name) {
    rt_gguf_tensor_info_t ti = {.struct_size = sizeof ti};
    assert_int_equal(rt_gguf_get_tensor_info(g, rt_gguf_find_tensor(g, name), &ti), RT_OK);
    assert_int_equal(ti.type, RT_TYPE_F32);
    return ti.data;
}

static const float *ref_layer(const rt_gguf_t *g, int il, const char *what) {
    char name[64];
    snprintf(name, sizeof name, "blk.%d.%s.weight", il, what);
    return ref_tensor(g, name);
}

static int ref_u32(const rt_gguf_t *g, const char *key) {
    uint32_t v = 0;
    assert_int_equal(rt_gguf_get_u32(g, key, &v), RT_OK);
    return (int)v;
}

static void ref_read(const rt_gguf_t *g, ref_model_t *r) {
    float eps = 0;
    r->n_embd = ref_u32(g, "llama.embedding_length");
    r->n_layer = ref_u32(g, "llama.block_count");
    r->n_ff = ref_u32(g, "llama.feed_forward_length");
    r->n_head = ref_u32(g, "llama.attention.head_count");
    r->n_head_kv = ref_u32(g, "llama.attention.head_count_kv");
    r->n_rot = ref_u32(g, "llama.rope.dimension_count");
    assert_int_equal(rt_gguf_get_f32(g, "llama.attention.layer_norm_rms_epsilon", &eps), RT_OK);
    r->eps = eps;
    r->base = 10000.0; /* the file has no llama.rope.freq_base */
    r->hd = r->n_embd / r->n_head;
    r->n_vocab = 512;
    r->emb = ref_tensor(g, "token_embd.weight");
    r->out_norm = ref_tensor(g, "output_norm.weight");
    r->out = ref_tensor(g, "output.weight");
}

/* y[o] = sum_i w[o][i] x[i]: rows of n_in, as GGUF stores {n_in, n_out}. */
static void matvec(const float *w, const double *x, int n_in, int n_out, double *y) {
    for (int o = 0; o < n_out; o++) {
        double s = 0;
        for (int i = 0; i < n_in; i++) s += (double)w[(size_t)o * n_in + i] * x[i];
        y[o] = s;
    }
}

static void rmsnorm(const double *x, const float *w, int n, double eps, double *y) {
    double ss = 0;
    for (int i = 0; i < n; i++) ss += x[i] * x[i];
    const double k = 1.0 / sqrt(ss / n + eps);
    for (int i = 0; i < n; i++) y[i] = x[i] * k * w[i];
}

/* Rope in NORMAL mode on each head of x: pairs (2i, 2i+1) turn by
 * pos * base^(-2i/n_rot). */
static void ref_rope(const ref_model_t *r, double *x, int n_heads, int pos) {
    for (int h = 0; h < n_heads; h++)
        for (int i = 0; i < r->n_rot / 2; i++) {
            const double th = pos * pow(r->base, -2.0 * i / r->n_rot);
            double *p = x + h * r->hd + 2 * i;
            const double a = p[0], b = p[1];
            p[0] = a * cos(th) - b * sin(th);
            p[1] = a * sin(th) + b * cos(th);
        }
}

/* Causal attention of token t over the cached keys/values 0..t; query
 * head h uses KV head h / (n_head / n_head_kv). */
static void ref_attend(const ref_model_t *r, const double *q, const double *kc, const double *vc,
                       int t, double *out) {
    const int ekv = r->hd * r->n_head_kv, group = r->n_head / r->n_head_kv;
    double *p = malloc((size_t)(t + 1) * sizeof p[0]);
    for (int h = 0; h < r->n_head; h++) {
        const int hk = h / group;
        double mx = -INFINITY, sum = 0;
        for (int j = 0; j <= t; j++) {
            double s = 0;
            for (int d = 0; d < r->hd; d++) s += q[h * r->hd + d] * kc[(size_t)j * ekv + hk * r->hd + d];
            p[j] = s / sqrt((double)r->hd);
            mx = fmax(mx, p[j]);
        }
        for (int j = 0; j <= t; j++) sum += p[j] = exp(p[j] - mx);
        for (int d = 0; d < r->hd; d++) {
            double o = 0;
            for (int j = 0; j <= t; j++) o += p[j] / sum * vc[(size_t)j * ekv + hk * r->hd + d];
            out[h * r->hd + d] = o;
        }
    }
    free(p);
}

/* Scratch of one token's forward pass. */
typedef struct ref_buf {
    double *x, *n, *q, *k, *v, *a, *o, *g, *u;
} ref_buf_t;

static void ref_block(const rt_gguf_t *gg, const ref_model_t *r, int il, int t, double *kc,
                      double *vc, ref_buf_t *b) {
    const int e = r->n_embd, ekv = r->hd * r->n_head_kv;
    rmsnorm(b->x, ref_layer(gg, il, "attn_norm"), e, r->eps, b->n);
    matvec(ref_layer(gg, il, "attn_q"), b->n, e, e, b->q);
    matvec(ref_layer(gg, il, "attn_k"), b->n, e, ekv, b->k);
    matvec(ref_layer(gg, il, "attn_v"), b->n, e, ekv, b->v);
    ref_rope(r, b->q, r->n_head, t);
    ref_rope(r, b->k, r->n_head_kv, t);
    memcpy(kc + (size_t)t * ekv, b->k, (size_t)ekv * sizeof(double));
    memcpy(vc + (size_t)t * ekv, b->v, (size_t)ekv * sizeof(double));
    ref_attend(r, b->q, kc, vc, t, b->a);
    matvec(ref_layer(gg, il, "attn_output"), b->a, e, e, b->o);
    for (int i = 0; i < e; i++) b->x[i] += b->o[i];
    rmsnorm(b->x, ref_layer(gg, il, "ffn_norm"), e, r->eps, b->n);
    matvec(ref_layer(gg, il, "ffn_gate"), b->n, e, r->n_ff, b->g);
    matvec(ref_layer(gg, il, "ffn_up"), b->n, e, r->n_ff, b->u);
    for (int i = 0; i < r->n_ff; i++) b->g[i] = b->g[i] / (1.0 + exp(-b->g[i])) * b->u[i];
    matvec(ref_layer(gg, il, "ffn_down"), b->g, r->n_ff, e, b->o);
    for (int i = 0; i < e; i++) b->x[i] += b->o[i];
}

/* Logits (n_vocab each) of every one of the n tokens. */
static void ref_forward(const rt_gguf_t *gg, const rtm_token_t *tok, int n, double *logits) {
    ref_model_t r;
    ref_read(gg, &r);
    const int e = r.n_embd, ekv = r.hd * r.n_head_kv, w = r.n_ff > e ? r.n_ff : e;
    double *kc = calloc((size_t)r.n_layer * n * ekv, sizeof(double));
    double *vc = calloc((size_t)r.n_layer * n * ekv, sizeof(double));
    double *mem = calloc(9 * (size_t)w, sizeof(double));
    ref_buf_t b = {mem, mem + w, mem + 2 * w, mem + 3 * w, mem + 4 * w, mem + 5 * w, mem + 6 * w,
                   mem + 7 * w, mem + 8 * w};
    for (int t = 0; t < n; t++) {
        for (int i = 0; i < e; i++) b.x[i] = r.emb[(size_t)tok[t] * e + i];
        for (int il = 0; il < r.n_layer; il++)
            ref_block(gg, &r, il, t, kc + (size_t)il * n * ekv, vc + (size_t)il * n * ekv, &b);
        rmsnorm(b.x, r.out_norm, e, r.eps, b.n);
        matvec(r.out, b.n, e, r.n_vocab, logits + (size_t)t * r.n_vocab);
    }
    free(kc);
    free(vc);
    free(mem);
}

static void test_reference(void **state) {
    (void)state;
    char path[1024];
    rt_gguf_t *g = NULL;
    assert_int_equal(rt_gguf_open(tu_model_path(MODEL, path, sizeof path), NULL, &g), RT_OK);
    rt_registry_t *reg = registry_open(0, NULL);
    const rtm_model_params_t mp = {.struct_size = sizeof mp, .registry = reg, .no_progress = true};
    rtm_model_t *m = load_model(&mp);
    const rtm_context_params_t cp = {.struct_size = sizeof cp, .n_ctx = 64, .n_batch = 4,
                                     .logits_all = true};
    rtm_context_t *c = NULL;
    assert_int_equal(rtm_context_create(m, &cp, &c), RT_OK);
    rtm_token_t t[64];
    const int32_t n = tokenize_prompt(m, t, 64), n_vocab = rtm_model_n_vocab(m);
    assert_int_equal(rtm_decode(c, t, n), RT_OK);
    double *ref = malloc((size_t)n * n_vocab * sizeof ref[0]);
    ref_forward(g, t, n, ref);
    /* model-3.1: the first step's logits (the prompt's last token) ... */
    double e = tu_nmse_error(ref + (size_t)(n - 1) * n_vocab, rtm_get_logits(c), (size_t)n_vocab);
    if (!(e <= TOL_REFERENCE)) fail_msg("model-3.1: logits differ from the reference by %.3g", e);
    print_message("model-3.1: first step's logits within %.3g of the reference\n", e);
    /* model-3.2: ... and every prompt position's, across ubatches of 4. */
    double worst = 0;
    for (int32_t i = 0; i < n; i++) {
        e = tu_nmse_error(ref + (size_t)i * n_vocab, rtm_get_logits_ith(c, i), (size_t)n_vocab);
        if (!(e <= TOL_REFERENCE)) fail_msg("model-3.2: position %d differs by %.3g", i, e);
        worst = e > worst ? e : worst;
    }
    print_message("model-3.2: %d prompt positions within %.3g\n", n, worst);
    free(ref);
    rtm_context_destroy(c);
    rtm_model_destroy(m);
    rt_registry_destroy(reg);
    rt_gguf_destroy(g);
}

//===--- model-4: sampling ---===//

static void sample_n(const float *logits, const rtm_sampler_params_t *p, rtm_token_t *out, int n) {
    rtm_sampler_t *s = NULL;
    assert_int_equal(rtm_sampler_create(p, &s), RT_OK);
    for (int i = 0; i < n; i++) out[i] = rtm_sampler_sample(s, logits, 512);
    rtm_sampler_destroy(s);
}

static void test_sampling(void **state) {
    (void)state;
    float logits[512];
    tu_seed(7);
    tu_fill(logits, 512, -2.0f, 2.0f);
    rtm_token_t a[16], b[16];
    int best = 0;
    for (int i = 1; i < 512; i++) best = logits[i] > logits[best] ? i : best;
    /* model-4.1: greedy and top-k 1 both take the largest logit. */
    sample_n(logits, NULL, a, 1);
    assert_int_equal(a[0], best);
    sample_n(logits, &(rtm_sampler_params_t){.struct_size = sizeof(rtm_sampler_params_t), .temp = 1.0f, .top_k = 1}, a, 1);
    assert_int_equal(a[0], best);
    /* model-4.2: the same seed draws the same tokens; another seed others. */
    const rtm_sampler_params_t p = {.struct_size = sizeof p, .temp = 1.0f, .seed = 42};
    sample_n(logits, &p, a, 16);
    sample_n(logits, &p, b, 16);
    assert_memory_equal(a, b, sizeof a);
    rtm_sampler_params_t q = p;
    q.seed = 43;
    sample_n(logits, &q, b, 16);
    assert_memory_not_equal(a, b, sizeof a);
    /* model-4.3: top-k 3 draws only among the 3 largest. */
    q = (rtm_sampler_params_t){.struct_size = sizeof q, .temp = 5.0f, .top_k = 3, .seed = 1};
    sample_n(logits, &q, a, 16);
    for (int i = 0; i < 16; i++) {
        int above = 0;
        for (int j = 0; j < 512; j++) above += logits[j] > logits[a[i]];
        assert_true(above < 3);
    }
    /* model-4.4: a tiny top-p keeps only the most likely token. */
    q = (rtm_sampler_params_t){.struct_size = sizeof q, .temp = 1.0f, .top_p = 1e-6f, .seed = 1};
    sample_n(logits, &q, a, 8);
    for (int i = 0; i < 8; i++) assert_int_equal(a[i], best);
}

//===--- model-5: what must fail, and how ---===//

static rt_status_t try_load(rt_registry_t *reg, const char *path, rtm_model_t **out) {
    const rtm_model_params_t mp = {.struct_size = sizeof mp, .registry = reg, .no_progress = true};
    return rtm_model_load(path, &mp, out);
}

static void expect_load_error(rt_registry_t *reg, const char *path, rt_status_t want,
                              const char *needle, const char *id) {
    rtm_model_t *m = NULL;
    const rt_status_t st = try_load(reg, path, &m);
    if (st != want) fail_msg("%s: %s gave %s (%s), expected %s", id, path, rt_status_name(st),
                             rtm_last_error(), rt_status_name(want));
    assert_null(m);
    if (strstr(rtm_last_error(), needle) == NULL || strchr(rtm_last_error(), '\n') != NULL)
        fail_msg("%s: message \"%s\" lacks \"%s\" or is not one line", id, rtm_last_error(), needle);
}

/* The model's first `keep` bytes in a temporary file. */
static void write_truncated(const char *dst, size_t keep) {
    char path[1024];
    size_t len = 0;
    FILE *f = fopen(tu_model_path(MODEL, path, sizeof path), "rb");
    assert_non_null(f);
    char *buf = malloc(keep);
    len = fread(buf, 1, keep, f);
    fclose(f);
    f = fopen(dst, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, len, f), len);
    fclose(f);
    free(buf);
}

static void write_arch(const char *dst, const char *arch) {
    rt_gguf_writer_t *w = NULL;
    const float x[4] = {1, 2, 3, 4};
    const int64_t ne[1] = {4};
    assert_int_equal(rt_gguf_writer_create(NULL, &w), RT_OK);
    assert_int_equal(rt_gguf_writer_set_str(w, "general.architecture", arch), RT_OK);
    assert_int_equal(rt_gguf_writer_add_tensor(w, "token_embd.weight", RT_TYPE_F32, 1, ne, x), RT_OK);
    assert_int_equal(rt_gguf_writer_write_file(w, dst), RT_OK);
    rt_gguf_writer_destroy(w);
}

static void test_bad_inputs(void **state) {
    (void)state;
    char dir[] = "/tmp/rt-test-model-XXXXXX", path[1024];
    assert_non_null(mkdtemp(dir));
    rt_registry_t *reg = registry_open(0, NULL);
    /* model-5.1: no such file. */
    snprintf(path, sizeof path, "%s/missing.gguf", dir);
    expect_load_error(reg, path, RT_ERR_NOT_FOUND, "missing.gguf", "model-5.1");
    /* model-5.2: the model cut short, in its header and in its data. */
    snprintf(path, sizeof path, "%s/truncated.gguf", dir);
    write_truncated(path, 5000);
    expect_load_error(reg, path, RT_ERR_FORMAT, "truncated.gguf", "model-5.2");
    write_truncated(path, 600000);
    expect_load_error(reg, path, RT_ERR_FORMAT, "truncated.gguf", "model-5.2");
    unlink(path);
    /* model-5.3: an architecture we do not know. */
    snprintf(path, sizeof path, "%s/arch.gguf", dir);
    write_arch(path, "mamba");
    expect_load_error(reg, path, RT_ERR_UNSUPPORTED, "unknown architecture 'mamba'", "model-5.3");
    unlink(path);
    /* model-5.4: a vocabulary without weights is not a model. */
    expect_load_error(reg, tu_model_path("ggml-vocab-llama-spm.gguf", path, sizeof path), RT_ERR_FORMAT,
                      "token_embd.weight", "model-5.4");
    rt_registry_destroy(reg);
    rmdir(dir);
}

static void test_too_large(void **state) {
    (void)state;
    char path[1024];
    rt_registry_t *reg = registry_open(2, "256K");
    rt_device_t *gpus[] = {device(reg, "mockgpu0"), device(reg, "mockgpu1")};
    rtm_model_params_t mp = {.struct_size = sizeof mp, .registry = reg, .devices = gpus,
                             .n_devices = 2, .n_ctx = 64, .no_progress = true};
    rtm_model_t *m = NULL;
    /* model-5.5: 1.1 MiB of weights on two GPUs of 256 KiB. */
    assert_int_equal(rtm_model_load(tu_model_path(MODEL, path, sizeof path), &mp, &m), RT_ERR_OUT_OF_MEMORY);
    assert_null(m);
    assert_non_null(strstr(rtm_last_error(), "larger than"));
    /* model-5.6: asked to put every layer on one of them, the same. */
    mp.split = RTM_SPLIT_N_GPU_LAYERS;
    mp.n_gpu_layers = -1;
    assert_int_equal(rtm_model_load(path, &mp, &m), RT_ERR_OUT_OF_MEMORY);
    rt_registry_destroy(reg);
}

static void test_decode_errors(void **state) {
    (void)state;
    rt_registry_t *reg = registry_open(0, NULL);
    const rtm_model_params_t mp = {.struct_size = sizeof mp, .registry = reg, .no_progress = true};
    rtm_model_t *m = load_model(&mp);
    const rtm_context_params_t cp = {.struct_size = sizeof cp, .n_ctx = 8, .n_batch = 4};
    rtm_context_t *c = NULL;
    assert_int_equal(rtm_context_create(m, &cp, &c), RT_OK);
    rtm_token_t t[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    /* model-5.7: a token out of range, or none. */
    rtm_token_t bad = 512;
    assert_int_equal(rtm_decode(c, &bad, 1), RT_ERR_INVALID_ARGUMENT);
    assert_int_equal(rtm_decode(c, t, 0), RT_ERR_INVALID_ARGUMENT);
    assert_null(rtm_get_logits(c));
    /* model-5.8: more tokens than the context holds; nothing runs. */
    assert_int_equal(rtm_decode(c, t, 9), RT_ERR_DOES_NOT_FIT);
    assert_int_equal(rtm_context_n_past(c), 0);
    assert_int_equal(rtm_decode(c, t, 8), RT_OK);
    assert_int_equal(rtm_decode(c, t, 1), RT_ERR_DOES_NOT_FIT);
    rtm_context_clear(c);
    assert_int_equal(rtm_decode(c, t, 1), RT_OK);
    rtm_context_destroy(c);
    rtm_model_destroy(m);
    rt_registry_destroy(reg);
}

//===--- model-6: a small llama written here, and its malformed variants ---===//

/* What to break in the synthetic model. */
typedef enum {
    SYN_OK, SYN_BAD_SHAPE, SYN_BAD_TYPE, SYN_NO_EMBD_KEY, SYN_ROPE_FREQS, SYN_VOCAB_SIZE, SYN_YARN
} syn_break_t;

static void syn_tensor(rt_gguf_writer_t *w, const char *name, rt_type_t type, int64_t ne0, int64_t ne1) {
    const int64_t ne[2] = {ne0, ne1};
    assert_int_equal(rt_gguf_writer_add_tensor(w, name, type, ne1 ? 2 : 1, ne, NULL), RT_OK);
}

static void syn_layer(rt_gguf_writer_t *w, syn_break_t brk) {
    syn_tensor(w, "blk.0.attn_norm.weight", RT_TYPE_F32, 8, 0);
    syn_tensor(w, "blk.0.attn_q.weight", RT_TYPE_F32, 8, brk == SYN_BAD_SHAPE ? 4 : 8);
    syn_tensor(w, "blk.0.attn_k.weight", brk == SYN_BAD_TYPE ? RT_TYPE_I32 : RT_TYPE_F32, 8, 4);
    syn_tensor(w, "blk.0.attn_v.weight", RT_TYPE_F32, 8, 4);
    syn_tensor(w, "blk.0.attn_output.weight", RT_TYPE_F32, 8, 8);
    syn_tensor(w, "blk.0.ffn_norm.weight", RT_TYPE_F32, 8, 0);
    syn_tensor(w, "blk.0.ffn_gate.weight", RT_TYPE_F32, 8, 16);
    syn_tensor(w, "blk.0.ffn_up.weight", RT_TYPE_F32, 8, 16);
    syn_tensor(w, "blk.0.ffn_down.weight", RT_TYPE_F32, 16, 8);
}

/* One layer, n_embd 8, 2 heads sharing one KV head, 4 tokens, zero
 * weights, no output.weight (the output is token_embd, tied). */
static void write_synthetic(const char *path, syn_break_t brk) {
    const char *tokens[] = {"<unk>", "<s>", "</s>", "a"};
    rt_gguf_writer_t *w = NULL;
    assert_int_equal(rt_gguf_writer_create(NULL, &w), RT_OK);
    rt_gguf_writer_set_str(w, "general.architecture", "llama");
    if (brk != SYN_NO_EMBD_KEY) rt_gguf_writer_set_u32(w, "llama.embedding_length", 8);
    rt_gguf_writer_set_u32(w, "llama.block_count", 1);
    rt_gguf_writer_set_u32(w, "llama.feed_forward_length", 16);
    rt_gguf_writer_set_u32(w, "llama.attention.head_count", 2);
    rt_gguf_writer_set_u32(w, "llama.attention.head_count_kv", 1);
    if (brk == SYN_VOCAB_SIZE) rt_gguf_writer_set_u32(w, "llama.vocab_size", 5);
    if (brk == SYN_YARN) rt_gguf_writer_set_str(w, "llama.rope.scaling.type", "yarn");
    rt_gguf_writer_set_str(w, "tokenizer.ggml.model", "llama");
    rt_gguf_writer_set_array(w, "tokenizer.ggml.tokens", RT_GGUF_TYPE_STRING, tokens, 4);
    syn_tensor(w, "token_embd.weight", RT_TYPE_F32, 8, 4);
    syn_tensor(w, "output_norm.weight", RT_TYPE_F32, 8, 0);
    if (brk == SYN_ROPE_FREQS) syn_tensor(w, "rope_freqs.weight", RT_TYPE_F32, 3, 0); /* n_rot/2 is 2 */
    syn_layer(w, brk);
    assert_int_equal(rt_gguf_writer_write_file(w, path), RT_OK);
    rt_gguf_writer_destroy(w);
}

/* Loads the synthetic model with mp and decodes two tokens. */
static void run_synthetic(const char *path, const rtm_model_params_t *mp) {
    rtm_model_t *m = NULL;
    rtm_context_t *c = NULL;
    if (rtm_model_load(path, mp, &m) != RT_OK) fail_msg("synthetic: %s", rtm_last_error());
    assert_int_equal(rtm_model_n_vocab(m), 4);
    assert_int_equal(rtm_context_create(m, NULL, &c), RT_OK);
    assert_int_equal(rtm_context_n_ctx(c), 2048); /* no llama.context_length: llama.cpp's 2048 */
    const rtm_token_t t[2] = {1, 3};
    assert_int_equal(rtm_decode(c, t, 2), RT_OK);
    for (int i = 0; i < 4; i++) assert_true(rtm_get_logits(c)[i] == 0.0f); /* zero weights */
    rtm_context_destroy(c);
    rtm_model_destroy(m);
}

static void test_synthetic(void **state) {
    (void)state;
    char dir[] = "/tmp/rt-test-model-XXXXXX", path[1024];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/tiny.gguf", dir);
    /* model-6.1: a model with defaults for every optional key, tied output. */
    write_synthetic(path, SYN_OK);
    rt_registry_t *reg = registry_open(0, NULL);
    rtm_model_params_t mp = {.struct_size = sizeof mp, .registry = reg, .no_progress = true};
    run_synthetic(path, &mp);
    /* model-6.2: what the file gets wrong is named. */
    write_synthetic(path, SYN_BAD_SHAPE);
    expect_load_error(reg, path, RT_ERR_FORMAT, "blk.0.attn_q.weight", "model-6.2");
    write_synthetic(path, SYN_BAD_TYPE);
    expect_load_error(reg, path, RT_ERR_FORMAT, "blk.0.attn_k.weight is i32", "model-6.2");
    write_synthetic(path, SYN_NO_EMBD_KEY);
    expect_load_error(reg, path, RT_ERR_FORMAT, "llama.embedding_length", "model-6.2");
    /* model-6.4: what rt does not implement is refused by name, never run
     * wrong: rope factors of the wrong shape, yarn scaling. */
    write_synthetic(path, SYN_ROPE_FREQS);
    expect_load_error(reg, path, RT_ERR_UNSUPPORTED, "rope_freqs.weight is not F32 {2}", "model-6.4");
    write_synthetic(path, SYN_YARN);
    expect_load_error(reg, path, RT_ERR_UNSUPPORTED, "rope scaling 'yarn'", "model-6.4");
    /* model-6.5: llama.vocab_size must be token_embd's rows. */
    write_synthetic(path, SYN_VOCAB_SIZE);
    expect_load_error(reg, path, RT_ERR_FORMAT, "llama.vocab_size is 5", "model-6.5");
    rt_registry_destroy(reg);
    /* model-6.3: the tied output on a GPU while the input stays on the CPU. */
    write_synthetic(path, SYN_OK);
    reg = registry_open(1, "1G");
    mp = (rtm_model_params_t){.struct_size = sizeof mp, .registry = reg, .no_progress = true,
                              .split = RTM_SPLIT_N_GPU_LAYERS, .n_gpu_layers = 1};
    run_synthetic(path, &mp);
    rt_registry_destroy(reg);
    unlink(path);
    rmdir(dir);
}

//===--- model-7: the Vulkan device, alone and split with the CPU ---===//

/* Against the CPU run: the shaders sum dot products and softmax in another
 * order (subgroup and workgroup reductions), so logits differ by rounding,
 * ~1e-7 normalised here; 1e-4 still catches any wrong op (~1e-1). */
#define TOL_VULKAN 1e-4

/* Like expect_same, with the looser bound of another device's kernels. */
static void expect_close(const run_out_t *a, const run_out_t *b, int32_t n_vocab, const char *what) {
    for (int i = 0; i < N_GEN; i++)
        if (a->tokens[i] != b->tokens[i])
            fail_msg("%s: token %d is %d, not %d", what, i, b->tokens[i], a->tokens[i]);
    const double e = tu_nmse_error_f32(a->logits0, b->logits0, (size_t)n_vocab);
    if (!(e <= TOL_VULKAN)) fail_msg("%s: logits differ by %.3g (> %g)", what, e, TOL_VULKAN);
    print_message("%s: same %d tokens, logits within %.3g\n", what, N_GEN, e);
}

/* Loads with the last n_gpu_layers of the 5 on vulkan0 (the rest and the
 * input on cpu0) and checks the run against base. */
static void vulkan_run(rt_registry_t *reg, int32_t n_gpu_layers, const run_out_t *base, const char *what) {
    rt_device_t *devs[] = {device(reg, "vulkan0"), device(reg, "cpu0")};
    const rtm_model_params_t mp = {.struct_size = sizeof mp, .registry = reg, .devices = devs,
                                   .n_devices = 2, .split = RTM_SPLIT_N_GPU_LAYERS,
                                   .n_gpu_layers = n_gpu_layers, .no_progress = true};
    rtm_model_t *m = load_model(&mp);
    const int32_t first_gpu = rtm_model_n_layer(m) - n_gpu_layers;
    assert_ptr_equal(rtm_model_layer_device(m, first_gpu), devs[0]);
    assert_ptr_equal(rtm_model_layer_device(m, rtm_model_n_layer(m)), devs[0]); /* the output */
    if (first_gpu > 0) assert_ptr_equal(rtm_model_layer_device(m, first_gpu - 1), devs[1]);
    run_out_t r = {0};
    greedy_run(m, &(run_cfg_t){.mp = &mp, .n_batch = 7}, &r);
    expect_close(base, &r, rtm_model_n_vocab(m), what);
    expect_no_realloc(&r, what);
    run_free(&r);
    rtm_model_destroy(m);
}

static void test_vulkan(void **state) {
    (void)state;
    /* model-7.0: a built plugin with no device is a failure, not a skip. */
    rt_registry_t *reg = tu_registry_vulkan("model-7.0");
    run_out_t base = {0};
    cpu_baseline(reg, &base);
    vulkan_run(reg, 5, &base, "model-7.1 (all layers on vulkan0)");
    vulkan_run(reg, 2, &base, "model-7.2 (2 layers on vulkan0, 3 on cpu0)");
    run_free(&base);
    rt_registry_destroy(reg);
}

//===--- model-8: decoding reuses its graph and allocates nothing ---===//

/* Every allocation the runtime and its plugins make through the registry. */
static size_t n_allocations;

static void *counting_realloc(void *user_data, void *ptr, size_t old_size, size_t new_size) {
    (void)user_data;
    (void)old_size;
    if (new_size == 0) {
        free(ptr);
        return NULL;
    }
    n_allocations++;
    return realloc(ptr, new_size);
}

#define N_REUSE_GEN 80 /* crosses two RTM_KV_PAD (32) boundaries after the prompt */

typedef struct reuse_run {
    rtm_token_t tokens[N_REUSE_GEN];
    float *logits;          /* after the last token */
    rtm_context_stats_t st;
} reuse_run_t;

/* The prompt, then N_REUSE_GEN greedy tokens; fails when a step that did
 * not build a graph allocated anything. */
static void reuse_run(rtm_model_t *m, bool no_reuse, reuse_run_t *r) {
    const rtm_context_params_t cp = {.struct_size = sizeof cp, .n_ctx = 256, .n_batch = 32,
                                     .no_graph_reuse = no_reuse};
    rtm_context_t *c = NULL;
    rtm_sampler_t *s = NULL;
    rtm_token_t prompt[64];
    assert_int_equal(rtm_context_create(m, &cp, &c), RT_OK);
    assert_int_equal(rtm_sampler_create(NULL, &s), RT_OK);
    const int32_t n_vocab = rtm_model_n_vocab(m), n_prompt = tokenize_prompt(m, prompt, 64);
    for (int32_t i = 0; i < N_REUSE_GEN; i++) {
        rtm_context_stats_t before;
        stats(c, &before);
        const size_t allocs = n_allocations;
        assert_int_equal(rtm_decode(c, i == 0 ? prompt : &r->tokens[i - 1], i == 0 ? n_prompt : 1), RT_OK);
        stats(c, &r->st);
        if (r->st.n_builds == before.n_builds && n_allocations != allocs)
            fail_msg("model-8.1: step %d reused its graph but made %zu allocations", i, n_allocations - allocs);
        r->tokens[i] = rtm_sampler_sample(s, rtm_get_logits(c), n_vocab);
    }
    r->logits = malloc((size_t)n_vocab * sizeof(float));
    memcpy(r->logits, rtm_get_logits(c), (size_t)n_vocab * sizeof(float));
    rtm_sampler_destroy(s);
    rtm_context_destroy(c);
}

static void test_graph_reuse(void **state) {
    (void)state;
    const rt_allocator_t counting = {counting_realloc, NULL};
    rt_registry_t *reg = registry_open_with(0, NULL, &counting);
    assert_true(n_allocations > 0); /* the counter sees the runtime's allocations */
    const rtm_model_params_t mp = {.struct_size = sizeof mp, .registry = reg, .no_progress = true};
    rtm_model_t *m = load_model(&mp);
    reuse_run_t reused = {0}, rebuilt = {0};
    reuse_run(m, false, &reused);
    reuse_run(m, true, &rebuilt);
    /* model-8.2: a graph per RTM_KV_PAD rows of the cache, not per token */
    if (reused.st.n_builds < 2 || reused.st.n_builds > 4)
        fail_msg("model-8.2: %d graphs built for %d runs", reused.st.n_builds, reused.st.n_graphs);
    assert_int_equal(rebuilt.st.n_builds, rebuilt.st.n_graphs); /* model-8.3 */
    assert_int_equal(reused.st.n_graphs, N_REUSE_GEN);
    /* model-8.4: the same tokens and bit-identical logits either way */
    assert_memory_equal(reused.tokens, rebuilt.tokens, sizeof reused.tokens);
    assert_memory_equal(reused.logits, rebuilt.logits, (size_t)rtm_model_n_vocab(m) * sizeof(float));
    print_message("model-8: %d tokens in %d graphs built (no reuse: %d), the same tokens and logits\n",
                  N_REUSE_GEN, reused.st.n_builds, rebuilt.st.n_builds);
    free(reused.logits);
    free(rebuilt.logits);
    rtm_model_destroy(m);
    rt_registry_destroy(reg);
}

//===--- model-9: quantised weights, repacked by the CPU plugin ---===//

/* stories260K with its matrices in type (tools/rt-quantize) at path. */
static void quantize_model(const char *path, const char *type) {
    char cmd[3 * PATH_MAX], src[PATH_MAX];
    int status = -1;
    snprintf(cmd, sizeof cmd, "%s/bin/rt-quantize %s %s %s", tu_build_dir_abs(),
             tu_model_path(MODEL, src, sizeof src), path, type);
    free(tu_run_capture(cmd, &status));
    if (status != 0) fail_msg("model-9: %s exited with %d", cmd, status);
}

static rtm_model_t *load_from(const char *path, rt_registry_t *reg, bool no_repack, rtm_load_stats_t *ls) {
    const rtm_model_params_t mp = {.struct_size = sizeof mp, .registry = reg, .no_progress = true,
                                   .no_repack = no_repack};
    rtm_model_t *m = NULL;
    if (rtm_model_load(path, &mp, &m) != RT_OK) fail_msg("%s: %s", path, rtm_last_error());
    ls->struct_size = sizeof *ls;
    assert_int_equal(rtm_model_get_load_stats(m, ls), RT_OK);
    return m;
}

/* Loaded with the CPU's weight buffer type and without, the same greedy
 * tokens and logits within TOL_SAME_MODEL (both quantise the activations
 * to Q8_0 and sum integer products; the repacked kernels add the blocks'
 * products in another order). */
static void repack_case(rt_registry_t *reg, const char *dir, const char *type) {
    char path[PATH_MAX + 32], what[64];
    snprintf(path, sizeof path, "%s/stories260K-%s.gguf", dir, type);
    quantize_model(path, type);
    rtm_load_stats_t with, without;
    rtm_model_t *mr = load_from(path, reg, false, &with), *mp = load_from(path, reg, true, &without);
    /* model-9.1: the 30 products' weights (not ffn_down: 172 columns) went into it */
    if (with.bytes_repacked == 0) fail_msg("model-9.1 (%s): no weight was repacked", type);
    assert_int_equal(without.bytes_repacked, 0);
    assert_int_equal(with.bytes_mapped + with.bytes_copied, without.bytes_mapped);
    run_out_t a = {0}, b = {0};
    greedy_run(mp, &(run_cfg_t){.n_batch = 32}, &a);
    greedy_run(mr, &(run_cfg_t){.n_batch = 32}, &b);
    snprintf(what, sizeof what, "model-9.2 (%s repacked)", type);
    expect_same(&a, &b, rtm_model_n_vocab(mr), what);
    run_free(&a);
    run_free(&b);
    rtm_model_destroy(mr);
    rtm_model_destroy(mp);
    unlink(path);
}

static void test_repacked_weights(void **state) {
    (void)state;
    char dir[] = "/tmp/rt-test-model-XXXXXX";
    assert_non_null(mkdtemp(dir));
    rt_registry_t *reg = registry_open(0, NULL);
    bool offered = false;
    rt_device_t *cpu = device(reg, "cpu0");
    for (int32_t i = 0; i < rt_device_buffer_type_count(cpu); i++)
        offered |= rt_buffer_type_is_weights(rt_device_buffer_type(cpu, i));
    assert_true(offered); /* model-9.0: the CPU plugin has a weight buffer type */
    repack_case(reg, dir, "q8_0");
    repack_case(reg, dir, "q4_0");
    rt_registry_destroy(reg);
    rmdir(dir);
}

//===--- model-10: a decoder's final hidden state (embeddings contexts) ---===//

/* Every token's hidden state of an embeddings context, with n_batch 4 so
 * that the prompt takes several ubatches. */
static rtm_context_t *embeddings_context(rtm_model_t *m, rtm_pooling_t pooling) {
    const rtm_context_params_t cp = {.struct_size = sizeof cp, .n_ctx = 64, .n_batch = 4,
                                     .embeddings = true, .pooling = pooling};
    rtm_context_t *c = NULL;
    if (rtm_context_create(m, &cp, &c) != RT_OK) fail_msg("model-10: %s", rtm_last_error());
    return c;
}

/* |pooled - normalise(sum of rows [first, n) of c's states)|, largest component. */
static double pool_error(const rtm_context_t *c, int32_t first, int32_t n, int32_t n_embd) {
    double sum[256] = {0}, norm = 0, worst = 0;
    assert_true(n_embd <= 256);
    for (int32_t i = first; i < n; i++)
        for (int32_t k = 0; k < n_embd; k++) sum[k] += rtm_get_embeddings_ith(c, i)[k];
    for (int32_t k = 0; k < n_embd; k++) norm += sum[k] * sum[k];
    for (int32_t k = 0; k < n_embd; k++) {
        const double d = fabs(sum[k] / sqrt(norm) - rtm_get_embeddings(c)[k]);
        worst = d > worst ? d : worst;
    }
    return worst;
}

static void test_hidden_state(void **state) {
    (void)state;
    char path[1024];
    rt_gguf_t *g = NULL;
    assert_int_equal(rt_gguf_open(tu_model_path(MODEL, path, sizeof path), NULL, &g), RT_OK);
    ref_model_t r;
    ref_read(g, &r);
    rt_registry_t *reg = registry_open(0, NULL);
    const rtm_model_params_t mp = {.struct_size = sizeof mp, .registry = reg, .no_progress = true};
    rtm_model_t *m = load_model(&mp);
    const rtm_context_params_t lp = {.struct_size = sizeof lp, .n_ctx = 64, .n_batch = 4, .logits_all = true};
    rtm_context_t *cl = NULL, *ce = embeddings_context(m, RTM_POOLING_DEFAULT);
    assert_int_equal(rtm_context_create(m, &lp, &cl), RT_OK);
    rtm_token_t t[64];
    const int32_t n = tokenize_prompt(m, t, 64), n_embd = rtm_model_n_embd(m);
    assert_int_equal(rtm_decode(cl, t, n), RT_OK);
    assert_int_equal(rtm_decode(ce, t, n), RT_OK);
    /* model-10.1: each token's hidden state times the output matrix is its logits */
    double *h = malloc((size_t)n_embd * sizeof h[0]), *y = malloc((size_t)r.n_vocab * sizeof y[0]), worst = 0;
    for (int32_t i = 0; i < n; i++) {
        for (int32_t k = 0; k < n_embd; k++) h[k] = rtm_get_embeddings_ith(ce, i)[k];
        matvec(r.out, h, n_embd, r.n_vocab, y);
        const double e = tu_nmse_error(y, rtm_get_logits_ith(cl, i), (size_t)r.n_vocab);
        if (!(e <= TOL_SAME_MODEL))
            fail_msg("model-10.1: token %d: output . hidden differs from the logits by %.3g", i, e);
        worst = e > worst ? e : worst;
    }
    print_message("model-10.1: output . hidden = logits within %.3g at %d positions\n", worst, n);
    /* model-10.2: the default pooling is the mean of the tokens' states, of unit length */
    assert_int_equal(rtm_context_pooling(ce), RTM_POOLING_MEAN);
    double e = pool_error(ce, 0, n, n_embd);
    if (!(e <= 1e-6)) fail_msg("model-10.2: the mean pooling is off by %.3g", e);
    /* model-10.3: last pooling is the last token's state, normalised */
    rtm_context_t *cz = embeddings_context(m, RTM_POOLING_LAST);
    assert_int_equal(rtm_decode(cz, t, n), RT_OK);
    assert_int_equal(rtm_context_pooling(cz), RTM_POOLING_LAST);
    e = pool_error(cz, n - 1, n, n_embd);
    if (!(e <= 1e-6)) fail_msg("model-10.3: the last-token pooling is off by %.3g", e);
    /* model-10.4: what an embeddings context refuses, and what a logits one does not give */
    assert_null(rtm_get_logits(ce));
    assert_null(rtm_get_logits_ith(ce, 0));
    assert_null(rtm_get_embeddings_ith(ce, n));
    assert_null(rtm_get_embeddings(cl));
    assert_null(rtm_get_embeddings_ith(cl, 0));
    assert_int_equal(rtm_context_pooling(cl), RTM_POOLING_DEFAULT);
    const rtm_batch_t b = {sizeof b, 1, t, NULL, NULL};
    assert_int_equal(rtm_decode_batch(ce, &b), RT_ERR_INVALID_ARGUMENT);
    const rtm_context_params_t bad = {.struct_size = sizeof bad, .embeddings = true, .pooling = 3};
    rtm_context_t *cb = NULL;
    assert_int_equal(rtm_context_create(m, &bad, &cb), RT_ERR_INVALID_ARGUMENT);
    assert_null(cb);
    print_message("model-10.2-4: pooled mean and last agree with the states; refusals by status\n");
    free(h);
    free(y);
    rtm_context_destroy(cz);
    rtm_context_destroy(ce);
    rtm_context_destroy(cl);
    rtm_model_destroy(m);
    rt_registry_destroy(reg);
    rt_gguf_destroy(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_mapped),   cmocka_unit_test(test_deterministic_cpu),
        cmocka_unit_test(test_split_devices), cmocka_unit_test(test_reference),
        cmocka_unit_test(test_sampling),      cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_too_large),     cmocka_unit_test(test_decode_errors),
        cmocka_unit_test(test_synthetic),     cmocka_unit_test(test_vulkan),
        cmocka_unit_test(test_graph_reuse),   cmocka_unit_test(test_repacked_weights),
        cmocka_unit_test(test_hidden_state),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
