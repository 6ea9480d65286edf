/* SPDX-License-Identifier: MIT */
/* plugin.c: turning one plugin file into a loaded plugin record. Refuses a
 * file that other users can write, opens the shared object, finds its entry
 * point, negotiates the ABI version, validates the tables the plugin
 * returns and copies them into the zero-filled structs of registry_impl.h
 * (the one place where struct_size rules are applied); starting the plugin
 * (create) is a separate step, which the registry takes only when one of
 * the plugin's devices is needed. Every refusal is recorded in the record with a message naming
 * the file; nothing here aborts. Also owns the host table handed to plugins
 * and the helpers device.c shares for normalising plugin structs and
 * walking extension chains. */
#include "buffer_impl.h"
#include "os.h"
#include "plugin_impl.h"
#include "registry_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define PLUGIN_SIZE_1_0 RT_SIZE_THROUGH(rt_plugin_t, vtable)
#define PLUGIN_VTABLE_SIZE_1_0 RT_SIZE_THROUGH(rt_plugin_vtable_t, device_get)
#define PLUGIN_NAME_MAX 23 /* so that "name" + a device index fits rt_device_t.name */

//===--- shared helpers ---===//

rt_status_t rt_ext_walk(const rt_ext_header_t *head, const char *owner,
                        rt_status_t (*visit)(void *ctx, const rt_ext_header_t *rec), void *ctx) {
    int n = 0;
    for (const rt_ext_header_t *r = head; r != NULL; r = r->next) {
        if (++n > RT_EXT_MAX)
            return rt_error(RT_ERR_FORMAT, "%s: extension chain longer than %d records (a loop?)",
                            owner, RT_EXT_MAX);
        /* Its type is not read: struct_size may not cover it (rule 1). */
        if (r->struct_size < sizeof *r)
            return rt_error(RT_ERR_FORMAT, "%s: extension record %d is %u bytes, smaller than "
                            "its %zu-byte header", owner, n, r->struct_size, sizeof *r);
        rt_status_t st = visit(ctx, r);
        if (st != RT_OK) return st;
    }
    return RT_OK;
}

void rt_error_snapshot(rt_error_snapshot_t *snap) { snap->seq = rt_error_seq(); }

rt_status_t rt_plugin_failed(rt_status_t status, const rt_error_snapshot_t *snap,
                             const char *what) {
    return rt_error_wrap_since(status, snap->seq, "%s", what);
}

//===--- the host table ---===//

static void *host_buffer_state(const struct rt_buffer *buffer) { return rt_buffer_state(buffer); }

static bool host_buffer_is_host(const struct rt_buffer *buffer) {
    return rt_buffer_is_host(buffer);
}

static const rt_buffer_type_desc_t *host_buffer_type(const struct rt_buffer *buffer) {
    return buffer != NULL ? buffer->buft->plugin_desc : NULL;
}

/* The plugin being started on this thread, whose log lines are kept. */
static _Thread_local rt_plugin_rec_t *starting;

static void host_log(rt_log_level_t level, const char *fmt, ...) {
    va_list ap, copy;
    va_start(ap, fmt);
    va_copy(copy, ap);
    if (starting != NULL && level >= RT_LOG_INFO) vsnprintf(starting->said, sizeof starting->said, fmt, copy);
    va_end(copy);
    rt_log_v(level, fmt, ap);
    va_end(ap);
}

void rt_plugin_host_init(rt_host_t *host, const rt_allocator_t *a) {
    memset(host, 0, sizeof *host);
    host->struct_size = sizeof *host;
    host->abi_version = RT_ABI_VERSION;
    host->allocator = *a;
    host->log = host_log;
    host->set_error = rt_error;
    host->type_traits = rt_type_traits;
    host->tensor_nbytes = rt_nbytes;
    host->tensor_is_contiguous = rt_is_contiguous;
    host->row_size = rt_row_size;
    host->buffer_state = host_buffer_state;
    host->buffer_is_host = host_buffer_is_host;
    host->buffer_type = host_buffer_type;
}

//===--- refusing ---===//

static void forget_tables(rt_plugin_rec_t *rec) {
    memset(&rec->desc, 0, sizeof rec->desc);
    memset(&rec->vtable, 0, sizeof rec->vtable);
}

/* Records status and the current message in rec. Before create has run
 * the shared object is closed again (query has no side effects); after a
 * failed create only when the plugin declared unloading safe. */
