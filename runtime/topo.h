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

#endif /* RT_TOPO_H */
