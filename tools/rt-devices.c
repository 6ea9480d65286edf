/* SPDX-License-Identifier: MIT */
/* rt-devices: what rt finds on this machine. Lists every plugin file the
 * registry considered (loaded, or why not), every device with its memory,
 * buffer types, capabilities, PCI id, UUID and nearest NUMA node (and
 * why), the default device order (and why), where a CPU queue's threads
 * would be pinned, and the machine's topology; --json prints the same as
 * JSON (schema_version 1), --ops adds which ops and types each device
 * supports. HWLOC_XMLFILE explains a recorded machine instead. Each plugin
 * is started first in a child process (RT_PLUGIN_PROBE=1: the registry's
 * probe, runtime/probe_posix.c), so that one that crashes, aborts, hangs or
 * exits is named, with the signal or status and its last step, while the
 * others load; --no-probe loads them in this process alone. Uses the
 * public API only. Exits 1 when no plugin loaded, naming where it looked. */
#include "../abi/rt.h"
#include "../abi/rt_sched.h"

#include "tool_cli.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JSON_SCHEMA_VERSION 1

typedef struct opts {
    bool json;
    bool ops;
    bool no_probe;
    bool calibrate;
    const char *probe_timeout; /* --probe-timeout's seconds, or NULL */
} opts_t;

/* The representative node of each op for each type, for --ops. */
typedef struct op_table {
    rt_context_t *ctx;
    rt_tensor_t *node[RT_OP_COUNT][RT_TYPE_COUNT]; /* NULL: op or type absent */
} op_table_t;

//===--- small formatting helpers ---===//

static const char *kind_name(rt_device_kind_t kind) {
    static const char *const names[] = {"CPU", "GPU", "IGPU", "ACCELERATOR", "SOFTWARE"};
    return kind < sizeof names / sizeof names[0] ? names[kind] : "?";
}

static const char *const cap_names[] = {"async", "events", "host-buffer", "buffer-from-host-ptr"};
#define N_CAPS (int)(sizeof cap_names / sizeof cap_names[0])

static const char *uuid_text(const rt_device_props_t *p, char buf[40]) {
    if (p->has_uuid != 1) return NULL;
    char *o = buf;
    for (int i = 0; i < 16; i++) {
        o += sprintf(o, "%02x", p->uuid[i]);
        if (i == 3 || i == 5 || i == 7 || i == 9) *o++ = '-';
    }
    *o = '\0';
    return buf;
}

static double mib(uint64_t bytes) { return (double)bytes / (1024.0 * 1024.0); }

static void abi_text(uint32_t v, char buf[24]) {
    snprintf(buf, 24, "%u.%u", RT_ABI_VERSION_GET_MAJOR(v), RT_ABI_VERSION_GET_MINOR(v));
}

static double gib(uint64_t bytes) { return (double)bytes / (1024.0 * 1024.0 * 1024.0); }

/* "0-7,16-23": runs of consecutive ids joined, ",..." when buf is full. */
static const char *ids_text(const int32_t *ids, int32_t n, char *buf, size_t size) {
    size_t len = 0;
    buf[0] = '\0';
    for (int32_t i = 0; i < n; i++) {
        int32_t j = i;
        while (j + 1 < n && ids[j + 1] == ids[j] + 1) j++;
        char item[32];
        const char *sep = i > 0 ? "," : "";
        if (j > i) snprintf(item, sizeof item, "%s%d-%d", sep, (int)ids[i], (int)ids[j]);
        else snprintf(item, sizeof item, "%s%d", sep, (int)ids[i]);
        if (len + strlen(item) + sizeof ",..." > size) {
            strcpy(buf + len, ",...");
            break;
        }
        strcpy(buf + len, item);
        len += strlen(item);
        i = j;
    }
    return buf;
}

//===--- placement: NUMA nodes, the device order, CPU threads ---===//

static bool topo_available(const rt_topology_t *topo) {
    rt_topology_summary_t s = {.struct_size = sizeof s};
    return topo != NULL && rt_topology_get_summary(topo, &s) == RT_OK && s.available;
}

/* The device's NUMA node (-1 unknown) and, into buf, why. */
static int32_t numa_reason(const rt_device_t *dev, const rt_device_props_t *p, bool have_topo,
                           char *buf, size_t size) {
    const int32_t node = rt_device_numa_node(dev);
    if (p->pci_bus_id[0] == '\0') snprintf(buf, size, "no PCI bus id");
    else if (!have_topo) snprintf(buf, size, "no hwloc topology to find PCI %s in", p->pci_bus_id);
    else if (node < 0) snprintf(buf, size, "PCI %s is not in the topology", p->pci_bus_id);
    else snprintf(buf, size, "PCI %s is attached under it", p->pci_bus_id);
    return node;
}

