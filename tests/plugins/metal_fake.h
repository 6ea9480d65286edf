/* SPDX-License-Identifier: MIT */
/* metal_fake.h: a stand-in for Metal.framework on Linux (metal_fake.c,
 * built as libfakemetal.so on GNU's libobjc), so that the Metal plugin's
 * host code runs in CI: one device whose buffers are host memory, command
 * buffers that run their blits when committed and count their dispatches
 * (no kernel runs), events signalled at commit, and every object counted,
 * so that a test sees what the plugin leaks. Autoreleased objects (GNU's
 * runtime has no pools) are released by rt_fake_metal_drain. */
#ifndef RT_METAL_FAKE_H
#define RT_METAL_FAKE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Exported from libfakemetal.so (the build hides everything else). */
#define RT_FAKE_METAL_API __attribute__((visibility("default")))

typedef struct rt_fake_metal_stats {
    long live;                    /* objects alive, autoreleased ones included */
    long commits, dispatches, blits, libraries, pipelines;
    /* The last dispatch, as the encoder saw it. */
    uint32_t spec[16];            /* its pipeline's function constants (RT_VK_N_SPEC used) */
    uint64_t groups, threads;     /* threadgroups along x, threads in each */
    size_t push_bytes;            /* setBytes length at buffer index 4 */
    uint32_t push[32];            /* those bytes */
    size_t offsets[5];            /* setBuffer offsets, per index */
    void *buffers[5];             /* the MTLBuffer ids bound, per index */
} rt_fake_metal_stats_t;

RT_FAKE_METAL_API rt_fake_metal_stats_t *rt_fake_metal_stats(void);
/* Whether the next devices report unified memory (default true). */
RT_FAKE_METAL_API void rt_fake_metal_set_unified(bool unified);
/* Releases every autoreleased object once, as a pool's end would. */
RT_FAKE_METAL_API void rt_fake_metal_drain(void);
/* The host address of an MTLBuffer's bytes, Private ones too. */
RT_FAKE_METAL_API void *rt_fake_metal_buffer_bytes(void *buffer);

#endif /* RT_METAL_FAKE_H */
