/* SPDX-License-Identifier: MIT */
/* attn_fused.c: whether a context's attention is one FLASH_ATTN per layer
 * (rtm_flash_attn_t). The graph is one or the other for every layer, so
 * the question is asked of every device that holds a cached layer, once
 * per device, on nodes shaped as blocks.c builds them: q permuted to
 * {head_dim, N, n_head}, K and V views {head_dim, n_kv, n_head_kv} of a
 * cache {n_embd_kv, n_ctx} of the cache's types, the F32 mask {n_kv, N}.
 * N is asked at 1 (decode) and at n_batch (a prompt), n_kv at n_ctx, the
 * largest graph; a device may answer by shape (head sizes it has kernels
 * for), so a representative node is asked, not the op alone. The probe's
 * tensors have no bytes: supports_op reads types, shapes and strides. */
#include "model_impl.h"

/* Whether dev runs FLASH_ATTN for N queries on a cache of m's shapes. */
static bool runs_fused(const rtm_model_t *m, const rtm_kv_config_t *cfg, rt_device_t *dev, int32_t n) {
    const rt_context_params_t p = {.struct_size = sizeof p, .mem_size = 16 * rt_tensor_overhead(),
                                   .no_alloc = true};
    rt_context_t *ctx = NULL;
    if (rt_context_create(&p, &ctx) != RT_OK) return false;
    const rtm_hparams_t *hp = &m->hp;
    const int64_t hd = hp->head_dim, n_kv = cfg->n_ctx;
    rt_tensor_t *ck = rt_new_tensor_2d(ctx, cfg->type_k, rtm_n_embd_kv(hp), cfg->n_ctx);
    rt_tensor_t *cv = rt_new_tensor_2d(ctx, cfg->type_v, rtm_n_embd_kv(hp), cfg->n_ctx);
    rt_tensor_t *k = rt_view_3d(ctx, ck, hd, n_kv, hp->n_head_kv, ck->nb[1], (size_t)hd * ck->nb[0], 0);
    rt_tensor_t *v = rt_view_3d(ctx, cv, hd, n_kv, hp->n_head_kv, cv->nb[1], (size_t)hd * cv->nb[0], 0);
    rt_tensor_t *q = rt_new_tensor_3d(ctx, RT_TYPE_F32, hd, hp->n_head, n);
    rt_tensor_t *mask = rt_new_tensor_2d(ctx, RT_TYPE_F32, n_kv, n);
    rt_tensor_t *fa = rt_flash_attn(ctx, rt_permute(ctx, q, 0, 2, 1, 3), k, v, mask, 1.0f, hp->attn_softcap);
    const bool ok = rt_device_supports_op(dev, fa);
    rt_context_destroy(ctx);
    return ok;
}

/* The first device of a cached layer that does not run the op, or NULL. */
static rt_device_t *first_lacking(const rtm_kv_cache_t *kv, const rtm_model_t *m, const rtm_kv_config_t *cfg) {
    bool asked[RTM_MAX_DEVICES] = {false};
    for (int32_t il = kv->layer_begin; il < kv->layer_end; il++) {
        const int32_t d = m->layout.layer[il];
        if (asked[d]) continue;
        asked[d] = true;
        rt_device_t *dev = m->devices[d];
        if (!runs_fused(m, cfg, dev, 1) || !runs_fused(m, cfg, dev, cfg->n_batch)) return dev;
    }
    return NULL;
}

/* The largest scores tensor the unfused graph holds: one layer's KQ for a
 * full ubatch over the whole context. */
static double scores_bytes(const rtm_model_t *m, const rtm_kv_config_t *cfg) {
    return (double)m->hp.n_head * cfg->n_batch * cfg->n_ctx * sizeof(float);
}

rt_status_t rtm_attn_fused_choose(const rtm_kv_cache_t *kv, const rtm_model_t *m, const rtm_kv_config_t *cfg,
                                  bool *fused) {
    *fused = false;
    if (cfg->flash_attn == RTM_FLASH_ATTN_OFF) return RT_OK;
    const bool on = cfg->flash_attn == RTM_FLASH_ATTN_ON;
    if (cfg->type_k != cfg->type_v) /* the op reads K and V of one type */
        return on ? rtm_error(RT_ERR_UNSUPPORTED, "rtm_context_create: flash attention reads K and V "
                              "of one type, not K %s and V %s", rt_type_name(cfg->type_k),
                              rt_type_name(cfg->type_v))
                  : RT_OK;
    const rt_device_t *lacking = first_lacking(kv, m, cfg);
    if (lacking != NULL && on)
        return rtm_error(RT_ERR_UNSUPPORTED, "rtm_context_create: flash attention is on, but device %s "
                         "does not run FLASH_ATTN on a %s cache (head_dim %d, %d heads, %d KV heads); "
                         "use flash attention auto or off", rt_device_name(lacking),
                         rt_type_name(cfg->type_k), m->hp.head_dim, m->hp.n_head, m->hp.n_head_kv);
    /* several sequences: the unfused graph reads and masks every other
       sequence's cells for each token; the fused op skips them */
    *fused = lacking == NULL && (on || cfg->n_seq_max > 1 || scores_bytes(m, cfg) > RTM_FLASH_ATTN_AUTO_BYTES);
    return RT_OK;
}
