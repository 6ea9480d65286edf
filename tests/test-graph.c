/* SPDX-License-Identifier: MIT */
/* test-graph.c: building graphs. A two-layer MLP lands
 * in leafs and nodes in depth-first order with the right use counts; shared
 * ancestors are added once; views come after their bases; the text and DOT
 * dumps name what they should. No device is needed. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct mlp {
    rt_tensor_t *x, *W1, *b1, *W2, *b2;
    rt_tensor_t *mm1, *h1, *h, *mm2, *y;
} mlp_t;

/* A two-layer MLP: y = W2 . gelu(W1 . x + b1) + b2. */
static mlp_t build_mlp(rt_context_t *ctx) {
    enum { N_IN = 16, N_HID = 32, N_OUT = 8, N = 4 };
    mlp_t m;
    m.x = rt_set_name(rt_new_tensor_2d(ctx, RT_TYPE_F32, N_IN, N), "x");
    m.W1 = rt_set_name(rt_new_tensor_2d(ctx, RT_TYPE_F16, N_IN, N_HID), "W1");
    m.b1 = rt_set_name(rt_new_tensor_1d(ctx, RT_TYPE_F32, N_HID), "b1");
    m.W2 = rt_set_name(rt_new_tensor_2d(ctx, RT_TYPE_Q8_0, N_HID, N_OUT), "W2");
    m.b2 = rt_set_name(rt_new_tensor_1d(ctx, RT_TYPE_F32, N_OUT), "b2");
    m.mm1 = rt_set_name(rt_mul_mat(ctx, m.W1, m.x), "mm1");
    m.h1 = rt_set_name(rt_add(ctx, m.mm1, m.b1), "h1");
    m.h = rt_set_name(rt_gelu(ctx, m.h1), "h");
    m.mm2 = rt_set_name(rt_mul_mat(ctx, m.W2, m.h), "mm2");
    m.y = rt_set_name(rt_add(ctx, m.mm2, m.b2), "y");
    return m;
}

static void test_mlp_order(void **state) {
    (void)state;
    rt_context_t *ctx = tu_context(1, true);
    mlp_t m = build_mlp(ctx);
    const size_t used = rt_context_used_mem(ctx);
    rt_graph_t *g = rt_graph_create(ctx, 16);
    assert_int_equal(rt_context_used_mem(ctx) - used, rt_graph_overhead(16)); /* graph-1.1 */
    assert_int_equal(rt_graph_size(g), 16);
    rt_graph_build_forward_expand(g, m.y);
    /* graph-1.2: depth first, sources in order: y's src[0] (mm2) is walked first */
    rt_tensor_t *leafs[] = {m.W2, m.W1, m.x, m.b1, m.b2};
    rt_tensor_t *nodes[] = {m.mm1, m.h1, m.h, m.mm2, m.y};
    assert_int_equal(rt_graph_n_leafs(g), 5);
    assert_int_equal(rt_graph_n_nodes(g), 5);
    for (int i = 0; i < 5; i++) {
        assert_ptr_equal(rt_graph_leaf(g, i), leafs[i]);
        assert_ptr_equal(rt_graph_node(g, i), nodes[i]);
        assert_ptr_equal(rt_graph_nodes(g)[i], nodes[i]);
    }
    /* graph-1.3: negative indices count from the end */
    assert_ptr_equal(rt_graph_node(g, -1), m.y);
    assert_ptr_equal(rt_graph_node(g, -5), m.mm1);
    assert_ptr_equal(rt_graph_leaf(g, -1), m.b2);
    /* out of range: NULL and RT_ERR_MISUSE's message, never an abort */
    assert_null(rt_graph_node(g, 5));
    assert_non_null(strstr(rt_last_error(), "index 5 is out of range for 5 nodes"));
    assert_null(rt_graph_leaf(g, -6));
    assert_non_null(strstr(rt_last_error(), "index -6"));
    /* graph-1.4: use counts, -1 for strangers */
    rt_tensor_t *all[] = {m.x, m.W1, m.b1, m.W2, m.b2, m.mm1, m.h1, m.h, m.mm2};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        assert_true(rt_graph_contains(g, all[i]));
        assert_int_equal(rt_graph_use_count(g, all[i]), 1);
    }
    assert_int_equal(rt_graph_use_count(g, m.y), 0);
    rt_tensor_t *stranger = rt_new_tensor_1d(ctx, RT_TYPE_F32, 3);
    assert_int_equal(rt_graph_use_count(g, stranger), -1);
    assert_false(rt_graph_contains(g, stranger));
    /* graph-1.5: by name, leafs and nodes */
    assert_ptr_equal(rt_graph_get_tensor(g, "W1"), m.W1);
    assert_ptr_equal(rt_graph_get_tensor(g, "h"), m.h);
    assert_null(rt_graph_get_tensor(g, "nope"));
    rt_context_destroy(ctx);
}