/* The PU ids of the device's NUMA node (malloc'd), NULL when unknown. */
static int32_t *numa_cpus(const rt_device_t *dev, int32_t *out_n) {
    int32_t n = 0;
    *out_n = 0;
    if (rt_device_numa_cpus(dev, 0, NULL, &n) != RT_OK || n <= 0) return NULL;
    int32_t *ids = malloc((size_t)n * sizeof ids[0]);
    if (ids == NULL || rt_device_numa_cpus(dev, n, ids, &n) != RT_OK) {
        free(ids);
        return NULL;
    }
    *out_n = n;
    return ids;
}

static const char *kind_phrase(rt_device_kind_t kind) {
    switch (kind) {
    case RT_DEVICE_KIND_GPU: return "discrete GPU";
    case RT_DEVICE_KIND_IGPU: return "integrated GPU";
    case RT_DEVICE_KIND_ACCELERATOR: return "accelerator";
    case RT_DEVICE_KIND_SOFTWARE: return "software device";
    case RT_DEVICE_KIND_CPU: return "CPU, after every GPU and accelerator";
    default: return "device of a newer kind, before the CPU";
    }
}

/* Why the default order puts the device where it is. */
static const char *order_reason(const rt_device_props_t *p, char *buf, size_t size) {
    if (p->memory_free > 0)
        snprintf(buf, size, "%s, %.1f GiB free", kind_phrase(p->kind), gib(p->memory_free));
    else snprintf(buf, size, "%s, free memory unknown", kind_phrase(p->kind));
    return buf;
}

static bool plugin_order(void) {
    const char *o = getenv("RT_DEVICE_ORDER");
    return o != NULL && strcmp(o, "plugin") == 0;
}

/* Where the workers of a CPU queue created with default options go. */
typedef struct thread_plan {
    rt_cpu_placement_t placement; /* resolved: never DEFAULT */
    bool from_env;                /* RT_CPU_PLACEMENT chose it */
    bool applied;                 /* this machine's topology: queues really pin so */
    int32_t *ids;                 /* n entries, malloc'd; NULL when not pinned */
    int32_t n;
} thread_plan_t;

static void thread_plan_init(thread_plan_t *tp, const rt_topology_t *topo) {
    const char *env = getenv("RT_CPU_PLACEMENT");
    rt_topology_summary_t s = {.struct_size = sizeof s};
    memset(tp, 0, sizeof *tp);
    tp->placement = rt_topology_default_placement();
    tp->from_env = env != NULL && *env != '\0';
    int32_t n = 0;
    if (!topo_available(topo) || rt_topology_get_summary(topo, &s) != RT_OK ||
        rt_topology_place_threads(topo, tp->placement, 0, 0, NULL, &n) != RT_OK || n <= 0)
        return;
    tp->ids = malloc((size_t)n * sizeof tp->ids[0]);
    if (tp->ids == NULL ||
        rt_topology_place_threads(topo, tp->placement, n, n, tp->ids, &tp->n) != RT_OK) {
        free(tp->ids);
        tp->ids = NULL;
        tp->n = 0;
        return;
    }
    tp->applied = s.is_this_system;
}

//===--- JSON ---===//

static void json_str(const char *s) {
    putchar('"');
    for (const unsigned char *c = (const unsigned char *)s; *c != '\0'; c++) {
        if (*c == '"' || *c == '\\') printf("\\%c", *c);
        else if (*c == '\n') fputs("\\n", stdout);
        else if (*c == '\t') fputs("\\t", stdout);
        else if (*c < 0x20 || *c == 0x7f) printf("\\u%04x", *c);
        else putchar(*c);
    }
    putchar('"');
}

/* "key": "value" or "key": null; a leading comma unless first. */
static void json_kv_str(const char *key, const char *value, bool first) {
    printf("%s", first ? "" : ", ");
    json_str(key);
    fputs(": ", stdout);
    if (value != NULL) json_str(value);
    else fputs("null", stdout);
}

static void json_kv_u64(const char *key, uint64_t value) {
    printf(", \"%s\": %" PRIu64, key, value);
}

//===--- plugins ---===//

