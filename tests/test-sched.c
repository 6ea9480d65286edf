/* SPDX-License-Identifier: MIT */
/* test-sched.c: the scheduler (rt_sched_t) and layer placement
 * (rt_placement_t) of abi/rt_sched.h, on the CPU plugin and the mockgpu
 * test plugin (tests/plugins/mockgpu), which has no GPU behind it.
 *
 * Each case that needs devices sets the mock's environment (device count,
 * memory, ops), opens a registry of its own over the mock and the CPU
 * plugin and destroys it at the end, so every configuration starts clean.
 * The mock's byte counters come from its vendor extension record, reached
 * by querying the already loaded plugin object again.
 *
 * The cases:
 *   sched-1  twelve nodes over a GPU and the CPU,
 *            passes 1 and 2 only, three splits and two copies.
 *   sched-2  a small transformer (rms_norm, mul_mat, rope, soft_max,
 *            swiglu, a KV cache per layer) placed by rt_placement over the
 *            CPU and two mock GPUs computes what the CPU alone computes,
 *            with the splits and copied bytes the placement implies.
 *   sched-3  an op the mock devices lack runs on the CPU.
 *   sched-4  a mock device too small for its compute buffer: reserve
 *            fails naming it and the bytes, placement re-plans, it runs.
 *   sched-5  pipeline copies: successive graphs use alternating input
 *            bytes and still compute the reference.
 *   sched-6  misuse: another graph while one is allocated.
 *   sched-7  weights no device can read, an op no device runs.
 *   place-1..6  placement rules on given memory sizes, no devices. */
#include "testutil.h"
#include "plugins/mockgpu/mockgpu.h"

#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOL 1e-6

//===--- devices ---===//

typedef struct env {
    rt_registry_t *reg;
    rt_device_t *cpu;
    rt_device_t *gpu[2];
    int n_gpus;
} env_t;


static void set_or_unset(const char *name, const char *value) {
    if (value != NULL) setenv(name, value, 1);
    else unsetenv(name);
}

/* A registry over cpu and n_gpus mock GPUs with `memory` (RT_MOCKGPU_MEMORY
 * syntax, NULL: default) and `ops` (NULL: all). */
static void env_open(env_t *e, int n_gpus, const char *memory, const char *ops) {
    char count[8], path[2 * PATH_MAX + 64];
    snprintf(count, sizeof count, "%d", n_gpus);
    setenv("RT_MOCKGPU_COUNT", count, 1);
    set_or_unset("RT_MOCKGPU_MEMORY", memory);
    set_or_unset("RT_MOCKGPU_OPS", ops);
    setenv("RT_PLUGINS", "cpu,mockgpu", 1);
    snprintf(path, sizeof path, "%s/tests/plugins/mockgpu:%s/lib/rt-plugins", tu_build_dir_abs(),
             tu_build_dir_abs());
    const rt_registry_options_t o = {.struct_size = sizeof o, .plugin_path = path};
    memset(e, 0, sizeof *e);
    assert_int_equal(rt_registry_create(&o, &e->reg), RT_OK);
    e->cpu = rt_registry_device_by_name(e->reg, "cpu0");
    assert_non_null(e->cpu);
    e->n_gpus = n_gpus;
    for (int i = 0; i < n_gpus; i++) {
        char name[32];
        snprintf(name, sizeof name, "mockgpu%d", i);
        e->gpu[i] = rt_registry_device_by_name(e->reg, name);
        assert_non_null(e->gpu[i]);
    }
}

static void env_close(env_t *e) {
    rt_registry_destroy(e->reg);
    e->reg = NULL;
}

/* The fixture of the sched tests: an env_t the test opens with the devices
 * it needs; the teardown closes it, also after a failed assertion. */
static int env_setup(void **state) {
    *state = calloc(1, sizeof(env_t));
    return *state != NULL ? 0 : -1;
}

static int env_teardown(void **state) {
    env_close(*state);
    free(*state);
    return 0;
}


static mockgpu_counters_t counters(uint32_t device) {
    mockgpu_counters_t c;
    assert_true(tu_mock_counters()->get(device, &c));
    return c;
}

static rt_sched_t *sched_new(rt_device_t *const *devs, int n, int n_copies) {
    const rt_sched_options_t o = {.struct_size = sizeof o, .devices = devs, .n_devices = n,
                                  .graph_size = 1024, .n_copies = n_copies};
    rt_sched_t *s = NULL;
    const rt_status_t st = rt_sched_create(&o, &s);
    if (st != RT_OK) fail_msg("rt_sched_create: %s", rt_last_error());
    return s;
}

static void fill_random(rt_tensor_t *t, uint64_t seed, float scale) {
    const size_t n = (size_t)rt_nelements(t);
    float *x = malloc(n * sizeof *x);
    tu_seed(seed);
    tu_fill(x, n, -scale, scale);
    assert_int_equal(rt_tensor_set(t, x, 0, n * sizeof *x), RT_OK);
    free(x);
}

static void expect_ok(rt_status_t st, const char *id) {
    if (st != RT_OK) fail_msg("%s: %s: %s", id, rt_status_name(st), rt_last_error());
}

static void write_stdout(const char *text, size_t len, void *user_data) {
    (void)user_data;
    fwrite(text, 1, len, stdout);
}

static void write_buf(const char *text, size_t len, void *user_data) {
    char *buf = user_data;
    const size_t have = strlen(buf);
    if (have + len < 4096) {
        memcpy(buf + have, text, len);
        buf[have + len] = 0;
    }
}

//===--- sched-1: twelve nodes, passes 1 and 2 (docs/memory.md §4) ---===//

enum { F16_N = 8 };

/* Twelve nodes: two CPU weights, then three GPU weights, then two CPU
 * weights; the nodes between take their device from pass 2. */
