/* SPDX-License-Identifier: MIT */
/* topo_hwloc.c: rt_topology_t over hwloc 2.x, built when ./configure finds
 * hwloc (topo_none.c otherwise). Loads this machine or a recorded XML
 * topology (an explicit path, or HWLOC_XMLFILE, which hwloc itself reads),
 * keeps the important I/O devices so that PCI devices can be placed, and
 * notes which PUs threads may use. Answers the summary, "which NUMA node is
 * nearest this PCI device", the PUs of a node, where n threads would be
 * pinned under each placement policy, what lies between two devices (PCIe
 * link speeds, a shared switch, NUMA distance: the planner's copy costs),
 * and a human description. */
#include "topo.h"
#include "device_impl.h"

#include <hwloc.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Invariant: usable is never empty once loaded; every id it holds is a PU
 * of topo. */
struct rt_topology {
    hwloc_topology_t topo;
    hwloc_bitmap_t usable;  /* PUs threads may use: the allowed ones, and on this
                               machine only those the calling thread was bound to */
    bool this_system;       /* not a recorded file: ids may be pinned to */
};

//===--- lifetime ---===//

static rt_status_t load(hwloc_topology_t topo, const char *xml_path) {
    const char *what = xml_path != NULL ? xml_path : "this machine";
    if (hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT) != 0)
        return rt_error(RT_ERR_INTERNAL, "hwloc: cannot keep I/O devices for %s", what);
    if (xml_path != NULL && hwloc_topology_set_xml(topo, xml_path) != 0)
        return rt_error(RT_ERR_NOT_FOUND, "hwloc: cannot read topology file %s", xml_path);
    if (hwloc_topology_load(topo) != 0)
        return rt_error(RT_ERR_FORMAT, "hwloc: cannot load the topology of %s", what);
    return RT_OK;
}

/* On this machine a taskset or cgroup binding narrows what the CPU plugin
 * may use (it counts its default threads the same way); a recorded file's
 * binding means nothing here. */
static rt_status_t find_usable(rt_topology_t *t) {
    t->this_system = hwloc_topology_is_thissystem(t->topo) != 0;
    t->usable = hwloc_bitmap_dup(hwloc_topology_get_allowed_cpuset(t->topo));
    if (t->usable == NULL) return rt_error(RT_ERR_OUT_OF_MEMORY, "hwloc: no memory for a cpuset");
    hwloc_bitmap_t bound = t->this_system ? hwloc_bitmap_alloc() : NULL;
    if (bound != NULL && hwloc_get_cpubind(t->topo, bound, HWLOC_CPUBIND_THREAD) == 0 &&
        hwloc_bitmap_intersects(bound, t->usable))
        hwloc_bitmap_and(t->usable, t->usable, bound);
    hwloc_bitmap_free(bound);
    if (hwloc_bitmap_iszero(t->usable))
        return rt_error(RT_ERR_FORMAT, "hwloc: the topology has no usable processor");
    return RT_OK;
}

rt_status_t rt_topology_create(const char *xml_path, rt_topology_t **out_topo) {
    RT_ARMOR(out_topo != NULL);
    *out_topo = NULL;
    rt_topology_t *t = rt_mem_calloc(NULL, sizeof *t);
    if (t == NULL) return rt_error(RT_ERR_OUT_OF_MEMORY, "rt_topology_create: no memory");
    if (hwloc_topology_init(&t->topo) != 0) {
        rt_mem_free(NULL, t, sizeof *t);
        return rt_error(RT_ERR_OUT_OF_MEMORY, "hwloc_topology_init failed");
    }
    rt_status_t st = load(t->topo, xml_path);
    if (st == RT_OK) st = find_usable(t);
    if (st != RT_OK) {
        rt_topology_destroy(t);
        return st;
    }
    *out_topo = t;
    return RT_OK;
}

void rt_topology_destroy(rt_topology_t *topo) {
    if (topo == NULL) return;
    hwloc_bitmap_free(topo->usable);
    hwloc_topology_destroy(topo->topo);
    rt_mem_free(NULL, topo, sizeof *topo);
}

//===--- the summary ---===//

static int32_t count(const rt_topology_t *t, hwloc_obj_type_t type) {
    const int n = hwloc_get_nbobjs_by_type(t->topo, type);
    return n > 0 ? (int32_t)n : 0;
}

