/* SPDX-License-Identifier: MIT */
/* device.c: the Vulkan plugin's start and stop, and its devices. Takes the
 * process's instance (instance.c; without a loader or a device the plugin
 * loads and reports zero devices, saying why) and makes one rt device per
 * physical device that has a compute queue and 16-bit storage buffers.
 * Also the device table, device properties (kind, memory with
 * VK_EXT_memory_budget, PCI bus id with VK_EXT_pci_bus_info, UUID) and the
 * plugin's error helpers (memory.c has its memory helpers). */
#include "vk_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//===--- errors and memory ---===//

const char *rt_vk_result_name(VkResult r) {
    switch (r) {
    case VK_SUCCESS: return "VK_SUCCESS";
    case VK_NOT_READY: return "VK_NOT_READY";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    case VK_INCOMPLETE: return "VK_INCOMPLETE";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED: return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_FRAGMENTED_POOL: return "VK_ERROR_FRAGMENTED_POOL";
    case VK_ERROR_OUT_OF_POOL_MEMORY: return "VK_ERROR_OUT_OF_POOL_MEMORY";
    default: return "VK_ERROR_UNKNOWN";
    }
}

/* The rt status a VkResult failure maps to: memory exhaustion is
 * RT_ERR_OUT_OF_MEMORY, anything else the driver's failure. */
static rt_status_t vk_result_status(VkResult r) {
    const bool oom = r == VK_ERROR_OUT_OF_HOST_MEMORY || r == VK_ERROR_OUT_OF_DEVICE_MEMORY ||
                     r == VK_ERROR_OUT_OF_POOL_MEMORY || r == VK_ERROR_FRAGMENTED_POOL;
    return oom ? RT_ERR_OUT_OF_MEMORY : RT_ERR_DEVICE;
}

rt_status_t rt_vk_status(const rt_host_t *host, VkResult r, const char *func, const char *what) {
    if (r == VK_SUCCESS) return RT_OK;
    return host->set_error(vk_result_status(r), "%s: %s: %s (%d)", func, what,
                           rt_vk_result_name(r), (int)r);
}

//===--- start-up failures ---===//

/* Start-up failures: the message is kept in p->reason, to be logged when
 * the plugin ends up without devices, and set as the thread's error. */
static rt_status_t vk_note(rt_vk_plugin_t *p, rt_status_t st, const char *fmt, ...) RT_PRINTF(3, 4);
static rt_status_t vk_note(rt_vk_plugin_t *p, rt_status_t st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->reason, sizeof p->reason, fmt, ap);
    va_end(ap);
    return p->host->set_error(st, "%s", p->reason);
}

static rt_status_t vk_note_result(rt_vk_plugin_t *p, VkResult r, const char *func,
                                  const char *what) {
    if (r == VK_SUCCESS) return RT_OK;
    return vk_note(p, vk_result_status(r), "%s: %s: %s (%d)", func, what, rt_vk_result_name(r),
                   (int)r);
}
#define VK_NOTE_TRY(p, call) vk_note_result((p), (call), __func__, #call)

//===--- physical devices ---===//

static bool vk_has_extension(const VkExtensionProperties *ext, uint32_t n, const char *name) {
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(ext[i].extensionName, name) == 0) return true;
    return false;
}