typedef struct fig16 {
    rt_context_t *wctx[2], *gctx;
    rt_buffer_t *wbuf[2];
    rt_tensor_t *w[7];  /* w0 b0 (cpu), w1 b1 w2 (gpu), w3 b3 (cpu) */
    rt_tensor_t *x, *node[12];
    rt_graph_t *g;
} fig16_t;

/* The weights marked GPU go to `gpu` (the CPU itself for the reference). */
static void fig16_weights(fig16_t *f, rt_device_t *cpu, rt_device_t *gpu) {
    static const int on_gpu[7] = {0, 0, 1, 1, 1, 0, 0};
    for (int i = 0; i < 2; i++) f->wctx[i] = tu_context(1, true);
    for (int i = 0; i < 7; i++) {
        rt_context_t *c = f->wctx[on_gpu[i]];
        f->w[i] = i == 1 || i == 3 || i == 6 ? rt_new_tensor_1d(c, RT_TYPE_F32, F16_N)
                                              : rt_new_tensor_2d(c, RT_TYPE_F32, F16_N, F16_N);
        rt_format_name(f->w[i], "w%d", i);
    }
    rt_device_t *devs[2] = {cpu, gpu};
    for (int i = 0; i < 2; i++)
        expect_ok(rt_alloc_ctx_tensors(f->wctx[i], rt_device_buffer_type(devs[i], 0), &f->wbuf[i]),
                  "sched-1.0");
    for (int i = 0; i < 7; i++) fill_random(f->w[i], 100 + (uint64_t)i, 0.5f);
}

static void fig16_graph(fig16_t *f) {
    rt_context_t *c = f->gctx = tu_context(1, true);
    rt_tensor_t **n = f->node, **w = f->w;
    f->x = rt_new_tensor_2d(c, RT_TYPE_F32, F16_N, 2);
    rt_set_input(f->x);
    n[0] = rt_mul_mat(c, w[0], f->x);
    n[1] = rt_add(c, n[0], w[1]);
    n[2] = rt_gelu(c, n[1]);
    n[3] = rt_scale(c, n[2], 0.5f);
    n[4] = rt_mul_mat(c, w[2], n[3]);
    n[5] = rt_add(c, n[4], w[3]);
    n[6] = rt_silu(c, n[5]);
    n[7] = rt_mul_mat(c, w[4], n[6]);
    n[8] = rt_rms_norm(c, n[7], 1e-5f);
    n[9] = rt_mul_mat(c, w[5], n[8]);
    n[10] = rt_add(c, n[9], w[6]);
    n[11] = rt_soft_max(c, n[10]);
    rt_set_output(n[11]);
    f->g = rt_graph_create(c, 64);
    rt_graph_build_forward_expand(f->g, n[11]);
    assert_int_equal(rt_graph_n_nodes(f->g), 12);
}

static void fig16_free(fig16_t *f) {
    rt_context_destroy(f->gctx);
    for (int i = 0; i < 2; i++) {
        rt_buffer_free(f->wbuf[i]);
        rt_context_destroy(f->wctx[i]);
    }
}

/* Runs f's graph on sched and returns its output. */
static void fig16_run(fig16_t *f, rt_sched_t *s, float *out) {
    float x[2 * F16_N];
    tu_seed(7);
    tu_fill(x, 2 * F16_N, -1, 1);
    expect_ok(rt_sched_alloc_graph(s, f->g), "sched-1.1");
    expect_ok(rt_tensor_set(f->x, x, 0, sizeof x), "sched-1.1");
    expect_ok(rt_sched_graph_compute(s, f->g), "sched-1.1");
    expect_ok(rt_tensor_get(f->node[11], out, 0, 2 * F16_N * sizeof *out), "sched-1.1");
}

static void test_figure16(void **state) {
    env_t *e = *state;
    env_open(e, 1, NULL, NULL);
    fig16_t f, r;
    fig16_weights(&f, e->cpu, e->gpu[0]);
    fig16_graph(&f);
    rt_device_t *devs[2] = {e->gpu[0], e->cpu};
    rt_sched_t *s = sched_new(devs, 2, 1);
    float got[2 * F16_N], ref[2 * F16_N];
    fig16_run(&f, s, got);
    /* sched-1.2: 1.wgt puts 0-1 and 9-10 on the CPU, 4, 5, 7 on the GPU;
     * 2.gpu-up takes 2-3, 2.gpu-down 6 and 8; 2.rest-down gives 11 the CPU */
    static const int want[12] = {1, 1, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1};
    for (int i = 0; i < 12; i++)
        if (rt_sched_get_tensor_device(s, f.node[i]) != devs[want[i]])
            fail_msg("sched-1.2: node %d runs on %s, expected %s", i,
                     rt_device_name(rt_sched_get_tensor_device(s, f.node[i])),
                     rt_device_name(devs[want[i]]));
    /* sched-1.3: splits cpu [0,1], gpu [2,8] (input n1), cpu [9,11] (input n8) */
    assert_int_equal(rt_sched_n_splits(s), 3);
    assert_int_equal(rt_sched_n_copies(s), 2);
    assert_int_equal(rt_sched_copy_bytes(s), 2 * 2 * F16_N * sizeof(float));
    char text[4096] = "";
    rt_sched_write_splits(s, write_buf, text);
    printf("%s", text);
    assert_non_null(strstr(text, "split 1: mockgpu0, nodes 2-8 (7 computed), 1 input"));
    assert_non_null(strstr(text, "split 2: cpu0, nodes 9-11 (3 computed), 1 input"));
    rt_sched_reset(s);
    /* sched-1.4: the same graph again: split the same way, same numbers */
    float again[2 * F16_N];
    fig16_run(&f, s, again);
    for (int i = 0; i < 12; i++) assert_ptr_equal(rt_sched_get_tensor_device(s, f.node[i]), devs[want[i]]);
    assert_int_equal(rt_sched_n_splits(s), 3);
    assert_memory_equal(got, again, sizeof got);
    rt_sched_reset(s);
    /* sched-1.5: the same numbers as the CPU alone */
    fig16_weights(&r, e->cpu, e->cpu);
    fig16_graph(&r);
    rt_sched_t *cpu = sched_new(&e->cpu, 1, 1);
    fig16_run(&r, cpu, ref);
    assert_int_equal(rt_sched_n_splits(cpu), 1);
    double rd[2 * F16_N];
    for (int i = 0; i < 2 * F16_N; i++) rd[i] = ref[i];
    assert_true(tu_nmse_error(rd, got, 2 * F16_N) <= TOL);
    rt_sched_reset(cpu);
    rt_sched_destroy(cpu);
    rt_sched_destroy(s);
    fig16_free(&r);
    fig16_free(&f);
}

