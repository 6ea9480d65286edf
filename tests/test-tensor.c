/* SPDX-License-Identifier: MIT */
/* test-tensor.c: types, contexts, tensor headers and the view family, checked
 * against docs/memory.md: the strides of §1, the transpose of §2.3, the
 * GPT-2 attention tensors of §2.5's table and the MUL_MAT refusal that makes V need rt_cont. No device is needed. */
#include "testutil.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Asserts ne and nb of t, all four dimensions. */
static void expect_layout(const rt_tensor_t *t, const int64_t ne[4], const size_t nb[4],
                          const char *check) {
    for (int i = 0; i < 4; i++) {
        if (t->ne[i] != ne[i] || t->nb[i] != nb[i])
            fail_msg("%s: %s dim %d: ne %" PRId64 " nb %zu, expected ne %" PRId64 " nb %zu",
                     check, t->name, i, t->ne[i], t->nb[i], ne[i], nb[i]);
    }
}

static float get_f32(const rt_tensor_t *t, int64_t i0, int64_t i1) {
    float v;
    memcpy(&v, (const char *)t->data + i0 * t->nb[0] + i1 * t->nb[1], sizeof v);
    return v;
}

//===--- tensor-1: types ---===//

static void test_types(void **state) {
    (void)state;
    assert_int_equal(rt_abi_version(), RT_ABI_VERSION); /* tensor-1.1 */
    assert_string_equal(rt_version_string(), RT_VERSION_STRING);
    static const struct { rt_type_t type; const char *name; int64_t blck; size_t size; } want[] = {
        {RT_TYPE_F32, "f32", 1, 4},     {RT_TYPE_F16, "f16", 1, 2},
        {RT_TYPE_Q4_0, "q4_0", 32, 18}, {RT_TYPE_Q8_0, "q8_0", 32, 34},
        {RT_TYPE_I32, "i32", 1, 4},     {RT_TYPE_BF16, "bf16", 1, 2},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) { /* tensor-1.2 */
        const rt_type_traits_t *tr = rt_type_traits(want[i].type);
        assert_non_null(tr);
        assert_string_equal(tr->name, want[i].name);
        assert_string_equal(rt_type_name(want[i].type), want[i].name);
        assert_int_equal(rt_blck_size(want[i].type), want[i].blck);
        assert_int_equal(rt_type_size(want[i].type), want[i].size);
        assert_int_equal(tr->is_quantized, want[i].blck > 1);
    }
    /* tensor-1.3: ids outside GGUF's, and GGUF ids rt does not implement
       (these keep GGUF's name, so that errors can say which type it is) */
    const rt_type_t bad[] = {-1, 4, 9, 29, RT_TYPE_COUNT, 1000};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_null(rt_type_traits(bad[i]));
        assert_int_equal(rt_type_size(bad[i]), 0);
        assert_int_equal(rt_blck_size(bad[i]), 0);
    }
    assert_string_equal(rt_type_name(-1), "?");
    assert_string_equal(rt_type_name(RT_TYPE_COUNT), "?");
    assert_string_equal(rt_type_name(29), "iq1_m");
    assert_int_equal(rt_row_size(RT_TYPE_Q8_0, 64), 68); /* tensor-1.4 */
    assert_int_equal(rt_row_size(RT_TYPE_Q4_0, 96), 54);
    assert_int_equal(rt_row_size(RT_TYPE_F16, 5), 10);
    TU_EXPECT_ABORT(rt_row_size(RT_TYPE_Q8_0, 33), "q8_0");
}

static void test_op_names(void **state) {
    (void)state;
    for (rt_op_t op = 0; op < RT_OP_COUNT; op++) /* tensor-1.5 */
        if (strcmp(rt_op_name(op), "?") == 0) fail_msg("op %d has no name", (int)op);
    assert_string_equal(rt_op_name(RT_OP_MUL_MAT), "MUL_MAT");
    assert_string_equal(rt_op_name(RT_OP_DIAG_MASK_INF), "DIAG_MASK_INF");
    assert_string_equal(rt_op_name(RT_OP_NONE), "NONE");
    assert_string_equal(rt_op_name(RT_OP_COUNT), "?");
    assert_string_equal(rt_op_name(-1), "?");
}

