/* SPDX-License-Identifier: MIT */
/* rt_plugin.h: what a backend plugin implements. A plugin is a shared
 * object built against abi/ alone; it never links the core library.
 *
 * The life of a plugin, in the order the core drives it:
 *
 *   1. dlopen, then dlsym(RT_PLUGIN_QUERY_SYMBOL). The one exported symbol.
 *      The core opens the file once, checks that descriptor and loads it
 *      as /proc/self/fd/N on Linux: a plugin that finds files beside its
 *      own (dladdr's dli_fname) passes that name through realpath first.
 *   2. query(max_abi, host): the core passes the highest ABI version it
 *      speaks and its host table. The plugin answers with its rt_plugin_t,
 *      whose abi_version is min(max_abi, the version it was built for)
 *      (rt_plugin_negotiate, rt_plugin_answer below), or NULL to decline
 *      (another major). query has no side effects.
 *   3. vtable->create(host, &plugin): the plugin starts (opens its driver,
 *      enumerates hardware). A failure returns a status and, through
 *      host->set_error, a message; the core then reports and skips it.
 *   4. device_count / device_get: the plugin's devices, each a device
 *      handle with its rt_device_vtable_t.
 *   5. Through each device: buffer types, buffers, queues, graph_compute.
 *   6. vtable->destroy(plugin) when the registry goes away. The core closes
 *      the shared object only if the plugin set RT_PLUGIN_FLAG_UNLOAD_SAFE;
 *      otherwise it stays mapped until the process exits.
 *
 * Version rules (see rt_base.h for the general ones), one for both sides,
 * as for Vulkan drivers: the version in use is the lower of the two.
 *   - A plugin answers min(max_abi, its own) when the majors agree, and
 *     from then on behaves as that version: it offers nothing the version
 *     does not define (no op, type, flag or buffer type of a later minor;
 *     rt_op_abi_version and rt_type_abi_version in rt_tensor.h say which
 *     minor defined what) and reads the host table only through
 *     host->struct_size. create learns the version again from the host
 *     table (rt_plugin_abi below; query keeps no state).
 *   - The core loads a plugin whose answer has its major and is at least
 *     RT_ABI_MIN, older minor or newer. It reads an older plugin's smaller
 *     structs up to their struct_size and never hands it an op or a type
 *     its version does not define; it reads a newer plugin's larger
 *     structs up to the size the core knows.
 *   - A file that declines, fails or is refused does not hide another
 *     file of the same name later on the search path.
 * Handles (void *plugin, *device, *queue, *event) are the plugin's own and
 * opaque to the core.
 *
 * Threading: the core calls a queue's functions from one thread at a time;
 * different queues and devices may be driven from different threads.
 *
 * A minimal plugin, for shape (the build compiles these lines as they
 * stand; tests/plugins/ has complete ones). One rt_plugin_t per minor
 * version it can speak, so that query answers with a constant:
 *
 * BEGIN minimal plugin
 *     static const rt_plugin_vtable_t vt = {
 *         .struct_size = sizeof vt, .destroy = my_destroy, .create = my_create,
 *         .device_count = my_device_count, .device_get = my_device_get};
 *     #define MY_PLUGIN(minor) {                                               \
 *         .struct_size = sizeof(rt_plugin_t),                                  \
 *         .abi_version = RT_ABI_MAKE_VERSION(RT_ABI_VERSION_MAJOR, minor),    \
 *         .name = "mine", .description = "my accelerator", .version = "1.0", \
 *         .vtable = &vt}
 *     static const rt_plugin_t versions[] = {MY_PLUGIN(0), MY_PLUGIN(1), MY_PLUGIN(2),
 *                                            MY_PLUGIN(3)};
 *     RT_PLUGIN_EXPORT const rt_plugin_t *rt_plugin_query(uint32_t max_abi,
 *                                                         const rt_host_t *host) {
 *         (void)host;
 *         return rt_plugin_answer(versions, sizeof versions / sizeof versions[0], max_abi);
 *     }
 * END minimal plugin
 */
#ifndef RT_PLUGIN_H
#define RT_PLUGIN_H

#include "rt_base.h"
#include "rt_device.h"
#include "rt_tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

struct rt_buffer;
struct rt_host;
struct rt_plugin;
struct rt_device_vtable;
struct rt_buffer_type_desc;

//===--- the entry point ---===//

#define RT_PLUGIN_QUERY_SYMBOL "rt_plugin_query"