/* Which optional extensions the physical device has. */
static void vk_device_extensions(rt_vk_device_t *dev, bool *out_pci) {
    const rt_vk_instance_fns_t *fn = &dev->plugin->vk->fn;
    uint32_t n = 0;
    *out_pci = false;
    if (fn->vkEnumerateDeviceExtensionProperties(dev->phys, NULL, &n, NULL) != VK_SUCCESS || !n)
        return;
    VkExtensionProperties *ext = rt_vk_alloc(dev->host, n * sizeof ext[0]);
    if (!ext) return;
    if (fn->vkEnumerateDeviceExtensionProperties(dev->phys, NULL, &n, ext) == VK_SUCCESS) {
        dev->has_budget = vk_has_extension(ext, n, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
        *out_pci = vk_has_extension(ext, n, VK_EXT_PCI_BUS_INFO_EXTENSION_NAME);
        /* Spelled out: older headers do not name it. */
        dev->tune.coop_matrix = vk_has_extension(ext, n, "VK_KHR_cooperative_matrix");
    }
    rt_vk_free(dev->host, ext, n * sizeof ext[0]);
}

/* The first queue family with compute, preferring one without graphics
 * (a dedicated compute queue). UINT32_MAX when none. */
static uint32_t vk_compute_family(const rt_vk_device_t *dev) {
    const rt_vk_instance_fns_t *fn = &dev->plugin->vk->fn;
    VkQueueFamilyProperties fam[32];
    uint32_t n = 32, best = UINT32_MAX;
    fn->vkGetPhysicalDeviceQueueFamilyProperties(dev->phys, &n, fam);
    for (uint32_t i = 0; i < n; i++) {
        if (!(fam[i].queueFlags & VK_QUEUE_COMPUTE_BIT) || fam[i].queueCount == 0) continue;
        if (best == UINT32_MAX || !(fam[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) best = i;
        if (!(fam[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) break;
    }
    return best;
}

static rt_device_kind_t vk_kind(VkPhysicalDeviceType type) {
    switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return RT_DEVICE_KIND_GPU;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return RT_DEVICE_KIND_IGPU;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return RT_DEVICE_KIND_SOFTWARE;
    default: return RT_DEVICE_KIND_ACCELERATOR;
    }
}

/* Name, kind, description, UUID and PCI bus id, from properties2. The
 * driver's name comes from VkPhysicalDeviceDriverProperties (Vulkan 1.2). */
static void vk_props_fill(rt_vk_device_t *dev, bool has_pci) {
    const rt_vk_instance_fns_t *fn = &dev->plugin->vk->fn;
    VkPhysicalDeviceProperties base;
    fn->vkGetPhysicalDeviceProperties(dev->phys, &base);
    const bool has_driver = dev->plugin->vk->api_version >= VK_API_VERSION_1_2 &&
                            base.apiVersion >= VK_API_VERSION_1_2;
    VkPhysicalDevicePCIBusInfoPropertiesEXT pci = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PCI_BUS_INFO_PROPERTIES_EXT,
    };
    VkPhysicalDeviceDriverProperties drv = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES,
        .pNext = has_pci ? &pci : NULL,
    };
    VkPhysicalDeviceMaintenance3Properties m3 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES,
        .pNext = has_driver ? (void *)&drv : (void *)(has_pci ? &pci : NULL),
    };
    VkPhysicalDeviceIDProperties id = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES,
        .pNext = &m3,
    };
    VkPhysicalDeviceSubgroupProperties sub = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES,
        .pNext = &id,
    };
    VkPhysicalDeviceProperties2 p2 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
        .pNext = &sub,
    };
    fn->vkGetPhysicalDeviceProperties2(dev->phys, &p2);
    const VkPhysicalDeviceProperties *pp = &p2.properties;
    rt_device_props_t *props = &dev->props;
    props->struct_size = sizeof *props;
    props->kind = vk_kind(pp->deviceType);
    /* deviceName holds up to 256 bytes; rt keeps the first 63. */
    memcpy(props->name, pp->deviceName, sizeof props->name - 1);
    props->name[sizeof props->name - 1] = '\0';
    snprintf(props->description, sizeof props->description,
             "Vulkan %u.%u.%u, vendor 0x%04x device 0x%04x, driver %.32s %.64s",
             VK_API_VERSION_MAJOR(pp->apiVersion), VK_API_VERSION_MINOR(pp->apiVersion),
             VK_API_VERSION_PATCH(pp->apiVersion), pp->vendorID, pp->deviceID,
             has_driver ? drv.driverName : "", has_driver ? drv.driverInfo : "");
    memcpy(props->uuid, id.deviceUUID, sizeof props->uuid);
    props->has_uuid = 1;
    if (has_pci)
        snprintf(props->pci_bus_id, sizeof props->pci_bus_id, "%04x:%02x:%02x.%x",
                 pci.pciDomain, pci.pciBus, pci.pciDevice, pci.pciFunction);
    props->caps = RT_DEVICE_CAP_HOST_BUFFER | RT_DEVICE_CAP_ASYNC | RT_DEVICE_CAP_EVENTS;
    dev->limits = pp->limits;
    dev->max_alloc = m3.maxMemoryAllocationSize;
    dev->bind_align = pp->limits.minStorageBufferOffsetAlignment < 4
                          ? 4 : pp->limits.minStorageBufferOffsetAlignment;
    dev->max_binding = pp->limits.maxStorageBufferRange - (dev->bind_align - 1);
    /* A smaller limit, for tests: weights split into chunks of rows
     * (ops_chunk.c) without allocating hundreds of megabytes. */
    const char *env = getenv("RT_VULKAN_MAX_BINDING");
    const unsigned long long lim = env ? strtoull(env, NULL, 10) : 0;
    if (lim >= 4096 && lim < dev->max_binding) dev->max_binding = (size_t)lim;
    dev->tune.subgroup_size = sub.subgroupSize;
    dev->tune.subgroup_arith = (sub.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                               (sub.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT);
    rt_vk_tuning_choose(dev);
}

