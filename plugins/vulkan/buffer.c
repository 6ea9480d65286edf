/* SPDX-License-Identifier: MIT */
/* buffer.c: the Vulkan plugin's two buffer types and their transfers.
 * "VulkanN" is device-local memory: tensor->data is a fake base plus the
 * offset in the VkBuffer, and bytes move through a host-visible staging
 * buffer with one-shot command buffers (synchronous: each transfer waits on
 * its fence; the async transfers at the end are these same ones, in the
 * queue's order). "VulkanN_Host" is host-visible, host-coherent memory mapped
 * for the buffer's lifetime, so tensor->data is a real host address the CPU
 * can use (RT_BUFT_FLAG_HOST); the GPU computes on it too. */
#include "vk_impl.h"

#include <stdio.h>
#include <string.h>

/* Device buffers get this base: never NULL, never dereferenced. */
#define VK_FAKE_BASE ((uintptr_t)0x1000)
/* Transfers larger than this go in pieces. */
#define VK_STAGING_MAX ((size_t)64 << 20)
#define VK_STAGING_MIN ((size_t)1 << 20)

//===--- raw buffers ---===//

static uint32_t vk_pick_memory(const rt_vk_device_t *dev, uint32_t bits, uint32_t kind) {
    if (kind == RT_VK_BUFT_HOST)
        return rt_vk_memory_type(dev, bits,
                                 VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                     VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                                 VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
    uint32_t t = rt_vk_memory_type(dev, bits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0);
    return t != UINT32_MAX ? t : rt_vk_memory_type(dev, bits, 0, 0);
}

static rt_status_t vk_memory_alloc(rt_vk_device_t *dev, VkBuffer buffer, size_t size,
                                   uint32_t kind, VkDeviceMemory *out_memory) {
    VkMemoryRequirements req;
    dev->fn.vkGetBufferMemoryRequirements(dev->device, buffer, &req);
    const uint32_t type = vk_pick_memory(dev, req.memoryTypeBits, kind);
    if (type == UINT32_MAX)
        return dev->host->set_error(RT_ERR_UNSUPPORTED, "%s: Vulkan%u has no memory type for "
                                    "a %s buffer", __func__, dev->index,
                                    kind == RT_VK_BUFT_HOST ? "host" : "device");
    const VkMemoryAllocateInfo info = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
        .allocationSize = req.size,
        .memoryTypeIndex = type,
    };
    const VkResult r = dev->fn.vkAllocateMemory(dev->device, &info, NULL, out_memory);
    if (r == VK_SUCCESS) return RT_OK;
    return dev->host->set_error(RT_ERR_OUT_OF_MEMORY, "%s: Vulkan%u (%s): cannot allocate %zu "
                                "bytes: %s", __func__, dev->index, dev->props.name, size,
                                rt_vk_result_name(r));
}

rt_status_t rt_vk_raw_buffer_create(rt_vk_device_t *dev, size_t size, uint32_t kind,
                                    VkBuffer *out_buffer, VkDeviceMemory *out_memory) {
    *out_buffer = VK_NULL_HANDLE;
    *out_memory = VK_NULL_HANDLE;
    const VkBufferCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = size,
        .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                 VK_BUFFER_USAGE_TRANSFER_DST_BIT,
        .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
    };
    rt_status_t st = RT_VK_TRY(dev->host, dev->fn.vkCreateBuffer(dev->device, &info, NULL, out_buffer));
    if (st == RT_OK) st = vk_memory_alloc(dev, *out_buffer, size, kind, out_memory);
    if (st == RT_OK)
        st = RT_VK_TRY(dev->host, dev->fn.vkBindBufferMemory(dev->device, *out_buffer, *out_memory, 0));
    if (st != RT_OK) {
        if (*out_buffer) dev->fn.vkDestroyBuffer(dev->device, *out_buffer, NULL);
        if (*out_memory) dev->fn.vkFreeMemory(dev->device, *out_memory, NULL);
        *out_buffer = VK_NULL_HANDLE;
        *out_memory = VK_NULL_HANDLE;
    }
    return st;
}