typedef const struct rt_plugin *(*rt_plugin_query_fn)(uint32_t max_abi_version,
                                                       const struct rt_host *host);

/* The entry point every plugin defines (declared here so that the
 * compiler checks its signature): see the life of a plugin above. */
RT_PLUGIN_EXPORT const struct rt_plugin *rt_plugin_query(uint32_t max_abi_version,
                                                         const struct rt_host *host);

/* The version a plugin built for `own` speaks with a core offering
 * max_abi: the lower of the two when their majors agree, else 0 (decline).
 * abi >= 1.2; an inline function, so a plugin built against these headers
 * carries it and works with cores older than 1.2 too. */
static inline uint32_t rt_plugin_negotiate(uint32_t max_abi, uint32_t own) {
    if (RT_ABI_VERSION_GET_MAJOR(max_abi) != RT_ABI_VERSION_GET_MAJOR(own)) return 0;
    return max_abi < own ? max_abi : own;
}

//===--- rt_host_t: what the core offers plugins ---===//

/* Handed to query and create; valid until the plugin's destroy returns. */
typedef struct rt_host {
    uint32_t struct_size;
    uint32_t abi_version; /* the core's RT_ABI_VERSION */
    rt_allocator_t allocator; /* use it for every host allocation of the plugin */

    /* Logs a line through the application's log sink. */
    void (*log)(rt_log_level_t level, const char *fmt, ...) RT_PRINTF(2, 3);
    /* Records the message of the error about to be returned, for the calling
     * thread; returns status so that `return host->set_error(...)` reads. */
    rt_status_t (*set_error)(rt_status_t status, const char *fmt, ...) RT_PRINTF(2, 3);

    /* Tensor helpers, the same functions applications get from rt.h. */
    const rt_type_traits_t *(*type_traits)(rt_type_t type); /* NULL if unknown */
    size_t (*tensor_nbytes)(const rt_tensor_t *t);
    bool (*tensor_is_contiguous)(const rt_tensor_t *t);
    size_t (*row_size)(rt_type_t type, int64_t ne0);

    /* The plugin state of a buffer (the buffer_state_size bytes the core
     * allocated for it), e.g. to reach device memory from tensor->buffer. */
    void *(*buffer_state)(const struct rt_buffer *buffer);
    /* True when the buffer's bytes are host memory the CPU can read. */
    bool (*buffer_is_host)(const struct rt_buffer *buffer);
    /* The buffer type descriptor the buffer was allocated from (the
     * plugin's own pointer), so a plugin can recognise its own buffers,
     * e.g. for device-to-device copies. */
    const struct rt_buffer_type_desc *(*buffer_type)(const struct rt_buffer *buffer);
} rt_host_t;

RT_STATIC_ASSERT(offsetof(rt_host_t, buffer_type) == 88, "rt_host_t 1.0 last slot");

/* The version a plugin built against these headers speaks with the core
 * that handed it host: what it must behave as (offer no later feature,
 * claim no later op or type). abi >= 1.2, inline. */
static inline uint32_t rt_plugin_abi(const rt_host_t *host) {
    return rt_plugin_negotiate(host->abi_version, RT_ABI_VERSION);
}

//===--- rt_plugin_t: what query returns ---===//

enum {
    /* The core may dlclose the plugin after destroy. Without it the shared
     * object stays mapped (threads, atexit handlers and driver callbacks
     * make unloading unsafe in general). */
    RT_PLUGIN_FLAG_UNLOAD_SAFE = 1u << 0
};

typedef struct rt_plugin_vtable {
    uint32_t struct_size;
    uint32_t reserved;
    /* required: releases everything create made, devices included. */
    void (*destroy)(void *plugin);
    /* required: starts the plugin. On failure returns non-OK (after
     * host->set_error) and leaves *out_plugin NULL. */
    rt_status_t (*create)(const rt_host_t *host, void **out_plugin);
    /* required: number of devices; may be 0 (say why with host->log). */
    uint32_t (*device_count)(void *plugin);
    /* required: device i's handle and table, i < device_count. */
    rt_status_t (*device_get)(void *plugin, uint32_t index, void **out_device,
                              const struct rt_device_vtable **out_vtable);
} rt_plugin_vtable_t;

RT_STATIC_ASSERT(offsetof(rt_plugin_vtable_t, destroy) == 8, "destroy is the first slot");
RT_STATIC_ASSERT(offsetof(rt_plugin_vtable_t, device_get) == 32, "rt_plugin_vtable_t 1.0 last slot");