/* Total and free bytes of the device-local heaps, now. */
static void vk_memory_query(const rt_vk_device_t *dev, uint64_t *out_total, uint64_t *out_free) {
    const rt_vk_instance_fns_t *fn = &dev->plugin->vk->fn;
    VkPhysicalDeviceMemoryBudgetPropertiesEXT budget = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT,
    };
    VkPhysicalDeviceMemoryProperties2 m2 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2,
        .pNext = dev->has_budget ? &budget : NULL,
    };
    fn->vkGetPhysicalDeviceMemoryProperties2(dev->phys, &m2);
    uint64_t total = 0, avail = 0;
    for (uint32_t i = 0; i < m2.memoryProperties.memoryHeapCount; i++) {
        const VkMemoryHeap *h = &m2.memoryProperties.memoryHeaps[i];
        if (!(h->flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)) continue;
        total += h->size;
        if (!dev->has_budget) avail += h->size;
        else if (budget.heapBudget[i] > budget.heapUsage[i])
            avail += budget.heapBudget[i] - budget.heapUsage[i];
    }
    *out_total = total;
    *out_free = avail;
}

/* 16-bit storage buffers are required: F16, BF16 and the quantised blocks
 * are read and written through 16-bit views of the buffers. */
static rt_status_t vk_device_features(const rt_vk_device_t *dev,
                                      VkPhysicalDevice16BitStorageFeatures *out) {
    const rt_vk_instance_fns_t *fn = &dev->plugin->vk->fn;
    *out = (VkPhysicalDevice16BitStorageFeatures){
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES,
    };
    VkPhysicalDeviceFeatures2 f2 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
        .pNext = out,
    };
    fn->vkGetPhysicalDeviceFeatures2(dev->phys, &f2);
    if (out->storageBuffer16BitAccess) {
        *out = (VkPhysicalDevice16BitStorageFeatures){
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES,
            .storageBuffer16BitAccess = VK_TRUE,
        };
        return RT_OK;
    }
    return vk_note(dev->plugin, RT_ERR_UNSUPPORTED, "no storageBuffer16BitAccess");
}

static rt_status_t vk_device_fns_load(rt_vk_device_t *dev) {
    const PFN_vkGetDeviceProcAddr get = dev->plugin->vk->fn.vkGetDeviceProcAddr;
    rt_vk_device_fns_t *fn = &dev->fn;
    const char *missing = NULL;
    bool ok = true;
#define X(name) RT_VK_LOAD(fn, get, dev->device, name)
    RT_VK_DEVICE_FNS(X)
#undef X
    if (ok) return RT_OK;
    return vk_note(dev->plugin, RT_ERR_UNSUPPORTED, "the driver lacks %s", missing);
}

static rt_status_t vk_logical_device_create(rt_vk_device_t *dev) {
    VkPhysicalDevice16BitStorageFeatures f16;
    rt_status_t st = vk_device_features(dev, &f16);
    if (st != RT_OK) return st;
    const float priority = 1.0f;
    const VkDeviceQueueCreateInfo qinfo = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
        .queueFamilyIndex = dev->queue_family,
        .queueCount = 1,
        .pQueuePriorities = &priority,
    };
    const VkDeviceCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
        .pNext = &f16,
        .queueCreateInfoCount = 1,
        .pQueueCreateInfos = &qinfo,
    };
    st = VK_NOTE_TRY(dev->plugin, dev->plugin->vk->fn.vkCreateDevice(dev->phys, &info, NULL, &dev->device));
    if (st == RT_OK) st = vk_device_fns_load(dev);
    if (st == RT_OK) dev->fn.vkGetDeviceQueue(dev->device, dev->queue_family, 0, &dev->queue);
    dev->ready = st == RT_OK;
    return st;
}