static void test_expand_again(void **state) {
    (void)state;
    rt_context_t *ctx = tu_context(1, true);
    mlp_t m = build_mlp(ctx);
    rt_graph_t *g = rt_graph_create(ctx, 16);
    rt_graph_build_forward_expand(g, m.y);
    rt_graph_build_forward_expand(g, m.y); /* graph-2.1: nothing new */
    rt_graph_build_forward_expand(g, m.h);
    assert_int_equal(rt_graph_n_nodes(g), 5);
    assert_int_equal(rt_graph_n_leafs(g), 5);
    assert_int_equal(rt_graph_use_count(g, m.h), 1);
    /* graph-2.2: a second output sharing h adds one node and one use of h */
    rt_tensor_t *z = rt_scale(ctx, m.h, 2.0f);
    rt_graph_build_forward_expand(g, z);
    assert_int_equal(rt_graph_n_nodes(g), 6);
    assert_ptr_equal(rt_graph_node(g, -1), z);
    assert_int_equal(rt_graph_use_count(g, m.h), 2);
    /* graph-2.3: a tensor read twice by one node counts twice */
    rt_tensor_t *sq = rt_mul(ctx, m.y, m.y);
    rt_graph_build_forward_expand(g, sq);
    assert_int_equal(rt_graph_use_count(g, m.y), 2);
    /* graph-2.4: reset empties the graph, same capacity */
    rt_graph_reset(g);
    assert_int_equal(rt_graph_n_nodes(g), 0);
    assert_int_equal(rt_graph_n_leafs(g), 0);
    assert_false(rt_graph_contains(g, m.y));
    assert_int_equal(rt_graph_size(g), 16);
    rt_graph_build_forward_expand(g, m.h);
    assert_int_equal(rt_graph_n_nodes(g), 3);
    assert_int_equal(rt_graph_n_leafs(g), 3);
    rt_context_destroy(ctx);
}

static void test_graph_full(void **state) {
    (void)state;
    rt_context_t *ctx = tu_context(1, true);
    mlp_t m = build_mlp(ctx);
    rt_graph_t *g = rt_graph_create(ctx, 4); /* graph-3.1: 5 leafs do not fit in 4 */
    TU_EXPECT_ABORT(rt_graph_build_forward_expand(g, m.y), "graph full: 4 leafs (size 4)");
    assert_non_null(strstr(tu_abort_message, "b2{8,1,1,1}:f32"));
    g = rt_graph_create(ctx, 3); /* graph-3.2: h needs 3 nodes and 3 leafs: fits exactly */
    rt_graph_build_forward_expand(g, m.h);
    TU_EXPECT_ABORT(rt_graph_build_forward_expand(g, m.y), "graph full");
    TU_EXPECT_ABORT(rt_graph_create(ctx, 0), "rt_graph_create: size 0");
    rt_context_destroy(ctx);
}

/* Every source and view base of a node comes before it. */
static void expect_topological(const rt_graph_t *g) {
    for (int32_t i = 0; i < rt_graph_n_nodes(g); i++) {
        const rt_tensor_t *t = rt_graph_node(g, i);
        for (int s = 0; s <= RT_MAX_SRC; s++) {
            const rt_tensor_t *p = s < RT_MAX_SRC ? t->src[s] : t->view_src;
            if (p == NULL || p->op == RT_OP_NONE) continue;
            bool before = false;
            for (int32_t j = 0; j < i; j++) before |= rt_graph_node(g, j) == p;
            if (!before) fail_msg("node %d (%s) comes before its source %s", i, t->name, p->name);
        }
    }
}

static void test_views_in_graph(void **state) {
    (void)state;
    rt_context_t *ctx = tu_context(1, true);
    rt_tensor_t *cache = rt_set_name(rt_new_tensor_1d(ctx, RT_TYPE_F32, 4096), "cache");
    rt_tensor_t *cur = rt_set_name(rt_new_tensor_2d(ctx, RT_TYPE_F32, 64, 4), "cur");
    rt_tensor_t *k = rt_view_1d(ctx, cache, 256, 1024);
    rt_tensor_t *store = rt_cpy(ctx, cur, k); /* a KV-cache write */
    rt_tensor_t *K = rt_reshape_2d(ctx, rt_view_1d(ctx, cache, 512, 0), 64, 8);
    rt_tensor_t *KQ = rt_mul_mat(ctx, K, cur);
    rt_graph_t *g = rt_graph_create(ctx, 32);
    rt_graph_build_forward_expand(g, store);
    rt_graph_build_forward_expand(g, KQ);
    /* graph-4.1: views are nodes, their base a leaf, cast has no self-use */
    assert_int_equal(rt_graph_n_leafs(g), 2);
    assert_ptr_equal(rt_graph_leaf(g, 0), cur);
    assert_ptr_equal(rt_graph_leaf(g, 1), cache);
    assert_int_equal(rt_graph_n_nodes(g), 5); /* k, store, view, reshape, KQ */
    expect_topological(g);
    assert_int_equal(rt_graph_use_count(g, cache), 2); /* the two view_1d */
    assert_int_equal(rt_graph_use_count(g, cur), 2);
    rt_tensor_t *c = rt_cast(ctx, KQ, RT_TYPE_F16);
    rt_graph_build_forward_expand(g, c);
    assert_int_equal(rt_graph_use_count(g, c), 0);
    assert_int_equal(rt_graph_use_count(g, KQ), 1);
    rt_context_destroy(ctx);
}

