/* SPDX-License-Identifier: MIT */
/* load.c: rtm_model_load and the model's getters. Loading goes in the
 * order that lets each failure be reported before anything large is
 * done: map and check the file (rt_gguf_open), know its architecture,
 * read the vocabulary and the hyperparameters and check every tensor's
 * shape, choose the devices, place the layers (checking that the model
 * fits), declare the weights per device, and only then bring their bytes
 * onto the devices (weights.c). */
#include "arch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void rtm_model_destroy(rtm_model_t *m) {
    if (m == NULL) return;
    for (int32_t d = 0; d < m->n_devices; d++) {
        rt_buffer_free(m->buf[d]);
        rt_context_destroy(m->ctx[d]);
        rt_buffer_free(m->buf_w[d]);
        rt_context_destroy(m->ctx_w[d]);
    }
    rt_context_destroy(m->ctx_shard);
    free(m->layout.layer);
    free(m->layers);
    free(m->rope_freqs);
    rtm_vocab_destroy(m->vocab);
    rt_gguf_destroy(m->gguf); /* last: mapped weights point into it */
    free(m);
}

static rt_status_t open_file(rtm_model_t *m, const char *path) {
    const rt_status_t st = rt_gguf_open(path, NULL, &m->gguf);
    if (st == RT_ERR_NOT_FOUND) return rtm_error(st, "rtm_model_load: no such file: %s", path);
    if (st != RT_OK) return rtm_error_core(st, "rtm_model_load");
    return RT_OK;
}

static rt_status_t read_arch(rtm_model_t *m, const char *path) {
    const char *arch = NULL;
    if (rt_gguf_get_str(m->gguf, "general.architecture", &arch) != RT_OK)
        return rtm_error(RT_ERR_FORMAT, "rtm_model_load: %s has no general.architecture key", path);
    snprintf(m->arch, sizeof m->arch, "%s", arch);
    m->desc = rtm_arch_find(arch);
    if (m->desc != NULL) return RT_OK;
    char names[256];
    rtm_arch_names(names, sizeof names);
    return rtm_error(RT_ERR_UNSUPPORTED, "rtm_model_load: %s: unknown architecture '%s' "
                     "(supported: %s)", path, arch, names);
}

static rt_status_t read_model(rtm_model_t *m, const char *path) {
    rt_status_t st = read_arch(m, path);
    if (st == RT_OK && (st = rtm_vocab_create(m->gguf, &m->vocab)) != RT_OK)
        st = rtm_error_wrap(st, "rtm_model_load: %s", path);
    if (st == RT_OK) st = rtm_arch_read(m, path);
    if (st == RT_OK) {
        m->layers = calloc((size_t)m->hp.n_layer, sizeof m->layers[0]);
        if (m->layers == NULL) st = rtm_error(RT_ERR_OUT_OF_MEMORY, "rtm_model_load: no memory");
    }
    return st;
}

static rt_status_t held_layers(rtm_model_t *m, const rtm_model_params_t *p) {
    const bool all = p->layer_begin == 0 && p->layer_end == 0;
    m->layer_begin = all ? 0 : p->layer_begin;
    m->layer_end = all ? m->hp.n_layer : p->layer_end;
    if ((!all || p->n_shards > 1) && !m->desc->parts)
        return rtm_error(RT_ERR_UNSUPPORTED, "rtm_model_load: architecture %s does not run in parts "
                         "(layer ranges or shards)", m->arch);
    if (m->layer_begin >= 0 && m->layer_begin < m->layer_end && m->layer_end <= m->hp.n_layer &&
        (all || p->n_shards <= 1))
        return RT_OK;
    return rtm_error(RT_ERR_INVALID_ARGUMENT, "rtm_model_load: layers [%d, %d) of %d (with %d "
                     "shards) are not a part it can hold", p->layer_begin, p->layer_end,
                     m->hp.n_layer, p->n_shards);
}

static void count_weights(rtm_model_t *m) {
    rt_gguf_tensor_info_t ti = {.struct_size = sizeof ti};
    m->stats.n_tensors = (int32_t)rt_gguf_n_tensors(m->gguf);
    for (int64_t i = 0; i < rt_gguf_n_tensors(m->gguf); i++)
        if (rt_gguf_get_tensor_info(m->gguf, i, &ti) == RT_OK) m->stats.bytes_weights += ti.size;
}