//===--- a small transformer ---===//

enum { N_EMBD = 64, N_HEAD = 4, HEAD_DIM = 16, N_FF = 128, N_VOCAB = 96, N_TOK = 8, N_CTX = 16 };
enum { N_LAYER = 4, GROUP_INPUT = N_LAYER, GROUP_OUTPUT = N_LAYER + 1, N_GROUPS = N_LAYER + 2 };
enum { L_ATTN_NORM, L_WQ, L_WK, L_WV, L_WO, L_FFN_NORM, L_GATE, L_UP, L_DOWN, L_KC, L_VC, L_COUNT };

#define MOCK_ALIGN 256 /* the mock's buffer alignment, the largest of the devices' */

static const int64_t layer_ne[L_COUNT][2] = {
    {N_EMBD, 1}, {N_EMBD, N_EMBD}, {N_EMBD, N_EMBD}, {N_EMBD, N_EMBD}, {N_EMBD, N_EMBD},
    {N_EMBD, 1}, {N_EMBD, N_FF}, {N_EMBD, N_FF}, {N_FF, N_EMBD}, {N_EMBD, N_CTX}, {N_EMBD, N_CTX},
};

typedef struct model {
    rt_context_t *ctx[RT_SCHED_MAX_DEVICES]; /* weights of device i */
    rt_buffer_t *buf[RT_SCHED_MAX_DEVICES];
    rt_tensor_t *layer[N_LAYER][L_COUNT];
    rt_tensor_t *tok_embd, *out_norm, *w_out;
} model_t;

static uint64_t aligned(int64_t ne0, int64_t ne1) {
    const uint64_t n = (uint64_t)(ne0 * ne1) * sizeof(float);
    return (n + MOCK_ALIGN - 1) / MOCK_ALIGN * MOCK_ALIGN;
}

/* Bytes of a layer (weights and KV cache), the input and the output. */
static uint64_t layer_size(void) {
    uint64_t n = 0;
    for (int i = 0; i < L_COUNT; i++) n += aligned(layer_ne[i][0], layer_ne[i][1]);
    return n;
}
static uint64_t input_size(void) { return aligned(N_EMBD, N_VOCAB); }
static uint64_t output_size(void) { return aligned(N_EMBD, 1) + aligned(N_EMBD, N_VOCAB); }

static rt_tensor_t *weight(rt_context_t *c, int64_t ne0, int64_t ne1, const char *name, int il) {
    rt_tensor_t *t = ne1 == 1 ? rt_new_tensor_1d(c, RT_TYPE_F32, ne0)
                              : rt_new_tensor_2d(c, RT_TYPE_F32, ne0, ne1);
    return rt_format_name(t, "%s.%d", name, il);
}

static void model_tensors(model_t *m, const int32_t *group_device) {
    static const char *names[L_COUNT] = {"attn_norm", "wq", "wk", "wv", "wo", "ffn_norm",
                                         "gate", "up", "down", "k_cache", "v_cache"};
    for (int il = 0; il < N_LAYER; il++)
        for (int i = 0; i < L_COUNT; i++)
            m->layer[il][i] = weight(m->ctx[group_device[il]], layer_ne[i][0], layer_ne[i][1],
                                     names[i], il);
    m->tok_embd = weight(m->ctx[group_device[GROUP_INPUT]], N_EMBD, N_VOCAB, "tok_embd", 0);
    m->out_norm = weight(m->ctx[group_device[GROUP_OUTPUT]], N_EMBD, 1, "out_norm", 0);
    m->w_out = weight(m->ctx[group_device[GROUP_OUTPUT]], N_EMBD, N_VOCAB, "w_out", 0);
}

/* The same numbers whatever the placement: seeded by group and tensor. */
static void model_fill(model_t *m) {
    for (int il = 0; il < N_LAYER; il++) {
        for (int i = 0; i < L_COUNT; i++) {
            rt_tensor_t *t = m->layer[il][i];
            if (i == L_KC || i == L_VC) assert_int_equal(rt_tensor_memset(t, 0, 0, rt_nbytes(t)), RT_OK);
            else if (i == L_ATTN_NORM || i == L_FFN_NORM) fill_random(t, 1000 + 16 * (uint64_t)il + (uint64_t)i, 1.0f);
            else fill_random(t, 1000 + 16 * (uint64_t)il + (uint64_t)i, 0.25f);
        }
    }
    fill_random(m->tok_embd, 1, 1.0f);
    fill_random(m->out_norm, 2, 1.0f);
    fill_random(m->w_out, 3, 0.25f);
}

/* Creates the weights of each group on devs[group_device[group]]. */
static rt_status_t model_create(model_t *m, const int32_t *group_device, rt_device_t *const *devs,
                                int n_devs) {
    memset(m, 0, sizeof *m);
    for (int d = 0; d < n_devs; d++) m->ctx[d] = tu_context(1, true);
    model_tensors(m, group_device);
    for (int d = 0; d < n_devs; d++) {
        if (rt_context_first_tensor(m->ctx[d]) == NULL) continue;
        const rt_status_t st = rt_alloc_ctx_tensors(m->ctx[d], rt_device_buffer_type(devs[d], 0),
                                                    &m->buf[d]);
        if (st != RT_OK) return st;
    }
    model_fill(m);
    return RT_OK;
}

