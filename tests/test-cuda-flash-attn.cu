/* SPDX-License-Identifier: MIT */
/* test-cuda-flash-attn.cu: the CUDA plugin's FLASH_ATTN without a GPU. The
 * kernels' arithmetic (plugins/cuda/kernels/flash_attn.cuh: scores,
 * the online softmax's rescaling around -inf, the merge of split key
 * ranges) and the launch plan (kernels.h) are compiled by nvcc as host
 * code and driven here the way kernels/flash_attn.cu drives them: per
 * query row, ranges of plan.chunk keys, tiles of 32, a tile with no key
 * the row sees skipped, partials merged when the plan splits. Results are
 * compared with a double-precision softmax(s) v over the same inputs.
 *
 *   cufa-1  the plan covers every key exactly once, in whole tiles, within
 *           CUDA's grid limits, with the scratch its partials need
 *   cufa-2  random rows, no mask, split and not split, match the reference
 *   cufa-3  masks whose leading tiles and whole ranges are -inf (causal
 *           prompts, padding), soft-capping, match the reference
 *   cufa-4  a query that sees no key gets exact zeros, split or not
 *   cufa-5  a tile the row cannot see changes nothing when processed (what
 *           the block-wide skip of a tile relies on)
 *   cufa-6  a whole node (grouped heads, two planes, Dv != D, a query that
 *           sees nothing) run block by block over the kernels' grid, with
 *           their row and partial addressing (flash_attn.cuh), one range
 *           and several: every output element written, each as the
 *           reference */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

extern "C" {
#include <cmocka.h>
}

#include "../plugins/cuda/kernels/flash_attn.cuh"

#define MAX_KV 1200
#define MAX_D 128

static uint32_t rng_state = 2024u;
static float rng_f(float lo, float hi) {
    rng_state = rng_state * 1664525u + 1013904223u;
    return lo + (hi - lo) * (float)(rng_state >> 8) / 16777216.0f;
}

/* One query row: q {D}, k and v {n_kv rows of D / Dv}, mask {n_kv} (0 or -inf). */
typedef struct row {
    int D, Dv, n_kv;
    float scale, cap;
    float q[MAX_D], k[MAX_KV][MAX_D], v[MAX_KV][MAX_D], mask[MAX_KV];
} row_t;

static row_t the_row;

static void row_fill(row_t *r, int D, int Dv, int n_kv, float scale, float cap) {
    r->D = D, r->Dv = Dv, r->n_kv = n_kv, r->scale = scale, r->cap = cap;
    for (int d = 0; d < D; d++) r->q[d] = rng_f(-1.0f, 1.0f);
    for (int j = 0; j < n_kv; j++) {
        for (int d = 0; d < D; d++) r->k[j][d] = rng_f(-1.0f, 1.0f);
        for (int e = 0; e < Dv; e++) r->v[j][e] = rng_f(-1.0f, 1.0f);
        r->mask[j] = 0.0f;
    }
}

static void reference(const row_t *r, double *y) {
    static double s[MAX_KV];
    double mx = -INFINITY, sum = 0;
    for (int j = 0; j < r->n_kv; j++) {
        double dot = 0;
        for (int d = 0; d < r->D; d++) dot += (double)r->q[d] * r->scale * r->k[j][d];
        if (r->cap != 0) dot = r->cap * tanh(dot / r->cap);
        s[j] = dot + r->mask[j];
        if (s[j] > mx) mx = s[j];
    }
    for (int e = 0; e < r->Dv; e++) y[e] = 0;
    if (mx == -INFINITY) return;
    for (int j = 0; j < r->n_kv; j++) sum += s[j] = exp(s[j] - mx);
    for (int j = 0; j < r->n_kv; j++)
        for (int e = 0; e < r->Dv; e++) y[e] += s[j] / sum * r->v[j][e];
}

