/* SPDX-License-Identifier: MIT */
/* gpt2-alloc.c: GPT-2 with its intermediates placed by a gallocr (the
 * docs/memory.md, section 3.3). The weights stay in a context pool; each graph is
 * built in a no_alloc context (headers only), and one gallocr on the CPU's
 * buffer type, reserved once for the worst case (the longest sequence the
 * run will see), gives every intermediate its offset in one buffer,
 * reusing memory as tensors die; later graphs fit that plan without
 * allocating.
 *
 *   gpt2-alloc [MODEL.gguf]   (default tests/arch/models/random-gpt2.gguf) */
#include "gpt2.h"

#include <stdlib.h>

typedef struct run {
    gpt2_t m;
    rt_registry_t *reg;
    rt_context_t *weights;
    rt_queue_t *q;
    rt_gallocr_t *ga;
    void *headers;      /* the graph context's block: headers only */
} run_t;

static int setup(void *user) {
    run_t *r = user;
    r->headers = malloc(gpt2_headers_size(&r->m));
    if (r->headers == NULL || rt_registry_create(NULL, &r->reg) != RT_OK) return -1;
    rt_device_t *cpu = rt_registry_device_by_name(r->reg, "cpu0");
    r->weights = gpt2_weights_in_pool(&r->m);
    if (r->weights == NULL || rt_queue_create(cpu, NULL, &r->q) != RT_OK) return -1;
    if (rt_gallocr_create(rt_device_buffer_type(cpu, 0), &r->ga) != RT_OK) return -1;
    return gpt2_gallocr_reserve(&r->m, r->ga, r->headers); /* the longest graph: prompt + 8 */
}

static int eval(void *user, const int32_t *tokens, int32_t n, float *logits) {
    run_t *r = user;
    return gpt2_gallocr_eval(&r->m, r->ga, r->q, r->headers, tokens, n, logits);
}

static void teardown(void *user) {
    run_t *r = user;
    rt_gallocr_destroy(r->ga);
    rt_queue_destroy(r->q);
    rt_context_destroy(r->weights);
    rt_registry_destroy(r->reg);
    free(r->headers);
}

int main(int argc, char **argv) {
    run_t r = {0};
    return gpt2_main(&r.m, argc, argv, setup, eval, teardown, &r);
}