/* Size of the first cache of that type holding data (unified or data). */
static uint64_t cache_size(const rt_topology_t *t, hwloc_obj_type_t type) {
    for (hwloc_obj_t o = hwloc_get_next_obj_by_type(t->topo, type, NULL); o != NULL;
         o = hwloc_get_next_obj_by_type(t->topo, type, o))
        if (o->attr->cache.type != HWLOC_OBJ_CACHE_INSTRUCTION) return o->attr->cache.size;
    return 0;
}

rt_status_t rt_topology_get_summary(const rt_topology_t *topo, rt_topology_summary_t *out_summary) {
    RT_ARMOR(topo != NULL && out_summary != NULL);
    rt_topology_summary_t s = {.struct_size = sizeof s, .available = true};
    s.n_packages = count(topo, HWLOC_OBJ_PACKAGE);
    s.n_numa_nodes = count(topo, HWLOC_OBJ_NUMANODE);
    s.n_cores = count(topo, HWLOC_OBJ_CORE);
    s.n_pus = count(topo, HWLOC_OBJ_PU);
    s.memory_total = hwloc_get_root_obj(topo->topo)->total_memory;
    s.l1d_size = cache_size(topo, HWLOC_OBJ_L1CACHE);
    s.l2_size = cache_size(topo, HWLOC_OBJ_L2CACHE);
    s.l3_size = cache_size(topo, HWLOC_OBJ_L3CACHE);
    s.n_l3 = count(topo, HWLOC_OBJ_L3CACHE);
    s.is_this_system = topo->this_system;
    rt_struct_copy_out(out_summary, &s, sizeof s, TOPO_SUMMARY_SIZE_1_0);
    return RT_OK;
}

//===--- PCI devices and NUMA nodes ---===//

int32_t rt_topology_numa_node_of_pci(const rt_topology_t *topo, const char *pci_bus_id) {
    unsigned id[4];
    if (topo == NULL || !rt_pci_bus_id_parse(pci_bus_id, id)) return -1;
    hwloc_obj_t pci = hwloc_get_pcidev_by_busid(topo->topo, id[0], id[1], id[2], id[3]);
    if (pci == NULL) return -1;
    /* I/O objects have no nodeset; their first normal ancestor has. */
    hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo->topo, pci);
    if (anc == NULL || anc->nodeset == NULL) return -1;
    for (hwloc_obj_t n = hwloc_get_next_obj_by_type(topo->topo, HWLOC_OBJ_NUMANODE, NULL); n != NULL;
         n = hwloc_get_next_obj_by_type(topo->topo, HWLOC_OBJ_NUMANODE, n))
        if (hwloc_bitmap_isset(anc->nodeset, n->os_index)) return (int32_t)n->logical_index;
    return -1;
}

int32_t rt_topology_numa_os_index(const rt_topology_t *topo, int32_t node) {
    hwloc_obj_t n = topo != NULL && node >= 0
                    ? hwloc_get_obj_by_type(topo->topo, HWLOC_OBJ_NUMANODE, (unsigned)node) : NULL;
    return n != NULL ? (int32_t)n->os_index : -1;
}

//===--- links between devices ---===//

static int first_node(const rt_topology_t *t);

static hwloc_obj_t pci_obj(const rt_topology_t *t, const char *pci_bus_id) {
    unsigned id[4];
    if (pci_bus_id == NULL || !pci_bus_id[0] || !rt_pci_bus_id_parse(pci_bus_id, id)) return NULL;
    return hwloc_get_pcidev_by_busid(t->topo, id[0], id[1], id[2], id[3]);
}

/* The narrowest link from o up to its host bridge: the device's own and
 * each PCI-to-PCI bridge's upstream one; 0 when none is known. */
static double narrowest_link(hwloc_obj_t o) {
    double gbps = 0;
    for (; o != NULL && (o->type == HWLOC_OBJ_PCI_DEVICE || o->type == HWLOC_OBJ_BRIDGE);
         o = o->parent) {
        float s = 0;
        if (o->type == HWLOC_OBJ_PCI_DEVICE) s = o->attr->pcidev.linkspeed;
        else if (o->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI)
            s = o->attr->bridge.upstream.pci.linkspeed;
        if (s > 0 && (gbps == 0 || s < gbps)) gbps = s;
    }
    return gbps;
}

