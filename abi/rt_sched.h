/* SPDX-License-Identifier: MIT */
/* rt_sched.h: the scheduler and layer placement. The scheduler runs one
 * graph across several devices: it assigns every node a device, cuts the
 * graph into splits where the device changes, copies each split's inputs to
 * its device, and allocates the intermediates of every device with one
 * gallocr buffer each (docs/memory.md §4).
 * Placement decides beforehand which device holds each layer's weights and
 * KV cache, so that the scheduler's first pass finds them there.
 *
 *     rt_device_t *devs[] = { gpu, cpu };            // priority order, CPU last
 *     rt_sched_options_t o = { .struct_size = sizeof o, .devices = devs,
 *                              .n_devices = 2, .graph_size = 4096 };
 *     rt_sched_t *s;
 *     rt_sched_create(&o, &s);
 *     rt_sched_reserve(s, worst_case_graph);         // sizes compute buffers once
 *     for (;;) {
 *         rt_graph_t *g = build_graph(...);           // in a no_alloc context
 *         rt_sched_alloc_graph(s, g);                 // assign, split, place
 *         rt_tensor_set(input, ...);                  // inputs start on the CPU
 *         rt_sched_graph_compute(s, g);
 *         rt_sched_reset(s);                          // before the next graph
 *     }
 *     rt_sched_destroy(s);
 *
 * Assignment, in five passes (docs/memory.md §4): (1) a node that reads a weight (a
 * leaf in a buffer, or a view of one) runs where the weight lives, and a
 * node whose own data is already in a buffer runs on that buffer's device;
 * user inputs (RT_TENSOR_FLAG_INPUT) start on the last device (the CPU);
 * (2) GPU assignments spread to unassigned neighbours, down then up, then
 * the rest take a neighbour's device; (3) a node moves to a higher-priority
 * device that shares its compute buffer type and reads all its sources
 * where they are, and a node still unassigned goes to the device that
 * supports it and can read most of its sources; (4) remaining sources get
 * their reader's device and views follow their view_src; (5) the graph is
 * cut where the device changes and each split's sources from other devices
 * are copied in. A node whose device does not support its op goes to the
 * next device that does. rt_sched_set_tensor_device pins a node before
 * alloc_graph.
 *
 * The copies are tensors in the scheduler's own context. While a graph is
 * allocated, its nodes read those copies: alloc_graph points the node's
 * src[] at them, and rt_sched_reset points it back. So keep the graph alive
 * until rt_sched_reset (or rt_sched_destroy, which does not touch it). A
 * graph may be allocated again after a reset (and is split the same way),
 * unless a reserve in between grew the compute buffers: its tensors would
 * still point into the old ones, so build it anew then. An allocated graph
 * may also be computed again and again, its inputs rewritten in place
 * (rt_tensor_set), with no reset: nothing is assigned, planned or
 * allocated then (a decode graph reused step after step; see SET_ROWS).
 *
 * Pipeline parallelism (n_copies > 1): every split input, and every INPUT
 * leaf the scheduler places, gets n_copies copies used round-robin by
 * successive graphs, so graph k+1 can be written and started while graph k
 * still reads its inputs; devices that announce RT_DEVICE_CAP_EVENTS order
 * the copies with events, the others synchronize. Build and allocate one
 * graph per run, as in the loop above.
 *
 * Thread-safety: a scheduler is used by one thread at a time.
 */
#ifndef RT_SCHED_H
#define RT_SCHED_H

#include "rt.h"