static void print_plugins_text(const rt_registry_t *reg) {
    printf("plugins (search path: %s):\n", rt_registry_search_path(reg));
    for (int32_t i = 0; i < rt_registry_plugin_count(reg); i++) {
        const rt_plugin_info_t *p = rt_registry_plugin(reg, i);
        char abi[24] = "?";
        if (p->abi_version != 0) abi_text(p->abi_version, abi);
        if (p->status == RT_OK && p->n_devices == 0)
            printf("  %-12s ABI %-6s loaded, 0 devices: %s  %s\n", p->name, abi, p->message, p->path);
        else if (p->status == RT_OK)
            printf("  %-12s ABI %-6s loaded, %u device(s)  %s\n", p->name, abi, p->n_devices,
                   p->path);
        else
            printf("  %-12s ABI %-6s not loaded (%s): %s\n", p->name, abi,
                   rt_status_name(p->status), p->message);
    }
    if (rt_registry_plugin_count(reg) == 0) printf("  (none found)\n");
}

static void print_plugins_json(const rt_registry_t *reg) {
    fputs(", \"plugins\": [", stdout);
    for (int32_t i = 0; i < rt_registry_plugin_count(reg); i++) {
        const rt_plugin_info_t *p = rt_registry_plugin(reg, i);
        char abi[24];
        abi_text(p->abi_version, abi);
        printf("%s{", i > 0 ? ", " : "");
        json_kv_str("path", p->path, true);
        json_kv_str("name", p->name, false);
        json_kv_str("abi_version", p->abi_version != 0 ? abi : NULL, false);
        printf(", \"loaded\": %s", p->status == RT_OK ? "true" : "false");
        json_kv_str("status", rt_status_name(p->status), false);
        json_kv_str("message", p->message, false);
        json_kv_u64("n_devices", p->n_devices);
        /* why it is not loaded, or loaded with no devices */
        json_kv_str("reason", p->status != RT_OK || p->n_devices == 0 ? p->message : NULL, false);
        putchar('}');
    }
    putchar(']');
}

//===--- devices, text ---===//

static void print_bufts_text(const rt_device_t *dev) {
    for (int32_t i = 0; i < rt_device_buffer_type_count(dev); i++) {
        const rt_buffer_type_t *b = rt_device_buffer_type(dev, i);
        char max[32] = "unlimited";
        if (rt_buffer_type_max_size(b) != SIZE_MAX)
            snprintf(max, sizeof max, "%.1f MiB", mib(rt_buffer_type_max_size(b)));
        printf("      buffer type %d: %s (alignment %zu, max size %s%s)\n", (int)i,
               rt_buffer_type_name(b), rt_buffer_type_alignment(b), max,
               rt_buffer_type_is_host(b) ? ", host" : "");
    }
}

static void print_caps_text(uint64_t caps) {
    printf("      capabilities:");
    for (int i = 0; i < N_CAPS; i++)
        if (caps & (1u << i)) printf(" %s", cap_names[i]);
    printf("%s\n", caps == 0 ? " none" : "");
}

static void print_numa_text(const rt_device_t *dev, const rt_device_props_t *p,
                            const rt_topology_t *topo) {
    char why[160], ids[256];
    int32_t n = 0;
    const int32_t node = numa_reason(dev, p, topo_available(topo), why, sizeof why);
    if (node < 0) {
        if (p->pci_bus_id[0] != '\0') printf("      NUMA node: unknown (%s)\n", why);
        return;
    }
    int32_t *cpus = numa_cpus(dev, &n);
    printf("      NUMA node: %d (%s; its PUs %s)\n", (int)node, why,
           cpus != NULL ? ids_text(cpus, n, ids, sizeof ids) : "unknown");
    free(cpus);
}

static void print_device_text(const rt_device_t *dev, int32_t i, const rt_topology_t *topo) {
    rt_device_props_t p = {.struct_size = sizeof p};
    char uuid[40];
    rt_device_get_props(dev, &p);
    printf("  [%d] %s  (plugin %s, %s) %s\n", (int)i, rt_device_name(dev),
           rt_device_plugin_name(dev), kind_name(p.kind), p.name);
    if (p.description[0] != '\0') printf("      %s\n", p.description);
    printf("      memory: %.0f MiB total, %.0f MiB free\n", mib(p.memory_total), mib(p.memory_free));
    print_bufts_text(dev);
    print_caps_text(p.caps);
    if (p.pci_bus_id[0] != '\0') printf("      PCI: %s\n", p.pci_bus_id);
    if (uuid_text(&p, uuid) != NULL) printf("      UUID: %s\n", uuid);
    print_numa_text(dev, &p, topo);
    if (rt_device_same_as(dev) != NULL)
        printf("      same device as %s\n", rt_device_name(rt_device_same_as(dev)));
}