/* One tile of the kernel's loop for this row (the warp's 32 lanes in turn). */
static void tile(const row_t *r, int64_t t0, int64_t end, rt_cu_fa_state &st, float *acc, bool skip_blind) {
    float s[RT_CU_FA_TILE], mx = -INFINITY;
    bool any = false;
    for (int lane = 0; lane < RT_CU_FA_TILE; lane++) {
        const int64_t key = t0 + lane;
        const float mv = key < end ? r->mask[key] : -INFINITY;
        s[lane] = -INFINITY;
        if (mv != -INFINITY) {
            float dot = 0;
            for (int d = 0; d < r->D; d++) dot = fmaf(r->q[d] * r->scale, r->k[key][d], dot);
            s[lane] = rt_cu_fa_score(dot, r->cap, mv);
            any = true;
        }
        mx = fmaxf(mx, s[lane]);
    }
    if (skip_blind && !any) return;
    float corr;
    if (!rt_cu_fa_rescale(st, mx, &corr)) return;
    float p[RT_CU_FA_TILE], sum = 0;
    for (int lane = 0; lane < RT_CU_FA_TILE; lane++) sum += p[lane] = rt_cu_fa_weight(s[lane], st.m);
    st.l += sum;
    for (int e = 0; e < r->Dv; e++) {
        acc[e] *= corr;
        for (int j = 0; j < RT_CU_FA_TILE; j++)
            if (t0 + j < end) acc[e] = fmaf(p[j], r->v[t0 + j][e], acc[e]);
    }
}

/* What one warp of the first kernel does for its row over key range s:
 * the output row when the plan has one range, else the range's partial
 * record at rec. */
static void range(const row_t *r, const rt_cu_fa_plan_t &p, int64_t s, bool skip_blind, float *y, float *rec) {
    const int64_t start = s * p.chunk, end = start + p.chunk < r->n_kv ? start + p.chunk : r->n_kv;
    rt_cu_fa_state st = {-INFINITY, 0.0f};
    float acc[MAX_D] = {0};
    for (int64_t t0 = start; t0 < end; t0 += RT_CU_FA_TILE) tile(r, t0, end, st, acc, skip_blind);
    if (p.n_split == 1) {
        for (int e = 0; e < r->Dv; e++) y[e] = acc[e] * rt_cu_fa_inv_l(st);
        return;
    }
    rec[0] = st.m;
    rec[1] = st.l;
    for (int e = 0; e < r->Dv; e++) rec[RT_CU_FA_PART_HEAD + e] = acc[e];
}

/* The row through the plan's ranges (the first kernel) and the merge. */
static void emulate(const row_t *r, const rt_cu_fa_plan_t &p, bool skip_blind, float *y) {
    const size_t rec = (size_t)r->Dv + RT_CU_FA_PART_HEAD;
    static float part[64 * (MAX_D + RT_CU_FA_PART_HEAD)];
    assert_true(p.n_split <= 64);
    for (int s = 0; s < p.n_split; s++) range(r, p, s, skip_blind, y, part + s * rec);
    if (p.n_split == 1) return;
    float m, inv_l;
    rt_cu_fa_merge_scale(part, p.n_split, rec, &m, &inv_l);
    for (int e = 0; e < r->Dv; e++) y[e] = rt_cu_fa_merge_elem(part, p.n_split, rec, m, inv_l, e);
}

/* The plans the kernel gets for this row: decode on a large GPU (split)
 * and a long prompt (one range). */
static rt_cu_fa_plan_t plan_split(const row_t *r) { return rt_cu_fa_plan(1, 32, 8, 1, r->n_kv, r->Dv, 132); }
static rt_cu_fa_plan_t plan_whole(const row_t *r) { return rt_cu_fa_plan(512, 32, 8, 1, r->n_kv, r->Dv, 132); }

