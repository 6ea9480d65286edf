/* SPDX-License-Identifier: MIT */
/* act_round.h: MUL_MAT's rounding of b for the block weight types of ABI
 * 1.2, as the contract lets a plugin's integer dot products see it (and
 * the plugins do): each run of blck elements (32, or 256 for the
 * super-block types) at the int8 levels of the f32 scale max|x| / 127
 * (Q8_K's rounding, the CUDA and Vulkan plugins' for both); or, as the CPU
 * plugin rounds runs of 32 (ggml's Q8_0/Q8_1 on x86), levels x * (127 /
 * max|x|) to the nearest even and the scale stored in F16. Header-only so
 * that the conformance reference and the device checks (tests/device)
 * share it. */
#ifndef RT_CONFORM_ACT_ROUND_H
#define RT_CONFORM_ACT_ROUND_H

#include "../../abi/rt_quant.h"

#include <math.h>
#include <stdint.h>

/* x[0..blck) rounded in place. */
static inline void cf_round_block_q8_f32(float *x, int64_t blck) {
    float amax = 0.0f;
    for (int64_t j = 0; j < blck; j++) amax = fmaxf(amax, fabsf(x[j]));
    const float d = amax / 127.0f;
    for (int64_t j = 0; j < blck; j++) x[j] = d * (float)rt_quant_level(x[j], d, -127, 127);
}

/* x[0..32) rounded in place as the CPU plugin rounds a run of 32. */
static inline void cf_round_block_q8_f16(float *x) {
    float amax = 0.0f;
    for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[j]));
    const float d = rt_fp16_to_fp32(rt_fp32_to_fp16(amax / 127.0f));
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    for (int j = 0; j < 32; j++) x[j] = d * (float)rt_quant_clamp((int)nearbyintf(x[j] * id), -127, 127);
}

/* The same run's Q8_1 block, as the CPU plugin makes it for Q4_1 and
 * Q5_1 weights (ggml's x86 path): the levels q, the F16 scale d, and s,
 * the F32 scale max|x| / 127 (not the F16 one) times the levels' sum,
 * stored in F16: the weights' offsets m are multiplied by s. */
static inline void cf_block_q8_1(const float *x, int8_t q[32], float *d, float *s) {
    float amax = 0.0f;
    for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[j]));
    const float df = amax / 127.0f, id = amax != 0.0f ? 127.0f / amax : 0.0f;
    int sum = 0;
    for (int j = 0; j < 32; j++) {
        q[j] = (int8_t)rt_quant_clamp((int)nearbyintf(x[j] * id), -127, 127);
        sum += q[j];
    }
    *d = rt_fp16_to_fp32(rt_fp32_to_fp16(df));
    *s = rt_fp16_to_fp32(rt_fp32_to_fp16(df * (float)sum));
}

#endif /* RT_CONFORM_ACT_ROUND_H */