static rt_status_t refuse(rt_registry_t *reg, rt_plugin_rec_t *rec, rt_status_t status,
                          bool created) {
    rt_mem_free_str(&reg->allocator, rec->message);
    rec->message = rt_mem_strdup(&reg->allocator, rt_last_error());
    rec->info.message = rec->message != NULL ? rec->message : "";
    rec->info.status = status;
    if (!created || (rec->desc.flags & RT_PLUGIN_FLAG_UNLOAD_SAFE) != 0) {
        rt_dl_close(rec->dl);
        rec->dl = NULL;
    }
    forget_tables(rec); /* they point into the plugin, which may be gone */
    return status;
}

//===--- validating what query returned ---===//

static rt_status_t check_version(const rt_plugin_rec_t *rec, uint32_t v) {
    const bool ok = RT_ABI_VERSION_GET_MAJOR(v) == RT_ABI_VERSION_MAJOR && v >= RT_ABI_MIN;
    if (ok) return RT_OK;
    return rt_error(RT_ERR_INCOMPATIBLE,
                    "%s: plugin ABI %u.%u is not supported by this runtime (ABI %u.%u, which "
                    "accepts %u.%u up to %u.x)", rec->path, RT_ABI_VERSION_GET_MAJOR(v),
                    RT_ABI_VERSION_GET_MINOR(v), RT_ABI_VERSION_MAJOR, RT_ABI_VERSION_MINOR,
                    RT_ABI_VERSION_GET_MAJOR(RT_ABI_MIN), RT_ABI_VERSION_GET_MINOR(RT_ABI_MIN),
                    RT_ABI_VERSION_MAJOR);
}

