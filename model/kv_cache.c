/* SPDX-License-Identifier: MIT */
/* kv_cache.c: the KV cache, each layer's on the device of that layer (as
 * llama.cpp's llama-kv-cache does, so attention never reads K and V across
 * devices). The tensors of one device share a no_alloc context and one
 * buffer of the device's type 0, cleared to zero so that no stale bytes
 * are ever read (rows past the sequence are read, masked, so they must
 * hold finite numbers). The graph writes new rows with SET_ROWS where every
 * device runs it, else with rt_cpy into views, and reads the first n_kv
 * rows through views (blocks.c).
 *
 * The rows are cells shared by up to n_seq_max sequences (llama.cpp's
 * unified cache): each cell is free or holds one position of one
 * sequence, a sequence's cells need not be adjacent, and the mask
 * (rtm_kv_mask_row) lets a token see only its own sequence's cells.
 *
 * With fused attention a sequence's cells are kept in runs: it takes the
 * row after its last one while that is free, else the first wholly free
 * aligned run of RTM_KV_RUN rows, else (a full, fragmented cache) the
 * first free row. The fused op skips a tile of keys that no query of a
 * block sees (kern_attn.c), so with runs a decode step of several
 * sequences reads each one's keys, not every sequence's: taken first-fit,
 * sequences that decode together interleave row by row and every tile is
 * seen by all. The unfused graph reads every row below the highest held
 * (n_kv) for every token, so there rows are taken first-fit, packed: with
 * runs, 16 sequences' part-filled ones left its n_kv up to half again as
 * large, and rt-server's 16 clients ran slower than before them. One
 * sequence alone holds rows 0..n_past - 1, its positions, either way. */
#include "model_impl.h"

#include <math.h>
#include <stdlib.h>

void rtm_kv_cache_deinit(rtm_kv_cache_t *kv) {
    for (int32_t d = 0; d < RTM_MAX_DEVICES; d++) {
        rt_buffer_free(kv->buf[d]);
        rt_context_destroy(kv->ctx[d]);
    }
    free(kv->k);
    free(kv->v);
    free(kv->cell_seq);
    free(kv->cell_pos);
    free(kv->seq_n_past);
    free(kv->seq_next);
    *kv = (rtm_kv_cache_t){0};
}

//===--- cells ---===//

static rt_status_t cells_init(rtm_kv_cache_t *kv, int32_t n_seq_max) {
    kv->n_seq_max = n_seq_max;
    kv->cell_seq = malloc((size_t)kv->n_ctx * sizeof kv->cell_seq[0]);
    kv->cell_pos = calloc((size_t)kv->n_ctx, sizeof kv->cell_pos[0]);
    kv->seq_n_past = calloc((size_t)n_seq_max, sizeof kv->seq_n_past[0]);
    kv->seq_next = malloc((size_t)n_seq_max * sizeof kv->seq_next[0]);
    if (kv->cell_seq == NULL || kv->cell_pos == NULL || kv->seq_n_past == NULL || kv->seq_next == NULL)
        return rtm_error(RT_ERR_OUT_OF_MEMORY, "rtm_context_create: no memory for %d cells", kv->n_ctx);
    for (int32_t r = 0; r < kv->n_ctx; r++) kv->cell_seq[r] = -1;
    for (int32_t s = 0; s < n_seq_max; s++) kv->seq_next[s] = -1;
    return RT_OK;
}

static bool cell_free(const rtm_kv_cache_t *kv, int32_t r) {
    return r >= 0 && r < kv->n_ctx && kv->cell_seq[r] < 0;
}

/* The first row of the first aligned run (the last may be short) that no
 * sequence holds a row of, or -1. */
static int32_t free_run(const rtm_kv_cache_t *kv) {
    for (int32_t r0 = 0; r0 < kv->n_ctx; r0 += RTM_KV_RUN) {
        int32_t r = r0;
        while (r < r0 + RTM_KV_RUN && cell_free(kv, r)) r++;
        if (r == r0 + RTM_KV_RUN || r == kv->n_ctx) return r0;
    }
    return -1;
}

static int32_t first_free(const rtm_kv_cache_t *kv) {
    for (int32_t r = 0; r < kv->n_ctx; r++)
        if (cell_free(kv, r)) return r;
    return -1;
}

int32_t rtm_kv_cell_take(rtm_kv_cache_t *kv, int32_t seq) {
    int32_t r = kv->fused ? kv->seq_next[seq] : -1;
    if (kv->fused && !cell_free(kv, r)) r = free_run(kv);
    if (r < 0) r = first_free(kv);
    if (r < 0) return -1;
    kv->cell_seq[r] = seq;
    kv->cell_pos[r] = kv->seq_n_past[seq]++;
    kv->seq_next[seq] = r + 1;
    kv->n_used++;
    return r;
}

void rtm_kv_cell_untake(rtm_kv_cache_t *kv, int32_t row) {
    const int32_t seq = kv->cell_seq[row];
    kv->seq_n_past[seq]--;
    kv->seq_next[seq] = row;
    kv->cell_seq[row] = -1;
    kv->n_used--;
}