static void test_quantize(void **state) {
    (void)state;
    enum { N = 128 };
    float x[N], y[N];
    tu_seed(11);
    tu_fill(x, N, -3.0f, 3.0f);
    uint8_t q[N * 4];
    const rt_type_t types[] = {RT_TYPE_F32, RT_TYPE_F16, RT_TYPE_BF16, RT_TYPE_Q8_0, RT_TYPE_Q4_0};
    const double tol[] = {0, 1e-3, 1e-2, 1e-2, 0.2};
    for (int k = 0; k < 5; k++) { /* tensor-1.6: round trips within each format's error */
        assert_int_equal(rt_quantize(types[k], x, q, N), rt_row_size(types[k], N));
        rt_dequantize(types[k], q, y, N);
        double ref[N];
        for (int i = 0; i < N; i++) ref[i] = x[i];
        const double err = tu_nmse_error(ref, y, N);
        if (err > tol[k]) fail_msg("tensor-1.6 %s: error %g > %g", rt_type_name(types[k]), err, tol[k]);
    }
    /* tensor-1.7: the bytes are the header's codec's */
    rt_block_q8_0_t b;
    rt_quantize_block_q8_0(x, &b);
    assert_int_equal(rt_quantize(RT_TYPE_Q8_0, x, q, 32), 34);
    assert_memory_equal(q, &b, sizeof b);
    int32_t iv[3] = {-7, 0, 123456};
    rt_dequantize(RT_TYPE_I32, iv, y, 3);
    assert_true(y[0] == -7.0f && y[2] == 123456.0f);
    TU_EXPECT_ABORT(rt_quantize(RT_TYPE_Q4_0, x, q, 31), "rt_quantize");
    TU_EXPECT_ABORT(rt_quantize(RT_TYPE_I32, x, q, 4), "i32");
}

//===--- tensor-2: contexts ---===//

typedef struct counting_alloc {
    size_t live;   /* bytes allocated and not freed */
    int fail_after; /* calls that succeed before NULL; -1: never fail */
} counting_alloc_t;

static void *counting_realloc(void *ud, void *ptr, size_t old_size, size_t new_size) {
    counting_alloc_t *c = ud;
    if (new_size == 0) {
        c->live -= old_size;
        free(ptr);
        return NULL;
    }
    if (c->fail_after == 0) return NULL;
    if (c->fail_after > 0) c->fail_after--;
    void *p = realloc(ptr, new_size);
    if (p != NULL) c->live += new_size - old_size;
    return p;
}

static void test_context_create(void **state) {
    (void)state;
    rt_context_t *ctx = NULL;
    assert_int_equal(rt_context_create(NULL, &ctx), RT_OK); /* tensor-2.1: NULL params */
    assert_int_equal(rt_context_used_mem(ctx), 0);
    assert_false(rt_context_get_no_alloc(ctx));
    rt_tensor_t *big = rt_new_tensor_1d(ctx, RT_TYPE_F32, (15 << 20) / 4); /* 16 MiB default */
    assert_non_null(big->data);
    rt_context_destroy(ctx);
    rt_context_destroy(NULL);

    rt_context_params_t zero;
    memset(&zero, 0, sizeof zero); /* tensor-2.2: zeroed = the 1.0 layout, defaults */
    assert_int_equal(rt_context_create(&zero, &ctx), RT_OK);
    rt_context_set_no_alloc(ctx, true);
    assert_true(rt_context_get_no_alloc(ctx));
    assert_null(rt_new_tensor_1d(ctx, RT_TYPE_F32, 8)->data);
    rt_context_destroy(ctx);

    counting_alloc_t c = {0, 0}; /* tensor-2.3: allocation failure is a status */
    rt_allocator_t a = {counting_realloc, &c};
    rt_context_params_t p = {.struct_size = sizeof p, .mem_size = 4096, .allocator = &a};
    ctx = (rt_context_t *)&c;
    assert_int_equal(rt_context_create(&p, &ctx), RT_ERR_OUT_OF_MEMORY);
    assert_null(ctx);
    assert_non_null(strstr(rt_last_error(), "4096"));
    c.fail_after = -1; /* tensor-2.4: what is allocated is given back, with its size */
    assert_int_equal(rt_context_create(&p, &ctx), RT_OK);
    assert_true(c.live >= 4096);
    rt_context_destroy(ctx);
    assert_int_equal(c.live, 0);
}

static void test_context_buffer(void **state) {
    (void)state;
    static char pool[64 * 1024 + 7];
    rt_context_t *ctx = NULL;
    rt_context_params_t p = {.struct_size = sizeof p, .mem_size = sizeof pool - 7,
                             .mem_buffer = pool + 7};
    assert_int_equal(rt_context_create(&p, &ctx), RT_OK); /* tensor-2.5: caller's memory */
    rt_tensor_t *t = rt_new_tensor_1d(ctx, RT_TYPE_F32, 16);
    assert_true((char *)t >= pool && (char *)t->data + 64 <= pool + sizeof pool);
    assert_int_equal((uintptr_t)t->data % 64, 0);
    rt_context_destroy(ctx);
    p.mem_size = 0; /* tensor-2.6: a buffer without its size is refused */
    assert_int_equal(rt_context_create(&p, &ctx), RT_ERR_INVALID_ARGUMENT);
    assert_null(ctx);
}

