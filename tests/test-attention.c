/* SPDX-License-Identifier: MIT */
/* test-attention.c: a GPT-2 attention block end to end on the CPU
 * device, built with the calls of docs/memory.md §2.5 (Qcur as a view of
 * cur, cont_3d + permute for Q, K from a view of the cache, V_trans through
 * cont_3d of the permute, KQV, the final cont_2d), with this step's K and V
 * written into the cache by rt_cpy into views. Checks that section's table of
 * headers at this size, the output against a double reference of causal
 * attention with default, 1 and 3 threads, the cache contents, and that
 * MUL_MAT refuses the permuted V.
 *
 * Tolerance: TOL_DOT 1e-5 normalised error: sums of up to 8 products per
 * dot, softmax over 7 positions, in F32; the cache copy is exact. */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOL_DOT 1e-5

static rt_device_t *dev;
static rt_queue_t *queues[TU_N_QUEUES];

//===--- a GPT-2 attention block (docs/memory.md §2.5) ---===//

enum { AT_EMBD = 32, AT_HEAD = 4, AT_HD = 8, AT_N = 3, AT_PAST = 4, AT_L = AT_PAST + AT_N, AT_CTX = 10,
       AT_LAYERS = 2, AT_IL = 1 };

/* Expected header of a view in the block: ne and nb in elements of 4 bytes. */
static bool attn_header(const char *what, const rt_tensor_t *t, int64_t e0, int64_t e1, int64_t e2,
                        size_t s0, size_t s1, size_t s2, size_t s3) {
    const int64_t ne[4] = {e0, e1, e2, 1};
    const size_t nb[4] = {4 * s0, 4 * s1, 4 * s2, 4 * s3};
    if (t->type == RT_TYPE_F32 && memcmp(t->ne, ne, sizeof ne) == 0 && memcmp(t->nb, nb, sizeof nb) == 0)
        return true;
    char got[160];
    tu_report("ops-attn.1 GPT-2 attention: %s header is %s nb{%zu,%zu,%zu,%zu}, want ne{%lld,%lld,%lld,1} "
           "nb{%zu,%zu,%zu,%zu}", what, rt_tensor_describe(t, got, sizeof got), t->nb[0], t->nb[1],
           t->nb[2], t->nb[3], (long long)e0, (long long)e1, (long long)e2, nb[0], nb[1], nb[2], nb[3]);
    return false;
}

/* The double reference: causal attention of the N new tokens over L positions,
 * K and V of positions >= n_past from cur (written to the cache by the graph). */
static void attn_reference(const float *cur, const float *mk, const float *mv, double *out) {
    const size_t row = 3 * AT_EMBD, off = (size_t)AT_IL * AT_CTX * AT_EMBD;
    for (int h = 0; h < AT_HEAD; h++)
        for (int n = 0; n < AT_N; n++) {
            double w[AT_L], mx = -INFINITY, sum = 0;
            for (int l = 0; l < AT_L; l++) {
                double s = 0;
                for (int d = 0; d < AT_HD; d++) {
                    const size_t e = (size_t)(h * AT_HD + d);
                    const double k = l >= AT_PAST ? cur[(size_t)(l - AT_PAST) * row + AT_EMBD + e]
                                                  : mk[off + (size_t)l * AT_EMBD + e];
                    s += cur[(size_t)n * row + e] * k;
                }
                w[l] = l > AT_PAST + n ? -INFINITY : s / sqrt((double)AT_HD);
                mx = fmax(mx, w[l]);
            }
            for (int l = 0; l < AT_L; l++) sum += w[l] = exp(w[l] - mx);
            for (int d = 0; d < AT_HD; d++) {
                const size_t e = (size_t)(h * AT_HD + d);
                double acc = 0;
                for (int l = 0; l < AT_L; l++)
                    acc += w[l] / sum * (l >= AT_PAST ? cur[(size_t)(l - AT_PAST) * row + 2 * AT_EMBD + e]
                                                      : mv[off + (size_t)l * AT_EMBD + e]);
                out[(size_t)n * AT_EMBD + e] = acc;
            }
        }
}

typedef struct attn_graph {
    rt_tensor_t *cur, *mk, *mv, *out;
    bool headers_ok;
} attn_graph_t;

