/* SPDX-License-Identifier: MIT */
/* registry_impl.h: the core-side objects that wrap what plugins provide.
 * registry -> plugins -> devices -> buffer types -> buffers, and queues.
 *
 * The registry owns everything below it. Plugin tables are copied into
 * zero-filled structs of the size this core knows, so the rest of the core
 * reads every field without size checks: fields a smaller (older) plugin
 * did not provide read as zero/NULL. That copy is the one place the
 * struct_size rules are applied (plugin.c). */
#ifndef RT_REGISTRY_IMPL_H
#define RT_REGISTRY_IMPL_H

#include "internal.h"

typedef struct rt_plugin_rec {
    rt_plugin_info_t info;          /* what rt_registry_plugin returns */
    char *path;                     /* owned copies behind info's strings */
    char *name;
    char *message;
    void *dl;                       /* dlopen handle, or NULL */
    rt_plugin_t desc;               /* the plugin's rt_plugin_t, normalised */
    rt_plugin_vtable_t vtable;      /* normalised */
    void *handle;                   /* from vtable.create, or NULL */
} rt_plugin_rec_t;

struct rt_buffer_type {
    rt_device_t *device;            /* owner */
    rt_buffer_type_desc_t desc;     /* normalised copy */
    rt_buffer_vtable_t buffer_vtable; /* normalised copy */
    const rt_buffer_type_desc_t *plugin_desc; /* the plugin's pointer, for supports_buft */
};

struct rt_device {
    rt_registry_t *registry;
    rt_plugin_rec_t *plugin;
    int32_t index;                  /* in the registry's device list */
    char name[32];                  /* plugin name + index within the plugin: "cpu0" */
    void *handle;                   /* the plugin's device */
    rt_device_vtable_t vtable;      /* normalised */
    rt_device_ext_async_t async;    /* normalised; header.type 0 when absent */
    rt_device_ext_host_ptr_t host_ptr; /* normalised; header.type 0 when absent */
    rt_device_props_t props;        /* read once at load */
    rt_buffer_type_t *bufts;        /* n_bufts entries */
    int32_t n_bufts;
    rt_buffer_type_t host_ptr_buft; /* for host_ptr buffers, when present */
    rt_device_t *same_as;           /* first device that is the same hardware */
};

struct rt_registry {
    rt_allocator_t allocator;
    rt_host_t host;                 /* handed to plugins */
    char *search_path;              /* "dir:dir:dir" as searched */
    rt_plugin_rec_t **plugins;
    int32_t n_plugins, cap_plugins;
    rt_device_t **devices;
    int32_t n_devices, cap_devices;
};

/* A buffer. The plugin's state (desc.buffer_state_size bytes) follows the
 * struct in the same allocation. */
struct rt_buffer {
    rt_buffer_type_t *buft;
    size_t size;                    /* bytes */
    void *base;                     /* from buffer_vtable.base */
    const rt_allocator_t *allocator;
    size_t alloc_size;              /* of this struct plus state */
    void *state;                    /* points just past the struct */
};

struct rt_queue {
    rt_device_t *device;
    void *handle;                   /* the plugin's queue */
};

/* plugin.c: opens one file and fills rec (status and message included). */
RT_INTERNAL rt_status_t rt_plugin_open(rt_registry_t *reg, rt_plugin_rec_t *rec, const char *path);
/* plugin.c: validates a query result and normalises it into rec (used by
 * rt_plugin_open and by the plugin-table fuzzer). */
RT_INTERNAL rt_status_t rt_plugin_adopt(rt_registry_t *reg, rt_plugin_rec_t *rec,
                                        const rt_plugin_t *plugin);
RT_INTERNAL void rt_plugin_close(rt_registry_t *reg, rt_plugin_rec_t *rec);

/* device.c: wraps the plugin's device i into a new rt_device_t. */
RT_INTERNAL rt_status_t rt_device_wrap(rt_registry_t *reg, rt_plugin_rec_t *rec, uint32_t index,
                                       rt_device_t **out_dev);
RT_INTERNAL void rt_device_unwrap(rt_device_t *dev);

/* buffer.c: a buffer over state filled by fill(state), e.g. host_ptr. */
RT_INTERNAL rt_status_t rt_buffer_create(rt_buffer_type_t *buft, size_t size,
                                         rt_status_t (*fill)(void *ctx, void *state),
                                         void *fill_ctx, rt_buffer_t **out_buf);

/* dl_posix.c: the dynamic loader and environment, behind one interface. */
RT_INTERNAL void *rt_dl_open(const char *path, char *err, size_t err_size);
RT_INTERNAL void *rt_dl_sym(void *dl, const char *name);
RT_INTERNAL void rt_dl_close(void *dl);
/* Directory of the shared object that contains this function ("" if
 * unknown), written into buf. */
RT_INTERNAL const char *rt_dl_self_dir(char *buf, size_t size);
/* getenv, but NULL in setuid/setgid processes. */
RT_INTERNAL const char *rt_secure_getenv(const char *name);

#endif /* RT_REGISTRY_IMPL_H */