static void check_row(const row_t *r, const char *id) {
    static double ref[MAX_D];
    reference(r, ref);
    const rt_cu_fa_plan_t plans[2] = {plan_split(r), plan_whole(r)};
    for (int k = 0; k < 2; k++) {
        float y[MAX_D];
        emulate(r, plans[k], true, y);
        for (int e = 0; e < r->Dv; e++)
            if (!(fabs((double)y[e] - ref[e]) <= 2e-6 + 2e-5 * fabs(ref[e])))
                fail_msg("%s: n_kv %d, %d range(s): out[%d] = %.9g, the reference %.9g", id, r->n_kv,
                         plans[k].n_split, e, (double)y[e], ref[e]);
    }
}

static void test_plan(void **state) {
    (void)state;
    static const int64_t n_kvs[] = {0, 1, 31, 32, 33, 300, 520, 4096, 4097, 131072};
    static const int64_t Ns[] = {1, 2, 7, 512};
    for (size_t a = 0; a < sizeof n_kvs / sizeof n_kvs[0]; a++)
        for (size_t b = 0; b < sizeof Ns / sizeof Ns[0]; b++)
            for (int sm = 1; sm <= 264; sm += 131) {
                const int64_t n_kv = n_kvs[a], N = Ns[b], H = 32, H_kv = 8, Dv = 128;
                const rt_cu_fa_plan_t p = rt_cu_fa_plan(N, H, H_kv, 1, n_kv, Dv, sm);
                assert_int_equal(p.rows, N * 4);                                     /* cufa-1 */
                assert_true(p.n_warps >= 1 && p.n_warps <= RT_CU_FA_MAX_WARPS);
                const int64_t per_block = (int64_t)p.n_warps * p.rows_per_warp;
                assert_true(p.rows_per_warp == 1 || p.rows_per_warp == RT_CU_FA_MAX_ROWS_PER_WARP);
                assert_true(p.row_blocks * per_block >= p.rows && (p.row_blocks - 1) * per_block < p.rows);
                assert_true(p.chunk > 0 && p.chunk % RT_CU_FA_TILE == 0);
                assert_true(p.n_split >= 1 && p.n_split <= 65535);
                assert_true((int64_t)p.n_split * p.chunk >= n_kv);                  /* every key */
                if (p.n_split > 1) assert_true((int64_t)(p.n_split - 1) * p.chunk < n_kv); /* no empty range */
                const size_t want = p.n_split > 1 ? (size_t)p.n_split * (size_t)(N * H) * (Dv + 2) * 4 : 0;
                assert_int_equal(p.scratch, want);
            }
    /* decode of a 4096-key cache on 132 SMs is split; a 512-query prompt is not */
    assert_true(rt_cu_fa_plan(1, 32, 8, 1, 4096, 128, 132).n_split > 8);
    assert_int_equal(rt_cu_fa_plan(512, 32, 8, 1, 4096, 128, 132).n_split, 1);
}

static void test_unmasked(void **state) {
    (void)state;
    const int n_kvs[] = {1, 5, 33, 300, 1100};
    for (size_t k = 0; k < sizeof n_kvs / sizeof n_kvs[0]; k++) {
        row_fill(&the_row, 64, 64, n_kvs[k], 0.125f, 0.0f);
        check_row(&the_row, "cufa-2");
    }
    row_fill(&the_row, 24, 40, 257, 0.2f, 0.0f); /* the generic kernel's sizes */
    check_row(&the_row, "cufa-2");
}

static void test_masked(void **state) {
    (void)state;
    /* only keys 700..800 and 1001..1039 visible: whole leading tiles and
       whole ranges of the split plan see nothing */
    row_fill(&the_row, 128, 128, 1040, 0.0884f, 0.0f);
    for (int j = 0; j < the_row.n_kv; j++) the_row.mask[j] = (j >= 700 && j <= 800) || j > 1000 ? 0.0f : -INFINITY;
    check_row(&the_row, "cufa-3");
    /* causal at depth 519 of 520, with a finite bias, soft-capped */
    row_fill(&the_row, 32, 32, 520, 0.5f, 3.0f);
    for (int j = 0; j < the_row.n_kv; j++) the_row.mask[j] = j < 519 ? -0.25f * (float)(j % 3) : -INFINITY;
    check_row(&the_row, "cufa-3");
    /* one visible key, the last */
    row_fill(&the_row, 64, 64, 300, 0.125f, 0.0f);
    for (int j = 0; j < the_row.n_kv; j++) the_row.mask[j] = j == 299 ? 0.0f : -INFINITY;
    check_row(&the_row, "cufa-3");
}