static void vk_raw_buffer_destroy(const rt_vk_device_t *dev, VkBuffer buffer, VkDeviceMemory memory) {
    if (buffer) dev->fn.vkDestroyBuffer(dev->device, buffer, NULL);
    if (memory) dev->fn.vkFreeMemory(dev->device, memory, NULL); /* unmaps too */
}

//===--- command submission ---===//

void rt_vk_cmd_barrier(const rt_vk_device_t *dev, VkCommandBuffer cmd) {
    const VkMemoryBarrier mb = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                         VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT |
                         VK_ACCESS_HOST_READ_BIT,
    };
    dev->fn.vkCmdPipelineBarrier(cmd,
                                 VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                                 VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT |
                                     VK_PIPELINE_STAGE_HOST_BIT,
                                 0, 1, &mb, 0, NULL, 0, NULL);
}

rt_status_t rt_vk_submit(rt_vk_device_t *dev, VkCommandBuffer cmd, VkFence fence) {
    const VkSubmitInfo info = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
        .commandBufferCount = 1,
        .pCommandBuffers = &cmd,
    };
    rt_plugin_mutex_lock(&dev->submit_lock);
    const VkResult r = dev->fn.vkQueueSubmit(dev->queue, 1, &info, fence);
    rt_plugin_mutex_unlock(&dev->submit_lock);
    return RT_VK_TRY(dev->host, r);
}

//===--- transfers (under xfer_lock) ---===//

static rt_status_t vk_xfer_init(rt_vk_device_t *dev) {
    if (dev->xfer_cmd) return RT_OK;
    const VkCommandPoolCreateInfo pinfo = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
        .queueFamilyIndex = dev->queue_family,
    };
    const VkFenceCreateInfo finfo = { .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO };
    rt_status_t st = RT_OK;
    if (!dev->xfer_pool)
        st = RT_VK_TRY(dev->host, dev->fn.vkCreateCommandPool(dev->device, &pinfo, NULL, &dev->xfer_pool));
    if (st == RT_OK && !dev->xfer_fence)
        st = RT_VK_TRY(dev->host, dev->fn.vkCreateFence(dev->device, &finfo, NULL, &dev->xfer_fence));
    const VkCommandBufferAllocateInfo cinfo = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = dev->xfer_pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1,
    };
    if (st == RT_OK)
        st = RT_VK_TRY(dev->host, dev->fn.vkAllocateCommandBuffers(dev->device, &cinfo, &dev->xfer_cmd));
    return st;
}

/* Makes the staging buffer hold min(need, VK_STAGING_MAX) bytes. */
static rt_status_t vk_staging_reserve(rt_vk_device_t *dev, size_t need) {
    rt_vk_staging_t *s = &dev->staging;
    size_t want = need < VK_STAGING_MAX ? need : VK_STAGING_MAX;
    if (s->size >= want) return RT_OK;
    if (want < VK_STAGING_MIN) want = VK_STAGING_MIN;
    vk_raw_buffer_destroy(dev, s->buffer, s->memory);
    *s = (rt_vk_staging_t){ 0 };
    rt_status_t st = rt_vk_raw_buffer_create(dev, want, RT_VK_BUFT_HOST, &s->buffer, &s->memory);
    if (st == RT_OK)
        st = RT_VK_TRY(dev->host, dev->fn.vkMapMemory(dev->device, s->memory, 0, VK_WHOLE_SIZE, 0, &s->mapped));
    if (st == RT_OK) s->size = want;
    return st;
}

static rt_status_t vk_xfer_begin(rt_vk_device_t *dev) {
    const VkCommandBufferBeginInfo info = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
    };
    rt_status_t st = vk_xfer_init(dev);
    if (st == RT_OK) st = RT_VK_TRY(dev->host, dev->fn.vkBeginCommandBuffer(dev->xfer_cmd, &info));
    /* Orders this transfer after every compute submitted before it. */
    if (st == RT_OK) rt_vk_cmd_barrier(dev, dev->xfer_cmd);
    return st;
}

