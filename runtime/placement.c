/* SPDX-License-Identifier: MIT */
/* placement.c: rt_placement_t, which device holds each layer of a model
 * (abi/rt_sched.h has the rules). A plan is a suffix of the layers on the
 * GPUs, each GPU taking a run of them, and the rest on the CPU; the input
 * and output layers follow the first and last layer of that suffix. The
 * N_GPU_LAYERS mode takes the suffix length from the caller; AUTO takes
 * the longest suffix that fits the GPUs' budgets when cut in proportion to
 * them; FASTEST hands the budgets, the devices' speed figures, the job's
 * mix of prompt and decode steps and the links between the devices
 * (cost_link.c, from the shared topology and the devices' PCI ids) to
 * cost_plan.c, which finds the least predicted time. Replanning shrinks the
 * suffix or the budget and plans again. */
#include "cost_measure.h"
#include "cost_plan.h"
#include "device_impl.h"
#include "registry_impl.h"

#include <math.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

struct rt_placement {
    rt_allocator_t allocator;
    rt_placement_mode_t mode;
    int32_t n_gpu_layers;               /* N_GPU_LAYERS; replan lowers it */
    int32_t n_layers;
    int32_t n_devices;                  /* GPUs are 0..n_devices-2 */
    uint64_t *layer_bytes;              /* n_layers, owned copy */
    uint64_t input_bytes, output_bytes;
    uint64_t memory_free[RT_SCHED_MAX_DEVICES]; /* bytes */
    uint64_t reserve[RT_SCHED_MAX_DEVICES];     /* bytes; replan grows it */
    int32_t *layer_device;              /* n_layers, the plan */
    int32_t input_device, output_device;
    rt_device_t *devices[RT_SCHED_MAX_DEVICES];    /* for the text; NULL when not given */
    rt_device_speed_t speed[RT_SCHED_MAX_DEVICES]; /* FASTEST's figures */
    double prompt_bytes_per_s[RT_SCHED_MAX_DEVICES];
    int32_t n_ubatch, n_prompt, n_generate;        /* the job FASTEST weighs */
    rt_cost_links_t links;
    double cache_gain[RT_SCHED_MAX_DEVICES];       /* the CPU's; 1 elsewhere */
    uint64_t cache_bytes;
    rt_cost_times_t times;                         /* FASTEST's predictions */
};

/* A prompt step's size when the caller names none: the model library's
 * default ubatch. */
#define PLACEMENT_UBATCH 512

static int32_t cpu_of(const rt_placement_t *p) { return p->n_devices - 1; }

//===--- the plan ---===//

/* Every layer, the input and the output on the CPU. */
static void plan_all_cpu(rt_placement_t *p) {
    for (int32_t il = 0; il < p->n_layers; il++) p->layer_device[il] = cpu_of(p);
    p->input_device = p->output_device = cpu_of(p);
}

static void plan_n_gpu_layers(rt_placement_t *p) {
    plan_all_cpu(p);
    if (p->n_devices < 2 || p->n_gpu_layers == 0) return;
    const int32_t n = p->n_gpu_layers < 0 || p->n_gpu_layers > p->n_layers ? p->n_layers
                                                                           : p->n_gpu_layers;
    for (int32_t il = p->n_layers - n; il < p->n_layers; il++) p->layer_device[il] = 0;
    if (n > 0) p->output_device = 0;
    if (p->n_gpu_layers < 0 || p->n_gpu_layers > p->n_layers) p->input_device = 0;
}

/* What the AUTO mode cuts: the GPUs' budgets and their sum. */
typedef struct budget {
    uint64_t gpu[RT_SCHED_MAX_DEVICES]; /* bytes each GPU may take */
    uint64_t total;
} budget_t;

static budget_t budgets(const rt_placement_t *p) {
    budget_t b = {{0}, 0};
    for (int32_t d = 0; d < cpu_of(p); d++) {
        b.gpu[d] = p->memory_free[d] > p->reserve[d] ? p->memory_free[d] - p->reserve[d] : 0;
        b.total += b.gpu[d];
    }
    return b;
}

