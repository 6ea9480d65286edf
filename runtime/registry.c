/* SPDX-License-Identifier: MIT */
/* registry.c: rt_registry_t, the owner of every plugin and device. Builds
 * the search path (RT_PLUGIN_PATH or options.plugin_path, then rt-plugins/
 * next to librtcore, then the install directory; never a relative path),
 * scans each directory for rt-plugin-NAME.so (.dylib on macOS) in name order, applies the
 * RT_PLUGINS / RT_PLUGINS_DISABLE filters before anything is opened,
 * has plugin.c open and query the rest, and starts a plugin (its driver's
 * start-up) only when one of its devices is first needed: a lookup by name
 * starts the plugin of that name alone, anything that counts or lists
 * starts them all. Records shadowed files and wraps the devices in a
 * stable order. Also keeps the lists of live buffers and
 * queues so that destroying the registry releases them. */
#include "buffer_impl.h"
#include "device_impl.h"
#include "os.h"
#include "queue_impl.h"
#include "registry_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef RT_PLUGIN_INSTALL_DIR
#  define RT_PLUGIN_INSTALL_DIR "/usr/local/lib/rt-plugins"
#endif

#define MAX_DEVICES_PER_PLUGIN 256

//===--- small containers ---===//

/* Makes room for one more element in *arr (of elem bytes each). */
static bool grow(const rt_allocator_t *a, void **arr, int32_t n, int32_t *cap, size_t elem) {
    if (n < *cap) return true;
    const int32_t new_cap = *cap > 0 ? *cap * 2 : 8;
    void *p = a->realloc(a->user_data, *arr, (size_t)*cap * elem, (size_t)new_cap * elem);
    if (p == NULL) return false;
    *arr = p;
    *cap = new_cap;
    return true;
}

/* A growing string over the registry's allocator. */
typedef struct strbuf {
    const rt_allocator_t *a;
    char *p;
    size_t len, cap; /* bytes used (without the NUL), bytes allocated */
    bool failed;
} strbuf_t;

static void sb_append(strbuf_t *sb, const char *s) {
    const size_t n = strlen(s);
    if (sb->failed) return;
    if (sb->len + n + 1 > sb->cap) {
        size_t cap = sb->cap > 0 ? sb->cap : 128;
        while (cap < sb->len + n + 1) cap *= 2;
        char *p = sb->a->realloc(sb->a->user_data, sb->p, sb->cap, cap);
        if (p == NULL) {
            sb->failed = true;
            return;
        }
        sb->p = p;
        sb->cap = cap;
    }
    memcpy(sb->p + sb->len, s, n + 1);
    sb->len += n;
}

//===--- live buffers and queues ---===//

void rt_registry_link(rt_registry_t *reg, rt_link_t *list, rt_link_t *node) {
    rt_os_mutex_lock(reg->lock);
    node->next = list;
    node->prev = list->prev;
    list->prev->next = node;
    list->prev = node;
    rt_os_mutex_unlock(reg->lock);
}

bool rt_registry_has_buffer(rt_registry_t *reg, const rt_buffer_t *buf) {
    bool found = false;
    rt_os_mutex_lock(reg->lock);
    for (const rt_link_t *l = reg->buffers.next; l != &reg->buffers && !found; l = l->next)
        found = RT_CONTAINER_OF(l, rt_buffer_t, link) == buf;
    rt_os_mutex_unlock(reg->lock);
    return found;
}

void rt_registry_unlink(rt_registry_t *reg, rt_link_t *node) {
    rt_os_mutex_lock(reg->lock);
    RT_ASSERT(node->next != node); /* linked, not unlinked twice (read under the lock) */
    node->prev->next = node->next;
    node->next->prev = node->prev;
    node->prev = node->next = node;
    rt_os_mutex_unlock(reg->lock);
}

//===--- lists in strings ---===//

/* Copies the item of a sep-separated list that starts at p into buf (empty
 * when it does not fit) and returns where the next one starts, or NULL
 * after the last. */
