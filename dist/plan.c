/* SPDX-License-Identifier: MIT */
/* plan.c: the split plan. Pipeline parallel gives each rank a contiguous
 * range of layers, as even as the counts allow (the first ranks take one
 * more, rank 0 also embeds and the last runs the head); tensor parallel
 * gives every rank every layer (its shard of each). Every rank computes
 * the plan from its own inputs, and its hash (with the caller's settings)
 * is compared with rank 0's before anything runs. */
#include "dist_impl.h"

#include <string.h>

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
    const int32_t head[5] = {d->mode, d->comm->size, d->n_layer, d->n_embd, d->n_batch};
    uint64_t h = rtd_hash(RTD_FNV_SEED, head, sizeof head);
    h = rtd_hash(h, d->plan, (size_t)d->comm->size * sizeof d->plan[0]);
    return rtd_hash(h, settings, size);
}