static void model_destroy(model_t *m) {
    for (int d = 0; d < RT_SCHED_MAX_DEVICES; d++) {
        rt_buffer_free(m->buf[d]);
        rt_context_destroy(m->ctx[d]);
    }
    memset(m, 0, sizeof *m);
}

/* One graph of the model over N_TOK tokens at position 0. */
typedef struct run {
    rt_context_t *ctx;
    rt_graph_t *g;
    rt_tensor_t *tokens, *pos, *mask, *logits;
} run_t;

/* Writes k and v into the layer's cache and reads the first N_TOK rows
 * back through views (docs/memory.md §2.1). */
static rt_tensor_t *attention(run_t *r, rt_tensor_t *const *L, rt_tensor_t *h) {
    rt_context_t *c = r->ctx;
    rt_tensor_t *q = rt_rope(c, rt_reshape_3d(c, rt_mul_mat(c, L[L_WQ], h), HEAD_DIM, N_HEAD, N_TOK),
                             r->pos, HEAD_DIM, RT_ROPE_MODE_NEOX);
    rt_tensor_t *k = rt_rope(c, rt_reshape_3d(c, rt_mul_mat(c, L[L_WK], h), HEAD_DIM, N_HEAD, N_TOK),
                             r->pos, HEAD_DIM, RT_ROPE_MODE_NEOX);
    rt_tensor_t *v = rt_mul_mat(c, L[L_WV], h);
    rt_graph_build_forward_expand(r->g, rt_cpy(c, k, rt_view_1d(c, L[L_KC], N_EMBD * N_TOK, 0)));
    rt_graph_build_forward_expand(r->g, rt_cpy(c, v, rt_view_1d(c, L[L_VC], N_EMBD * N_TOK, 0)));
    rt_tensor_t *K = rt_permute(c, rt_reshape_3d(c, rt_view_1d(c, L[L_KC], N_EMBD * N_TOK, 0),
                                                 HEAD_DIM, N_HEAD, N_TOK), 0, 2, 1, 3);
    rt_tensor_t *kq = rt_mul_mat(c, K, rt_permute(c, q, 0, 2, 1, 3));
    kq = rt_soft_max_ext(c, kq, r->mask, 1.0f / sqrtf((float)HEAD_DIM));
    rt_tensor_t *V = rt_cont(c, rt_permute(c, rt_reshape_3d(c, rt_view_1d(c, L[L_VC], N_EMBD * N_TOK, 0),
                                                           HEAD_DIM, N_HEAD, N_TOK), 1, 2, 0, 3));
    rt_tensor_t *kqv = rt_mul_mat(c, V, kq);
    rt_tensor_t *o = rt_cont_2d(c, rt_permute(c, kqv, 0, 2, 1, 3), N_EMBD, N_TOK);
    return rt_mul_mat(c, L[L_WO], o);
}

static rt_tensor_t *layer(run_t *r, rt_tensor_t *const *L, rt_tensor_t *x) {
    rt_context_t *c = r->ctx;
    x = rt_add(c, x, attention(r, L, rt_mul(c, rt_rms_norm(c, x, 1e-5f), L[L_ATTN_NORM])));
    rt_tensor_t *h = rt_mul(c, rt_rms_norm(c, x, 1e-5f), L[L_FFN_NORM]);
    rt_tensor_t *s = rt_swiglu(c, rt_mul_mat(c, L[L_GATE], h), rt_mul_mat(c, L[L_UP], h));
    return rt_add(c, x, rt_mul_mat(c, L[L_DOWN], s));
}

static void run_build(run_t *r, model_t *m) {
    rt_context_t *c = r->ctx = tu_context(4, true);
    r->g = rt_graph_create(c, 1024);
    r->tokens = rt_new_tensor_1d(c, RT_TYPE_I32, N_TOK);
    r->pos = rt_new_tensor_1d(c, RT_TYPE_I32, N_TOK);
    r->mask = rt_new_tensor_2d(c, RT_TYPE_F32, N_TOK, N_TOK);
    rt_set_input(rt_set_name(r->tokens, "tokens"));
    rt_set_input(rt_set_name(r->pos, "pos"));
    rt_set_input(rt_set_name(r->mask, "mask"));
    rt_tensor_t *x = rt_get_rows(c, m->tok_embd, r->tokens);
    for (int il = 0; il < N_LAYER; il++) x = layer(r, m->layer[il], x);
    x = rt_mul(c, rt_rms_norm(c, x, 1e-5f), m->out_norm);
    r->logits = rt_set_name(rt_mul_mat(c, m->w_out, x), "logits");
    rt_set_output(r->logits);
    rt_graph_build_forward_expand(r->g, r->logits);
}

static void run_inputs(run_t *r, int seed) {
    int32_t tokens[N_TOK], pos[N_TOK];
    float mask[N_TOK * N_TOK];
    for (int i = 0; i < N_TOK; i++) {
        tokens[i] = (int32_t)((seed * 31 + i * 7) % N_VOCAB);
        pos[i] = i;
        for (int j = 0; j < N_TOK; j++) mask[i * N_TOK + j] = j > i ? -INFINITY : 0.0f;
    }
    expect_ok(rt_tensor_set(r->tokens, tokens, 0, sizeof tokens), "inputs");
    expect_ok(rt_tensor_set(r->pos, pos, 0, sizeof pos), "inputs");
    expect_ok(rt_tensor_set(r->mask, mask, 0, sizeof mask), "inputs");
}