/* Bytes of layer il as the cut sees it: the output rides with the last
 * layer, the input (when with_input) with the first of the suffix. */
static uint64_t item_bytes(const rt_placement_t *p, int32_t il, int32_t first, bool with_input) {
    uint64_t n = p->layer_bytes[il];
    if (il == p->n_layers - 1) n += p->output_bytes;
    if (il == first && with_input) n += p->input_bytes;
    return n;
}

/* The GPU whose share of the suffix holds byte position `at`: GPU d owns
 * [total*(b_0+..+b_{d-1})/B, total*(b_0+..+b_d)/B). */
static int32_t gpu_at(const rt_placement_t *p, const budget_t *b, double at, double total) {
    double end = 0;
    int32_t last = 0;
    for (int32_t d = 0; d < cpu_of(p); d++) {
        if (b->gpu[d] == 0) continue;
        end += total * (double)b->gpu[d] / (double)b->total;
        last = d;
        if (at < end) return d;
    }
    return last;
}

/* Cuts the last n layers across the GPUs in proportion to their budgets
 * into layer_device; false (plan untouched past the CPU part) when some
 * GPU would get more than its budget. */
static bool try_suffix(rt_placement_t *p, const budget_t *b, int32_t n, bool with_input) {
    const int32_t first = p->n_layers - n;
    uint64_t total = 0, load[RT_SCHED_MAX_DEVICES] = {0};
    for (int32_t il = first; il < p->n_layers; il++) total += item_bytes(p, il, first, with_input);
    uint64_t at = 0;
    for (int32_t il = first; il < p->n_layers; il++) {
        const uint64_t size = item_bytes(p, il, first, with_input);
        const int32_t d = gpu_at(p, b, (double)at + (double)size / 2, (double)total);
        load[d] += size;
        if (load[d] > b->gpu[d]) return false;
        p->layer_device[il] = d;
        at += size;
    }
    return true;
}

static void plan_auto(rt_placement_t *p) {
    plan_all_cpu(p);
    const budget_t b = budgets(p);
    if (p->n_devices < 2 || b.total == 0) return;
    int32_t n = p->n_layers;
    while (n > 0 && !try_suffix(p, &b, n, false)) n--;
    if (n == 0) {
        plan_all_cpu(p);
        return;
    }
    for (int32_t il = 0; il < p->n_layers - n; il++) p->layer_device[il] = cpu_of(p);
    if (n == p->n_layers && try_suffix(p, &b, n, true)) p->input_device = p->layer_device[0];
    else if (n == p->n_layers) try_suffix(p, &b, n, false); /* undo the failed try */
    p->output_device = p->layer_device[p->n_layers - 1];
}

/* Out of host memory for its tables the planner leaves all on the CPU,
 * which is a valid plan: placement never fails after create. */
static void plan_fastest(rt_placement_t *p) {
    const budget_t b = budgets(p);
    const bool job = p->n_prompt > 0 || p->n_generate > 0;
    const rt_cost_problem_t pr = {
        .n_layers = p->n_layers, .layer_bytes = p->layer_bytes, .input_bytes = p->input_bytes,
        .output_bytes = p->output_bytes, .n_devices = p->n_devices, .budget = b.gpu,
        .speed = p->speed, .prompt_bytes_per_s = p->prompt_bytes_per_s, .links = &p->links,
        .cache_gain = p->cache_gain, .cache_bytes = p->cache_bytes,
        .n_ubatch = p->n_ubatch,
        .w_decode = job ? p->n_generate : 1,
        .w_prompt = job ? ceil((double)p->n_prompt / p->n_ubatch) : 0};
    if (!rt_cost_plan(&p->allocator, &pr, p->layer_device, &p->input_device, &p->output_device,
                      &p->times))
        rt_log(RT_LOG_WARN, "placement: no host memory to plan for speed; all on the CPU");
}

