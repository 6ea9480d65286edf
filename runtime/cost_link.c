/* SPDX-License-Identifier: MIT */
/* cost_link.c: the planner's price of moving activations between two
 * devices. A copy passes over one or two PCIe links ("hops"): host memory
 * to a device is the device's link, device to host the same way back, and
 * device to device is both links through host memory, or only the
 * destination's when the two sit below one PCIe switch (peer to peer).
 * A hop over device d costs d's measured copy time of a token
 * (copy_in_s: what a small copy takes, driver and latency included) and,
 * when hwloc knows d's link speed (the narrowest PCIe link between d and
 * its host bridge), each token's bytes over that speed; with the speed
 * unknown, every token costs the measured copy again. A crossing between
 * NUMA nodes costs the whole in proportion to their NUMA distance over the
 * local one (the inter-socket link is slower and longer than a local
 * one). So the predicted copy cost grows with NUMA distance and falls with
 * link width, and devices on one socket or switch are cheaper to split
 * over than devices on two. */
#include "cost_link.h"

typedef struct hop {
    double lat_s, token_s;
} hop_t;

static hop_t hop_over(double copy_in_s, double gbps) {
    if (gbps > 0) return (hop_t){copy_in_s, RT_COST_TOKEN_BYTES / (gbps * 1e9)};
    return (hop_t){0, copy_in_s};
}

static const char *pci_of(const char *const *pci, int32_t d) {
    return pci != NULL && pci[d] != NULL && pci[d][0] ? pci[d] : NULL;
}

/* The crossing a -> b with what the topology says of the way. */
static hop_t crossing(const rt_cost_links_t *l, const rt_topology_link_t *k,
                      const rt_device_speed_t *speed, int32_t a, int32_t b) {
    const int32_t cpu = l->n - 1;
    hop_t h;
    if (a == cpu) h = hop_over(speed[b].copy_in_s, k->gbps[1]);
    else if (b == cpu) h = hop_over(speed[a].copy_in_s, k->gbps[0]);
    else if (k->same_switch) {
        const double g = k->gbps[0] > 0 && k->gbps[1] > 0
                         ? (k->gbps[0] < k->gbps[1] ? k->gbps[0] : k->gbps[1]) : 0;
        h = hop_over(speed[b].copy_in_s, g);
    } else {
        const hop_t out = hop_over(speed[a].copy_in_s, k->gbps[0]);
        const hop_t in = hop_over(speed[b].copy_in_s, k->gbps[1]);
        h = (hop_t){out.lat_s + in.lat_s, out.token_s + in.token_s};
    }
    return (hop_t){h.lat_s * k->numa_ratio, h.token_s * k->numa_ratio};
}

void rt_cost_links(const rt_topology_t *topo, int32_t n, const char *const *pci,
                   const rt_device_speed_t *speed, rt_cost_links_t *out) {
    out->n = n;
    for (int32_t a = 0; a < n; a++) {
        for (int32_t b = 0; b < n; b++) {
            out->lat_s[a][b] = out->token_s[a][b] = 0;
            if (a == b) continue;
            rt_topology_link_t k = {{0, 0}, 1, false};
            if (topo != NULL) rt_topology_link(topo, pci_of(pci, a), pci_of(pci, b), &k);
            const hop_t h = crossing(out, &k, speed, a, b);
            out->lat_s[a][b] = h.lat_s;
            out->token_s[a][b] = h.token_s;
        }
    }
}
