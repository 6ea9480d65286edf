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

/* A node of a circular doubly linked list; a list is a head node. */
typedef struct rt_link {
    struct rt_link *prev, *next;
} rt_link_t;

#define RT_CONTAINER_OF(ptr, type, member) ((type *)(void *)((char *)(ptr) - offsetof(type, member)))

typedef struct rt_plugin_rec {
    rt_plugin_info_t info;          /* what rt_registry_plugin returns */
    char *path;                     /* owned copies behind info's strings */
    char *name;
    char *message;
    void *dl;                       /* dlopen handle, or NULL */
    rt_plugin_t desc;               /* the plugin's rt_plugin_t, normalised */
    rt_plugin_vtable_t vtable;      /* normalised */
    void *handle;                   /* from vtable.create, or NULL */
    bool live;                      /* create succeeded: destroy is owed */
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
    uint32_t plugin_index;          /* in its plugin's device list */
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
    void *lock;                     /* rt_os_mutex: guards the two lists below */
    rt_link_t buffers;              /* live rt_buffer_t, through their link */
    rt_link_t queues;               /* live rt_queue_t, through their link */
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
    rt_link_t link;                 /* in registry->buffers */
    struct rt_buffer *next_part;    /* rt_alloc_ctx_tensors split over several buffers:
                                       the next one, freed with this one; else NULL */
};

struct rt_queue {
    rt_device_t *device;
    void *handle;                   /* the plugin's queue */
    rt_link_t link;                 /* in registry->queues */
};

/* plugin.c: opens one file and fills rec (status and message included). */
RT_INTERNAL rt_status_t rt_plugin_open(rt_registry_t *reg, rt_plugin_rec_t *rec, const char *path);
/* plugin.c: records a file that was considered but not opened (shadowed),
 * with status and the current rt_last_error() as its message. */
RT_INTERNAL rt_status_t rt_plugin_skip(rt_registry_t *reg, rt_plugin_rec_t *rec, const char *path,
                                       rt_status_t status);
/* plugin.c: validates a query result and normalises it into rec (used by
 * rt_plugin_open and by the plugin-table fuzzer). */
RT_INTERNAL rt_status_t rt_plugin_adopt(rt_registry_t *reg, rt_plugin_rec_t *rec,
                                        const rt_plugin_t *plugin);
RT_INTERNAL void rt_plugin_close(rt_registry_t *reg, rt_plugin_rec_t *rec);
/* plugin.c: NAME of a path ending in rt-plugin-NAME.so into buf; false
 * when the file is not named so (or NAME does not fit). */
RT_INTERNAL bool rt_plugin_file_name(const char *path, char *buf, size_t size);
/* plugin.c: fills the host table plugins get, over allocator a. */
RT_INTERNAL void rt_plugin_host_init(rt_host_t *host, const rt_allocator_t *a);
/* plugin.c: calls visit on every record of an extension chain; stops at the
 * first non-OK status. A record smaller than its header or a chain longer
 * than RT_EXT_MAX records (a loop) is RT_ERR_FORMAT naming `owner`. */
#define RT_EXT_MAX 64
RT_INTERNAL rt_status_t rt_ext_walk(const rt_ext_header_t *head, const char *owner,
                                    rt_status_t (*visit)(void *ctx, const rt_ext_header_t *rec),
                                    void *ctx);
/* plugin.c: the message of a failed plugin call. Take a snapshot before
 * the call; afterwards this records "what: message" (rt_error_wrap_since),
 * using the plugin's message when it set one through host->set_error. */
typedef struct rt_error_snapshot {
    uint64_t seq; /* rt_error_seq() before the call */
} rt_error_snapshot_t;
RT_INTERNAL void rt_error_snapshot(rt_error_snapshot_t *snap);
RT_INTERNAL rt_status_t rt_plugin_failed(rt_status_t status, const rt_error_snapshot_t *snap,
                                         const char *what);

/* registry.c: adds or removes a buffer or queue from a registry list. */
RT_INTERNAL void rt_registry_link(rt_registry_t *reg, rt_link_t *list, rt_link_t *node);
RT_INTERNAL void rt_registry_unlink(rt_registry_t *reg, rt_link_t *node);
/* registry.c: whether buf is a live buffer of reg (compares pointers only,
 * so a freed one can be asked about). */
RT_INTERNAL bool rt_registry_has_buffer(rt_registry_t *reg, const rt_buffer_t *buf);

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

/* buffer.c: a buffer over state filled by fill(state), e.g. host_ptr. */
RT_INTERNAL rt_status_t rt_buffer_create(rt_buffer_type_t *buft, size_t size,
                                         rt_status_t (*fill)(void *ctx, void *state),
                                         void *fill_ctx, rt_buffer_t **out_buf);
/* buffer.c: the host table's buffer_state and buffer_is_host. */
RT_INTERNAL void *rt_buffer_state(const rt_buffer_t *buf);
RT_INTERNAL bool rt_buffer_is_host(const rt_buffer_t *buf);

/* dl_posix.c: the dynamic loader and environment, behind one interface. */
RT_INTERNAL void *rt_dl_open(const char *path, char *err, size_t err_size);
RT_INTERNAL void *rt_dl_sym(void *dl, const char *name);
RT_INTERNAL void rt_dl_close(void *dl);
/* Directory of the shared object that contains this function ("" if
 * unknown), written into buf. */
RT_INTERNAL const char *rt_dl_self_dir(char *buf, size_t size);
/* ".so", or ".dylib" on macOS: what plugin file names end in. */
RT_INTERNAL const char *rt_dl_suffix(void);
/* getenv, but NULL in setuid/setgid processes. */
RT_INTERNAL const char *rt_secure_getenv(const char *name);
/* Calls fn with the name of every entry of dir; false when dir cannot be
 * opened (missing: not an error for a search path). */
RT_INTERNAL bool rt_os_list_dir(const char *dir, void (*fn)(void *ctx, const char *name),
                                void *ctx);
/* The canonical absolute path of path into buf; false when it does not
 * resolve. */
RT_INTERNAL bool rt_os_realpath(const char *path, char *buf, size_t size);
/* True, with the reason in why, when an untrusted user (anyone but root,
 * the current user and the owner of librtcore's file) can change the
 * plugin file at path: it or any directory above it up to "/", as named
 * and as resolved, is owned by such a user or is world-writable (a sticky
 * directory only above a component with a trusted owner). False when the
 * file does not exist. */
RT_INTERNAL bool rt_os_writable_by_others(const char *path, char *why, size_t size);
/* Shell-style glob match of name against pattern (fnmatch). */
RT_INTERNAL bool rt_os_glob_match(const char *pattern, const char *name);
/* A mutex in memory from a; NULL on failure. Destroy accepts NULL. */
RT_INTERNAL void *rt_os_mutex_create(const rt_allocator_t *a);
RT_INTERNAL void rt_os_mutex_destroy(const rt_allocator_t *a, void *m);
RT_INTERNAL void rt_os_mutex_lock(void *m);
RT_INTERNAL void rt_os_mutex_unlock(void *m);

#endif /* RT_REGISTRY_IMPL_H */
