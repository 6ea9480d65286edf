/* SPDX-License-Identifier: MIT */
/* plugin_impl.h: a plugin file as the core keeps it (rt_plugin_rec_t), and
 * what plugin.c does with one: open, validate and normalise its tables
 * (the one place the struct_size rules are applied to a plugin's answer),
 * start it (later, when the registry first needs one of its devices),
 * refuse it with a message, close it; plus the helpers device.c
 * shares for extension chains and failed plugin calls. Plugin tables are
 * copied into zero-filled structs of the size this core knows, so the rest
 * of the core reads every field without size checks. */
#ifndef RT_PLUGIN_IMPL_H
#define RT_PLUGIN_IMPL_H

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
    bool live;                      /* create succeeded: destroy is owed */
    /* A plugin is started only when one of its devices is first needed
     * (registry.c), so that a process pays for no driver it does not use. */
    bool pending;                   /* queried and validated; create not run yet */
    bool standby;                   /* not opened: an earlier file of its NAME is
                                       pending and takes this one's place unless
                                       it fails to start */
    char said[256];                 /* the last line it logged while starting: why a
                                       plugin that loads with no devices has none */
} rt_plugin_rec_t;

/* plugin.c: the record of the file at path, not opened yet (its name is
 * the file's NAME until the plugin tells its own). */
RT_INTERNAL rt_status_t rt_plugin_init(rt_registry_t *reg, rt_plugin_rec_t *rec, const char *path);
/* plugin.c: opens rec's file, queries and validates it: pending on
 * success, else refused with a message (status included). */
RT_INTERNAL rt_status_t rt_plugin_open(rt_registry_t *reg, rt_plugin_rec_t *rec);
/* plugin.c: runs a pending plugin's create: live on success, else refused.
 * What the plugin logs from here until rt_plugin_started is kept in said. */
RT_INTERNAL rt_status_t rt_plugin_start(rt_registry_t *reg, rt_plugin_rec_t *rec);
/* plugin.c: its devices are wrapped: a plugin with none gets the last line
 * it logged (or that it said nothing) as its message. */
RT_INTERNAL void rt_plugin_started(rt_registry_t *reg, rt_plugin_rec_t *rec);
/* plugin.c: records a file that was considered but not opened (shadowed,
 * refused by the application), with status and the current
 * rt_last_error() as its message. */
RT_INTERNAL rt_status_t rt_plugin_skip(rt_registry_t *reg, rt_plugin_rec_t *rec,
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

#endif /* RT_PLUGIN_IMPL_H */
