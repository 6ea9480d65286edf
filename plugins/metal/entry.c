/* SPDX-License-Identifier: MIT */
/* entry.c: the Metal plugin's one exported symbol. Version negotiation and
 * the plugin table; starting and stopping the plugin (devices, their
 * libraries) is device.c's. */
#include "mtl_impl.h"

static rt_status_t mtl_plugin_create(const rt_host_t *host, void **out_plugin) {
    *out_plugin = NULL;
    rt_mtl_plugin_t *p = rt_vk_alloc(host, sizeof *p);
    if (!p) return host->set_error(RT_ERR_OUT_OF_MEMORY, "%s: no memory for the plugin", __func__);
    p->host = host;
    const rt_status_t st = rt_mtl_plugin_start(p);
    if (st != RT_OK) {
        rt_mtl_plugin_stop(p);
        rt_vk_free(host, p, sizeof *p);
        return st;
    }
    *out_plugin = p;
    return RT_OK;
}

static void mtl_plugin_destroy(void *plugin) {
    rt_mtl_plugin_t *p = plugin;
    if (!p) return;
    const rt_host_t *host = p->host;
    rt_mtl_plugin_stop(p);
    rt_vk_free(host, p, sizeof *p);
}

static uint32_t mtl_plugin_device_count(void *plugin) {
    return ((const rt_mtl_plugin_t *)plugin)->n_devices;
}

static rt_status_t mtl_plugin_device_get(void *plugin, uint32_t index, void **out_device,
                                         const rt_device_vtable_t **out_vtable) {
    rt_mtl_plugin_t *p = plugin;
    *out_device = NULL;
    *out_vtable = NULL;
    if (index >= p->n_devices)
        return p->host->set_error(RT_ERR_INVALID_ARGUMENT, "%s: device %u of %u", __func__,
                                  index, p->n_devices);
    *out_device = p->devices[index];
    *out_vtable = &p->devices[index]->vtable;
    return RT_OK;
}

static const rt_plugin_vtable_t mtl_plugin_vtable = {
    .struct_size = sizeof(rt_plugin_vtable_t),
    .destroy = mtl_plugin_destroy,
    .create = mtl_plugin_create,
    .device_count = mtl_plugin_device_count,
    .device_get = mtl_plugin_device_get,
};

/* Not unload-safe: Metal.framework keeps threads and caches of its own. */
static const rt_plugin_t mtl_plugin = {
    .struct_size = sizeof(rt_plugin_t),
    .abi_version = RT_ABI_VERSION,
    .name = "metal",
    .description = "Metal compute (Apple GPUs; the Vulkan plugin's kernels translated to MSL)",
    .version = "0.1.0",
    .flags = 0,
    .next = NULL,
    .vtable = &mtl_plugin_vtable,
};

RT_PLUGIN_EXPORT const rt_plugin_t *rt_plugin_query(uint32_t max_abi, const rt_host_t *host) {
    (void)host;
    if (RT_ABI_VERSION_GET_MAJOR(max_abi) != RT_ABI_VERSION_MAJOR) return NULL;
    if (max_abi < RT_ABI_VERSION) return NULL; /* our structs are this version's */
    return &mtl_plugin;
}
