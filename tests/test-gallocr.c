/* SPDX-License-Identifier: MIT */
/* test-gallocr.c: the tensor and graph allocators (abi/rt_alloc.h) against
 * docs/memory.md §3. A two-layer MLP (x, W1·x + b1, gelu, W2·h + b2) needs
 * two blocks; a plan
 * reserved for n_batch serves every smaller graph without allocating and a
 * larger one re-reserves; in-place reuse never overwrites a value still
 * needed (computed on the CPU device against a run without any reuse);
 * random DAGs keep every plan free of overlaps in space and time; the
 * linear allocator and rt_alloc_ctx_tensors report a full buffer. */
#include "testutil.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK_OK(expr)                                                               \
    do {                                                                             \
        const rt_status_t st_ = (expr);                                              \
        if (st_ != RT_OK)                                                            \
            fail_msg("%s: %s: %s", #expr, rt_status_name(st_), rt_last_error());     \
    } while (0)

static rt_buffer_type_t *cpu_buft(void) { return rt_device_buffer_type(tu_cpu_device(), 0); }

static void compute(rt_graph_t *g) {
    static rt_queue_t *q;
    if (q == NULL) CHECK_OK(rt_queue_create(tu_cpu_device(), NULL, &q));
    CHECK_OK(rt_queue_compute(q, g));
}

static void set_random(rt_tensor_t *t, uint64_t seed) {
    const size_t n = (size_t)rt_nelements(t);
    float *x = malloc(n * sizeof x[0]);
    tu_seed(seed);
    tu_fill(x, n, -0.5f, 0.5f);
    CHECK_OK(rt_tensor_set(t, x, 0, n * sizeof x[0]));
    free(x);
}

static float *get_floats(const rt_tensor_t *t) {
    const size_t n = rt_nbytes(t) / sizeof(float);
    float *x = malloc((n > 0 ? n : 1) * sizeof x[0]);
    CHECK_OK(rt_tensor_get(t, x, 0, n * sizeof x[0]));
    return x;
}

static rt_gallocr_plan_entry_t plan_at(const rt_gallocr_t *ga, int32_t i) {
    rt_gallocr_plan_entry_t e = {.struct_size = sizeof e};
    CHECK_OK(rt_gallocr_plan_get(ga, i, &e));
    return e;
}

static rt_gallocr_t *gallocr_new(uint32_t flags) {
    rt_gallocr_t *ga = NULL;
    CHECK_OK(rt_gallocr_create(cpu_buft(), &ga));
    rt_gallocr_set_flags(ga, flags);
    return ga;
}

static size_t aligned(size_t n) { return (n + 63) & ~(size_t)63; } /* the CPU's alignment */

//===--- a two-layer MLP: two blocks with in-place ops and early frees ---===//

enum { N_IN = 16, N_HID = 32, N_OUT = 8 };

typedef struct mlp {
    rt_context_t *ctx_w;
    rt_buffer_t *buf_w;
    rt_tensor_t *w1, *b1, *w2, *b2;
    float h_w1[N_HID * N_IN], h_b1[N_HID], h_w2[N_OUT * N_HID], h_b2[N_OUT];
} mlp_t;

static void mlp_init(mlp_t *m) {
    memset(m, 0, sizeof *m);
    m->ctx_w = tu_context(1, true);
    m->w1 = rt_set_name(rt_new_tensor_2d(m->ctx_w, RT_TYPE_F32, N_IN, N_HID), "W1");
    m->b1 = rt_set_name(rt_new_tensor_1d(m->ctx_w, RT_TYPE_F32, N_HID), "b1");
    m->w2 = rt_set_name(rt_new_tensor_2d(m->ctx_w, RT_TYPE_F32, N_HID, N_OUT), "W2");
    m->b2 = rt_set_name(rt_new_tensor_1d(m->ctx_w, RT_TYPE_F32, N_OUT), "b2");
    CHECK_OK(rt_alloc_ctx_tensors(m->ctx_w, cpu_buft(), &m->buf_w));
    float *host[] = {m->h_w1, m->h_b1, m->h_w2, m->h_b2};
    rt_tensor_t *dev[] = {m->w1, m->b1, m->w2, m->b2};
    for (int i = 0; i < 4; i++) {
        tu_seed(100 + (uint64_t)i);
        tu_fill(host[i], (size_t)rt_nelements(dev[i]), -0.5f, 0.5f);
        CHECK_OK(rt_tensor_set(dev[i], host[i], 0, rt_nbytes(dev[i])));
    }
}

static void mlp_deinit(mlp_t *m) {
    rt_buffer_free(m->buf_w);
    rt_context_destroy(m->ctx_w);
}

/* The MLP's weights as a cmocka fixture: freed by the teardown even when
 * an assertion fails half-way. */
static int mlp_setup(void **state) {
    mlp_t *m = calloc(1, sizeof *m);
    if (m == NULL) return -1;
    *state = m;
    mlp_init(m);
    return 0;
}

static int mlp_teardown(void **state) {
    mlp_deinit(*state);
    free(*state);
    return 0;
}

/* y = W2 . gelu(W1 . x + b1) + b2 for n tokens; x INPUT, y OUTPUT. */
static rt_graph_t *mlp_graph(rt_context_t *ctx, const mlp_t *m, int n, rt_tensor_t **x,
                             rt_tensor_t **y) {
    *x = rt_set_name(rt_new_tensor_2d(ctx, RT_TYPE_F32, N_IN, n), "x");
    rt_set_input(*x);
    rt_tensor_t *h = rt_set_name(rt_mul_mat(ctx, m->w1, *x), "h");
    h = rt_set_name(rt_add(ctx, h, m->b1), "h_b");
    h = rt_set_name(rt_gelu(ctx, h), "a");
    *y = rt_set_name(rt_mul_mat(ctx, m->w2, h), "y");
    *y = rt_set_name(rt_add(ctx, *y, m->b2), "y_b");
    rt_set_output(*y);
    rt_graph_t *g = rt_graph_create(ctx, 64);
    rt_graph_build_forward_expand(g, *y);
    return g;
}

static double gelu_ref(double v) {
    return 0.5 * v * (1.0 + tanh(sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
}

static void mlp_ref(const mlp_t *m, const float *x, int n, double *y) {
    for (int t = 0; t < n; t++) {
        double a[N_HID];
        for (int j = 0; j < N_HID; j++) {
            double s = m->h_b1[j];
            for (int i = 0; i < N_IN; i++) s += (double)m->h_w1[j * N_IN + i] * x[t * N_IN + i];
            a[j] = gelu_ref(s);
        }
        for (int k = 0; k < N_OUT; k++) {
            double s = m->h_b2[k];
            for (int j = 0; j < N_HID; j++) s += (double)m->h_w2[k * N_HID + j] * a[j];
            y[t * N_OUT + k] = s;
        }
    }
}

/* Fills x, computes g and compares y with the reference. */
static void mlp_run_check(const mlp_t *m, rt_graph_t *g, rt_tensor_t *x, rt_tensor_t *y, int n,
                          const char *id) {
    float xs[N_IN * 64];
    double ref[N_OUT * 64];
    assert_true(n <= 64);
    tu_seed(7 + (uint64_t)n);
    tu_fill(xs, (size_t)(N_IN * n), -1, 1);
    CHECK_OK(rt_tensor_set(x, xs, 0, sizeof xs[0] * N_IN * (size_t)n));
    compute(g);
    float *got = get_floats(y);
    mlp_ref(m, xs, n, ref);
    const double err = tu_nmse_error(ref, got, (size_t)(N_OUT * n));
    if (!(err < 1e-4)) fail_msg("%s: n %d: nmse %g", id, n, err);
    free(got);
}

/* gallocr-1: the MLP's five intermediates in two blocks: ADD and GELU
 * write over the first MUL_MAT, the last ADD over the second, which reuses
 * the bytes of x, freed after the first MUL_MAT read it. */
static void test_mlp_two_blocks(void **state) {
    mlp_t *m = *state;
    rt_context_t *ctx = tu_context(1, true);
    rt_tensor_t *x, *y;
    rt_graph_t *g = mlp_graph(ctx, m, 4, &x, &y);
    rt_gallocr_t *ga = gallocr_new(0);
    CHECK_OK(rt_gallocr_reserve(ga, g));
    const int32_t nl = rt_graph_n_leafs(g);
    assert_int_equal(rt_graph_n_nodes(g), 5); /* gallocr-1.1 */
    int blocks = 0;
    for (int32_t i = 0; i < 5; i++) blocks += !(plan_at(ga, nl + i).flags & RT_GALLOCR_PLAN_INPLACE);
    assert_int_equal(blocks, 2); /* gallocr-1.2 */
    const size_t x_bytes = aligned(N_IN * 4 * 4), h_bytes = aligned(N_HID * 4 * 4);
    assert_int_equal(rt_gallocr_get_peak(ga, 0), x_bytes + h_bytes); /* gallocr-1.3 */
    assert_int_equal(rt_gallocr_get_buffer_size(ga, 0), x_bytes + h_bytes);
    assert_int_equal(plan_at(ga, nl + 3).offset, 0); /* gallocr-1.4: y where x was */
    assert_int_equal(plan_at(ga, nl + 2).inplace_of, nl + 1); /* gallocr-1.5 */
    assert_int_equal(rt_gallocr_get_n_allocs(ga), 1);
    CHECK_OK(rt_gallocr_alloc_graph(ga, g));
    assert_int_equal(rt_gallocr_get_n_allocs(ga), 1); /* gallocr-1.6 */
    mlp_run_check(m, g, x, y, 4, "gallocr-1.7");
    rt_gallocr_destroy(ga);
    rt_context_destroy(ctx);
}

/* gallocr-2: reserve the worst case once, then every smaller graph fits;
 * a larger one makes a one-buffer gallocr reserve again (one allocation)
 * and a two-buffer one return RT_ERR_DOES_NOT_FIT. */
static void test_worst_case_reserve(void **state) {
    mlp_t *m = *state;
    rt_gallocr_t *ga = gallocr_new(0);
    rt_context_t *ctx = tu_context(1, true);
    rt_tensor_t *x, *y;
    CHECK_OK(rt_gallocr_reserve(ga, mlp_graph(ctx, m, 8, &x, &y)));
    rt_context_destroy(ctx);
    const size_t size8 = rt_gallocr_get_buffer_size(ga, 0);
    for (int n = 1; n <= 8; n++) {
        ctx = tu_context(1, true);
        rt_graph_t *g = mlp_graph(ctx, m, n, &x, &y);
        CHECK_OK(rt_gallocr_alloc_graph(ga, g));
        assert_int_equal(rt_gallocr_get_n_allocs(ga), 1); /* gallocr-2.1 */
        mlp_run_check(m, g, x, y, n, "gallocr-2.2");
        CHECK_OK(rt_gallocr_alloc_graph(ga, g)); /* gallocr-2.3: again, same graph */
        mlp_run_check(m, g, x, y, n, "gallocr-2.3");
        rt_context_destroy(ctx);
    }
    ctx = tu_context(1, true);
    rt_graph_t *g = mlp_graph(ctx, m, 16, &x, &y);
    CHECK_OK(rt_gallocr_alloc_graph(ga, g));
    assert_int_equal(rt_gallocr_get_n_allocs(ga), 2); /* gallocr-2.4 */
    assert_true(rt_gallocr_get_buffer_size(ga, 0) > size8);
    mlp_run_check(m, g, x, y, 16, "gallocr-2.5");
    rt_context_destroy(ctx);
    rt_gallocr_destroy(ga);

    rt_buffer_type_t *two[2] = {cpu_buft(), cpu_buft()};
    CHECK_OK(rt_gallocr_create_n(two, 2, &ga));
    ctx = tu_context(1, true);
    CHECK_OK(rt_gallocr_reserve(ga, mlp_graph(ctx, m, 8, &x, &y)));
    rt_context_destroy(ctx);
    ctx = tu_context(1, true);
    g = mlp_graph(ctx, m, 16, &x, &y);
    assert_int_equal(rt_gallocr_alloc_graph(ga, g), RT_ERR_DOES_NOT_FIT); /* gallocr-2.6 */
    assert_non_null(strstr(rt_last_error(), "needs"));
    assert_int_equal(rt_gallocr_get_n_allocs(ga), 1);
    rt_context_destroy(ctx);
    rt_gallocr_destroy(ga);
}

/* gallocr-3: alloc_graph before any reserve reserves (one buffer), and a
 * graph with another structure re-reserves. */
static void test_alloc_without_reserve(void **state) {
    mlp_t *m = *state;
    rt_gallocr_t *ga = gallocr_new(0);
    rt_context_t *ctx = tu_context(1, true);
    rt_tensor_t *x, *y;
    rt_graph_t *g = mlp_graph(ctx, m, 3, &x, &y);
    CHECK_OK(rt_gallocr_alloc_graph(ga, g));
    assert_int_equal(rt_gallocr_get_n_allocs(ga), 1); /* gallocr-3.1 */
    mlp_run_check(m, g, x, y, 3, "gallocr-3.2");
    rt_context_t *ctx2 = tu_context(1, true);
    rt_tensor_t *x2 = rt_new_tensor_2d(ctx2, RT_TYPE_F32, N_IN, 3);
    rt_tensor_t *z = rt_scale(ctx2, rt_silu(ctx2, x2), 2.0f); /* 1 leaf, 2 nodes */
    rt_graph_t *g2 = rt_graph_create(ctx2, 16);
    rt_graph_build_forward_expand(g2, z);
    CHECK_OK(rt_gallocr_alloc_graph(ga, g2));
    assert_int_equal(rt_gallocr_plan_count(ga), 3); /* gallocr-3.3: planned for g2 */
    assert_non_null(x2->data);
    assert_non_null(z->data);
    rt_context_destroy(ctx2);
    rt_context_destroy(ctx);
    rt_gallocr_destroy(ga);
}

//===--- in-place reuse ---===//

typedef struct chain {
    rt_tensor_t *x, *t1, *t2, *t3, *t4, *t5;
    rt_graph_t *g;
} chain_t;

/* t1 = W.x, t2 = silu(t1), t3 = t2 + t1, t4 = 0.5 t3, t5 = t4 * t2: t1 and
 * t2 are each read twice, so SILU must not write over t1 nor ADD over t2. */
static chain_t chain_graph(rt_context_t *ctx, rt_tensor_t *w) {
    chain_t c;
    c.x = rt_set_name(rt_new_tensor_2d(ctx, RT_TYPE_F32, N_IN, 4), "x");
    rt_set_input(c.x);
    c.t1 = rt_set_name(rt_mul_mat(ctx, w, c.x), "t1");
    c.t2 = rt_set_name(rt_silu(ctx, c.t1), "t2");
    c.t3 = rt_set_name(rt_add(ctx, c.t2, c.t1), "t3");
    c.t4 = rt_set_name(rt_scale(ctx, c.t3, 0.5f), "t4");
    c.t5 = rt_set_name(rt_mul(ctx, c.t4, c.t2), "t5");
    rt_set_output(c.t5);
    c.g = rt_graph_create(ctx, 32);
    rt_graph_build_forward_expand(c.g, c.t5);
    return c;
}

static int32_t node_plan(const rt_graph_t *g, const rt_tensor_t *t) {
    for (int32_t i = 0; i < rt_graph_n_nodes(g); i++)
        if (rt_graph_node(g, i) == t) return rt_graph_n_leafs(g) + i;
    for (int32_t i = 0; i < rt_graph_n_leafs(g); i++)
        if (rt_graph_leaf(g, i) == t) return i;
    return -1;
}

static void expect_same_floats(const float *a, const float *b, size_t n, const char *id) {
    for (size_t i = 0; i < n; i++) {
        const bool same = a[i] == b[i] || (isnan(a[i]) && isnan(b[i])) ||
                          fabsf(a[i] - b[i]) <= 1e-5f * fmaxf(1.0f, fabsf(b[i]));
        if (!same) fail_msg("%s: element %zu: %.9g with reuse, %.9g without", id, i, a[i], b[i]);
    }
}

/* gallocr-4: in-place where the rules allow it, and the same values as a
 * run without any reuse. */
static void test_inplace_chain(void **state) {
    (void)state;
    rt_context_t *cw = tu_context(1, true);
    rt_tensor_t *w = rt_new_tensor_2d(cw, RT_TYPE_F32, N_IN, N_IN);
    rt_buffer_t *bw;
    CHECK_OK(rt_alloc_ctx_tensors(cw, cpu_buft(), &bw));
    set_random(w, 3);
    float *out[2];
    for (int run = 0; run < 2; run++) {
        rt_context_t *ctx = tu_context(1, true);
        chain_t c = chain_graph(ctx, w);
        rt_gallocr_t *ga = gallocr_new(run == 0 ? 0 : RT_GALLOCR_FLAG_NO_REUSE);
        CHECK_OK(rt_gallocr_alloc_graph(ga, c.g));
        const uint32_t in = RT_GALLOCR_PLAN_INPLACE;
        if (run == 0) {
            assert_false(plan_at(ga, node_plan(c.g, c.t2)).flags & in); /* gallocr-4.1 */
            assert_int_equal(plan_at(ga, node_plan(c.g, c.t3)).inplace_of, node_plan(c.g, c.t1));
            assert_int_equal(plan_at(ga, node_plan(c.g, c.t4)).inplace_of, node_plan(c.g, c.t3));
            assert_int_equal(plan_at(ga, node_plan(c.g, c.t5)).inplace_of, node_plan(c.g, c.t4));
        } else {
            for (int32_t i = 0; i < rt_gallocr_plan_count(ga); i++)
                assert_false(plan_at(ga, i).flags & in); /* gallocr-4.2 */
        }
        set_random(c.x, 11);
        compute(c.g);
        out[run] = get_floats(c.t5);
        rt_gallocr_destroy(ga);
        rt_context_destroy(ctx);
    }
    expect_same_floats(out[0], out[1], N_IN * 4, "gallocr-4.3");
    free(out[0]);
    free(out[1]);
    rt_buffer_free(bw);
    rt_context_destroy(cw);
}

/* gallocr-5: never in place over a leaf, an INPUT or an OUTPUT. */
static void test_inplace_never(void **state) {
    (void)state;
    rt_context_t *ctx = tu_context(1, true);
    rt_tensor_t *a = rt_new_tensor_1d(ctx, RT_TYPE_F32, 64), *b = rt_new_tensor_1d(ctx, RT_TYPE_F32, 64);
    rt_set_input(a);
    rt_tensor_t *s = rt_add(ctx, a, b);      /* over leafs: no */
    rt_tensor_t *o = rt_silu(ctx, s);        /* s is fine */
    rt_tensor_t *c = rt_cont(ctx, o);        /* CONT: never */
    rt_set_output(c);
    rt_tensor_t *d = rt_scale(ctx, c, 2.0f); /* over an OUTPUT: no */
    rt_graph_t *g = rt_graph_create(ctx, 16);
    rt_graph_build_forward_expand(g, d);
    rt_gallocr_t *ga = gallocr_new(0);
    CHECK_OK(rt_gallocr_reserve(ga, g));
    const uint32_t in = RT_GALLOCR_PLAN_INPLACE;
    assert_false(plan_at(ga, node_plan(g, s)).flags & in); /* gallocr-5.1 */
    assert_true(plan_at(ga, node_plan(g, o)).flags & in);  /* gallocr-5.2 */
    assert_false(plan_at(ga, node_plan(g, c)).flags & in); /* gallocr-5.3 */
    assert_false(plan_at(ga, node_plan(g, d)).flags & in); /* gallocr-5.4 */
    assert_int_equal(plan_at(ga, node_plan(g, c)).last, rt_graph_n_nodes(g) - 1); /* 5.5 */
    assert_int_equal(plan_at(ga, node_plan(g, a)).first, 0); /* gallocr-5.6 */
    rt_gallocr_destroy(ga);
    rt_context_destroy(ctx);
}

/* y = 2 t + t through two views of t = silu(x): the first view feeds the
 * SCALE, which must not take over t while the second view (second_view)
 * or t itself (otherwise) is still to be read. */
static void views_keep_base(bool second_view, const char *id) {
    rt_context_t *ctx = tu_context(1, true);
    rt_tensor_t *x = rt_new_tensor_2d(ctx, RT_TYPE_F32, 16, 4);
    rt_set_input(x);
    rt_tensor_t *t = rt_silu(ctx, x);
    rt_tensor_t *c = rt_scale(ctx, rt_reshape_1d(ctx, t, 64), 2.0f);
    rt_tensor_t *v2 = second_view ? rt_reshape_2d(ctx, t, 16, 4) : t;
    rt_tensor_t *y = rt_add(ctx, rt_reshape_2d(ctx, c, 16, 4), v2);
    rt_set_output(y);
    rt_graph_t *g = rt_graph_create(ctx, 32);
    rt_graph_build_forward_expand(g, v2); /* the second view runs before the SCALE */
    rt_graph_build_forward_expand(g, y);
    rt_gallocr_t *ga = gallocr_new(0);
    CHECK_OK(rt_gallocr_alloc_graph(ga, g));
    if (plan_at(ga, node_plan(g, c)).flags & RT_GALLOCR_PLAN_INPLACE)
        fail_msg("%s: SCALE writes over t, still needed", id);
    float xs[64];
    double ref[64];
    tu_seed(5);
    tu_fill(xs, 64, -2, 2);
    CHECK_OK(rt_tensor_set(x, xs, 0, sizeof xs));
    compute(g);
    for (int i = 0; i < 64; i++) ref[i] = 3.0 * xs[i] / (1.0 + exp(-(double)xs[i]));
    float *got = get_floats(y);
    if (!(tu_nmse_error(ref, got, 64) < 1e-5)) fail_msg("%s: wrong values", id);
    free(got);
    rt_gallocr_destroy(ga);
    rt_context_destroy(ctx);
}

/* gallocr-11: a view keeps its base alive. */
static void test_views_keep_base(void **state) {
    (void)state;
    views_keep_base(true, "gallocr-11.1");
    views_keep_base(false, "gallocr-11.2");
}

/* A chain in which every op of the in-place list writes over its input:
 * t = scale(x), rope, rms_norm, norm, gelu, sub, div, swiglu, then through
 * a reshape (a view at offset 0) diag_mask_inf and soft_max with a mask. */
typedef struct op_chain {
    rt_tensor_t *x, *pos, *bias, *den, *mask, *out;
    rt_tensor_t *steps[10];
    int n_steps;
    rt_graph_t *g;
} op_chain_t;

static rt_tensor_t *step(op_chain_t *c, rt_tensor_t *t) {
    c->steps[c->n_steps++] = t;
    return t;
}

static op_chain_t op_chain_graph(rt_context_t *ctx) {
    op_chain_t c = {0};
    c.x = rt_new_tensor_3d(ctx, RT_TYPE_F32, 16, 4, 2); /* head_dim, n_head, n_tok */
    c.pos = rt_new_tensor_1d(ctx, RT_TYPE_I32, 2);
    c.bias = rt_new_tensor_1d(ctx, RT_TYPE_F32, 16);
    c.den = rt_new_tensor_3d(ctx, RT_TYPE_F32, 16, 4, 2);
    c.mask = rt_new_tensor_2d(ctx, RT_TYPE_F32, 16, 8);
    rt_set_input(c.x);
    rt_set_input(c.pos);
    rt_tensor_t *t = rt_scale(ctx, c.x, 1.5f);
    t = step(&c, rt_rope(ctx, t, c.pos, 16, RT_ROPE_MODE_NEOX));
    t = step(&c, rt_rms_norm(ctx, t, 1e-5f));
    t = step(&c, rt_norm(ctx, t, 1e-5f));
    t = step(&c, rt_gelu(ctx, t));
    t = step(&c, rt_sub(ctx, t, c.bias));
    t = step(&c, rt_div(ctx, t, c.den));
    t = step(&c, rt_swiglu(ctx, t, c.x));
    t = step(&c, rt_diag_mask_inf(ctx, rt_reshape_2d(ctx, t, 16, 8), 4));
    c.out = step(&c, rt_soft_max_ext(ctx, t, c.mask, 0.5f));
    rt_set_output(c.out);
    c.g = rt_graph_create(ctx, 64);
    rt_graph_build_forward_expand(c.g, c.out);
    return c;
}

static void op_chain_fill(const op_chain_t *c) {
    const int32_t pos[2] = {3, 7};
    float den[128];
    for (int i = 0; i < 128; i++) den[i] = 1.0f + (float)(i % 7) / 7.0f;
    set_random(c->x, 21);
    set_random(c->bias, 22);
    set_random(c->mask, 23);
    CHECK_OK(rt_tensor_set(c->pos, pos, 0, sizeof pos));
    CHECK_OK(rt_tensor_set(c->den, den, 0, sizeof den));
}

/* gallocr-13: each op of the in-place list writes over its input on the CPU
 * device and computes what it computes into fresh bytes. */
static void test_inplace_ops(void **state) {
    (void)state;
    float *out[2];
    for (int run = 0; run < 2; run++) {
        rt_context_t *ctx = tu_context(1, true);
        op_chain_t c = op_chain_graph(ctx);
        rt_gallocr_t *ga = gallocr_new(run == 0 ? 0 : RT_GALLOCR_FLAG_NO_REUSE);
        CHECK_OK(rt_gallocr_alloc_graph(ga, c.g));
        for (int i = 0; run == 0 && i < c.n_steps; i++)
            if (!(plan_at(ga, node_plan(c.g, c.steps[i])).flags & RT_GALLOCR_PLAN_INPLACE))
                fail_msg("gallocr-13.1: %s is not in place", rt_op_name(c.steps[i]->op));
        op_chain_fill(&c);
        compute(c.g);
        out[run] = get_floats(c.out);
        rt_gallocr_destroy(ga);
        rt_context_destroy(ctx);
    }
    expect_same_floats(out[0], out[1], 128, "gallocr-13.2");
    free(out[0]);
    free(out[1]);
}

//===--- random DAGs ---===//

#define RD_MAX 80

typedef struct rdag {
    rt_context_t *ctx;
    rt_tensor_t *pool[RD_MAX];
    int n;
    rt_tensor_t *outs[RD_MAX];
    int n_outs;
    rt_graph_t *g;
} rdag_t;

static int64_t rnd(int64_t lo, int64_t hi) { return lo + (int64_t)(tu_next() % (uint64_t)(hi - lo + 1)); }

static rt_tensor_t *rd_leaf(rdag_t *d, const int64_t ne[4]) {
    rt_tensor_t *t = rt_new_tensor_4d(d->ctx, RT_TYPE_F32, ne[0], ne[1], ne[2], ne[3]);
    if (rnd(0, 3)) rt_set_input(t);
    return t;
}

static rt_tensor_t *rd_new_leaf(rdag_t *d) {
    /* Widths from 1 to 40 floats: blocks of many sizes exercise best fit. */
    const int64_t ne[4] = {rnd(0, 3) ? rnd(1, 8) : rnd(9, 40), rnd(1, 5), rnd(1, 3), rnd(1, 2)};
    return rd_leaf(d, ne);
}

static rt_tensor_t *rd_pick(const rdag_t *d) { return d->pool[rnd(0, d->n - 1)]; }

/* A pool tensor for which ok(t, ref) holds, starting at a random place. */
static rt_tensor_t *rd_find(const rdag_t *d, bool (*ok)(const rt_tensor_t *, const rt_tensor_t *),
                            const rt_tensor_t *ref) {
    const int start = (int)rnd(0, d->n - 1);
    for (int k = 0; k < d->n; k++) {
        rt_tensor_t *t = d->pool[(start + k) % d->n];
        if (ok(t, ref)) return t;
    }
    return NULL;
}

static bool repeats_into(const rt_tensor_t *b, const rt_tensor_t *a) { return rt_can_repeat(b, a); }

static rt_tensor_t *rd_binary(rdag_t *d) {
    rt_tensor_t *a = rd_pick(d), *b = rnd(0, 1) ? rd_find(d, repeats_into, a) : NULL;
    if (b == NULL) {
        int64_t ne[4];
        for (int i = 0; i < 4; i++) ne[i] = rnd(0, 1) ? a->ne[i] : 1;
        b = rd_leaf(d, ne);
    }
    return rnd(0, 1) ? rt_add(d->ctx, a, b) : rt_mul(d->ctx, a, b);
}

static bool rows_f32(const rt_tensor_t *t, const rt_tensor_t *ref) {
    (void)ref;
    return t->nb[0] == sizeof(float);
}

static bool mm_a_fits(const rt_tensor_t *a, const rt_tensor_t *b) {
    return a->ne[0] == b->ne[0] && a->nb[0] == sizeof(float) && !rt_is_transposed(a) &&
           b->ne[2] % a->ne[2] == 0 && b->ne[3] % a->ne[3] == 0;
}

static rt_tensor_t *rd_mul_mat(rdag_t *d) {
    rt_tensor_t *b = rd_find(d, rows_f32, NULL);
    if (b == NULL) b = rt_cont(d->ctx, rd_pick(d));
    rt_tensor_t *a = rnd(0, 1) ? rd_find(d, mm_a_fits, b) : NULL;
    if (a == NULL) {
        const int64_t ne[4] = {b->ne[0], rnd(1, 8), rnd(0, 1) ? b->ne[2] : 1, rnd(0, 1) ? b->ne[3] : 1};
        a = rd_leaf(d, ne);
    }
    return rt_mul_mat(d->ctx, a, b);
}

static bool contiguous(const rt_tensor_t *t, const rt_tensor_t *ref) {
    (void)ref;
    return rt_is_contiguous(t);
}

/* Rows r0 .. r0+n of a contiguous tensor, as a 2-d view at an offset. */
static rt_tensor_t *rd_view(rdag_t *d) {
    rt_tensor_t *a = rd_find(d, contiguous, NULL);
    if (a == NULL) return rt_cont(d->ctx, rd_pick(d));
    /* Rows are row_size apart (a dimension of 1 may carry any stride). */
    const size_t row = (size_t)a->ne[0] * sizeof(float);
    const int64_t rows = rt_nrows(a), r0 = rnd(0, rows - 1), n = rnd(1, rows - r0);
    return rt_view_2d(d->ctx, a, a->ne[0], n, row, (size_t)r0 * row);
}

/* A contiguous tensor seen flat or as rows: a view at offset 0 with the
 * strides of a new tensor, so elementwise ops may write over its base. */
static rt_tensor_t *rd_reshape(rdag_t *d) {
    rt_tensor_t *a = rd_find(d, contiguous, NULL);
    if (a == NULL) return rt_cont(d->ctx, rd_pick(d));
    return rnd(0, 1) ? rt_reshape_1d(d->ctx, a, rt_nelements(a))
                     : rt_reshape_2d(d->ctx, a, a->ne[0], rt_nrows(a));
}

static rt_tensor_t *rd_permute(rdag_t *d) {
    int ax[4] = {0, 1, 2, 3};
    for (int i = 3; i > 0; i--) {
        const int j = (int)rnd(0, i), t = ax[i];
        ax[i] = ax[j];
        ax[j] = t;
    }
    return rt_permute(d->ctx, rd_pick(d), ax[0], ax[1], ax[2], ax[3]);
}

static rt_tensor_t *rd_op(rdag_t *d) {
    switch (rnd(0, 9)) {
    case 0: case 1: return rd_binary(d);
    case 2: return rt_scale(d->ctx, rd_pick(d), tu_uniform(-2, 2));
    case 3: return rt_silu(d->ctx, rd_pick(d));
    case 4: return rd_mul_mat(d);
    case 5: return rt_soft_max(d->ctx, rd_pick(d));
    case 6: return rt_cont(d->ctx, rd_pick(d));
    case 7: return rd_view(d);
    case 8: return rd_reshape(d);
    default: return rd_permute(d);
    }
}

/* The same seed builds the same graph, so two contexts get twins. */
static void rd_build(rdag_t *d, uint64_t seed) {
    memset(d, 0, sizeof *d);
    d->ctx = tu_context(2, true);
    tu_seed(seed);
    for (int n = (int)rnd(1, 3); d->n < n;) d->pool[d->n++] = rd_new_leaf(d);
    for (int k = (int)rnd(4, 60); k > 0 && d->n < RD_MAX; k--) {
        rt_tensor_t *t = rd_op(d);
        rt_format_name(t, "t%d", d->n);
        d->pool[d->n++] = t;
        if (rnd(0, 11) == 0) d->outs[d->n_outs++] = t;
    }
    d->outs[d->n_outs++] = d->pool[d->n - 1];
    d->g = rt_graph_create(d->ctx, 512);
    for (int i = 0; i < d->n_outs; i++) {
        rt_set_output(d->outs[i]);
        rt_graph_build_forward_expand(d->g, d->outs[i]);
    }
}

/* Two entries may share bytes at the same time only as one storage (a view
 * and its base) or at the one node where a block changes hands in place. */
static bool may_share(const rt_gallocr_plan_entry_t *e, int32_t p, int32_t q) {
    const int32_t rp = (e[p].flags & RT_GALLOCR_PLAN_VIEW) ? e[p].base : p;
    const int32_t rq = (e[q].flags & RT_GALLOCR_PLAN_VIEW) ? e[q].base : q;
    if (rp == rq) return true;
    const int32_t t0 = e[p].first > e[q].first ? e[p].first : e[q].first;
    const int32_t t1 = e[p].last < e[q].last ? e[p].last : e[q].last;
    return t0 == t1 && ((e[rq].inplace_of == rp && e[rq].first == t0) ||
                        (e[rp].inplace_of == rq && e[rp].first == t0));
}

/* gallocr-6.1..6.3 on one plan: no overlap in space and time, every tensor
 * inside its buffer, every read inside the lifetime of what it reads. */
static void check_plan(const rt_gallocr_t *ga, const rt_graph_t *g, uint64_t seed) {
    const int32_t n = rt_gallocr_plan_count(ga), nl = rt_graph_n_leafs(g);
    rt_gallocr_plan_entry_t *e = calloc((size_t)n, sizeof e[0]);
    for (int32_t p = 0; p < n; p++) e[p] = plan_at(ga, p);
    for (int32_t p = 0; p < n; p++) {
        if (e[p].buffer_id < 0) continue;
        const rt_tensor_t *t = p < nl ? rt_graph_leaf(g, p) : rt_graph_node(g, p - nl);
        const char *base = rt_buffer_base(rt_gallocr_get_buffer(ga, e[p].buffer_id));
        const size_t cap = rt_gallocr_get_buffer_size(ga, e[p].buffer_id);
        if (e[p].offset + e[p].size > cap || (const char *)t->data != base + e[p].offset ||
            e[p].first > e[p].last)
            fail_msg("gallocr-6.1 seed %llu: '%s' at %zu+%zu, buffer %zu", (unsigned long long)seed,
                     e[p].name, e[p].offset, e[p].size, cap);
        for (int32_t q = p + 1; q < n; q++) {
            if (e[q].buffer_id != e[p].buffer_id) continue;
            const bool space = e[p].offset < e[q].offset + e[q].size && e[q].offset < e[p].offset + e[p].size;
            const bool time = e[p].first <= e[q].last && e[q].first <= e[p].last;
            if (space && time && e[p].size && e[q].size && !may_share(e, p, q))
                fail_msg("gallocr-6.2 seed %llu: '%s' [%zu,+%zu) nodes %d..%d overlaps '%s' "
                         "[%zu,+%zu) nodes %d..%d", (unsigned long long)seed, e[p].name,
                         e[p].offset, e[p].size, e[p].first, e[p].last, e[q].name, e[q].offset,
                         e[q].size, e[q].first, e[q].last);
        }
    }
    for (int32_t i = 0; i < rt_graph_n_nodes(g); i++) {
        const rt_tensor_t *t = rt_graph_node(g, i);
        for (int s = 0; s < RT_MAX_SRC && t->src[s] != NULL; s++) {
            const int32_t p = node_plan(g, t->src[s]), b = e[p].base;
            const bool ok = e[p].first <= i && i <= e[p].last &&
                            (b < 0 || e[b].buffer_id < 0 || (e[b].first <= i && i <= e[b].last));
            if (!ok) fail_msg("gallocr-6.3 seed %llu: node %d reads '%s' outside its lifetime",
                              (unsigned long long)seed, (int)i, e[p].name);
        }
    }
    free(e);
}

/* Every leaf, or only the INPUT ones (written before each run). */
static void rd_fill_leafs(const rdag_t *d, uint64_t seed, bool inputs_only) {
    for (int32_t i = 0; i < rt_graph_n_leafs(d->g); i++) {
        rt_tensor_t *t = rt_graph_leaf(d->g, i);
        if (!inputs_only || (t->flags & RT_TENSOR_FLAG_INPUT))
            set_random(t, seed * 1000 + (uint64_t)i);
    }
}

/* gallocr-6: random DAGs over add, mul, scale, silu, mul_mat, soft_max,
 * cont, views, reshapes and permutes; the plan holds its invariants and the
 * outputs equal those of a run without reuse, also when the graph runs a
 * second time with only its INPUT leafs written again. */
static void test_random_dags(void **state) {
    (void)state;
    for (uint64_t seed = 1; seed <= 500; seed++) {
        rdag_t d[2];
        rt_gallocr_t *ga[2];
        float *out[2][RD_MAX];
        for (int run = 0; run < 2; run++) {
            rd_build(&d[run], seed);
            ga[run] = gallocr_new(run == 0 ? 0 : RT_GALLOCR_FLAG_NO_REUSE);
            CHECK_OK(rt_gallocr_reserve(ga[run], d[run].g));
            CHECK_OK(rt_gallocr_alloc_graph(ga[run], d[run].g));
            check_plan(ga[run], d[run].g, seed);
            rd_fill_leafs(&d[run], seed, false);
            compute(d[run].g);
            if (run == 0) { /* again, with the inputs set anew: the other leafs kept */
                rd_fill_leafs(&d[run], seed, true);
                compute(d[run].g);
            }
            for (int o = 0; o < d[run].n_outs; o++) out[run][o] = get_floats(d[run].outs[o]);
        }
        const size_t peak = rt_gallocr_get_peak(ga[0], 0), bound = rt_gallocr_get_lower_bound(ga[0], 0);
        if (!(bound <= peak && peak <= rt_gallocr_get_peak(ga[1], 0))) /* gallocr-6.4 */
            fail_msg("gallocr-6.4 seed %llu: bound %zu, peak %zu, without reuse %zu",
                     (unsigned long long)seed, bound, peak, rt_gallocr_get_peak(ga[1], 0));
        for (int o = 0; o < d[0].n_outs; o++) {
            char id[160];
            snprintf(id, sizeof id, "gallocr-6.5 seed %llu output %s", (unsigned long long)seed,
                     d[0].outs[o]->name);
            expect_same_floats(out[0][o], out[1][o], rt_nbytes(d[0].outs[o]) / sizeof(float), id);
            free(out[0][o]);
            free(out[1][o]);
        }
        for (int run = 0; run < 2; run++) {
            rt_gallocr_destroy(ga[run]);
            rt_context_destroy(d[run].ctx);
        }
    }
}

//===--- several buffers ---===//

/* gallocr-7: the first layer in buffer 0, the second in buffer 1: the plan
 * says so, no block changes buffer in place, and the result is right. */
static void test_two_buffers(void **state) {
    mlp_t *m = *state;
    rt_buffer_type_t *two[2] = {cpu_buft(), cpu_buft()};
    rt_gallocr_t *ga;
    CHECK_OK(rt_gallocr_create_n(two, 2, &ga));
    rt_context_t *ctx = tu_context(1, true);
    rt_tensor_t *x, *y;
    rt_graph_t *g = mlp_graph(ctx, m, 5, &x, &y);
    const int32_t node_ids[5] = {0, 0, 0, 1, 1}, bad[5] = {0, 0, 2, 1, 1};
    int32_t leaf_ids[16] = {0};
    assert_int_equal(rt_gallocr_reserve_n(ga, g, bad, leaf_ids), RT_ERR_INVALID_ARGUMENT);
    CHECK_OK(rt_gallocr_reserve_n(ga, g, node_ids, leaf_ids));
    const int32_t nl = rt_graph_n_leafs(g);
    for (int32_t i = 0; i < 5; i++) {
        const rt_gallocr_plan_entry_t e = plan_at(ga, nl + i);
        assert_int_equal(e.buffer_id, node_ids[i]); /* gallocr-7.1 */
        if (e.flags & RT_GALLOCR_PLAN_INPLACE)
            assert_int_equal(plan_at(ga, e.inplace_of).buffer_id, e.buffer_id); /* 7.2 */
    }
    assert_true(rt_gallocr_get_buffer_size(ga, 0) > 0 && rt_gallocr_get_buffer_size(ga, 1) > 0);
    CHECK_OK(rt_gallocr_alloc_graph(ga, g));
    assert_ptr_equal(y->buffer, rt_gallocr_get_buffer(ga, 1)); /* gallocr-7.3 */
    mlp_run_check(m, g, x, y, 5, "gallocr-7.4");
    rt_gallocr_destroy(ga);
    rt_context_destroy(ctx);
}

//===--- the linear allocator ---===//

/* gallocr-8: tallocr hands out aligned offsets in order and reports a full
 * buffer with a message instead of aborting. */
static void test_tallocr(void **state) {
    (void)state;
    rt_buffer_t *buf;
    CHECK_OK(rt_buffer_alloc(cpu_buft(), 1024, &buf));
    rt_context_t *ctx = tu_context(1, true);
    rt_tensor_t *a = rt_new_tensor_1d(ctx, RT_TYPE_F32, 10); /* 40 bytes -> 64 */
    rt_tensor_t *b = rt_set_name(rt_new_tensor_1d(ctx, RT_TYPE_F32, 256), "too_big");
    rt_tensor_t *c = rt_new_tensor_1d(ctx, RT_TYPE_F32, 16);
    rt_tallocr_t ta;
    CHECK_OK(rt_tallocr_init(&ta, buf));
    CHECK_OK(rt_tallocr_alloc(&ta, a));
    assert_ptr_equal(a->data, rt_buffer_base(buf)); /* gallocr-8.1 */
    assert_int_equal(rt_tallocr_alloc(&ta, b), RT_ERR_OUT_OF_MEMORY); /* gallocr-8.2 */
    assert_non_null(strstr(rt_last_error(), "too_big"));
    assert_null(b->data);
    CHECK_OK(rt_tallocr_alloc(&ta, c)); /* gallocr-8.3: still usable */
    assert_ptr_equal(c->data, (char *)rt_buffer_base(buf) + 64);
    assert_int_equal(rt_tallocr_alloc(&ta, rt_view_1d(ctx, c, 4, 0)), RT_ERR_INVALID_ARGUMENT);
    rt_context_destroy(ctx);
    rt_buffer_free(buf);
}

/* A registry of the fake plugin alone, configured through env = value
 * (FAKE_MAX_SIZE: its buffer type's max size; FAKE_ALLOC_FAILS). */
static rt_registry_t *fake_registry(const char *env, const char *value) {
    char dir[PATH_MAX], path[PATH_MAX + 16]; /* the registry takes absolute paths only */
    if (realpath(tu_build_dir(), dir) == NULL) fail_msg("no build directory %s", tu_build_dir());
    snprintf(path, sizeof path, "%s/tests/plugins", dir);
    rt_registry_options_t opt = {.struct_size = sizeof opt, .plugin_path = path};
    rt_registry_t *reg = NULL;
    setenv("RT_PLUGINS", "fake", 1);
    setenv(env, value, 1);
    const rt_status_t st = rt_registry_create(&opt, &reg);
    CHECK_OK(st);
    /* The plugin reads its environment when it starts: at the lookup. */
    const bool found = rt_registry_device_by_name(reg, "fake0") != NULL;
    unsetenv("RT_PLUGINS");
    unsetenv(env);
    if (!found) fail_msg("no fake plugin in %s", path);
    return reg;
}

/* gallocr-9: rt_alloc_ctx_tensors fills buffers of at most the type's max
 * size in creation order, chained from the one it returns. */
static void test_ctx_tensors_split(void **state) {
    (void)state;
    rt_registry_t *reg = fake_registry("FAKE_MAX_SIZE", "1024");
    rt_buffer_type_t *bt = rt_device_buffer_type(rt_registry_device_by_name(reg, "fake0"), 0);
    assert_int_equal(rt_buffer_type_max_size(bt), 1024);
    rt_context_t *ctx = tu_context(1, true);
    const int64_t n[5] = {256, 100, 100, 10, 200}; /* padded: 1024 | 448 448 64 | 832 */
    rt_tensor_t *t[5];
    for (int i = 0; i < 5; i++) t[i] = rt_new_tensor_1d(ctx, RT_TYPE_F32, n[i]);
    rt_tensor_t *v = rt_view_1d(ctx, t[4], 8, 16);
    rt_buffer_t *buf = NULL;
    CHECK_OK(rt_alloc_ctx_tensors(ctx, bt, &buf));
    assert_ptr_equal(t[0]->buffer, buf); /* gallocr-9.1 */
    assert_int_equal(rt_buffer_size(buf), 1024);
    assert_true(t[1]->buffer != buf && t[1]->buffer == t[2]->buffer && t[2]->buffer == t[3]->buffer);
    assert_true(t[4]->buffer != buf && t[4]->buffer != t[1]->buffer); /* gallocr-9.2 */
    assert_int_equal(rt_buffer_size(t[1]->buffer), 448 + 448 + 64);
    assert_ptr_equal(v->data, (char *)t[4]->data + 16); /* gallocr-9.3 */
    for (int i = 0; i < 5; i++) { /* gallocr-9.4: the bytes are real */
        set_random(t[i], 50 + (uint64_t)i);
        float *got = get_floats(t[i]);
        float want[256];
        tu_seed(50 + (uint64_t)i);
        tu_fill(want, (size_t)n[i], -0.5f, 0.5f);
        assert_memory_equal(got, want, (size_t)n[i] * sizeof(float));
        free(got);
    }
    rt_buffer_free(buf); /* frees the other parts with it */
    rt_context_destroy(ctx);
    ctx = tu_context(1, true); /* gallocr-9.5: a tensor no buffer can hold */
    rt_tensor_t *big = rt_set_name(rt_new_tensor_1d(ctx, RT_TYPE_F32, 300), "big");
    rt_tensor_t *small = rt_new_tensor_1d(ctx, RT_TYPE_F32, 4);
    assert_int_equal(rt_alloc_ctx_tensors(ctx, bt, &buf), RT_ERR_UNSUPPORTED);
    assert_non_null(strstr(rt_last_error(), "'big' needs 1216 bytes"));
    assert_null(buf);
    assert_null(big->data);
    assert_null(small->data);
    rt_context_destroy(ctx);
    rt_registry_destroy(reg);
}

//===--- the plan, shown ---===//

typedef struct text {
    char *data;
    size_t len, cap;
} text_t;

static void text_write(const char *s, size_t n, void *user_data) {
    text_t *t = user_data;
    if (t->len + n + 1 > t->cap) {
        t->cap = 2 * (t->len + n + 1);
        t->data = realloc(t->data, t->cap);
    }
    memcpy(t->data + t->len, s, n);
    t->len += n;
    t->data[t->len] = 0;
}

/* gallocr-12: the text dump and the SVG picture. */
static void test_plan_output(void **state) {
    mlp_t *m = *state;
    rt_context_t *ctx = tu_context(1, true);
    rt_tensor_t *x, *y;
    rt_graph_t *g = mlp_graph(ctx, m, 4, &x, &y);
    rt_set_name(rt_graph_node(g, 2), "a<&>\"");
    rt_gallocr_t *ga = gallocr_new(0);
    CHECK_OK(rt_gallocr_reserve(ga, g));
    text_t t = {0}, s = {0};
    rt_gallocr_write_plan_text(ga, text_write, &t);
    assert_non_null(strstr(t.data, "buffer 0 CPU: peak 768 bytes")); /* gallocr-12.1 */
    assert_non_null(strstr(t.data, "in place of"));
    assert_non_null(strstr(t.data, "y_b"));
    rt_gallocr_write_plan_svg(ga, text_write, &s);
    assert_true(strncmp(s.data, "<svg", 4) == 0); /* gallocr-12.2 */
    assert_string_equal(s.data + s.len - 7, "</svg>\n");
    assert_non_null(strstr(s.data, "<title>y_b (ADD f32): 128 bytes"));
    assert_non_null(strstr(s.data, "a&lt;&amp;&gt;&quot;")); /* gallocr-12.3 */
    assert_null(strstr(s.data, "a<&"));
    int rects = 0;
    for (const char *p = s.data; (p = strstr(p, "<rect x")) != NULL; p++) rects++;
    assert_true(rects >= 7); /* the plot area, x and the five nodes */
    free(t.data);
    free(s.data);
    rt_gallocr_destroy(ga);
    rt_context_destroy(ctx);
}

/* A plan of 4 KiB on the fake device, whose buffer cannot be had:
 * OUT_OF_MEMORY with the size, the plan and its peak still readable, and
 * alloc_graph failing the same way rather than placing anything. */
static void errors_out_of_memory(const char *env, const char *value, const char *needle) {
    rt_registry_t *reg = fake_registry(env, value);
    rt_gallocr_t *ga = NULL;
    CHECK_OK(rt_gallocr_create(rt_device_buffer_type(rt_registry_device_by_name(reg, "fake0"), 0),
                               &ga));
    rt_context_t *ctx = tu_context(1, true);
    rt_tensor_t *t = rt_new_tensor_1d(ctx, RT_TYPE_F32, 512);
    rt_tensor_t *y = rt_scale(ctx, rt_silu(ctx, t), 2.0f);
    rt_set_output(y);
    rt_graph_t *g = rt_graph_create(ctx, 8);
    rt_graph_build_forward_expand(g, y);
    assert_int_equal(rt_gallocr_reserve(ga, g), RT_ERR_OUT_OF_MEMORY);
    if (strstr(rt_last_error(), "4096 bytes") == NULL || strstr(rt_last_error(), needle) == NULL)
        fail_msg("gallocr-10: message \"%s\" lacks the size or \"%s\"", rt_last_error(), needle);
    assert_int_equal(rt_gallocr_get_peak(ga, 0), 4096);
    assert_int_equal(rt_gallocr_plan_count(ga), 3);
    assert_int_equal(rt_gallocr_get_buffer_size(ga, 0), 0);
    assert_int_equal(rt_gallocr_alloc_graph(ga, g), RT_ERR_OUT_OF_MEMORY);
    assert_null(y->data);
    rt_context_destroy(ctx);
    rt_gallocr_destroy(ga);
    rt_registry_destroy(reg);
}

/* gallocr-10: misuse and empty states. */
static void test_errors(void **state) {
    (void)state;
    rt_gallocr_t *ga = gallocr_new(0);
    rt_gallocr_plan_entry_t e = {.struct_size = sizeof e};
    assert_int_equal(rt_gallocr_plan_count(ga), 0);
    assert_int_equal(rt_gallocr_plan_get(ga, 0, &e), RT_ERR_MISUSE); /* gallocr-10.1 */
    assert_int_equal(rt_gallocr_get_buffer_size(ga, 5), 0);
    assert_null(rt_gallocr_get_buffer(ga, -1));
    rt_gallocr_t *none = NULL;
    assert_int_equal(rt_gallocr_create_n(NULL, 0, &none), RT_ERR_INVALID_ARGUMENT);
    assert_null(none);
    rt_gallocr_destroy(NULL); /* gallocr-10.2 */
    rt_gallocr_destroy(ga);
    errors_out_of_memory("FAKE_MAX_SIZE", "1024", "more than the largest buffer"); /* 10.3 */
    errors_out_of_memory("FAKE_ALLOC_FAILS", "1", "fake0: out of memory");        /* 10.4 */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_mlp_two_blocks, mlp_setup, mlp_teardown),
        cmocka_unit_test_setup_teardown(test_worst_case_reserve, mlp_setup, mlp_teardown),
        cmocka_unit_test_setup_teardown(test_alloc_without_reserve, mlp_setup, mlp_teardown),
        cmocka_unit_test(test_inplace_chain),
        cmocka_unit_test(test_inplace_never),
        cmocka_unit_test(test_random_dags),
        cmocka_unit_test_setup_teardown(test_two_buffers, mlp_setup, mlp_teardown),
        cmocka_unit_test(test_tallocr),
        cmocka_unit_test_setup_teardown(test_plan_output, mlp_setup, mlp_teardown),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_views_keep_base),
        cmocka_unit_test(test_ctx_tensors_split),
        cmocka_unit_test(test_inplace_ops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
