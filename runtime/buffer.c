/* SPDX-License-Identifier: MIT */
/* buffer.c: buffer types and buffers, and placing tensors in them. A buffer
 * is one allocation from the registry's allocator: the rt_buffer_t followed
 * by the plugin's buffer_state_size bytes of state, which the buffer type's
 * alloc fills. Also rt_tensor_alloc / rt_view_init (docs/memory.md §3.2;
 * rt_alloc_ctx_tensors is tallocr.c's) and the bounds-checked set/get/memset/copy of tensor bytes,
 * through the buffer's plugin or, for tensors in context memory, directly. */
#include "abi_gate.h"
#include "buffer_impl.h"
#include "device_impl.h"
#include "registry_impl.h"

#include <stdalign.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Where the plugin state starts in a buffer's allocation. */
#define STATE_OFFSET rt_align_up(sizeof(rt_buffer_t), alignof(max_align_t))

//===--- buffer types ---===//

const char *rt_buffer_type_name(const rt_buffer_type_t *buft) {
    return buft != NULL ? buft->desc.name : "?";
}

size_t rt_buffer_type_alignment(const rt_buffer_type_t *buft) {
    return buft != NULL ? buft->desc.alignment : 1;
}

size_t rt_buffer_type_max_size(const rt_buffer_type_t *buft) {
    return buft != NULL && buft->desc.max_size != 0 ? buft->desc.max_size : SIZE_MAX;
}

size_t rt_buffer_type_alloc_size(const rt_buffer_type_t *buft, const rt_tensor_t *t) {
    if (buft != NULL && buft->desc.alloc_size != NULL) return buft->desc.alloc_size(buft->desc.ctx, t);
    return rt_nbytes(t);
}

bool rt_buffer_type_is_host(const rt_buffer_type_t *buft) {
    return buft != NULL && (buft->desc.flags & RT_BUFT_FLAG_HOST) != 0;
}

bool rt_buffer_type_is_weights(const rt_buffer_type_t *buft) {
    return buft != NULL && (buft->desc.flags & RT_BUFT_FLAG_WEIGHTS) != 0;
}

bool rt_buffer_type_supports_tensor(const rt_buffer_type_t *buft, const rt_tensor_t *t) {
    if (buft == NULL || t == NULL) return false;
    return buft->desc.supports_tensor == NULL || buft->desc.supports_tensor(buft->desc.ctx, t);
}

rt_device_t *rt_buffer_type_device(const rt_buffer_type_t *buft) {
    return buft != NULL ? buft->device : NULL;
}

//===--- buffers ---===//

rt_status_t rt_buffer_create(rt_buffer_type_t *buft, size_t size,
                             rt_status_t (*fill)(void *ctx, void *state), void *fill_ctx,
                             rt_buffer_t **out_buf) {
    *out_buf = NULL;
    rt_registry_t *reg = buft->device->registry;
    const size_t alloc_size = STATE_OFFSET + buft->desc.buffer_state_size;
    if (alloc_size < STATE_OFFSET)
        return rt_error(RT_ERR_OUT_OF_MEMORY, "buffer type %s: state size %zu is too large",
                        buft->desc.name, buft->desc.buffer_state_size);
    rt_buffer_t *buf = rt_mem_calloc(&reg->allocator, alloc_size);
    if (buf == NULL)
        return rt_error(RT_ERR_OUT_OF_MEMORY, "buffer type %s: no host memory for a buffer "
                        "header of %zu bytes", buft->desc.name, alloc_size);
    buf->buft = buft;
    buf->size = size;
    buf->allocator = &reg->allocator;
    buf->alloc_size = alloc_size;
    buf->state = (char *)buf + STATE_OFFSET;
    const rt_status_t st = fill(fill_ctx, buf->state);
    if (st != RT_OK) {
        rt_mem_free(&reg->allocator, buf, alloc_size);
        return st;
    }
    buf->base = buft->buffer_vtable.base(buf->state);
    rt_registry_link(reg, &reg->buffers, &buf->link);
    *out_buf = buf;
    return RT_OK;
}

typedef struct alloc_req {
    rt_buffer_type_t *buft;
    size_t size; /* bytes asked of the plugin */
} alloc_req_t;