void rtm_kv_seq_clear(rtm_kv_cache_t *kv, int32_t seq) {
    for (int32_t r = 0; r < kv->n_ctx; r++)
        if (kv->cell_seq[r] >= 0 && (seq < 0 || kv->cell_seq[r] == seq)) {
            kv->cell_seq[r] = -1;
            kv->n_used--;
        }
    for (int32_t s = 0; s < kv->n_seq_max; s++)
        if (seq < 0 || s == seq) {
            kv->seq_n_past[s] = 0;
            kv->seq_next[s] = -1;
        }
}

void rtm_kv_seq_keep(rtm_kv_cache_t *kv, int32_t seq, int32_t n_keep) {
    if (n_keep >= kv->seq_n_past[seq]) return;
    if (n_keep == 0) return rtm_kv_seq_clear(kv, seq);
    for (int32_t r = 0; r < kv->n_ctx; r++) {
        if (kv->cell_seq[r] != seq) continue;
        if (kv->cell_pos[r] == n_keep - 1) kv->seq_next[seq] = r + 1; /* where a fused cache writes next */
        if (kv->cell_pos[r] >= n_keep) {
            kv->cell_seq[r] = -1;
            kv->n_used--;
        }
    }
    kv->seq_n_past[seq] = n_keep;
}

int32_t rtm_kv_rows_used(const rtm_kv_cache_t *kv) {
    int32_t r = kv->n_ctx;
    while (r > 0 && kv->cell_seq[r - 1] < 0) r--;
    return r;
}

void rtm_kv_mask_row(const rtm_kv_cache_t *kv, int32_t seq, int32_t pos, bool causal, int32_t n_swa,
                     int32_t n_kv, float *row) {
    for (int32_t j = 0; j < n_kv; j++) {
        const int32_t p = kv->cell_pos[j];
        const bool sees = kv->cell_seq[j] == seq &&
                          (!causal || (p <= pos && (n_swa == 0 || pos - p < n_swa)));
        row[j] = sees ? 0.0f : -INFINITY;
    }
}

//===--- the tensors ---===//

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

/* V a token a row for the fused attention, transposed for the unfused. */
static void declare(rtm_kv_cache_t *kv, const rtm_model_t *m) {
    const int64_t n_embd_kv = rtm_n_embd_kv(&m->hp);
    for (int32_t il = kv->layer_begin; il < kv->layer_end; il++) {
        rt_context_t *ctx = kv->ctx[m->layout.layer[il]];
        kv->k[il] = rt_format_name(rt_new_tensor_2d(ctx, kv->type_k, n_embd_kv, kv->n_ctx),
                                   "cache_k_l%d", il);
        rt_tensor_t *v = kv->fused ? rt_new_tensor_2d(ctx, kv->type_v, n_embd_kv, kv->n_ctx)
                                   : rt_new_tensor_2d(ctx, kv->type_v, kv->n_ctx, n_embd_kv);
        kv->v[il] = rt_format_name(v, "cache_v_l%d", il);
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
    rt_tensor_t *v = rt_set_rows(ctx, kv->fused ? cv : rt_transpose(ctx, cv),
                                 rt_new_tensor_2d(ctx, RT_TYPE_F32, n_embd_kv, 1),
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

static rt_status_t check_type(const char *which, rt_type_t type) {
    if (type == RT_TYPE_F32 || type == RT_TYPE_F16) return RT_OK;
    return rtm_error(RT_ERR_INVALID_ARGUMENT, "rtm_context_create: the KV cache's %s type is %s; "
                     "it can be f32 or f16", which, rt_type_name(type));
}

rt_status_t rtm_kv_cache_init(rtm_kv_cache_t *kv, const rtm_model_t *m, const rtm_kv_config_t *cfg) {
    *kv = (rtm_kv_cache_t){.n_ctx = cfg->n_ctx, .type_k = cfg->type_k, .type_v = cfg->type_v,
                           .layer_begin = cfg->layer_begin, .layer_end = cfg->layer_end};
    kv->k = calloc((size_t)m->hp.n_layer, sizeof kv->k[0]);
    kv->v = calloc((size_t)m->hp.n_layer, sizeof kv->v[0]);
    if (kv->k == NULL || kv->v == NULL)
        return rtm_error(RT_ERR_OUT_OF_MEMORY, "rtm_context_create: no memory for the KV cache");
    rt_status_t st = check_type("K", cfg->type_k);
    if (st == RT_OK) st = check_type("V", cfg->type_v);
    if (st == RT_OK) st = rtm_attn_fused_choose(kv, m, cfg, &kv->fused);
    if (st == RT_OK) st = cells_init(kv, cfg->n_seq_max);
    if (st == RT_OK) st = make_contexts(kv, m);
    if (st == RT_OK) declare(kv, m);
    if (st == RT_OK) st = allocate(kv, m);
    if (st == RT_OK) kv->by_rows = all_set_rows(kv, m);
    return st;
}
