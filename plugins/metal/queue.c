/* SPDX-License-Identifier: MIT */
/* queue.c: the Metal plugin's queues and events. Each rt queue is its own
 * MTLCommandQueue; Metal runs a queue's command buffers in commit order, so
 * a queue needs to remember only the last one it committed (synchronize
 * waits for it). The device keeps the list of its live queues: a
 * synchronous transfer, which runs on the device's transfer queue, waits
 * for all of them first.
 *
 * Events are MTLSharedEvents with a counter: record commits a command
 * buffer that signals the next value; a queue of the same device waits on
 * the GPU (encodeWaitForEvent), a queue of another device and the host
 * wait on the CPU until signaledValue reaches it. */
#include "mtl_impl.h"

#include <time.h>

//===--- command buffers ---===//

/* Waits for cmd (nil: nothing to wait for); what names it in the error. */
static rt_status_t mtl_cmd_wait(const rt_mtl_device_t *dev, id cmd, const char *what) {
    if (!cmd) return RT_OK;
    rt_objc_void(cmd, "waitUntilCompleted");
    if (rt_objc_uint(cmd, "status") != MTLCommandBufferStatusError) return RT_OK;
    return dev->host->set_error(RT_ERR_DEVICE, "metal%u: %s failed: %s", dev->index, what,
                                rt_ns_error_text(rt_objc_id(cmd, "error")));
}

rt_status_t rt_mtl_cmd_run(const rt_mtl_device_t *dev, id cmd, const char *what) {
    rt_objc_void(cmd, "commit");
    return mtl_cmd_wait(dev, cmd, what);
}

/* A queue's last command buffer is read and replaced under the device's
 * queue_lock: a synchronous transfer on another thread waits for it. It
 * stays referenced after it completes (waiting for it again is free), so
 * whoever waits, waits for all the queue's work. */
void rt_mtl_queue_commit(rt_mtl_queue_t *q, id cmd) {
    rt_objc_void(cmd, "commit");
    rt_plugin_mutex_lock(&q->dev->queue_lock);
    id old = q->last;
    q->last = rt_objc_retain(cmd);
    rt_plugin_mutex_unlock(&q->dev->queue_lock);
    rt_objc_release(old);
}

rt_status_t rt_mtl_queue_synchronize(void *queue) {
    rt_mtl_queue_t *q = queue;
    void *pool = rt_objc_pool_push();
    rt_plugin_mutex_lock(&q->dev->queue_lock);
    id cmd = rt_objc_retain(q->last);
    rt_plugin_mutex_unlock(&q->dev->queue_lock);
    const rt_status_t st = mtl_cmd_wait(q->dev, cmd, "the queue's work");
    rt_objc_release(cmd);
    rt_objc_pool_pop(pool);
    return st;
}

/* Holds queue_lock while it waits: commits on other threads wait too. */
rt_status_t rt_mtl_device_synchronize(rt_mtl_device_t *dev) {
    rt_status_t st = RT_OK;
    void *pool = rt_objc_pool_push();
    rt_plugin_mutex_lock(&dev->queue_lock);
    for (uint32_t i = 0; i < dev->n_queues; i++) {
        const rt_status_t s = mtl_cmd_wait(dev, dev->queues[i]->last, "a queue's work");
        if (st == RT_OK) st = s;
    }
    rt_plugin_mutex_unlock(&dev->queue_lock);
    rt_objc_pool_pop(pool);
    return st;
}

//===--- queues ---===//

static rt_status_t mtl_queue_register(rt_mtl_device_t *dev, rt_mtl_queue_t *q) {
    rt_status_t st = RT_OK;
    rt_plugin_mutex_lock(&dev->queue_lock);
    if (rt_vk_grow(dev->host, (void **)&dev->queues, &dev->cap_queues, dev->n_queues + 1,
                    sizeof dev->queues[0]))
        dev->queues[dev->n_queues++] = q;
    else
        st = dev->host->set_error(RT_ERR_OUT_OF_MEMORY, "%s: no memory", __func__);
    rt_plugin_mutex_unlock(&dev->queue_lock);
    return st;
}

static void mtl_queue_unregister(rt_mtl_device_t *dev, const rt_mtl_queue_t *q) {
    rt_plugin_mutex_lock(&dev->queue_lock);
    for (uint32_t i = 0; i < dev->n_queues; i++)
        if (dev->queues[i] == q) {
            dev->queues[i] = dev->queues[--dev->n_queues];
            break;
        }
    rt_plugin_mutex_unlock(&dev->queue_lock);
}