static rt_status_t fill_alloc(void *ctx, void *state) {
    const alloc_req_t *req = ctx;
    const rt_buffer_type_desc_t *d = &req->buft->desc;
    rt_error_snapshot_t snap;
    char what[192];
    rt_error_snapshot(&snap);
    const rt_status_t st = d->alloc(d->ctx, req->size, state);
    if (st == RT_OK) return RT_OK;
    snprintf(what, sizeof what, "%s: allocating %zu bytes of %s failed",
             req->buft->device->name, req->size, d->name);
    return rt_plugin_failed(st, &snap, what);
}

rt_status_t rt_buffer_alloc(rt_buffer_type_t *buft, size_t size, rt_buffer_t **out_buf) {
    RT_ARMOR(buft != NULL && out_buf != NULL);
    *out_buf = NULL;
    if (size > rt_buffer_type_max_size(buft))
        return rt_error(RT_ERR_INVALID_ARGUMENT, "buffer type %s: %zu bytes asked, more than its "
                        "largest buffer of %zu bytes", buft->desc.name, size, buft->desc.max_size);
    /* Size 0 still gets real memory, so that base is a valid address. */
    alloc_req_t req = {buft, size != 0 ? size : buft->desc.alignment};
    return rt_buffer_create(buft, size, fill_alloc, &req, out_buf);
}

typedef struct host_ptr_req {
    rt_device_t *dev;
    void *ptr;
    size_t size; /* bytes */
} host_ptr_req_t;

static rt_status_t fill_host_ptr(void *ctx, void *state) {
    const host_ptr_req_t *req = ctx;
    rt_error_snapshot_t snap;
    char what[192];
    rt_error_snapshot(&snap);
    const rt_status_t st =
        req->dev->host_ptr.buffer_from_host_ptr(req->dev->handle, req->ptr, req->size, state);
    if (st == RT_OK) return RT_OK;
    snprintf(what, sizeof what, "%s: wrapping %zu bytes of host memory failed", req->dev->name,
             req->size);
    return rt_plugin_failed(st, &snap, what);
}

rt_status_t rt_device_buffer_from_host_ptr(rt_device_t *dev, void *ptr, size_t size,
                                           rt_buffer_t **out_buf) {
    RT_ARMOR(dev != NULL && out_buf != NULL);
    *out_buf = NULL;
    rt_buffer_type_t *buft = rt_device_host_ptr_buffer_type(dev);
    if (buft == NULL)
        return rt_error(RT_ERR_UNSUPPORTED, "%s cannot use host memory in place (no host_ptr "
                        "extension)", dev->name);
    host_ptr_req_t req = {dev, ptr, size};
    return rt_buffer_create(buft, size, fill_host_ptr, &req, out_buf);
}

/* A buffer split by rt_alloc_ctx_tensors is a chain of parts: freeing the
 * first frees them all. */
void rt_buffer_free(rt_buffer_t *buf) {
    while (buf != NULL) {
        rt_buffer_t *next = buf->next_part;
        rt_registry_unlink(buf->buft->device->registry, &buf->link);
        buf->buft->buffer_vtable.destroy(buf->state);
        rt_mem_free(buf->allocator, buf, buf->alloc_size);
        buf = next;
    }
}

void *rt_buffer_base(const rt_buffer_t *buf) { return buf != NULL ? buf->base : NULL; }

size_t rt_buffer_size(const rt_buffer_t *buf) { return buf != NULL ? buf->size : 0; }

rt_buffer_type_t *rt_buffer_get_type(const rt_buffer_t *buf) {
    return buf != NULL ? buf->buft : NULL;
}

rt_status_t rt_buffer_clear(rt_buffer_t *buf, uint8_t value) {
    RT_ARMOR(buf != NULL);
    rt_status_t st = RT_OK;
    for (; buf != NULL && st == RT_OK; buf = buf->next_part)
        st = buf->buft->buffer_vtable.clear(buf->state, value);
    return st;
}

void *rt_buffer_state(const rt_buffer_t *buf) { return buf != NULL ? buf->state : NULL; }

bool rt_buffer_is_host(const rt_buffer_t *buf) {
    return buf != NULL && rt_buffer_type_is_host(buf->buft);
}

//===--- placing tensors ---===//

#define DESCRIBE_MAX 160

static rt_status_t init_tensor(rt_buffer_t *buf, rt_tensor_t *t) {
    if (buf == NULL || buf->buft->buffer_vtable.init_tensor == NULL) return RT_OK;
    rt_error_snapshot_t snap;
    char what[256], d[DESCRIBE_MAX];
    rt_error_snapshot(&snap);
    const rt_status_t st = buf->buft->buffer_vtable.init_tensor(buf->state, t);
    if (st == RT_OK) return RT_OK;
    t->data = NULL;
    t->buffer = NULL;
    snprintf(what, sizeof what, "%s: init_tensor of %s failed", buf->buft->desc.name,
             rt_tensor_describe(t, d, sizeof d));
    return rt_plugin_failed(st, &snap, what);
}

