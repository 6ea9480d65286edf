/* SPDX-License-Identifier: MIT */
/* registry_impl.h: rt_registry_t (registry.c), the owner of every plugin
 * and device, and of the lists of live buffers and queues that destroying
 * it releases. The objects below it have their own headers:
 * plugin_impl.h, device_impl.h, buffer_impl.h, queue_impl.h; what the OS
 * provides is os.h. */
#ifndef RT_REGISTRY_IMPL_H
#define RT_REGISTRY_IMPL_H

#include "internal.h"
#include "list.h"
#include "plugin_impl.h"

struct rt_registry {
    rt_allocator_t allocator;
    uint32_t app_abi;               /* the ABI version the application declared */
    rt_plugin_admit_fn admit;       /* from the options, or NULL */
    void *admit_user_data;
    rt_host_t host;                 /* handed to plugins */
    char *search_path;              /* "dir:dir:dir" as searched */
    size_t search_path_cap;         /* bytes allocated for search_path */
    rt_plugin_rec_t **plugins;
    int32_t n_plugins, cap_plugins;
    rt_device_t **devices;
    int32_t n_devices, cap_devices;
    void *load_lock;                /* rt_os_mutex: held while plugins start */
    bool all_started;               /* no plugin pending (atomic): the plugin and
                                       device lists no longer change */
    void *lock;                     /* rt_os_mutex: guards the two lists below */
    rt_link_t buffers;              /* live rt_buffer_t, through their link */
    rt_link_t queues;               /* live rt_queue_t, through their link */
};

/* registry.c: adds or removes a buffer or queue from a registry list. */
RT_INTERNAL void rt_registry_link(rt_registry_t *reg, rt_link_t *list, rt_link_t *node);
RT_INTERNAL void rt_registry_unlink(rt_registry_t *reg, rt_link_t *node);
/* registry.c: whether buf is a live buffer of reg (compares pointers only,
 * so a freed one can be asked about). */
RT_INTERNAL bool rt_registry_has_buffer(rt_registry_t *reg, const rt_buffer_t *buf);

#endif /* RT_REGISTRY_IMPL_H */