/* Builds, allocates and runs the model on s; logits into out (doubles). */
static void run_model(model_t *m, rt_sched_t *s, int seed, double *out, const char *id) {
    run_t r;
    run_build(&r, m);
    expect_ok(rt_sched_alloc_graph(s, r.g), id);
    run_inputs(&r, seed);
    expect_ok(rt_sched_graph_compute(s, r.g), id);
    float logits[N_VOCAB * N_TOK];
    expect_ok(rt_tensor_get(r.logits, logits, 0, sizeof logits), id);
    for (int i = 0; i < N_VOCAB * N_TOK; i++) out[i] = logits[i];
    rt_sched_reset(s);
    rt_context_destroy(r.ctx);
}

/* The logits of the model with every weight on the CPU. */
static void reference(const env_t *e, int seed, double *out) {
    model_t m;
    static const int32_t all_cpu[N_GROUPS] = {0};
    expect_ok(model_create(&m, all_cpu, &e->cpu, 1), "reference");
    rt_sched_t *s = sched_new(&e->cpu, 1, 1);
    run_model(&m, s, seed, out, "reference");
    rt_sched_destroy(s);
    model_destroy(&m);
}

static void check_logits(const double *ref, double *got_d, const char *id) {
    float got[N_VOCAB * N_TOK];
    for (int i = 0; i < N_VOCAB * N_TOK; i++) got[i] = (float)got_d[i];
    const double err = tu_nmse_error(ref, got, N_VOCAB * N_TOK);
    if (!(err <= TOL)) fail_msg("%s: normalised error %g > %g", id, err, TOL);
}

/* Groups to devices from a placement. */
static void groups_of(const rt_placement_t *p, int32_t *group_device) {
    for (int il = 0; il < N_LAYER; il++) group_device[il] = rt_placement_layer_device(p, il);
    group_device[GROUP_INPUT] = rt_placement_input_device(p);
    group_device[GROUP_OUTPUT] = rt_placement_output_device(p);
}

static rt_placement_t *place_auto(rt_device_t *const *devs, int n, const uint64_t *reserve) {
    uint64_t sizes[N_LAYER];
    for (int il = 0; il < N_LAYER; il++) sizes[il] = layer_size();
    const rt_placement_params_t pp = {
        .struct_size = sizeof pp, .mode = RT_PLACEMENT_AUTO, .n_layers = N_LAYER,
        .layer_bytes = sizes, .input_bytes = input_size(), .output_bytes = output_size(),
        .n_devices = n, .devices = devs, .reserve = reserve};
    rt_placement_t *p = NULL;
    expect_ok(rt_placement_create(&pp, &p), "place");
    rt_placement_write_text(p, write_stdout, NULL);
    return p;
}

//===--- sched-2: across two mock GPUs ---===//

#define RESERVE ((uint64_t)512 << 10)

static void test_transformer(void **state) {
    const uint64_t L = layer_size();
    char memory[64];
    /* sched-2.1: budgets of 2.5 and 1.5 layers: layers 1-2 on gpu0, 3 and
     * the output on gpu1, layer 0 and the input on the CPU */
    snprintf(memory, sizeof memory, "%llu,%llu", (unsigned long long)(RESERVE + 5 * L / 2),
             (unsigned long long)(RESERVE + 3 * L / 2));
    env_t *e = *state;
    env_open(e, 2, memory, NULL);
    double ref[N_VOCAB * N_TOK], got[N_VOCAB * N_TOK];
    reference(e, 1, ref);
    rt_device_t *devs[3] = {e->gpu[0], e->gpu[1], e->cpu};
    const uint64_t reserve[3] = {RESERVE, RESERVE, 0};
    rt_placement_t *p = place_auto(devs, 3, reserve);
    int32_t groups[N_GROUPS];
    groups_of(p, groups);
    static const int32_t want[N_GROUPS] = {2, 0, 0, 1, 2, 1};
    for (int i = 0; i < N_GROUPS; i++) assert_int_equal(groups[i], want[i]);
    model_t m;
    expect_ok(model_create(&m, groups, devs, 3), "sched-2.2");
    rt_sched_t *s = sched_new(devs, 3, 1);
    tu_mock_counters()->reset();
    run_model(&m, s, 1, got, "sched-2.3");
    check_logits(ref, got, "sched-2.3");
    rt_sched_write_splits(s, write_stdout, NULL);
    /* sched-2.4: one split per device. Each GPU split takes two activations
     * (the residual stream and the branch about to join it: pass 2 pulls the
     * residual add, or the next norm, onto the device that produced it) and
     * the positions and mask, which are inputs on the CPU. gpu0 gets all
     * from the host; gpu1 its activations from gpu0 directly. The logits
     * come back from gpu1. */
    const uint64_t act = N_EMBD * N_TOK * 4, pos = N_TOK * 4, mask = N_TOK * N_TOK * 4;
    assert_int_equal(rt_sched_n_splits(s), 3);
    assert_int_equal(rt_sched_n_copies(s), 8);
    const mockgpu_counters_t c0 = counters(0), c1 = counters(1);
    assert_int_equal(c0.bytes_in, 2 * act + pos + mask);
    assert_int_equal(c0.bytes_d2d, 0);
    assert_int_equal(c1.bytes_in, pos + mask);
    assert_int_equal(c1.bytes_d2d, 2 * act);
    assert_int_equal(c0.bytes_out, 0);
    assert_int_equal(c1.bytes_out, N_VOCAB * N_TOK * 4);
    assert_int_equal(rt_sched_copy_bytes(s), c0.bytes_in + c1.bytes_in + c1.bytes_d2d);
    rt_sched_destroy(s);
    model_destroy(&m);
    rt_placement_destroy(p);
}

//===--- sched-3: an op the GPUs lack ---===//

