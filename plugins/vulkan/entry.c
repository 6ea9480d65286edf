/* SPDX-License-Identifier: MIT */
/* entry.c: the Vulkan plugin's one exported symbol. Version negotiation and
 * the plugin table; starting and stopping the plugin (loader, instance,
 * devices) is device.c's. */
#include "vk_impl.h"

static rt_status_t vk_plugin_create(const rt_host_t *host, void **out_plugin) {
    *out_plugin = NULL;
    rt_vk_plugin_t *p = rt_vk_alloc(host, sizeof *p);
    if (!p) return host->set_error(RT_ERR_OUT_OF_MEMORY, "%s: no memory for the plugin", __func__);
    p->host = host;
    rt_status_t st = rt_vk_plugin_start(p);
    if (st != RT_OK) {
        rt_vk_plugin_stop(p);
        rt_vk_free(host, p, sizeof *p);
        return st;
    }
    *out_plugin = p;
    return RT_OK;
}

static void vk_plugin_destroy(void *plugin) {
    rt_vk_plugin_t *p = plugin;
    if (!p) return;
    const rt_host_t *host = p->host;
    rt_vk_plugin_stop(p);
    rt_vk_free(host, p, sizeof *p);
}

static uint32_t vk_plugin_device_count(void *plugin) {
    return ((const rt_vk_plugin_t *)plugin)->n_devices;
}

static rt_status_t vk_plugin_device_get(void *plugin, uint32_t index, void **out_device,
                                        const rt_device_vtable_t **out_vtable) {
    rt_vk_plugin_t *p = plugin;
    *out_device = NULL;
    *out_vtable = NULL;
    if (index >= p->n_devices)
        return p->host->set_error(RT_ERR_INVALID_ARGUMENT, "%s: device %u of %u", __func__,
                                  index, p->n_devices);
    *out_device = p->devices[index];
    *out_vtable = &rt_vk_device_vtable;
    return RT_OK;
}

static const rt_plugin_vtable_t vk_plugin_vtable = {
    .struct_size = sizeof(rt_plugin_vtable_t),
    .destroy = vk_plugin_destroy,
    .create = vk_plugin_create,
    .device_count = vk_plugin_device_count,
    .device_get = vk_plugin_device_get,
};

/* Not unload-safe: Vulkan drivers start threads (llvmpipe does) and
 * register atexit handlers that must not outlive their code. */
#define VK_PLUGIN(minor)                                                              \
    {                                                                                 \
        .struct_size = sizeof(rt_plugin_t),                                           \
        .abi_version = RT_ABI_MAKE_VERSION(RT_ABI_VERSION_MAJOR, minor), .name = "vulkan", \
        .description = "Vulkan compute (any Vulkan 1.1 device with 16-bit storage)", \
        .version = RT_VERSION_STRING, .vtable = &vk_plugin_vtable,                    \
    }
/* One table per minor version the plugin speaks (rt_plugin.h). */
static const rt_plugin_t vk_plugin_versions[] = {VK_PLUGIN(0), VK_PLUGIN(1), VK_PLUGIN(2), VK_PLUGIN(3)};
RT_STATIC_ASSERT(sizeof vk_plugin_versions / sizeof vk_plugin_versions[0] ==
                     RT_ABI_VERSION_MINOR + 1, "one table per minor version");

RT_PLUGIN_EXPORT const rt_plugin_t *rt_plugin_query(uint32_t max_abi, const rt_host_t *host) {
    (void)host;
    return rt_plugin_answer(vk_plugin_versions, RT_ABI_VERSION_MINOR + 1, max_abi);
}