//===--- devices, JSON ---===//

static void print_bufts_json(const rt_device_t *dev) {
    fputs(", \"buffer_types\": [", stdout);
    for (int32_t i = 0; i < rt_device_buffer_type_count(dev); i++) {
        const rt_buffer_type_t *b = rt_device_buffer_type(dev, i);
        printf("%s{", i > 0 ? ", " : "");
        json_kv_str("name", rt_buffer_type_name(b), true);
        json_kv_u64("alignment", rt_buffer_type_alignment(b));
        if (rt_buffer_type_max_size(b) == SIZE_MAX) fputs(", \"max_size\": null", stdout);
        else json_kv_u64("max_size", rt_buffer_type_max_size(b));
        printf(", \"host\": %s}", rt_buffer_type_is_host(b) ? "true" : "false");
    }
    putchar(']');
}

static void print_caps_json(uint64_t caps) {
    fputs(", \"capabilities\": [", stdout);
    bool first = true;
    for (int i = 0; i < N_CAPS; i++)
        if (caps & (1u << i)) {
            printf("%s\"%s\"", first ? "" : ", ", cap_names[i]);
            first = false;
        }
    putchar(']');
}

static void json_ids(const char *key, const int32_t *ids, int32_t n) {
    printf(", \"%s\": ", key);
    if (ids == NULL) {
        fputs("null", stdout);
        return;
    }
    putchar('[');
    for (int32_t i = 0; i < n; i++) printf("%s%d", i > 0 ? ", " : "", (int)ids[i]);
    putchar(']');
}

static void print_numa_json(const rt_device_t *dev, const rt_device_props_t *p,
                            const rt_topology_t *topo) {
    char why[160];
    int32_t n = 0;
    const int32_t node = numa_reason(dev, p, topo_available(topo), why, sizeof why);
    if (node >= 0) printf(", \"numa_node\": %d", (int)node);
    else fputs(", \"numa_node\": null", stdout);
    json_kv_str("numa_reason", why, false);
    int32_t *cpus = node >= 0 ? numa_cpus(dev, &n) : NULL;
    json_ids("numa_cpus", cpus, n);
    free(cpus);
}

static void print_device_json(const rt_device_t *dev, int32_t i, const rt_topology_t *topo) {
    rt_device_props_t p = {.struct_size = sizeof p};
    char uuid[40], why[96];
    rt_device_get_props(dev, &p);
    printf("{\"index\": %d", (int)i);
    json_kv_str("name", rt_device_name(dev), false);
    json_kv_str("plugin", rt_device_plugin_name(dev), false);
    json_kv_str("kind", kind_name(p.kind), false);
    json_kv_str("model", p.name, false);
    json_kv_str("description", p.description, false);
    json_kv_u64("memory_total", p.memory_total);
    json_kv_u64("memory_free", p.memory_free);
    print_bufts_json(dev);
    print_caps_json(p.caps);
    json_kv_str("pci_bus_id", p.pci_bus_id[0] != '\0' ? p.pci_bus_id : NULL, false);
    json_kv_str("uuid", uuid_text(&p, uuid), false);
    print_numa_json(dev, &p, topo);
    json_kv_str("order_reason", order_reason(&p, why, sizeof why), false);
    json_kv_str("same_as", rt_device_same_as(dev) != NULL ? rt_device_name(rt_device_same_as(dev))
                                                          : NULL, false);
}

//===--- --ops: one representative node per op and type ---===//

static void set_f32_param(rt_tensor_t *t, int slot, float v) { memcpy(&t->op_params[slot], &v, 4); }

/* A view-family node of a: same header, bytes shared. */
static rt_tensor_t *view_node(rt_context_t *ctx, rt_tensor_t *a, rt_op_t op) {
    rt_tensor_t *n = rt_new_tensor_2d(ctx, a->type, a->ne[0], a->ne[1]);
    n->view_src = a;
    if (op == RT_OP_PERMUTE || op == RT_OP_TRANSPOSE) {
        n->ne[0] = a->ne[1], n->ne[1] = a->ne[0];
        n->nb[0] = a->nb[1], n->nb[1] = a->nb[0];
        const int32_t axes[4] = {1, 0, 2, 3};
        memcpy(n->op_params, axes, sizeof axes);
    }
    return n;
}

