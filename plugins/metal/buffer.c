/* SPDX-License-Identifier: MIT */
/* buffer.c: the Metal plugin's two buffer types, its buffers over host
 * memory and its transfers. "MetalN" is the default type: Shared storage
 * on unified memory (tensor->data is the host address of the MTLBuffer's
 * contents, RT_BUFT_FLAG_HOST, and the GPU computes on the same bytes),
 * Private storage otherwise; the second type is the other one
 * ("MetalN_Private" or "MetalN_Shared"). Private bytes move through a
 * temporary Shared buffer and a blit on the device's transfer queue.
 *
 * Ordering: a synchronous transfer first waits for every queue of the
 * device (rt_mtl_device_synchronize), since Metal orders command buffers
 * only within one queue; the "async" transfers run on the rt queue's own
 * MTLCommandQueue, in its order (a write to Private memory is left running;
 * a read waits, the host needing the bytes when it returns). */
#include "mtl_impl.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Private buffers get this base: never NULL, never dereferenced. */
#define MTL_FAKE_BASE ((uintptr_t)0x1000)

static NSUInteger mtl_storage(uint32_t kind) {
    return (kind == RT_MTL_BUFT_SHARED ? MTLResourceStorageModeShared : MTLResourceStorageModePrivate) |
           MTLResourceHazardTrackingModeDefault;
}

//===--- tensors in buffers ---===//

rt_mtl_buffer_t *rt_mtl_buffer_of(const rt_mtl_device_t *dev, const rt_tensor_t *t) {
    const rt_host_t *host = dev->host;
    if (!t->buffer) return NULL;
    if (RT_STRUCT_HAS(host, rt_host_t, buffer_type) && host->buffer_type) {
        const rt_buffer_type_desc_t *d = host->buffer_type(t->buffer);
        if (d != &dev->bufts[0] && d != &dev->bufts[1]) return NULL;
    }
    rt_mtl_buffer_t *b = host->buffer_state(t->buffer);
    return b && b->magic == RT_MTL_BUFFER_MAGIC && b->dev == dev ? b : NULL;
}

size_t rt_mtl_tensor_offset(const rt_mtl_buffer_t *b, const rt_tensor_t *t) {
    return (size_t)((uintptr_t)t->data - b->base) + b->lead;
}

/* The MTLBuffer offset of bytes [offset, offset + size) of t, checked
 * against the buffer. */
static rt_status_t mtl_tensor_range(const rt_mtl_buffer_t *b, const rt_tensor_t *t, size_t offset,
                                    size_t size, size_t *out_off) {
    const size_t start = (size_t)((uintptr_t)t->data - b->base);
    *out_off = start + b->lead + offset;
    if ((uintptr_t)t->data >= b->base && start <= b->size && offset <= b->size - start &&
        size <= b->size - start - offset)
        return RT_OK;
    return b->dev->host->set_error(RT_ERR_INVALID_ARGUMENT, "%s: %s: bytes [%zu, %zu) outside its "
                                   "buffer of %zu bytes", __func__, t->name, start + offset,
                                   start + offset + size, b->size);
}

//===--- blits ---===//

/* One blit on queue (a new command buffer): copy, or fill when src is nil. */
static id mtl_blit_cmd(id queue, id src, size_t src_off, id dst, size_t dst_off, size_t size,
                       uint8_t value) {
    id cmd = rt_objc_id(queue, "commandBuffer");
    id blit = rt_objc_id(cmd, "blitCommandEncoder");
    if (src)
        RT_OBJC(void (*)(id, SEL, id, NSUInteger, id, NSUInteger, NSUInteger), blit,
                "copyFromBuffer:sourceOffset:toBuffer:destinationOffset:size:", src, src_off, dst,
                dst_off, size);
    else
        RT_OBJC(void (*)(id, SEL, id, NSRange, uint8_t), blit, "fillBuffer:range:value:", dst,
                (NSRange){ dst_off, size }, value);
    rt_objc_void(blit, "endEncoding");
    return cmd;
}

/* A temporary Shared buffer (+1) of size bytes, holding data when given. */
static id mtl_temp_buffer(const rt_mtl_device_t *dev, const void *data, size_t size) {
    const NSUInteger opt = mtl_storage(RT_MTL_BUFT_SHARED);
    if (data)
        return RT_OBJC(id (*)(id, SEL, const void *, NSUInteger, NSUInteger), dev->device,
                       "newBufferWithBytes:length:options:", data, size, opt);
    return RT_OBJC(id (*)(id, SEL, NSUInteger, NSUInteger), dev->device,
                   "newBufferWithLength:options:", size, opt);
}

/* Host <-> Private bytes [off, off + size) of b, on queue; waits for the
 * blit unless wait is false (a write on an rt queue, which keeps it). */