static rt_status_t vk_device_locks_init(rt_vk_device_t *dev) {
    if (!rt_plugin_mutex_init(&dev->submit_lock)) goto fail0;
    if (!rt_plugin_mutex_init(&dev->xfer_lock)) goto fail1;
    if (!rt_plugin_mutex_init(&dev->pipe_lock)) goto fail2;
    dev->locks_ready = true;
    return RT_OK;
fail2:
    rt_plugin_mutex_deinit(&dev->xfer_lock);
fail1:
    rt_plugin_mutex_deinit(&dev->submit_lock);
fail0:
    return vk_note(dev->plugin, RT_ERR_OUT_OF_MEMORY, "no mutex");
}

/* Undoes as much of vk_device_create as got done. */
static void vk_device_destroy(rt_vk_device_t *dev) {
    if (!dev) return;
    if (dev->ready) {
        dev->fn.vkDeviceWaitIdle(dev->device);
        rt_vk_pipelines_destroy(dev);
        rt_vk_device_transfer_deinit(dev);
    }
    /* vkDestroyDevice is loaded first, so it is there whenever a device is. */
    if (dev->device && dev->fn.vkDestroyDevice) dev->fn.vkDestroyDevice(dev->device, NULL);
    if (dev->locks_ready) {
        rt_plugin_mutex_deinit(&dev->pipe_lock);
        rt_plugin_mutex_deinit(&dev->xfer_lock);
        rt_plugin_mutex_deinit(&dev->submit_lock);
    }
    rt_vk_free(dev->host, dev, sizeof *dev);
}

static rt_status_t vk_device_create(rt_vk_plugin_t *p, VkPhysicalDevice phys,
                                    rt_vk_device_t **out_dev) {
    *out_dev = NULL;
    rt_vk_device_t *dev = rt_vk_alloc(p->host, sizeof *dev);
    if (!dev) return vk_note(p, RT_ERR_OUT_OF_MEMORY, "no memory for a device");
    dev->plugin = p;
    dev->host = p->host;
    dev->phys = phys;
    dev->index = p->n_devices;
    bool has_pci;
    vk_device_extensions(dev, &has_pci);
    vk_props_fill(dev, has_pci);
    p->vk->fn.vkGetPhysicalDeviceMemoryProperties(phys, &dev->mem_props);
    dev->queue_family = vk_compute_family(dev);
    rt_status_t st = RT_OK;
    if (dev->queue_family == UINT32_MAX)
        st = vk_note(p, RT_ERR_UNSUPPORTED, "no compute queue");
    if (st == RT_OK) st = vk_device_locks_init(dev);
    if (st == RT_OK) st = vk_logical_device_create(dev);
    if (st != RT_OK) {
        vk_device_destroy(dev);
        return st;
    }
    rt_vk_buffer_types_init(dev);
    *out_dev = dev;
    return RT_OK;
}

static rt_status_t vk_devices_create(rt_vk_plugin_t *p) {
    uint32_t n = 0;
    rt_status_t st = VK_NOTE_TRY(p, p->vk->fn.vkEnumeratePhysicalDevices(p->vk->instance, &n, NULL));
    if (st != RT_OK || n == 0) return st;
    VkPhysicalDevice *phys = rt_vk_alloc(p->host, n * sizeof phys[0]);
    p->devices = rt_vk_alloc(p->host, n * sizeof p->devices[0]);
    if (p->devices) p->cap_devices = n;
    if (!phys || !p->devices) st = vk_note(p, RT_ERR_OUT_OF_MEMORY, "no memory for %u devices", n);
    if (st == RT_OK) st = VK_NOTE_TRY(p, p->vk->fn.vkEnumeratePhysicalDevices(p->vk->instance, &n, phys));
    for (uint32_t i = 0; st == RT_OK && i < n; i++) {
        rt_vk_device_t *dev;
        VkPhysicalDeviceProperties pp;
        p->vk->fn.vkGetPhysicalDeviceProperties(phys[i], &pp);
        if (pp.apiVersion < VK_API_VERSION_1_1) {
            p->host->log(RT_LOG_INFO, "vulkan: skipping %s: Vulkan 1.0 only", pp.deviceName);
            continue;
        }
        if (vk_device_create(p, phys[i], &dev) == RT_OK) p->devices[p->n_devices++] = dev;
        else p->host->log(RT_LOG_WARN, "vulkan: skipping %s: %s", pp.deviceName, p->reason);
    }
    rt_vk_free(p->host, phys, n * sizeof phys[0]);
    return st;
}