static void test_context_objects(void **state) {
    (void)state;
    rt_context_t *ctx = tu_context(1, true);
    assert_null(rt_context_first_tensor(ctx));
    const size_t used0 = rt_context_used_mem(ctx);
    rt_tensor_t *a = rt_set_name(rt_new_tensor_2d(ctx, RT_TYPE_F32, 4, 4), "a");
    rt_graph_create(ctx, 4); /* tensor-2.7: graphs are skipped by the tensor walk */
    rt_tensor_t *b = rt_set_name(rt_new_tensor_1d(ctx, RT_TYPE_F16, 4), "b");
    assert_int_equal(rt_context_used_mem(ctx),
                     used0 + 2 * rt_tensor_overhead() + rt_graph_overhead(4));
    assert_ptr_equal(rt_context_first_tensor(ctx), a);
    assert_ptr_equal(rt_context_next_tensor(ctx, a), b);
    assert_null(rt_context_next_tensor(ctx, b));
    assert_ptr_equal(rt_context_get_tensor(ctx, "b"), b); /* tensor-2.8 */
    assert_null(rt_context_get_tensor(ctx, "c"));
    assert_null(rt_context_get_tensor(ctx, NULL));
    rt_context_destroy(ctx);
}

static void test_context_full(void **state) {
    (void)state;
    rt_context_t *ctx = NULL;
    rt_context_params_t p = {.struct_size = sizeof p, .mem_size = 3 * rt_tensor_overhead(),
                             .no_alloc = true};
    assert_int_equal(rt_context_create(&p, &ctx), RT_OK);
    for (int i = 0; i < 3; i++) rt_new_tensor_1d(ctx, RT_TYPE_F32, 10); /* exactly fits */
    /* tensor-2.9: the fourth header does not fit: abort naming what is asked and left */
    TU_EXPECT_ABORT(rt_new_tensor_1d(ctx, RT_TYPE_F32, 10), "context pool is full");
    assert_non_null(strstr(tu_abort_message, "0 of"));
    rt_context_destroy(ctx);
    ctx = tu_context(1, false);
    TU_EXPECT_ABORT(rt_new_tensor_2d(ctx, RT_TYPE_F32, 1024, 1024), "bytes are left");
    rt_context_destroy(ctx);
}

//===--- tensor-3: new tensors and their strides (docs/memory.md §1) ---===//

static void test_new_tensor(void **state) {
    (void)state;
    rt_context_t *ctx = tu_context(1, false);
    rt_tensor_t *t = rt_new_tensor_2d(ctx, RT_TYPE_F32, 3, 2); /* tensor-3.1: docs/memory.md §1 */
    expect_layout(t, (int64_t[]){3, 2, 1, 1}, (size_t[]){4, 12, 24, 24}, "tensor-3.1");
    assert_int_equal(rt_nelements(t), 6);
    assert_int_equal(rt_nrows(t), 2);
    assert_int_equal(rt_nbytes(t), 24);
    assert_int_equal(rt_n_dims(t), 2);
    assert_true(rt_is_contiguous(t));
    assert_false(rt_is_view(t));
    assert_ptr_equal(t->data, (char *)t + 384); /* tensor-3.2: data follows the header */
    assert_int_equal(t->op, RT_OP_NONE);
    assert_null(t->buffer);
    t = rt_new_tensor_4d(ctx, RT_TYPE_F16, 2, 3, 4, 5);
    expect_layout(t, (int64_t[]){2, 3, 4, 5}, (size_t[]){2, 4, 12, 48}, "tensor-3.3");
    assert_int_equal(rt_n_dims(t), 4);
    assert_int_equal(rt_n_dims(rt_new_tensor_3d(ctx, RT_TYPE_I32, 7, 1, 1)), 1);
    rt_tensor_t *d = rt_dup_tensor(ctx, t); /* tensor-3.4 */
    assert_true(rt_are_same_shape(d, t) && d->type == t->type && d->data != t->data);
    TU_EXPECT_ABORT(rt_new_tensor(ctx, RT_TYPE_F32, 5, (int64_t[]){1, 1, 1, 1, 1}), "n_dims 5");
    TU_EXPECT_ABORT(rt_new_tensor_2d(ctx, RT_TYPE_F32, 4, -1), "negative");
    TU_EXPECT_ABORT(rt_new_tensor_1d(ctx, 4, 4), "unknown type");
    TU_EXPECT_ABORT(rt_new_tensor_1d(ctx, RT_TYPE_Q8_0, 48), "block");
    rt_context_destroy(ctx);
}