static void plan(rt_placement_t *p) {
    if (p->mode == RT_PLACEMENT_FASTEST) plan_fastest(p);
    else if (p->mode == RT_PLACEMENT_AUTO) plan_auto(p);
    else plan_n_gpu_layers(p);
}

//===--- create, destroy ---===//

static rt_status_t check_params(const rt_placement_params_t *pp) {
    if (pp->n_layers < 0 || (pp->n_layers > 0 && pp->layer_bytes == NULL))
        return rt_error(RT_ERR_INVALID_ARGUMENT, "rt_placement_create: %d layers with %s sizes",
                        (int)pp->n_layers, pp->layer_bytes ? "their" : "no");
    if (pp->n_devices < 1 || pp->n_devices > RT_SCHED_MAX_DEVICES)
        return rt_error(RT_ERR_INVALID_ARGUMENT, "rt_placement_create: %d devices, not in 1..%d",
                        (int)pp->n_devices, RT_SCHED_MAX_DEVICES);
    if (pp->devices == NULL && pp->memory_free == NULL)
        return rt_error(RT_ERR_INVALID_ARGUMENT, "rt_placement_create: neither devices nor "
                        "memory_free given");
    if (pp->mode != RT_PLACEMENT_N_GPU_LAYERS && pp->mode != RT_PLACEMENT_AUTO &&
        pp->mode != RT_PLACEMENT_FASTEST)
        return rt_error(RT_ERR_INVALID_ARGUMENT, "rt_placement_create: unknown mode %d",
                        (int)pp->mode);
    if (pp->n_ubatch < 0 || pp->n_prompt < 0 || pp->n_generate < 0)
        return rt_error(RT_ERR_INVALID_ARGUMENT, "rt_placement_create: n_ubatch %d, n_prompt %d, "
                        "n_generate %d", (int)pp->n_ubatch, (int)pp->n_prompt, (int)pp->n_generate);
    if (pp->mode == RT_PLACEMENT_FASTEST && pp->speed == NULL)
        return rt_error(RT_ERR_INVALID_ARGUMENT, "rt_placement_create: FASTEST without the "
                        "devices' speed figures");
    for (int32_t d = 0; pp->memory_free == NULL && d < pp->n_devices; d++)
        if (pp->devices[d] == NULL)
            return rt_error(RT_ERR_INVALID_ARGUMENT, "rt_placement_create: device %d is NULL",
                            (int)d);
    return RT_OK;
}

/* Free bytes of device d, from the caller or from the device itself. */
static uint64_t free_of(const rt_placement_params_t *pp, int32_t d) {
    if (pp->memory_free != NULL) return pp->memory_free[d];
    rt_device_props_t props = {.struct_size = sizeof props};
    if (rt_device_get_props(pp->devices[d], &props) != RT_OK) return 0;
    return props.memory_free;
}

/* The crossings' prices: the devices' PCI ids in the shared topology when
 * the devices are given, else only their measured copy times. */
static void find_links(rt_placement_t *p) {
    const char *pci[RT_SCHED_MAX_DEVICES] = {NULL};
    bool any = false;
    for (int32_t d = 0; d < p->n_devices; d++)
        if (p->devices[d] != NULL && p->devices[d]->props.pci_bus_id[0]) {
            pci[d] = p->devices[d]->props.pci_bus_id;
            any = true;
        }
    rt_cost_links(any ? rt_topology_get_shared() : NULL, p->n_devices, pci, p->speed, &p->links);
}

/* A model small enough to stay in the CPU's last-level caches streams at
 * the cached speed (measured with the CPU's figures); known only when the
 * devices are given. Other devices' caches are not the host's. */
static void find_cache(rt_placement_t *p) {
    for (int32_t d = 0; d < p->n_devices; d++) p->cache_gain[d] = 1;
    if (p->devices[cpu_of(p)] == NULL) return;
    p->cache_gain[cpu_of(p)] = rt_cost_cache_gain(p->devices[cpu_of(p)]);
    p->cache_bytes = rt_cost_llc_bytes();
}

