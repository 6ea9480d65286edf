/* SPDX-License-Identifier: MIT */
/* cost_measure.h: measuring a device's speed figures (cost_measure.c) and
 * keeping them (cost_cache.c, which rt_device_speed answers from). */
#ifndef RT_COST_MEASURE_H
#define RT_COST_MEASURE_H

#include "internal.h"

#include "../abi/rt_sched.h"

/* Runs the calibration kernels on dev: the decode figures into out, the
 * prompt figure (rt_device_prompt_speed) into out_prompt; zero on failure. */
RT_INTERNAL rt_status_t rt_cost_measure(rt_device_t *dev, rt_device_speed_t *out,
                                        double *out_prompt);

#endif /* RT_COST_MEASURE_H */
