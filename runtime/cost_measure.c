/* SPDX-License-Identifier: MIT */
/* cost_measure.c: a device's speed figures (rt_device_speed_t, abi 1.2)
 * measured by four short calibration kernels, well under a second even
 * on a software device: a matrix-vector product over 8 MiB of F32 weights
 * (what a decode step does with a layer: it streams the weights once), the
 * same weights times RT_DEVICE_PROMPT_UBATCH columns (what a prompt step
 * does: compute-bound where the product above is memory-bound), a
 * chain of a dozen tiny nodes (about one layer's nodes: launches, barriers,
 * synchronisation), and a 16 KiB host-to-device copy (one token's
 * activations at a large model's width). Each is run once to warm up and
 * then timed a few times; the best time counts, as the sustained figure.
 * Quantised weights stream fewer bytes but at about the same bytes per
 * second on a memory-bound device, so F32 stands for every type here. */
#include "cost_measure.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CM_K 2048            /* the product's weights: CM_K x CM_M F32 */
#define CM_M 1024
#define CM_TINY 64           /* elements of each tiny node */
#define CM_NODES 12          /* tiny nodes: about one layer's */
#define CM_COPY 4096         /* floats a token's activations take */
#define CM_RUNS 4

static double cm_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct cm_bench {
    rt_context_t *ctx;
    rt_buffer_t *buf;
    rt_tensor_t *w, *x, *mv, *xb, *mm, *tiny, *chain, *copy;
    rt_graph_t *g_mv, *g_mm, *g_chain;
} cm_bench_t;

static rt_status_t cm_build(cm_bench_t *b, rt_device_t *dev) {
    const rt_context_params_t p = {.struct_size = sizeof p, .mem_size = 1 << 20, .no_alloc = true};
    rt_status_t st = rt_context_create(&p, &b->ctx);
    if (st != RT_OK) return st;
    b->w = rt_new_tensor_2d(b->ctx, RT_TYPE_F32, CM_K, CM_M);
    b->x = rt_new_tensor_1d(b->ctx, RT_TYPE_F32, CM_K);
    b->mv = rt_mul_mat(b->ctx, b->w, b->x);
    b->xb = rt_new_tensor_2d(b->ctx, RT_TYPE_F32, CM_K, RT_DEVICE_PROMPT_UBATCH);
    b->mm = rt_mul_mat(b->ctx, b->w, b->xb);
    b->tiny = rt_new_tensor_1d(b->ctx, RT_TYPE_F32, CM_TINY);
    b->chain = b->tiny;
    for (int i = 0; i < CM_NODES; i++) b->chain = rt_add(b->ctx, b->chain, b->tiny);
    b->copy = rt_new_tensor_1d(b->ctx, RT_TYPE_F32, CM_COPY);
    b->g_mv = rt_graph_create(b->ctx, 16);
    b->g_mm = rt_graph_create(b->ctx, 16);
    b->g_chain = rt_graph_create(b->ctx, 2 * CM_NODES + 8);
    if (!b->mv || !b->mm || !b->chain || !b->copy || !b->g_mv || !b->g_mm || !b->g_chain)
        return rt_error(RT_ERR_OUT_OF_MEMORY, "calibration: cannot build its graphs");
    rt_graph_build_forward_expand(b->g_mv, b->mv);
    rt_graph_build_forward_expand(b->g_mm, b->mm);
    rt_graph_build_forward_expand(b->g_chain, b->chain);
    return rt_alloc_ctx_tensors(b->ctx, rt_device_buffer_type(dev, 0), &b->buf);
}

/* Zero inputs: the kernels' speed does not depend on the values. */
static rt_status_t cm_fill(cm_bench_t *b) {
    float *zero = calloc((size_t)CM_K * CM_M, sizeof *zero);
    if (!zero) return rt_error(RT_ERR_OUT_OF_MEMORY, "calibration: no host memory");
    rt_status_t st = rt_tensor_set(b->w, zero, 0, rt_nbytes(b->w));
    if (st == RT_OK) st = rt_tensor_set(b->x, zero, 0, rt_nbytes(b->x));
    if (st == RT_OK) st = rt_tensor_set(b->xb, zero, 0, rt_nbytes(b->xb));
    if (st == RT_OK) st = rt_tensor_set(b->tiny, zero, 0, rt_nbytes(b->tiny));
    free(zero);
    return st;
}

/* Best seconds of a graph over CM_RUNS runs after a warm-up; < 0 on failure. */
static double cm_time_graph(rt_queue_t *q, rt_graph_t *g) {
    double best = -1;
    for (int r = 0; r <= CM_RUNS; r++) {
        const double t0 = cm_now();
        if (rt_queue_compute(q, g) != RT_OK || rt_queue_synchronize(q) != RT_OK) return -1;
        const double t = cm_now() - t0;
        if (r > 0 && (best < 0 || t < best)) best = t;
    }
    return best;
}

static double cm_time_copy(rt_tensor_t *t) {
    static float host[CM_COPY];
    double best = -1;
    for (int r = 0; r <= CM_RUNS; r++) {
        const double t0 = cm_now();
        if (rt_tensor_set(t, host, 0, sizeof host) != RT_OK) return -1;
        const double dt = cm_now() - t0;
        if (r > 0 && (best < 0 || dt < best)) best = dt;
    }
    return best;
}

rt_status_t rt_cost_measure(rt_device_t *dev, rt_device_speed_t *out, double *out_prompt) {
    memset(out, 0, sizeof *out);
    *out_prompt = 0;
    cm_bench_t b = {0};
    rt_queue_t *q = NULL;
    rt_status_t st = cm_build(&b, dev);
    if (st == RT_OK) st = cm_fill(&b);
    if (st == RT_OK) st = rt_queue_create(dev, NULL, &q);
    if (st == RT_OK) {
        const double mv = cm_time_graph(q, b.g_mv), chain = cm_time_graph(q, b.g_chain);
        const double copy = cm_time_copy(b.copy), mm = cm_time_graph(q, b.g_mm);
        if (mv > 0 && mm > 0 && chain >= 0 && copy >= 0) {
            *out_prompt = (double)rt_nbytes(b.w) * RT_DEVICE_PROMPT_UBATCH / mm;
            out->bytes_per_s = (double)rt_nbytes(b.w) / mv;
            out->layer_s = chain;
            out->copy_in_s = copy;
        } else {
            st = rt_error(RT_ERR_DEVICE, "calibration of %s failed", rt_device_name(dev));
        }
    }
    rt_queue_destroy(q);
    rt_buffer_free(b.buf);
    rt_context_destroy(b.ctx);
    return st;
}
