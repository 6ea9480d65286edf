/* SPDX-License-Identifier: MIT */
/* topo.h: what the runtime itself asks of rt_topology_t beyond abi/rt.h
 * (where rt_topology_get_shared gives the topology its decisions use).
 * topo_common.c has the hwloc-independent part; topo_hwloc.c and
 * topo_none.c answer the rest. */
#ifndef RT_TOPO_H
#define RT_TOPO_H

#include "internal.h"

/* rt_topology_summary_t has not grown since 1.0. */
#define TOPO_SUMMARY_SIZE_1_0 RT_SIZE_THROUGH(rt_topology_summary_t, is_this_system)

/* The OS number of NUMA node `node` (logical index), -1 when none. */
RT_INTERNAL int32_t rt_topology_numa_os_index(const rt_topology_t *topo, int32_t node);

/* What the topology says of the way between two ends, each a PCI bus id or
 * NULL (or "") for host memory, which lives on the NUMA node of the first
 * PU threads may use. Unknown parts read as neutral: gbps 0, numa_ratio 1. */
typedef struct rt_topology_link {
    double gbps[2];     /* the narrowest PCIe link between each end and its host
                           bridge, GB/s (hwloc's linkspeed); 0: unknown or the host */
    double numa_ratio;  /* NUMA distance between the ends' nodes over the local
                           distance (>= 1); 1: same node or unknown */
    bool same_switch;   /* both devices below one PCI-to-PCI bridge, so a copy
                           between them need not pass through host memory */
} rt_topology_link_t;
RT_INTERNAL void rt_topology_link(const rt_topology_t *topo, const char *pci_a, const char *pci_b,
                                  rt_topology_link_t *out);

#endif /* RT_TOPO_H */