/* Ends, submits and waits: when it returns the bytes are where they go. */
static rt_status_t vk_xfer_end(rt_vk_device_t *dev) {
    rt_vk_cmd_barrier(dev, dev->xfer_cmd);
    rt_status_t st = RT_VK_TRY(dev->host, dev->fn.vkEndCommandBuffer(dev->xfer_cmd));
    if (st == RT_OK) st = rt_vk_submit(dev, dev->xfer_cmd, dev->xfer_fence);
    if (st == RT_OK)
        st = RT_VK_TRY(dev->host, dev->fn.vkWaitForFences(dev->device, 1, &dev->xfer_fence, VK_TRUE, UINT64_MAX));
    dev->fn.vkResetFences(dev->device, 1, &dev->xfer_fence);
    dev->fn.vkResetCommandBuffer(dev->xfer_cmd, 0);
    return st;
}

/* One copy command between two buffers, submitted and waited for. */
static rt_status_t vk_xfer_copy(rt_vk_device_t *dev, VkBuffer src, size_t src_off, VkBuffer dst,
                                size_t dst_off, size_t size) {
    rt_status_t st = vk_xfer_begin(dev);
    const VkBufferCopy region = { .srcOffset = src_off, .dstOffset = dst_off, .size = size };
    if (st == RT_OK) dev->fn.vkCmdCopyBuffer(dev->xfer_cmd, src, dst, 1, &region);
    if (st == RT_OK) st = vk_xfer_end(dev);
    return st;
}

/* Moves size bytes between host memory and a device buffer at off, in
 * staging-sized pieces: from `in` when it is not NULL, else into `out`.
 * With both NULL, fills the bytes with `fill`. */
static rt_status_t vk_xfer(rt_vk_device_t *dev, VkBuffer buffer, size_t off, const void *in,
                           void *out, uint8_t fill, size_t size) {
    rt_plugin_mutex_lock(&dev->xfer_lock);
    rt_status_t st = vk_staging_reserve(dev, size);
    for (size_t done = 0; st == RT_OK && done < size;) {
        const size_t n = size - done < dev->staging.size ? size - done : dev->staging.size;
        if (in) memcpy(dev->staging.mapped, (const char *)in + done, n);
        else if (!out && done == 0) memset(dev->staging.mapped, fill, n); /* the largest piece */
        if (out) st = vk_xfer_copy(dev, buffer, off + done, dev->staging.buffer, 0, n);
        else st = vk_xfer_copy(dev, dev->staging.buffer, 0, buffer, off + done, n);
        if (st == RT_OK && out) memcpy((char *)out + done, dev->staging.mapped, n);
        done += n;
    }
    rt_plugin_mutex_unlock(&dev->xfer_lock);
    return st;
}

void rt_vk_device_transfer_deinit(rt_vk_device_t *dev) {
    vk_raw_buffer_destroy(dev, dev->staging.buffer, dev->staging.memory);
    dev->staging = (rt_vk_staging_t){ 0 };
    if (dev->xfer_fence) dev->fn.vkDestroyFence(dev->device, dev->xfer_fence, NULL);
    if (dev->xfer_pool) dev->fn.vkDestroyCommandPool(dev->device, dev->xfer_pool, NULL);
    dev->xfer_fence = VK_NULL_HANDLE;
    dev->xfer_pool = VK_NULL_HANDLE;
    dev->xfer_cmd = VK_NULL_HANDLE;
}

//===--- tensors in buffers ---===//

rt_vk_buffer_t *rt_vk_buffer_of(const rt_vk_device_t *dev, const rt_tensor_t *t) {
    const rt_host_t *host = dev->host;
    if (!t->buffer) return NULL;
    if (RT_STRUCT_HAS(host, rt_host_t, buffer_type) && host->buffer_type) {
        const rt_buffer_type_desc_t *d = host->buffer_type(t->buffer);
        if (d != &dev->bufts[RT_VK_BUFT_DEVICE] && d != &dev->bufts[RT_VK_BUFT_HOST]) return NULL;
    }
    rt_vk_buffer_t *b = host->buffer_state(t->buffer);
    return b && b->magic == RT_VK_BUFFER_MAGIC && b->dev == dev ? b : NULL;
}

