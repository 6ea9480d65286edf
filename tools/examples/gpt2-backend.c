/* SPDX-License-Identifier: MIT */
/* gpt2-backend.c: GPT-2 with its weights in one device buffer (docs/memory.md,
 * section 3.2). The weights are declared in a no_alloc context and placed
 * by rt_alloc_ctx_tensors in one buffer of the device's buffer type, their
 * bytes copied in with rt_tensor_set; a gallocr of the same buffer type,
 * reserved for the worst case, places the intermediates; the graph runs on
 * the device's queue. The device: the second argument, else the first the
 * registry lists (a GPU when there is one).
 *
 *   gpt2-backend [MODEL.gguf [DEVICE]] */
#include "gpt2.h"

#include <stdlib.h>

typedef struct run {
    gpt2_t m;
    const char *device;
    rt_registry_t *reg;
    rt_context_t *weights;
    rt_buffer_t *buf;
    rt_queue_t *q;
    rt_gallocr_t *ga;
    void *headers;
} run_t;

static rt_context_t *weights_ctx(void *user, int32_t il) {
    (void)il;
    return ((run_t *)user)->weights;
}

static int load_weights(run_t *r, rt_device_t *dev) {
    const rt_context_params_t p = {.struct_size = sizeof p,
                                   .mem_size = (size_t)gpt2_n_weights(&r->m) * rt_tensor_overhead(),
                                   .no_alloc = true};
    if (rt_context_create(&p, &r->weights) != RT_OK) return -1;
    gpt2_declare(&r->m, weights_ctx, r);
    if (rt_alloc_ctx_tensors(r->weights, rt_device_buffer_type(dev, 0), &r->buf) != RT_OK) return -1;
    return gpt2_upload(&r->m);
}

static int setup(void *user) {
    run_t *r = user;
    r->headers = malloc(gpt2_headers_size(&r->m));
    if (r->headers == NULL || rt_registry_create(NULL, &r->reg) != RT_OK) return -1;
    rt_device_t *dev = r->device ? rt_registry_device_by_name(r->reg, r->device) : rt_registry_device(r->reg, 0);
    if (dev == NULL || load_weights(r, dev) != 0 || rt_queue_create(dev, NULL, &r->q) != RT_OK) return -1;
    if (rt_gallocr_create(rt_device_buffer_type(dev, 0), &r->ga) != RT_OK) return -1;
    return gpt2_gallocr_reserve(&r->m, r->ga, r->headers);
}

static int eval(void *user, const int32_t *tokens, int32_t n, float *logits) {
    run_t *r = user;
    return gpt2_gallocr_eval(&r->m, r->ga, r->q, r->headers, tokens, n, logits);
}

static void teardown(void *user) {
    run_t *r = user;
    rt_gallocr_destroy(r->ga);
    rt_queue_destroy(r->q);
    rt_buffer_free(r->buf);
    rt_context_destroy(r->weights);
    rt_registry_destroy(r->reg);
    free(r->headers);
}

int main(int argc, char **argv) {
    run_t r = {.device = argc > 2 ? argv[2] : NULL};
    return gpt2_main(&r.m, argc, argv, setup, eval, teardown, &r);
}