/* The NUMA node object of an end: its PCI device's, else host memory's. */
static hwloc_obj_t node_of(const rt_topology_t *t, hwloc_obj_t pci) {
    if (pci != NULL) {
        hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(t->topo, pci);
        for (hwloc_obj_t n = hwloc_get_next_obj_by_type(t->topo, HWLOC_OBJ_NUMANODE, NULL);
             anc != NULL && anc->nodeset != NULL && n != NULL;
             n = hwloc_get_next_obj_by_type(t->topo, HWLOC_OBJ_NUMANODE, n))
            if (hwloc_bitmap_isset(anc->nodeset, n->os_index)) return n;
        return NULL;
    }
    return hwloc_get_obj_by_type(t->topo, HWLOC_OBJ_NUMANODE, (unsigned)first_node(t));
}

/* distance(a, b) / distance(a, a) from hwloc's NUMA latency matrix. */
static double numa_ratio(const rt_topology_t *t, hwloc_obj_t a, hwloc_obj_t b) {
    if (a == NULL || b == NULL || a == b) return 1;
    unsigned nr = 1;
    struct hwloc_distances_s *dist = NULL;
    if (hwloc_distances_get_by_type(t->topo, HWLOC_OBJ_NUMANODE, &nr, &dist,
                                    HWLOC_DISTANCES_KIND_MEANS_LATENCY, 0) != 0 || nr == 0)
        return 1;
    double ratio = 1;
    const int ia = hwloc_distances_obj_index(dist, a), ib = hwloc_distances_obj_index(dist, b);
    if (ia >= 0 && ib >= 0) {
        const hwloc_uint64_t local = dist->values[(unsigned)ia * dist->nbobjs + (unsigned)ia];
        const hwloc_uint64_t far = dist->values[(unsigned)ia * dist->nbobjs + (unsigned)ib];
        if (local > 0 && far > local) ratio = (double)far / (double)local;
    }
    hwloc_distances_release(t->topo, dist);
    return ratio;
}

/* Below one PCI-to-PCI bridge (a switch), not only one host bridge. */
static bool share_switch(const rt_topology_t *t, hwloc_obj_t a, hwloc_obj_t b) {
    if (a == NULL || b == NULL || a == b) return false;
    hwloc_obj_t c = hwloc_get_common_ancestor_obj(t->topo, a, b);
    return c != NULL && c->type == HWLOC_OBJ_BRIDGE &&
           c->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI;
}

void rt_topology_link(const rt_topology_t *topo, const char *pci_a, const char *pci_b,
                      rt_topology_link_t *out) {
    *out = (rt_topology_link_t){{0, 0}, 1, false};
    if (topo == NULL) return;
    hwloc_obj_t a = pci_obj(topo, pci_a), b = pci_obj(topo, pci_b);
    if ((pci_a != NULL && pci_a[0] && a == NULL) || (pci_b != NULL && pci_b[0] && b == NULL))
        return; /* a device the topology does not know: nothing can be said */
    out->gbps[0] = a != NULL ? narrowest_link(a) : 0;
    out->gbps[1] = b != NULL ? narrowest_link(b) : 0;
    out->numa_ratio = numa_ratio(topo, node_of(topo, a), node_of(topo, b));
    out->same_switch = share_switch(topo, a, b);
}

/* Writes the ids of set, ascending, as far as max allows; returns how many. */
static int32_t write_ids(hwloc_const_bitmap_t set, int32_t max, int32_t *out) {
    int32_t n = 0;
    for (int pu = hwloc_bitmap_first(set); pu >= 0; pu = hwloc_bitmap_next(set, pu), n++)
        if (n < max) out[n] = pu;
    return n;
}

rt_status_t rt_topology_numa_node_cpus(const rt_topology_t *topo, int32_t node, int32_t max_ids,
                                       int32_t *out_cpu_ids, int32_t *out_n_ids) {
    RT_ARMOR(topo != NULL && out_n_ids != NULL && (max_ids <= 0 || out_cpu_ids != NULL));
    *out_n_ids = 0;
    hwloc_obj_t n = node >= 0 ? hwloc_get_obj_by_type(topo->topo, HWLOC_OBJ_NUMANODE,
                                                      (unsigned)node) : NULL;
    if (n == NULL || n->cpuset == NULL)
        return rt_error(RT_ERR_NOT_FOUND, "rt_topology_numa_node_cpus: no NUMA node %d", (int)node);
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (set == NULL) return rt_error(RT_ERR_OUT_OF_MEMORY, "hwloc: no memory for a cpuset");
    hwloc_bitmap_and(set, n->cpuset, topo->usable);
    *out_n_ids = write_ids(set, max_ids, out_cpu_ids);
    hwloc_bitmap_free(set);
    return RT_OK;
}

//===--- thread placement ---===//