static void test_quantized_sizes(void **state) {
    (void)state;
    rt_context_t *ctx = tu_context(1, true);
    rt_tensor_t *q8 = rt_new_tensor_2d(ctx, RT_TYPE_Q8_0, 64, 3); /* tensor-3.5: 34 per 32 */
    expect_layout(q8, (int64_t[]){64, 3, 1, 1}, (size_t[]){34, 68, 204, 204}, "tensor-3.5");
    assert_int_equal(rt_nbytes(q8), 204);
    assert_int_equal(rt_element_size(q8), 34);
    assert_true(rt_is_contiguous(q8));
    rt_tensor_t *q4 = rt_new_tensor_3d(ctx, RT_TYPE_Q4_0, 96, 2, 2); /* tensor-3.6: 18 per 32 */
    expect_layout(q4, (int64_t[]){96, 2, 2, 1}, (size_t[]){18, 54, 108, 216}, "tensor-3.6");
    assert_int_equal(rt_nbytes(q4), 216);
    rt_tensor_t *v = rt_view_2d(ctx, q8, 32, 3, q8->nb[1], 34); /* tensor-3.7: second block */
    assert_int_equal(rt_nbytes(v), 34 + 2 * 68);
    assert_false(rt_is_contiguous(v));
    assert_int_equal(rt_nbytes(rt_new_tensor_2d(ctx, RT_TYPE_F32, 0, 5)), 0);
    rt_context_destroy(ctx);
}

static void test_names_flags(void **state) {
    (void)state;
    rt_context_t *ctx = tu_context(1, true);
    rt_tensor_t *t = rt_new_tensor_1d(ctx, RT_TYPE_F32, 4);
    assert_string_equal(rt_get_name(t), "");
    rt_format_name(t, "layer%d.%s", 3, "wq"); /* tensor-3.8 */
    assert_string_equal(rt_get_name(t), "layer3.wq");
    char longname[100];
    memset(longname, 'x', sizeof longname - 1);
    longname[99] = 0;
    rt_set_name(t, longname); /* tensor-3.9: truncated, terminated */
    assert_int_equal(strlen(t->name), RT_MAX_NAME - 1);
    rt_set_input(t);
    rt_set_output(t);
    assert_int_equal(t->flags, RT_TENSOR_FLAG_INPUT | RT_TENSOR_FLAG_OUTPUT);
    rt_set_param(t);
    assert_true(t->flags & RT_TENSOR_FLAG_PARAM);
    char buf[256]; /* tensor-3.10: the description, strides only when they are not contiguous */
    rt_set_name(t, "x");
    assert_string_equal(rt_tensor_describe(t, buf, sizeof buf), "x{4,1,1,1}:f32");
    rt_tensor_t *m = rt_set_name(rt_new_tensor_2d(ctx, RT_TYPE_F32, 2, 3), "m");
    assert_string_equal(rt_tensor_describe(rt_transpose(ctx, m), buf, sizeof buf),
                        "m (transposed){3,2,1,1}:f32 nb{8,4,24,24}");
    assert_string_equal(rt_tensor_describe(NULL, buf, sizeof buf), "NULL");
    rt_context_destroy(ctx);
}

//===--- tensor-4: the view family ---===//

static void test_permute_transposes(void **state) {
    (void)state;
    rt_context_t *ctx = tu_context(1, false);
    rt_tensor_t *A = rt_set_name(rt_new_tensor_2d(ctx, RT_TYPE_F32, 2, 2), "A");
    tu_seed(21);
    tu_fill(A->data, 4, -1.0f, 1.0f); /* a b c d */
    const float *d = A->data;
    rt_tensor_t *P = rt_permute(ctx, A, 1, 0, 2, 3); /* tensor-4.1: section 2.3 */
    expect_layout(P, (int64_t[]){2, 2, 1, 1}, (size_t[]){8, 4, 4 * 4, 4 * 4}, "tensor-4.1");
    assert_true(get_f32(A, 1, 0) == d[1] && get_f32(A, 0, 1) == d[2]); /* A[0][1]=b, A[1][0]=c */
    assert_true(get_f32(P, 1, 0) == d[2] && get_f32(P, 0, 1) == d[1]); /* P[0][1]=c, P[1][0]=b */
    assert_ptr_equal(P->data, A->data);
    assert_int_equal(P->op, RT_OP_PERMUTE);
    assert_ptr_equal(P->src[0], A);
    assert_ptr_equal(P->view_src, A);
    assert_int_equal(P->op_params[0], 1);
    assert_int_equal(P->op_params[1], 0);
    assert_string_equal(P->name, "A (permuted)");
    assert_true(rt_is_transposed(P) && rt_is_permuted(P) && !rt_is_contiguous(P));
    rt_tensor_t *T = rt_transpose(ctx, A); /* tensor-4.2: transpose is that call */
    assert_int_equal(T->op, RT_OP_TRANSPOSE);
    assert_true(T->nb[0] == P->nb[0] && T->nb[1] == P->nb[1]);
    assert_string_equal(T->name, "A (transposed)");
    TU_EXPECT_ABORT(rt_permute(ctx, A, 0, 0, 2, 3), "not a permutation");
    TU_EXPECT_ABORT(rt_permute(ctx, A, 0, 1, 2, 4), "PERMUTE");
    rt_context_destroy(ctx);
}