rt_status_t rt_mtl_queue_create(void *device, const rt_queue_options_t *options, void **out_queue) {
    (void)options; /* no host threads of ours to place */
    rt_mtl_device_t *dev = device;
    *out_queue = NULL;
    rt_mtl_queue_t *q = rt_vk_alloc(dev->host, sizeof *q);
    if (!q) return dev->host->set_error(RT_ERR_OUT_OF_MEMORY, "%s: no memory", __func__);
    q->dev = dev;
    q->queue = rt_objc_id(dev->device, "newCommandQueue");
    rt_status_t st = q->queue ? RT_OK
                              : dev->host->set_error(RT_ERR_DEVICE, "%s: metal%u: no command queue",
                                                     __func__, dev->index);
    if (st == RT_OK) st = mtl_queue_register(dev, q);
    if (st != RT_OK) {
        rt_objc_release(q->queue);
        rt_vk_free(dev->host, q, sizeof *q);
        return st;
    }
    *out_queue = q;
    return RT_OK;
}

void rt_mtl_queue_destroy(void *queue) {
    rt_mtl_queue_t *q = queue;
    if (!q) return;
    mtl_queue_unregister(q->dev, q);
    rt_mtl_queue_synchronize(q);
    rt_objc_release(q->last);
    rt_objc_release(q->queue);
    rt_vk_free(q->dev->host, q, sizeof *q);
}

//===--- events ---===//

typedef struct rt_mtl_event {
    rt_mtl_device_t *dev;
    id event;                     /* id<MTLSharedEvent> (+1) */
    uint64_t value;               /* the last value recorded; signaledValue reaches it */
} rt_mtl_event_t;

rt_status_t rt_mtl_event_create(void *device, void **out_event) {
    rt_mtl_device_t *dev = device;
    *out_event = NULL;
    rt_mtl_event_t *e = rt_vk_alloc(dev->host, sizeof *e);
    if (!e) return dev->host->set_error(RT_ERR_OUT_OF_MEMORY, "%s: no memory", __func__);
    e->dev = dev;
    e->event = rt_objc_id(dev->device, "newSharedEvent");
    if (!e->event) {
        rt_vk_free(dev->host, e, sizeof *e);
        return dev->host->set_error(RT_ERR_DEVICE, "%s: metal%u: no shared event", __func__,
                                    dev->index);
    }
    *out_event = e;
    return RT_OK;
}

void rt_mtl_event_destroy(void *event) {
    rt_mtl_event_t *e = event;
    if (!e) return;
    /* A command buffer that signals it holds its own reference. */
    rt_objc_release(e->event);
    rt_vk_free(e->dev->host, e, sizeof *e);
}

rt_status_t rt_mtl_event_record(void *event, void *queue) {
    rt_mtl_event_t *e = event;
    rt_mtl_queue_t *q = queue;
    if (q->dev != e->dev)
        return e->dev->host->set_error(RT_ERR_INVALID_ARGUMENT, "%s: an event of metal%u recorded "
                                       "on a queue of metal%u", __func__, e->dev->index,
                                       q->dev->index);
    void *pool = rt_objc_pool_push();
    id cmd = rt_objc_id(q->queue, "commandBuffer");
    RT_OBJC(void (*)(id, SEL, id, uint64_t), cmd, "encodeSignalEvent:value:", e->event, ++e->value);
    rt_mtl_queue_commit(q, cmd);
    rt_objc_pool_pop(pool);
    return RT_OK;
}

/* The host waits, polling: Metal's notification listener takes a block,
 * which plain C cannot make portably. */
rt_status_t rt_mtl_event_synchronize(void *event) {
    const rt_mtl_event_t *e = event;
    const struct timespec pause = { 0, 20000 }; /* 20 us */
    while (rt_objc_u64(e->event, "signaledValue") < e->value) nanosleep(&pause, NULL);
    return RT_OK;
}

rt_status_t rt_mtl_event_wait(void *queue, void *event) {
    rt_mtl_queue_t *q = queue;
    const rt_mtl_event_t *e = event;
    if (q->dev != e->dev) return rt_mtl_event_synchronize(event);
    void *pool = rt_objc_pool_push();
    id cmd = rt_objc_id(q->queue, "commandBuffer");
    RT_OBJC(void (*)(id, SEL, id, uint64_t), cmd, "encodeWaitForEvent:value:", e->event, e->value);
    rt_mtl_queue_commit(q, cmd);
    rt_objc_pool_pop(pool);
    return RT_OK;
}
