/* SPDX-License-Identifier: MIT */
/* entry.c: the CUDA plugin's one exported symbol. Version negotiation and
 * the plugin table; starting and stopping the plugin (runtime, devices,
 * cuBLAS) is device.c's. */
#include "cuda_impl.h"

/* The host must carry every slot the plugin calls (all of ABI 1.0). */
static bool cu_host_usable(const rt_host_t *host) {
    return host && RT_STRUCT_HAS(host, rt_host_t, buffer_type) && host->allocator.realloc &&
           host->log && host->set_error && host->tensor_nbytes && host->buffer_state &&
           host->buffer_is_host && host->buffer_type;
}

static rt_status_t cu_plugin_create(const rt_host_t *host, void **out_plugin) {
    if (out_plugin) *out_plugin = NULL;
    if (!cu_host_usable(host)) {
        if (host && RT_STRUCT_HAS(host, rt_host_t, set_error) && host->set_error)
            return host->set_error(RT_ERR_INCOMPATIBLE, "cuda: host table too small (%u bytes)",
                                   host->struct_size);
        return RT_ERR_INCOMPATIBLE;
    }
    if (!out_plugin) return host->set_error(RT_ERR_MISUSE, "%s: out_plugin is NULL", __func__);
    rt_cu_plugin_t *p = rt_cu_alloc(host, sizeof *p);
    if (!p) return host->set_error(RT_ERR_OUT_OF_MEMORY, "%s: no memory for the plugin", __func__);
    p->host = host;
    const rt_status_t st = rt_cu_plugin_start(p);
    if (st != RT_OK) {
        rt_cu_plugin_stop(p);
        rt_cu_free(host, p, sizeof *p);
        return st;
    }
    *out_plugin = p;
    return RT_OK;
}

static void cu_plugin_destroy(void *plugin) {
    rt_cu_plugin_t *p = plugin;
    if (!p) return;
    const rt_host_t *host = p->host;
    rt_cu_plugin_stop(p);
    rt_cu_free(host, p, sizeof *p);
}

static uint32_t cu_plugin_device_count(void *plugin) {
    return plugin ? ((const rt_cu_plugin_t *)plugin)->n_devices : 0u;
}

static rt_status_t cu_plugin_device_get(void *plugin, uint32_t index, void **out_device,
                                        const rt_device_vtable_t **out_vtable) {
    if (out_device) *out_device = NULL;
    if (out_vtable) *out_vtable = NULL;
    rt_cu_plugin_t *p = plugin;
    if (!p || !out_device || !out_vtable) return RT_ERR_MISUSE;
    if (index >= p->n_devices)
        return p->host->set_error(RT_ERR_INVALID_ARGUMENT, "%s: device %u of %u", __func__, index,
                                  p->n_devices);
    *out_device = &p->devices[index];
    *out_vtable = &p->devices[index].vtable;
    return RT_OK;
}

static const rt_plugin_vtable_t cu_plugin_vtable = {
    .struct_size = sizeof(rt_plugin_vtable_t),
    .destroy = cu_plugin_destroy,
    .create = cu_plugin_create,
    .device_count = cu_plugin_device_count,
    .device_get = cu_plugin_device_get,
};

/* Not unload-safe: the statically linked CUDA runtime registers atexit
 * handlers and the driver keeps threads that must not outlive its code. */
#define CU_PLUGIN(minor)                                                              \
    {                                                                                 \
        .struct_size = sizeof(rt_plugin_t),                                           \
        .abi_version = RT_ABI_MAKE_VERSION(RT_ABI_VERSION_MAJOR, minor), .name = "cuda", \
        .description = "NVIDIA GPUs through the CUDA runtime (static) and cuBLAS (when present)", \
        .version = RT_VERSION_STRING, .vtable = &cu_plugin_vtable,                    \
    }
/* One table per minor version the plugin speaks (rt_plugin.h). */
static const rt_plugin_t cu_plugin_versions[] = {CU_PLUGIN(0), CU_PLUGIN(1), CU_PLUGIN(2), CU_PLUGIN(3)};
RT_STATIC_ASSERT(sizeof cu_plugin_versions / sizeof cu_plugin_versions[0] ==
                     RT_ABI_VERSION_MINOR + 1, "one table per minor version");

/* Declared in rt_plugin.h. query has no side effects: nothing of CUDA is
 * touched before create. */
RT_PLUGIN_EXPORT const rt_plugin_t *rt_plugin_query(uint32_t max_abi, const rt_host_t *host) {
    (void)host;
    return rt_plugin_answer(cu_plugin_versions, RT_ABI_VERSION_MINOR + 1, max_abi);
}
