/* SPDX-License-Identifier: MIT */
/* topo_none.c: rt_topology_t without hwloc (./configure --without-hwloc or
 * no hwloc found). What the OS tells through sysconf: processors, memory
 * and, on glibc, cache sizes; no packages, NUMA nodes or PCI placement, so
 * `available` is false, every PCI device's NUMA node is unknown and no
 * thread placement is decided (threads are not pinned). A recorded XML
 * topology cannot be read. */
#include "topo.h"
#include "device_impl.h"

#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

struct rt_topology {
    rt_topology_summary_t summary;
};

static uint64_t conf(int name) {
    const long v = sysconf(name);
    return v > 0 ? (uint64_t)v : 0;
}

static void probe(rt_topology_summary_t *s) {
    s->struct_size = sizeof *s;
    s->available = false;
    s->n_packages = 1;
    s->n_numa_nodes = 1;
    s->is_this_system = true;
    s->n_pus = (int32_t)conf(_SC_NPROCESSORS_ONLN);
    s->n_cores = s->n_pus; /* SMT siblings cannot be told apart without hwloc */
    s->memory_total = conf(_SC_PHYS_PAGES) * conf(_SC_PAGESIZE);
#if defined(_SC_LEVEL1_DCACHE_SIZE) /* glibc */
    s->l1d_size = conf(_SC_LEVEL1_DCACHE_SIZE);
    s->l2_size = conf(_SC_LEVEL2_CACHE_SIZE);
    s->l3_size = conf(_SC_LEVEL3_CACHE_SIZE);
    s->n_l3 = s->l3_size > 0 ? 1 : 0;
#endif
}

rt_status_t rt_topology_create(const char *xml_path, rt_topology_t **out_topo) {
    RT_ARMOR(out_topo != NULL);
    *out_topo = NULL;
    if (xml_path != NULL)
        return rt_error(RT_ERR_UNSUPPORTED, "cannot read topology file %s: rt was built without "
                        "hwloc", xml_path);
    rt_topology_t *t = rt_mem_calloc(NULL, sizeof *t);
    if (t == NULL) return rt_error(RT_ERR_OUT_OF_MEMORY, "rt_topology_create: no memory");
    probe(&t->summary);
    *out_topo = t;
    return RT_OK;
}

void rt_topology_destroy(rt_topology_t *topo) { rt_mem_free(NULL, topo, sizeof *topo); }

rt_status_t rt_topology_get_summary(const rt_topology_t *topo, rt_topology_summary_t *out_summary) {
    RT_ARMOR(topo != NULL && out_summary != NULL);
    rt_struct_copy_out(out_summary, &topo->summary, sizeof topo->summary, TOPO_SUMMARY_SIZE_1_0);
    return RT_OK;
}

int32_t rt_topology_numa_node_of_pci(const rt_topology_t *topo, const char *pci_bus_id) {
    (void)topo;
    (void)pci_bus_id;
    return -1;
}

int32_t rt_topology_numa_os_index(const rt_topology_t *topo, int32_t node) {
    (void)topo;
    (void)node;
    return -1;
}

void rt_topology_link(const rt_topology_t *topo, const char *pci_a, const char *pci_b,
                      rt_topology_link_t *out) {
    (void)topo;
    (void)pci_a;
    (void)pci_b;
    *out = (rt_topology_link_t){{0, 0}, 1, false};
}

rt_status_t rt_topology_numa_node_cpus(const rt_topology_t *topo, int32_t node, int32_t max_ids,
                                       int32_t *out_cpu_ids, int32_t *out_n_ids) {
    (void)max_ids;
    (void)out_cpu_ids;
    RT_ARMOR(topo != NULL && out_n_ids != NULL);
    *out_n_ids = 0;
    return rt_error(RT_ERR_UNSUPPORTED, "rt_topology_numa_node_cpus(%d): rt was built without "
                    "hwloc", (int)node);
}

rt_status_t rt_topology_place_threads(const rt_topology_t *topo, rt_cpu_placement_t placement,
                                      int32_t n_threads, int32_t max_ids, int32_t *out_cpu_ids,
                                      int32_t *out_n_ids) {
    (void)max_ids;
    (void)out_cpu_ids;
    RT_ARMOR(topo != NULL && out_n_ids != NULL);
    *out_n_ids = 0;
    return rt_error(RT_ERR_UNSUPPORTED, "rt_topology_place_threads(%s, %d): rt was built without "
                    "hwloc", rt_cpu_placement_name(placement), (int)n_threads);
}

void rt_topology_write_text(const rt_topology_t *topo, rt_write_fn write, void *user_data) {
    char text[256];
    if (topo == NULL || write == NULL) return;
    const rt_topology_summary_t *s = &topo->summary;
    const int n = snprintf(text, sizeof text, "%d PU(s), %.1f GiB (from the OS; rt was built "
                           "without hwloc)\n  caches: L1d %" PRIu64 " KiB, L2 %" PRIu64
                           " KiB, L3 %" PRIu64 " KiB\n", s->n_pus,
                           (double)s->memory_total / (1024.0 * 1024.0 * 1024.0),
                           s->l1d_size / 1024, s->l2_size / 1024, s->l3_size / 1024);
    if (n > 0) write(text, (size_t)n < sizeof text ? (size_t)n : sizeof text - 1, user_data);
}
