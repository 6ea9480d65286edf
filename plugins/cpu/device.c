/* SPDX-License-Identifier: MIT */
/* device.c: the CPU plugin's one device. Its properties (model name from
 * /proc/cpuinfo, memory from /proc/meminfo or sysconf, the kernel path in
 * the description), its buffer types (host memory, "CPU"; repacked
 * weights, "CPU_Weights", weights.c) and the host-pointer extension, which buffer types it can compute on, and its
 * queues: each queue is a thread pool (threadpool.c), and graph_compute
 * checks every node before it runs any. */
#include "cpu.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

//===--- properties ---===//

static int32_t rt_cpu_online(void) {
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int32_t)n : 1;
}

/* Copies the value of the first "key<spaces>: value" line of a /proc file. */
static bool rt_cpu_proc_value(const char *path, const char *key, char *out, size_t size) {
    FILE *f = fopen(path, "r");
    if (!f) return false;
    char line[512];
    const size_t klen = strlen(key);
    bool found = false;
    while (!found && fgets(line, sizeof line, f)) {
        if (strncmp(line, key, klen) != 0) continue;
        const char *v = line + klen;
        while (*v == ' ' || *v == '\t') v++;
        if (*v != ':') continue;
        for (v++; *v == ' ' || *v == '\t'; v++) {}
        snprintf(out, size, "%s", v);
        out[strcspn(out, "\n")] = '\0';
        found = out[0] != '\0';
    }
    fclose(f);
    return found;
}

/* /proc/meminfo "key: N kB" in bytes, 0 when absent. */
static uint64_t rt_cpu_meminfo(const char *key) {
    char v[64];
    if (!rt_cpu_proc_value("/proc/meminfo", key, v, sizeof v)) return 0;
    unsigned long long kb = 0;
    return sscanf(v, "%llu", &kb) == 1 ? (uint64_t)kb * 1024u : 0;
}

static void rt_cpu_memory(uint64_t *out_total, uint64_t *out_free) {
    *out_total = rt_cpu_meminfo("MemTotal");
    *out_free = rt_cpu_meminfo("MemAvailable");
    const long page = sysconf(_SC_PAGESIZE);
    if (*out_total == 0 && page > 0) {
        const long n = sysconf(_SC_PHYS_PAGES);
        if (n > 0) *out_total = (uint64_t)n * (uint64_t)page;
    }
    if (*out_free == 0) *out_free = rt_cpu_os_avail_bytes();
}

/* Writes each field only when the caller's struct has it (rt_device.h). */
static rt_status_t rt_cpu_get_props(void *device, rt_device_props_t *props) {
    const rt_cpu_device_t *dev = device;
    if (!dev || !props) return RT_ERR_MISUSE;
    uint64_t total, avail;
    rt_cpu_memory(&total, &avail);
    if (RT_STRUCT_HAS(props, rt_device_props_t, kind)) props->kind = RT_DEVICE_KIND_CPU;
    if (RT_STRUCT_HAS(props, rt_device_props_t, name))
        snprintf(props->name, sizeof props->name, "%s", dev->model);
    if (RT_STRUCT_HAS(props, rt_device_props_t, description)) {
        char isa[128];
        rt_cpu_isa_describe(isa, sizeof isa);
        snprintf(props->description, sizeof props->description,
                 "host CPU, %d online CPUs, kernels %s, rt cpu plugin %s", (int)dev->n_cpus, isa,
                 RT_VERSION_STRING);
    }
    if (RT_STRUCT_HAS(props, rt_device_props_t, memory_total)) props->memory_total = total;
    if (RT_STRUCT_HAS(props, rt_device_props_t, memory_free)) props->memory_free = avail;
    if (RT_STRUCT_HAS(props, rt_device_props_t, caps))
        props->caps = RT_DEVICE_CAP_HOST_BUFFER | RT_DEVICE_CAP_BUFFER_FROM_HOST_PTR;
    if (RT_STRUCT_HAS(props, rt_device_props_t, pci_bus_id)) props->pci_bus_id[0] = '\0';
    if (RT_STRUCT_HAS(props, rt_device_props_t, has_uuid)) props->has_uuid = 0;
    return RT_OK;
}

//===--- buffer types ---===//

/* CPU_Weights is a 1.1 feature: a core of 1.0 never sees it (rt_base.h,
 * rule 8). */
static bool rt_cpu_offers_weights(const rt_cpu_device_t *dev) {
    return dev->weights && rt_plugin_abi(dev->host) >= RT_ABI_MAKE_VERSION(1, 1);
}