static void test_fallback(void **state) {
    env_t *e = *state;
    env_open(e, 1, NULL, "GET_ROWS,ADD,MUL,RMS_NORM,MUL_MAT,ROPE,SWIGLU,CONT,CPY,SCALE");
    double ref[N_VOCAB * N_TOK], got[N_VOCAB * N_TOK];
    reference(e, 2, ref);
    rt_device_t *devs[2] = {e->gpu[0], e->cpu};
    static const int32_t groups[N_GROUPS] = {0, 0, 0, 0, 1, 0}; /* all layers on the GPU */
    model_t m;
    expect_ok(model_create(&m, groups, devs, 2), "sched-3.1");
    rt_sched_t *s = sched_new(devs, 2, 1);
    run_t r;
    run_build(&r, &m);
    expect_ok(rt_sched_alloc_graph(s, r.g), "sched-3.2");
    /* sched-3.2: every SOFT_MAX runs on the CPU, every MUL_MAT on the GPU */
    int n_soft_max = 0;
    for (int i = 0; i < rt_graph_n_nodes(r.g); i++) {
        const rt_tensor_t *node = rt_graph_node(r.g, i);
        if (node->op == RT_OP_SOFT_MAX) {
            assert_ptr_equal(rt_sched_get_tensor_device(s, node), e->cpu);
            n_soft_max++;
        }
        if (node->op == RT_OP_MUL_MAT) assert_ptr_equal(rt_sched_get_tensor_device(s, node), e->gpu[0]);
    }
    assert_int_equal(n_soft_max, N_LAYER);
    /* sched-3.3: the CPU takes a split of its own in each layer (after the
     * embeddings'), and the result stands */
    rt_sched_write_splits(s, write_stdout, NULL);
    assert_int_equal(rt_sched_n_splits(s), 2 + 2 * N_LAYER);
    run_inputs(&r, 2);
    expect_ok(rt_sched_graph_compute(s, r.g), "sched-3.3");
    float logits[N_VOCAB * N_TOK];
    expect_ok(rt_tensor_get(r.logits, logits, 0, sizeof logits), "sched-3.3");
    for (int i = 0; i < N_VOCAB * N_TOK; i++) got[i] = logits[i];
    check_logits(ref, got, "sched-3.3");
    rt_sched_reset(s);
    rt_context_destroy(r.ctx);
    rt_sched_destroy(s);
    model_destroy(&m);
}

//===--- sched-4: out of memory, re-planned ---===//

/* Reserves the model's graph on s; returns the status. */
static rt_status_t reserve_model(model_t *m, rt_sched_t *s) {
    run_t r;
    run_build(&r, m);
    const rt_status_t st = rt_sched_reserve(s, r.g);
    rt_context_destroy(r.ctx);
    return st;
}

static void test_oom_replan(void **state) {
    const uint64_t L = layer_size(), small = 2048;
    char memory[32];
    /* three layers and the output fit with `small` to spare: not the compute buffer */
    snprintf(memory, sizeof memory, "%llu",
             (unsigned long long)(small + 3 * L + output_size() + small / 2));
    env_t *e = *state;
    env_open(e, 1, memory, NULL);
    double ref[N_VOCAB * N_TOK], got[N_VOCAB * N_TOK];
    reference(e, 3, ref);
    rt_device_t *devs[2] = {e->gpu[0], e->cpu};
    const uint64_t reserve[2] = {small, 0};
    rt_placement_t *p = place_auto(devs, 2, reserve);
    assert_int_equal(rt_placement_device_layers(p, 0), 3);
    int32_t groups[N_GROUPS];
    groups_of(p, groups);
    model_t m;
    expect_ok(model_create(&m, groups, devs, 2), "sched-4.1");
    rt_sched_t *s = sched_new(devs, 2, 1);
    /* sched-4.2: the reserve fails, naming mockgpu0 and the bytes */
    assert_int_equal(reserve_model(&m, s), RT_ERR_OUT_OF_MEMORY);
    char msg[1024], bytes_text[32];
    snprintf(msg, sizeof msg, "%s", rt_last_error());
    printf("sched-4.2: %s\n", msg);
    size_t bytes = 0;
    assert_ptr_equal(rt_sched_last_oom(s, &bytes), e->gpu[0]);
    assert_true(bytes > small);
    snprintf(bytes_text, sizeof bytes_text, "%zu-byte", bytes);
    assert_non_null(strstr(msg, "mockgpu0"));
    assert_non_null(strstr(msg, bytes_text));
    /* sched-4.3: fewer layers there, and then everything fits and runs */
    expect_ok(rt_placement_replan(p, 0, bytes), "sched-4.3");
    rt_placement_write_text(p, write_stdout, NULL);
    assert_int_equal(rt_placement_device_layers(p, 0), 2);
    model_destroy(&m);
    groups_of(p, groups);
    expect_ok(model_create(&m, groups, devs, 2), "sched-4.3");
    expect_ok(reserve_model(&m, s), "sched-4.3");
    assert_null(rt_sched_last_oom(s, &bytes));
    run_model(&m, s, 3, got, "sched-4.3");
    check_logits(ref, got, "sched-4.3");
    rt_sched_destroy(s);
    model_destroy(&m);
    rt_placement_destroy(p);
}

//===--- sched-5: pipeline copies ---===//

static void test_pipeline(void **state) {
    env_t *e = *state;
    env_open(e, 2, NULL, NULL);
    rt_device_t *devs[3] = {e->gpu[0], e->gpu[1], e->cpu};
    static const int32_t groups[N_GROUPS] = {2, 0, 0, 1, 2, 1};
    model_t m;
    expect_ok(model_create(&m, groups, devs, 3), "sched-5.1");
    rt_sched_t *s = sched_new(devs, 3, 2);
    expect_ok(reserve_model(&m, s), "sched-5.1");
    void *token_bytes[3];
    for (int k = 0; k < 3; k++) {
        double ref[N_VOCAB * N_TOK], got[N_VOCAB * N_TOK];
        reference(e, 10 + k, ref);
        run_t r;
        run_build(&r, &m);
        expect_ok(rt_sched_alloc_graph(s, r.g), "sched-5.2");
        token_bytes[k] = r.tokens->data;
        run_inputs(&r, 10 + k);
        expect_ok(rt_sched_graph_compute_async(s, r.g), "sched-5.2");
        expect_ok(rt_sched_synchronize(s), "sched-5.2");
        float logits[N_VOCAB * N_TOK];
        expect_ok(rt_tensor_get(r.logits, logits, 0, sizeof logits), "sched-5.2");
        for (int i = 0; i < N_VOCAB * N_TOK; i++) got[i] = logits[i];
        check_logits(ref, got, "sched-5.2");
        rt_sched_reset(s);
        rt_context_destroy(r.ctx);
    }
    /* sched-5.3: runs alternate between the two copies of the inputs */
    assert_ptr_not_equal(token_bytes[0], token_bytes[1]);
    assert_ptr_equal(token_bytes[0], token_bytes[2]);
    rt_sched_destroy(s);
    model_destroy(&m);
}