static void test_views(void **state) {
    (void)state;
    rt_context_t *ctx = tu_context(1, false);
    rt_tensor_t *base = rt_set_name(rt_new_tensor_2d(ctx, RT_TYPE_F32, 8, 6), "x");
    rt_tensor_t *v1 = rt_view_2d(ctx, base, 4, 5, base->nb[1], 1 * base->nb[1]); /* rows 1.. */
    rt_tensor_t *v2 = rt_view_1d(ctx, v1, 3, 2 * sizeof(float));
    assert_ptr_equal(v1->view_src, base); /* tensor-4.3: a view of a view points at the base */
    assert_ptr_equal(v2->view_src, base);
    assert_ptr_equal(v2->src[0], v1);
    assert_int_equal(v2->view_offs, base->nb[1] + 8);
    assert_ptr_equal(v2->data, (char *)base->data + base->nb[1] + 8);
    assert_int_equal(v1->op, RT_OP_VIEW);
    assert_string_equal(v1->name, "x (view)");
    assert_string_equal(v2->name, "x (view) (view)");
    expect_layout(v1, (int64_t[]){4, 5, 1, 1}, (size_t[]){4, 32, 160, 160}, "tensor-4.4");
    assert_true(rt_is_view(v2) && !rt_is_contiguous(v1));
    rt_tensor_t *v4 = rt_view_4d(ctx, base, 2, 2, 2, 2, 8, 16, 96, 4);
    expect_layout(v4, (int64_t[]){2, 2, 2, 2}, (size_t[]){4, 8, 16, 96}, "tensor-4.5");
    rt_tensor_t *vt = rt_view_tensor(ctx, rt_transpose(ctx, base));
    assert_true(vt->nb[0] == 32 && vt->nb[1] == 4 && vt->view_src == base);
    /* tensor-4.6: a view must fit inside its base */
    TU_EXPECT_ABORT(rt_view_1d(ctx, base, 8, 41 * sizeof(float)), "past the end of its base");
    TU_EXPECT_ABORT(rt_view_2d(ctx, v1, 8, 6, base->nb[1], 0), "x{8,6,1,1}:f32");
    rt_context_destroy(ctx);
    ctx = tu_context(1, true); /* tensor-4.7: no data in a no_alloc context, views too */
    base = rt_new_tensor_1d(ctx, RT_TYPE_F32, 16);
    assert_null(rt_view_1d(ctx, base, 4, 16)->data);
    rt_context_destroy(ctx);
}

static void test_reshape(void **state) {
    (void)state;
    rt_context_t *ctx = tu_context(1, false);
    rt_tensor_t *x = rt_set_name(rt_new_tensor_2d(ctx, RT_TYPE_F32, 6, 4), "x");
    rt_tensor_t *r = rt_reshape_3d(ctx, x, 3, 2, 4); /* tensor-4.8 */
    expect_layout(r, (int64_t[]){3, 2, 4, 1}, (size_t[]){4, 12, 24, 96}, "tensor-4.8");
    assert_true(r->op == RT_OP_RESHAPE && r->data == x->data && r->view_src == x);
    assert_string_equal(r->name, "x (reshaped)");
    assert_true(rt_are_same_shape(rt_reshape(ctx, r, x), x));
    assert_int_equal(rt_reshape_1d(ctx, x, 24)->ne[0], 24);
    assert_int_equal(rt_reshape_4d(ctx, x, 2, 3, 2, 2)->nb[3], 48);
    /* tensor-4.9: reshape refuses a non-contiguous tensor and a different count */
    TU_EXPECT_ABORT(rt_reshape_2d(ctx, rt_transpose(ctx, x), 4, 6), "RESHAPE: a is not contiguous");
    TU_EXPECT_ABORT(rt_reshape_2d(ctx, x, 5, 5), "25");
    rt_context_destroy(ctx);
}

