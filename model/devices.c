/* SPDX-License-Identifier: MIT */
/* devices.c: which devices a model uses and which layer goes where. The
 * devices are the scheduler's list: every non-CPU device the caller named
 * (or every one of the registry, each piece of hardware once, software
 * devices such as lavapipe included: "every device found" is the
 * default), then the CPU, which is always there
 * because graph inputs start on it. Layers are placed by rt_placement_t
 * (abi/rt_sched.h) over the bytes of each layer's weights and KV cache;
 * before that, the whole model is checked against the memory of the
 * devices allowed to hold it, so a model too large fails with one line.
 * RTM_SPLIT_FASTEST gives the placement each device's speed figures
 * (rt_device_speed: cached, else measured once), so a device that would
 * slow the model down, such as a software one, gets nothing; a device
 * whose figures cannot be had makes it fall back to the memory split. */
#include "model_impl.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static rt_device_kind_t kind_of(const rt_device_t *dev, uint64_t *out_free) {
    rt_device_props_t p = {.struct_size = sizeof p};
    if (rt_device_get_props(dev, &p) != RT_OK) return RT_DEVICE_KIND_SOFTWARE;
    if (out_free) *out_free = p.memory_free ? p.memory_free : p.memory_total;
    return p.kind;
}

static bool listed(const rtm_model_t *m, const rt_device_t *dev) {
    for (int32_t i = 0; i < m->n_devices; i++)
        if (m->devices[i] == dev) return true;
    return false;
}

/* Adds dev among the GPUs (or remembers it as the CPU). */
static rt_status_t add_device(rtm_model_t *m, rt_device_t *dev, rt_device_t **cpu) {
    if (listed(m, dev) || dev == *cpu) return RT_OK;
    if (kind_of(dev, NULL) == RT_DEVICE_KIND_CPU) {
        if (*cpu == NULL) *cpu = dev;
        return RT_OK;
    }
    if (m->n_devices >= RTM_MAX_DEVICES - 1)
        return rtm_error(RT_ERR_INVALID_ARGUMENT, "rtm_model_load: more than %d devices",
                         RTM_MAX_DEVICES - 1);
    m->holds_weights[m->n_devices] = true;
    m->devices[m->n_devices++] = dev;
    return RT_OK;
}

/* The default list: every device, each piece of hardware once. */
static bool wanted_by_default(rt_device_t *dev) { return rt_device_same_as(dev) == NULL; }

static rt_device_t *registry_cpu(const rt_registry_t *reg) {
    for (int32_t i = 0; i < rt_registry_device_count(reg); i++) {
        rt_device_t *dev = rt_registry_device(reg, i);
        if (kind_of(dev, NULL) == RT_DEVICE_KIND_CPU) return dev;
    }
    return NULL;
}

rt_status_t rtm_devices_choose(rtm_model_t *m, const rtm_model_params_t *params) {
    rt_device_t *cpu = NULL;
    rt_status_t st = RT_OK;
    const bool all = params->devices == NULL;
    const int32_t n = all ? rt_registry_device_count(m->registry) : params->n_devices;
    for (int32_t i = 0; st == RT_OK && i < n; i++) {
        rt_device_t *dev = all ? rt_registry_device(m->registry, i) : params->devices[i];
        if (dev == NULL) return rtm_error(RT_ERR_INVALID_ARGUMENT, "rtm_model_load: device %d is NULL", i);
        if (!all || wanted_by_default(dev)) st = add_device(m, dev, &cpu);
    }
    if (st != RT_OK) return st;
    const bool cpu_holds = cpu != NULL;
    if (cpu == NULL) cpu = registry_cpu(m->registry);
    if (cpu == NULL)
        return rtm_error(RT_ERR_NOT_FOUND, "rtm_model_load: no CPU device; the CPU plugin must be "
                         "loaded (plugin search path: %s)", rt_registry_search_path(m->registry));
    if (m->n_devices == 0 && !cpu_holds)
        return rtm_error(RT_ERR_INVALID_ARGUMENT, "rtm_model_load: no device to hold the weights");
    m->holds_weights[m->n_devices] = cpu_holds;
    m->devices[m->n_devices++] = cpu;
    return RT_OK;
}

uint64_t rtm_kv_layer_bytes(const rtm_hparams_t *hp, int32_t n_ctx) {
    return 2 * (uint64_t)n_ctx * (uint64_t)rtm_n_embd_kv(hp) * sizeof(float);
}

/* A rough compute buffer for one GPU, kept free by the placement: the
 * logits and the widest activations of a default ubatch, and the
 * attention scores of one layer at full context. */
