/* SPDX-License-Identifier: MIT */
/* entry.c: the CPU plugin's one exported symbol and its plugin table.
 * rt_plugin_query negotiates the ABI version; create allocates the plugin
 * instance (through the host's allocator) holding the host table and the
 * single device, which device.c fills in, once isa.c has chosen the kernel
 * path (create fails when RT_CPU_ISA names one the machine cannot run). */
#include "cpu.h"

#include <string.h>

/* One instance per create: the host it was created with and its device. */
typedef struct rt_cpu_plugin {
    const rt_host_t *host;
    rt_cpu_device_t device;
} rt_cpu_plugin_t;

static void rt_cpu_plugin_destroy(void *plugin) {
    rt_cpu_plugin_t *p = plugin;
    if (!p) return;
    const rt_allocator_t *a = &p->host->allocator;
    a->realloc(a->user_data, p, sizeof *p, 0);
}

/* The host must carry every slot the plugin calls (all of ABI 1.0). */
static bool rt_cpu_host_usable(const rt_host_t *host) {
    return host && RT_STRUCT_HAS(host, rt_host_t, buffer_is_host) && host->allocator.realloc &&
           host->log && host->set_error && host->tensor_nbytes && host->buffer_is_host;
}

static rt_status_t rt_cpu_plugin_create(const rt_host_t *host, void **out_plugin) {
    if (out_plugin) *out_plugin = NULL;
    if (!rt_cpu_host_usable(host)) {
        if (host && RT_STRUCT_HAS(host, rt_host_t, set_error) && host->set_error)
            return host->set_error(RT_ERR_INCOMPATIBLE, "cpu: host table too small (%u bytes)",
                                   host->struct_size);
        return RT_ERR_INCOMPATIBLE;
    }
    if (!out_plugin) return host->set_error(RT_ERR_INVALID_ARGUMENT, "cpu: out_plugin is NULL");
    char why[160];
    if (!rt_cpu_isa_init(why, sizeof why)) return host->set_error(RT_ERR_UNSUPPORTED, "cpu: %s", why);
    const rt_allocator_t *a = &host->allocator;
    rt_cpu_plugin_t *p = a->realloc(a->user_data, NULL, 0, sizeof *p);
    if (!p)
        return host->set_error(RT_ERR_OUT_OF_MEMORY, "cpu: cannot allocate the plugin (%zu bytes)",
                               sizeof *p);
    memset(p, 0, sizeof *p);
    p->host = host;
    rt_cpu_device_init(&p->device, host);
    *out_plugin = p;
    return RT_OK;
}

static uint32_t rt_cpu_plugin_device_count(void *plugin) {
    return plugin ? 1u : 0u;
}

static rt_status_t rt_cpu_plugin_device_get(void *plugin, uint32_t index, void **out_device,
                                            const rt_device_vtable_t **out_vtable) {
    if (out_device) *out_device = NULL;
    if (out_vtable) *out_vtable = NULL;
    rt_cpu_plugin_t *p = plugin;
    if (!p || !out_device || !out_vtable) return RT_ERR_MISUSE;
    if (index != 0)
        return p->host->set_error(RT_ERR_INVALID_ARGUMENT, "cpu: no device %u (the plugin has 1)",
                                  index);
    *out_device = &p->device;
    *out_vtable = &p->device.vtable;
    return RT_OK;
}

static const rt_plugin_vtable_t rt_cpu_plugin_vtable = {
    .struct_size = sizeof(rt_plugin_vtable_t),
    .destroy = rt_cpu_plugin_destroy,
    .create = rt_cpu_plugin_create,
    .device_count = rt_cpu_plugin_device_count,
    .device_get = rt_cpu_plugin_device_get,
};

/* Not RT_PLUGIN_FLAG_UNLOAD_SAFE: queue threads are joined in queue_destroy,
 * but a queue the application leaks would keep running plugin code. One
 * table per minor version the plugin speaks (rt_plugin.h). */
#define RT_CPU_PLUGIN(minor)                                                          \
    {                                                                                 \
        .struct_size = sizeof(rt_plugin_t),                                           \
        .abi_version = RT_ABI_MAKE_VERSION(RT_ABI_VERSION_MAJOR, minor), .name = "cpu", \
        .description = "host CPU: SIMD kernels (scalar, AVX2, AVX-512, NEON) chosen at start", \
        .version = RT_VERSION_STRING, .vtable = &rt_cpu_plugin_vtable,                \
    }
static const rt_plugin_t rt_cpu_plugin_versions[] = {RT_CPU_PLUGIN(0), RT_CPU_PLUGIN(1),
                                                     RT_CPU_PLUGIN(2), RT_CPU_PLUGIN(3)};
RT_STATIC_ASSERT(sizeof rt_cpu_plugin_versions / sizeof rt_cpu_plugin_versions[0] ==
                     RT_ABI_VERSION_MINOR + 1, "one table per minor version");

/* Declared in rt_plugin.h. query has no side effects (rt_plugin.h), so the
 * host is kept by create, per instance. */
RT_PLUGIN_EXPORT const rt_plugin_t *rt_plugin_query(uint32_t max_abi, const rt_host_t *host) {
    (void)host;
    return rt_plugin_answer(rt_cpu_plugin_versions, RT_ABI_VERSION_MINOR + 1, max_abi);
}