//===--- sched-6: misuse ---===//

static void test_misuse(void **state) {
    env_t *e = *state;
    env_open(e, 1, NULL, NULL);
    fig16_t f, f2;
    fig16_weights(&f, e->cpu, e->gpu[0]);
    fig16_graph(&f);
    f2 = f;
    fig16_graph(&f2); /* a second graph over the same weights */
    rt_device_t *devs[2] = {e->gpu[0], e->cpu};
    rt_sched_t *s = sched_new(devs, 2, 1);
    expect_ok(rt_sched_alloc_graph(s, f.g), "sched-6.1");
    assert_int_equal(rt_sched_alloc_graph(s, f2.g), RT_ERR_MISUSE);
    assert_int_equal(rt_sched_graph_compute(s, f2.g), RT_ERR_MISUSE);
    /* sched-6.2: reset points the sources back */
    assert_ptr_not_equal(f.node[2]->src[0], f.node[1]);
    rt_sched_reset(s);
    assert_ptr_equal(f.node[2]->src[0], f.node[1]);
    expect_ok(rt_sched_alloc_graph(s, f2.g), "sched-6.2");
    rt_sched_reset(s);
    rt_sched_destroy(s);
    rt_context_destroy(f2.gctx);
    fig16_free(&f);
}

//===--- sched-7: what cannot be scheduled ---===//

static void test_unschedulable(void **state) {
    env_t *e = *state;
    env_open(e, 2, NULL, "MUL_MAT,ADD,GELU,SCALE,SILU,RMS_NORM");
    /* sched-7.1: weights on a device the scheduler does not have */
    fig16_t f;
    fig16_weights(&f, e->cpu, e->gpu[1]);
    fig16_graph(&f);
    rt_device_t *devs[2] = {e->gpu[0], e->cpu};
    rt_sched_t *s = sched_new(devs, 2, 1);
    assert_int_equal(rt_sched_alloc_graph(s, f.g), RT_ERR_UNSUPPORTED);
    assert_non_null(strstr(rt_last_error(), "MockGPU1"));
    rt_sched_destroy(s);
    fig16_free(&f);
    /* sched-7.2: an op no device of the scheduler runs (SOFT_MAX) */
    fig16_weights(&f, e->gpu[0], e->gpu[0]);
    fig16_graph(&f);
    s = sched_new(&e->gpu[0], 1, 1);
    assert_int_equal(rt_sched_alloc_graph(s, f.g), RT_ERR_UNSUPPORTED);
    assert_non_null(strstr(rt_last_error(), "SOFT_MAX"));
    assert_int_equal(rt_sched_n_splits(s), 0);
    rt_sched_destroy(s);
    fig16_free(&f);
}

//===--- placement ---===//

enum { P_LAYERS = 4 };
static const uint64_t p_layer[P_LAYERS] = {100, 100, 100, 100};

static rt_placement_t *plan(rt_placement_mode_t mode, int32_t n_gpu_layers, int n_devices,
                            const uint64_t *free_bytes, const uint64_t *reserve) {
    const rt_placement_params_t pp = {
        .struct_size = sizeof pp, .mode = mode, .n_gpu_layers = n_gpu_layers,
        .n_layers = P_LAYERS, .layer_bytes = p_layer, .input_bytes = 50, .output_bytes = 30,
        .n_devices = n_devices, .memory_free = free_bytes, .reserve = reserve};
    rt_placement_t *p = NULL;
    expect_ok(rt_placement_create(&pp, &p), "place");
    return p;
}

/* layers as a string of device digits, then input and output: "1100 1 0" */
static void expect_plan(const rt_placement_t *p, const char *want, const char *id) {
    char got[32];
    int n = 0;
    for (int il = 0; il < P_LAYERS; il++) n += snprintf(got + n, sizeof got - (size_t)n, "%d",
                                                        (int)rt_placement_layer_device(p, il));
    snprintf(got + n, sizeof got - (size_t)n, " %d %d", (int)rt_placement_input_device(p),
             (int)rt_placement_output_device(p));
    if (strcmp(got, want) != 0) fail_msg("%s: plan \"%s\", expected \"%s\"", id, got, want);
}

