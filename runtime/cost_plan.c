/* SPDX-License-Identifier: MIT */
/* cost_plan.c: the split of a model's layers that RT_PLACEMENT_FASTEST
 * picks (abi/rt_sched.h): the least predicted decode time per token within
 * each GPU's budget. Devices come in a fixed sequence, the CPU first and
 * then the GPUs in their order, and each takes one run of consecutive
 * layers, possibly empty, so a plan is the set of cut points. A dynamic
 * programme finds it exactly: best[k][i] is the least time of layers 0..i-1
 * on the first k + 1 devices of the sequence, and device k either takes
 * nothing or the run j..i-1 for some j. A run costs its bytes over the
 * device's bandwidth, a fixed time a layer, and, when it does not start the
 * model, the crossing of the activations into the device; the run that
 * ends the model carries the output layer and, off the CPU, the logits'
 * crossing back. O(devices x layers^2), microseconds for real models. */
#include "cost_plan.h"

#include <math.h>

typedef struct rt_cost_ctx {
    const rt_cost_problem_t *pr;
    const uint64_t *prefix;  /* n_layers + 1 running sums of layer_bytes */
} rt_cost_ctx_t;

/* The device of sequence position k: the CPU first, then GPU k - 1. */
static int32_t seq_device(const rt_cost_problem_t *pr, int32_t k) {
    return k == 0 ? pr->n_devices - 1 : k - 1;
}

/* Whether a GPU run from layer 0 can hold the input layer as well. */
static bool input_fits(const rt_cost_ctx_t *c, int32_t d, int32_t end) {
    const rt_cost_problem_t *pr = c->pr;
    uint64_t bytes = c->prefix[end] - c->prefix[0] + pr->input_bytes;
    if (end == pr->n_layers) bytes += pr->output_bytes;
    return bytes <= pr->budget[d];
}

/* Seconds of layers j..i-1 on device d, the copies into it included;
 * INFINITY when they do not fit or the device takes nothing. */
static double run_cost(const rt_cost_ctx_t *c, int32_t d, int32_t j, int32_t i) {
    const rt_cost_problem_t *pr = c->pr;
    const int32_t cpu = pr->n_devices - 1;
    const rt_device_speed_t *s = &pr->speed[d];
    const bool last = i == pr->n_layers;
    const uint64_t bytes = c->prefix[i] - c->prefix[j] + (last ? pr->output_bytes : 0);
    if (d != cpu && (s->bytes_per_s <= 0 || bytes > pr->budget[d])) return INFINITY;
    const double bw = s->bytes_per_s > 0 ? s->bytes_per_s : 1;
    double t = (double)bytes / bw + (double)(i - j) * s->layer_s;
    if (j > 0 || (d != cpu && !input_fits(c, d, i))) t += s->copy_in_s;
    if (last && d != cpu) t += s->copy_in_s; /* the logits' read back costs about a write */
    return t;
}

/* Fills best and from ((n_devices) x (n_layers + 1) each): from[k][i] is
 * where device k's run starts, or -1 when it takes nothing. */
static void fill_table(const rt_cost_ctx_t *c, double *best, int32_t *from) {
    const int32_t L = c->pr->n_layers, w = L + 1;
    for (int32_t k = 0; k < c->pr->n_devices; k++) {
        const int32_t d = seq_device(c->pr, k);
        for (int32_t i = 0; i <= L; i++) {
            double b = k > 0 ? best[(k - 1) * w + i] : i == 0 ? 0 : INFINITY;
            int32_t f = -1;
            for (int32_t j = 0; j < i; j++) {
                const double before = k > 0 ? best[(k - 1) * w + j] : j == 0 ? 0 : INFINITY;
                if (!isfinite(before)) continue;
                const double t = before + run_cost(c, d, j, i);
                if (t < b) b = t, f = j;
            }
            best[k * w + i] = b;
            from[k * w + i] = f;
        }
    }
}

/* Walks the table back from the last layer into the plan. */
static void take_runs(const rt_cost_ctx_t *c, const int32_t *from, int32_t *layer_device,
                      int32_t *out_input, double *share) {
    const rt_cost_problem_t *pr = c->pr;
    const int32_t w = pr->n_layers + 1, cpu = pr->n_devices - 1;
    *out_input = cpu;
    for (int32_t k = pr->n_devices - 1, i = pr->n_layers; k >= 0; k--) {
        const int32_t j = from[k * w + i];
        if (j < 0) continue;
        const int32_t d = seq_device(pr, k);
        for (int32_t il = j; il < i; il++) layer_device[il] = d;
        share[d] += run_cost(c, d, j, i);
        if (j == 0 && d != cpu && input_fits(c, d, i)) *out_input = d;
        i = j;
    }
}

bool rt_cost_plan(const rt_allocator_t *a, const rt_cost_problem_t *pr, int32_t *layer_device,
                  int32_t *out_input, int32_t *out_output, double *out_share, double *out_total) {
    const int32_t L = pr->n_layers, cpu = pr->n_devices - 1;
    const size_t cells = (size_t)pr->n_devices * (size_t)(L + 1);
    uint64_t *prefix = rt_mem_alloc(a, (size_t)(L + 1) * sizeof *prefix);
    double *best = rt_mem_alloc(a, cells * sizeof *best);
    int32_t *from = rt_mem_alloc(a, cells * sizeof *from);
    for (int32_t il = 0; il < L; il++) layer_device[il] = cpu;
    for (int32_t d = 0; d < pr->n_devices; d++) out_share[d] = 0;
    *out_input = *out_output = cpu;
    *out_total = 0;
    const bool ok = prefix && best && from;
    if (ok) {
        prefix[0] = 0;
        for (int32_t il = 0; il < L; il++) prefix[il + 1] = prefix[il] + pr->layer_bytes[il];
        const rt_cost_ctx_t c = {pr, prefix};
        fill_table(&c, best, from);
        take_runs(&c, from, layer_device, out_input, out_share);
        if (L > 0) *out_output = layer_device[L - 1];
        for (int32_t d = 0; d < pr->n_devices; d++) *out_total += out_share[d];
    }
    rt_mem_free(a, prefix, (size_t)(L + 1) * sizeof *prefix);
    rt_mem_free(a, best, cells * sizeof *best);
    rt_mem_free(a, from, cells * sizeof *from);
    return ok;
}
