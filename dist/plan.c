/* SPDX-License-Identifier: MIT */
/* plan.c: the split plan. Pipeline parallel gives each rank a contiguous
 * range of layers, as even as the counts allow (the first ranks take one
 * more, rank 0 also embeds and the last runs the head); tensor parallel
 * gives every rank every layer (its shard of each). Every rank computes
 * the plan from its own inputs, and its hash (with the caller's settings)
 * is compared with rank 0's before anything runs. */
#include "dist_impl.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

/* An integer key of any integer type; false when missing. */
static bool get_int(const rt_gguf_t *g, const char *key, int64_t *out) {
    uint32_t u32;
    int32_t i32;
    uint64_t u64;
    if (rt_gguf_get_u32(g, key, &u32) == RT_OK) *out = u32;
    else if (rt_gguf_get_i32(g, key, &i32) == RT_OK) *out = i32;
    else if (rt_gguf_get_u64(g, key, &u64) == RT_OK) *out = u64 > INT32_MAX ? -1 : (int64_t)u64;
    else return false;
    return true;
}

rt_status_t rtd_file_n_layer(const char *path, int32_t *out) {
    rt_gguf_t *g = NULL;
    const char *arch = NULL;
    char key[96];
    int64_t n = -1;
    rt_status_t st = rt_gguf_open(path, NULL, &g);
    if (st != RT_OK) {
        char what[PATH_MAX + 8];
        snprintf(what, sizeof what, "dist: %s", path);
        return rtd_error_core(st, what);
    }
    if (rt_gguf_get_str(g, "general.architecture", &arch) == RT_OK) {
        snprintf(key, sizeof key, "%s.block_count", arch);
        if (!get_int(g, key, &n)) n = -1;
    }
    rt_gguf_destroy(g);
    if (n < 1 || n > INT32_MAX)
        return rtd_error(RT_ERR_FORMAT, "dist: %s: no layer count (ARCH.block_count)", path);
    *out = (int32_t)n;
    return RT_OK;
}

uint64_t rtd_hash(uint64_t h, const void *data, size_t size) {
    const unsigned char *p = data;
    for (size_t i = 0; i < size; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

void rtd_plan_pipeline(rtd_t *d, int32_t n_layer) {
    const int32_t n = d->comm->size, base = n_layer / n, extra = n_layer % n;
    int32_t at = 0;
    for (int32_t r = 0; r < n; r++) {
        const int32_t len = base + (r < extra);
        d->plan[r] = (rtd_range_t){at, at + len};
        at += len;
    }
}

void rtd_plan_tensor(rtd_t *d, int32_t n_layer) {
    for (int32_t r = 0; r < d->comm->size; r++) d->plan[r] = (rtd_range_t){0, n_layer};
}

uint64_t rtd_plan_hash(const rtd_t *d, const void *settings, size_t size) {
    const int32_t head[3] = {d->mode, d->comm->size, d->n_layer};
    uint64_t h = rtd_hash(RTD_FNV_SEED, head, sizeof head);
    h = rtd_hash(h, d->plan, (size_t)d->comm->size * sizeof d->plan[0]);
    return rtd_hash(h, settings, size);
}