size_t rt_vk_tensor_offset(const rt_vk_buffer_t *b, const rt_tensor_t *t) {
    return (size_t)((uintptr_t)t->data - b->base);
}

/* Checks that [offset, offset + size) of t's data lies in the buffer and
 * returns its start in the VkBuffer in *out_off. */
static rt_status_t vk_tensor_range(const rt_vk_buffer_t *b, const rt_tensor_t *t, size_t offset,
                                   size_t size, size_t *out_off) {
    const size_t base = rt_vk_tensor_offset(b, t);
    *out_off = base + offset;
    if ((uintptr_t)t->data >= b->base && base <= b->size && offset <= b->size - base &&
        size <= b->size - base - offset)
        return RT_OK;
    return b->dev->host->set_error(RT_ERR_INVALID_ARGUMENT, "%s: %s: bytes [%zu, %zu) outside its "
                                   "buffer of %zu bytes", __func__, t->name, base + offset,
                                   base + offset + size, b->size);
}

/* One access to tensor bytes [offset, offset + size): from `in`, into
 * `out`, or filled with value when both are NULL (vk_xfer's convention),
 * straight through the mapping of a host-visible buffer. */
static rt_status_t vk_buffer_access(rt_vk_buffer_t *b, const rt_tensor_t *t, size_t offset,
                                    size_t size, const void *in, void *out, uint8_t value) {
    size_t off;
    const rt_status_t st = vk_tensor_range(b, t, offset, size, &off);
    if (st != RT_OK || size == 0) return st;
    if (!b->mapped) return vk_xfer(b->dev, b->buffer, off, in, out, value, size);
    char *p = (char *)b->mapped + off;
    if (in != NULL)
        memcpy(p, in, size);
    else if (out != NULL)
        memcpy(out, p, size);
    else
        memset(p, value, size);
    return RT_OK;
}

static rt_status_t vk_buffer_set_tensor(void *state, rt_tensor_t *t, const void *data,
                                        size_t offset, size_t size) {
    return vk_buffer_access(state, t, offset, size, data, NULL, 0);
}

static rt_status_t vk_buffer_get_tensor(void *state, const rt_tensor_t *t, void *data,
                                        size_t offset, size_t size) {
    return vk_buffer_access(state, t, offset, size, NULL, data, 0);
}

static rt_status_t vk_buffer_memset_tensor(void *state, rt_tensor_t *t, uint8_t value,
                                           size_t offset, size_t size) {
    return vk_buffer_access(state, t, offset, size, NULL, NULL, value);
}

/* Device-to-device within one device; anything else goes through the host. */
static rt_status_t vk_buffer_cpy_tensor(void *dst_state, const rt_tensor_t *src, rt_tensor_t *dst) {
    rt_vk_buffer_t *db = dst_state;
    const rt_host_t *host = db->dev->host;
    /* Without buffer_type we cannot tell our buffers from others'. */
    if (!(RT_STRUCT_HAS(host, rt_host_t, buffer_type) && host->buffer_type)) return RT_ERR_UNSUPPORTED;
    const rt_vk_buffer_t *sb = rt_vk_buffer_of(db->dev, src);
    const size_t size = host->tensor_nbytes(src);
    if (!sb) return RT_ERR_UNSUPPORTED;
    size_t soff, doff;
    rt_status_t st = vk_tensor_range(sb, src, 0, size, &soff);
    if (st == RT_OK) st = vk_tensor_range(db, dst, 0, size, &doff);
    if (st != RT_OK || size == 0) return st;
    rt_plugin_mutex_lock(&db->dev->xfer_lock);
    st = vk_xfer_copy(db->dev, sb->buffer, soff, db->buffer, doff, size);
    rt_plugin_mutex_unlock(&db->dev->xfer_lock);
    return st;
}

