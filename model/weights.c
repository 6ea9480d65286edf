/* SPDX-License-Identifier: MIT */
/* weights.c: putting the weight bytes on their devices (docs/memory.md §5).
 * The file is already mapped (rt_gguf_open). For each device that holds
 * weights: when the device can wrap host memory, mapping is allowed and
 * every tensor's bytes in the mapping are aligned, the range of the
 * mapping its tensors span becomes one buffer of the device and each
 * tensor points into it (rt_tensor_alloc), with nothing copied; otherwise
 * one buffer of the device's type 0 is allocated for its tensors and each
 * is copied out of the mapping (rt_tensor_set), with a progress bar when
 * stderr is a terminal. Matrix weights a device keeps in its own layout
 * (ctx_w, a RT_BUFT_FLAG_WEIGHTS buffer type) are always copied, each
 * whole, so the device can repack it. Then the parts of the mapping no
 * device reads in place are unmapped. */
#include "model_impl.h"

#include <stdio.h>
#include <unistd.h>

/* What mapped tensors must be aligned to: the GGUF default alignment,
 * which is what llama.cpp's CPU backend asks of mapped weights and more
 * than any element type or vector load of the CPU kernels needs. */
#define RTM_MAP_ALIGN 32

static const void *file_bytes(const rtm_model_t *m, const rt_tensor_t *t, uint64_t *out_size) {
    rt_gguf_tensor_info_t ti = {.struct_size = sizeof ti};
    rt_gguf_get_tensor_info(m->gguf, rt_gguf_find_tensor(m->gguf, rt_get_name(t)), &ti);
    *out_size = ti.size;
    return ti.data;
}

//===--- in place ---===//

/* The span [*first, *last) of the mapping device d's tensors cover, as
 * offsets from the file start; false when one of them is misaligned. */
static bool map_span(const rtm_model_t *m, int32_t d, size_t *first, size_t *last) {
    const char *base = rt_gguf_file_data(m->gguf);
    *first = SIZE_MAX;
    *last = 0;
    for (rt_tensor_t *t = rt_context_first_tensor(m->ctx[d]); t; t = rt_context_next_tensor(m->ctx[d], t)) {
        uint64_t size;
        const char *p = file_bytes(m, t, &size);
        if ((uintptr_t)p % RTM_MAP_ALIGN != 0) return false;
        const size_t off = (size_t)(p - base);
        if (off < *first) *first = off;
        if (off + size > *last) *last = off + size;
    }
    return *first < *last;
}

static bool can_map(const rtm_model_t *m, int32_t d) {
    rt_device_props_t p = {.struct_size = sizeof p};
    return rt_device_get_props(m->devices[d], &p) == RT_OK &&
           (p.caps & RT_DEVICE_CAP_BUFFER_FROM_HOST_PTR) != 0;
}

/* Every tensor's bytes, as the buffer's type counts them, lie in the
 * buffer (a type may ask more than nbytes). */
static bool fits(const rtm_model_t *m, int32_t d, const rt_buffer_t *buf) {
    const char *lo = rt_buffer_base(buf), *hi = lo + rt_buffer_size(buf);
    rt_buffer_type_t *buft = rt_buffer_get_type(buf);
    uint64_t size;
    for (rt_tensor_t *t = rt_context_first_tensor(m->ctx[d]); t; t = rt_context_next_tensor(m->ctx[d], t)) {
        const char *p = file_bytes(m, t, &size);
        if (p < lo || rt_buffer_type_alloc_size(buft, t) > (size_t)(hi - p)) return false;
    }
    return true;
}

/* Wraps the span as a buffer and points every tensor into it. *out_mapped
 * is false (and nothing changed) when the device cannot do it. */
static rt_status_t map_device(rtm_model_t *m, int32_t d, bool *out_mapped) {
    size_t first, last;
    *out_mapped = false;
    if (!can_map(m, d) || !map_span(m, d, &first, &last)) return RT_OK;
    char *base = (char *)rt_gguf_file_data(m->gguf); /* read-only mapping: weights are only read */
    rt_buffer_t *buf = NULL;
    if (rt_device_buffer_from_host_ptr(m->devices[d], base + first, last - first, &buf) != RT_OK)
        return RT_OK;
    if (!fits(m, d, buf)) {
        rt_buffer_free(buf);
        return RT_OK;
    }
    m->buf[d] = buf;
    uint64_t size;
    for (rt_tensor_t *t = rt_context_first_tensor(m->ctx[d]); t; t = rt_context_next_tensor(m->ctx[d], t)) {
        const void *p = file_bytes(m, t, &size);
        const rt_status_t st = rt_tensor_alloc(buf, t, (void *)p);
        if (st != RT_OK) return rtm_error_core(st, "rtm_model_load: mapping weights");
        m->stats.bytes_mapped += size;
    }
    *out_mapped = m->mapped[d] = true;
    return RT_OK;
}

//===--- by copy ---===//

typedef struct progress {
    bool shown;
    uint64_t done, total;
    int last_pct;
} progress_t;

static void progress_step(progress_t *p, uint64_t bytes) {
    p->done += bytes;
    if (!p->shown || p->total == 0) return;
    const int pct = (int)(100 * p->done / p->total);
    if (pct == p->last_pct) return;
    p->last_pct = pct;
    char bar[41];
    for (int i = 0; i < 40; i++) bar[i] = i < pct * 40 / 100 ? '#' : ' ';
    bar[40] = 0;
    fprintf(stderr, "\rloading weights [%s] %3d%%", bar, pct);
    if (pct == 100) fprintf(stderr, "\n");
}