static void copy_params(rt_placement_t *p, const rt_placement_params_t *pp) {
    p->mode = pp->mode;
    p->n_gpu_layers = pp->n_gpu_layers;
    p->n_layers = pp->n_layers;
    p->n_devices = pp->n_devices;
    p->input_bytes = pp->input_bytes;
    p->output_bytes = pp->output_bytes;
    for (int32_t d = 0; d < pp->n_devices; d++) {
        p->memory_free[d] = free_of(pp, d);
        p->reserve[d] = pp->reserve != NULL ? pp->reserve[d] : 0;
        if (pp->speed != NULL) p->speed[d] = pp->speed[d];
        if (pp->prompt_bytes_per_s != NULL) p->prompt_bytes_per_s[d] = pp->prompt_bytes_per_s[d];
        p->devices[d] = pp->devices != NULL ? pp->devices[d] : NULL;
    }
    /* a prompt shorter than a ubatch makes shorter steps */
    p->n_ubatch = pp->n_ubatch > 0 ? pp->n_ubatch : PLACEMENT_UBATCH;
    if (pp->n_prompt > 0 && pp->n_prompt < p->n_ubatch) p->n_ubatch = pp->n_prompt;
    p->n_prompt = pp->n_prompt;
    p->n_generate = pp->n_generate;
    if (pp->mode == RT_PLACEMENT_FASTEST) find_links(p);
    if (pp->mode == RT_PLACEMENT_FASTEST) find_cache(p);
    if (pp->n_layers > 0)
        memcpy(p->layer_bytes, pp->layer_bytes, (size_t)pp->n_layers * sizeof p->layer_bytes[0]);
}

rt_status_t rt_placement_create(const rt_placement_params_t *params,
                                rt_placement_t **out_placement) {
    RT_ARMOR(params != NULL && out_placement != NULL);
    *out_placement = NULL;
    rt_placement_params_t pp;
    RT_COPY_IN(&pp, params, rt_placement_params_t, reserve);
    rt_status_t st = check_params(&pp);
    if (st != RT_OK) return st;
    const rt_allocator_t *a = pp.devices != NULL && pp.devices[0] != NULL
                                  ? &pp.devices[0]->registry->allocator
                                  : rt_allocator_default();
    rt_placement_t *p = rt_mem_calloc(a, sizeof *p);
    if (p == NULL) return rt_error(RT_ERR_OUT_OF_MEMORY, "rt_placement_create: no host memory");
    p->allocator = *a;
    p->n_layers = pp.n_layers; /* sizes the arrays for destroy */
    const size_t n = (size_t)pp.n_layers;
    if (n > 0) {
        p->layer_bytes = rt_mem_alloc(a, n * sizeof p->layer_bytes[0]);
        p->layer_device = rt_mem_alloc(a, n * sizeof p->layer_device[0]);
        if (p->layer_bytes == NULL || p->layer_device == NULL) {
            rt_placement_destroy(p);
            return rt_error(RT_ERR_OUT_OF_MEMORY, "rt_placement_create: no host memory for %zu "
                            "layers", n);
        }
    }
    copy_params(p, &pp);
    plan(p);
    *out_placement = p;
    return RT_OK;
}

void rt_placement_destroy(rt_placement_t *p) {
    if (p == NULL) return;
    const rt_allocator_t a = p->allocator;
    const size_t n = (size_t)p->n_layers;
    rt_mem_free(&a, p->layer_bytes, n * sizeof p->layer_bytes[0]);
    rt_mem_free(&a, p->layer_device, n * sizeof p->layer_device[0]);
    rt_mem_free(&a, p, sizeof *p);
}

//===--- queries ---===//

int32_t rt_placement_layer_device(const rt_placement_t *p, int32_t layer) {
    return p != NULL && layer >= 0 && layer < p->n_layers ? p->layer_device[layer] : -1;
}