typedef struct rt_plugin {
    uint32_t struct_size;
    uint32_t abi_version;        /* the version the plugin speaks: min(max_abi, its own) */
    const char *name;            /* short, [a-z0-9_]: "cpu", "vulkan"; names devices */
    const char *description;     /* one line for humans */
    const char *version;         /* the plugin's own release */
    uint64_t flags;              /* RT_PLUGIN_FLAG_* */
    const rt_ext_header_t *next; /* extension records, or NULL */
    const rt_plugin_vtable_t *vtable;
} rt_plugin_t;

RT_STATIC_ASSERT(offsetof(rt_plugin_t, vtable) == 48, "rt_plugin_t 1.0 last field");

/* The answer of a plugin that keeps one rt_plugin_t per minor version it
 * speaks, versions[0] (1.0) to versions[n_versions - 1] (its own): the one
 * rt_plugin_negotiate picks, or NULL. abi >= 1.2, inline. */
static inline const rt_plugin_t *rt_plugin_answer(const rt_plugin_t *versions,
                                                  uint32_t n_versions, uint32_t max_abi) {
    const uint32_t own = RT_ABI_MAKE_VERSION(RT_ABI_VERSION_MAJOR, n_versions - 1);
    const uint32_t v = n_versions > 0 ? rt_plugin_negotiate(max_abi, own) : 0;
    return v != 0 ? &versions[RT_ABI_VERSION_GET_MINOR(v)] : NULL;
}

//===--- devices ---===//

//===--- buffer types and buffers ---===//

enum {
    RT_BUFT_FLAG_HOST = 1u << 0, /* tensor->data is a host address the CPU can use */
    /* abi >= 1.1: weights kept in a layout of the device's own, repacked for
     * its kernels. A tensor in such a buffer is written and read whole
     * (set_tensor and get_tensor at offset 0 for nbytes, in the standard
     * layout: get_tensor gives back what set_tensor took) and is read by the
     * device only as a source of the nodes its supports_op accepts (src[0]
     * of MUL_MAT, typically); no view of it is ever read. An application
     * places a tensor there only when supports_tensor accepts it and every
     * use of it is such a node; the scheduler copies it through get_tensor
     * when another device needs it. */
    RT_BUFT_FLAG_WEIGHTS = 1u << 1
};

/* abi >= 1.2: bits 16 to 31 of the flags are must-understand flags
 * (rt_base.h, rule 8): a buffer type that sets one its reader does not know
 * is hidden by that reader, never used as an ordinary one. None is defined
 * yet; cores of 1.2 and later hide a buffer type that sets any. */
#define RT_BUFT_FLAGS_REQUIRED 0xffff0000u

/* Functions on one buffer. `state` is the buffer_state_size bytes the core
 * allocated for the buffer and the buffer type's alloc filled in. Offsets
 * and sizes are in bytes within the tensor's data. */
typedef struct rt_buffer_vtable {
    uint32_t struct_size;
    uint32_t reserved;
    /* required: releases the memory behind state (not state itself). */
    void (*destroy)(void *state);
    /* required: the address of the buffer's first byte in its address space. */
    void *(*base)(void *state);
    /* (optional) prepares a tensor placed in the buffer (sets extra, ...);
     * defaults to nothing. */
    rt_status_t (*init_tensor)(void *state, rt_tensor_t *t);
    /* required: host -> tensor bytes [offset, offset + size). */
    rt_status_t (*set_tensor)(void *state, rt_tensor_t *t, const void *data, size_t offset,
                              size_t size);
    /* required: tensor bytes [offset, offset + size) -> host. */
    rt_status_t (*get_tensor)(void *state, const rt_tensor_t *t, void *data, size_t offset,
                              size_t size);
    /* required: fills tensor bytes [offset, offset + size) with value. */
    rt_status_t (*memset_tensor)(void *state, rt_tensor_t *t, uint8_t value, size_t offset,
                                 size_t size);
    /* (optional) copies src (in any buffer) into dst (in this one) when the
     * plugin can do it directly; returns RT_ERR_UNSUPPORTED otherwise and
     * the core goes through host memory. Defaults to the fallback. */
    rt_status_t (*cpy_tensor)(void *dst_state, const rt_tensor_t *src, rt_tensor_t *dst);
    /* required: fills the whole buffer with value. */
    rt_status_t (*clear)(void *state, uint8_t value);
} rt_buffer_vtable_t;