static void test_place_n_gpu_layers(void **state) {
    (void)state;
    const uint64_t free_bytes[2] = {0, 0}; /* not checked in this mode */
    static const struct { int32_t n; const char *want; } cases[] = {
        {0, "1111 1 1"}, {2, "1100 1 0"}, {4, "0000 1 0"}, {5, "0000 0 0"}, {-1, "0000 0 0"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char id[32];
        snprintf(id, sizeof id, "place-1.%zu", i + 1);
        rt_placement_t *p = plan(RT_PLACEMENT_N_GPU_LAYERS, cases[i].n, 2, free_bytes, NULL);
        expect_plan(p, cases[i].want, id);
        rt_placement_destroy(p);
    }
    /* place-1.6: without a GPU everything stays on the CPU */
    rt_placement_t *p = plan(RT_PLACEMENT_N_GPU_LAYERS, 3, 1, free_bytes, NULL);
    expect_plan(p, "0000 0 0", "place-1.6");
    rt_placement_destroy(p);
}

static void test_place_auto_one_gpu(void **state) {
    (void)state;
    static const struct { uint64_t free_bytes; const char *want; } cases[] = {
        {0, "1111 1 1"},    /* nothing fits */
        {140, "1110 1 0"},  /* one layer and the output */
        {235, "1100 1 0"},  /* two layers and the output; the reserve counts */
        {435, "0000 1 0"},  /* every layer, not the input */
        {485, "0000 0 0"},  /* every layer and the input */
    };
    const uint64_t reserve[2] = {5, 0};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char id[32];
        snprintf(id, sizeof id, "place-2.%zu", i + 1);
        const uint64_t free_bytes[2] = {cases[i].free_bytes, 0};
        rt_placement_t *p = plan(RT_PLACEMENT_AUTO, 0, 2, free_bytes, reserve);
        expect_plan(p, cases[i].want, id);
        rt_placement_destroy(p);
    }
}

static void test_place_auto_two_gpus(void **state) {
    (void)state;
    /* place-3.1: equal budgets, everything fits: two layers each, output on gpu1 */
    const uint64_t equal[3] = {240, 240, 0}; /* too little for the input as well */
    rt_placement_t *p = plan(RT_PLACEMENT_AUTO, 0, 3, equal, NULL);
    expect_plan(p, "0011 2 1", "place-3.1");
    assert_int_equal(rt_placement_device_bytes(p, 1), 230);
    rt_placement_destroy(p);
    /* place-3.2: room for three layers in all, cut unevenly */
    const uint64_t skewed[3] = {220, 140, 0};
    p = plan(RT_PLACEMENT_AUTO, 0, 3, skewed, NULL);
    expect_plan(p, "2001 2 1", "place-3.2");
    rt_placement_destroy(p);
    /* place-3.3: a GPU with no room takes nothing */
    const uint64_t one[3] = {0, 250, 0};
    p = plan(RT_PLACEMENT_AUTO, 0, 3, one, NULL);
    expect_plan(p, "2211 2 1", "place-3.3");
    assert_int_equal(rt_placement_device_layers(p, 0), 0);
    rt_placement_destroy(p);
}

static void test_place_replan(void **state) {
    (void)state;
    /* place-4.1: N_GPU_LAYERS sheds the input, then the lowest layers */
    const uint64_t free_bytes[3] = {0, 0, 0};
    rt_placement_t *p = plan(RT_PLACEMENT_N_GPU_LAYERS, -1, 2, free_bytes, NULL);
    expect_ok(rt_placement_replan(p, 0, 120), "place-4.1");
    expect_plan(p, "1000 1 0", "place-4.1");
    expect_ok(rt_placement_replan(p, 0, 1000), "place-4.1");
    expect_plan(p, "1111 1 1", "place-4.1");
    /* place-4.2: nothing left to move, or not a GPU */
    assert_int_equal(rt_placement_replan(p, 0, 10), RT_ERR_OUT_OF_MEMORY);
    assert_int_equal(rt_placement_replan(p, 1, 10), RT_ERR_MISUSE);
    rt_placement_destroy(p);
    /* place-4.3: AUTO grows the reserve; layers may move to the other GPU */
    const uint64_t two[3] = {300, 300, 0};
    p = plan(RT_PLACEMENT_AUTO, 0, 3, two, NULL);
    expect_plan(p, "0011 0 1", "place-4.3");
    expect_ok(rt_placement_replan(p, 1, 150), "place-4.3");
    expect_plan(p, "0001 2 1", "place-4.3");
    assert_true(rt_placement_device_bytes(p, 1) <= 150);
    rt_placement_destroy(p);
}

static void test_place_text(void **state) {
    (void)state;
    const uint64_t free_bytes[2] = {0, 0};
    rt_placement_t *p = plan(RT_PLACEMENT_N_GPU_LAYERS, 3, 2, free_bytes, NULL);
    char text[4096] = "";
    rt_placement_write_text(p, write_buf, text);
    /* place-5.1 */
    assert_string_equal(text, "device 0: layers 1-3, output, 330 bytes\n"
                              "device 1 (cpu): layers 0, input, 150 bytes\n");
    rt_placement_destroy(p);
}

static void test_place_invalid(void **state) {
    (void)state;
    rt_placement_t *p = NULL;
    const rt_placement_params_t none = {.struct_size = sizeof none, .n_layers = 2, .n_devices = 1};
    /* place-6.1: sizes missing, memory missing */
    assert_int_equal(rt_placement_create(&none, &p), RT_ERR_INVALID_ARGUMENT);
    const rt_placement_params_t no_mem = {.struct_size = sizeof no_mem, .n_layers = 4,
                                          .layer_bytes = p_layer, .n_devices = 2};
    assert_int_equal(rt_placement_create(&no_mem, &p), RT_ERR_INVALID_ARGUMENT);
    assert_null(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_figure16, env_setup, env_teardown),
        cmocka_unit_test_setup_teardown(test_transformer, env_setup, env_teardown),
        cmocka_unit_test_setup_teardown(test_fallback, env_setup, env_teardown),
        cmocka_unit_test_setup_teardown(test_oom_replan, env_setup, env_teardown),
        cmocka_unit_test_setup_teardown(test_pipeline, env_setup, env_teardown),
        cmocka_unit_test_setup_teardown(test_misuse, env_setup, env_teardown),
        cmocka_unit_test_setup_teardown(test_unschedulable, env_setup, env_teardown),
        cmocka_unit_test(test_place_n_gpu_layers),
        cmocka_unit_test(test_place_auto_one_gpu),
        cmocka_unit_test(test_place_auto_two_gpus),
        cmocka_unit_test(test_place_replan),
        cmocka_unit_test(test_place_text),
        cmocka_unit_test(test_place_invalid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
