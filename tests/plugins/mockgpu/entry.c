/* SPDX-License-Identifier: MIT */
/* entry.c: mockgpu's one exported symbol, its instances (one per
 * plugin_create, nothing global but the counters hook's pointer), their
 * configuration from the environment, and the CPU plugin each delegates
 * arithmetic to. */
#define MOCKGPU_INTERNAL
#include "mockgpu.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

mockgpu_t *_Atomic mockgpu_latest;

static const mockgpu_ext_counters_t counters_ext = {
    {sizeof counters_ext, MOCKGPU_EXT_COUNTERS, NULL},
    mockgpu_get_counters,
    mockgpu_reset_counters,
};

/* Splits s at commas into at most n items of size item_size. */
static int split_list(const char *s, char (*items)[64], int n) {
    int count = 0;
    while (s != NULL && *s && count < n) {
        const char *end = strchr(s, ',');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        if (len >= 64) len = 63;
        memcpy(items[count], s, len);
        items[count++][len] = 0;
        s = end ? end + 1 : NULL;
    }
    return count;
}

static uint64_t parse_size(const char *s) {
    char *end;
    double v = strtod(s, &end);
    switch (*end) {
    case 'k': case 'K': v *= 1024.0; break;
    case 'm': case 'M': v *= 1024.0 * 1024.0; break;
    case 'g': case 'G': v *= 1024.0 * 1024.0 * 1024.0; break;
    default: break;
    }
    return v > 0 ? (uint64_t)v : 0;
}

static void configure_devices(mockgpu_t *m) {
    const char *count = getenv("RT_MOCKGPU_COUNT");
    int n = count ? atoi(count) : 2;
    m->n_devices = (uint32_t)(n < 0 ? 0 : n > MOCKGPU_MAX_DEVICES ? MOCKGPU_MAX_DEVICES : n);
    char mem[MOCKGPU_MAX_DEVICES][64], pci[MOCKGPU_MAX_DEVICES][64];
    const int n_mem = split_list(getenv("RT_MOCKGPU_MEMORY"), mem, MOCKGPU_MAX_DEVICES);
    const int n_pci = split_list(getenv("RT_MOCKGPU_PCI"), pci, MOCKGPU_MAX_DEVICES);
    char gbps[MOCKGPU_MAX_DEVICES][64], copy[MOCKGPU_MAX_DEVICES][64];
    const int n_gbps = split_list(getenv("RT_MOCKGPU_GBPS"), gbps, MOCKGPU_MAX_DEVICES);
    const int n_copy = split_list(getenv("RT_MOCKGPU_COPY_US"), copy, MOCKGPU_MAX_DEVICES);
    for (uint32_t i = 0; i < m->n_devices; i++) {
        mockgpu_device_t *d = &m->devices[i];
        memset(d, 0, sizeof *d);
        d->owner = m;
        d->index = i;
        d->memory = n_mem ? parse_size(mem[(int)i < n_mem ? (int)i : n_mem - 1]) : (1ull << 30);
        if ((int)i < n_pci) snprintf(d->pci, sizeof d->pci, "%.31s", pci[i]);
        if (n_gbps) d->gbps = atof(gbps[(int)i < n_gbps ? (int)i : n_gbps - 1]);
        if (n_copy) d->copy_us = atof(copy[(int)i < n_copy ? (int)i : n_copy - 1]);
        if (!(d->gbps > 0)) d->gbps = 0;
        if (!(d->copy_us > 0)) d->copy_us = 0;
        const char *report = getenv("RT_MOCKGPU_REPORT_SPEED");
        d->report_speed = report && strcmp(report, "1") == 0;
    }
}

static rt_op_t op_by_name(const char *name) {
    static const char *const names[] = {
        "NONE", "VIEW", "RESHAPE", "PERMUTE", "TRANSPOSE", "CONT", "CPY", "GET_ROWS",
        "ADD", "SUB", "MUL", "DIV", "SCALE", "NORM", "RMS_NORM", "MUL_MAT", "SOFT_MAX",
        "DIAG_MASK_INF", "GELU", "SILU", "SWIGLU", "ROPE", "ARGMAX", "SET_ROWS",
    };
    for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++)
        if (strcmp(names[i], name) == 0) return i;
    return -1;
}

static void configure_ops(mockgpu_t *m) {
    const char *list = getenv("RT_MOCKGPU_OPS");
    for (int i = 0; i < RT_OP_COUNT; i++) m->op_allowed[i] = list == NULL;
    char items[RT_OP_COUNT][64];
    const int n = split_list(list, items, RT_OP_COUNT);
    for (int i = 0; i < n; i++) {
        const rt_op_t op = op_by_name(items[i]);
        if (op >= 0) m->op_allowed[op] = true;
        else m->host->log(RT_LOG_WARN, "mockgpu: unknown op '%s' in RT_MOCKGPU_OPS", items[i]);
    }
    /* the view family computes nothing; every device runs it */
    for (rt_op_t op = RT_OP_NONE; op <= RT_OP_TRANSPOSE; op++) m->op_allowed[op] = true;
}

/* A plugin file's suffix on this OS (build.ninja passes its $dso). */
#ifndef MOCKGPU_DSO
#  define MOCKGPU_DSO ".so"
#endif

