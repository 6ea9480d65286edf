/* SPDX-License-Identifier: MIT */
/* sched_compute.c: running the splits of an allocated graph (docs/memory.md,
 * section 4). Each split first gets its inputs:
 * user inputs are copied at once (the caller may overwrite them as soon as
 * the call returns); other inputs wait until the split's device is done
 * with the copy slot, then go through the device's async copy when it has
 * one, else through a synchronous copy after the source's device is done.
 * Then the split runs asynchronously on its device's queue, and an event
 * marks when its copy slot is free again. Devices without events (or a
 * scheduler without pipeline copies) synchronize instead. With timing on
 * (rt_sched_set_timing) a split also waits for its device after its copies
 * and after its nodes, so each device's share is timed by a monotonic
 * clock; the default path reads no clock. */
#include "queue_impl.h"
#include "sched_impl.h"

#include <stdio.h>
#include <time.h>

static rt_status_t plugin_failed(rt_status_t st, const rt_error_snapshot_t *snap,
                                 const rt_device_t *dev, const char *what) {
    char text[128];
    snprintf(text, sizeof text, "%s: %s", rt_device_name(dev), what);
    return rt_plugin_failed(st, snap, text);
}

//===--- events ---===//

static bool has_events(const rt_device_t *dev) {
    return (dev->props.caps & RT_DEVICE_CAP_EVENTS) && dev->async.header.type != 0 &&
           dev->async.event_create != NULL && dev->async.event_destroy != NULL &&
           dev->async.event_record != NULL && dev->async.event_wait != NULL &&
           dev->async.event_synchronize != NULL;
}

rt_status_t rt_sched_events_create(rt_sched_t *s) {
    for (int32_t d = 0; d < s->n_devices && s->n_copies > 1; d++) {
        const rt_device_t *dev = s->devices[d];
        for (int32_t c = 0; c < s->n_copies && has_events(dev); c++) {
            rt_error_snapshot_t snap;
            rt_error_snapshot(&snap);
            const rt_status_t st = dev->async.event_create(dev->handle, &s->events[d][c]);
            if (st != RT_OK) return plugin_failed(st, &snap, dev, "event_create failed");
        }
    }
    return RT_OK;
}

void rt_sched_events_destroy(rt_sched_t *s) {
    for (int32_t d = 0; d < s->n_devices; d++) {
        for (int32_t c = 0; c < RT_SCHED_MAX_COPIES; c++) {
            if (s->events[d][c] != NULL) s->devices[d]->async.event_destroy(s->events[d][c]);
            s->events[d][c] = NULL;
        }
    }
}

/* The host waits until device d is done with the current copy slot. */
static rt_status_t host_wait(rt_sched_t *s, int32_t d) {
    void *ev = s->events[d][s->cur_copy];
    if (ev == NULL) return rt_queue_synchronize(s->queues[d]);
    rt_error_snapshot_t snap;
    rt_error_snapshot(&snap);
    const rt_status_t st = s->devices[d]->async.event_synchronize(ev);
    return st == RT_OK ? st : plugin_failed(st, &snap, s->devices[d], "event_synchronize failed");
}

/* Device d's queue waits (on the device) until the copy slot is free. */
static rt_status_t queue_wait(rt_sched_t *s, int32_t d) {
    void *ev = s->events[d][s->cur_copy];
    if (ev == NULL) return rt_queue_synchronize(s->queues[d]);
    rt_error_snapshot_t snap;
    rt_error_snapshot(&snap);
    const rt_status_t st = s->devices[d]->async.event_wait(s->queues[d]->handle, ev);
    return st == RT_OK ? st : plugin_failed(st, &snap, s->devices[d], "event_wait failed");
}

static rt_status_t record(rt_sched_t *s, int32_t d) {
    void *ev = s->events[d][s->cur_copy];
    if (ev == NULL) return RT_OK;
    rt_error_snapshot_t snap;
    rt_error_snapshot(&snap);
    const rt_status_t st = s->devices[d]->async.event_record(ev, s->queues[d]->handle);
    return st == RT_OK ? st : plugin_failed(st, &snap, s->devices[d], "event_record failed");
}

//===--- copies ---===//

static bool is_host(const rt_tensor_t *t) {
    return t->buffer == NULL || rt_buffer_type_is_host(rt_buffer_get_type(t->buffer));
}

/* src's bytes into dst, which has src's layout. rt_tensor_copy takes
 * contiguous tensors; a strided one is the same byte range on both sides,
 * so it moves as raw bytes. */
static rt_status_t copy_layout(const rt_sched_t *s, const rt_tensor_t *src, rt_tensor_t *dst) {
    if (rt_is_contiguous(src)) return rt_tensor_copy(src, dst);
    const size_t n = rt_nbytes(src);
    if (is_host(src)) return rt_tensor_set(dst, src->data, 0, n);
    if (is_host(dst)) return rt_tensor_get(src, dst->data, 0, n);
    void *tmp = rt_mem_alloc(&s->allocator, n);
    if (tmp == NULL)
        return rt_error(RT_ERR_OUT_OF_MEMORY, "rt_sched: no host memory to copy %zu bytes of %s",
                        n, src->name);
    rt_status_t st = rt_tensor_get(src, tmp, 0, n);
    if (st == RT_OK) st = rt_tensor_set(dst, tmp, 0, n);
    rt_mem_free(&s->allocator, tmp, n);
    return st;
}