static const char *split_next(const char *p, char sep, char *buf, size_t size) {
    const char *end = strchr(p, sep);
    const size_t n = end != NULL ? (size_t)(end - p) : strlen(p);
    buf[0] = '\0';
    if (n < size) {
        memcpy(buf, p, n);
        buf[n] = '\0';
    }
    return end != NULL ? end + 1 : NULL;
}

//===--- the search path ---===//

/* Whether dir is already on the path, by name or by what it resolves to. */
static bool path_has(const char *path, const char *dir) {
    char want[4096], have[4096], real[4096];
    const bool resolved = rt_os_realpath(dir, want, sizeof want);
    for (const char *p = path; p != NULL && *p != '\0';) {
        p = split_next(p, ':', have, sizeof have);
        if (strcmp(have, dir) == 0) return true;
        if (resolved && rt_os_realpath(have, real, sizeof real) && strcmp(real, want) == 0)
            return true;
    }
    return false;
}

/* Only absolute directories join the path, whatever their origin (a
 * relative --prefix included), so the current directory is never searched;
 * a relative one is dropped with a warning. */
static void add_dir(strbuf_t *sb, const char *dir, const char *origin) {
    if (dir[0] == '\0' || strchr(dir, ':') != NULL || path_has(sb->p, dir)) return;
    if (dir[0] != '/') {
        rt_log(RT_LOG_WARN, "%s: ignoring relative directory \"%s\" (only absolute paths "
               "are searched)", origin, dir);
        return;
    }
    if (sb->len > 0) sb_append(sb, ":");
    sb_append(sb, dir);
}

static void add_dirs(strbuf_t *sb, const char *list, const char *origin) {
    char dir[4096];
    for (const char *p = list; p != NULL;) {
        p = split_next(p, ':', dir, sizeof dir);
        add_dir(sb, dir, origin);
    }
}

static rt_status_t build_search_path(rt_registry_t *reg, const char *plugin_path) {
    strbuf_t sb = {.a = &reg->allocator};
    char self[4096];
    sb_append(&sb, "");
    if (plugin_path != NULL) add_dirs(&sb, plugin_path, "rt_registry_options_t.plugin_path");
    else add_dirs(&sb, rt_secure_getenv("RT_PLUGIN_PATH"), "RT_PLUGIN_PATH");
    rt_dl_self_dir(self, sizeof self - sizeof "/rt-plugins");
    if (self[0] != '\0') {
        strcat(self, strcmp(self, "/") == 0 ? "rt-plugins" : "/rt-plugins");
        add_dir(&sb, self, "the core library's directory");
    }
    add_dir(&sb, RT_PLUGIN_INSTALL_DIR, "the install directory");
    if (sb.failed) {
        sb.a->realloc(sb.a->user_data, sb.p, sb.cap, 0);
        return rt_error(RT_ERR_OUT_OF_MEMORY, "rt_registry_create: no memory for the search path");
    }
    reg->search_path = sb.p;
    reg->search_path_cap = sb.cap;
    return RT_OK;
}

//===--- filters ---===//

/* Whether name matches one of the comma-separated names or globs of list. */
static bool list_matches(const char *list, const char *name) {
    char pat[256];
    for (const char *p = list; p != NULL;) {
        p = split_next(p, ',', pat, sizeof pat);
        char *b = pat, *e = pat + strlen(pat);
        while (*b == ' ' || *b == '\t') b++;
        while (e > b && (e[-1] == ' ' || e[-1] == '\t')) *--e = '\0';
        if (*b != '\0' && rt_os_glob_match(b, name)) return true;
    }
    return false;
}