RT_STATIC_ASSERT(offsetof(rt_buffer_vtable_t, destroy) == 8, "destroy is the first slot");
RT_STATIC_ASSERT(offsetof(rt_buffer_vtable_t, clear) == 64, "rt_buffer_vtable_t 1.0 last slot");

/* A buffer type: where and how a device allocates. Lives as long as its
 * device. */
typedef struct rt_buffer_type_desc {
    uint32_t struct_size;
    uint32_t flags;              /* RT_BUFT_FLAG_* */
    const char *name;            /* "CPU", "Vulkan0", "Vulkan0_Host" */
    size_t alignment;            /* of every tensor's data, a power of two */
    size_t max_size;             /* largest single buffer in bytes; 0: no limit */
    size_t buffer_state_size;    /* bytes of state per buffer, allocated by the core */
    void *ctx;                   /* the plugin's, passed to alloc and alloc_size */
    /* required: allocates size bytes of memory and fills state. Returns
     * RT_ERR_OUT_OF_MEMORY (with a message naming the device and the size)
     * when the memory is not there. */
    rt_status_t (*alloc)(void *ctx, size_t size, void *state);
    /* (optional) bytes a tensor takes in a buffer of this type; defaults to
     * its nbytes. */
    size_t (*alloc_size)(void *ctx, const rt_tensor_t *t);
    const rt_buffer_vtable_t *buffer_vtable; /* required */
    /* abi >= 1.1 */
    /* (optional) whether tensor t (its type and shape; not yet allocated)
     * may be placed in a buffer of this type; defaults to yes. A
     * RT_BUFT_FLAG_WEIGHTS type says here which weights it can repack. */
    bool (*supports_tensor)(void *ctx, const rt_tensor_t *t);
} rt_buffer_type_desc_t;

RT_STATIC_ASSERT(offsetof(rt_buffer_type_desc_t, buffer_vtable) == 64,
                 "rt_buffer_type_desc_t 1.0 last field");
RT_STATIC_ASSERT(offsetof(rt_buffer_type_desc_t, supports_tensor) == 72,
                 "rt_buffer_type_desc_t 1.1 last field");

//===--- the device table ---===//

typedef struct rt_device_vtable {
    uint32_t struct_size;
    uint32_t reserved;
    /* (optional) releases the device; defaults to nothing (the plugin's
     * destroy releases its devices). */
    void (*destroy)(void *device);
    /* required: see rt_device_props_t. */
    rt_status_t (*get_props)(void *device, rt_device_props_t *props);
    /* required: the device's buffer types, at least one; index 0 is the
     * default, the one compute buffers use. */
    uint32_t (*buffer_type_count)(void *device);
    const rt_buffer_type_desc_t *(*buffer_type)(void *device, uint32_t index);
    /* required: whether graph_compute can run this node (op, types, shapes,
     * strides of it and its sources). Must be true for the view family. */
    bool (*supports_op)(void *device, const rt_tensor_t *node);
    /* (optional) whether the device can compute on tensors in a buffer of
     * this type; defaults to "only its own buffer types". */
    bool (*supports_buft)(void *device, const rt_buffer_type_desc_t *buft);
    /* required: an execution queue (a stream) of the device. */
    rt_status_t (*queue_create)(void *device, const rt_queue_options_t *options,
                                void **out_queue);
    /* required */
    void (*queue_destroy)(void *queue);
    /* required: runs nodes in order on the queue. May return before the work
     * is done when the device is asynchronous; synchronize waits. Every
     * node's data is allocated and every source's data is ready. The graph
     * allocator lets ADD, SUB, MUL, DIV, SCALE, GELU, SILU, SWIGLU, NORM,
     * RMS_NORM, SOFT_MAX, DIAG_MASK_INF and ROPE write over a source of the
     * same type and layout: their kernels must be correct with dst's data
     * equal to that source's. The plugin reads the node headers (op, src,
     * ne, nb, op_params, data) before graph_compute returns and never
     * afterwards; only the bytes they point at may be used later. */
    rt_status_t (*graph_compute)(void *queue, rt_tensor_t *const *nodes, int32_t n_nodes);
    /* required: waits for everything submitted to the queue. */
    rt_status_t (*synchronize)(void *queue);
    /* extension records (rt_device_ext_*), or NULL */
    const rt_ext_header_t *next;
} rt_device_vtable_t;

RT_STATIC_ASSERT(offsetof(rt_device_vtable_t, destroy) == 8, "destroy is the first slot");
RT_STATIC_ASSERT(offsetof(rt_device_vtable_t, next) == 88, "rt_device_vtable_t 1.0 last field");

