/* SPDX-License-Identifier: MIT */
/* cost_plan.h: the least-time layer split that RT_PLACEMENT_FASTEST asks
 * for (cost_plan.c), over plain arrays so that it knows nothing of the
 * placement object around it. */
#ifndef RT_COST_PLAN_H
#define RT_COST_PLAN_H

#include "cost_link.h"

typedef struct rt_cost_problem {
    int32_t n_layers;
    const uint64_t *layer_bytes;      /* n_layers */
    uint64_t input_bytes, output_bytes;
    int32_t n_devices;                /* GPUs 0..n_devices-2, then the CPU */
    const uint64_t *budget;           /* bytes each GPU may take (the CPU's is ignored) */
    const rt_device_speed_t *speed;   /* n_devices */
    const double *prompt_bytes_per_s; /* n_devices: weight bytes times tokens a second in a
                                         product of n_ubatch columns; NULL or 0: a prompt
                                         step costs what streaming the weights does */
    const rt_cost_links_t *links;     /* the crossings between devices */
    const double *cache_gain;         /* n_devices or NULL: how much faster a device streams a
                                         share that fits in cache_bytes (>= 1) */
    uint64_t cache_bytes;             /* the last-level caches; 0: unknown */
    int32_t n_ubatch;                 /* tokens of one prompt step, >= 1 */
    double w_decode, w_prompt;        /* the job: decode steps and prompt steps it takes */
} rt_cost_problem_t;

/* Predicted seconds of each device's share and of the whole: a decode
 * step (one token) and a prompt step (n_ubatch tokens). */
typedef struct rt_cost_times {
    double decode_s[RT_SCHED_MAX_DEVICES], prompt_s[RT_SCHED_MAX_DEVICES];
    double decode_total_s, prompt_total_s;
} rt_cost_times_t;

/* Writes the device of each layer, input and output, and the predicted
 * times; false when host memory runs out (the plan is then all on the CPU). */
RT_INTERNAL bool rt_cost_plan(const rt_allocator_t *a, const rt_cost_problem_t *pr,
                              int32_t *layer_device, int32_t *out_input, int32_t *out_output,
                              rt_cost_times_t *out_times);

#endif /* RT_COST_PLAN_H */