static void attn_build(rt_context_t *ctx, rt_graph_t *g, attn_graph_t *a) {
    const size_t off = (size_t)AT_IL * AT_CTX * AT_EMBD * 4, kv_new = off + (size_t)AT_PAST * AT_EMBD * 4;
    rt_tensor_t *cur = a->cur = rt_new_tensor_2d(ctx, RT_TYPE_F32, 3 * AT_EMBD, AT_N);
    a->mk = rt_new_tensor_1d(ctx, RT_TYPE_F32, AT_LAYERS * AT_CTX * AT_EMBD);
    a->mv = rt_new_tensor_1d(ctx, RT_TYPE_F32, AT_LAYERS * AT_CTX * AT_EMBD);
    /* this step's K and V go to positions n_past .. n_past+N-1 of layer il */
    rt_tensor_t *Kcur = rt_view_2d(ctx, cur, AT_EMBD, AT_N, cur->nb[1], AT_EMBD * 4);
    rt_tensor_t *Vcur = rt_view_2d(ctx, cur, AT_EMBD, AT_N, cur->nb[1], 2 * AT_EMBD * 4);
    rt_graph_build_forward_expand(g, rt_cpy(ctx, Kcur, rt_view_1d(ctx, a->mk, AT_N * AT_EMBD, kv_new)));
    rt_graph_build_forward_expand(g, rt_cpy(ctx, Vcur, rt_view_1d(ctx, a->mv, AT_N * AT_EMBD, kv_new)));

    rt_tensor_t *Qcur = rt_view_2d(ctx, cur, AT_EMBD, AT_N, cur->nb[1], 0);
    rt_tensor_t *Q = rt_permute(ctx, rt_cont_3d(ctx, Qcur, AT_HD, AT_HEAD, AT_N), 0, 2, 1, 3);
    rt_tensor_t *K = rt_permute(ctx, rt_reshape_3d(ctx, rt_view_1d(ctx, a->mk, AT_L * AT_EMBD, off), AT_HD,
                                                   AT_HEAD, AT_L), 0, 2, 1, 3);
    rt_tensor_t *KQ = rt_mul_mat(ctx, K, Q);
    rt_tensor_t *KQ_soft_max = rt_soft_max(ctx, rt_diag_mask_inf(ctx, rt_scale(ctx, KQ, 1.0f / sqrtf(AT_HD)),
                                                                 AT_PAST));
    rt_tensor_t *Vp = rt_permute(ctx, rt_reshape_3d(ctx, rt_view_1d(ctx, a->mv, AT_L * AT_EMBD, off), AT_HD,
                                                    AT_HEAD, AT_L), 1, 2, 0, 3);
    rt_tensor_t *V_trans = rt_cont_3d(ctx, Vp, AT_L, AT_HD, AT_HEAD);
    rt_tensor_t *KQV = rt_mul_mat(ctx, V_trans, KQ_soft_max);
    a->out = rt_cont_2d(ctx, rt_permute(ctx, KQV, 0, 2, 1, 3), AT_EMBD, AT_N);
    rt_graph_build_forward_expand(g, a->out);

    /* docs/memory.md §2.5's table, at this size (strides in floats). */
    const size_t E = AT_EMBD, L = AT_L, D = AT_HD;
    a->headers_ok = attn_header("Qcur", Qcur, E, AT_N, 1, 1, 3 * E, 3 * E * AT_N, 3 * E * AT_N) &&
                    attn_header("Q", Q, D, AT_N, AT_HEAD, 1, E, D, E * AT_N) &&
                    attn_header("K", K, D, L, AT_HEAD, 1, E, D, E * L) &&
                    attn_header("V permuted", Vp, L, D, AT_HEAD, E, 1, D, E * L) &&
                    attn_header("V_trans", V_trans, L, D, AT_HEAD, 1, L, L * D, L * D * AT_HEAD) &&
                    attn_header("KQ", KQ, L, AT_N, AT_HEAD, 1, L, L * AT_N, L * AT_N * AT_HEAD) &&
                    attn_header("KQV", KQV, D, AT_N, AT_HEAD, 1, D, D * AT_N, D * AT_N * AT_HEAD) &&
                    attn_header("out", a->out, E, AT_N, 1, 1, E, E * AT_N, E * AT_N);
}

/* After the run, the cache holds Kcur at positions n_past.. of layer il and
 * is untouched elsewhere. */
static void attn_check_cache(const rt_tensor_t *mk, const float *before, const float *cur, int threads) {
    const size_t n = (size_t)AT_LAYERS * AT_CTX * AT_EMBD, at = ((size_t)AT_IL * AT_CTX + AT_PAST) * AT_EMBD;
    float *got = malloc(n * sizeof *got);
    double *want = malloc(n * sizeof *want);
    assert_int_equal(rt_tensor_get(mk, got, 0, n * sizeof got[0]), RT_OK);
    for (size_t k = 0; k < n; k++) want[k] = before[k];
    for (size_t t = 0; t < AT_N; t++)
        for (size_t e = 0; e < AT_EMBD; e++) want[at + t * AT_EMBD + e] = cur[t * 3 * AT_EMBD + AT_EMBD + e];
    const double err = tu_nmse_error(want, got, n);
    if (err != 0) tu_report("ops-attn.2 GPT-2 attention (threads %d): K cache after cpy: nmse %.3g, want 0 (exact)",
                         threads, err);
    free(got);
    free(want);
}

