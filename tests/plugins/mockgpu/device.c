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
    /* The knobs are part of the description, so cached speed figures of a
     * differently configured mock do not apply (runtime/cost_cache.c). */
    snprintf(props->description, sizeof props->description,
             "private memory, arithmetic delegated to the CPU plugin, emulating %g GB/s, "
             "%g us copies", d->gbps, d->copy_us);
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
        snprintf(d->buft_name, sizeof d->buft_name, "MockGPU%u", d->index);
        d->buft = (rt_buffer_type_desc_t){
            .struct_size = sizeof d->buft,
            .name = d->buft_name,
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
    const mockgpu_t *m = ((mockgpu_device_t *)device)->owner;
    if (node->op < 0 || node->op >= RT_OP_COUNT || !m->op_allowed[node->op]) return false;
    return m->cpu_vt->supports_op(m->cpu_device, node);
}

static bool supports_buft(void *device, const rt_buffer_type_desc_t *buft) {
    return buft == &((mockgpu_device_t *)device)->buft;
}

static rt_status_t queue_create(void *device, const rt_queue_options_t *options, void **out_queue) {
    *out_queue = NULL;
    const mockgpu_t *m = ((mockgpu_device_t *)device)->owner;
    mockgpu_queue_t *q = m->host->allocator.realloc(m->host->allocator.user_data, NULL, 0, sizeof *q);
    if (q == NULL) return m->host->set_error(RT_ERR_OUT_OF_MEMORY, "mockgpu: queue");
    q->device = device;
    rt_status_t st = m->cpu_vt->queue_create(m->cpu_device, options, &q->cpu_queue);
    if (st != RT_OK) {
        m->host->allocator.realloc(m->host->allocator.user_data, q, sizeof *q, 0);
        return st;
    }
    *out_queue = q;
    return RT_OK;
}

static void queue_destroy(void *queue) {
    mockgpu_queue_t *q = queue;
    if (q == NULL) return;
    const mockgpu_t *m = q->device->owner;
    m->cpu_vt->queue_destroy(q->cpu_queue);
    m->host->allocator.realloc(m->host->allocator.user_data, q, sizeof *q, 0);
}

static rt_status_t graph_compute(void *queue, rt_tensor_t *const *nodes, int32_t n_nodes) {
    mockgpu_queue_t *q = queue;
    q->device->counters.n_graphs++;
    q->device->counters.n_nodes += (uint64_t)n_nodes;
    const double t0 = mockgpu_now();
    const rt_status_t st = q->device->owner->cpu_vt->graph_compute(q->cpu_queue, nodes, n_nodes);
    if (st == RT_OK) mockgpu_pace_graph(q->device, nodes, n_nodes, t0);
    return st;
}

static rt_status_t synchronize(void *queue) {
    mockgpu_queue_t *q = queue;
    return q->device->owner->cpu_vt->synchronize(q->cpu_queue);
}

//===--- async transfers and events: synchronous stand-ins ---===//

static const rt_host_t *queue_host(void *queue) {
    return ((mockgpu_queue_t *)queue)->device->owner->host;
}

static rt_status_t set_tensor_async(void *queue, rt_tensor_t *t, const void *data, size_t offset,
                                    size_t size) {
    return mockgpu_buffer_vtable.set_tensor(queue_host(queue)->buffer_state(t->buffer), t, data,
                                            offset, size);
}

static rt_status_t get_tensor_async(void *queue, const rt_tensor_t *t, void *data, size_t offset,
                                    size_t size) {
    return mockgpu_buffer_vtable.get_tensor(queue_host(queue)->buffer_state(t->buffer), t, data,
                                            offset, size);
}

static rt_status_t cpy_tensor_async(void *queue_src, void *queue_dst, const rt_tensor_t *src,
                                    rt_tensor_t *dst) {
    (void)queue_src;
    return mockgpu_buffer_vtable.cpy_tensor(queue_host(queue_dst)->buffer_state(dst->buffer), src, dst);
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

/* Its knobs as the device's own figures, when RT_MOCKGPU_REPORT_SPEED asks
 * for them and the bandwidth knob is set. */
static rt_status_t get_speed(void *device, double *bytes_per_s, double *layer_s,
                             double *copy_in_s) {
    const mockgpu_device_t *d = device;
    if (!d->report_speed || d->gbps <= 0) return RT_ERR_UNSUPPORTED;
    *bytes_per_s = d->gbps * 1e9;
    *layer_s = 0;
    *copy_in_s = d->copy_us * 1e-6;
    return RT_OK;
}

static const rt_device_ext_speed_t speed_ext = {
    {sizeof speed_ext, RT_EXT_DEVICE_SPEED, NULL},
    get_speed,
};

static const rt_device_ext_async_t async_ext = {
    {sizeof async_ext, RT_EXT_DEVICE_ASYNC, &speed_ext.header},
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
    mockgpu_t *m = mockgpu_latest;
    if (m == NULL || device >= m->n_devices) return false;
    *out = m->devices[device].counters;
    out->allocated = m->devices[device].allocated;
    return true;
}

void mockgpu_reset_counters(void) {
    mockgpu_t *m = mockgpu_latest;
    for (uint32_t i = 0; m != NULL && i < m->n_devices; i++)
        memset(&m->devices[i].counters, 0, sizeof m->devices[i].counters);
}