/* The node and its extra sources for op on type; a is src[0] already. */
static rt_tensor_t *shape_node(rt_context_t *ctx, rt_op_t op, rt_type_t type, rt_tensor_t *a) {
    switch (op) {
    case RT_OP_VIEW: case RT_OP_RESHAPE: case RT_OP_PERMUTE: case RT_OP_TRANSPOSE:
        return view_node(ctx, a, op);
    case RT_OP_GET_ROWS: {
        rt_tensor_t *n = rt_new_tensor_2d(ctx, RT_TYPE_F32, a->ne[0], 2);
        n->src[1] = rt_new_tensor_1d(ctx, RT_TYPE_I32, 2);
        return n;
    }
    case RT_OP_MUL_MAT: {
        rt_tensor_t *n = rt_new_tensor_2d(ctx, RT_TYPE_F32, a->ne[1], 4);
        n->src[1] = rt_new_tensor_2d(ctx, RT_TYPE_F32, a->ne[0], 4);
        return n;
    }
    case RT_OP_ROPE: {
        rt_tensor_t *n = rt_new_tensor_2d(ctx, type, a->ne[0], a->ne[1]);
        n->src[1] = rt_new_tensor_1d(ctx, RT_TYPE_I32, a->ne[2]); /* positions of a's tokens */
        n->op_params[0] = (int32_t)a->ne[0];
        set_f32_param(n, 2, 10000.0f);
        set_f32_param(n, 3, 1.0f);
        return n;
    }
    case RT_OP_ARGMAX:
        return rt_new_tensor_1d(ctx, RT_TYPE_I32, a->ne[1]);
    case RT_OP_ADD: case RT_OP_SUB: case RT_OP_MUL: case RT_OP_DIV: case RT_OP_SWIGLU: {
        rt_tensor_t *n = rt_new_tensor_2d(ctx, type, a->ne[0], a->ne[1]);
        n->src[1] = rt_new_tensor_2d(ctx, type, a->ne[0], a->ne[1]);
        return n;
    }
    default: /* unary, same type and shape */
        return rt_new_tensor_2d(ctx, type, a->ne[0], a->ne[1]);
    }
}

/* CPY converts F32 into type: a is F32 and the node is a view of b. */
static rt_tensor_t *cpy_node(rt_context_t *ctx, rt_type_t type) {
    rt_tensor_t *a = rt_new_tensor_2d(ctx, RT_TYPE_F32, 256, 4);
    rt_tensor_t *b = rt_new_tensor_2d(ctx, type, 256, 4);
    rt_tensor_t *n = view_node(ctx, b, RT_OP_VIEW);
    n->src[0] = a;
    n->src[1] = b;
    return n;
}

/* SET_ROWS writes F32 rows into a of type, picked by I32 indices; the node
 * is a view of a. */
static rt_tensor_t *set_rows_node(rt_context_t *ctx, rt_tensor_t *a) {
    rt_tensor_t *n = view_node(ctx, a, RT_OP_VIEW);
    n->src[1] = rt_new_tensor_2d(ctx, RT_TYPE_F32, a->ne[0], 2);
    n->src[2] = rt_new_tensor_1d(ctx, RT_TYPE_I32, 2);
    return n;
}

static rt_tensor_t *build_node(rt_context_t *ctx, rt_op_t op, rt_type_t type) {
    rt_tensor_t *a = rt_new_tensor_2d(ctx, type, 256, 4); /* 256: whole blocks of every type */
    rt_tensor_t *n = op == RT_OP_CPY        ? cpy_node(ctx, type)
                     : op == RT_OP_SET_ROWS ? set_rows_node(ctx, a)
                                            : shape_node(ctx, op, type, a);
    if (op != RT_OP_CPY) n->src[0] = a;
    if (op == RT_OP_NORM || op == RT_OP_RMS_NORM) set_f32_param(n, 0, 1e-5f);
    if (op == RT_OP_SCALE || op == RT_OP_SOFT_MAX) set_f32_param(n, 0, 1.0f);
    n->op = op;
    rt_format_name(n, "%s_%s", rt_op_name(op), rt_type_name(type));
    return n;
}

static bool op_table_build(op_table_t *t) {
    memset(t, 0, sizeof *t);
    rt_context_params_t p = {.struct_size = sizeof p,
                             .mem_size = rt_tensor_overhead() * 5 * RT_OP_COUNT * RT_TYPE_COUNT,
                             .no_alloc = true};
    if (rt_context_create(&p, &t->ctx) != RT_OK) return false;
    for (rt_op_t op = 1; op < RT_OP_COUNT; op++)
        for (rt_type_t type = 0; type < RT_TYPE_COUNT; type++)
            if (rt_type_traits(type) != NULL) t->node[op][type] = build_node(t->ctx, op, type);
    return true;
}