static rt_status_t mtl_private_xfer(rt_mtl_buffer_t *b, rt_mtl_queue_t *q, size_t off,
                                    const void *in, void *out, size_t size) {
    const rt_mtl_device_t *dev = b->dev;
    id temp = mtl_temp_buffer(dev, in, size);
    if (!temp)
        return dev->host->set_error(RT_ERR_OUT_OF_MEMORY, "%s: metal%u: no staging buffer of "
                                    "%zu bytes", __func__, dev->index, size);
    id cmd = in ? mtl_blit_cmd(q ? q->queue : dev->xfer_queue, temp, 0, b->buffer, off, size, 0)
                : mtl_blit_cmd(q ? q->queue : dev->xfer_queue, b->buffer, off, temp, 0, size, 0);
    rt_status_t st = RT_OK;
    if (q && in) rt_mtl_queue_commit(q, cmd);
    else st = rt_mtl_cmd_run(dev, cmd, in ? "upload" : "download");
    if (st == RT_OK && out) memcpy(out, rt_objc_ptr(temp, "contents"), size);
    /* A pending blit keeps its own reference to temp. */
    rt_objc_release(temp);
    return st;
}

/* Moves bytes between the host and t: memcpy for Shared memory, a blit
 * otherwise. q is the rt queue for the async transfers, NULL otherwise. */
static rt_status_t mtl_access(rt_mtl_buffer_t *b, rt_mtl_queue_t *q, const rt_tensor_t *t,
                              size_t offset, const void *in, void *out, size_t size) {
    size_t off;
    rt_status_t st = mtl_tensor_range(b, t, offset, size, &off);
    if (st != RT_OK || size == 0) return st;
    st = q ? (b->contents || out ? rt_mtl_queue_synchronize(q) : RT_OK)
           : rt_mtl_device_synchronize(b->dev);
    if (st != RT_OK) return st;
    if (b->contents) {
        char *p = (char *)b->contents + (off - b->lead);
        if (in) memcpy(p, in, size);
        else memcpy(out, p, size);
        return RT_OK;
    }
    void *pool = rt_objc_pool_push();
    st = mtl_private_xfer(b, q, off, in, out, size);
    rt_objc_pool_pop(pool);
    return st;
}

static rt_status_t mtl_fill(rt_mtl_buffer_t *b, size_t off, uint8_t value, size_t size) {
    rt_status_t st = rt_mtl_device_synchronize(b->dev);
    if (st != RT_OK || size == 0) return st;
    if (b->contents) {
        memset((char *)b->contents + (off - b->lead), value, size);
        return RT_OK;
    }
    void *pool = rt_objc_pool_push();
    id cmd = mtl_blit_cmd(b->dev->xfer_queue, nil, 0, b->buffer, off, size, value);
    st = rt_mtl_cmd_run(b->dev, cmd, "fill");
    rt_objc_pool_pop(pool);
    return st;
}

//===--- the buffer table ---===//

static rt_status_t mtl_buffer_set_tensor(void *state, rt_tensor_t *t, const void *data,
                                         size_t offset, size_t size) {
    return mtl_access(state, NULL, t, offset, data, NULL, size);
}

static rt_status_t mtl_buffer_get_tensor(void *state, const rt_tensor_t *t, void *data,
                                         size_t offset, size_t size) {
    return mtl_access(state, NULL, t, offset, NULL, data, size);
}

static rt_status_t mtl_buffer_memset_tensor(void *state, rt_tensor_t *t, uint8_t value,
                                            size_t offset, size_t size) {
    size_t off;
    const rt_status_t st = mtl_tensor_range(state, t, offset, size, &off);
    return st == RT_OK ? mtl_fill(state, off, value, size) : st;
}

/* Between two buffers of one device: one blit on the transfer queue. */
static rt_status_t mtl_buffer_cpy_tensor(void *dst_state, const rt_tensor_t *src, rt_tensor_t *dst) {
    rt_mtl_buffer_t *db = dst_state;
    const rt_host_t *host = db->dev->host;
    /* Without buffer_type we cannot tell our buffers from others'. */
    if (!(RT_STRUCT_HAS(host, rt_host_t, buffer_type) && host->buffer_type)) return RT_ERR_UNSUPPORTED;
    const rt_mtl_buffer_t *sb = rt_mtl_buffer_of(db->dev, src);
    if (!sb) return RT_ERR_UNSUPPORTED;
    const size_t size = host->tensor_nbytes(src);
    size_t soff, doff;
    rt_status_t st = mtl_tensor_range(sb, src, 0, size, &soff);
    if (st == RT_OK) st = mtl_tensor_range(db, dst, 0, size, &doff);
    if (st == RT_OK) st = rt_mtl_device_synchronize(db->dev);
    if (st != RT_OK || size == 0) return st;
    void *pool = rt_objc_pool_push();
    id cmd = mtl_blit_cmd(db->dev->xfer_queue, sb->buffer, soff, db->buffer, doff, size, 0);
    st = rt_mtl_cmd_run(db->dev, cmd, "copy");
    rt_objc_pool_pop(pool);
    return st;
}