static rt_status_t vk_buffer_clear(void *state, uint8_t value) {
    rt_vk_buffer_t *b = state;
    if (b->mapped) {
        memset(b->mapped, value, b->size);
        return RT_OK;
    }
    rt_vk_device_t *dev = b->dev;
    rt_plugin_mutex_lock(&dev->xfer_lock);
    rt_status_t st = vk_xfer_begin(dev);
    if (st == RT_OK)
        dev->fn.vkCmdFillBuffer(dev->xfer_cmd, b->buffer, 0, VK_WHOLE_SIZE, value * 0x01010101u);
    if (st == RT_OK) st = vk_xfer_end(dev);
    rt_plugin_mutex_unlock(&dev->xfer_lock);
    return st;
}

static void *vk_buffer_base(void *state) { return (void *)((rt_vk_buffer_t *)state)->base; }

static void vk_buffer_destroy(void *state) {
    rt_vk_buffer_t *b = state;
    if (!b || b->magic != RT_VK_BUFFER_MAGIC) return;
    vk_raw_buffer_destroy(b->dev, b->buffer, b->memory);
    b->magic = 0;
}

static const rt_buffer_vtable_t vk_buffer_vtable = {
    .struct_size = sizeof(rt_buffer_vtable_t),
    .destroy = vk_buffer_destroy,
    .base = vk_buffer_base,
    .init_tensor = NULL,
    .set_tensor = vk_buffer_set_tensor,
    .get_tensor = vk_buffer_get_tensor,
    .memset_tensor = vk_buffer_memset_tensor,
    .cpy_tensor = vk_buffer_cpy_tensor,
    .clear = vk_buffer_clear,
};

//===--- buffer types ---===//

static rt_status_t vk_buffer_alloc(rt_vk_device_t *dev, uint32_t kind, size_t size, void *state) {
    rt_vk_buffer_t *b = state;
    *b = (rt_vk_buffer_t){ .kind = kind, .dev = dev, .size = size };
    const size_t max = dev->bufts[kind].max_size;
    if (size > max)
        return dev->host->set_error(RT_ERR_OUT_OF_MEMORY, "%s: Vulkan%u: %zu bytes exceed the "
                                    "largest buffer, %zu bytes", __func__, dev->index, size, max);
    /* Rounded to 4 bytes: fills and 32-bit shader views work in words. */
    const size_t bytes = size ? (size + 3) & ~(size_t)3 : 4;
    rt_status_t st = rt_vk_raw_buffer_create(dev, bytes, kind, &b->buffer, &b->memory);
    if (st == RT_OK && kind == RT_VK_BUFT_HOST)
        st = RT_VK_TRY(dev->host, dev->fn.vkMapMemory(dev->device, b->memory, 0, VK_WHOLE_SIZE, 0, &b->mapped));
    if (st != RT_OK) {
        vk_raw_buffer_destroy(dev, b->buffer, b->memory);
        *b = (rt_vk_buffer_t){ 0 };
        return st;
    }
    b->vk_size = bytes;
    b->base = b->mapped ? (uintptr_t)b->mapped : VK_FAKE_BASE;
    b->magic = RT_VK_BUFFER_MAGIC;
    return RT_OK;
}

static rt_status_t vk_buft_alloc_device(void *ctx, size_t size, void *state) {
    return vk_buffer_alloc(ctx, RT_VK_BUFT_DEVICE, size, state);
}

static rt_status_t vk_buft_alloc_host(void *ctx, size_t size, void *state) {
    return vk_buffer_alloc(ctx, RT_VK_BUFT_HOST, size, state);
}

