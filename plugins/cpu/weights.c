/* SPDX-License-Identifier: MIT */
/* weights.c: the CPU device's second buffer type, "CPU_Weights"
 * (RT_BUFT_FLAG_WEIGHTS, rt_plugin.h): host memory in which 2-D Q8_0, Q4_0
 * and Q4_1 matrices are kept in the r16 layout of repack.h, which the integer
 * mat-vec kernels read without shuffles or horizontal sums. set_tensor
 * repacks a whole tensor given in the GGUF layout, get_tensor gives the
 * same bytes back; partial reads and writes and memset are refused, since
 * a byte range of the GGUF layout is no byte range here. init_tensor tags
 * a tensor placed here by pointing its extra at rt_cpu_r16 (views of it
 * get nothing), and supports_op accepts such a tensor only as src[0] of
 * MUL_MAT. The memory is the plain buffer's (buffer.c): the device computes
 * on it like on any host buffer. RT_CPU_WEIGHTS=0 hides the type. */
#include "cpu.h"
#include "repack.h"

#include <stdlib.h>
#include <string.h>

/* What extra points at for a tensor in the r16 layout. */
static const char rt_cpu_r16[] = "r16";

static bool rt_cpu_weights_accepts(const rt_tensor_t *t) {
    return rt_cpu_rp_type(t->type) && t->ne[0] > 0 &&
           t->ne[0] % 32 == 0 && t->ne[1] > 0 && t->ne[2] == 1 && t->ne[3] == 1;
}

bool rt_cpu_repacked(const rt_tensor_t *t) {
    return t && t->extra == (const void *)rt_cpu_r16;
}

/* t, or the base of view t, is repacked. */
static bool rt_cpu_repacked_bytes(const rt_tensor_t *t) {
    return t && (rt_cpu_repacked(t) || rt_cpu_repacked(t->view_src));
}

bool rt_cpu_repacked_uses_ok(const rt_tensor_t *node) {
    if (!rt_cpu_op_computes(node->op)) return true; /* views and leafs compute nothing */
    if (rt_cpu_repacked_bytes(node)) return false;
    for (int s = 0; s < RT_MAX_SRC; s++) {
        const rt_tensor_t *t = node->src[s];
        if (!rt_cpu_repacked_bytes(t)) continue;
        if (node->op != RT_OP_MUL_MAT || s != 0 || !rt_cpu_repacked(t)) return false;
    }
    return true;
}

//===--- the buffer type ---===//

static bool rt_cpu_weights_supports_tensor(void *ctx, const rt_tensor_t *t) {
    (void)ctx;
    return t && rt_cpu_weights_accepts(t);
}

static size_t rt_cpu_weights_alloc_size(void *ctx, const rt_tensor_t *t) {
    const rt_cpu_device_t *dev = ctx;
    if (!rt_cpu_weights_accepts(t)) return dev->host->tensor_nbytes(t);
    return rt_cpu_rp_bytes(t->type, t->ne[1], t->ne[0]);
}

//===--- the buffer ---===//

static rt_status_t rt_cpu_weights_init_tensor(void *state, rt_tensor_t *t) {
    const rt_cpu_buffer_t *b = state;
    if (t->view_src) return RT_OK; /* untagged: nothing computes on it */
    if (!rt_cpu_weights_accepts(t))
        return b->host->set_error(RT_ERR_UNSUPPORTED,
                                  "cpu: CPU_Weights holds 2-D q8_0/q4_0 matrices with rows of a "
                                  "multiple of 32, not '%s' (type %d, %lld x %lld x %lld x %lld)",
                                  t->name, (int)t->type, (long long)t->ne[0],
                                  (long long)t->ne[1], (long long)t->ne[2], (long long)t->ne[3]);
    t->extra = (void *)rt_cpu_r16;
    return RT_OK;
}

/* Only whole tensors cross: the GGUF layout's byte ranges are not ours. */
static rt_status_t rt_cpu_weights_whole(const rt_cpu_buffer_t *b, const rt_tensor_t *t,
                                        const char *what, size_t offset, size_t size) {
    const size_t n = b->host->tensor_nbytes(t);
    if (rt_cpu_repacked(t) && offset == 0 && size == n) return RT_OK;
    return b->host->set_error(RT_ERR_UNSUPPORTED,
                              "cpu: CPU_Weights: %s of '%s' at offset %zu for %zu bytes: tensors "
                              "there are repacked and cross whole (offset 0, %zu bytes), views "
                              "not at all", what, t->name, offset, size, n);
}

static rt_status_t rt_cpu_weights_set(void *state, rt_tensor_t *t, const void *data,
                                      size_t offset, size_t size) {
    const rt_status_t st = rt_cpu_weights_whole(state, t, "set_tensor", offset, size);
    if (st == RT_OK) rt_cpu_rp_pack(t->type, data, t->nb[1], t->ne[1], t->ne[0], t->data);
    return st;
}

static rt_status_t rt_cpu_weights_get(void *state, const rt_tensor_t *t, void *data,
                                      size_t offset, size_t size) {
    const rt_status_t st = rt_cpu_weights_whole(state, t, "get_tensor", offset, size);
    if (st == RT_OK) rt_cpu_rp_unpack(t->type, t->data, t->ne[1], t->ne[0], data, t->nb[1]);
    return st;
}

static rt_status_t rt_cpu_weights_memset(void *state, rt_tensor_t *t, uint8_t value,
                                         size_t offset, size_t size) {
    const rt_cpu_buffer_t *b = state;
    (void)value;
    return b->host->set_error(RT_ERR_UNSUPPORTED,
                              "cpu: CPU_Weights: memset of '%s' (offset %zu, %zu bytes): "
                              "repacked tensors are written with set_tensor only",
                              t->name, offset, size);
}

/* The raw bytes: tensors read back undefined until set again (the loader
 * clears a buffer before it fills it). */
static rt_status_t rt_cpu_weights_clear(void *state, uint8_t value) {
    rt_cpu_buffer_t *b = state;
    if (b->size) memset(b->data, value, b->size);
    return RT_OK;
}

static const rt_buffer_vtable_t rt_cpu_weights_vtable = {
    .struct_size = sizeof(rt_buffer_vtable_t),
    .destroy = rt_cpu_buffer_destroy,
    .base = rt_cpu_buffer_base,
    .init_tensor = rt_cpu_weights_init_tensor,
    .set_tensor = rt_cpu_weights_set,
    .get_tensor = rt_cpu_weights_get,
    .memset_tensor = rt_cpu_weights_memset,
    .cpy_tensor = NULL, /* the core's copy through host memory calls set_tensor whole */
    .clear = rt_cpu_weights_clear,
};

/* Offered unless RT_CPU_WEIGHTS is "0" (to measure or rule out the layout). */
void rt_cpu_weights_buft_init(rt_cpu_device_t *dev) {
    const char *env = getenv("RT_CPU_WEIGHTS");
    dev->weights = !(env && strcmp(env, "0") == 0);
    dev->wbuft = (rt_buffer_type_desc_t){
        .struct_size = sizeof(rt_buffer_type_desc_t),
        .flags = RT_BUFT_FLAG_WEIGHTS,
        .name = "CPU_Weights",
        .alignment = RT_CPU_ALIGN,
        .max_size = 0,
        .buffer_state_size = sizeof(rt_cpu_buffer_t),
        .ctx = dev,
        .alloc = rt_cpu_buffer_alloc,
        .alloc_size = rt_cpu_weights_alloc_size,
        .buffer_vtable = &rt_cpu_weights_vtable,
        .supports_tensor = rt_cpu_weights_supports_tensor,
    };
}