static void test_blind(void **state) {
    (void)state;
    row_fill(&the_row, 64, 24, 400, 0.125f, 0.0f);
    for (int j = 0; j < the_row.n_kv; j++) the_row.mask[j] = -INFINITY;
    const rt_cu_fa_plan_t plans[2] = {plan_split(&the_row), plan_whole(&the_row)};
    for (int k = 0; k < 2; k++) {
        float y[MAX_D];
        memset(y, 0xff, sizeof y); /* NaN: each element must be written */
        emulate(&the_row, plans[k], false, y);
        for (int e = 0; e < the_row.Dv; e++)
            if (y[e] != 0.0f || signbit(y[e])) fail_msg("cufa-4: %d range(s): out[%d] = %g", plans[k].n_split, e, (double)y[e]);
    }
}

static void test_skip(void **state) {
    (void)state;
    row_fill(&the_row, 128, 128, 1000, 0.0884f, 0.0f);
    for (int j = 0; j < the_row.n_kv; j++) the_row.mask[j] = (j / 32) % 3 == 1 ? 0.0f : -INFINITY;
    const rt_cu_fa_plan_t plans[2] = {plan_split(&the_row), plan_whole(&the_row)};
    for (int k = 0; k < 2; k++) {
        float a[MAX_D], b[MAX_D];
        emulate(&the_row, plans[k], true, a);
        emulate(&the_row, plans[k], false, b);
        assert_memory_equal(a, b, the_row.Dv * sizeof a[0]); /* cufa-5 */
    }
}

/* A whole node, block by block as the grid runs it: q {D, N, H, n3}, k/v
 * {D|Dv, n_kv, H_kv, n3} and a mask {n_kv, N}, all dense; out {Dv, H, N, n3}. */
typedef struct node {
    int D, Dv, N, H, H_kv, n3, n_kv;
    float q[2][4][9][16], k[2][2][200][16], v[2][2][200][24], mask[9][200];
} node_t;

static node_t the_node;

/* Row (i, h, i3) of the node as a row_t. */
static void node_row(const node_t *n, int64_t i, int64_t h, int64_t i3, row_t *r) {
    const int64_t g = h / (n->H / n->H_kv);
    r->D = n->D, r->Dv = n->Dv, r->n_kv = n->n_kv, r->scale = 0.25f, r->cap = 0.0f;
    memcpy(r->q, n->q[i3][h][i], n->D * sizeof r->q[0]);
    for (int j = 0; j < n->n_kv; j++) {
        memcpy(r->k[j], n->k[i3][g][j], n->D * sizeof r->k[0][0]);
        memcpy(r->v[j], n->v[i3][g][j], n->Dv * sizeof r->v[0][0]);
        r->mask[j] = n->mask[i][j];
    }
}

