/* SPDX-License-Identifier: MIT */
/* gpt2-sched.c: GPT-2 split over devices (docs/memory.md, section 4). The
 * placement puts the last n_gpu_layers layers (and the output) on the
 * first GPU and the rest on the CPU; each device's weights are declared in
 * a context of their own and placed in one buffer of that device; the
 * scheduler assigns every node a device, cuts the graph into splits,
 * copies their inputs across, and places the intermediates with one
 * compute buffer per device, reserved once for the worst case.
 *
 *   gpt2-sched [MODEL.gguf [N_GPU_LAYERS]]   (default 1; no GPU: all on the CPU) */
#include "gpt2.h"

#include <stdlib.h>
#include <string.h>

typedef struct run {
    gpt2_t m;
    int32_t n_gpu_layers;
    rt_registry_t *reg;
    int32_t n_devs;
    rt_device_t *devs[RT_SCHED_MAX_DEVICES];  /* GPUs, then the CPU */
    rt_context_t *ctx[RT_SCHED_MAX_DEVICES];  /* each device's weights */
    rt_buffer_t *buf[RT_SCHED_MAX_DEVICES];
    rt_placement_t *pl;
    rt_sched_t *sched;
    void *headers;
} run_t;

/* Every device but cpu0 in the registry's order, then cpu0. */
static void order_devices(run_t *r) {
    rt_device_t *cpu = rt_registry_device_by_name(r->reg, "cpu0");
    for (int32_t i = 0; i < rt_registry_device_count(r->reg) && r->n_devs < RT_SCHED_MAX_DEVICES - 1; i++)
        if (rt_registry_device(r->reg, i) != cpu) r->devs[r->n_devs++] = rt_registry_device(r->reg, i);
    r->devs[r->n_devs++] = cpu;
}

static rt_context_t *part_ctx(void *user, int32_t il) {
    run_t *r = user;
    const int32_t d = il < 0 ? rt_placement_input_device(r->pl)
                    : il == r->m.n_layer ? rt_placement_output_device(r->pl)
                    : rt_placement_layer_device(r->pl, il);
    return r->ctx[d];
}

static int place(run_t *r) {
    uint64_t layer_bytes[GPT2_MAX_LAYERS];
    for (int32_t il = 0; il < r->m.n_layer; il++) layer_bytes[il] = 1; /* the mode ignores sizes */
    const rt_placement_params_t pp = {.struct_size = sizeof pp, .mode = RT_PLACEMENT_N_GPU_LAYERS,
                                      .n_gpu_layers = r->n_devs > 1 ? r->n_gpu_layers : 0,
                                      .n_layers = r->m.n_layer, .layer_bytes = layer_bytes,
                                      .n_devices = r->n_devs, .devices = r->devs};
    return rt_placement_create(&pp, &r->pl) == RT_OK ? 0 : -1;
}

/* Declares every weight on its part's device, then one buffer per device. */
static int load_weights(run_t *r) {
    const rt_context_params_t p = {.struct_size = sizeof p,
                                   .mem_size = (size_t)gpt2_n_weights(&r->m) * rt_tensor_overhead(),
                                   .no_alloc = true};
    for (int32_t d = 0; d < r->n_devs; d++)
        if (rt_context_create(&p, &r->ctx[d]) != RT_OK) return -1;
    gpt2_declare(&r->m, part_ctx, r);
    for (int32_t d = 0; d < r->n_devs; d++)
        if (rt_context_first_tensor(r->ctx[d]) != NULL &&
            rt_alloc_ctx_tensors(r->ctx[d], rt_device_buffer_type(r->devs[d], 0), &r->buf[d]) != RT_OK)
            return -1;
    return gpt2_upload(&r->m);
}

static int setup(void *user) {
    run_t *r = user;
    r->headers = malloc(gpt2_headers_size(&r->m));
    if (r->headers == NULL || rt_registry_create(NULL, &r->reg) != RT_OK) return -1;
    order_devices(r);
    if (place(r) != 0 || load_weights(r) != 0) return -1;
    const rt_sched_options_t o = {.struct_size = sizeof o, .devices = r->devs, .n_devices = r->n_devs,
                                  .graph_size = (int32_t)gpt2_graph_size(&r->m)};
    if (rt_sched_create(&o, &r->sched) != RT_OK) return -1;
    rt_context_t *ctx = gpt2_headers_context(r->headers, gpt2_headers_size(&r->m));
    const rt_status_t st = ctx ? rt_sched_reserve(r->sched, gpt2_graph(&r->m, ctx, gpt2_n_prompt + 8))
                               : RT_ERR_OUT_OF_MEMORY;
    rt_context_destroy(ctx);
    return st == RT_OK ? 0 : -1;
}

static int eval(void *user, const int32_t *tokens, int32_t n, float *logits) {
    run_t *r = user;
    rt_context_t *ctx = gpt2_headers_context(r->headers, gpt2_headers_size(&r->m));
    if (ctx == NULL) return -1;
    rt_graph_t *g = gpt2_graph(&r->m, ctx, n);
    int rc = rt_sched_alloc_graph(r->sched, g) == RT_OK ? gpt2_set_inputs(g, tokens, n) : -1;
    if (rc == 0 && rt_sched_graph_compute(r->sched, g) != RT_OK) rc = -1;
    if (rc == 0) rc = gpt2_get_logits(&r->m, g, logits);
    rt_sched_reset(r->sched);
    rt_context_destroy(ctx);
    return rc;
}

static void teardown(void *user) {
    run_t *r = user;
    rt_sched_destroy(r->sched);
    for (int32_t d = 0; d < r->n_devs; d++) {
        rt_buffer_free(r->buf[d]);
        rt_context_destroy(r->ctx[d]);
    }
    rt_placement_destroy(r->pl);
    rt_registry_destroy(r->reg);
    free(r->headers);
}

int main(int argc, char **argv) {
    run_t r = {.n_gpu_layers = argc > 2 ? atoi(argv[2]) : 1};
    return gpt2_main(&r.m, argc, argv, setup, eval, teardown, &r);
}