/* The destination device's async copy, when it has one and takes the
 * pair; *done tells whether it did. */
static rt_status_t copy_async(rt_sched_t *s, const rt_sched_input_t *in, rt_tensor_t *dst,
                              bool *done) {
    const rt_device_t *dev = s->devices[in->device];
    *done = false;
    if (dev->async.header.type == 0 || dev->async.cpy_tensor_async == NULL) return RT_OK;
    rt_error_snapshot_t snap;
    rt_error_snapshot(&snap);
    const rt_status_t st = dev->async.cpy_tensor_async(s->queues[in->src_device]->handle,
                                                       s->queues[in->device]->handle, in->src, dst);
    *done = st == RT_OK;
    if (st == RT_OK || st == RT_ERR_UNSUPPORTED) return RT_OK;
    return plugin_failed(st, &snap, dev, "cpy_tensor_async failed");
}

static rt_status_t copy_input(rt_sched_t *s, const rt_sched_input_t *in) {
    rt_tensor_t *dst = in->copies[s->cur_copy];
    if (in->src->flags & RT_TENSOR_FLAG_INPUT) {
        const rt_status_t st = host_wait(s, in->device);
        return st == RT_OK ? copy_layout(s, in->src, dst) : st;
    }
    bool done = false;
    rt_status_t st = queue_wait(s, in->device);
    if (st == RT_OK) st = copy_async(s, in, dst, &done);
    if (st != RT_OK || done) return st;
    st = rt_queue_synchronize(s->queues[in->src_device]);
    if (st == RT_OK) st = host_wait(s, in->device);
    return st == RT_OK ? copy_layout(s, in->src, dst) : st;
}

//===--- splits ---===//

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static rt_status_t compute_split(rt_sched_t *s, rt_sched_split_t *sp) {
    rt_status_t st = RT_OK;
    for (int32_t k = sp->first_input; k < sp->first_input + sp->n_inputs && st == RT_OK; k++)
        st = copy_input(s, &s->inputs.at[k]);
    if (st == RT_OK && sp->graph.n_nodes > 0)
        st = rt_queue_compute_async(s->queues[sp->device], &sp->graph);
    if (st == RT_OK && sp->n_inputs > 0) st = record(s, sp->device);
    return st;
}

/* compute_split with a wait and a clock reading after the copies and
 * after the nodes. */
static rt_status_t timed_split(rt_sched_t *s, rt_sched_split_t *sp) {
    const int32_t d = sp->device;
    const double t0 = now_s();
    rt_status_t st = RT_OK;
    for (int32_t k = sp->first_input; k < sp->first_input + sp->n_inputs && st == RT_OK; k++)
        st = copy_input(s, &s->inputs.at[k]);
    if (st == RT_OK) st = rt_queue_synchronize(s->queues[d]);
    const double t1 = now_s();
    if (st == RT_OK && sp->graph.n_nodes > 0) st = rt_queue_compute_async(s->queues[d], &sp->graph);
    if (st == RT_OK) st = rt_queue_synchronize(s->queues[d]);
    if (st == RT_OK && sp->n_inputs > 0) st = record(s, d);
    s->time_copy[d] += t1 - t0;
    s->time_compute[d] += now_s() - t1;
    s->timed_splits[d]++;
    return st;
}

rt_status_t rt_sched_compute_splits(rt_sched_t *s) {
    rt_status_t st = RT_OK;
    for (int32_t i = 0; i < s->splits.n && st == RT_OK; i++)
        st = s->timing ? timed_split(s, &s->splits.at[i]) : compute_split(s, &s->splits.at[i]);
    return st;
}

void rt_sched_set_timing(rt_sched_t *s, bool on) {
    if (s == NULL) return;
    if (on)
        for (int32_t d = 0; d < RT_SCHED_MAX_DEVICES; d++)
            s->time_compute[d] = s->time_copy[d] = 0, s->timed_splits[d] = 0;
    s->timing = on;
}

rt_status_t rt_sched_device_time(const rt_sched_t *s, int32_t i, double *out_compute_s,
                                 double *out_copy_s, int64_t *out_splits) {
    RT_ARMOR(s != NULL);
    if (i < 0 || i >= s->n_devices)
        return rt_error(RT_ERR_MISUSE, "rt_sched_device_time: device %d of %d", (int)i,
                        (int)s->n_devices);
    if (out_compute_s) *out_compute_s = s->time_compute[i];
    if (out_copy_s) *out_copy_s = s->time_copy[i];
    if (out_splits) *out_splits = s->timed_splits[i];
    return RT_OK;
}