rt_status_t rtm_model_load(const char *path, const rtm_model_params_t *caller_params,
                           rtm_model_t **out_model) {
    if (out_model) *out_model = NULL;
    rtm_model_params_t pc;
    rtm_params_copy(&pc, sizeof pc, caller_params);
    const rtm_model_params_t *params = &pc;
    if (path == NULL || params->registry == NULL || out_model == NULL)
        return rtm_error(RT_ERR_INVALID_ARGUMENT, "rtm_model_load: NULL path, params, registry "
                         "or out_model");
    const double t0 = rtm_time_seconds();
    rtm_model_t *m = calloc(1, sizeof *m);
    if (m == NULL) return rtm_error(RT_ERR_OUT_OF_MEMORY, "rtm_model_load: no memory");
    m->registry = params->registry;
    m->stats.struct_size = sizeof m->stats;
    rt_status_t st = open_file(m, path);
    if (st == RT_OK) st = read_model(m, path);
    if (st == RT_OK) st = held_layers(m, params);
    if (st == RT_OK) st = rtm_devices_choose(m, params);
    if (st == RT_OK) st = rtm_devices_place(m, params);
    const bool sharded = params->n_shards > 1; /* slices are views: the file's layout */
    if (st == RT_OK) st = rtm_arch_declare(m, !params->no_repack && !sharded);
    if (st == RT_OK) st = rtm_weights_load(m, params->no_mmap, !params->no_progress);
    if (st == RT_OK) st = rtm_model_shard(m, params->shard, params->n_shards);
    if (st != RT_OK) {
        rtm_model_destroy(m);
        return st;
    }
    count_weights(m);
    m->stats.load_seconds = rtm_time_seconds() - t0;
    *out_model = m;
    return RT_OK;
}

//===--- getters ---===//

const rtm_vocab_t *rtm_model_vocab(const rtm_model_t *m) { return m->vocab; }
const char *rtm_model_arch(const rtm_model_t *m) { return m->arch; }
int32_t rtm_model_n_vocab(const rtm_model_t *m) { return m->hp.n_vocab; }
int32_t rtm_model_n_layer(const rtm_model_t *m) { return m->hp.n_layer; }
int32_t rtm_model_n_embd(const rtm_model_t *m) { return m->hp.n_embd; }
bool rtm_model_is_embedding(const rtm_model_t *m) { return m->hp.embeddings; }
int32_t rtm_model_n_ctx_train(const rtm_model_t *m) { return m->hp.n_ctx_train; }

rt_device_t *rtm_model_layer_device(const rtm_model_t *m, int32_t il) {
    if (il == -1) return m->devices[m->layout.input];
    if (il == m->hp.n_layer) return m->devices[m->layout.output];
    return il >= 0 && il < m->hp.n_layer ? m->devices[m->layout.layer[il]] : NULL;
}

rt_status_t rtm_model_get_load_stats(const rtm_model_t *m, rtm_load_stats_t *out) {
    return rtm_stats_copy(out, m ? &m->stats : NULL, sizeof m->stats, "rtm_model_get_load_stats");
}

//===--- the placement as text ---===//

/* Whether layer il is one held here, on device d. */
static bool on(const rtm_model_t *m, int32_t il, int32_t d) {
    return rtm_holds_layer(m, il) && m->layout.layer[il] == d;
}

/* "0-3,5": the layers on device d. */
static void layer_ranges(const rtm_model_t *m, int32_t d, char *buf, size_t size) {
    size_t n = 0;
    buf[0] = 0;
    for (int32_t il = 0; il < m->hp.n_layer && n < size; il++) {
        if (!on(m, il, d) || on(m, il - 1, d)) continue;
        int32_t end = il;
        while (on(m, end + 1, d)) end++;
        n += (size_t)snprintf(buf + n, size - n, n ? ",%d" : "%d", il);
        if (end > il && n < size) n += (size_t)snprintf(buf + n, size - n, "-%d", end);
    }
}

void rtm_model_write_placement(const rtm_model_t *m, rt_write_fn write, void *user_data) {
    char line[512], layers[256];
    for (int32_t d = 0; d < m->n_devices; d++) {
        layer_ranges(m, d, layers, sizeof layers);
        const size_t bytes = m->buf[d] ? rt_buffer_size(m->buf[d]) : 0;
        const int n = snprintf(line, sizeof line, "%-10s layers %-12s%s%s weights %8.2f MiB (%s)\n",
                               rt_device_name(m->devices[d]), layers[0] ? layers : "-",
                               m->layout.input == d && m->tok_embd ? " +input" : "",
                               m->layout.output == d && m->output ? " +output" : "", (double)bytes / 1048576.0,
                               m->buf[d] == NULL ? "none" : m->mapped[d] ? "mapped" : "copied");
        write(line, (size_t)(n < (int)sizeof line ? n : (int)sizeof line - 1), user_data);
    }
}
