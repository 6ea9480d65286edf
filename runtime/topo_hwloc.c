/* SPDX-License-Identifier: MIT */
/* topo_hwloc.c: rt_topology_t over hwloc 2.x, built when ./configure finds
 * hwloc (topo_none.c otherwise). Loads this machine or a recorded XML
 * topology (an explicit path, or HWLOC_XMLFILE, which hwloc itself reads),
 * keeps the important I/O devices so that PCI devices can be placed, and
 * answers the summary, "which NUMA node is nearest this PCI device" and a
 * human description. */
#include "registry_impl.h"

#include <hwloc.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

struct rt_topology {
    hwloc_topology_t topo;
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

rt_status_t rt_topology_create(const char *xml_path, rt_topology_t **out_topo) {
    RT_ARMOR(out_topo != NULL);
    *out_topo = NULL;
    rt_topology_t *t = rt_mem_calloc(NULL, sizeof *t);
    if (t == NULL) return rt_error(RT_ERR_OUT_OF_MEMORY, "rt_topology_create: no memory");
    if (hwloc_topology_init(&t->topo) != 0) {
        rt_mem_free(NULL, t, sizeof *t);
        return rt_error(RT_ERR_OUT_OF_MEMORY, "hwloc_topology_init failed");
    }
    const rt_status_t st = load(t->topo, xml_path);
    if (st != RT_OK) {
        rt_topology_destroy(t);
        return st;
    }
    *out_topo = t;
    return RT_OK;
}

void rt_topology_destroy(rt_topology_t *topo) {
    if (topo == NULL) return;
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
    const uint32_t size = out_summary->struct_size != 0 ? out_summary->struct_size : sizeof s;
    rt_struct_copy(out_summary, size, &s, sizeof s);
    out_summary->struct_size = size;
    return RT_OK;
}

//===--- PCI devices ---===//

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

//===--- text ---===//

static void emit(rt_write_fn write, void *user_data, const char *fmt, ...) RT_PRINTF(3, 4);

static void emit(rt_write_fn write, void *user_data, const char *fmt, ...) {
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    write(line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1, user_data);
}

static double gib(uint64_t bytes) { return (double)bytes / (1024.0 * 1024.0 * 1024.0); }

static void write_numa(const rt_topology_t *topo, rt_write_fn write, void *user_data) {
    char cpus[256];
    for (hwloc_obj_t n = hwloc_get_next_obj_by_type(topo->topo, HWLOC_OBJ_NUMANODE, NULL); n != NULL;
         n = hwloc_get_next_obj_by_type(topo->topo, HWLOC_OBJ_NUMANODE, n)) {
        if (n->cpuset == NULL || hwloc_bitmap_list_snprintf(cpus, sizeof cpus, n->cpuset) < 0)
            snprintf(cpus, sizeof cpus, "?");
        emit(write, user_data, "  NUMA node %u: %.1f GiB, PUs %s\n", n->logical_index,
             gib(n->attr->numanode.local_memory), cpus);
    }
}

void rt_topology_write_text(const rt_topology_t *topo, rt_write_fn write, void *user_data) {
    rt_topology_summary_t s = {.struct_size = sizeof s};
    if (topo == NULL || write == NULL || rt_topology_get_summary(topo, &s) != RT_OK) return;
    emit(write, user_data, "%d package(s), %d NUMA node(s), %d core(s), %d PU(s), %.1f GiB\n",
         s.n_packages, s.n_numa_nodes, s.n_cores, s.n_pus, gib(s.memory_total));
    write_numa(topo, write, user_data);
    emit(write, user_data, "  caches: L1d %" PRIu64 " KiB, L2 %" PRIu64 " KiB, L3 %" PRIu64
         " KiB x %d\n", s.l1d_size / 1024, s.l2_size / 1024, s.l3_size / 1024, s.n_l3);
}
