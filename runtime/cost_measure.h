/* SPDX-License-Identifier: MIT */
/* cost_measure.h: measuring a device's speed figures (cost_measure.c) and
 * keeping them (cost_cache.c, which rt_device_speed answers from). */
#ifndef RT_COST_MEASURE_H
#define RT_COST_MEASURE_H

#include "internal.h"

#include "../abi/rt_sched.h"

/* A device's figures as measured and cached. */
typedef struct rt_cost_figures {
    rt_device_speed_t s;       /* bytes_per_s: weights streamed from memory */
    double prompt_bytes_per_s; /* rt_device_prompt_speed */
    double cached_bytes_per_s; /* the same product over weights that stay in the cache */
} rt_cost_figures_t;

/* Runs the calibration kernels on dev into out; zero on failure. */
RT_INTERNAL rt_status_t rt_cost_measure(rt_device_t *dev, rt_cost_figures_t *out);

/* Bytes of the machine's last-level caches (hwloc's, through the shared
 * topology); 0 when unknown. */
RT_INTERNAL uint64_t rt_cost_llc_bytes(void);

/* How much faster dev streams weights that stay in the cache than from
 * memory (the cached figures' ratio, >= 1); 1 when not measured (a
 * plugin's own figures) or not to be had. */
RT_INTERNAL double rt_cost_cache_gain(rt_device_t *dev);

#endif /* RT_COST_MEASURE_H */
