/* SPDX-License-Identifier: MIT */
/* list.h: the intrusive circular doubly linked list the registry keeps its
 * live buffers and queues on. */
#ifndef RT_LIST_H
#define RT_LIST_H

#include <stddef.h>

/* A node of a circular doubly linked list; a list is a head node. */
typedef struct rt_link {
    struct rt_link *prev, *next;
} rt_link_t;

#define RT_CONTAINER_OF(ptr, type, member) ((type *)(void *)((char *)(ptr) - offsetof(type, member)))

#endif /* RT_LIST_H */