static void test_cont_cpy_cast(void **state) {
    (void)state;
    rt_context_t *ctx = tu_context(1, true);
    rt_tensor_t *x = rt_set_name(rt_new_tensor_2d(ctx, RT_TYPE_F32, 6, 4), "x");
    rt_tensor_t *c = rt_cont(ctx, rt_transpose(ctx, x)); /* tensor-4.10 */
    expect_layout(c, (int64_t[]){4, 6, 1, 1}, (size_t[]){4, 16, 96, 96}, "tensor-4.10");
    assert_true(c->op == RT_OP_CONT && c->view_src == NULL);
    assert_string_equal(c->name, "x (transposed) (cont)");
    assert_int_equal(rt_cont_2d(ctx, x, 24, 1)->ne[0], 24);
    TU_EXPECT_ABORT(rt_cont_3d(ctx, x, 5, 5, 1), "CONT");
    rt_tensor_t *k = rt_set_name(rt_new_tensor_1d(ctx, RT_TYPE_F16, 48), "k");
    rt_tensor_t *cp = rt_cpy(ctx, x, rt_view_1d(ctx, k, 24, 48)); /* tensor-4.11 */
    assert_true(cp->op == RT_OP_CPY && cp->view_src == k && cp->view_offs == 48);
    assert_true(cp->src[0] == x && cp->src[1]->view_src == k && cp->type == RT_TYPE_F16);
    assert_string_equal(cp->name, "k (view) (copy of x)");
    rt_tensor_t *cast = rt_cast(ctx, x, RT_TYPE_BF16); /* tensor-4.12: src[1] NULL */
    assert_true(cast->op == RT_OP_CPY && cast->src[0] == x && cast->src[1] == NULL);
    assert_true(cast->type == RT_TYPE_BF16 && rt_are_same_shape(cast, x) && !rt_is_view(cast));
    assert_string_equal(cast->name, "x (copy)");
    rt_tensor_t *q = rt_new_tensor_2d(ctx, RT_TYPE_Q8_0, 32, 1);
    TU_EXPECT_ABORT(rt_cpy(ctx, x, q), "elements");
    rt_tensor_t *i = rt_new_tensor_1d(ctx, RT_TYPE_I32, 24);
    TU_EXPECT_ABORT(rt_cpy(ctx, i, x), "cannot copy i32 into f32");
    TU_EXPECT_ABORT(rt_cast(ctx, rt_new_tensor_1d(ctx, RT_TYPE_F16, 32), RT_TYPE_Q4_0),
                    "cannot copy f16 into q4_0");
    TU_EXPECT_ABORT(rt_cast(ctx, x, RT_TYPE_Q8_0), "CPY (cast)");
    rt_context_destroy(ctx);
}

//===--- tensor-5: GPT-2 attention (docs/memory.md §2.5) ---===//

enum { N_EMBD = 768, N_HEAD = 12, N_LAYER = 2, N_CTX = 64, HEAD = N_EMBD / N_HEAD };

typedef struct attn {
    rt_tensor_t *Qcur, *Q, *K, *V_perm, *V_trans, *KQ, *KQ_soft_max, *KQV, *out;
} attn_t;

/* The calls of docs/memory.md §2.5 for layer il. */
static attn_t build_attention(rt_context_t *ctx, int N, int n_past, int il) {
    rt_tensor_t *memory_k = rt_new_tensor_1d(ctx, RT_TYPE_F32, (int64_t)N_LAYER * N_CTX * N_EMBD);
    rt_tensor_t *memory_v = rt_new_tensor_1d(ctx, RT_TYPE_F32, (int64_t)N_LAYER * N_CTX * N_EMBD);
    rt_tensor_t *cur = rt_set_name(rt_new_tensor_2d(ctx, RT_TYPE_F32, 3 * N_EMBD, N), "cur");
    const size_t off = (size_t)il * N_CTX * N_EMBD * sizeof(float);
    const int L = n_past + N;
    attn_t a;
    a.Qcur = rt_view_2d(ctx, cur, N_EMBD, N, cur->nb[1], 0);
    a.Q = rt_permute(ctx, rt_cont_3d(ctx, a.Qcur, HEAD, N_HEAD, N), 0, 2, 1, 3);
    a.K = rt_permute(ctx,
                     rt_reshape_3d(ctx, rt_view_1d(ctx, memory_k, (int64_t)L * N_EMBD, off), HEAD,
                                   N_HEAD, L),
                     0, 2, 1, 3);
    a.KQ = rt_mul_mat(ctx, a.K, a.Q);
    rt_tensor_t *KQ_masked = rt_diag_mask_inf(ctx, rt_scale(ctx, a.KQ, 0.125f), n_past);
    a.KQ_soft_max = rt_soft_max(ctx, KQ_masked);
    a.V_perm = rt_permute(ctx,
                          rt_reshape_3d(ctx, rt_view_1d(ctx, memory_v, (int64_t)L * N_EMBD, off),
                                        HEAD, N_HEAD, L),
                          1, 2, 0, 3);
    a.V_trans = rt_cont_3d(ctx, a.V_perm, L, HEAD, N_HEAD);
    a.KQV = rt_mul_mat(ctx, a.V_trans, a.KQ_soft_max);
    a.out = rt_cont_2d(ctx, rt_permute(ctx, a.KQV, 0, 2, 1, 3), N_EMBD, N);
    return a;
}

