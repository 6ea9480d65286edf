/* SPDX-License-Identifier: MIT */
/* cost_plan.h: the least-time layer split that RT_PLACEMENT_FASTEST asks
 * for (cost_plan.c), over plain arrays so that it knows nothing of the
 * placement object around it. */
#ifndef RT_COST_PLAN_H
#define RT_COST_PLAN_H

#include "internal.h"

#include "../abi/rt_sched.h"

typedef struct rt_cost_problem {
    int32_t n_layers;
    const uint64_t *layer_bytes;      /* n_layers */
    uint64_t input_bytes, output_bytes;
    int32_t n_devices;                /* GPUs 0..n_devices-2, then the CPU */
    const uint64_t *budget;           /* bytes each GPU may take (the CPU's is ignored) */
    const rt_device_speed_t *speed;   /* n_devices */
} rt_cost_problem_t;

/* Writes the device of each layer, input and output, and the predicted
 * seconds of each device's share (out_share, n_devices) and of the whole;
 * false when host memory runs out (the plan is then all on the CPU). */
RT_INTERNAL bool rt_cost_plan(const rt_allocator_t *a, const rt_cost_problem_t *pr,
                              int32_t *layer_device, int32_t *out_input, int32_t *out_output,
                              double *out_share, double *out_total);

#endif /* RT_COST_PLAN_H */