static void print_ops_text(const rt_device_t *dev, const op_table_t *t) {
    printf("      ops (x: supported; CPY and SET_ROWS write F32 into the type):\n      %-14s", "");
    for (rt_type_t type = 0; type < RT_TYPE_COUNT; type++)
        if (rt_type_traits(type) != NULL) printf(" %-5s", rt_type_name(type));
    for (rt_op_t op = 1; op < RT_OP_COUNT; op++) {
        printf("\n      %-14s", rt_op_name(op));
        for (rt_type_t type = 0; type < RT_TYPE_COUNT; type++)
            if (t->node[op][type] != NULL)
                printf(" %-5s", rt_device_supports_op(dev, t->node[op][type]) ? "x" : ".");
    }
    putchar('\n');
}

static void print_ops_json(const rt_device_t *dev, const op_table_t *t) {
    fputs(", \"ops\": {", stdout);
    for (rt_op_t op = 1; op < RT_OP_COUNT; op++) {
        printf("%s\"%s\": [", op > 1 ? ", " : "", rt_op_name(op));
        bool first = true;
        for (rt_type_t type = 0; type < RT_TYPE_COUNT; type++)
            if (t->node[op][type] != NULL && rt_device_supports_op(dev, t->node[op][type])) {
                printf("%s\"%s\"", first ? "" : ", ", rt_type_name(type));
                first = false;
            }
        putchar(']');
    }
    putchar('}');
}

//===--- order and threads ---===//

static void print_order_text(const rt_registry_t *reg) {
    char why[96];
    printf("device order (%s):\n", plugin_order()
           ? "RT_DEVICE_ORDER=plugin: plugin name, then the plugin's order"
           : "discrete GPUs, integrated GPUs, accelerators, the CPU, then software emulations; "
             "most free memory first within a kind");
    for (int32_t i = 0; i < rt_registry_device_count(reg); i++) {
        const rt_device_t *dev = rt_registry_device(reg, i);
        rt_device_props_t p = {.struct_size = sizeof p};
        rt_device_get_props(dev, &p);
        printf("  [%d] %-12s %s\n", (int)i, rt_device_name(dev), order_reason(&p, why, sizeof why));
    }
}

static void print_threads_text(const thread_plan_t *tp) {
    char ids[320];
    printf("CPU queue threads (placement %s, %s):\n", rt_cpu_placement_name(tp->placement),
           tp->from_env ? "from RT_CPU_PLACEMENT"
                        : "the default; RT_CPU_PLACEMENT=compact|spread|none changes it");
    if (tp->placement == RT_CPU_PLACEMENT_NONE) printf("  not pinned\n");
    else if (tp->ids == NULL) printf("  not pinned: no hwloc topology\n");
    else {
        printf("  worker i on the i-th of these %d PUs, wrapping: %s\n", (int)tp->n,
               ids_text(tp->ids, tp->n, ids, sizeof ids));
        printf("  %s\n", tp->placement == RT_CPU_PLACEMENT_SPREAD
               ? "spread: one PU from each NUMA node in turn, a PU per core before SMT siblings"
               : "compact: the first PU's NUMA node filled first, a PU per core before SMT "
                 "siblings");
        if (!tp->applied) printf("  a recorded topology: shown, never pinned\n");
    }
}

static void print_threads_json(const thread_plan_t *tp) {
    printf(", \"device_order\": \"%s\"", plugin_order() ? "plugin" : "kind");
    printf(", \"cpu_threads\": {\"placement\": \"%s\", \"from_environment\": %s, "
           "\"applied\": %s", rt_cpu_placement_name(tp->placement),
           tp->from_env ? "true" : "false", tp->applied ? "true" : "false");
    json_ids("cpu_ids", tp->ids, tp->n);
    putchar('}');
}

//===--- topology ---===//

static void write_stdout(const char *text, size_t len, void *user_data) {
    (void)user_data;
    fwrite(text, 1, len, stdout);
}

static void print_topology_json(const rt_topology_t *topo) {
    rt_topology_summary_t s = {.struct_size = sizeof s};
    if (topo == NULL || rt_topology_get_summary(topo, &s) != RT_OK) {
        fputs(", \"topology\": null", stdout);
        return;
    }
    printf(", \"topology\": {\"available\": %s, \"packages\": %d, \"numa_nodes\": %d, "
           "\"cores\": %d, \"pus\": %d", s.available ? "true" : "false", (int)s.n_packages,
           (int)s.n_numa_nodes, (int)s.n_cores, (int)s.n_pus);
    json_kv_u64("memory_total", s.memory_total);
    json_kv_u64("l1d_size", s.l1d_size);
    json_kv_u64("l2_size", s.l2_size);
    json_kv_u64("l3_size", s.l3_size);
    printf(", \"n_l3\": %d}", (int)s.n_l3);
}