static void check_table2(const attn_t *a, int64_t N, int64_t L) {
    expect_layout(a->Qcur, (int64_t[]){768, N, 1, 1}, (size_t[]){4, 9216, 9216 * N, 9216 * N},
                  "tensor-5.1 Qcur");
    expect_layout(a->Q, (int64_t[]){64, N, 12, 1}, (size_t[]){4, 3072, 256, 3072 * N},
                  "tensor-5.2 Q");
    expect_layout(a->K, (int64_t[]){64, L, 12, 1}, (size_t[]){4, 3072, 256, 3072 * L},
                  "tensor-5.3 K");
    expect_layout(a->V_perm, (int64_t[]){L, 64, 12, 1}, (size_t[]){3072, 4, 256, 3072 * L},
                  "tensor-5.4 V permuted");
    expect_layout(a->V_trans, (int64_t[]){L, 64, 12, 1},
                  (size_t[]){4, 4 * L, 256 * L, 3072 * L}, "tensor-5.5 V_trans");
    const size_t kq[4] = {4, 4 * L, 4 * L * N, 48 * L * N};
    expect_layout(a->KQ, (int64_t[]){L, N, 12, 1}, kq, "tensor-5.6 KQ");
    expect_layout(a->KQV, (int64_t[]){64, N, 12, 1}, (size_t[]){4, 256, 256 * N, 3072 * N},
                  "tensor-5.7 KQV");
    expect_layout(a->out, (int64_t[]){768, N, 1, 1}, (size_t[]){4, 3072, 3072 * N, 3072 * N},
                  "tensor-5.8 out");
}

static void check_attention_case(int N, int n_past) {
    rt_context_t *ctx = tu_context(1, true);
    const int L = N + n_past;
    attn_t a = build_attention(ctx, N, n_past, 1);
    check_table2(&a, N, L);
    /* tensor-5.9: K reads the cache in place, at layer 1's offset */
    assert_int_equal(a.K->view_offs, (size_t)N_CTX * N_EMBD * sizeof(float));
    assert_int_equal(a.KQ->type, RT_TYPE_F32);
    assert_false(rt_is_transposed(a.K));
    if (L > 1) assert_false(rt_is_contiguous(a.K));
    /* tensor-5.10: V without cont stops mul_mat while the graph is built */
    char shape[64];
    snprintf(shape, sizeof shape, "{%d,64,12,1}", L);
    TU_EXPECT_ABORT(rt_mul_mat(ctx, a.V_perm, a.KQ_soft_max), "MUL_MAT: a is transposed");
    assert_non_null(strstr(tu_abort_message, shape));
    assert_non_null(strstr(tu_abort_message, "nb{3072,4,256,"));
    assert_non_null(strstr(tu_abort_message, "rt_cont"));
    rt_context_destroy(ctx);
}

static void test_gpt2_attention(void **state) {
    (void)state;
    static const int cases[][2] = {{1, 0}, {7, 0}, {1, 9}, {5, 20}, {32, 32}}; /* N, n_past */
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        check_attention_case(cases[c][0], cases[c][1]);
}

//===--- tensor-6: compute constructors ---===//