rt_status_t rt_tensor_alloc(rt_buffer_t *buf, rt_tensor_t *t, void *addr) {
    RT_ARMOR(buf != NULL && t != NULL);
    char d[DESCRIBE_MAX];
    if (t->view_src != NULL)
        return rt_error(RT_ERR_INVALID_ARGUMENT, "rt_tensor_alloc: %s is a view; it gets its data "
                        "from its base (rt_view_init)", rt_tensor_describe(t, d, sizeof d));
    if (t->data != NULL || t->buffer != NULL)
        return rt_error(RT_ERR_INVALID_ARGUMENT, "rt_tensor_alloc: %s already has data",
                        rt_tensor_describe(t, d, sizeof d));
    const uint32_t abi = buf->buft->device->plugin->info.abi_version;
    if (!rt_abi_gate_type(abi, t->type)) {
        char have[16];
        return rt_error(RT_ERR_UNSUPPORTED, "rt_tensor_alloc: %s: buffer type %s belongs to a "
                        "plugin of ABI %s, which does not define type %s",
                        rt_tensor_describe(t, d, sizeof d), buf->buft->desc.name,
                        rt_abi_text(abi, have, sizeof have), rt_type_name(t->type));
    }
    /* Device addresses need not be host pointers: compare them as integers. */
    const uintptr_t base = (uintptr_t)buf->base, at = (uintptr_t)addr;
    const size_t size = rt_buffer_type_alloc_size(buf->buft, t);
    if (at < base || at - base > buf->size || size > buf->size - (at - base))
        return rt_error(RT_ERR_INVALID_ARGUMENT, "rt_tensor_alloc: %s (%zu bytes at offset %td) "
                        "does not fit in buffer %s of %zu bytes", rt_tensor_describe(t, d, sizeof d),
                        size, (ptrdiff_t)(at - base), buf->buft->desc.name, buf->size);
    t->buffer = buf;
    t->data = addr;
    return init_tensor(buf, t);
}

rt_status_t rt_view_init(rt_tensor_t *t) {
    RT_ARMOR(t != NULL);
    char d[DESCRIBE_MAX];
    const rt_tensor_t *src = t->view_src;
    if (src == NULL)
        return rt_error(RT_ERR_INVALID_ARGUMENT, "rt_view_init: %s is not a view",
                        rt_tensor_describe(t, d, sizeof d));
    if (t->data != NULL || t->buffer != NULL)
        return rt_error(RT_ERR_INVALID_ARGUMENT, "rt_view_init: view %s already has data",
                        rt_tensor_describe(t, d, sizeof d));
    if (src->data == NULL)
        return rt_error(RT_ERR_INVALID_ARGUMENT, "rt_view_init: the base of view %s has no data",
                        rt_tensor_describe(t, d, sizeof d));
    const size_t n = rt_nbytes(t), base_n = rt_nbytes(src);
    if (t->view_offs > base_n || n > base_n - t->view_offs)
        return rt_error(RT_ERR_INVALID_ARGUMENT, "rt_view_init: view %s (%zu bytes at offset %zu) "
                        "reaches past its base's %zu bytes", rt_tensor_describe(t, d, sizeof d),
                        n, t->view_offs, base_n);
    t->buffer = src->buffer;
    t->data = (char *)src->data + t->view_offs;
    return init_tensor(t->buffer, t);
}

//===--- tensor bytes ---===//

static rt_status_t check_range(const char *fn, const rt_tensor_t *t, const void *data,
                               size_t offset, size_t size) {
    char d[DESCRIBE_MAX];
    if (t->data == NULL)
        return rt_error(RT_ERR_INVALID_ARGUMENT, "%s: tensor %s has no data (allocate it first)",
                        fn, rt_tensor_describe(t, d, sizeof d));
    const size_t n = rt_nbytes(t);
    if (offset > n || size > n - offset)
        return rt_error(RT_ERR_INVALID_ARGUMENT, "%s: bytes [%zu, %zu + %zu) lie outside tensor %s "
                        "of %zu bytes", fn, offset, offset, size, rt_tensor_describe(t, d, sizeof d), n);
    if (data == NULL && size > 0)
        return rt_error(RT_ERR_INVALID_ARGUMENT, "%s: NULL host pointer for %zu bytes of %s", fn,
                        size, rt_tensor_describe(t, d, sizeof d));
    return RT_OK;
}

