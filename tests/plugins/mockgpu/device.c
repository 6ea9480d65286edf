/* SPDX-License-Identifier: MIT */
/* device.c: mockgpu's devices. Properties of a discrete GPU, one private
 * buffer type, queues that hand nodes to the CPU plugin, and synchronous
 * stand-ins for async transfers and events so the scheduler's async paths
 * run in tests. */
#define MOCKGPU_INTERNAL
#include "mockgpu.h"

#include <stdio.h>
#include <string.h>

typedef struct mockgpu_queue {
    mockgpu_device_t *device;
    void *cpu_queue;
} mockgpu_queue_t;

static rt_status_t get_props(void *device, rt_device_props_t *props) {
    mockgpu_device_t *d = device;
    props->kind = RT_DEVICE_KIND_GPU;
    snprintf(props->name, sizeof props->name, "Mock GPU %u", d->index);
    snprintf(props->description, sizeof props->description,
             "private memory, arithmetic delegated to the CPU plugin");
    props->memory_total = d->memory;
    const uint64_t used = d->allocated;
    props->memory_free = used < d->memory ? d->memory - used : 0;
    props->caps = RT_DEVICE_CAP_ASYNC | RT_DEVICE_CAP_EVENTS;
    snprintf(props->pci_bus_id, sizeof props->pci_bus_id, "%s", d->pci);
    props->has_uuid = 1;
    memset(props->uuid, 0, sizeof props->uuid);
    memcpy(props->uuid, "mockgpu", 7);
    props->uuid[15] = (uint8_t)d->index;
    return RT_OK;
}

static uint32_t buffer_type_count(void *device) { (void)device; return 1; }

static const rt_buffer_type_desc_t *buffer_type(void *device, uint32_t index) {
    mockgpu_device_t *d = device;
    if (index != 0) return NULL;
    if (d->buft.struct_size == 0) {
        static char names[MOCKGPU_MAX_DEVICES][16];
        snprintf(names[d->index], sizeof names[0], "MockGPU%u", d->index);
        d->buft = (rt_buffer_type_desc_t){
            .struct_size = sizeof d->buft,
            .name = names[d->index],
            .alignment = 256,
            .buffer_state_size = mockgpu_buffer_state_size(),
            .ctx = d,
            .alloc = mockgpu_buffer_alloc,
            .buffer_vtable = &mockgpu_buffer_vtable,
        };
    }
    return &d->buft;
}

static bool supports_op(void *device, const rt_tensor_t *node) {
    (void)device;
    if (node->op < 0 || node->op >= RT_OP_COUNT || !mockgpu.op_allowed[node->op]) return false;
    return mockgpu.cpu_vt->supports_op(mockgpu.cpu_device, node);
}

static bool supports_buft(void *device, const rt_buffer_type_desc_t *buft) {
    return buft == &((mockgpu_device_t *)device)->buft;
}

static rt_status_t queue_create(void *device, const rt_queue_options_t *options, void **out_queue) {
    *out_queue = NULL;
    mockgpu_queue_t *q = mockgpu_host->allocator.realloc(mockgpu_host->allocator.user_data, NULL,
                                                         0, sizeof *q);
    if (q == NULL) return mockgpu_host->set_error(RT_ERR_OUT_OF_MEMORY, "mockgpu: queue");
    q->device = device;
    rt_status_t st = mockgpu.cpu_vt->queue_create(mockgpu.cpu_device, options, &q->cpu_queue);
    if (st != RT_OK) {
        mockgpu_host->allocator.realloc(mockgpu_host->allocator.user_data, q, sizeof *q, 0);
        return st;
    }
    *out_queue = q;
    return RT_OK;
}

static void queue_destroy(void *queue) {
    mockgpu_queue_t *q = queue;
    if (q == NULL) return;
    mockgpu.cpu_vt->queue_destroy(q->cpu_queue);
    mockgpu_host->allocator.realloc(mockgpu_host->allocator.user_data, q, sizeof *q, 0);
}

static rt_status_t graph_compute(void *queue, rt_tensor_t *const *nodes, int32_t n_nodes) {
    mockgpu_queue_t *q = queue;
    q->device->counters.n_graphs++;
    q->device->counters.n_nodes += (uint64_t)n_nodes;
    return mockgpu.cpu_vt->graph_compute(q->cpu_queue, nodes, n_nodes);
}

static rt_status_t synchronize(void *queue) {
    mockgpu_queue_t *q = queue;
    return mockgpu.cpu_vt->synchronize(q->cpu_queue);
}

//===--- async transfers and events: synchronous stand-ins ---===//

static rt_status_t set_tensor_async(void *queue, rt_tensor_t *t, const void *data, size_t offset,
                                    size_t size) {
    (void)queue;
    return mockgpu_buffer_vtable.set_tensor(mockgpu_host->buffer_state(t->buffer), t, data, offset,
                                            size);
}

static rt_status_t get_tensor_async(void *queue, const rt_tensor_t *t, void *data, size_t offset,
                                    size_t size) {
    (void)queue;
    return mockgpu_buffer_vtable.get_tensor(mockgpu_host->buffer_state(t->buffer), t, data, offset,
                                            size);
}

static rt_status_t cpy_tensor_async(void *queue_src, void *queue_dst, const rt_tensor_t *src,
                                    rt_tensor_t *dst) {
    (void)queue_src;
    (void)queue_dst;
    return mockgpu_buffer_vtable.cpy_tensor(mockgpu_host->buffer_state(dst->buffer), src, dst);
}

static int event_token;

static rt_status_t event_create(void *device, void **out_event) {
    (void)device;
    *out_event = &event_token;
    return RT_OK;
}

static void event_destroy(void *event) { (void)event; }
static rt_status_t event_record(void *event, void *queue) { (void)event; (void)queue; return RT_OK; }
static rt_status_t event_wait(void *queue, void *event) { (void)event; (void)queue; return RT_OK; }
static rt_status_t event_synchronize(void *event) { (void)event; return RT_OK; }

static const rt_device_ext_async_t async_ext = {
    {sizeof async_ext, RT_EXT_DEVICE_ASYNC, NULL},
    set_tensor_async, get_tensor_async, cpy_tensor_async,
    event_create, event_destroy, event_record, event_wait, event_synchronize,
};

const rt_device_vtable_t mockgpu_device_vtable = {
    .struct_size = sizeof mockgpu_device_vtable,
    .get_props = get_props,
    .buffer_type_count = buffer_type_count,
    .buffer_type = buffer_type,
    .supports_op = supports_op,
    .supports_buft = supports_buft,
    .queue_create = queue_create,
    .queue_destroy = queue_destroy,
    .graph_compute = graph_compute,
    .synchronize = synchronize,
    .next = &async_ext.header,
};

bool mockgpu_get_counters(uint32_t device, mockgpu_counters_t *out) {
    if (device >= mockgpu.n_devices) return false;
    *out = mockgpu.devices[device].counters;
    out->allocated = mockgpu.devices[device].allocated;
    return true;
}

void mockgpu_reset_counters(void) {
    for (uint32_t i = 0; i < mockgpu.n_devices; i++)
        memset(&mockgpu.devices[i].counters, 0, sizeof mockgpu.devices[i].counters);
}