void rt_vk_buffer_types_init(rt_vk_device_t *dev) {
    size_t align = dev->limits.minStorageBufferOffsetAlignment;
    if (align < 32) align = 32;
    /* Buffers may be larger than one descriptor covers: each tensor is
     * bound on its own (supports_op checks that it fits one binding). */
    const size_t max = dev->max_alloc ? dev->max_alloc : dev->limits.maxStorageBufferRange;
    for (uint32_t k = 0; k < RT_VK_N_BUFT; k++) {
        snprintf(dev->buft_names[k], sizeof dev->buft_names[k],
                 k == RT_VK_BUFT_HOST ? "Vulkan%u_Host" : "Vulkan%u", dev->index);
        dev->bufts[k] = (rt_buffer_type_desc_t){
            .struct_size = sizeof(rt_buffer_type_desc_t),
            .flags = k == RT_VK_BUFT_HOST ? RT_BUFT_FLAG_HOST : 0,
            .name = dev->buft_names[k],
            .alignment = align,
            .max_size = max,
            .buffer_state_size = sizeof(rt_vk_buffer_t),
            .ctx = dev,
            .alloc = k == RT_VK_BUFT_HOST ? vk_buft_alloc_host : vk_buft_alloc_device,
            .alloc_size = NULL,
            .buffer_vtable = &vk_buffer_vtable,
        };
    }
    dev->n_bufts = RT_VK_N_BUFT;
}

//===--- asynchronous transfers (rt_device_ext_async_t) ---===//

/* The "async" transfers run in the queue's order but are complete when
 * they return: the device has one staging buffer for every queue, so a
 * transfer through it cannot outlive the call that filled it. Ordering
 * holds because every transfer starts with a barrier on the one VkQueue,
 * after whatever the rt queue submitted; host-visible buffers are touched
 * by the CPU instead, which must first wait for the queue. */
static rt_status_t vk_async_buffer(rt_vk_queue_t *q, const rt_tensor_t *t, rt_vk_buffer_t **out_b) {
    *out_b = rt_vk_buffer_of(q->dev, t);
    if (!*out_b)
        return q->dev->host->set_error(RT_ERR_INVALID_ARGUMENT, "%s: %s is not in a buffer of "
                                       "Vulkan%u", __func__, t->name, q->dev->index);
    return (*out_b)->mapped ? rt_vk_queue_synchronize(q) : RT_OK;
}

static rt_status_t vk_set_tensor_async(void *queue, rt_tensor_t *t, const void *data,
                                       size_t offset, size_t size) {
    rt_vk_buffer_t *b;
    rt_status_t st = vk_async_buffer(queue, t, &b);
    return st == RT_OK ? vk_buffer_set_tensor(b, t, data, offset, size) : st;
}

static rt_status_t vk_get_tensor_async(void *queue, const rt_tensor_t *t, void *data,
                                       size_t offset, size_t size) {
    rt_vk_buffer_t *b;
    rt_status_t st = vk_async_buffer(queue, t, &b);
    return st == RT_OK ? vk_buffer_get_tensor(b, t, data, offset, size) : st;
}

/* Only between two buffers of one device: the copy is then one command on
 * its VkQueue, ordered after both queues' work. queue_src may be another
 * plugin's, so only the tensors say whose they are. */
static rt_status_t vk_cpy_tensor_async(void *queue_src, void *queue_dst, const rt_tensor_t *src,
                                       rt_tensor_t *dst) {
    (void)queue_src;
    const rt_vk_queue_t *qd = queue_dst;
    rt_vk_buffer_t *db = rt_vk_buffer_of(qd->dev, dst);
    if (!db || !rt_vk_buffer_of(qd->dev, src)) return RT_ERR_UNSUPPORTED;
    return vk_buffer_cpy_tensor(db, src, dst);
}

const rt_device_ext_async_t rt_vk_async_ext = {
    .header = { .struct_size = sizeof(rt_device_ext_async_t), .type = RT_EXT_DEVICE_ASYNC },
    .set_tensor_async = vk_set_tensor_async,
    .get_tensor_async = vk_get_tensor_async,
    .cpy_tensor_async = vk_cpy_tensor_async,
    .event_create = rt_vk_event_create,
    .event_destroy = rt_vk_event_destroy,
    .event_record = rt_vk_event_record,
    .event_wait = rt_vk_event_wait,
    .event_synchronize = rt_vk_event_synchronize,
};