static bool filtered_out(const char *name) {
    const char *keep = rt_secure_getenv("RT_PLUGINS");
    const char *drop = rt_secure_getenv("RT_PLUGINS_DISABLE");
    if (keep != NULL && *keep != '\0' && !list_matches(keep, name)) {
        rt_log(RT_LOG_INFO, "plugin %s skipped: not in RT_PLUGINS=%s", name, keep);
        return true;
    }
    if (drop != NULL && list_matches(drop, name)) {
        rt_log(RT_LOG_INFO, "plugin %s skipped: RT_PLUGINS_DISABLE=%s", name, drop);
        return true;
    }
    return false;
}

//===--- plugin records ---===//

static rt_plugin_rec_t *new_record(rt_registry_t *reg) {
    rt_plugin_rec_t *rec = rt_mem_calloc(&reg->allocator, sizeof *rec);
    if (rec == NULL || !grow(&reg->allocator, (void **)&reg->plugins, reg->n_plugins,
                             &reg->cap_plugins, sizeof reg->plugins[0])) {
        rt_mem_free(&reg->allocator, rec, sizeof *rec);
        return NULL;
    }
    reg->plugins[reg->n_plugins++] = rec;
    return rec;
}

/* The plugin an earlier file with the same NAME loaded, or is about to
 * try (pending or standby; only one standing by with standby_only), or
 * NULL. A file that declined, failed or was
 * refused shadows nothing (rt_plugin.h): the next file of that name gets
 * its chance. */
static rt_plugin_rec_t *find_by_file_name(const rt_registry_t *reg, const char *name,
                                          bool standby_only) {
    char other[256];
    for (int32_t i = 0; i < reg->n_plugins; i++) {
        rt_plugin_rec_t *r = reg->plugins[i];
        const bool candidate = r->standby || (!standby_only && (r->live || r->pending));
        if (candidate && rt_plugin_file_name(r->path, other, sizeof other) &&
            strcmp(other, name) == 0)
            return r;
    }
    return NULL;
}

/* The application's say on a file before it is opened (options.admit). */
#define PROBE_TIMEOUT_S 10.0

/* RT_PLUGIN_PROBE=1: each plugin is started first in a child process and
 * refused when that child dies, exits or hangs (RT_PLUGIN_PROBE_TIMEOUT
 * seconds, 10 by default). */
static rt_status_t probed(const char *path) {
    const char *on = rt_secure_getenv("RT_PLUGIN_PROBE"), *t = rt_secure_getenv("RT_PLUGIN_PROBE_TIMEOUT");
    if (on == NULL || strcmp(on, "1") != 0) return RT_OK;
    char *end = NULL;
    const double timeout = t != NULL ? strtod(t, &end) : PROBE_TIMEOUT_S;
    char reason[512];
    const rt_status_t st = rt_os_probe_plugin(path, timeout > 0 && (end == NULL || *end == '\0') ? timeout
                                                                                              : PROBE_TIMEOUT_S,
                                              reason, sizeof reason);
    return st == RT_OK ? RT_OK : rt_error(st, "%s: refused: it %s", path, reason);
}

static rt_status_t admitted(rt_registry_t *reg, const char *path) {
    char reason[512] = "";
    if (reg->admit == NULL) return probed(path);
    const rt_status_t st = reg->admit(reg->admit_user_data, path, reason, sizeof reason);
    if (st == RT_OK) return probed(path);
    reason[sizeof reason - 1] = '\0';
    return rt_error(st, "%s: refused by the application: %s", path,
                    reason[0] != '\0' ? reason : rt_status_name(st));
}

//===--- devices ---===//

/* Plugin name, then the plugin's order: unique among loaded plugins, so
 * every order below ends with it and is total. */
static int compare_by_plugin(const void *pa, const void *pb) {
    const rt_device_t *a = *(rt_device_t *const *)pa, *b = *(rt_device_t *const *)pb;
    const int c = strcmp(a->plugin->desc.name, b->plugin->desc.name);
    if (c != 0) return c;
    return a->plugin_index < b->plugin_index ? -1 : a->plugin_index > b->plugin_index;
}

/* Index 0 is every tool's default device, so the fastest kind comes first.
 * Software emulations of GPUs (lavapipe, mocks) run on the same cores as
 * the CPU plugin, only slower, so they come after the CPU: they are there
 * to be asked for by name. A kind newer than this core goes just before
 * the CPU. */
