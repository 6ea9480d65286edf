/* SPDX-License-Identifier: MIT */
/* mockgpu.h: a test plugin of N discrete "GPUs" whose memory is private.
 *
 * The memory is host memory behind the ABI, never flagged host: data moves
 * only through set, get and copy, and every byte that does is counted. The
 * arithmetic is delegated to the CPU plugin, which the mock loads and drives
 * through the same ABI the core uses (as a host would), so the mock tests
 * splits, copies and out-of-memory paths without kernels of its own.
 *
 * Configuration, read when the plugin is created:
 *   RT_MOCKGPU_COUNT       devices (default 2)
 *   RT_MOCKGPU_MEMORY      bytes per device, K/M/G suffixes (default 1G), or a
 *                          comma-separated list, one per device
 *   RT_MOCKGPU_OPS         comma-separated op names the devices support
 *                          (default: every op the CPU plugin supports)
 *   RT_MOCKGPU_PCI         comma-separated PCI bus ids, one per device
 *   RT_MOCKGPU_GBPS        emulated weight bandwidth in GB/s, one per device or
 *                          one for all (default: none, the CPU plugin's speed):
 *                          a graph takes at least its products' weight bytes
 *                          over it (speed.c), so the placement sees a slow GPU
 *   RT_MOCKGPU_COPY_US     emulated microseconds each copy in or out takes
 *                          (one per device or one for all; default 0)
 *   RT_MOCKGPU_REPORT_SPEED  1: report the knobs as the device's own figures
 *                          (rt_device_ext_speed_t) instead of being measured
 *   RT_MOCKGPU_CPU_PLUGIN  path of the CPU plugin (default: found through
 *                          RT_PLUGIN_PATH's first entry holding it, then the
 *                          build tree next to this file)
 *
 * Counters are published as a vendor extension record on rt_plugin_t.next
 * (type MOCKGPU_EXT_COUNTERS), which the core skips as unknown; tests reach
 * it by calling rt_plugin_query on the same loaded object.
 *
 * Like a real plugin, it keeps no state outside the objects it creates:
 * each plugin_create (one per registry) makes its own instance with its
 * host table, devices and CPU plugin handle, so registries on several
 * threads share nothing. The one exception is the counters extension, a
 * test hook without an instance argument: it reads the instance created
 * last and still alive. RT_MOCKGPU_CPU_PLUGIN naming mockgpu itself is
 * refused rather than followed into an endless recursion. */
#ifndef MOCKGPU_H
#define MOCKGPU_H

#include "../../../abi/rt_plugin.h"

#define MOCKGPU_EXT_COUNTERS 0x6d6f636bu /* "mock" */
#define MOCKGPU_MAX_DEVICES 8

typedef struct mockgpu_counters {
    uint64_t bytes_in;      /* host or other device -> this device */
    uint64_t bytes_out;     /* this device -> host */
    uint64_t bytes_d2d;     /* device -> device copies into this device */
    uint64_t allocated;     /* bytes allocated now */
    uint64_t n_graphs;      /* graph_compute calls */
    uint64_t n_nodes;       /* nodes computed */
} mockgpu_counters_t;

typedef struct mockgpu_ext_counters {
    rt_ext_header_t header; /* type = MOCKGPU_EXT_COUNTERS */
    /* Copies device i's counters; false when i is out of range. */
    bool (*get)(uint32_t device, mockgpu_counters_t *out);
    void (*reset)(void);
} mockgpu_ext_counters_t;

#ifdef MOCKGPU_INTERNAL
#include <stdatomic.h>

struct mockgpu;

typedef struct mockgpu_device {
    struct mockgpu *owner;      /* the instance holding this device */
    uint32_t index;
    uint64_t memory;            /* bytes */
    _Atomic uint64_t allocated; /* bytes */
    char pci[32];
    double gbps;                /* emulated weight bandwidth; 0: none */
    double copy_us;             /* emulated seconds x 1e6 a copy takes */
    bool report_speed;          /* RT_MOCKGPU_REPORT_SPEED */
    char buft_name[16];         /* "MockGPU<index>" */
    rt_buffer_type_desc_t buft;
    mockgpu_counters_t counters;
} mockgpu_device_t;

typedef struct mockgpu {
    const rt_host_t *host;      /* given to plugin_create */
    uint32_t n_devices;
    mockgpu_device_t devices[MOCKGPU_MAX_DEVICES];
    bool op_allowed[RT_OP_COUNT];
    /* the CPU plugin we delegate to */
    void *cpu_dl;
    const rt_plugin_t *cpu_plugin;
    void *cpu_handle;
    void *cpu_device;
    const rt_device_vtable_t *cpu_vt;
} mockgpu_t;

/* The instance created last and still alive, for the counters hook only. */
extern mockgpu_t *_Atomic mockgpu_latest;
extern const rt_device_vtable_t mockgpu_device_vtable;
extern const rt_buffer_vtable_t mockgpu_buffer_vtable;

rt_status_t mockgpu_buffer_alloc(void *ctx, size_t size, void *state);
size_t mockgpu_buffer_state_size(void);
bool mockgpu_get_counters(uint32_t device, mockgpu_counters_t *out);
/* speed.c: the emulated speed knobs. Now, in seconds; waiting until a
 * graph begun at t0 has taken what its weights cost at d's bandwidth, or a
 * copy begun at t0 its copy time. */
double mockgpu_now(void);
void mockgpu_pace_graph(const mockgpu_device_t *d, rt_tensor_t *const *nodes, int32_t n_nodes,
                        double t0);
void mockgpu_pace_copy(const mockgpu_device_t *d, double t0);
void mockgpu_reset_counters(void);
#endif

#endif /* MOCKGPU_H */