/* Every usable PU once, in the order placement hands them out. */
typedef struct pu_order {
    int32_t *ids;      /* n entries */
    int32_t n;
    int32_t *node_len; /* PUs each node of the order contributed, n_nodes entries */
    int32_t n_nodes;
    size_t ids_size, node_len_size; /* bytes allocated */
} pu_order_t;

/* Appends the PUs of set: the first PU of every core, then the second of
 * every core, and so on (SMT siblings last); PUs in no core after those.
 * Empties set. */
static void append_by_core(const rt_topology_t *t, hwloc_bitmap_t set, hwloc_bitmap_t scratch,
                           pu_order_t *o) {
    for (bool more = true; more;) {
        more = false;
        for (hwloc_obj_t c = hwloc_get_next_obj_by_type(t->topo, HWLOC_OBJ_CORE, NULL); c != NULL;
             c = hwloc_get_next_obj_by_type(t->topo, HWLOC_OBJ_CORE, c)) {
            hwloc_bitmap_and(scratch, c->cpuset, set);
            const int pu = hwloc_bitmap_first(scratch);
            if (pu < 0) continue;
            o->ids[o->n++] = pu;
            hwloc_bitmap_clr(set, (unsigned)pu);
            more = true;
        }
    }
    for (int pu = hwloc_bitmap_first(set); pu >= 0; pu = hwloc_bitmap_next(set, pu))
        o->ids[o->n++] = pu;
    hwloc_bitmap_zero(set);
}

/* The logical index of the NUMA node holding the first usable PU. */
static int first_node(const rt_topology_t *t) {
    hwloc_obj_t pu = hwloc_get_pu_obj_by_os_index(t->topo, (unsigned)hwloc_bitmap_first(t->usable));
    for (hwloc_obj_t n = hwloc_get_next_obj_by_type(t->topo, HWLOC_OBJ_NUMANODE, NULL); n != NULL;
         n = hwloc_get_next_obj_by_type(t->topo, HWLOC_OBJ_NUMANODE, n))
        if (pu != NULL && n->cpuset != NULL && hwloc_bitmap_isset(n->cpuset, pu->os_index))
            return (int)n->logical_index;
    return 0;
}

/* Node by node from the first PU's node on, wrapping around; a PU shared
 * by two nodes (memory-only nodes share their CPUs' cpuset) goes to the
 * first. Left and scratch are working sets. */
static void order_compact(const rt_topology_t *t, hwloc_bitmap_t left, hwloc_bitmap_t set,
                          hwloc_bitmap_t scratch, pu_order_t *o) {
    const int n_numa = hwloc_get_nbobjs_by_type(t->topo, HWLOC_OBJ_NUMANODE);
    const int start = first_node(t);
    hwloc_bitmap_copy(left, t->usable);
    for (int k = 0; k < n_numa; k++) {
        hwloc_obj_t node = hwloc_get_obj_by_type(t->topo, HWLOC_OBJ_NUMANODE,
                                                 (unsigned)((start + k) % n_numa));
        if (node == NULL || node->cpuset == NULL) continue;
        hwloc_bitmap_and(set, node->cpuset, left);
        if (hwloc_bitmap_iszero(set)) continue;
        hwloc_bitmap_andnot(left, left, set);
        const int32_t before = o->n;
        append_by_core(t, set, scratch, o);
        o->node_len[o->n_nodes++] = o->n - before;
    }
    if (!hwloc_bitmap_iszero(left)) { /* PUs under no NUMA node: one more "node" */
        const int32_t before = o->n;
        append_by_core(t, left, scratch, o);
        o->node_len[o->n_nodes++] = o->n - before;
    }
}

/* One PU of each node in turn, each node's PUs in compact order. */
static void interleave(const pu_order_t *compact, int32_t *out) {
    int32_t n = 0;
    for (int32_t round = 0; n < compact->n; round++)
        for (int32_t k = 0, start = 0; k < compact->n_nodes; start += compact->node_len[k++])
            if (round < compact->node_len[k]) out[n++] = compact->ids[start + round];
}