static uint64_t compute_reserve(const rtm_hparams_t *hp, int32_t n_ctx) {
    const uint64_t nb = RTM_DEFAULT_N_BATCH;
    const uint64_t act = nb * ((uint64_t)hp->n_vocab + 4 * (uint64_t)hp->n_ff + 8 * (uint64_t)hp->n_embd);
    const uint64_t kq = 2 * nb * (uint64_t)n_ctx * (uint64_t)hp->n_head;
    return (act + kq) * sizeof(float);
}

typedef struct place_sizes {
    uint64_t *layer;
    uint64_t input, output, total;
    uint64_t free[RTM_MAX_DEVICES], reserve[RTM_MAX_DEVICES];
    uint64_t capacity;  /* free memory of the devices allowed to hold weights */
} place_sizes_t;

static void measure(const rtm_model_t *m, int32_t n_ctx, place_sizes_t *s) {
    s->input = m->layer_begin == 0 ? rtm_arch_input_bytes(m) : 0;
    s->output = m->layer_end == m->hp.n_layer ? rtm_arch_output_bytes(m) : 0;
    s->total = s->input + s->output;
    for (int32_t il = 0; il < m->hp.n_layer; il++) {
        s->layer[il] = rtm_holds_layer(m, il) /* another process's layers cost nothing here */
                     ? rtm_arch_layer_bytes(m, il) + rtm_kv_layer_bytes(&m->hp, n_ctx) : 0;
        s->total += s->layer[il];
    }
    s->capacity = 0;
    for (int32_t d = 0; d < m->n_devices; d++) {
        kind_of(m->devices[d], &s->free[d]);
        if (!m->holds_weights[d]) s->free[d] = 0;
        s->reserve[d] = d < m->n_devices - 1 ? compute_reserve(&m->hp, n_ctx) : 0;
        s->capacity += s->free[d];
    }
}

static rt_status_t too_large(const rtm_model_t *m, const place_sizes_t *s, const char *why) {
    int32_t n = 0;
    for (int32_t d = 0; d < m->n_devices; d++) n += m->holds_weights[d];
    return rtm_error(RT_ERR_OUT_OF_MEMORY, "rtm_model_load: the model (%.1f MiB of weights and KV "
                     "cache) is larger than its %d device(s) allow (%.1f MiB free)%s",
                     (double)s->total / 1048576.0, n, (double)s->capacity / 1048576.0, why);
}

/* The plan must leave nothing on a device that may not hold weights. */
static rt_status_t take_plan(rtm_model_t *m, const rt_placement_t *pl, const place_sizes_t *s) {
    m->layout.input = rt_placement_input_device(pl);
    m->layout.output = rt_placement_output_device(pl);
    bool ok = m->holds_weights[m->layout.input] && m->holds_weights[m->layout.output];
    for (int32_t il = 0; il < m->hp.n_layer; il++) {
        m->layout.layer[il] = rt_placement_layer_device(pl, il);
        ok = ok && m->holds_weights[m->layout.layer[il]];
    }
    return ok ? RT_OK : too_large(m, s, ": layers would fall to the CPU, which is not one of them");
}

/* FASTEST's figures for every device; false when one cannot be measured,
 * which the plan's text then says. */
static bool speeds(rtm_model_t *m, rt_device_speed_t *out, double *prompt) {
    for (int32_t d = 0; d < m->n_devices; d++)
        if (rt_device_speed(m->devices[d], false, &out[d]) != RT_OK ||
            rt_device_prompt_speed(m->devices[d], false, &prompt[d]) != RT_OK) {
            snprintf(m->plan_text, sizeof m->plan_text, "%s: no speed figures (%s); placed by "
                     "memory\n", rt_device_name(m->devices[d]), rt_last_error());
            return false;
        }
    return true;
}

/* The layer sizes carry the whole KV cache (n_ctx rows), which memory
 * needs, but a decode step reads only the rows filled so far, about
 * n_prompt + n_generate / 2 over the job (n_ctx / 2 when none is given),
 * and a prompt step's products touch the weights alone. The figures are
 * scaled so that the placement's bytes over them are those times. */
static void scale_for_kv(const rtm_model_t *m, const rtm_model_params_t *params, int32_t n_ctx,
                         rt_device_speed_t *speed, double *prompt) {
    const int64_t job = (int64_t)params->n_prompt + params->n_generate / 2;
    const int32_t n_read = job > 0 && job < n_ctx ? (int32_t)job : job > 0 ? n_ctx : n_ctx / 2;
    uint64_t w = 0;
    for (int32_t il = 0; il < m->hp.n_layer; il++)
        if (rtm_holds_layer(m, il)) w += rtm_arch_layer_bytes(m, il);
    const double kv_all = (double)rtm_kv_layer_bytes(&m->hp, n_ctx) * m->hp.n_layer;
    const double kv_read = (double)rtm_kv_layer_bytes(&m->hp, n_read) * m->hp.n_layer;
    if (w == 0) return;
    for (int32_t d = 0; d < m->n_devices; d++) {
        speed[d].bytes_per_s *= ((double)w + kv_all) / ((double)w + kv_read);
        prompt[d] *= ((double)w + kv_all) / (double)w;
    }
}