static int kind_rank(rt_device_kind_t kind) {
    switch (kind) {
    case RT_DEVICE_KIND_GPU: return 0;
    case RT_DEVICE_KIND_IGPU: return 1;
    case RT_DEVICE_KIND_ACCELERATOR: return 2;
    case RT_DEVICE_KIND_CPU: return 4;
    case RT_DEVICE_KIND_SOFTWARE: return 5;
    default: return 3;
    }
}

static int compare_by_kind(const void *pa, const void *pb) {
    const rt_device_t *a = *(rt_device_t *const *)pa, *b = *(rt_device_t *const *)pb;
    const int ra = kind_rank(a->props.kind), rb = kind_rank(b->props.kind);
    if (ra != rb) return ra < rb ? -1 : 1;
    if (a->props.memory_free != b->props.memory_free)
        return a->props.memory_free > b->props.memory_free ? -1 : 1;
    return compare_by_plugin(pa, pb);
}

/* By kind and free memory (rt.h), or RT_DEVICE_ORDER=plugin for plugin
 * order. */
static void order_devices(rt_registry_t *reg) {
    const char *order = rt_secure_getenv("RT_DEVICE_ORDER");
    const bool by_plugin = order != NULL && strcmp(order, "plugin") == 0;
    if (reg->n_devices > 1)
        qsort(reg->devices, (size_t)reg->n_devices, sizeof reg->devices[0],
              by_plugin ? compare_by_plugin : compare_by_kind);
    for (int32_t i = 0; i < reg->n_devices; i++) reg->devices[i]->index = i;
    rt_device_find_duplicates(reg);
}

static rt_status_t add_device(rt_registry_t *reg, rt_device_t *dev) {
    if (!grow(&reg->allocator, (void **)&reg->devices, reg->n_devices, &reg->cap_devices,
              sizeof reg->devices[0])) {
        rt_device_unwrap(dev);
        return rt_error(RT_ERR_OUT_OF_MEMORY, "no memory for the device list");
    }
    reg->devices[reg->n_devices++] = dev;
    return RT_OK;
}

/* A device that cannot be wrapped is skipped with a warning; the plugin and
 * its other devices stay. Running out of memory is not the device's fault:
 * it fails the whole load, as it does everywhere else. */
static rt_status_t wrap_devices(rt_registry_t *reg, rt_plugin_rec_t *rec) {
    uint32_t n = rec->vtable.device_count(rec->handle);
    if (n > MAX_DEVICES_PER_PLUGIN) {
        rt_log(RT_LOG_WARN, "%s: reports %u devices; using the first %d", rec->path, n,
               MAX_DEVICES_PER_PLUGIN);
        n = MAX_DEVICES_PER_PLUGIN;
    }
    rt_status_t st = RT_OK;
    for (uint32_t i = 0; i < n && st == RT_OK; i++) {
        rt_device_t *dev = NULL;
        rt_log(RT_LOG_INFO, "plugin %s: device %u of %u", rec->desc.name, i, n);
        st = rt_device_wrap(reg, rec, i, &dev);
        if (st != RT_OK && st != RT_ERR_OUT_OF_MEMORY) {
            rt_log(RT_LOG_WARN, "device %u of plugin %s skipped: %s", i, rec->desc.name,
                   rt_last_error());
            /* the reason a plugin left with no device gives (rt_plugin_started) */
            snprintf(rec->said, sizeof rec->said, "device %u skipped: %s", i, rt_last_error());
            st = RT_OK;
            continue;
        }
        if (st == RT_OK) st = add_device(reg, dev);
        if (st == RT_OK) rec->info.n_devices++;
    }
    order_devices(reg);
    return st;
}

/* Opens and queries a file the application admits; the record says how
 * that went (pending, or refused with a message). Running out of memory
 * is not the plugin's fault: it is returned, and fails what called. */
