// SPDX-License-Identifier: MIT
// reduce.glsl: workgroup-wide sum and max through shared memory, for the
// row kernels (one workgroup per row). The workgroup size is a power of two
// of at most RT_REDUCE_MAX. Every invocation must call these (barriers).
#define RT_REDUCE_MAX 256
shared float red[RT_REDUCE_MAX];

float wg_sum(float v) {
    const uint t = gl_LocalInvocationID.x;
    red[t] = v;
    barrier();
    for (uint s = gl_WorkGroupSize.x / 2u; s > 0u; s >>= 1) {
        if (t < s) red[t] += red[t + s];
        barrier();
    }
    const float r = red[0];
    barrier();
    return r;
}

float wg_max(float v) {
    const uint t = gl_LocalInvocationID.x;
    red[t] = v;
    barrier();
    for (uint s = gl_WorkGroupSize.x / 2u; s > 0u; s >>= 1) {
        if (t < s) red[t] = max(red[t], red[t + s]);
        barrier();
    }
    const float r = red[0];
    barrier();
    return r;
}
