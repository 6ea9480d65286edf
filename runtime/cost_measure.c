/* SPDX-License-Identifier: MIT */
/* cost_measure.c: a device's speed figures (rt_device_speed_t, abi 1.2)
 * measured by five short calibration kernels, well under a second even
 * on a software device: a matrix-vector product over weights twice the
 * size of the machine's last-level cache (hwloc's, through the shared
 * topology; at least 64 MiB so that a GPU's L2 is passed too), which is
 * what a decode step does with a layer: it streams the weights once from
 * memory, not from a cache; the same over a matrix that stays in the
 * cache (a small model's weights do); a smaller matrix times
 * RT_DEVICE_PROMPT_UBATCH columns (what a prompt step does:
 * compute-bound where the product above is memory-bound), a chain of
 * tiny nodes (about one layer's nodes: launches, barriers, thread
 * synchronisation), and a 16 KiB host-to-device copy (one token's activations at a
 * large model's width). Each is run once to warm up and then timed a few
 * times; the median counts, not the best: a model's run is timed over
 * all its steps, the slow ones of a loaded machine included. The weights
 * are Q4_0, a block-quantised type: most models are shipped in one, and
 * their kernels move fewer bytes a second than F32's (unpacking the
 * blocks costs), so the figures are in the bytes such a model has; an
 * F32 model runs faster than predicted, never slower. */
#include "cost_measure.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CM_TYPE RT_TYPE_Q4_0 /* the weights' type, see above */
#define CM_K 4096            /* the products' row length */
#define CM_M_PROMPT 128      /* rows of the prompt product's weights */
#define CM_MV_MIN (64ull << 20)  /* bytes of the decode product's weights: bounds */
#define CM_MV_MAX (256ull << 20)
#define CM_MV_CACHED (4ull << 20) /* at most, bytes of the in-cache product's weights */
#define CM_TINY 64           /* elements of each tiny node */
#define CM_NODES 16          /* tiny nodes: about one layer's */
#define CM_COPY 4096         /* floats a token's activations take */
#define CM_RUNS 5
#define CM_SLOW_BYTES_PER_S 1e9 /* below it even from the cache: arithmetic-bound */
#define CM_SLOW_S 0.05       /* a warm-up slower than this is timed once more only */

static double cm_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

uint64_t rt_cost_llc_bytes(void) {
    rt_topology_summary_t s = {.struct_size = sizeof s};
    const rt_topology_t *t = rt_topology_get_shared();
    if (t == NULL || rt_topology_get_summary(t, &s) != RT_OK) return 0;
    return s.l3_size > 0 ? s.l3_size * (uint64_t)(s.n_l3 > 0 ? s.n_l3 : 1) : s.l2_size;
}

/* Rows of the decode product: twice the last-level caches' bytes. */
static int64_t cm_mv_rows(void) {
    uint64_t bytes = 2 * rt_cost_llc_bytes();
    if (bytes < CM_MV_MIN) bytes = CM_MV_MIN;
    if (bytes > CM_MV_MAX) bytes = CM_MV_MAX;
    return (int64_t)(bytes / rt_row_size(CM_TYPE, CM_K));
}

/* Rows of the product that stays in the cache: an eighth of the
 * last-level caches, at most CM_MV_CACHED (a small model's weights). */
static int64_t cm_cached_rows(void) {
    uint64_t bytes = rt_cost_llc_bytes() / 8;
    if (bytes == 0 || bytes > CM_MV_CACHED) bytes = CM_MV_CACHED;
    const int64_t rows = (int64_t)(bytes / rt_row_size(CM_TYPE, CM_K));
    return rows > 0 ? rows : 1;
}

typedef struct cm_bench {
    rt_context_t *ctx;
    rt_buffer_t *buf;
    rt_tensor_t *w, *x, *mv, *wc, *mvc, *wp, *xb, *mm, *tiny, *chain, *copy;
    rt_graph_t *g_mv, *g_mvc, *g_mm, *g_chain;
} cm_bench_t;

static rt_status_t cm_build(cm_bench_t *b, rt_device_t *dev) {
    const rt_context_params_t p = {.struct_size = sizeof p, .mem_size = 1 << 20, .no_alloc = true};
    rt_status_t st = rt_context_create(&p, &b->ctx);
    if (st != RT_OK) return st;
    b->w = rt_new_tensor_2d(b->ctx, CM_TYPE, CM_K, cm_mv_rows());
    b->x = rt_new_tensor_1d(b->ctx, RT_TYPE_F32, CM_K);
    b->mv = rt_mul_mat(b->ctx, b->w, b->x);
    b->wc = rt_new_tensor_2d(b->ctx, CM_TYPE, CM_K, cm_cached_rows());
    b->mvc = rt_mul_mat(b->ctx, b->wc, b->x);
    b->wp = rt_new_tensor_2d(b->ctx, CM_TYPE, CM_K, CM_M_PROMPT);
    b->xb = rt_new_tensor_2d(b->ctx, RT_TYPE_F32, CM_K, RT_DEVICE_PROMPT_UBATCH);
    b->mm = rt_mul_mat(b->ctx, b->wp, b->xb);
    b->tiny = rt_new_tensor_1d(b->ctx, RT_TYPE_F32, CM_TINY);
    b->chain = b->tiny;
    for (int i = 0; i < CM_NODES; i++) b->chain = rt_add(b->ctx, b->chain, b->tiny);
    b->copy = rt_new_tensor_1d(b->ctx, RT_TYPE_F32, CM_COPY);
    b->g_mv = rt_graph_create(b->ctx, 16);
    b->g_mvc = rt_graph_create(b->ctx, 16);
    b->g_mm = rt_graph_create(b->ctx, 16);
    b->g_chain = rt_graph_create(b->ctx, 2 * CM_NODES + 8);
    if (!b->mv || !b->mvc || !b->mm || !b->chain || !b->copy || !b->g_mv || !b->g_mvc || !b->g_mm ||
        !b->g_chain)
        return rt_error(RT_ERR_OUT_OF_MEMORY, "calibration: cannot build its graphs");
    rt_graph_build_forward_expand(b->g_mv, b->mv);
    rt_graph_build_forward_expand(b->g_mvc, b->mvc);
    rt_graph_build_forward_expand(b->g_mm, b->mm);
    rt_graph_build_forward_expand(b->g_chain, b->chain);
    return rt_alloc_ctx_tensors(b->ctx, rt_device_buffer_type(dev, 0), &b->buf);
}

