/* SPDX-License-Identifier: MIT */
/* device.c: the Metal plugin's start and stop, and its devices. One rt
 * device per MTLDevice of MTLCopyAllDevices (none on a machine without
 * Metal: the plugin then loads and says so), with its name, the recommended
 * working set as its memory, unified memory (Apple silicon: an integrated
 * GPU whose default buffers are Shared, host-visible, and which wraps host
 * memory without a copy), a transfer queue and every embedded shader
 * compiled (pipeline.c). Also the device table. */
#include "mtl_impl.h"

#include <stdio.h>
#include <string.h>

//===--- what ops_build.c reads ---===//

/* The shaders address a tensor in 32-bit byte offsets, and a tensor is
 * bound at most RT_MTL_BIND_ALIGN - 1 bytes before its data. */
void rt_mtl_ops_view_init(rt_vk_device_t *ops, const rt_host_t *host, size_t max_buffer) {
    memset(ops, 0, sizeof *ops);
    ops->host = host;
    const size_t span = max_buffer < UINT32_MAX ? max_buffer : UINT32_MAX;
    ops->max_binding = span - (RT_MTL_BIND_ALIGN - 1);
}

/* The Vulkan plugin's answer, less FLASH_ATTN: its shader's MSL twin has
 * never run on an Apple GPU, so the op stays with a plugin that has run it
 * (the model falls back) until tests/device/metal.sh checks it. */
bool rt_mtl_supports_op(void *device, const rt_tensor_t *node) {
    const rt_mtl_device_t *dev = device;
    if (node && node->op == RT_OP_FLASH_ATTN) return false;
    return rt_vk_supports_op((void *)&dev->ops, node);
}

//===--- properties ---===//

static void mtl_memory_query(const rt_mtl_device_t *dev, uint64_t *out_total, uint64_t *out_free) {
    const uint64_t total = rt_objc_u64(dev->device, "recommendedMaxWorkingSetSize");
    const uint64_t used = rt_objc_uint(dev->device, "currentAllocatedSize");
    *out_total = total;
    *out_free = used < total ? total - used : 0;
}

static void mtl_props_fill(rt_mtl_device_t *dev) {
    rt_device_props_t *props = &dev->props;
    props->struct_size = sizeof *props;
    props->kind = dev->unified ? RT_DEVICE_KIND_IGPU : RT_DEVICE_KIND_GPU;
    snprintf(props->name, sizeof props->name, "%s", rt_ns_cstr(rt_objc_id(dev->device, "name")));
    snprintf(props->description, sizeof props->description,
             "Metal, registry id 0x%llx, %s memory%s, buffers up to %zu MiB",
             (unsigned long long)rt_objc_u64(dev->device, "registryID"),
             dev->unified ? "unified" : "discrete",
             rt_objc_bool(dev->device, "isLowPower") ? ", low power" : "", dev->max_buffer >> 20);
    mtl_memory_query(dev, &props->memory_total, &props->memory_free);
    props->caps = RT_DEVICE_CAP_ASYNC | RT_DEVICE_CAP_EVENTS;
    if (dev->unified) props->caps |= RT_DEVICE_CAP_HOST_BUFFER | RT_DEVICE_CAP_BUFFER_FROM_HOST_PTR;
}

//===--- the device table ---===//

static rt_status_t mtl_get_props(void *device, rt_device_props_t *props) {
    rt_mtl_device_t *dev = device;
    void *pool = rt_objc_pool_push();
    mtl_memory_query(dev, &dev->props.memory_total, &dev->props.memory_free);
    rt_objc_pool_pop(pool);
    /* The core sized props; copy only what fits. */
    const size_t n = props->struct_size < sizeof *props ? props->struct_size : sizeof *props;
    const uint32_t size = props->struct_size;
    memcpy(props, &dev->props, n);
    props->struct_size = size;
    return RT_OK;
}

static uint32_t mtl_buffer_type_count(void *device) { return RT_MTL_N_BUFT; }

static const rt_buffer_type_desc_t *mtl_buffer_type(void *device, uint32_t index) {
    rt_mtl_device_t *dev = device;
    return index < RT_MTL_N_BUFT ? &dev->bufts[index] : NULL;
}

static const rt_device_vtable_t rt_mtl_device_vtable = {
    .struct_size = sizeof(rt_device_vtable_t),
    .destroy = NULL, /* the plugin's destroy releases its devices */
    .get_props = mtl_get_props,
    .buffer_type_count = mtl_buffer_type_count,
    .buffer_type = mtl_buffer_type,
    .supports_op = rt_mtl_supports_op,
    .supports_buft = NULL,
    .queue_create = rt_mtl_queue_create,
    .queue_destroy = rt_mtl_queue_destroy,
    .graph_compute = rt_mtl_graph_compute,
    .synchronize = rt_mtl_queue_synchronize,
    .next = NULL,
};

/* The table with its extension records: async transfers and events, then
 * buffers over host memory where the memory is unified. */
static void mtl_vtable_init(rt_mtl_device_t *dev) {
    dev->vtable = rt_mtl_device_vtable;
    dev->vtable.next = &rt_mtl_async_ext.header;
    if (!dev->unified) return;
    /* The async record is shared by every device: the host-pointer record
     * goes first and chains to it. */
    dev->host_ptr_ext.header.next = &rt_mtl_async_ext.header;
    dev->vtable.next = &dev->host_ptr_ext.header;
}

