/* SPDX-License-Identifier: MIT */
/* gpt2-ctx.c: GPT-2 with everything in context pools (docs/memory.md,
 * section 3.1). The weights go into a context that allocates (no_alloc
 * false), sized by adding up every tensor; each evaluation builds its graph
 * in a second allocating context over one static block, so every
 * intermediate gets memory as it is created, and runs it on the CPU
 * device, which reads context memory directly.
 *
 *   gpt2-ctx [MODEL.gguf]     (default tests/arch/models/random-gpt2.gguf) */
#include "gpt2.h"

#include <stdlib.h>

#define EVAL_POOL (64u << 20) /* bytes: every intermediate of the longest sequence, and more */

typedef struct run {
    gpt2_t m;
    rt_registry_t *reg;
    rt_context_t *weights;
    rt_queue_t *q;
    void *pool;
} run_t;

static int setup(void *user) {
    run_t *r = user;
    r->pool = malloc(EVAL_POOL);
    if (r->pool == NULL || rt_registry_create(NULL, &r->reg) != RT_OK) return -1;
    r->weights = gpt2_weights_in_pool(&r->m);
    if (r->weights == NULL) return -1;
    return rt_queue_create(rt_registry_device_by_name(r->reg, "cpu0"), NULL, &r->q) == RT_OK ? 0 : -1;
}

/* A fresh allocating context over the static block for every graph. */
static int eval(void *user, const int32_t *tokens, int32_t n, float *logits) {
    run_t *r = user;
    const rt_context_params_t p = {.struct_size = sizeof p, .mem_size = EVAL_POOL, .mem_buffer = r->pool};
    rt_context_t *ctx = NULL;
    if (rt_context_create(&p, &ctx) != RT_OK) return -1;
    rt_graph_t *g = gpt2_graph(&r->m, ctx, n);
    int rc = gpt2_set_inputs(g, tokens, n);
    if (rc == 0 && rt_queue_compute(r->q, g) != RT_OK) rc = -1;
    if (rc == 0) rc = gpt2_get_logits(&r->m, g, logits);
    rt_context_destroy(ctx);
    return rc;
}

static void teardown(void *user) {
    run_t *r = user;
    rt_queue_destroy(r->q);
    rt_context_destroy(r->weights);
    rt_registry_destroy(r->reg);
    free(r->pool);
}

int main(int argc, char **argv) {
    run_t r = {0};
    return gpt2_main(&r.m, argc, argv, setup, eval, teardown, &r);
}