//===--- main ---===//

static void usage(FILE *f) {
    fputs("usage: rt-devices [--json] [--ops] [--no-probe] [--probe-timeout=S] [--calibrate]\n"
          "                  [--help] [--version]\n"
          "Lists the plugins rt considered, their devices and the machine's topology.\n"
          "  --json             the same as JSON (schema_version 1)\n"
          "  --ops              which ops and types each device supports\n"
          "  --no-probe         load each plugin in this process alone; by default each is\n"
          "                     started first in a child process, and one that crashes,\n"
          "                     aborts, exits or hangs there is reported by file and\n"
          "                     signal while the others load (--probe: the default)\n"
          "  --probe-timeout=S  seconds a plugin may take to start when probed (default: 10)\n"
          "  --calibrate        measure each device's speed figures again (what the\n"
          "                     placement plans with), cache and show them\n"
          "  --version          release, ABI and commit\n"
          "Environment: RT_PLUGIN_PATH (extra plugin directories), RT_PLUGINS and\n"
          "RT_PLUGINS_DISABLE (names or globs), HWLOC_XMLFILE (a recorded topology),\n"
          "RT_DEVICE_ORDER=plugin (plugin order, not best first), RT_CPU_PLACEMENT=\n"
          "compact|spread|none (how CPU queue threads are pinned).\n", f);
}

/* -1 to go on, 0 after --help (the caller prints it), 1 after --version,
 * 2 on a bad option. */
static int parse_args(int argc, char **argv, opts_t *o) {
    enum { OPT_PROBE_TIMEOUT = 1000, OPT_VERSION, OPT_CALIBRATE, OPT_NO_PROBE };
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'}, {"ops", no_argument, NULL, 'o'},
        {"probe", no_argument, NULL, 'p'}, {"no-probe", no_argument, NULL, OPT_NO_PROBE},
        {"probe-timeout", required_argument, NULL, OPT_PROBE_TIMEOUT},
        {"calibrate", no_argument, NULL, OPT_CALIBRATE},
        {"help", no_argument, NULL, 'h'}, {"version", no_argument, NULL, OPT_VERSION},
        {NULL, 0, NULL, 0}};
    for (int c; (c = getopt_long(argc, argv, "h", opts, NULL)) != -1;) {
        switch (c) {
        case 'j': o->json = true; break;
        case 'o': o->ops = true; break;
        case 'p': o->no_probe = false; break;
        case OPT_NO_PROBE: o->no_probe = true; break;
        case OPT_CALIBRATE: o->calibrate = true; break;
        case OPT_PROBE_TIMEOUT: {
            char *end = NULL;
            const double s = strtod(optarg, &end);
            o->probe_timeout = optarg;
            if (end == optarg || *end != '\0' || !(s > 0)) {
                fprintf(stderr, "rt-devices: --probe-timeout wants seconds > 0, not '%s'\n", optarg);
                return 2;
            }
            break;
        }
        case 'h': return 0;
        case OPT_VERSION: rt_cli_print_version(stdout, "rt-devices"); return 1;
        default: return rt_cli_bad_usage("rt-devices");
        }
    }
    if (optind < argc) {
        fprintf(stderr, "rt-devices: unexpected argument '%s'\n", argv[optind]);
        return rt_cli_bad_usage("rt-devices");
    }
    return -1;
}

/* Each device's speed figures, measured again and cached (rt_device_speed). */
static int print_calibration(rt_registry_t *reg) {
    int failures = 0;
    printf("speed (measured now, cached for the placement; Q4_0 weights, the decode product's "
           "past the last-level cache):\n");
    for (int32_t i = 0; i < rt_registry_device_count(reg); i++) {
        rt_device_t *dev = rt_registry_device(reg, i);
        rt_device_speed_t sp;
        if (rt_device_speed(dev, true, &sp) != RT_OK) {
            printf("  %-10s calibration failed: %s\n", rt_device_name(dev), rt_last_error());
            failures++;
            continue;
        }
        double prompt = 0; /* measured with the figures above, read from the cache */
        rt_device_prompt_speed(dev, false, &prompt);
        printf("  %-10s %9.2f GB/s weights, %8.1f us a layer, %8.1f us a copy in, %9.2f GB/s x "
               "tokens at a prompt step of %d\n", rt_device_name(dev), sp.bytes_per_s * 1e-9,
               sp.layer_s * 1e6, sp.copy_in_s * 1e6, prompt * 1e-9, RT_DEVICE_PROMPT_UBATCH);
    }
    return failures;
}