static uint32_t rt_cpu_buffer_type_count(void *device) {
    const rt_cpu_device_t *dev = device;
    return dev && rt_cpu_offers_weights(dev) ? 2 : 1;
}

static const rt_buffer_type_desc_t *rt_cpu_buffer_type(void *device, uint32_t index) {
    rt_cpu_device_t *dev = device;
    if (!dev) return NULL;
    if (index == 0) return &dev->buft;
    return index == 1 && rt_cpu_offers_weights(dev) ? &dev->wbuft : NULL;
}

/* Any buffer type whose memory the CPU can address, whoever's it is, and
 * its own repacked weights. */
static bool rt_cpu_supports_buft(void *device, const rt_buffer_type_desc_t *buft) {
    const rt_cpu_device_t *dev = device;
    if (dev && buft == &dev->wbuft) return rt_cpu_offers_weights(dev);
    return buft && RT_STRUCT_HAS(buft, rt_buffer_type_desc_t, flags) &&
           (buft->flags & RT_BUFT_FLAG_HOST) != 0;
}

static bool rt_cpu_node_ok(const rt_tensor_t *node) {
    return rt_cpu_op_supported(node) && rt_cpu_repacked_uses_ok(node);
}

/* Nothing the negotiated version does not define (rt_plugin.h). */
static bool rt_cpu_supports_op(void *device, const rt_tensor_t *node) {
    const rt_cpu_device_t *dev = device;
    return dev && node && rt_abi_defines_node(rt_plugin_abi(dev->host), node) &&
           rt_cpu_node_ok(node);
}

//===--- queues ---===//

typedef struct rt_cpu_queue {
    rt_cpu_device_t *dev;
    rt_cpu_pool_t *pool;
} rt_cpu_queue_t;

/* A zero struct_size reads as the 1.0 layout (rt.h, option structs). */
static bool rt_cpu_options_have(const rt_queue_options_t *o, size_t end) {
    return o && (o->struct_size == 0 || o->struct_size >= end);
}

static rt_status_t rt_cpu_queue_threads(const rt_cpu_device_t *dev, const rt_queue_options_t *o,
                                        int32_t *out_n) {
    *out_n = rt_cpu_os_count();
    if (!rt_cpu_options_have(o, offsetof(rt_queue_options_t, n_threads) + sizeof(int32_t)))
        return RT_OK;
    if (o->n_threads < 0 || o->n_threads > 4096)
        return dev->host->set_error(RT_ERR_INVALID_ARGUMENT,
                                    "cpu: queue n_threads %d out of range [0, 4096]",
                                    (int)o->n_threads);
    if (o->n_threads > 0) *out_n = o->n_threads;
    return RT_OK;
}

static rt_status_t rt_cpu_queue_create(void *device, const rt_queue_options_t *options,
                                       void **out_queue) {
    if (out_queue) *out_queue = NULL;
    rt_cpu_device_t *dev = device;
    if (!dev || !out_queue) return RT_ERR_MISUSE;
    const rt_host_t *host = dev->host;
    int32_t n_threads;
    rt_status_t st = rt_cpu_queue_threads(dev, options, &n_threads);
    if (st != RT_OK) return st;
    const int32_t *cpu_ids = NULL;
    int32_t n_cpu_ids = 0;
    if (rt_cpu_options_have(options, offsetof(rt_queue_options_t, n_cpu_ids) + sizeof(int32_t)) &&
        options->cpu_ids && options->n_cpu_ids > 0) {
        cpu_ids = options->cpu_ids;
        n_cpu_ids = options->n_cpu_ids;
    }
    const rt_allocator_t *a = &host->allocator;
    rt_cpu_queue_t *q = a->realloc(a->user_data, NULL, 0, sizeof *q);
    if (!q)
        return host->set_error(RT_ERR_OUT_OF_MEMORY, "cpu: cannot allocate a queue (%zu bytes)",
                               sizeof *q);
    q->dev = dev;
    st = rt_cpu_pool_create(host, n_threads, cpu_ids, n_cpu_ids, &q->pool);
    if (st != RT_OK) {
        a->realloc(a->user_data, q, sizeof *q, 0);
        return st;
    }
    *out_queue = q;
    return RT_OK;
}

static void rt_cpu_queue_destroy(void *queue) {
    rt_cpu_queue_t *q = queue;
    if (!q) return;
    rt_cpu_pool_destroy(q->pool);
    const rt_allocator_t *a = &q->dev->host->allocator;
    a->realloc(a->user_data, q, sizeof *q, 0);
}