static void cpu_plugin_path(char *buf, size_t size) {
    const char *env = getenv("RT_MOCKGPU_CPU_PLUGIN");
    if (env != NULL) {
        snprintf(buf, size, "%s", env);
        return;
    }
    /* The core loads plugins through /proc/self/fd/N (the descriptor it
     * checked), so the name dladdr gives may be that link: realpath turns
     * it into the file's path, whose directory is ours. */
    Dl_info info;
    char self[4096];
    buf[0] = 0;
    if (dladdr((void *)cpu_plugin_path, &info) && info.dli_fname &&
        realpath(info.dli_fname, self) != NULL) {
        const char *slash = strrchr(self, '/');
        const int dir_len = slash ? (int)(slash - self) : 1;
        snprintf(buf, size, "%.*s/../../../lib/rt-plugins/rt-plugin-cpu" MOCKGPU_DSO, dir_len,
                 slash ? self : ".");
    }
}

/* The CPU plugin mockgpu drives. One that is mockgpu itself (the same
 * object, or another copy by its name) is refused: each would load the
 * next until the stack ran out. */
static rt_status_t load_cpu_plugin(mockgpu_t *m) {
    char path[4096];
    cpu_plugin_path(path, sizeof path);
    m->cpu_dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (m->cpu_dl == NULL)
        return m->host->set_error(RT_ERR_NOT_FOUND, "mockgpu: cannot load the CPU plugin %s: %s", path,
                                  dlerror());
    rt_plugin_query_fn query = (rt_plugin_query_fn)dlsym(m->cpu_dl, RT_PLUGIN_QUERY_SYMBOL);
    if (query == rt_plugin_query)
        return m->host->set_error(RT_ERR_INVALID_ARGUMENT, "mockgpu: the CPU plugin %s is mockgpu "
                                  "itself (RT_MOCKGPU_CPU_PLUGIN)", path);
    m->cpu_plugin = query ? query(RT_ABI_VERSION, m->host) : NULL;
    if (m->cpu_plugin == NULL)
        return m->host->set_error(RT_ERR_INCOMPATIBLE, "mockgpu: %s declined", path);
    if (m->cpu_plugin->name != NULL && strcmp(m->cpu_plugin->name, "mockgpu") == 0)
        return m->host->set_error(RT_ERR_INVALID_ARGUMENT, "mockgpu: the CPU plugin %s is a mockgpu "
                                  "(RT_MOCKGPU_CPU_PLUGIN)", path);
    const rt_plugin_vtable_t *vt = m->cpu_plugin->vtable;
    rt_status_t st = vt->create(m->host, &m->cpu_handle);
    if (st != RT_OK) return st;
    if (vt->device_count(m->cpu_handle) < 1)
        return m->host->set_error(RT_ERR_NOT_FOUND, "mockgpu: the CPU plugin has no device");
    return vt->device_get(m->cpu_handle, 0, &m->cpu_device, &m->cpu_vt);
}

static void plugin_destroy(void *plugin) {
    mockgpu_t *m = plugin;
    if (m == NULL) return;
    mockgpu_t *expected = m;
    atomic_compare_exchange_strong(&mockgpu_latest, &expected, NULL);
    if (m->cpu_handle) m->cpu_plugin->vtable->destroy(m->cpu_handle);
    /* the CPU plugin is not unload-safe; its object stays mapped */
    m->host->allocator.realloc(m->host->allocator.user_data, m, sizeof *m, 0);
}

static rt_status_t plugin_create(const rt_host_t *host, void **out_plugin) {
    *out_plugin = NULL;
    mockgpu_t *m = host->allocator.realloc(host->allocator.user_data, NULL, 0, sizeof *m);
    if (m == NULL) return host->set_error(RT_ERR_OUT_OF_MEMORY, "mockgpu: no memory");
    memset(m, 0, sizeof *m);
    m->host = host;
    configure_devices(m);
    configure_ops(m);
    rt_status_t st = load_cpu_plugin(m);
    if (st != RT_OK) {
        plugin_destroy(m);
        return st;
    }
    mockgpu_latest = m;
    *out_plugin = m;
    return RT_OK;
}

static uint32_t plugin_device_count(void *plugin) {
    return ((mockgpu_t *)plugin)->n_devices;
}

static rt_status_t plugin_device_get(void *plugin, uint32_t index, void **out_device,
                                     const rt_device_vtable_t **out_vtable) {
    mockgpu_t *m = plugin;
    if (index >= m->n_devices)
        return m->host->set_error(RT_ERR_INVALID_ARGUMENT, "mockgpu: no device %u", index);
    *out_device = &m->devices[index];
    *out_vtable = &mockgpu_device_vtable;
    return RT_OK;
}

static const rt_plugin_vtable_t plugin_vtable = {
    sizeof plugin_vtable, 0, plugin_destroy, plugin_create, plugin_device_count, plugin_device_get,
};

static const rt_plugin_t plugin = {
    sizeof plugin,
    RT_ABI_VERSION,
    "mockgpu",
    "discrete GPUs with private memory, for tests",
    "1.0",
    0,
    &counters_ext.header,
    &plugin_vtable,
};

RT_PLUGIN_EXPORT const rt_plugin_t *rt_plugin_query(uint32_t max_abi, const rt_host_t *host) {
    (void)host; /* each instance keeps the host plugin_create is given */
    if (RT_ABI_VERSION_GET_MAJOR(max_abi) != RT_ABI_VERSION_MAJOR) return NULL;
    return &plugin;
}