//===--- device extensions ---===//

/* Extension record types. Append-only. */
enum {
    RT_EXT_DEVICE_ASYNC = 1,   /* rt_device_ext_async_t on rt_device_vtable_t.next */
    RT_EXT_DEVICE_HOST_PTR = 2, /* rt_device_ext_host_ptr_t on rt_device_vtable_t.next */
    RT_EXT_QUEUE_PLACEMENT = 3, /* rt_queue_ext_placement_t on rt_queue_options_t.next */
    RT_EXT_DEVICE_SPEED = 4     /* abi >= 1.2: rt_device_ext_speed_t on rt_device_vtable_t.next */
};

/* Asynchronous transfers and events (RT_DEVICE_CAP_ASYNC / _EVENTS). */
typedef struct rt_device_ext_async {
    rt_ext_header_t header; /* type = RT_EXT_DEVICE_ASYNC */
    rt_status_t (*set_tensor_async)(void *queue, rt_tensor_t *t, const void *data, size_t offset,
                                    size_t size);
    rt_status_t (*get_tensor_async)(void *queue, const rt_tensor_t *t, void *data, size_t offset,
                                    size_t size);
    /* (optional) src may live on another device; RT_ERR_UNSUPPORTED when the
     * pair cannot be copied directly. */
    rt_status_t (*cpy_tensor_async)(void *queue_src, void *queue_dst, const rt_tensor_t *src,
                                    rt_tensor_t *dst);
    rt_status_t (*event_create)(void *device, void **out_event);
    void (*event_destroy)(void *event);
    rt_status_t (*event_record)(void *event, void *queue);      /* mark the queue's position */
    rt_status_t (*event_wait)(void *queue, void *event);        /* queue waits for the event */
    rt_status_t (*event_synchronize)(void *event);              /* host waits for the event */
} rt_device_ext_async_t;

/* Buffers that wrap host memory the application owns, without a copy
 * (RT_DEVICE_CAP_BUFFER_FROM_HOST_PTR): how mmapped weights are used in
 * place. */
typedef struct rt_device_ext_host_ptr {
    rt_ext_header_t header; /* type = RT_EXT_DEVICE_HOST_PTR */
    /* The buffer type the wrapped buffers belong to (its state size and
     * buffer vtable are used). */
    const rt_buffer_type_desc_t *buffer_type;
    /* Fills state for a buffer over [ptr, ptr + size). The memory stays the
     * caller's; the buffer's destroy must not free it. */
    rt_status_t (*buffer_from_host_ptr)(void *device, void *ptr, size_t size, void *state);
} rt_device_ext_host_ptr_t;

/* The device's own speed figures (abi >= 1.2), which rt_device_speed (in
 * rt_sched.h) then takes instead of measuring: a plugin that knows its
 * hardware (a datasheet, its own calibration) saves the measurement.
 * RT_ERR_UNSUPPORTED when it cannot say for this device; the core then
 * measures. The figures mean what rt_device_speed_t's fields mean. */
typedef struct rt_device_ext_speed {
    rt_ext_header_t header; /* type = RT_EXT_DEVICE_SPEED */
    rt_status_t (*get_speed)(void *device, double *bytes_per_s, double *layer_s,
                             double *copy_in_s);
} rt_device_ext_speed_t;

//===--- queue extensions ---===//

/* Where a queue's host-side work belongs, from the machine's topology. The
 * core puts this record first on the rt_queue_options_t.next chain that
 * queue_create receives, when it knows the NUMA node nearest the device
 * (from its pci_bus_id); applications never build it. A plugin that
 * allocates host staging memory or runs helper threads for the queue binds
 * them there (mbind, numa_alloc_onnode, hwloc_set_area_membind). Valid
 * during queue_create only: copy what you keep. */
typedef struct rt_queue_ext_placement {
    rt_ext_header_t header;      /* type = RT_EXT_QUEUE_PLACEMENT */
    int32_t numa_node;           /* OS number of the nearest NUMA node (as mbind counts) */
    int32_t n_node_cpu_ids;      /* entries of node_cpu_ids */
    const int32_t *node_cpu_ids; /* OS processor ids of that node this process may use */
} rt_queue_ext_placement_t;

RT_STATIC_ASSERT(sizeof(rt_queue_ext_placement_t) == 32, "rt_queue_ext_placement_t 1.0 size");

#ifdef __cplusplus
}
#endif

#endif /* RT_PLUGIN_H */
