/* SPDX-License-Identifier: MIT */
/* queue_impl.h: rt_queue_t (queue.c), the plugin's queue and the link
 * that keeps it on its registry's list. */
#ifndef RT_QUEUE_IMPL_H
#define RT_QUEUE_IMPL_H

#include "internal.h"
#include "list.h"

struct rt_queue {
    rt_device_t *device;
    void *handle;                   /* the plugin's queue */
    rt_link_t link;                 /* in registry->queues */
};

#endif /* RT_QUEUE_IMPL_H */
