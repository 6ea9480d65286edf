/* SPDX-License-Identifier: MIT */
/* cost_link.h: what a crossing of the activations between two devices
 * costs the planner (cost_link.c), from the devices' measured copy times
 * and the machine's topology. */
#ifndef RT_COST_LINK_H
#define RT_COST_LINK_H

#include "internal.h"
#include "topo.h"

#include "../abi/rt_sched.h"

/* Bytes of one token's activations the measured copy time is for
 * (cost_measure.c copies that much). */
#define RT_COST_TOKEN_BYTES 16384.0

/* A crossing from device a to b carrying n tokens costs
 * lat_s[a][b] + n * token_s[a][b] seconds. Devices as the planner's: GPUs
 * 0..n-2, then the CPU (host memory). */
typedef struct rt_cost_links {
    int32_t n;
    double lat_s[RT_SCHED_MAX_DEVICES][RT_SCHED_MAX_DEVICES];
    double token_s[RT_SCHED_MAX_DEVICES][RT_SCHED_MAX_DEVICES];
} rt_cost_links_t;

/* Fills out for n devices: pci[d] is device d's PCI bus id (NULL or "":
 * none, as for the CPU), speed[d].copy_in_s its measured host-to-device
 * copy of a token; topo may be NULL (no topology: links unknown). */
RT_INTERNAL void rt_cost_links(const rt_topology_t *topo, int32_t n, const char *const *pci,
                               const rt_device_speed_t *speed, rt_cost_links_t *out);

static inline double rt_cost_cross_s(const rt_cost_links_t *l, int32_t a, int32_t b, double tokens) {
    return a == b ? 0 : l->lat_s[a][b] + tokens * l->token_s[a][b];
}

#endif /* RT_COST_LINK_H */
