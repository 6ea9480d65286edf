/* SPDX-License-Identifier: MIT */
/* cost_plan.c: the split of a model's layers that RT_PLACEMENT_FASTEST
 * picks (abi/rt_sched.h): the least predicted time of the job within each
 * GPU's budget. The job is w_decode decode steps (one token each) and
 * w_prompt prompt steps (n_ubatch tokens each); both phases' times add up
 * over the devices' shares, so one objective, their weighted sum, covers
 * both. Devices come in a fixed sequence, the CPU first and then the GPUs
 * in their order, and each takes one run of consecutive layers, possibly
 * empty, so a plan is the set of cut points. A dynamic programme finds it
 * exactly: best[k][i] is the least time of layers 0..i-1 when device k of
 * the sequence takes the run that ends at i, reached from the run j..i-1
 * after some earlier device k' (or from the start). Knowing k' prices the
 * crossing of the activations between the two devices (cost_link.c: links,
 * switches, NUMA distance). A run costs its bytes over the device's
 * bandwidth (a prompt step: or its products' work, whichever is more),
 * the bandwidth from the cache when the run fits in the last-level
 * caches, and a fixed time a layer; the run that ends the model carries the output
 * layer and, off the CPU, the logits' crossing back.
 * O(devices^2 x layers^2), well under a millisecond for real models. */
#include "cost_plan.h"

#include <math.h>

typedef struct rt_cost_ctx {
    const rt_cost_problem_t *pr;
    const uint64_t *prefix;  /* n_layers + 1 running sums of layer_bytes */
} rt_cost_ctx_t;

/* Seconds of one decode step and one prompt step. */
typedef struct phase_s {
    double dec, ub;
} phase_s_t;

static double weigh(const rt_cost_problem_t *pr, phase_s_t t) {
    return pr->w_decode * t.dec + pr->w_prompt * t.ub;
}

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

/* Seconds of layers j..i-1 on device d, no crossing; false when they do
 * not fit or the device takes nothing. */
static bool run_time(const rt_cost_ctx_t *c, int32_t d, int32_t j, int32_t i, phase_s_t *out) {
    const rt_cost_problem_t *pr = c->pr;
    const rt_device_speed_t *s = &pr->speed[d];
    const uint64_t bytes = c->prefix[i] - c->prefix[j] + (i == pr->n_layers ? pr->output_bytes : 0);
    if (d != pr->n_devices - 1 && (s->bytes_per_s <= 0 || bytes > pr->budget[d])) return false;
    const bool cached = pr->cache_gain != NULL && bytes <= pr->cache_bytes;
    const double bw = (s->bytes_per_s > 0 ? s->bytes_per_s : 1) * (cached ? pr->cache_gain[d] : 1);
    const double pbw = pr->prompt_bytes_per_s != NULL ? pr->prompt_bytes_per_s[d] : 0;
    const double stream = (double)bytes / bw;
    const double work = pbw > 0 ? (double)bytes * pr->n_ubatch / pbw : 0;
    const double fixed = (double)(i - j) * s->layer_s;
    *out = (phase_s_t){stream + fixed, (work > stream ? work : stream) + fixed};
    return true;
}

static phase_s_t cross(const rt_cost_problem_t *pr, int32_t a, int32_t b) {
    return (phase_s_t){rt_cost_cross_s(pr->links, a, b, 1),
                       rt_cost_cross_s(pr->links, a, b, pr->n_ubatch)};
}

/* The crossing into the run 0..i-1 on d: none when d holds the input. */
static phase_s_t start_cross(const rt_cost_ctx_t *c, int32_t d, int32_t i) {
    const int32_t cpu = c->pr->n_devices - 1;
    if (d == cpu || input_fits(c, d, i)) return (phase_s_t){0, 0};
    return cross(c->pr, cpu, d);
}

/* The logits' way back from the last run's device (one token's row). */
static phase_s_t end_cross(const rt_cost_problem_t *pr, int32_t d) {
    const double t = rt_cost_cross_s(pr->links, d, pr->n_devices - 1, 1);
    return (phase_s_t){t, t};
}

typedef struct dp_table {
    double *best;         /* n_devices x (n_layers + 1) */
    int32_t *from_j;      /* where the run starts */
    int32_t *from_k;      /* the sequence position before it; -1: the start */
} dp_table_t;

/* The best way to reach "device k's run is j..i-1". */
static void best_into(const rt_cost_ctx_t *c, dp_table_t *t, int32_t k, int32_t i) {
    const rt_cost_problem_t *pr = c->pr;
    const int32_t w = pr->n_layers + 1, d = seq_device(pr, k);
    double b = INFINITY;
    int32_t fj = -1, fk = -1;
    for (int32_t j = 0; j < i; j++) {
        phase_s_t run;
        if (!run_time(c, d, j, i, &run)) continue;
        const double here = weigh(pr, run);
        if (j == 0) {
            const double v = here + weigh(pr, start_cross(c, d, i));
            if (v < b) b = v, fj = 0, fk = -1;
            continue;
        }
        for (int32_t kp = 0; kp < k; kp++) {
            const double before = t->best[kp * w + j];
            if (!isfinite(before)) continue;
            const double v = before + here + weigh(pr, cross(pr, seq_device(pr, kp), d));
            if (v < b) b = v, fj = j, fk = kp;
        }
    }
    t->best[k * w + i] = b;
    t->from_j[k * w + i] = fj;
    t->from_k[k * w + i] = fk;
}