static rt_status_t build_order(const rt_topology_t *t, rt_cpu_placement_t placement,
                               pu_order_t *o) {
    const int32_t n_pus = (int32_t)hwloc_bitmap_weight(t->usable);
    const int n_numa = hwloc_get_nbobjs_by_type(t->topo, HWLOC_OBJ_NUMANODE);
    o->ids_size = (size_t)n_pus * sizeof o->ids[0];
    o->node_len_size = ((size_t)n_numa + 1) * sizeof o->node_len[0];
    o->ids = rt_mem_alloc(NULL, o->ids_size);
    o->node_len = rt_mem_alloc(NULL, o->node_len_size);
    int32_t *spread = rt_mem_alloc(NULL, o->ids_size);
    hwloc_bitmap_t left = hwloc_bitmap_alloc(), set = hwloc_bitmap_alloc();
    hwloc_bitmap_t scratch = hwloc_bitmap_alloc();
    rt_status_t st = RT_OK;
    if (o->ids == NULL || o->node_len == NULL || spread == NULL || left == NULL || set == NULL ||
        scratch == NULL)
        st = rt_error(RT_ERR_OUT_OF_MEMORY, "rt_topology_place_threads: no memory for %d PUs",
                      (int)n_pus);
    if (st == RT_OK) order_compact(t, left, set, scratch, o);
    if (st == RT_OK && placement == RT_CPU_PLACEMENT_SPREAD) {
        interleave(o, spread);
        memcpy(o->ids, spread, (size_t)o->n * sizeof o->ids[0]);
    }
    rt_mem_free(NULL, spread, o->ids_size);
    hwloc_bitmap_free(left);
    hwloc_bitmap_free(set);
    hwloc_bitmap_free(scratch);
    return st;
}

static void free_order(pu_order_t *o) {
    rt_mem_free(NULL, o->ids, o->ids_size);
    rt_mem_free(NULL, o->node_len, o->node_len_size);
}

rt_status_t rt_topology_place_threads(const rt_topology_t *topo, rt_cpu_placement_t placement,
                                      int32_t n_threads, int32_t max_ids, int32_t *out_cpu_ids,
                                      int32_t *out_n_ids) {
    RT_ARMOR(topo != NULL && out_n_ids != NULL && (max_ids <= 0 || out_cpu_ids != NULL));
    *out_n_ids = 0;
    if (placement < 0 || placement >= RT_CPU_PLACEMENT_COUNT || n_threads < 0)
        return rt_error(RT_ERR_INVALID_ARGUMENT, "rt_topology_place_threads: placement %d, "
                        "n_threads %d", (int)placement, (int)n_threads);
    if (placement == RT_CPU_PLACEMENT_DEFAULT) placement = rt_topology_default_placement();
    if (placement == RT_CPU_PLACEMENT_NONE) return RT_OK;
    pu_order_t o = {0};
    const rt_status_t st = build_order(topo, placement, &o);
    if (st == RT_OK) {
        const int32_t n = n_threads > 0 ? n_threads : o.n;
        for (int32_t i = 0; i < n && i < max_ids; i++) out_cpu_ids[i] = o.ids[i % o.n];
        *out_n_ids = n;
    }
    free_order(&o);
    return st;
}

//===--- text ---===//


static double gib(uint64_t bytes) { return (double)bytes / (1024.0 * 1024.0 * 1024.0); }

static void write_numa(const rt_topology_t *topo, rt_write_fn write, void *user_data) {
    char cpus[256];
    for (hwloc_obj_t n = hwloc_get_next_obj_by_type(topo->topo, HWLOC_OBJ_NUMANODE, NULL); n != NULL;
         n = hwloc_get_next_obj_by_type(topo->topo, HWLOC_OBJ_NUMANODE, n)) {
        if (n->cpuset == NULL || hwloc_bitmap_list_snprintf(cpus, sizeof cpus, n->cpuset) < 0)
            snprintf(cpus, sizeof cpus, "?");
        rt_write_text(write, user_data, "  NUMA node %u: %.1f GiB, PUs %s\n", n->logical_index,
             gib(n->attr->numanode.local_memory), cpus);
    }
}

void rt_topology_write_text(const rt_topology_t *topo, rt_write_fn write, void *user_data) {
    rt_topology_summary_t s = {.struct_size = sizeof s};
    if (topo == NULL || write == NULL || rt_topology_get_summary(topo, &s) != RT_OK) return;
    rt_write_text(write, user_data, "%d package(s), %d NUMA node(s), %d core(s), %d PU(s), %.1f GiB%s\n",
         s.n_packages, s.n_numa_nodes, s.n_cores, s.n_pus, gib(s.memory_total),
         s.is_this_system ? "" : " (a recorded topology, not this machine)");
    write_numa(topo, write, user_data);
    rt_write_text(write, user_data, "  caches: L1d %" PRIu64 " KiB, L2 %" PRIu64 " KiB, L3 %" PRIu64
         " KiB x %d\n", s.l1d_size / 1024, s.l2_size / 1024, s.l3_size / 1024, s.n_l3);
}
