/* SPDX-License-Identifier: MIT */
/* rt_device.h: how a device describes itself and how its queues are asked
 * to run. Shared by applications (rt.h) and plugins (rt_plugin.h). */
#ifndef RT_DEVICE_H
#define RT_DEVICE_H

#include "rt_base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef uint32_t rt_device_kind_t;
enum {
    RT_DEVICE_KIND_CPU = 0,
    RT_DEVICE_KIND_GPU = 1,            /* discrete GPU with its own memory */
    RT_DEVICE_KIND_IGPU = 2,           /* integrated GPU sharing host memory */
    RT_DEVICE_KIND_ACCELERATOR = 3,    /* other accelerators (NPU, TPU, ...) */
    RT_DEVICE_KIND_SOFTWARE = 4        /* a software emulation of a GPU (lavapipe, mocks) */
};

/* Device capabilities. */
enum {
    RT_DEVICE_CAP_ASYNC = 1u << 0,          /* async set/get/copy: rt_device_ext_async_t */
    RT_DEVICE_CAP_EVENTS = 1u << 1,         /* events: rt_device_ext_async_t */
    RT_DEVICE_CAP_HOST_BUFFER = 1u << 2,    /* has a host-visible buffer type */
    RT_DEVICE_CAP_BUFFER_FROM_HOST_PTR = 1u << 3 /* rt_device_ext_host_ptr_t */
};

/* Filled by get_props. The core zeroes it and sets struct_size to the size
 * it knows; the plugin writes only fields inside that size. Strings are
 * NUL-terminated and truncated to fit. */
typedef struct rt_device_props {
    uint32_t struct_size;
    rt_device_kind_t kind;
    char name[64];           /* model name: "AMD EPYC 9454", "NVIDIA H200" */
    char description[192];   /* one line: driver, API version, ... */
    uint64_t memory_total;   /* bytes the device can address for rt, 0 if unknown */
    uint64_t memory_free;    /* bytes free now, 0 if unknown */
    uint64_t caps;           /* RT_DEVICE_CAP_* */
    char pci_bus_id[32];     /* "0000:03:00.0" (domain:bus:device.function), "" if none */
    uint8_t uuid[16];        /* all zero if none */
    int32_t has_uuid;        /* 1 when uuid is meaningful */
    int32_t reserved;
} rt_device_props_t;

RT_STATIC_ASSERT(sizeof(rt_device_props_t) == 344, "rt_device_props_t 1.0 size");

/* How the core picks cpu_ids for a queue of a CPU device when the caller
 * gives none (rt_topology_place_threads in rt.h has the details). */
typedef int32_t rt_cpu_placement_t;
enum {
    RT_CPU_PLACEMENT_DEFAULT = 0, /* RT_CPU_PLACEMENT=compact|spread|none, else compact */
    RT_CPU_PLACEMENT_COMPACT = 1, /* fill one NUMA node (a PU per core, then SMT siblings) first */
    RT_CPU_PLACEMENT_SPREAD = 2,  /* alternate NUMA nodes, a PU per core first */
    RT_CPU_PLACEMENT_NONE = 3,    /* do not pin */
    RT_CPU_PLACEMENT_COUNT
};

/* How a queue should run. Zero means "the default" everywhere: for a CPU
 * device with no cpu_ids the core pins the workers by cpu_placement, on
 * the machine's topology; otherwise the plugin decides. */
typedef struct rt_queue_options {
    uint32_t struct_size;
    int32_t n_threads;           /* worker threads for CPU-like devices */
    const int32_t *cpu_ids;      /* OS processor ids to pin workers to, or NULL */
    int32_t n_cpu_ids;
    rt_cpu_placement_t cpu_placement; /* when cpu_ids is NULL; plugins may ignore it */
    const rt_ext_header_t *next; /* extension records, or NULL */
} rt_queue_options_t;

RT_STATIC_ASSERT(sizeof(rt_queue_options_t) == 32, "rt_queue_options_t 1.0 size");

#ifdef __cplusplus
}
#endif

#endif /* RT_DEVICE_H */