/* The sequence position whose run ends the model at least total time. */
static int32_t best_last(const rt_cost_ctx_t *c, const dp_table_t *t) {
    const rt_cost_problem_t *pr = c->pr;
    const int32_t w = pr->n_layers + 1, L = pr->n_layers;
    int32_t arg = -1;
    double b = INFINITY;
    for (int32_t k = 0; k < pr->n_devices; k++) {
        const double v = t->best[k * w + L] + (k > 0 ? weigh(pr, end_cross(pr, seq_device(pr, k))) : 0);
        if (v < b) b = v, arg = k;
    }
    return arg;
}

static void add_share(rt_cost_times_t *times, int32_t d, phase_s_t a, phase_s_t b) {
    times->decode_s[d] += a.dec + b.dec;
    times->prompt_s[d] += a.ub + b.ub;
}

/* Walks the table back from the last layer into the plan. */
static void take_runs(const rt_cost_ctx_t *c, const dp_table_t *t, int32_t k, int32_t *layer_device,
                      int32_t *out_input, rt_cost_times_t *times) {
    const rt_cost_problem_t *pr = c->pr;
    const int32_t w = pr->n_layers + 1, cpu = pr->n_devices - 1;
    *out_input = cpu;
    if (k > 0) add_share(times, seq_device(pr, k), end_cross(pr, seq_device(pr, k)), (phase_s_t){0, 0});
    for (int32_t i = pr->n_layers; k >= 0 && i > 0;) {
        const int32_t d = seq_device(pr, k), j = t->from_j[k * w + i], kp = t->from_k[k * w + i];
        phase_s_t run = {0, 0};
        run_time(c, d, j, i, &run);
        for (int32_t il = j; il < i; il++) layer_device[il] = d;
        add_share(times, d, run, kp >= 0 ? cross(pr, seq_device(pr, kp), d) : start_cross(c, d, i));
        if (j == 0 && d != cpu && input_fits(c, d, i)) *out_input = d;
        i = j;
        k = kp;
    }
}

static bool solve(const rt_cost_ctx_t *c, dp_table_t *t, int32_t *layer_device, int32_t *out_input,
                  rt_cost_times_t *times) {
    const int32_t L = c->pr->n_layers, w = L + 1;
    for (int32_t k = 0; k < c->pr->n_devices; k++) t->best[k * w] = INFINITY;
    for (int32_t i = 1; i <= L; i++)
        for (int32_t k = 0; k < c->pr->n_devices; k++) best_into(c, t, k, i);
    const int32_t k = best_last(c, t);
    if (k >= 0) take_runs(c, t, k, layer_device, out_input, times);
    return k >= 0;
}

bool rt_cost_plan(const rt_allocator_t *a, const rt_cost_problem_t *pr, int32_t *layer_device,
                  int32_t *out_input, int32_t *out_output, rt_cost_times_t *out_times) {
    const int32_t L = pr->n_layers, cpu = pr->n_devices - 1;
    const size_t cells = (size_t)pr->n_devices * (size_t)(L + 1);
    uint64_t *prefix = rt_mem_alloc(a, (size_t)(L + 1) * sizeof *prefix);
    dp_table_t t = {rt_mem_alloc(a, cells * sizeof *t.best), rt_mem_alloc(a, cells * sizeof *t.from_j),
                    rt_mem_alloc(a, cells * sizeof *t.from_k)};
    for (int32_t il = 0; il < L; il++) layer_device[il] = cpu;
    *out_times = (rt_cost_times_t){{0}, {0}, 0, 0};
    *out_input = *out_output = cpu;
    const bool ok = prefix && t.best && t.from_j && t.from_k;
    if (ok && L > 0) {
        prefix[0] = 0;
        for (int32_t il = 0; il < L; il++) prefix[il + 1] = prefix[il] + pr->layer_bytes[il];
        const rt_cost_ctx_t c = {pr, prefix};
        if (solve(&c, &t, layer_device, out_input, out_times)) *out_output = layer_device[L - 1];
        for (int32_t d = 0; d < pr->n_devices; d++) {
            out_times->decode_total_s += out_times->decode_s[d];
            out_times->prompt_total_s += out_times->prompt_s[d];
        }
    }
    rt_mem_free(a, prefix, (size_t)(L + 1) * sizeof *prefix);
    rt_mem_free(a, t.best, cells * sizeof *t.best);
    rt_mem_free(a, t.from_j, cells * sizeof *t.from_j);
    rt_mem_free(a, t.from_k, cells * sizeof *t.from_k);
    return ok;
}