#ifdef __cplusplus
extern "C" {
#endif

//===--- rt_sched_t ---===//

#define RT_SCHED_MAX_DEVICES 16 /* devices of one scheduler */
#define RT_SCHED_MAX_COPIES 4   /* pipeline copies */

typedef struct rt_sched rt_sched_t;

typedef struct rt_sched_options {
    uint32_t struct_size;
    rt_device_t *const *devices;      /* priority order; the last, where inputs start,
                                         should be the CPU */
    int32_t n_devices;                /* 1..RT_SCHED_MAX_DEVICES */
    rt_buffer_type_t *const *bufts;   /* compute buffer type per device; NULL: each one's type 0 */
    int32_t graph_size;               /* most nodes (and most leafs) of any graph; 0: 2048 */
    int32_t n_copies;                 /* pipeline copies of split inputs, up to
                                         RT_SCHED_MAX_COPIES; 0 or 1: none */
    int32_t n_threads;                /* for CPU-like devices' queues; 0: default */
} rt_sched_options_t;

/* Creates a scheduler with one queue per device and one gallocr buffer per
 * device (allocated at the first reserve). The devices are borrowed and
 * must outlive the scheduler. RT_ERR_INVALID_ARGUMENT for a bad count, a
 * NULL device or a buffer type the device cannot use. */
RT_API rt_status_t rt_sched_create(const rt_sched_options_t *options, rt_sched_t **out_sched);
/* Frees the queues, the compute buffers and the copies. Accepts NULL. */
RT_API void rt_sched_destroy(rt_sched_t *sched);

/* Assigns and splits g, then sizes every device's compute buffer for it,
 * then forgets the assignment (as rt_sched_reset). A device that cannot
 * allocate returns RT_ERR_OUT_OF_MEMORY with a message naming the device
 * and the bytes needed (rt_sched_last_oom tells which). RT_ERR_UNSUPPORTED
 * when no device can run a node, or a node's data lives in a buffer no
 * device that runs it can use; RT_ERR_MISUSE while another graph is
 * allocated. */
RT_API rt_status_t rt_sched_reserve(rt_sched_t *sched, rt_graph_t *g);
/* Assigns, splits and places g in the reserved buffers (reserving again
 * when g does not fit the plan or the assignment changed). Calling it again
 * for the same graph starts over; for another graph, call rt_sched_reset
 * first (RT_ERR_MISUSE otherwise). */
RT_API rt_status_t rt_sched_alloc_graph(rt_sched_t *sched, rt_graph_t *g);
/* alloc_graph if g is not allocated yet, then runs every split and waits. */
RT_API rt_status_t rt_sched_graph_compute(rt_sched_t *sched, rt_graph_t *g);
/* Same without the final wait; with n_copies > 1 consecutive runs overlap. */
RT_API rt_status_t rt_sched_graph_compute_async(rt_sched_t *sched, rt_graph_t *g);
/* Waits for every device's queue. */
RT_API rt_status_t rt_sched_synchronize(rt_sched_t *sched);
/* Forgets the assignment of the last graph and points its nodes' sources
 * back at the original tensors (its tensors keep their data until the next
 * alloc_graph). Call before building the next graph, while the last one is
 * still alive. It does not wait for the graph: devices read a graph's
 * headers when it is submitted, only its bytes afterwards. */
RT_API void rt_sched_reset(rt_sched_t *sched);

/* Pins t (a node of the next graph) to dev, one of the scheduler's devices.
 * Forgotten at reset. */
RT_API void rt_sched_set_tensor_device(rt_sched_t *sched, rt_tensor_t *t, rt_device_t *dev);
/* The device t was assigned (or pinned to), or NULL. */
RT_API rt_device_t *rt_sched_get_tensor_device(const rt_sched_t *sched, const rt_tensor_t *t);

/* Splits of the last graph split (by reserve or alloc_graph). */
RT_API int32_t rt_sched_n_splits(const rt_sched_t *sched);
/* Tensors copied between devices for each run of the last graph. */
RT_API int32_t rt_sched_n_copies(const rt_sched_t *sched);
/* Bytes those copies move per run. */
RT_API size_t rt_sched_copy_bytes(const rt_sched_t *sched);
RT_API int32_t rt_sched_n_devices(const rt_sched_t *sched);
RT_API rt_device_t *rt_sched_device(const rt_sched_t *sched, int32_t i);
/* Bytes of device i's compute buffer (0 before the first reserve). */
RT_API size_t rt_sched_buffer_size(const rt_sched_t *sched, int32_t i);
/* After RT_ERR_OUT_OF_MEMORY: the device that failed and the bytes its
 * compute buffer needed; NULL (and 0) when the last reserve succeeded. */
RT_API rt_device_t *rt_sched_last_oom(const rt_sched_t *sched, size_t *out_bytes);
#if RT_TARGETS(1, 2)
/* Timing of each device's share (abi >= 1.2), for comparing a plan's
 * predictions with what happened. on: from now on every split waits for
 * its device after its copies and after its nodes and adds both times,
 * from a monotonic clock, to its device's counts, which start at zero
 * (this serialises the devices, so only ask when measuring); off: splits
 * run as usual and the counts stay as they are. */
RT_API void rt_sched_set_timing(rt_sched_t *sched, bool on);
/* Seconds device i spent on its splits' nodes and on copying their inputs
 * in, and how many splits ran there, since timing was turned on (abi >= 1.2);
 * any out pointer may be NULL; RT_ERR_MISUSE for a bad index. */
RT_API rt_status_t rt_sched_device_time(const rt_sched_t *sched, int32_t i, double *out_compute_s,
                                        double *out_copy_s, int64_t *out_splits);
#endif
/* One line per split of the last graph split: device, node range, nodes
 * computed, inputs copied (the copy's name, the device it comes from, its
 * bytes). Reads only the scheduler's own records. */
RT_API void rt_sched_write_splits(const rt_sched_t *sched, rt_write_fn write, void *user_data);

//===--- rt_placement_t: layers to devices ---===//

/* Which device holds each layer of a model, before any weight is loaded
 * (docs/memory.md §5; llama.cpp's dev_layer). Layers are numbered
 * groups of bytes, weights plus KV cache, so placement knows nothing about
 * the model. The input layer (token embeddings) comes before layer 0, the
 * output layer (final norm, output projection) after the last.
 *
 * Devices are the scheduler's: GPUs in priority order, then the CPU, which
 * takes whatever the GPUs do not. Layers on GPUs are always the last ones,
 * so activations cross from the CPU to the GPUs once. The rules, in both
 * modes: the input stays on the CPU unless every layer is on a GPU; the
 * output goes to the GPU of the last layer if any layer is on a GPU.
 *
 *   RT_PLACEMENT_N_GPU_LAYERS: the last n_gpu_layers layers on the first GPU
 *     (memory is not checked; the caller chose). n_gpu_layers > n_layers
 *     also moves the input there; a negative value means all of it.
 *   RT_PLACEMENT_AUTO: as many of the last layers as fit, each GPU taking a
 *     run of consecutive layers in proportion to its budget, the bytes free
 *     minus the reserve the caller keeps for compute buffers.
 *   RT_PLACEMENT_FASTEST (abi >= 1.2): the plan whose predicted decode time
 *     per token is least, within the same budgets, from each device's
 *     figures (rt_device_speed_t): a layer costs its bytes over the
 *     device's bandwidth plus a fixed time, and each crossing of the
 *     activations into a device that device's copy time (the logits' way
 *     back to the CPU the same again). A device that would slow the job
 *     down gets nothing, whatever its kind. The CPU still takes a prefix and each GPU
 *     one run, in the order given. With n_prompt or n_generate given
 *     (abi >= 1.2) the plan minimises the whole job instead:
 *     n_generate decode steps plus ceil(n_prompt / n_ubatch) prompt steps,
 *     a prompt step's layer costing the more of its bytes over the
 *     bandwidth and its bytes x n_ubatch over prompt_bytes_per_s. With
 *     devices given, a crossing between two devices is priced from the
 *     machine's topology (abi >= 1.2): the PCIe link speeds on the way
 *     (hwloc's linkspeed), a PCIe switch both sit below, and the NUMA
 *     distance between their nodes scale the measured copy times, so a
 *     split over devices on one socket costs less than one across sockets.
 *
 *     uint64_t sizes[32] = ...;                     // weights + KV per layer
 *     rt_placement_params_t pp = { .struct_size = sizeof pp, .mode = RT_PLACEMENT_AUTO,
 *         .n_layers = 32, .layer_bytes = sizes, .input_bytes = emb, .output_bytes = out,
 *         .n_devices = 3, .devices = devs, .reserve = reserves };
 *     rt_placement_t *pl;
 *     rt_placement_create(&pp, &pl);
 *     int32_t d = rt_placement_layer_device(pl, il);   // index into devs
 *     ...   // a reserve failed: rt_sched_last_oom(s, &bytes) named devs[d]
 *     rt_placement_replan(pl, d, bytes);              // fewer layers there
 */
typedef struct rt_placement rt_placement_t;

typedef int32_t rt_placement_mode_t;
enum {
    RT_PLACEMENT_N_GPU_LAYERS = 0, /* the last n_gpu_layers layers on the first GPU */
    RT_PLACEMENT_AUTO = 1,         /* split by free memory across all GPUs */
#if RT_TARGETS(1, 2)
    RT_PLACEMENT_FASTEST = 2       /* abi >= 1.2: least predicted time within memory */
#endif
};

#if RT_TARGETS(1, 2)
/* What RT_PLACEMENT_FASTEST knows of a device (abi >= 1.2): measured by a
 * calibration, reported by its plugin, or given by the caller. */
typedef struct rt_device_speed {
    double bytes_per_s;   /* weight and KV bytes a decode step streams a second; 0: none */
    double layer_s;       /* fixed seconds per layer (launches, barriers) */
    double copy_in_s;     /* seconds for a token's activations to cross into the device */
} rt_device_speed_t;

/* The speed figures of dev (abi >= 1.2): read from the cache under
 * $XDG_CACHE_HOME/rt (else ~/.cache/rt), one file per device, driver and
 * plugin version, or measured by short calibration kernels (well under a
 * second) and cached then; refresh measures again whatever the cache
 * holds. A cache that cannot be written is only logged. */
RT_API rt_status_t rt_device_speed(rt_device_t *dev, bool refresh, rt_device_speed_t *out);
/* The prompt-phase figure of dev (abi >= 1.2): weight bytes times tokens a
 * second through a matrix product of RT_DEVICE_PROMPT_UBATCH columns
 * (what a prompt step does with a layer's weights), cached and refreshed
 * with rt_device_speed's figures; 0 (RT_OK) when its plugin reports its
 * own figures and no measurement was asked for. */
#define RT_DEVICE_PROMPT_UBATCH 64
RT_API rt_status_t rt_device_prompt_speed(rt_device_t *dev, bool refresh, double *out_bytes_per_s);

#endif

typedef struct rt_placement_params {
    uint32_t struct_size;
    rt_placement_mode_t mode;
    int32_t n_gpu_layers;           /* N_GPU_LAYERS: layers on the first GPU; < 0: all */
    int32_t n_layers;               /* >= 0 */
    const uint64_t *layer_bytes;    /* n_layers sizes: weights + KV cache, bytes */
    uint64_t input_bytes;           /* the input layer (embeddings), bytes */
    uint64_t output_bytes;          /* the output layer, bytes */
    int32_t n_devices;              /* GPUs then the CPU; 1..RT_SCHED_MAX_DEVICES */
    rt_device_t *const *devices;    /* n_devices, or NULL when memory_free is given */
    const uint64_t *memory_free;    /* n_devices byte counts; NULL: read from the devices */
    const uint64_t *reserve;        /* n_devices byte counts to keep free; NULL: none */
#if RT_TARGETS(1, 2)
    const rt_device_speed_t *speed; /* abi >= 1.2: n_devices figures, FASTEST needs them */
    const double *prompt_bytes_per_s; /* abi >= 1.2: n_devices prompt figures
                                         (rt_device_prompt_speed); NULL or 0: a prompt
                                         step costs what streaming the weights does */
    int32_t n_ubatch;               /* abi >= 1.2: tokens of a prompt step; 0: 512 */
    int32_t n_prompt;               /* abi >= 1.2: the job FASTEST plans for: prompt tokens */
    int32_t n_generate;             /* abi >= 1.2: and tokens generated; both 0: decode only */
#endif
} rt_placement_params_t;

/* Plans the placement (params are copied). RT_ERR_INVALID_ARGUMENT for
 * counts out of range or missing arrays. */
RT_API rt_status_t rt_placement_create(const rt_placement_params_t *params,
                                       rt_placement_t **out_placement);
RT_API void rt_placement_destroy(rt_placement_t *placement);
/* Index (into params.devices) of the device of a layer; -1 when out of range. */
RT_API int32_t rt_placement_layer_device(const rt_placement_t *placement, int32_t layer);
RT_API int32_t rt_placement_input_device(const rt_placement_t *placement);
RT_API int32_t rt_placement_output_device(const rt_placement_t *placement);
/* Layers on device i. */
RT_API int32_t rt_placement_device_layers(const rt_placement_t *placement, int32_t i);
/* Bytes planned on device i: its layers, plus input and output if there. */
RT_API uint64_t rt_placement_device_bytes(const rt_placement_t *placement, int32_t i);
/* Device i (a GPU) must keep `bytes` more free than planned, typically the
 * compute buffer rt_sched_last_oom reported: plans again with less there.
 * AUTO: the device's reserve grows by `bytes` and the split is redone, so
 * layers may move to other GPUs or the CPU. N_GPU_LAYERS: the input, then
 * the lowest-numbered layers on the device move to the CPU until they add
 * up to `bytes` (the output follows when no layer is left).
 * RT_ERR_OUT_OF_MEMORY when device i holds nothing to move;
 * RT_ERR_INVALID_ARGUMENT for the CPU or a bad index. */
RT_API rt_status_t rt_placement_replan(rt_placement_t *placement, int32_t i, uint64_t bytes);
#if RT_TARGETS(1, 2)
/* Predicted decode seconds per token (FASTEST; 0 in the other modes) of
 * device i's share: its layers and the copy into it (the last device's
 * also the logits' copy back to the CPU); i = -1: the whole plan. abi >= 1.2. */
RT_API double rt_placement_predicted_s(const rt_placement_t *placement, int32_t i);
/* The same for one prompt step of n_ubatch tokens (abi >= 1.2). */
RT_API double rt_placement_predicted_prompt_s(const rt_placement_t *placement, int32_t i);
#endif
/* One line per device: its layers (as ranges), input/output, bytes; in
 * FASTEST mode also the predicted times of its share, a line per crossing
 * of the activations between devices (and the logits' way back) with its
 * predicted time, and lines with the whole plan's and the job it was
 * chosen for. */
RT_API void rt_placement_write_text(const rt_placement_t *placement, rt_write_fn write,
                                    void *user_data);

#ifdef __cplusplus
}
#endif

#endif /* RT_SCHED_H */
