/* SPDX-License-Identifier: MIT */
/* queue.c: rt queues of the Vulkan plugin. Each owns a command buffer that
 * holds one whole graph, the fence that says when it is done, and the
 * descriptor pool its dispatches draw from (sized for the largest graph so
 * far, reset before each). graph_compute (ops.c) records and submits
 * without waiting; synchronize waits on the fence. Events are fences of
 * their own, submitted with no work. */
#include "vk_impl.h"

#include <stdlib.h>
#include <string.h>

rt_status_t rt_vk_queue_create(void *device, const rt_queue_options_t *options, void **out_queue) {
    (void)options; /* nothing to tune: threads are the driver's business */
    rt_vk_device_t *dev = device;
    *out_queue = NULL;
    rt_vk_queue_t *q = rt_vk_alloc(dev->host, sizeof *q);
    if (!q) return dev->host->set_error(RT_ERR_OUT_OF_MEMORY, "%s: no memory", __func__);
    q->dev = dev;
    const VkCommandPoolCreateInfo pinfo = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
        .queueFamilyIndex = dev->queue_family,
    };
    const VkFenceCreateInfo finfo = { .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO };
    rt_status_t st = RT_VK_TRY(dev->host, dev->fn.vkCreateCommandPool(dev->device, &pinfo, NULL, &q->pool));
    const VkCommandBufferAllocateInfo cinfo = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = q->pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1,
    };
    if (st == RT_OK) st = RT_VK_TRY(dev->host, dev->fn.vkAllocateCommandBuffers(dev->device, &cinfo, &q->cmd));
    if (st == RT_OK) st = RT_VK_TRY(dev->host, dev->fn.vkCreateFence(dev->device, &finfo, NULL, &q->fence));
    if (st != RT_OK) {
        rt_vk_queue_destroy(q);
        return st;
    }
    *out_queue = q;
    return RT_OK;
}

/* What a profile of a decode step needs first: how many dispatches and
 * barriers each graph costs (a dispatch is tens of microseconds on
 * lavapipe, a barrier drains the GPU). */
static void vk_queue_stats_log(const rt_vk_queue_t *q) {
    const char *env = getenv("RT_VULKAN_STATS");
    if (!env || !*env || strcmp(env, "0") == 0 || q->n_graphs == 0) return;
    q->dev->host->log(RT_LOG_INFO, "vulkan%u: %llu graphs, %llu dispatches (%.1f a graph), "
                      "%llu barriers (%.1f a graph)", q->dev->index,
                      (unsigned long long)q->n_graphs, (unsigned long long)q->n_dispatches,
                      (double)q->n_dispatches / (double)q->n_graphs,
                      (unsigned long long)q->n_barriers,
                      (double)q->n_barriers / (double)q->n_graphs);
}

void rt_vk_queue_destroy(void *queue) {
    rt_vk_queue_t *q = queue;
    if (!q) return;
    rt_vk_device_t *dev = q->dev;
    vk_queue_stats_log(q);
    if (q->pending) dev->fn.vkWaitForFences(dev->device, 1, &q->fence, VK_TRUE, UINT64_MAX);
    if (q->desc_pool) dev->fn.vkDestroyDescriptorPool(dev->device, q->desc_pool, NULL);
    if (q->scratch) dev->fn.vkDestroyBuffer(dev->device, q->scratch, NULL);
    if (q->scratch_mem) dev->fn.vkFreeMemory(dev->device, q->scratch_mem, NULL);
    if (q->fence) dev->fn.vkDestroyFence(dev->device, q->fence, NULL);
    if (q->pool) dev->fn.vkDestroyCommandPool(dev->device, q->pool, NULL); /* frees cmd */
    rt_vk_free(dev->host, q->reads.items, q->reads.cap * sizeof q->reads.items[0]);
    rt_vk_free(dev->host, q->writes.items, q->writes.cap * sizeof q->writes.items[0]);
    rt_vk_free(dev->host, q, sizeof *q);
}

rt_status_t rt_vk_queue_synchronize(void *queue) {
    rt_vk_queue_t *q = queue;
    if (!q->pending) return RT_OK;
    rt_vk_device_t *dev = q->dev;
    const VkResult r = dev->fn.vkWaitForFences(dev->device, 1, &q->fence, VK_TRUE, UINT64_MAX);
    dev->fn.vkResetFences(dev->device, 1, &q->fence);
    q->pending = false;
    return RT_VK_TRY(dev->host, r);
}

/* A pool for at least n_sets sets of RT_VK_N_BIND + 1 storage buffers. */
static rt_status_t vk_desc_pool_reserve(rt_vk_queue_t *q, uint32_t n_sets) {
    rt_vk_device_t *dev = q->dev;
    if (q->desc_pool && q->desc_cap >= n_sets)
        return RT_VK_TRY(dev->host, dev->fn.vkResetDescriptorPool(dev->device, q->desc_pool, 0));
    uint32_t cap = q->desc_cap ? q->desc_cap : 64;
    while (cap < n_sets) cap *= 2;
    if (q->desc_pool) dev->fn.vkDestroyDescriptorPool(dev->device, q->desc_pool, NULL);
    q->desc_pool = VK_NULL_HANDLE;
    q->desc_cap = 0;
    const VkDescriptorPoolSize size = {
        .type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
        .descriptorCount = cap * (RT_VK_N_BIND + 1), /* the extra binding too */
    };
    const VkDescriptorPoolCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
        .maxSets = cap,
        .poolSizeCount = 1,
        .pPoolSizes = &size,
    };
    rt_status_t st = RT_VK_TRY(dev->host, dev->fn.vkCreateDescriptorPool(dev->device, &info, NULL, &q->desc_pool));
    if (st == RT_OK) q->desc_cap = cap;
    return st;
}