static void grid_run(const node_t *n, const rt_cu_fa_plan_t &p, float *out, float *part) {
    static row_t r;
    const int64_t r_q = n->H / n->H_kv, n_rows = (int64_t)n->N * n->H * n->n3;
    for (int64_t bz = 0; bz < p.n_split; bz++)
        for (int64_t by = 0; by < (int64_t)n->H_kv * n->n3; by++)
            for (int64_t bx = 0; bx < p.row_blocks; bx++)
                for (int64_t w = 0; w < (int64_t)p.n_warps * p.rows_per_warp; w++) {
                    const int64_t t = rt_cu_fa_row(bx, w / p.rows_per_warp, w % p.rows_per_warp, p.n_warps,
                                                   p.rows_per_warp);
                    if (t >= p.rows) continue;
                    const rt_cu_fa_where x = rt_cu_fa_locate(t, by, n->H_kv, r_q);
                    node_row(n, x.i, x.h, x.i3, &r);
                    float *y = out + ((x.i3 * n->N + x.i) * n->H + x.h) * n->Dv;
                    range(&r, p, bz, true, y, part + rt_cu_fa_part_at(bz, rt_cu_fa_rid(x, n->H_kv, p.rows), n_rows, n->Dv));
                }
    if (p.n_split == 1) return;
    const size_t stride = rt_cu_fa_part_at(1, 0, n_rows, n->Dv);
    for (int64_t rid = 0; rid < n_rows; rid++) {
        const rt_cu_fa_where x = rt_cu_fa_locate_rid(rid, n->H_kv, p.rows, r_q);
        const float *pr = part + rt_cu_fa_part_at(0, rid, n_rows, n->Dv);
        float m, inv_l;
        rt_cu_fa_merge_scale(pr, p.n_split, stride, &m, &inv_l);
        for (int e = 0; e < n->Dv; e++)
            out[((x.i3 * n->N + x.i) * n->H + x.h) * n->Dv + e] = rt_cu_fa_merge_elem(pr, p.n_split, stride, m, inv_l, e);
    }
}

/* N queries: 3 (a warp per row), 9 (two rows per warp, the last block
 * with idle warps and an idle row). */
static void grid_check(int N) {
    node_t *n = &the_node;
    n->D = 16, n->Dv = 24, n->N = N, n->H = 4, n->H_kv = 2, n->n3 = 2, n->n_kv = 200;
    for (float *f = &n->q[0][0][0][0]; f < &n->mask[0][0]; f++) *f = rng_f(-1.0f, 1.0f);
    for (int i = 0; i < n->N; i++) /* causal at depth 150, query 1 sees nothing */
        for (int j = 0; j < n->n_kv; j++) n->mask[i][j] = j <= 150 + i && i != 1 ? 0.0f : -INFINITY;
    static float out[2 * 9 * 4 * 24], part[1 << 17];
    static row_t r;
    int split = 0;
    for (int sm = 1; sm <= 64; sm *= 8) {
        const rt_cu_fa_plan_t p = rt_cu_fa_plan(n->N, n->H, n->H_kv, n->n3, n->n_kv, n->Dv, sm);
        assert_true(p.scratch <= sizeof part);
        split += p.n_split > 1;
        memset(out, 0xff, sizeof out); /* NaN: every element must be written */
        grid_run(n, p, out, part);
        for (int i3 = 0; i3 < n->n3; i3++)
            for (int i = 0; i < n->N; i++)
                for (int h = 0; h < n->H; h++) {
                    double ref[MAX_D];
                    node_row(n, i, h, i3, &r);
                    reference(&r, ref);
                    const float *y = out + ((i3 * n->N + i) * n->H + h) * n->Dv;
                    for (int e = 0; e < n->Dv; e++)
                        if (!(fabs((double)y[e] - ref[e]) <= 2e-6 + 2e-5 * fabs(ref[e])))
                            fail_msg("cufa-6: %d range(s): out[%d, %d, %d, %d] = %.9g, the reference %.9g",
                                     p.n_split, e, h, i, i3, (double)y[e], ref[e]);
                }
    }
    assert_true(split > 0); /* the merge ran */
}

static void test_grid(void **state) {
    (void)state;
    grid_check(3);
    grid_check(9);
    assert_int_equal(rt_cu_fa_plan(9, 4, 2, 2, 200, 24, 1).rows_per_warp, 2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan),
        cmocka_unit_test(test_unmasked),
        cmocka_unit_test(test_masked),
        cmocka_unit_test(test_blind),
        cmocka_unit_test(test_skip),
        cmocka_unit_test(test_grid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