static rt_status_t check_name(const rt_plugin_rec_t *rec, const char *name) {
    size_t n = name != NULL ? strlen(name) : 0;
    bool ok = n >= 1 && n <= PLUGIN_NAME_MAX;
    for (size_t i = 0; ok && i < n; i++)
        ok = (name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') ||
             name[i] == '_';
    if (ok) return RT_OK;
    return rt_error(RT_ERR_FORMAT, "%s: plugin name \"%s\" is not 1 to %d characters of "
                    "[a-z0-9_]", rec->path, name != NULL ? name : "(null)", PLUGIN_NAME_MAX);
}

static rt_status_t check_vtable(const rt_plugin_rec_t *rec, const rt_plugin_vtable_t *vt) {
    if (vt == NULL) return rt_error(RT_ERR_FORMAT, "%s: rt_plugin_t.vtable is NULL", rec->path);
    if (vt->struct_size < PLUGIN_VTABLE_SIZE_1_0)
        return rt_error(RT_ERR_FORMAT, "%s: rt_plugin_vtable_t is %u bytes, smaller than the "
                        "1.0 layout's %zu", rec->path, vt->struct_size, PLUGIN_VTABLE_SIZE_1_0);
    const char *missing = vt->destroy == NULL       ? "destroy"
                          : vt->create == NULL       ? "create"
                          : vt->device_count == NULL ? "device_count"
                          : vt->device_get == NULL   ? "device_get"
                                                     : NULL;
    if (missing == NULL) return RT_OK;
    return rt_error(RT_ERR_FORMAT, "%s: required slot rt_plugin_vtable_t.%s is NULL", rec->path,
                    missing);
}

/* rt_plugin_t has no extension types yet: the walk only guards the chain. */
static rt_status_t skip_record(void *ctx, const rt_ext_header_t *r) {
    (void)ctx;
    rt_log(RT_LOG_DEBUG, "skipping plugin extension record of unknown type %u", r->type);
    return RT_OK;
}

static rt_status_t check_unique(const rt_registry_t *reg, const rt_plugin_rec_t *rec) {
    for (int32_t i = 0; i < reg->n_plugins; i++) {
        const rt_plugin_rec_t *other = reg->plugins[i];
        if (other != rec && other->live && strcmp(other->desc.name, rec->desc.name) == 0)
            return rt_error(RT_ERR_UNSUPPORTED, "%s: a plugin named \"%s\" is already loaded "
                            "from %s", rec->path, rec->desc.name, other->path);
    }
    return RT_OK;
}

rt_status_t rt_plugin_adopt(rt_registry_t *reg, rt_plugin_rec_t *rec, const rt_plugin_t *plugin) {
    if (plugin->struct_size < PLUGIN_SIZE_1_0)
        return rt_error(RT_ERR_FORMAT, "%s: rt_plugin_t is %u bytes, smaller than the 1.0 "
                        "layout's %zu", rec->path, plugin->struct_size, PLUGIN_SIZE_1_0);
    rec->info.abi_version = plugin->abi_version;
    rt_status_t st = check_version(rec, plugin->abi_version);
    if (st == RT_OK) st = check_name(rec, plugin->name);
    if (st == RT_OK) st = check_vtable(rec, plugin->vtable);
    if (st == RT_OK) st = rt_ext_walk(plugin->next, rec->path, skip_record, NULL);
    if (st != RT_OK) return st;
    rt_struct_copy(&rec->desc, sizeof rec->desc, plugin, plugin->struct_size);
    rt_struct_copy(&rec->vtable, sizeof rec->vtable, plugin->vtable, plugin->vtable->struct_size);
    rec->desc.struct_size = sizeof rec->desc;
    rec->vtable.struct_size = sizeof rec->vtable;
    rec->desc.vtable = &rec->vtable;
    if (rec->desc.description == NULL) rec->desc.description = "";
    if (rec->desc.version == NULL) rec->desc.version = "";
    char *name = rt_mem_strdup(&reg->allocator, rec->desc.name);
    if (name == NULL) return rt_error(RT_ERR_OUT_OF_MEMORY, "%s: no memory for its name", rec->path);
    rt_mem_free_str(&reg->allocator, rec->name);
    rec->name = name;
    rec->info.name = name;
    return RT_OK;
}

//===--- opening ---===//

bool rt_plugin_file_name(const char *path, char *buf, size_t size) {
    static const char prefix[] = "rt-plugin-";
    const char *suffix = rt_dl_suffix();
    const size_t np = sizeof prefix - 1, ns = strlen(suffix);
    const char *base = strrchr(path, '/');
    base = base != NULL ? base + 1 : path;
    const size_t n = strlen(base);
    if (n <= np + ns || strncmp(base, prefix, np) != 0 || strcmp(base + n - ns, suffix) != 0 ||
        n - np - ns + 1 > size)
        return false;
    memcpy(buf, base + np, n - np - ns);
    buf[n - np - ns] = '\0';
    return true;
}

rt_status_t rt_plugin_init(rt_registry_t *reg, rt_plugin_rec_t *rec, const char *path) {
    char name[256];
    const char *base = strrchr(path, '/');
    if (!rt_plugin_file_name(path, name, sizeof name))
        snprintf(name, sizeof name, "%s", base != NULL ? base + 1 : path);
    rec->info.struct_size = sizeof rec->info;
    rec->path = rt_mem_strdup(&reg->allocator, path);
    rec->name = rt_mem_strdup(&reg->allocator, name);
    rec->info.path = rec->path != NULL ? rec->path : "";
    rec->info.name = rec->name != NULL ? rec->name : "";
    rec->info.message = "";
    if (rec->path == NULL || rec->name == NULL)
        return rt_error(RT_ERR_OUT_OF_MEMORY, "%s: no memory for the plugin record", path);
    return RT_OK;
}

/* A file someone else could have changed is never opened: dlopen runs its
 * constructors with this process's rights. The file is opened once, its
 * path checked on the way, and that descriptor loaded. */
static rt_status_t open_checked(rt_plugin_rec_t *rec) {
    char why[1024];
    bool refused = false;
    const int fd = rt_os_open_plugin(rec->path, &refused, why, sizeof why);
    if (fd < 0 && refused) return rt_error(RT_ERR_UNSUPPORTED, "%s: refused: %s", rec->path, why);
    if (fd < 0) return rt_error(RT_ERR_IO, "%s: cannot be loaded: %s", rec->path, why);
    /* Each step is logged before it runs, so that a plugin that kills the
     * process is named by the last line (RT_LOG=info). */
    rt_log(RT_LOG_INFO, "plugin %s: opening (its constructors run now)", rec->path);
    rec->dl = rt_dl_open_fd(fd, why, sizeof why);
    if (rec->dl == NULL) return rt_error(RT_ERR_IO, "%s: cannot be loaded: %s", rec->path, why);
    return RT_OK;
}

static rt_status_t query(rt_registry_t *reg, rt_plugin_rec_t *rec, const rt_plugin_t **out) {
    void *sym = rt_dl_sym(rec->dl, RT_PLUGIN_QUERY_SYMBOL);
    if (sym == NULL)
        return rt_error(RT_ERR_NOT_FOUND, "%s: has no %s symbol (not an rt plugin?)", rec->path,
                        RT_PLUGIN_QUERY_SYMBOL);
    rt_plugin_query_fn fn;
    memcpy(&fn, &sym, sizeof fn); /* object to function pointer, as POSIX allows */
    rt_log(RT_LOG_INFO, "plugin %s: calling %s(%u.%u)", rec->path, RT_PLUGIN_QUERY_SYMBOL,
           RT_ABI_VERSION_MAJOR, RT_ABI_VERSION_MINOR);
    *out = fn(RT_ABI_VERSION, &reg->host);
    if (*out == NULL)
        return rt_error(RT_ERR_UNSUPPORTED, "%s: declined to load (rt_plugin_query returned "
                        "NULL for runtime ABI %u.%u)", rec->path, RT_ABI_VERSION_MAJOR,
                        RT_ABI_VERSION_MINOR);
    return RT_OK;
}

static rt_status_t create(rt_registry_t *reg, rt_plugin_rec_t *rec) {
    rt_error_snapshot_t snap;
    char what[1024];
    rt_error_snapshot(&snap);
    void *handle = NULL;
    rt_log(RT_LOG_INFO, "plugin %s: \"%s\" speaks ABI %u.%u; calling create", rec->path,
           rec->desc.name, RT_ABI_VERSION_GET_MAJOR(rec->info.abi_version),
           RT_ABI_VERSION_GET_MINOR(rec->info.abi_version));
    rt_status_t st = rec->vtable.create(&reg->host, &handle);
    if (st == RT_OK) {
        rec->handle = handle;
        rec->live = true;
        return RT_OK;
    }
    snprintf(what, sizeof what, "%s: plugin \"%s\" failed to start (%s)", rec->path,
             rec->desc.name, rt_status_name(st));
    return rt_plugin_failed(st, &snap, what);
}

rt_status_t rt_plugin_open(rt_registry_t *reg, rt_plugin_rec_t *rec) {
    const rt_plugin_t *plugin = NULL;
    rt_status_t st = open_checked(rec);
    if (st == RT_OK) st = query(reg, rec, &plugin);
    if (st == RT_OK) st = rt_plugin_adopt(reg, rec, plugin);
    if (st != RT_OK) {
        refuse(reg, rec, st, false);
        rt_log(RT_LOG_WARN, "plugin not loaded: %s", rec->info.message);
        return st;
    }
    rec->pending = true;
    rt_log(RT_LOG_INFO, "plugin %s (ABI %u.%u) found at %s; started when one of its devices is "
           "needed", rec->desc.name, RT_ABI_VERSION_GET_MAJOR(rec->info.abi_version),
           RT_ABI_VERSION_GET_MINOR(rec->info.abi_version), rec->path);
    return RT_OK;
}

rt_status_t rt_plugin_start(rt_registry_t *reg, rt_plugin_rec_t *rec) {
    RT_ASSERT(rec->pending);
    rec->pending = false;
    rec->said[0] = '\0';
    starting = rec;
    rt_status_t st = check_unique(reg, rec);
    const bool started = st == RT_OK; /* create runs: the plugin may have side effects */
    if (st == RT_OK) st = create(reg, rec);
    if (st != RT_OK) {
        starting = NULL;
        refuse(reg, rec, st, started);
        rt_log(RT_LOG_WARN, "plugin not loaded: %s", rec->info.message);
        return st;
    }
    rec->info.status = RT_OK;
    rt_log(RT_LOG_INFO, "loaded plugin %s (ABI %u.%u) from %s", rec->desc.name,
           RT_ABI_VERSION_GET_MAJOR(rec->info.abi_version),
           RT_ABI_VERSION_GET_MINOR(rec->info.abi_version), rec->path);
    return RT_OK;
}

void rt_plugin_started(rt_registry_t *reg, rt_plugin_rec_t *rec) {
    starting = NULL;
    if (rec->info.status != RT_OK || rec->info.n_devices > 0) return;
    char why[320];
    snprintf(why, sizeof why, "%s", rec->said[0] ? rec->said : "it reported no devices and logged no reason");
    rt_mem_free_str(&reg->allocator, rec->message);
    rec->message = rt_mem_strdup(&reg->allocator, why);
    rec->info.message = rec->message != NULL ? rec->message : "";
}

rt_status_t rt_plugin_skip(rt_registry_t *reg, rt_plugin_rec_t *rec, rt_status_t status) {
    refuse(reg, rec, status, false);
    rt_log(RT_LOG_INFO, "plugin not loaded: %s", rec->info.message);
    return status;
}

void rt_plugin_close(rt_registry_t *reg, rt_plugin_rec_t *rec) {
    if (rec == NULL) return;
    if (rec->live) rec->vtable.destroy(rec->handle);
    /* A refused plugin's handle is closed already or kept on purpose. One
     * never started ran only query, but its constructors ran at dlopen
     * (a static C++ runtime's pools, say): unloading it is as safe as the
     * plugin says, no more. */
    if ((rec->live || rec->pending) && (rec->desc.flags & RT_PLUGIN_FLAG_UNLOAD_SAFE) != 0)
        rt_dl_close(rec->dl);
    rec->pending = rec->standby = false;
    rec->live = false;
    rec->handle = NULL;
    rec->dl = NULL;
    rt_mem_free_str(&reg->allocator, rec->path);
    rt_mem_free_str(&reg->allocator, rec->name);
    rt_mem_free_str(&reg->allocator, rec->message);
    rec->path = rec->name = rec->message = NULL;
}