static rt_status_t mtl_buffer_clear(void *state, uint8_t value) {
    rt_mtl_buffer_t *b = state;
    return mtl_fill(b, b->lead, value, b->size);
}

static void *mtl_buffer_base(void *state) { return (void *)((rt_mtl_buffer_t *)state)->base; }

static void mtl_buffer_destroy(void *state) {
    rt_mtl_buffer_t *b = state;
    if (!b || b->magic != RT_MTL_BUFFER_MAGIC) return;
    /* Work still queued on the buffer keeps its own reference. */
    rt_objc_release(b->buffer);
    b->magic = 0;
}

static const rt_buffer_vtable_t mtl_buffer_vtable = {
    .struct_size = sizeof(rt_buffer_vtable_t),
    .destroy = mtl_buffer_destroy,
    .base = mtl_buffer_base,
    .init_tensor = NULL,
    .set_tensor = mtl_buffer_set_tensor,
    .get_tensor = mtl_buffer_get_tensor,
    .memset_tensor = mtl_buffer_memset_tensor,
    .cpy_tensor = mtl_buffer_cpy_tensor,
    .clear = mtl_buffer_clear,
};

//===--- buffer types ---===//

static rt_status_t mtl_buffer_alloc(rt_mtl_device_t *dev, uint32_t kind, size_t size, void *state) {
    rt_mtl_buffer_t *b = state;
    *b = (rt_mtl_buffer_t){ .kind = kind, .dev = dev, .size = size };
    if (size > dev->max_buffer)
        return dev->host->set_error(RT_ERR_OUT_OF_MEMORY, "%s: metal%u: %zu bytes exceed the "
                                    "largest buffer, %zu bytes", __func__, dev->index, size,
                                    dev->max_buffer);
    /* Rounded to 4 bytes: fills and 32-bit shader views work in words. */
    const size_t bytes = size ? (size + 3) & ~(size_t)3 : 4;
    void *pool = rt_objc_pool_push();
    b->buffer = RT_OBJC(id (*)(id, SEL, NSUInteger, NSUInteger), dev->device,
                        "newBufferWithLength:options:", bytes, mtl_storage(kind));
    if (b->buffer && kind == RT_MTL_BUFT_SHARED) b->contents = rt_objc_ptr(b->buffer, "contents");
    rt_objc_pool_pop(pool);
    if (!b->buffer)
        return dev->host->set_error(RT_ERR_OUT_OF_MEMORY, "%s: metal%u: no buffer of %zu bytes",
                                    __func__, dev->index, size);
    b->base = b->contents ? (uintptr_t)b->contents : MTL_FAKE_BASE;
    b->magic = RT_MTL_BUFFER_MAGIC;
    return RT_OK;
}

static rt_status_t mtl_buft_alloc_0(void *ctx, size_t size, void *state) {
    rt_mtl_device_t *dev = ctx;
    return mtl_buffer_alloc(dev, dev->kinds[0], size, state);
}

static rt_status_t mtl_buft_alloc_1(void *ctx, size_t size, void *state) {
    rt_mtl_device_t *dev = ctx;
    return mtl_buffer_alloc(dev, dev->kinds[1], size, state);
}

/* Host memory [ptr, ptr + size) as a Shared MTLBuffer without a copy:
 * newBufferWithBytesNoCopy takes whole pages, so the buffer spans the pages
 * around the range (mapped, since the range is) and lead says where ptr
 * is in it. The memory stays the caller's (no deallocator). */
static rt_status_t mtl_buffer_from_host_ptr(void *device, void *ptr, size_t size, void *state) {
    rt_mtl_device_t *dev = device;
    rt_mtl_buffer_t *b = state;
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    const uintptr_t first = (uintptr_t)ptr / page * page;
    const uintptr_t end = ((uintptr_t)ptr + size + page - 1) / page * page;
    *b = (rt_mtl_buffer_t){ .kind = RT_MTL_BUFT_SHARED, .dev = dev, .size = size,
                            .lead = (size_t)((uintptr_t)ptr - first) };
    void *pool = rt_objc_pool_push();
    b->buffer = RT_OBJC(id (*)(id, SEL, void *, NSUInteger, NSUInteger, void *), dev->device,
                        "newBufferWithBytesNoCopy:length:options:deallocator:", (void *)first,
                        (NSUInteger)(end - first), mtl_storage(RT_MTL_BUFT_SHARED), NULL);
    rt_objc_pool_pop(pool);
    if (!b->buffer)
        return dev->host->set_error(RT_ERR_DEVICE, "%s: metal%u: Metal cannot wrap %zu bytes at "
                                    "%p", __func__, dev->index, size, ptr);
    b->contents = ptr;
    b->base = (uintptr_t)ptr;
    b->magic = RT_MTL_BUFFER_MAGIC;
    return RT_OK;
}

