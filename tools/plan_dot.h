/* SPDX-License-Identifier: MIT */
/* plan_dot.h: a graph as Graphviz DOT, as the scheduler split it: one
 * cluster per layer (as the tensors' names say, plan_names.h),
 * one fill colour per device, a legend naming the devices and the split
 * count. Nodes are the graph's nodes and leaves, edges run from each
 * source to its reader. */
#ifndef RT_TOOLS_PLAN_DOT_H
#define RT_TOOLS_PLAN_DOT_H

#include "../abi/rt_sched.h"

#include <stdio.h>

/* Writes g, allocated by sched (so every tensor has its device), to f. */
void tool_plan_write_dot(const rt_graph_t *g, const rt_sched_t *sched, FILE *f);

#endif /* RT_TOOLS_PLAN_DOT_H */