//===--- dumps ---===//

typedef struct text_buf {
    char data[8192];
    size_t len;
} text_buf_t;

static void collect(const char *text, size_t len, void *user_data) {
    text_buf_t *b = user_data;
    if (b->len + len >= sizeof b->data) fail_msg("dump longer than %zu bytes", sizeof b->data);
    memcpy(b->data + b->len, text, len);
    b->len += len;
    b->data[b->len] = 0;
}

static int count_lines(const char *s) {
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

static void test_dump_text(void **state) {
    (void)state;
    rt_context_t *ctx = tu_context(1, true);
    mlp_t m = build_mlp(ctx);
    rt_graph_t *g = rt_graph_create(ctx, 16);
    rt_graph_build_forward_expand(g, m.y);
    static text_buf_t b;
    b.len = 0;
    rt_graph_write_text(g, collect, &b);
    assert_int_equal(count_lines(b.data), 1 + 5 + 5); /* graph-5.1: header, leafs, nodes */
    tu_expect_contains(b.data, "graph: 5 leafs, 5 nodes, size 16\n", "graph-5.2");
    tu_expect_contains(b.data, "l0     NONE          q8_0 ne{32,8,1,1} nb{34,34,272,272} W2\n",
                    "graph-5.3");
    tu_expect_contains(b.data, "n0     MUL_MAT       f32  ne{32,4,1,1} nb{4,128,512,512} mm1 <- "
                            "l1:W1, l2:x\n", "graph-5.4");
    tu_expect_contains(b.data, "n4     ADD           f32  ne{8,4,1,1} nb{4,32,128,128} y <- "
                            "n3:mm2, l4:b2\n", "graph-5.5");
    rt_context_destroy(ctx);
}

static void test_dump_dot(void **state) {
    (void)state;
    rt_context_t *ctx = tu_context(1, true);
    mlp_t m = build_mlp(ctx);
    rt_set_name(m.b1, "b\"1"); /* graph-6.1: quotes in names are escaped */
    rt_graph_t *g = rt_graph_create(ctx, 16);
    rt_graph_build_forward_expand(g, m.y);
    static text_buf_t b;
    b.len = 0;
    rt_graph_write_dot(g, collect, &b);
    assert_true(strncmp(b.data, "digraph rt_graph {\n", 19) == 0); /* graph-6.2 */
    tu_expect_contains(b.data, "l0 [shape = box, label = \"l0 NONE\\nW2\\nq8_0 {32,8,1,1}\"];",
                    "graph-6.3");
    tu_expect_contains(b.data, "n2 [shape = ellipse, label = \"n2 GELU\\nh\\nf32 {32,4,1,1}\"];",
                    "graph-6.4");
    tu_expect_contains(b.data, "b\\\"1", "graph-6.5");
    const char *edges[] = {"l1 -> n0", "l2 -> n0", "n0 -> n1", "l3 -> n1", "n1 -> n2",
                           "l0 -> n3", "n2 -> n3", "n3 -> n4", "l4 -> n4"};
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++)
        tu_expect_contains(b.data, edges[i], "graph-6.6");
    int depth = 0, arrows = 0; /* graph-6.7: braces balance, nine edges, ends with } */
    for (const char *c = b.data; *c; c++) {
        depth += (*c == '{') - (*c == '}');
        if (depth < 0) fail_msg("graph-6.7: unbalanced braces");
        arrows += c[0] == '-' && c[1] == '>';
    }
    assert_int_equal(depth, 0);
    assert_int_equal(arrows, 9);
    assert_string_equal(b.data + b.len - 2, "}\n");
    rt_context_destroy(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mlp_order),     cmocka_unit_test(test_expand_again),
        cmocka_unit_test(test_graph_full),    cmocka_unit_test(test_views_in_graph),
        cmocka_unit_test(test_dump_text),     cmocka_unit_test(test_dump_dot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
