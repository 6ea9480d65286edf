/* SPDX-License-Identifier: MIT */
/* device_impl.h: rt_device_t, the core's wrapper of one plugin device
 * (device.c): its normalised tables and extensions, properties read once,
 * buffer types, and its place among the registry's devices. */
#ifndef RT_DEVICE_IMPL_H
#define RT_DEVICE_IMPL_H

#include "buffer_impl.h"
#include "plugin_impl.h"

struct rt_device {
    rt_registry_t *registry;
    rt_plugin_rec_t *plugin;
    int32_t index;                  /* in the registry's device list */
    uint32_t plugin_index;          /* in its plugin's device list */
    char name[32];                  /* plugin name + index within the plugin: "cpu0" */
    void *handle;                   /* the plugin's device */
    rt_device_vtable_t vtable;      /* normalised */
    rt_device_ext_async_t async;    /* normalised; header.type 0 when absent */
    rt_device_ext_host_ptr_t host_ptr; /* normalised; header.type 0 when absent */
    rt_device_ext_speed_t speed;    /* normalised; header.type 0 when absent */
    rt_device_props_t props;        /* read once at load */
    rt_buffer_type_t *bufts;        /* n_bufts entries */
    int32_t n_bufts;
    rt_buffer_type_t host_ptr_buft; /* for host_ptr buffers, when present */
    rt_device_t *same_as;           /* first device that is the same hardware */
};

/* device.c: wraps the plugin's device i into a new rt_device_t. */
RT_INTERNAL rt_status_t rt_device_wrap(rt_registry_t *reg, rt_plugin_rec_t *rec, uint32_t index,
                                       rt_device_t **out_dev);
RT_INTERNAL void rt_device_unwrap(rt_device_t *dev);
/* device.c: the buffer type that host_ptr buffers belong to, or NULL when
 * the device cannot wrap host memory. */
RT_INTERNAL rt_buffer_type_t *rt_device_host_ptr_buffer_type(const rt_device_t *dev);
/* device.c: links each device to the first one that is the same hardware
 * (after the registry's device list changed). */
RT_INTERNAL void rt_device_find_duplicates(rt_registry_t *reg);
/* device.c: parses "dddd:bb:dd.f" (or "bb:dd.f"; any domain width) into
 * domain, bus, device, function. False when malformed. Also the topology's. */
RT_INTERNAL bool rt_pci_bus_id_parse(const char *s, unsigned out_id[4]);

#endif /* RT_DEVICE_IMPL_H */