/* A node the plugin cannot run fails the whole graph before anything is
 * written. Where the bytes live is the caller's business: data must be a
 * host address, which buffers of a host-flagged type guarantee, and which a
 * plugin delegating its arithmetic here (tests/plugins/mockgpu) vouches for. */
static rt_status_t rt_cpu_check_node(const rt_host_t *host, int32_t i, const rt_tensor_t *n) {
    if (!n) return host->set_error(RT_ERR_INVALID_ARGUMENT, "cpu: node %d is NULL", (int)i);
    if (!rt_cpu_op_computes(n->op)) return RT_OK;
    if (!rt_cpu_node_ok(n))
        return host->set_error(RT_ERR_UNSUPPORTED,
                               "cpu: node %d '%s' (op %d, type %d): unsupported op, types or "
                               "layout", (int)i, n->name, (int)n->op, (int)n->type);
    for (int s = -1; s < RT_MAX_SRC; s++) {
        const rt_tensor_t *t = s < 0 ? n : n->src[s];
        if (t && !t->data && rt_cpu_nelements(t) > 0)
            return host->set_error(RT_ERR_INVALID_ARGUMENT,
                                   "cpu: node %d '%s': tensor '%s' has no data", (int)i, n->name,
                                   t->name);
    }
    return RT_OK;
}

static rt_status_t rt_cpu_graph_compute(void *queue, rt_tensor_t *const *nodes, int32_t n_nodes) {
    rt_cpu_queue_t *q = queue;
    if (!q) return RT_ERR_MISUSE;
    const rt_host_t *host = q->dev->host;
    if (n_nodes < 0 || (n_nodes > 0 && !nodes))
        return host->set_error(RT_ERR_INVALID_ARGUMENT, "cpu: bad node list (%d nodes)",
                               (int)n_nodes);
    for (int32_t i = 0; i < n_nodes; i++) {
        const rt_status_t st = rt_cpu_check_node(host, i, nodes[i]);
        if (st != RT_OK) return st;
    }
    return rt_cpu_pool_compute(q->pool, nodes, n_nodes);
}

/* graph_compute returns when the work is done: nothing is ever pending. */
static rt_status_t rt_cpu_synchronize(void *queue) {
    return queue ? RT_OK : RT_ERR_MISUSE;
}

//===--- the device ---===//

static void rt_cpu_device_fill_tables(rt_cpu_device_t *dev) {
    dev->buft = (rt_buffer_type_desc_t){
        .struct_size = sizeof(rt_buffer_type_desc_t),
        .flags = RT_BUFT_FLAG_HOST,
        .name = "CPU",
        .alignment = RT_CPU_ALIGN,
        .max_size = 0,
        .buffer_state_size = sizeof(rt_cpu_buffer_t),
        .ctx = dev,
        .alloc = rt_cpu_buffer_alloc,
        .alloc_size = NULL,
        .buffer_vtable = &rt_cpu_buffer_vtable,
    };
    rt_cpu_weights_buft_init(dev);
    dev->host_ptr = (rt_device_ext_host_ptr_t){
        .header = { sizeof(rt_device_ext_host_ptr_t), RT_EXT_DEVICE_HOST_PTR, NULL },
        .buffer_type = &dev->buft,
        .buffer_from_host_ptr = rt_cpu_buffer_from_host_ptr,
    };
    dev->vtable = (rt_device_vtable_t){
        .struct_size = sizeof(rt_device_vtable_t),
        .destroy = NULL,
        .get_props = rt_cpu_get_props,
        .buffer_type_count = rt_cpu_buffer_type_count,
        .buffer_type = rt_cpu_buffer_type,
        .supports_op = rt_cpu_supports_op,
        .supports_buft = rt_cpu_supports_buft,
        .queue_create = rt_cpu_queue_create,
        .queue_destroy = rt_cpu_queue_destroy,
        .graph_compute = rt_cpu_graph_compute,
        .synchronize = rt_cpu_synchronize,
        .next = &dev->host_ptr.header,
    };
}

void rt_cpu_device_init(rt_cpu_device_t *dev, const rt_host_t *host) {
    memset(dev, 0, sizeof *dev);
    dev->host = host;
    dev->n_cpus = rt_cpu_online();
    if (!rt_cpu_proc_value("/proc/cpuinfo", "model name", dev->model, sizeof dev->model))
        snprintf(dev->model, sizeof dev->model, "CPU");
    rt_cpu_device_fill_tables(dev);
}