/* Allocates ctx's tensors in one buffer of buft and copies each in. */
static rt_status_t copy_tensors(rtm_model_t *m, rt_context_t *ctx, rt_buffer_type_t *buft,
                                rt_buffer_t **out_buf, progress_t *prog) {
    rt_status_t st = rt_alloc_ctx_tensors(ctx, buft, out_buf);
    if (st != RT_OK) return rtm_error_core(st, "rtm_model_load: weight buffer");
    uint64_t size;
    for (rt_tensor_t *t = rt_context_first_tensor(ctx); t; t = rt_context_next_tensor(ctx, t)) {
        const void *p = file_bytes(m, t, &size);
        st = rt_tensor_set(t, p, 0, (size_t)size);
        if (st != RT_OK) return rtm_error_core(st, "rtm_model_load: copying weights");
        m->stats.bytes_copied += size;
        if (rt_buffer_type_is_weights(buft)) m->stats.bytes_repacked += size;
        progress_step(prog, size);
    }
    return RT_OK;
}

static uint64_t context_bytes(const rtm_model_t *m, rt_context_t *ctx) {
    uint64_t sum = 0, size;
    for (rt_tensor_t *t = rt_context_first_tensor(ctx); t; t = rt_context_next_tensor(ctx, t)) {
        file_bytes(m, t, &size);
        sum += size;
    }
    return sum;
}

static bool has_tensors(rt_context_t *ctx) {
    return ctx != NULL && rt_context_first_tensor(ctx) != NULL;
}

/* Weights a CPU copies rather than maps from this many bytes on. */
#define RTM_COPY_MIN_BYTES ((uint64_t)64 << 20)

/* Whether device d reads its weights (bytes of them) faster from a copy in
 * its own buffers than from the file's pages, so that a load copies what
 * it could map: on the CPU, whose buffers are 64-byte aligned and in huge
 * pages (plugins/cpu/buffer.c) where a mapped tensor is 32-byte aligned and
 * the page cache partly in 4 KiB pages, a decode streams the weights 7-17%
 * faster (Gemma 3 270M Q4_K_M, TinyLlama-8 F16). Weights under
 * RTM_COPY_MIN_BYTES stay mapped (the TLB covers them: the copy would cost
 * load time for nothing), and so do weights past half the free memory (a
 * mapping needs no memory of its own: a model larger than memory pages
 * in). */
static bool copy_preferred(const rtm_model_t *m, int32_t d, uint64_t bytes) {
    rt_device_props_t p = {.struct_size = sizeof p};
    if (rt_device_get_props(m->devices[d], &p) != RT_OK || p.kind != RT_DEVICE_KIND_CPU) return false;
    return bytes >= RTM_COPY_MIN_BYTES && bytes <= p.memory_free / 2;
}

/* Unmaps the data section outside the span the in-place devices use: the
 * copied tensors' bytes are not read again. */
static void release_unused(rtm_model_t *m, const bool *map) {
    size_t keep_first = SIZE_MAX, keep_last = 0, first, last;
    for (int32_t d = 0; d < m->n_devices; d++) {
        if (!map[d] || !map_span(m, d, &first, &last)) continue;
        if (first < keep_first) keep_first = first;
        if (last > keep_last) keep_last = last;
    }
    const uint64_t begin = rt_gguf_data_offset(m->gguf), end = rt_gguf_file_size(m->gguf);
    if (keep_first >= keep_last) {
        rt_gguf_release_range(m->gguf, begin, end - begin);
        return;
    }
    if (keep_first > begin) rt_gguf_release_range(m->gguf, begin, keep_first - begin);
    if (keep_last < end) rt_gguf_release_range(m->gguf, keep_last, end - keep_last);
}

rt_status_t rtm_weights_load(rtm_model_t *m, bool no_mmap, bool progress) {
    bool map[RTM_MAX_DEVICES] = {false};
    progress_t prog = {progress && isatty(STDERR_FILENO), 0, 0, -1};
    for (int32_t d = 0; d < m->n_devices; d++) {
        if (has_tensors(m->ctx_w[d])) prog.total += context_bytes(m, m->ctx_w[d]);
        if (!has_tensors(m->ctx[d])) continue;
        const uint64_t bytes = context_bytes(m, m->ctx[d]);
        const rt_status_t st = no_mmap || copy_preferred(m, d, bytes) ? RT_OK : map_device(m, d, &map[d]);
        if (st != RT_OK) return st;
        if (!map[d]) prog.total += bytes;
    }
    for (int32_t d = 0; d < m->n_devices; d++) {
        rt_status_t st = RT_OK;
        if (!map[d] && has_tensors(m->ctx[d]))
            st = copy_tensors(m, m->ctx[d], rt_device_buffer_type(m->devices[d], 0), &m->buf[d], &prog);
        if (st == RT_OK && has_tensors(m->ctx_w[d]))
            st = copy_tensors(m, m->ctx_w[d], m->weights_buft[d], &m->buf_w[d], &prog);
        if (st != RT_OK) return st;
    }
    release_unused(m, map);
    return RT_OK;
}