static void test_op_contracts(void **state) {
    (void)state;
    rt_context_t *ctx = tu_context(1, true);
    rt_tensor_t *a = rt_set_name(rt_new_tensor_3d(ctx, RT_TYPE_F32, 8, 4, 2), "a");
    rt_tensor_t *row = rt_set_name(rt_new_tensor_1d(ctx, RT_TYPE_F32, 8), "row");
    rt_tensor_t *s = rt_add(ctx, a, row); /* tensor-6.1: b repeats into a */
    assert_true(s->op == RT_OP_ADD && s->src[0] == a && s->src[1] == row && rt_are_same_shape(s, a));
    TU_EXPECT_ABORT(rt_mul(ctx, row, a), "MUL: b does not repeat into a");
    assert_non_null(strstr(tu_abort_message, "row{8,1,1,1}:f32"));
    TU_EXPECT_ABORT(rt_sub(ctx, a, rt_new_tensor_1d(ctx, RT_TYPE_F16, 8)), "SUB: b's type f16");
    float f;
    memcpy(&f, rt_scale(ctx, a, 0.3f)->op_params, sizeof f); /* tensor-6.2: floats by bits */
    assert_true(f == 0.3f);
    memcpy(&f, rt_rms_norm(ctx, a, 1e-6f)->op_params, sizeof f);
    assert_true(f == 1e-6f);
    rt_tensor_t *mask = rt_new_tensor_2d(ctx, RT_TYPE_F16, 8, 6);
    rt_tensor_t *sm = rt_soft_max_ext(ctx, a, mask, 0.5f);
    assert_ptr_equal(sm->src[1], mask);
    TU_EXPECT_ABORT(rt_soft_max_ext(ctx, a, rt_new_tensor_2d(ctx, RT_TYPE_F32, 8, 3), 1.0f),
                    "SOFT_MAX");
    rt_tensor_t *pos = rt_new_tensor_1d(ctx, RT_TYPE_I32, 2);
    rt_tensor_t *r = rt_rope(ctx, a, pos, 8, RT_ROPE_MODE_NEOX); /* tensor-6.3: rope defaults */
    memcpy(&f, &r->op_params[2], sizeof f);
    assert_true(r->op_params[0] == 8 && r->op_params[1] == RT_ROPE_MODE_NEOX && f == 10000.0f);
    memcpy(&f, &r->op_params[3], sizeof f);
    assert_true(f == 1.0f);
    TU_EXPECT_ABORT(rt_rope(ctx, a, pos, 7, 0), "ROPE: n_dims 7");
    TU_EXPECT_ABORT(rt_rope(ctx, a, rt_new_tensor_1d(ctx, RT_TYPE_I32, 3), 8, 0), "ROPE");
    rt_tensor_t *am = rt_argmax(ctx, a); /* tensor-6.4 */
    assert_true(am->type == RT_TYPE_I32 && am->ne[0] == 4 && am->ne[1] == 2 && am->ne[2] == 1);
    rt_tensor_t *w = rt_new_tensor_2d(ctx, RT_TYPE_Q8_0, 64, 10);
    rt_tensor_t *ids = rt_new_tensor_1d(ctx, RT_TYPE_I32, 3);
    rt_tensor_t *g = rt_get_rows(ctx, w, ids); /* tensor-6.5 */
    assert_true(g->type == RT_TYPE_F32 && g->ne[0] == 64 && g->ne[1] == 3);
    TU_EXPECT_ABORT(rt_get_rows(ctx, w, row), "GET_ROWS: b has type f32");
    rt_tensor_t *mm = rt_mul_mat(ctx, w, rt_new_tensor_2d(ctx, RT_TYPE_F32, 64, 5));
    assert_true(mm->ne[0] == 10 && mm->ne[1] == 5 && mm->type == RT_TYPE_F32); /* tensor-6.6 */
    TU_EXPECT_ABORT(rt_mul_mat(ctx, w, a), "row length");
    TU_EXPECT_ABORT(rt_mul_mat(ctx, a, w), "MUL_MAT: b has type q8_0");
    TU_EXPECT_ABORT(rt_swiglu(ctx, a, row), "SWIGLU");
    TU_EXPECT_ABORT(rt_gelu(ctx, ids), "GELU: a has type i32, expected f32/f16");
    assert_int_equal(rt_diag_mask_inf(ctx, a, 5)->op_params[0], 5);
    rt_context_destroy(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_types),           cmocka_unit_test(test_op_names),
        cmocka_unit_test(test_quantize),        cmocka_unit_test(test_context_create),
        cmocka_unit_test(test_context_buffer),  cmocka_unit_test(test_context_objects),
        cmocka_unit_test(test_context_full),    cmocka_unit_test(test_new_tensor),
        cmocka_unit_test(test_quantized_sizes), cmocka_unit_test(test_names_flags),
        cmocka_unit_test(test_permute_transposes), cmocka_unit_test(test_views),
        cmocka_unit_test(test_reshape),         cmocka_unit_test(test_cont_cpy_cast),
        cmocka_unit_test(test_gpt2_attention),  cmocka_unit_test(test_op_contracts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