static rt_placement_mode_t mode_of(rtm_model_t *m, const rtm_model_params_t *params, int32_t n_ctx,
                                   rt_device_speed_t *speed, double *prompt) {
    if (params->split == RTM_SPLIT_N_GPU_LAYERS) return RT_PLACEMENT_N_GPU_LAYERS;
    if (params->split != RTM_SPLIT_FASTEST || !speeds(m, speed, prompt)) return RT_PLACEMENT_AUTO;
    scale_for_kv(m, params, n_ctx, speed, prompt);
    return RT_PLACEMENT_FASTEST;
}

static void append_plan(const char *s, size_t n, void *user_data) {
    rtm_model_t *m = user_data;
    const size_t len = strlen(m->plan_text);
    if (len + n < sizeof m->plan_text) {
        memcpy(m->plan_text + len, s, n);
        m->plan_text[len + n] = '\0';
    }
}

double rtm_model_predicted_s(const rtm_model_t *m, int32_t i, bool prompt) {
    if (m == NULL || i < -1 || i >= m->n_devices) return 0;
    return m->predicted_s[prompt][i < 0 ? RTM_MAX_DEVICES : i];
}

/* The plan's predictions, kept for rtm_model_predicted_s. */
static void keep_predictions(rtm_model_t *m, const rt_placement_t *pl) {
    for (int32_t d = -1; d < m->n_devices; d++) {
        m->predicted_s[0][d < 0 ? RTM_MAX_DEVICES : d] = rt_placement_predicted_s(pl, d);
        m->predicted_s[1][d < 0 ? RTM_MAX_DEVICES : d] = rt_placement_predicted_prompt_s(pl, d);
    }
}

void rtm_model_write_plan(const rtm_model_t *m, rt_write_fn write, void *user_data) {
    if (m != NULL && write != NULL && m->plan_text[0]) write(m->plan_text, strlen(m->plan_text), user_data);
}

rt_status_t rtm_devices_place(rtm_model_t *m, const rtm_model_params_t *params) {
    const int32_t n_ctx = params->n_ctx > 0 ? params->n_ctx : RTM_DEFAULT_N_CTX;
    place_sizes_t s = {0};
    m->layout.layer = calloc((size_t)m->hp.n_layer, sizeof m->layout.layer[0]);
    s.layer = calloc((size_t)m->hp.n_layer, sizeof s.layer[0]);
    rt_status_t st = m->layout.layer && s.layer ? RT_OK
                   : rtm_error(RT_ERR_OUT_OF_MEMORY, "rtm_model_load: no memory");
    if (st == RT_OK) measure(m, n_ctx, &s);
    if (st == RT_OK && s.total > s.capacity) st = too_large(m, &s, "");
    rt_device_speed_t speed[RTM_MAX_DEVICES] = {{0}};
    double prompt[RTM_MAX_DEVICES] = {0};
    m->plan_text[0] = '\0';
    const rt_placement_params_t pp = {
        .struct_size = sizeof pp,
        .mode = st == RT_OK ? mode_of(m, params, n_ctx, speed, prompt) : RT_PLACEMENT_AUTO,
        .speed = speed, .prompt_bytes_per_s = prompt,
        .n_ubatch = params->n_ubatch > 0 ? params->n_ubatch : RTM_DEFAULT_N_BATCH,
        .n_prompt = params->n_prompt, .n_generate = params->n_generate,
        .n_gpu_layers = params->n_gpu_layers, .n_layers = m->hp.n_layer, .layer_bytes = s.layer,
        .input_bytes = s.input, .output_bytes = s.output, .n_devices = m->n_devices,
        .devices = m->devices, .memory_free = s.free, .reserve = s.reserve};
    rt_placement_t *pl = NULL;
    if (st == RT_OK && (st = rt_placement_create(&pp, &pl)) != RT_OK)
        st = rtm_error_core(st, "rtm_model_load: placement");
    if (st == RT_OK) st = take_plan(m, pl, &s);
    if (st == RT_OK && pp.mode == RT_PLACEMENT_FASTEST) rt_placement_write_text(pl, append_plan, m);
    if (st == RT_OK) keep_predictions(m, pl);
    rt_placement_destroy(pl);
    free(s.layer);
    return st;
}