void rt_mtl_buffer_types_init(rt_mtl_device_t *dev) {
    dev->kinds[0] = dev->unified ? RT_MTL_BUFT_SHARED : RT_MTL_BUFT_PRIVATE;
    dev->kinds[1] = dev->unified ? RT_MTL_BUFT_PRIVATE : RT_MTL_BUFT_SHARED;
    for (uint32_t i = 0; i < RT_MTL_N_BUFT; i++) {
        const bool shared = dev->kinds[i] == RT_MTL_BUFT_SHARED;
        if (i == 0) snprintf(dev->buft_names[i], sizeof dev->buft_names[i], "Metal%u", dev->index);
        else snprintf(dev->buft_names[i], sizeof dev->buft_names[i], "Metal%u_%s", dev->index,
                      shared ? "Shared" : "Private");
        dev->bufts[i] = (rt_buffer_type_desc_t){
            .struct_size = sizeof(rt_buffer_type_desc_t),
            .flags = shared ? RT_BUFT_FLAG_HOST : 0,
            .name = dev->buft_names[i],
            .alignment = 256, /* a tensor's offset stays bindable and cache-line aligned */
            .max_size = dev->max_buffer,
            .buffer_state_size = sizeof(rt_mtl_buffer_t),
            .ctx = dev,
            .alloc = i == 0 ? mtl_buft_alloc_0 : mtl_buft_alloc_1,
            .alloc_size = NULL,
            .buffer_vtable = &mtl_buffer_vtable,
        };
    }
    const uint32_t shared = dev->kinds[0] == RT_MTL_BUFT_SHARED ? 0 : 1;
    dev->host_ptr_ext = (rt_device_ext_host_ptr_t){
        .header = { .struct_size = sizeof(rt_device_ext_host_ptr_t), .type = RT_EXT_DEVICE_HOST_PTR },
        .buffer_type = &dev->bufts[shared],
        .buffer_from_host_ptr = mtl_buffer_from_host_ptr,
    };
}

//===--- asynchronous transfers (rt_device_ext_async_t) ---===//

static rt_status_t mtl_async_buffer(rt_mtl_queue_t *q, const rt_tensor_t *t, rt_mtl_buffer_t **out_b) {
    *out_b = rt_mtl_buffer_of(q->dev, t);
    if (!*out_b)
        return q->dev->host->set_error(RT_ERR_INVALID_ARGUMENT, "%s: %s is not in a buffer of "
                                       "metal%u", __func__, t->name, q->dev->index);
    return RT_OK;
}

static rt_status_t mtl_set_tensor_async(void *queue, rt_tensor_t *t, const void *data,
                                        size_t offset, size_t size) {
    rt_mtl_buffer_t *b;
    const rt_status_t st = mtl_async_buffer(queue, t, &b);
    return st == RT_OK ? mtl_access(b, queue, t, offset, data, NULL, size) : st;
}

static rt_status_t mtl_get_tensor_async(void *queue, const rt_tensor_t *t, void *data,
                                        size_t offset, size_t size) {
    rt_mtl_buffer_t *b;
    const rt_status_t st = mtl_async_buffer(queue, t, &b);
    return st == RT_OK ? mtl_access(b, queue, t, offset, NULL, data, size) : st;
}

/* Only between two buffers of one device (the synchronous copy). */
static rt_status_t mtl_cpy_tensor_async(void *queue_src, void *queue_dst, const rt_tensor_t *src,
                                        rt_tensor_t *dst) {
    (void)queue_src;
    const rt_mtl_queue_t *qd = queue_dst;
    rt_mtl_buffer_t *db = rt_mtl_buffer_of(qd->dev, dst);
    if (!db || !rt_mtl_buffer_of(qd->dev, src)) return RT_ERR_UNSUPPORTED;
    return mtl_buffer_cpy_tensor(db, src, dst);
}

const rt_device_ext_async_t rt_mtl_async_ext = {
    .header = { .struct_size = sizeof(rt_device_ext_async_t), .type = RT_EXT_DEVICE_ASYNC },
    .set_tensor_async = mtl_set_tensor_async,
    .get_tensor_async = mtl_get_tensor_async,
    .cpy_tensor_async = mtl_cpy_tensor_async,
    .event_create = rt_mtl_event_create,
    .event_destroy = rt_mtl_event_destroy,
    .event_record = rt_mtl_event_record,
    .event_wait = rt_mtl_event_wait,
    .event_synchronize = rt_mtl_event_synchronize,
};