static rt_status_t open_admitted(rt_registry_t *reg, rt_plugin_rec_t *rec) {
    const rt_status_t why = admitted(reg, rec->path);
    if (why != RT_OK) return rt_plugin_skip(reg, rec, why), RT_OK;
    const rt_status_t st = rt_plugin_open(reg, rec);
    return st == RT_ERR_OUT_OF_MEMORY ? st : RT_OK;
}

static rt_plugin_rec_t *new_path_record(rt_registry_t *reg, const char *path) {
    rt_plugin_rec_t *rec = new_record(reg);
    if (rec == NULL) {
        rt_error(RT_ERR_OUT_OF_MEMORY, "%s: no memory for its record", path);
        return NULL;
    }
    if (rt_plugin_init(reg, rec, path) != RT_OK) {
        rt_plugin_skip(reg, rec, RT_ERR_OUT_OF_MEMORY);
        return NULL;
    }
    return rec;
}

static void shadow(rt_registry_t *reg, rt_plugin_rec_t *rec, const rt_plugin_rec_t *first,
                   const char *name) {
    rec->standby = false;
    rt_plugin_skip(reg, rec, rt_error(RT_ERR_UNSUPPORTED, "%s: shadowed by %s (the first loaded "
                                      "rt-plugin-%s%s on the search path wins)", rec->path,
                                      first->path, name, rt_dl_suffix()));
}

/* Starts a pending plugin; when it fails, the next file of its NAME on
 * the search path (standing by) gets its turn, as if the failed one had
 * never been there. Once one starts, the files still standing by are
 * shadowed by it. */
static rt_status_t start_plugin(rt_registry_t *reg, rt_plugin_rec_t *rec) {
    char name[256] = "";
    rt_plugin_file_name(rec->path, name, sizeof name);
    for (rt_plugin_rec_t *r = rec; r != NULL; r = find_by_file_name(reg, name, true)) {
        if (r->standby) {
            r->standby = false;
            if (open_admitted(reg, r) != RT_OK) return RT_ERR_OUT_OF_MEMORY;
            if (!r->pending) continue;
        }
        rt_status_t st = rt_plugin_start(reg, r);
        if (st == RT_ERR_OUT_OF_MEMORY) return st;
        if (st != RT_OK) continue;
        st = wrap_devices(reg, r);
        rt_plugin_started(reg, r);
        for (rt_plugin_rec_t *o; (o = find_by_file_name(reg, name, true)) != NULL;)
            shadow(reg, o, r, name);
        return st;
    }
    return RT_OK;
}

/* Whether a device named name could be one of plugin `plugin`'s: "cpu0"
 * is the "cpu" plugin's device 0 (device.c names them so). */
static bool may_own(const char *plugin, const char *name) {
    const size_t n = strlen(plugin);
    if (strncmp(plugin, name, n) != 0 || name[n] == '\0') return false;
    for (const char *p = name + n; *p != '\0'; p++)
        if (*p < '0' || *p > '9') return false;
    return true;
}

/* Starts the pending plugins that may own a device named name (all of them
 * when name is NULL), in search-path order. A failure to start is the
 * plugin's record's (and rt_last_error's, for a lookup that finds nothing);
 * running out of memory is logged too, as a lookup cannot report it.
 * Counts the plugins tried in *tried, and says whether any is left. */
static bool start_pending(rt_registry_t *reg, const char *name, int *tried) {
    bool left = false;
    for (int32_t i = 0; i < reg->n_plugins; i++) {
        rt_plugin_rec_t *rec = reg->plugins[i];
        if (rec->pending && (name == NULL || may_own(rec->desc.name, name))) {
            ++*tried;
            if (start_plugin(reg, rec) == RT_ERR_OUT_OF_MEMORY)
                rt_log(RT_LOG_ERROR, "starting plugins: %s", rt_last_error());
        }
        left = left || rec->pending || rec->standby;
    }
    return left;
}