//===--- devices ---===//

static void mtl_device_destroy(rt_mtl_device_t *dev) {
    if (!dev) return;
    rt_mtl_pipelines_destroy(dev);
    rt_objc_release(dev->xfer_queue);
    rt_objc_release(dev->device);
    if (dev->locks_ready) {
        rt_plugin_mutex_deinit(&dev->pipe_lock);
        rt_plugin_mutex_deinit(&dev->queue_lock);
    }
    rt_vk_free(dev->host, dev->queues, dev->cap_queues * sizeof dev->queues[0]);
    rt_vk_free(dev->host, dev, sizeof *dev);
}

static rt_status_t mtl_device_locks(rt_mtl_device_t *dev) {
    if (!rt_plugin_mutex_init(&dev->pipe_lock))
        return dev->host->set_error(RT_ERR_INTERNAL, "%s: no mutex", __func__);
    if (!rt_plugin_mutex_init(&dev->queue_lock)) {
        rt_plugin_mutex_deinit(&dev->pipe_lock);
        return dev->host->set_error(RT_ERR_INTERNAL, "%s: no mutex", __func__);
    }
    dev->locks_ready = true;
    return RT_OK;
}

/* Device index: takes a reference to mtl (an id<MTLDevice>). */
static rt_status_t mtl_device_create(rt_mtl_plugin_t *p, id mtl, uint32_t index,
                                     rt_mtl_device_t **out_dev) {
    *out_dev = NULL;
    rt_mtl_device_t *dev = rt_vk_alloc(p->host, sizeof *dev);
    if (!dev) return p->host->set_error(RT_ERR_OUT_OF_MEMORY, "%s: no memory", __func__);
    dev->plugin = p;
    dev->host = p->host;
    dev->index = index;
    dev->device = rt_objc_retain(mtl);
    dev->unified = rt_objc_bool(mtl, "hasUnifiedMemory");
    dev->max_buffer = rt_objc_uint(mtl, "maxBufferLength");
    rt_mtl_ops_view_init(&dev->ops, p->host, dev->max_buffer);
    mtl_props_fill(dev);
    rt_mtl_buffer_types_init(dev);
    mtl_vtable_init(dev);
    rt_status_t st = mtl_device_locks(dev);
    if (st == RT_OK) {
        dev->xfer_queue = rt_objc_id(mtl, "newCommandQueue");
        if (!dev->xfer_queue)
            st = p->host->set_error(RT_ERR_DEVICE, "%s: metal%u: no command queue", __func__, index);
    }
    if (st == RT_OK) st = rt_mtl_libraries_create(dev);
    if (st != RT_OK) {
        mtl_device_destroy(dev);
        return st;
    }
    *out_dev = dev;
    return RT_OK;
}

/* Adds a device for each MTLDevice in the array; one that fails is left
 * out with its reason logged, and the others stay. */
static rt_status_t mtl_devices_add(rt_mtl_plugin_t *p, id all) {
    const NSUInteger n = rt_objc_uint(all, "count");
    if (n == 0) {
        snprintf(p->reason, sizeof p->reason, "no Metal devices (MTLCopyAllDevices gave none)");
        return RT_OK;
    }
    p->devices = rt_vk_alloc(p->host, n * sizeof p->devices[0]);
    if (!p->devices) return p->host->set_error(RT_ERR_OUT_OF_MEMORY, "%s: no memory", __func__);
    p->cap_devices = (uint32_t)n;
    for (NSUInteger i = 0; i < n; i++) {
        id mtl = RT_OBJC(id (*)(id, SEL, NSUInteger), all, "objectAtIndex:", i);
        rt_mtl_device_t *dev = NULL;
        const rt_status_t st = mtl_device_create(p, mtl, p->n_devices, &dev);
        if (st == RT_OK) {
            p->devices[p->n_devices++] = dev;
        } else {
            snprintf(p->reason, sizeof p->reason, "Metal device %lu left out (status %d)",
                     (unsigned long)i, (int)st);
            p->host->log(RT_LOG_WARN, "metal: %s", p->reason);
        }
    }
    return RT_OK;
}

rt_status_t rt_mtl_plugin_start(rt_mtl_plugin_t *p) {
    void *pool = rt_objc_pool_push();
    id all = MTLCopyAllDevices();
    rt_status_t st = RT_OK;
    if (all) st = mtl_devices_add(p, all);
    else snprintf(p->reason, sizeof p->reason, "no Metal devices (MTLCopyAllDevices gave none)");
    rt_objc_release(all);
    rt_objc_pool_pop(pool);
    if (st == RT_OK && p->n_devices == 0)
        p->host->log(RT_LOG_INFO, "metal: 0 devices: %s", p->reason[0] ? p->reason : "none found");
    return st;
}

void rt_mtl_plugin_stop(rt_mtl_plugin_t *p) {
    void *pool = rt_objc_pool_push();
    for (uint32_t i = 0; i < p->n_devices; i++) mtl_device_destroy(p->devices[i]);
    rt_objc_pool_pop(pool);
    rt_vk_free(p->host, p->devices, p->cap_devices * sizeof p->devices[0]);
    p->devices = NULL;
    p->n_devices = p->cap_devices = 0;
}