int32_t rt_placement_input_device(const rt_placement_t *p) {
    return p != NULL ? p->input_device : -1;
}

int32_t rt_placement_output_device(const rt_placement_t *p) {
    return p != NULL ? p->output_device : -1;
}

int32_t rt_placement_device_layers(const rt_placement_t *p, int32_t i) {
    int32_t n = 0;
    for (int32_t il = 0; p != NULL && il < p->n_layers; il++) n += p->layer_device[il] == i;
    return n;
}

uint64_t rt_placement_device_bytes(const rt_placement_t *p, int32_t i) {
    if (p == NULL) return 0;
    uint64_t n = 0;
    for (int32_t il = 0; il < p->n_layers; il++)
        if (p->layer_device[il] == i) n += p->layer_bytes[il];
    if (p->input_device == i) n += p->input_bytes;
    if (p->output_device == i) n += p->output_bytes;
    return n;
}

double rt_placement_predicted_s(const rt_placement_t *p, int32_t i) {
    if (p == NULL || p->mode != RT_PLACEMENT_FASTEST) return 0;
    if (i == -1) return p->times.decode_total_s;
    return i >= 0 && i < p->n_devices ? p->times.decode_s[i] : 0;
}

double rt_placement_predicted_prompt_s(const rt_placement_t *p, int32_t i) {
    if (p == NULL || p->mode != RT_PLACEMENT_FASTEST) return 0;
    if (i == -1) return p->times.prompt_total_s;
    return i >= 0 && i < p->n_devices ? p->times.prompt_s[i] : 0;
}

//===--- replanning ---===//

/* N_GPU_LAYERS: the first GPU sheds its input, then its lowest layers. */
static void shed_n_gpu_layers(rt_placement_t *p, uint64_t bytes) {
    int32_t n = p->n_gpu_layers < 0 || p->n_gpu_layers > p->n_layers ? p->n_layers
                                                                     : p->n_gpu_layers;
    uint64_t moved = p->input_device == 0 ? p->input_bytes : 0;
    while (moved < bytes && n > 0) {
        moved += p->layer_bytes[p->n_layers - n];
        n--;
    }
    p->n_gpu_layers = n;
}

rt_status_t rt_placement_replan(rt_placement_t *p, int32_t i, uint64_t bytes) {
    RT_ARMOR(p != NULL);
    if (i < 0 || i >= cpu_of(p))
        return rt_error(RT_ERR_MISUSE, "rt_placement_replan: device %d is not one of "
                        "the GPUs 0..%d", (int)i, (int)cpu_of(p) - 1);
    if (rt_placement_device_bytes(p, i) == 0)
        return rt_error(RT_ERR_OUT_OF_MEMORY, "rt_placement_replan: device %d holds no layer to "
                        "move, and still lacks %" PRIu64 " bytes", (int)i, bytes);
    if (p->mode != RT_PLACEMENT_N_GPU_LAYERS) p->reserve[i] += bytes;
    else shed_n_gpu_layers(p, bytes);
    plan(p);
    return RT_OK;
}

//===--- text ---===//

/* Layers of device d as ranges, "0-3 7" or "-", into buf. */
static void layer_ranges(const rt_placement_t *p, int32_t d, char *buf, size_t size) {
    size_t len = 0;
    buf[0] = 0;
    for (int32_t il = 0; il < p->n_layers && len < size; il++) {
        if (p->layer_device[il] != d || (il > 0 && p->layer_device[il - 1] == d)) continue;
        int32_t end = il;
        while (end + 1 < p->n_layers && p->layer_device[end + 1] == d) end++;
        const int n = end > il ? snprintf(buf + len, size - len, "%s%d-%d", len ? " " : "", (int)il,
                                          (int)end)
                               : snprintf(buf + len, size - len, "%s%d", len ? " " : "", (int)il);
        len += n > 0 ? (size_t)n : 0;
    }
    if (buf[0] == 0) snprintf(buf, size, "-");
}