/* A scratch buffer of at least size bytes (the last submission is done:
 * the old one is idle). */
static rt_status_t vk_scratch_reserve(rt_vk_queue_t *q, size_t size) {
    rt_vk_device_t *dev = q->dev;
    if (size <= q->scratch_size) return RT_OK;
    if (q->scratch) dev->fn.vkDestroyBuffer(dev->device, q->scratch, NULL);
    if (q->scratch_mem) dev->fn.vkFreeMemory(dev->device, q->scratch_mem, NULL);
    q->scratch = VK_NULL_HANDLE;
    q->scratch_mem = VK_NULL_HANDLE;
    q->scratch_size = 0;
    const rt_status_t st = rt_vk_raw_buffer_create(dev, size, RT_VK_BUFT_DEVICE, &q->scratch, &q->scratch_mem);
    if (st == RT_OK) q->scratch_size = size;
    return st;
}

rt_status_t rt_vk_queue_begin(rt_vk_queue_t *q, uint32_t n_sets, size_t scratch) {
    rt_status_t st = rt_vk_queue_synchronize(q);
    if (st == RT_OK) st = vk_desc_pool_reserve(q, n_sets);
    if (st == RT_OK) st = vk_scratch_reserve(q, scratch);
    const VkCommandBufferBeginInfo info = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
    };
    if (st == RT_OK) st = RT_VK_TRY(q->dev->host, q->dev->fn.vkBeginCommandBuffer(q->cmd, &info));
    q->reads.n = q->writes.n = 0;
    return st;
}

//===--- events ---===//

/* An event is a fence submitted with no work: Vulkan signals it once
 * everything submitted to the VkQueue before it is done, a superset of the
 * rt queue's work (every rt queue of a device shares the one VkQueue). */
typedef struct rt_vk_event {
    rt_vk_device_t *dev;
    VkFence fence;
    bool recorded;                /* submitted since creation */
} rt_vk_event_t;

rt_status_t rt_vk_event_create(void *device, void **out_event) {
    rt_vk_device_t *dev = device;
    *out_event = NULL;
    rt_vk_event_t *e = rt_vk_alloc(dev->host, sizeof *e);
    if (!e) return dev->host->set_error(RT_ERR_OUT_OF_MEMORY, "%s: no memory", __func__);
    e->dev = dev;
    const VkFenceCreateInfo info = { .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO };
    const rt_status_t st = RT_VK_TRY(dev->host, dev->fn.vkCreateFence(dev->device, &info, NULL, &e->fence));
    if (st != RT_OK) {
        rt_vk_free(dev->host, e, sizeof *e);
        return st;
    }
    *out_event = e;
    return RT_OK;
}

void rt_vk_event_destroy(void *event) {
    rt_vk_event_t *e = event;
    if (!e) return;
    rt_vk_device_t *dev = e->dev;
    /* A fence may not be destroyed while its submission is pending. */
    if (e->recorded) dev->fn.vkWaitForFences(dev->device, 1, &e->fence, VK_TRUE, UINT64_MAX);
    dev->fn.vkDestroyFence(dev->device, e->fence, NULL);
    rt_vk_free(dev->host, e, sizeof *e);
}

rt_status_t rt_vk_event_synchronize(void *event) {
    rt_vk_event_t *e = event;
    if (!e->recorded) return RT_OK; /* nothing to wait for */
    rt_vk_device_t *dev = e->dev;
    return RT_VK_TRY(dev->host, dev->fn.vkWaitForFences(dev->device, 1, &e->fence, VK_TRUE, UINT64_MAX));
}

rt_status_t rt_vk_event_record(void *event, void *queue) {
    rt_vk_event_t *e = event;
    const rt_vk_queue_t *q = queue;
    rt_vk_device_t *dev = e->dev;
    if (q->dev != dev)
        return dev->host->set_error(RT_ERR_INVALID_ARGUMENT, "%s: an event of Vulkan%u recorded "
                                    "on a queue of Vulkan%u", __func__, dev->index, q->dev->index);
    /* A pending fence may not be reset: the earlier mark must pass first. */
    rt_status_t st = rt_vk_event_synchronize(e);
    if (st == RT_OK) st = RT_VK_TRY(dev->host, dev->fn.vkResetFences(dev->device, 1, &e->fence));
    if (st != RT_OK) return st;
    rt_plugin_mutex_lock(&dev->submit_lock);
    const VkResult r = dev->fn.vkQueueSubmit(dev->queue, 0, NULL, e->fence);
    rt_plugin_mutex_unlock(&dev->submit_lock);
    e->recorded = r == VK_SUCCESS;
    return RT_VK_TRY(dev->host, r);
}

/* A host wait: with one VkQueue per device, a GPU-side wait would need a
 * semaphore between submissions that this plugin does not chain, and the
 * event usually marks work the host waits for next anyway. */
rt_status_t rt_vk_event_wait(void *queue, void *event) {
    (void)queue;
    return rt_vk_event_synchronize(event);
}