/* Every plugin started (what counting or listing needs): reg, whose
 * lists no longer change (but through rt_registry_load_plugin). */
static rt_registry_t *started(const rt_registry_t *creg) {
    rt_registry_t *reg = (rt_registry_t *)creg; /* starting is not a visible change */
    if (reg == NULL || __atomic_load_n(&reg->all_started, __ATOMIC_ACQUIRE)) return reg;
    int tried = 0;
    rt_os_mutex_lock(reg->load_lock);
    if (!start_pending(reg, NULL, &tried))
        __atomic_store_n(&reg->all_started, true, __ATOMIC_RELEASE);
    rt_os_mutex_unlock(reg->load_lock);
    return reg;
}

static rt_status_t load_path(rt_registry_t *reg, const char *path) {
    rt_plugin_rec_t *rec = new_path_record(reg, path);
    if (rec == NULL) return RT_ERR_OUT_OF_MEMORY;
    rt_status_t st = rt_plugin_open(reg, rec);
    if (st == RT_OK) st = rt_plugin_start(reg, rec);
    if (st == RT_OK) st = wrap_devices(reg, rec), rt_plugin_started(reg, rec);
    return st;
}

//===--- scanning ---===//

typedef struct scan {
    const rt_allocator_t *a;
    char **files;
    int32_t n, cap;
    bool failed;
} scan_t;

static void scan_add(void *ctx, const char *file) {
    scan_t *s = ctx;
    char name[256];
    if (s->failed || !rt_plugin_file_name(file, name, sizeof name)) return;
    char *copy = rt_mem_strdup(s->a, file);
    if (copy == NULL || !grow(s->a, (void **)&s->files, s->n, &s->cap, sizeof s->files[0])) {
        rt_mem_free_str(s->a, copy);
        s->failed = true;
        return;
    }
    s->files[s->n++] = copy;
}

static int compare_files(const void *pa, const void *pb) {
    char a[256], b[256];
    rt_plugin_file_name(*(char *const *)pa, a, sizeof a);
    rt_plugin_file_name(*(char *const *)pb, b, sizeof b);
    return strcmp(a, b);
}

/* A file found on the search path is opened and queried now, unless an
 * earlier file of its NAME has loaded (then it is shadowed) or is still to
 * be started (then it stands by in case that one fails). */
static rt_status_t consider(rt_registry_t *reg, const char *dir, const char *file) {
    char path[4096], name[256];
    const int n = snprintf(path, sizeof path, "%s/%s", dir, file);
    if (n < 0 || (size_t)n >= sizeof path) return RT_OK; /* longer than any real path */
    rt_plugin_file_name(file, name, sizeof name);
    if (filtered_out(name)) return RT_OK;
    rt_plugin_rec_t *first = find_by_file_name(reg, name, false);
    rt_plugin_rec_t *rec = new_path_record(reg, path);
    if (rec == NULL) return RT_ERR_OUT_OF_MEMORY;
    if (first != NULL && first->live) shadow(reg, rec, first, name);
    else if (first != NULL) rec->standby = true;
    else return open_admitted(reg, rec); /* a refused plugin is recorded */
    return RT_OK;
}

/* Plugins of one directory in NAME order; a missing directory is fine. */
static rt_status_t scan_dir(rt_registry_t *reg, const char *dir) {
    scan_t s = {.a = &reg->allocator};
    rt_status_t st = RT_OK;
    if (!rt_os_list_dir(dir, scan_add, &s))
        rt_log(RT_LOG_DEBUG, "plugin directory %s: cannot be listed", dir);
    if (s.failed) st = rt_error(RT_ERR_OUT_OF_MEMORY, "%s: no memory to list it", dir);
    if (s.n > 1) qsort(s.files, (size_t)s.n, sizeof s.files[0], compare_files);
    for (int32_t i = 0; i < s.n; i++) {
        if (st == RT_OK) st = consider(reg, dir, s.files[i]);
        rt_mem_free_str(s.a, s.files[i]);
    }
    rt_mem_free(s.a, s.files, (size_t)s.cap * sizeof s.files[0]);
    return st;
}