/* Starts the plugin. A missing loader, instance or device is not an error:
 * the plugin then has zero devices and logs why. */
rt_status_t rt_vk_plugin_start(rt_vk_plugin_t *p) {
    p->vk = rt_vk_instance_get();
    rt_status_t st = p->vk->status;
    if (st != RT_OK) snprintf(p->reason, sizeof p->reason, "%s", p->vk->reason);
    if (st == RT_OK) st = vk_devices_create(p);
    if (p->n_devices == 0)
        p->host->log(RT_LOG_INFO, "vulkan: no devices: %s",
                     st != RT_OK ? p->reason : "no usable Vulkan device");
    return st == RT_ERR_OUT_OF_MEMORY ? st : RT_OK;
}

void rt_vk_plugin_stop(rt_vk_plugin_t *p) {
    for (uint32_t i = 0; i < p->n_devices; i++) vk_device_destroy(p->devices[i]);
    rt_vk_free(p->host, p->devices, p->cap_devices * sizeof p->devices[0]);
    p->devices = NULL;
    p->n_devices = p->cap_devices = 0;
    /* The instance is the process's: see instance.c. */
}

//===--- the device table ---===//

uint32_t rt_vk_memory_type(const rt_vk_device_t *dev, uint32_t bits, VkMemoryPropertyFlags want,
                           VkMemoryPropertyFlags prefer) {
    uint32_t found = UINT32_MAX;
    for (uint32_t i = 0; i < dev->mem_props.memoryTypeCount; i++) {
        const VkMemoryPropertyFlags f = dev->mem_props.memoryTypes[i].propertyFlags;
        if (!(bits & (1u << i)) || (f & want) != want) continue;
        if ((f & prefer) == prefer) return i;
        if (found == UINT32_MAX) found = i;
    }
    return found;
}

static rt_status_t vk_device_get_props(void *device, rt_device_props_t *props) {
    rt_vk_device_t *dev = device;
    rt_device_props_t now = dev->props;
    vk_memory_query(dev, &now.memory_total, &now.memory_free);
    const size_t size = props->struct_size < sizeof now ? props->struct_size : sizeof now;
    const size_t skip = sizeof props->struct_size;
    if (size > skip) memcpy((char *)props + skip, (const char *)&now + skip, size - skip);
    return RT_OK;
}

static uint32_t vk_device_buffer_type_count(void *device) {
    return ((const rt_vk_device_t *)device)->n_bufts;
}

static const rt_buffer_type_desc_t *vk_device_buffer_type(void *device, uint32_t index) {
    const rt_vk_device_t *dev = device;
    return index < dev->n_bufts ? &dev->bufts[index] : NULL;
}

const rt_device_vtable_t rt_vk_device_vtable = {
    .struct_size = sizeof(rt_device_vtable_t),
    .destroy = NULL, /* the plugin's destroy releases its devices */
    .get_props = vk_device_get_props,
    .buffer_type_count = vk_device_buffer_type_count,
    .buffer_type = vk_device_buffer_type,
    .supports_op = rt_vk_supports_op,
    .supports_buft = NULL, /* only our own buffer types */
    .queue_create = rt_vk_queue_create,
    .queue_destroy = rt_vk_queue_destroy,
    .graph_compute = rt_vk_graph_compute,
    .synchronize = rt_vk_queue_synchronize,
    .next = &rt_vk_async_ext.header,
};