/* ops-attn.3: the reason for V_trans (docs/memory.md §2.5). V permuted (1,2,0,3) has
 * nb[0] > nb[1], so MUL_MAT refuses it while the graph is being built. */
static void attn_rejects_v_permuted(void) {
    rt_context_t *ctx = tu_context(1, true);
    rt_tensor_t *v = rt_new_tensor_3d(ctx, RT_TYPE_F32, AT_HD, AT_HEAD, AT_L);
    rt_tensor_t *vp = rt_permute(ctx, v, 1, 2, 0, 3);
    rt_tensor_t *kq = rt_new_tensor_3d(ctx, RT_TYPE_F32, AT_L, AT_N, AT_HEAD);
    TU_EXPECT_ABORT(rt_mul_mat(ctx, vp, kq), "MUL_MAT");
    rt_context_destroy(ctx);
}

static void test_gpt2_attention(void **state) {
    (void)state;
    tu_n_failed = 0;
    tu_seed(0xa77e);
    rt_context_t *ctx = tu_context(16, true);
    rt_graph_t *g = rt_graph_create(ctx, 64);
    attn_graph_t a;
    attn_build(ctx, g, &a);
    rt_buffer_t *buf = NULL;
    assert_int_equal(rt_alloc_ctx_tensors(ctx, rt_device_buffer_type(dev, 0), &buf), RT_OK);
    const size_t n_cur = 3 * AT_EMBD * AT_N, n_kv = (size_t)AT_LAYERS * AT_CTX * AT_EMBD;
    float *cur = malloc(n_cur * sizeof *cur), *mk = malloc(n_kv * sizeof *mk), *mv = malloc(n_kv * sizeof *mv);
    float *got = malloc(AT_EMBD * AT_N * sizeof *got);
    double ref[AT_EMBD * AT_N];
    tu_fill(cur, n_cur, -1.0f, 1.0f);
    tu_fill(mk, n_kv, -1.0f, 1.0f);
    tu_fill(mv, n_kv, -1.0f, 1.0f);
    attn_reference(cur, mk, mv, ref);
    for (int q = 0; q < TU_N_QUEUES; q++) {
        assert_int_equal(rt_tensor_set(a.cur, cur, 0, n_cur * sizeof cur[0]), RT_OK);
        assert_int_equal(rt_tensor_set(a.mk, mk, 0, n_kv * sizeof mk[0]), RT_OK);
        assert_int_equal(rt_tensor_set(a.mv, mv, 0, n_kv * sizeof mv[0]), RT_OK);
        const rt_status_t st = rt_queue_compute(queues[q], g);
        if (st != RT_OK) fail_msg("ops-attn.1: rt_queue_compute: %s: %s", rt_status_name(st), rt_last_error());
        assert_int_equal(rt_tensor_get(a.out, got, 0, AT_EMBD * AT_N * sizeof got[0]), RT_OK);
        const double err = tu_nmse_error(ref, got, AT_EMBD * AT_N);
        if (!(err <= TOL_DOT))
            tu_report("ops-attn.1 GPT-2 attention (n_embd %d, %d heads, N %d, n_past %d, threads %d): "
                   "nmse %.3g > tol %.0e", AT_EMBD, AT_HEAD, AT_N, AT_PAST, tu_queue_threads[q], err, TOL_DOT);
        attn_check_cache(a.mk, mk, cur, tu_queue_threads[q]);
    }
    free(cur);
    free(mk);
    free(mv);
    free(got);
    rt_buffer_free(buf);
    rt_context_destroy(ctx);
    if (!a.headers_ok) tu_n_failed++;
    attn_rejects_v_permuted();
    if (tu_n_failed > 0) fail_msg("GPT-2 attention: %d failing check(s), listed above", tu_n_failed);
}

static int group_setup(void **state) {
    (void)state;
    dev = tu_cpu_device();
    return tu_queues_create(dev, queues);
}

static int group_teardown(void **state) {
    (void)state;
    tu_queues_destroy(queues);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_gpt2_attention)};
    return cmocka_run_group_tests_name("attention", tests, group_setup, group_teardown);
}