static const rt_buffer_vtable_t *vtable_of(const rt_tensor_t *t) {
    return &t->buffer->buft->buffer_vtable;
}

rt_status_t rt_tensor_set(rt_tensor_t *t, const void *data, size_t offset, size_t size) {
    RT_ARMOR(t != NULL);
    rt_status_t st = check_range("rt_tensor_set", t, data, offset, size);
    if (st != RT_OK || size == 0) return st;
    if (t->buffer == NULL) {
        memcpy((char *)t->data + offset, data, size); /* context memory */
        return RT_OK;
    }
    return vtable_of(t)->set_tensor(t->buffer->state, t, data, offset, size);
}

rt_status_t rt_tensor_get(const rt_tensor_t *t, void *data, size_t offset, size_t size) {
    RT_ARMOR(t != NULL);
    rt_status_t st = check_range("rt_tensor_get", t, data, offset, size);
    if (st != RT_OK || size == 0) return st;
    if (t->buffer == NULL) {
        memcpy(data, (const char *)t->data + offset, size);
        return RT_OK;
    }
    return vtable_of(t)->get_tensor(t->buffer->state, t, data, offset, size);
}

rt_status_t rt_tensor_memset(rt_tensor_t *t, uint8_t value, size_t offset, size_t size) {
    RT_ARMOR(t != NULL);
    rt_status_t st = check_range("rt_tensor_memset", t, &value, offset, size);
    if (st != RT_OK || size == 0) return st;
    if (t->buffer == NULL) {
        memset((char *)t->data + offset, value, size);
        return RT_OK;
    }
    return vtable_of(t)->memset_tensor(t->buffer->state, t, value, offset, size);
}

static bool tensor_is_host(const rt_tensor_t *t) {
    return t->buffer == NULL || rt_buffer_is_host(t->buffer);
}

static rt_status_t check_copy(const rt_tensor_t *src, const rt_tensor_t *dst) {
    char a[DESCRIBE_MAX], b[DESCRIBE_MAX];
    const char *why = src->type != dst->type || !rt_are_same_shape(src, dst) ? "differ in type or shape"
                      : !rt_is_contiguous(src) || !rt_is_contiguous(dst) ? "are not both contiguous"
                      : src->data == NULL || dst->data == NULL ? "do not both have data"
                      : NULL;
    if (why == NULL) return RT_OK;
    return rt_error(RT_ERR_INVALID_ARGUMENT, "rt_tensor_copy: %s and %s %s",
                    rt_tensor_describe(src, a, sizeof a), rt_tensor_describe(dst, b, sizeof b), why);
}

/* Neither side is host memory: through a bounce buffer. */
static rt_status_t copy_bounce(const rt_tensor_t *src, rt_tensor_t *dst, size_t n) {
    const rt_allocator_t *a = src->buffer->allocator;
    void *tmp = rt_mem_alloc(a, n);
    if (tmp == NULL)
        return rt_error(RT_ERR_OUT_OF_MEMORY, "rt_tensor_copy: no host memory for a %zu-byte "
                        "bounce buffer", n);
    rt_status_t st = rt_tensor_get(src, tmp, 0, n);
    if (st == RT_OK) st = rt_tensor_set(dst, tmp, 0, n);
    rt_mem_free(a, tmp, n);
    return st;
}

rt_status_t rt_tensor_copy(const rt_tensor_t *src, rt_tensor_t *dst) {
    RT_ARMOR(src != NULL && dst != NULL);
    rt_status_t st = check_copy(src, dst);
    /* Equal data in different buffers may be two devices' equal addresses. */
    if (st != RT_OK || src == dst || (src->buffer == dst->buffer && src->data == dst->data))
        return st;
    const size_t n = rt_nbytes(src);
    if (dst->buffer != NULL && vtable_of(dst)->cpy_tensor != NULL) {
        st = vtable_of(dst)->cpy_tensor(dst->buffer->state, src, dst);
        if (st != RT_ERR_UNSUPPORTED) return st;
    }
    if (tensor_is_host(src)) return rt_tensor_set(dst, src->data, 0, n);
    if (tensor_is_host(dst)) return rt_tensor_get(src, dst->data, 0, n);
    return copy_bounce(src, dst, n);
}
