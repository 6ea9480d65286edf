/* SPDX-License-Identifier: MIT */
/* check.c: what every rank must share with rank 0 before a run, checked
 * by value: the model file (the hash of its header bytes, which hold the
 * metadata and every tensor's name, type, shape and offset, with the
 * file's size and the ABI and protocol versions: the same weights' sizes
 * and layout, and code that speaks the same messages) and the split plan.
 * Rank 0 broadcasts its hash; each rank sets its own flag in a vector
 * that an allreduce sums (rtd_comm_flags, which the NCCL transport's
 * start uses too), so that every rank knows which ranks differ and all
 * fail together with the same message. */
#include "dist_impl.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#define RTD_PROTOCOL_VERSION 1u  /* the messages of pipeline.c and tensor_parallel.c */

rt_status_t rtd_model_hash(const char *path, uint64_t *out) {
    *out = 0;
    rt_gguf_t *g = NULL;
    const rt_status_t st = rt_gguf_open(path, NULL, &g);
    if (st != RT_OK) {
        char what[PATH_MAX + 8];
        snprintf(what, sizeof what, "dist: %s", path);
        return rtd_error_core(st, what);
    }
    const uint64_t header = rt_gguf_data_offset(g), size = rt_gguf_file_size(g);
    const uint32_t versions[2] = {rt_abi_version(), RTD_PROTOCOL_VERSION};
    uint64_t h = rtd_hash(RTD_FNV_SEED, rt_gguf_file_data(g), (size_t)(header < size ? header : size));
    h = rtd_hash(h, &size, sizeof size);
    *out = rtd_hash(h, versions, sizeof versions);
    rt_gguf_destroy(g);
    return RT_OK;
}

/* "1, 3": the ranks whose flag is set. */
static void list_ranks(const int64_t *flags, int32_t n, char *buf, size_t size) {
    size_t len = 0;
    buf[0] = 0;
    for (int32_t r = 0; r < n && len < size; r++)
        if (flags[r]) len += (size_t)snprintf(buf + len, size - len, len ? ", %d" : "%d", r);
}

rt_status_t rtd_comm_flags(rtd_comm_t *c, bool mine, char *ranks, size_t size, bool *out_any) {
    int64_t flags[RTD_MAX_RANKS] = {0};
    flags[c->rank] = mine;
    *out_any = false;
    ranks[0] = 0;
    const rt_status_t st = rtd_comm_allreduce(c, flags, (size_t)c->size, RTD_DTYPE_I64);
    if (st != RT_OK) return st;
    for (int32_t r = 0; r < c->size; r++) *out_any = *out_any || flags[r];
    list_ranks(flags, c->size, ranks, size);
    return RT_OK;
}

rt_status_t rtd_agree(rtd_t *d, uint64_t value, const char *what) {
    uint64_t root = value;
    char ranks[256];
    bool any = false;
    rt_status_t st = rtd_comm_broadcast(d->comm, 0, &root, sizeof root);
    if (st == RT_OK) st = rtd_comm_flags(d->comm, root != value, ranks, sizeof ranks, &any);
    if (st != RT_OK || !any) return st;
    return rtd_error(RT_ERR_INVALID_ARGUMENT, "dist: rank(s) %s differ from rank 0 in %s: "
                     "refusing to run", ranks, what);
}