/* Zero inputs (all-zero Q4_0 blocks are valid ones): the kernels' speed
 * does not depend on the values. */
static rt_status_t cm_fill(cm_bench_t *b) {
    rt_tensor_t *const all[] = {b->w, b->x, b->wc, b->wp, b->xb, b->tiny};
    void *zero = calloc(1, rt_nbytes(b->w));
    if (!zero) return rt_error(RT_ERR_OUT_OF_MEMORY, "calibration: no host memory");
    rt_status_t st = RT_OK;
    for (size_t i = 0; st == RT_OK && i < sizeof all / sizeof all[0]; i++)
        st = rt_tensor_set(all[i], zero, 0, rt_nbytes(all[i]));
    free(zero);
    return st;
}

/* The median of CM_RUNS times (sorted in place). */
static double cm_median(double *t) {
    for (int i = 1; i < CM_RUNS; i++)
        for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
            const double x = t[j];
            t[j] = t[j - 1];
            t[j - 1] = x;
        }
    return t[CM_RUNS / 2];
}

/* Median seconds of a graph over CM_RUNS runs after a warm-up (which
 * compiles what a device compiles), or the one run after it when the
 * warm-up took over CM_SLOW_S (a software device, for which the rest
 * would take seconds); < 0 on failure. */
static double cm_time_graph(rt_queue_t *q, rt_graph_t *g) {
    double t[CM_RUNS], warm = 0;
    for (int r = -1; r < CM_RUNS; r++) {
        const double t0 = cm_now();
        if (rt_queue_compute(q, g) != RT_OK || rt_queue_synchronize(q) != RT_OK) return -1;
        const double dt = cm_now() - t0;
        if (r == -1) warm = dt;
        else if (warm > CM_SLOW_S) return dt;
        else t[r] = dt;
    }
    return cm_median(t);
}

static double cm_time_copy(rt_tensor_t *dst) {
    static float host[CM_COPY];
    double t[CM_RUNS];
    for (int r = -1; r < CM_RUNS; r++) {
        const double t0 = cm_now();
        if (rt_tensor_set(dst, host, 0, sizeof host) != RT_OK) return -1;
        if (r >= 0) t[r] = cm_now() - t0;
    }
    return cm_median(t);
}

rt_status_t rt_cost_measure(rt_device_t *dev, rt_cost_figures_t *out) {
    memset(out, 0, sizeof *out);
    cm_bench_t b = {0};
    rt_queue_t *q = NULL;
    rt_status_t st = cm_build(&b, dev);
    if (st == RT_OK) st = cm_fill(&b);
    if (st == RT_OK) st = rt_queue_create(dev, NULL, &q);
    if (st == RT_OK) {
        /* a device slow even from its cache is bound by its arithmetic, not
         * its memory: the large product would only take long to say so */
        const double mvc = cm_time_graph(q, b.g_mvc);
        const double ratio = (double)rt_nbytes(b.w) / (double)rt_nbytes(b.wc);
        const double mv = (double)rt_nbytes(b.wc) / mvc < CM_SLOW_BYTES_PER_S
                              ? mvc * ratio : cm_time_graph(q, b.g_mv);
        const double chain = cm_time_graph(q, b.g_chain), copy = cm_time_copy(b.copy);
        const double mm = cm_time_graph(q, b.g_mm);
        if (mv > 0 && mvc > 0 && mm > 0 && chain >= 0 && copy >= 0) {
            out->prompt_bytes_per_s = (double)rt_nbytes(b.wp) * RT_DEVICE_PROMPT_UBATCH / mm;
            out->s.bytes_per_s = (double)rt_nbytes(b.w) / mv;
            out->cached_bytes_per_s = (double)rt_nbytes(b.wc) / mvc;
            out->s.layer_s = chain;
            out->s.copy_in_s = copy;
        } else {
            st = rt_error(RT_ERR_DEVICE, "calibration of %s failed", rt_device_name(dev));
        }
    }
    rt_queue_destroy(q);
    rt_buffer_free(b.buf);
    rt_context_destroy(b.ctx);
    return st;
}
