/* SPDX-License-Identifier: MIT */
/* kv_cache.c: the KV cache, each layer's on the device of that layer (as
 * llama.cpp's llama-kv-cache does, so attention never reads K and V across
 * devices). The tensors of one device share a no_alloc context and one
 * buffer of the device's type 0, cleared to zero so that no stale bytes
 * are ever read (rows past the sequence are read, masked, so they must
 * hold finite numbers). The graph writes new rows with SET_ROWS where every
 * device runs it, else with rt_cpy into views, and reads the first n_kv
 * rows through views (blocks.c). */
#include "model_impl.h"

#include <stdlib.h>

void rtm_kv_cache_deinit(rtm_kv_cache_t *kv) {
    for (int32_t d = 0; d < RTM_MAX_DEVICES; d++) {
        rt_buffer_free(kv->buf[d]);
        rt_context_destroy(kv->ctx[d]);
    }
    free(kv->k);
    free(kv->v);
    *kv = (rtm_kv_cache_t){0};
}

static bool cached(const rtm_kv_cache_t *kv, int32_t il) { return il >= kv->layer_begin && il < kv->layer_end; }

static rt_status_t make_contexts(rtm_kv_cache_t *kv, const rtm_model_t *m) {
    const rt_context_params_t p = {.struct_size = sizeof p,
                                   .mem_size = 2 * (size_t)m->hp.n_layer * rt_tensor_overhead(),
                                   .no_alloc = true};
    for (int32_t il = kv->layer_begin; il < kv->layer_end; il++) {
        const int32_t d = m->layout.layer[il];
        if (kv->ctx[d] != NULL) continue;
        const rt_status_t st = rt_context_create(&p, &kv->ctx[d]);
        if (st != RT_OK) return rtm_error_core(st, "rtm_context_create: KV cache context");
    }
    return RT_OK;
}

static void declare(rtm_kv_cache_t *kv, const rtm_model_t *m) {
    const int64_t n_embd_kv = rtm_n_embd_kv(&m->hp);
    for (int32_t il = kv->layer_begin; il < kv->layer_end; il++) {
        rt_context_t *ctx = kv->ctx[m->layout.layer[il]];
        kv->k[il] = rt_format_name(rt_new_tensor_2d(ctx, RT_TYPE_F32, n_embd_kv, kv->n_ctx),
                                   "cache_k_l%d", il);
        kv->v[il] = rt_format_name(rt_new_tensor_2d(ctx, RT_TYPE_F32, kv->n_ctx, n_embd_kv),
                                   "cache_v_l%d", il);
    }
}

static rt_status_t allocate(rtm_kv_cache_t *kv, const rtm_model_t *m) {
    for (int32_t d = 0; d < m->n_devices; d++) {
        if (kv->ctx[d] == NULL) continue;
        rt_status_t st = rt_alloc_ctx_tensors(kv->ctx[d], rt_device_buffer_type(m->devices[d], 0),
                                              &kv->buf[d]);
        if (st == RT_OK) st = rt_buffer_clear(kv->buf[d], 0);
        if (st != RT_OK) return rtm_error_core(st, "rtm_context_create: KV cache");
        kv->bytes += rt_buffer_size(kv->buf[d]);
    }
    return RT_OK;
}

/* Whether d runs the two SET_ROWS of blocks.c's store_kv on its cache: a
 * plugin of ABI 1.0 does not know the op. */
static bool device_sets_rows(const rtm_kv_cache_t *kv, const rtm_model_t *m, int32_t il,
                             rt_device_t *dev) {
    const rt_context_params_t p = {.struct_size = sizeof p, .mem_size = 8 * rt_tensor_overhead(),
                                   .no_alloc = true};
    rt_context_t *ctx = NULL;
    if (rt_context_create(&p, &ctx) != RT_OK) return false;
    const int64_t n_embd_kv = rtm_n_embd_kv(&m->hp);
    rt_tensor_t *ck = kv->k[il], *cv = kv->v[il];
    rt_tensor_t *k = rt_set_rows(ctx, ck, rt_new_tensor_2d(ctx, RT_TYPE_F32, n_embd_kv, 1),
                                 rt_new_tensor_1d(ctx, RT_TYPE_I32, 1));
    rt_tensor_t *v = rt_set_rows(ctx, rt_transpose(ctx, cv), rt_new_tensor_2d(ctx, RT_TYPE_F32, n_embd_kv, 1),
                                 rt_new_tensor_1d(ctx, RT_TYPE_I32, 1));
    const bool ok = rt_device_supports_op(dev, k) && rt_device_supports_op(dev, v);
    rt_context_destroy(ctx);
    return ok;
}

/* Asked once per device, on its first cached layer (all have one shape). */
static bool all_set_rows(const rtm_kv_cache_t *kv, const rtm_model_t *m) {
    bool asked[RTM_MAX_DEVICES] = {false};
    for (int32_t il = 0; il < m->hp.n_layer; il++) {
        const int32_t d = m->layout.layer[il];
        if (asked[d] || !cached(kv, il)) continue;
        asked[d] = true;
        if (!device_sets_rows(kv, m, il, m->devices[d])) return false;
    }
    return true;
}

rt_status_t rtm_kv_cache_init(rtm_kv_cache_t *kv, const rtm_model_t *m, int32_t n_ctx,
                              int32_t layer_begin, int32_t layer_end) {
    *kv = (rtm_kv_cache_t){.n_ctx = n_ctx, .layer_begin = layer_begin, .layer_end = layer_end};
    kv->k = calloc((size_t)m->hp.n_layer, sizeof kv->k[0]);
    kv->v = calloc((size_t)m->hp.n_layer, sizeof kv->v[0]);
    if (kv->k == NULL || kv->v == NULL)
        return rtm_error(RT_ERR_OUT_OF_MEMORY, "rtm_context_create: no memory for the KV cache");
    rt_status_t st = make_contexts(kv, m);
    if (st == RT_OK) declare(kv, m);
    if (st == RT_OK) st = allocate(kv, m);
    if (st == RT_OK) kv->by_rows = all_set_rows(kv, m);
    return st;
}