static rt_status_t scan_all(rt_registry_t *reg) {
    char dir[4096];
    rt_status_t st = RT_OK;
    for (const char *p = reg->search_path; p != NULL && *p != '\0' && st == RT_OK;) {
        p = split_next(p, ':', dir, sizeof dir);
        if (dir[0] != '\0') st = scan_dir(reg, dir);
    }
    return st;
}

//===--- rt_registry_t ---===//

/* The version the core serves an application that declared app_abi: the
 * lower of the two (an application newer than the core gets what the core
 * has); 0, from a caller that set nothing, is 1.0. */
static rt_status_t app_version(uint32_t app_abi, uint32_t *out) {
    if (app_abi == 0) app_abi = RT_ABI_MAKE_VERSION(1, 0);
    *out = app_abi < RT_ABI_VERSION ? app_abi : RT_ABI_VERSION;
    if (RT_ABI_VERSION_GET_MAJOR(app_abi) == RT_ABI_VERSION_MAJOR) return RT_OK;
    return rt_error(RT_ERR_INCOMPATIBLE, "rt_registry_create: the application was built for ABI "
                    "%u.%u; this runtime speaks %u.%u", RT_ABI_VERSION_GET_MAJOR(app_abi),
                    RT_ABI_VERSION_GET_MINOR(app_abi), RT_ABI_VERSION_MAJOR,
                    RT_ABI_VERSION_MINOR);
}

/* The 1.0 entry point (rt.h turns new callers' rt_registry_create into
 * rt_registry_create_v2; the parentheses keep that macro out of here). */
rt_status_t (rt_registry_create)(const rt_registry_options_t *options,
                                 rt_registry_t **out_registry) {
    return rt_registry_create_v2(options, RT_ABI_MAKE_VERSION(1, 0), out_registry);
}

rt_status_t rt_registry_create_v2(const rt_registry_options_t *options, uint32_t app_abi_version,
                                  rt_registry_t **out_registry) {
    RT_ARMOR(out_registry != NULL);
    *out_registry = NULL;
    rt_registry_options_t opt;
    RT_COPY_IN(&opt, options, rt_registry_options_t, plugin_path);
    uint32_t app_abi = 0;
    rt_status_t st = app_version(app_abi_version, &app_abi);
    if (st != RT_OK) return st;
    const rt_allocator_t *a = opt.allocator != NULL ? opt.allocator : rt_allocator_default();
    rt_registry_t *reg = rt_mem_calloc(a, sizeof *reg);
    if (reg == NULL) return rt_error(RT_ERR_OUT_OF_MEMORY, "rt_registry_create: no memory");
    reg->allocator = *a;
    reg->app_abi = app_abi;
    reg->admit = opt.admit;
    reg->admit_user_data = opt.admit_user_data;
    reg->buffers.prev = reg->buffers.next = &reg->buffers;
    reg->queues.prev = reg->queues.next = &reg->queues;
    rt_plugin_host_init(&reg->host, &reg->allocator);
    reg->lock = rt_os_mutex_create(&reg->allocator);
    reg->load_lock = rt_os_mutex_create(&reg->allocator);
    st = reg->lock != NULL && reg->load_lock != NULL
             ? RT_OK
             : rt_error(RT_ERR_OUT_OF_MEMORY, "rt_registry_create: no memory for a mutex");
    if (st == RT_OK) st = build_search_path(reg, opt.plugin_path);
    if (st == RT_OK && !opt.no_scan) st = scan_all(reg);
    if (st != RT_OK) {
        rt_registry_destroy(reg);
        return st;
    }
    *out_registry = reg;
    return RT_OK;
}