/* In FASTEST mode the predictions and why: ", predicted decode 1.234 ms,
 * prompt 9.876 ms a ubatch (at 2.00 GB/s, 40.00 GB/s x tokens, 10.0 us a
 * layer, 5.0 us a copy in)"; "" otherwise. */
static void predicted(const rt_placement_t *p, int32_t d, char *buf, size_t size) {
    buf[0] = 0;
    const rt_device_speed_t *s = &p->speed[d];
    if (p->mode == RT_PLACEMENT_FASTEST)
        snprintf(buf, size, ", predicted decode %.3f ms, prompt %.3f ms a ubatch (at %.2f GB/s, "
                 "%.2f GB/s x tokens, %.1f us a layer, %.1f us a copy in)",
                 p->times.decode_s[d] * 1e3, p->times.prompt_s[d] * 1e3, s->bytes_per_s * 1e-9,
                 p->prompt_bytes_per_s[d] * 1e-9, s->layer_s * 1e6, s->copy_in_s * 1e6);
}

static void write_crossing(const rt_placement_t *p, int32_t a, int32_t b, const char *what,
                           rt_write_fn write, void *user_data) {
    rt_write_text(write, user_data, "%s %d -> %d: predicted %.1f us a token, %.1f us a prompt "
                  "step\n", what, (int)a, (int)b, rt_cost_cross_s(&p->links, a, b, 1) * 1e6,
                  rt_cost_cross_s(&p->links, a, b, p->n_ubatch) * 1e6);
}

/* FASTEST's crossings in the plan's order: the activations from the
 * input's device through each run, the logits back to the CPU. */
static void write_crossings(const rt_placement_t *p, rt_write_fn write, void *user_data) {
    int32_t at = p->input_device;
    for (int32_t il = 0; il < p->n_layers; il++) {
        if (p->layer_device[il] != at) write_crossing(p, at, p->layer_device[il], "copy", write, user_data);
        at = p->layer_device[il];
    }
    if (at != cpu_of(p)) write_crossing(p, at, cpu_of(p), "logits", write, user_data);
}

void rt_placement_write_text(const rt_placement_t *p, rt_write_fn write, void *user_data) {
    if (p == NULL || write == NULL) return;
    char ranges[256], pred[256];
    for (int32_t d = 0; d < p->n_devices; d++) {
        layer_ranges(p, d, ranges, sizeof ranges);
        predicted(p, d, pred, sizeof pred);
        char name[48] = "";
        if (p->devices[d] != NULL) snprintf(name, sizeof name, " (%s)", rt_device_name(p->devices[d]));
        else if (d == cpu_of(p)) snprintf(name, sizeof name, " (cpu)");
        rt_write_text(write, user_data, "device %d%s: layers %s%s%s, %" PRIu64 " bytes%s\n",
                      (int)d, name, ranges, p->input_device == d ? ", input" : "",
                      p->output_device == d ? ", output" : "", rt_placement_device_bytes(p, d),
                      pred);
    }
    if (p->mode != RT_PLACEMENT_FASTEST) return;
    write_crossings(p, write, user_data);
    rt_write_text(write, user_data, "predicted decode: %.3f ms per token; prompt: %.3f ms per "
                  "ubatch of %d tokens\n", p->times.decode_total_s * 1e3,
                  p->times.prompt_total_s * 1e3, (int)p->n_ubatch);
    if (p->n_prompt > 0 || p->n_generate > 0)
        rt_write_text(write, user_data, "chosen for %d prompt and %d generated tokens: %.3f s "
                      "predicted\n", (int)p->n_prompt, (int)p->n_generate,
                      p->n_generate * p->times.decode_total_s +
                      ceil((double)p->n_prompt / p->n_ubatch) * p->times.prompt_total_s);
    else
        rt_write_text(write, user_data, "chosen for decode (no prompt or generation length "
                      "given)\n");
}