static int32_t loaded_plugins(const rt_registry_t *reg) {
    int32_t n = 0;
    for (int32_t i = 0; i < rt_registry_plugin_count(reg); i++)
        n += rt_registry_plugin(reg, i)->status == RT_OK;
    return n;
}

static void report_none(const rt_registry_t *reg) {
    const char *keep = getenv("RT_PLUGINS"), *drop = getenv("RT_PLUGINS_DISABLE");
    fprintf(stderr, "rt-devices: no plugin loaded; looked in %s\n", rt_registry_search_path(reg));
    if (keep != NULL && *keep != '\0') fprintf(stderr, "  RT_PLUGINS=%s keeps only those\n", keep);
    if (drop != NULL && *drop != '\0') fprintf(stderr, "  RT_PLUGINS_DISABLE=%s drops those\n", drop);
}

static void print_text(const rt_registry_t *reg, const rt_topology_t *topo, const op_table_t *ops,
                       const thread_plan_t *tp) {
    printf("rt %s (ABI %u.%u)\n", rt_version_string(), RT_ABI_VERSION_GET_MAJOR(rt_abi_version()),
           RT_ABI_VERSION_GET_MINOR(rt_abi_version()));
    print_plugins_text(reg);
    printf("devices:\n");
    for (int32_t i = 0; i < rt_registry_device_count(reg); i++) {
        print_device_text(rt_registry_device(reg, i), i, topo);
        if (ops != NULL) print_ops_text(rt_registry_device(reg, i), ops);
    }
    if (rt_registry_device_count(reg) == 0) printf("  (none)\n");
    print_order_text(reg);
    print_threads_text(tp);
    printf("topology:\n  ");
    if (topo != NULL) rt_topology_write_text(topo, write_stdout, NULL);
    else printf("unknown\n");
}

static void print_json(const rt_registry_t *reg, const rt_topology_t *topo, const op_table_t *ops,
                       const thread_plan_t *tp) {
    char abi[24];
    abi_text(rt_abi_version(), abi);
    printf("{\"schema_version\": %d", JSON_SCHEMA_VERSION);
    json_kv_str("rt_version", rt_version_string(), false);
    json_kv_str("abi_version", abi, false);
    json_kv_str("search_path", rt_registry_search_path(reg), false);
    print_plugins_json(reg);
    fputs(", \"devices\": [", stdout);
    for (int32_t i = 0; i < rt_registry_device_count(reg); i++) {
        fputs(i > 0 ? ", " : "", stdout);
        print_device_json(rt_registry_device(reg, i), i, topo);
        if (ops != NULL) print_ops_json(rt_registry_device(reg, i), ops);
        putchar('}');
    }
    putchar(']');
    print_threads_json(tp);
    print_topology_json(topo);
    fputs("}\n", stdout);
}

int main(int argc, char **argv) {
    opts_t o = {0};
    const int rc = parse_args(argc, argv, &o);
    if (rc >= 0) {
        if (rc == 0) usage(stdout);
        return rc == 2 ? 2 : 0;
    }
    rt_registry_t *reg = NULL;
    static op_table_t ops;
    /* the registry's probe, before it creates any thread of this process */
    setenv("RT_PLUGIN_PROBE", o.no_probe ? "0" : "1", 1);
    if (o.probe_timeout) setenv("RT_PLUGIN_PROBE_TIMEOUT", o.probe_timeout, 1);
    if (rt_registry_create(NULL, &reg) != RT_OK) {
        fprintf(stderr, "rt-devices: %s\n", rt_last_error());
        return 1;
    }
    /* The runtime's own, so that what is shown is what it decides on. */
    const rt_topology_t *topo = rt_topology_get_shared();
    const bool have_ops = o.ops && op_table_build(&ops);
    thread_plan_t tp;
    thread_plan_init(&tp, topo);
    if (o.json) print_json(reg, topo, have_ops ? &ops : NULL, &tp);
    else print_text(reg, topo, have_ops ? &ops : NULL, &tp);
    const int bad_calibration = o.calibrate && !o.json ? print_calibration(reg) : 0;
    free(tp.ids);
    const int32_t n_loaded = loaded_plugins(reg);
    if (n_loaded == 0) report_none(reg);
    rt_context_destroy(ops.ctx);
    rt_registry_destroy(reg);
    return n_loaded > 0 && bad_calibration == 0 ? 0 : 1;
}