void rt_registry_destroy(rt_registry_t *reg) {
    if (reg == NULL) return;
    while (reg->queues.next != &reg->queues)
        rt_queue_destroy(RT_CONTAINER_OF(reg->queues.next, rt_queue_t, link));
    while (reg->buffers.next != &reg->buffers)
        rt_buffer_free(RT_CONTAINER_OF(reg->buffers.next, rt_buffer_t, link));
    for (int32_t i = 0; i < reg->n_devices; i++) rt_device_unwrap(reg->devices[i]);
    rt_mem_free(&reg->allocator, reg->devices, (size_t)reg->cap_devices * sizeof reg->devices[0]);
    for (int32_t i = reg->n_plugins - 1; i >= 0; i--) {
        rt_plugin_close(reg, reg->plugins[i]);
        rt_mem_free(&reg->allocator, reg->plugins[i], sizeof *reg->plugins[i]);
    }
    rt_mem_free(&reg->allocator, reg->plugins, (size_t)reg->cap_plugins * sizeof reg->plugins[0]);
    rt_mem_free(&reg->allocator, reg->search_path, reg->search_path_cap);
    rt_os_mutex_destroy(&reg->allocator, reg->lock);
    rt_os_mutex_destroy(&reg->allocator, reg->load_lock);
    const rt_allocator_t a = reg->allocator;
    rt_mem_free(&a, reg, sizeof *reg);
}

rt_status_t rt_registry_load_plugin(rt_registry_t *reg, const char *path) {
    RT_ARMOR(reg != NULL);
    if (path == NULL || path[0] != '/')
        return rt_error(RT_ERR_INVALID_ARGUMENT, "rt_registry_load_plugin: \"%s\" is not an "
                        "absolute path", path != NULL ? path : "(null)");
    return load_path(reg, path);
}

uint32_t rt_registry_app_abi_version(const rt_registry_t *reg) {
    return reg != NULL ? reg->app_abi : 0;
}

int32_t rt_registry_plugin_count(const rt_registry_t *reg) {
    reg = started(reg); /* a record's status says whether it started */
    return reg != NULL ? reg->n_plugins : 0;
}

const rt_plugin_info_t *rt_registry_plugin(const rt_registry_t *reg, int32_t i) {
    reg = started(reg);
    if (reg == NULL || i < 0 || i >= reg->n_plugins) return NULL;
    return &reg->plugins[i]->info;
}

const char *rt_registry_search_path(const rt_registry_t *reg) {
    return reg != NULL && reg->search_path != NULL ? reg->search_path : "";
}

int32_t rt_registry_device_count(const rt_registry_t *reg) {
    reg = started(reg);
    return reg != NULL ? reg->n_devices : 0;
}

rt_device_t *rt_registry_device(const rt_registry_t *reg, int32_t i) {
    reg = started(reg);
    if (reg == NULL || i < 0 || i >= reg->n_devices) return NULL;
    return reg->devices[i];
}

static rt_device_t *find_device(const rt_registry_t *reg, const char *name) {
    for (int32_t i = 0; i < reg->n_devices; i++)
        if (strcmp(reg->devices[i]->name, name) == 0) return reg->devices[i];
    return NULL;
}

/* Starts only the plugin the name points at, so that asking for cpu0
 * costs no GPU driver's start-up; a name that no pending plugin's name
 * begins (a file standing by may name itself otherwise) is looked for
 * again among all of them. */
rt_device_t *rt_registry_device_by_name(const rt_registry_t *creg, const char *name) {
    rt_registry_t *reg = (rt_registry_t *)creg;
    if (reg == NULL || name == NULL) return NULL;
    if (__atomic_load_n(&reg->all_started, __ATOMIC_ACQUIRE)) return find_device(reg, name);
    int tried = 0;
    rt_os_mutex_lock(reg->load_lock);
    rt_device_t *dev = find_device(reg, name);
    if (dev == NULL) {
        start_pending(reg, name, &tried);
        dev = find_device(reg, name);
    }
    rt_os_mutex_unlock(reg->load_lock);
    return dev != NULL || tried > 0 ? dev : find_device(started(reg), name);
}
