/* SPDX-License-Identifier: MIT */
/* topo_common.c: the parts of rt_topology_t that do not depend on hwloc.
 * The process-wide cache of loaded topologies behind rt_topology_get_shared,
 * which the runtime's decisions use (one per source: this machine, or the
 * file HWLOC_XMLFILE names, so tests may switch files between registries),
 * and the CPU placement policy's names and its RT_CPU_PLACEMENT default. */
#include "topo.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

//===--- the shared topologies ---===//

/* One loaded source. Entries go onto a lock-free list and stay until the
 * library is unloaded, so every pointer handed out stays valid and readers
 * never wait for a load (~25 ms on a real machine). */
typedef struct shared_topo {
    struct shared_topo *next;
    rt_topology_t *topo; /* NULL: the source could not be loaded */
    size_t size;         /* bytes of this entry, source included */
    char source[];       /* HWLOC_XMLFILE's value; "" for this machine */
} shared_topo_t;

static _Atomic(shared_topo_t *) shared_head;

static shared_topo_t *find_source(shared_topo_t *e, const char *source) {
    for (; e != NULL; e = e->next)
        if (strcmp(e->source, source) == 0) return e;
    return NULL;
}

static void drop(shared_topo_t *e) {
    rt_topology_destroy(e->topo);
    rt_mem_free(NULL, e, e->size);
}

static shared_topo_t *load_source(const char *source) {
    const size_t n = strlen(source) + 1;
    shared_topo_t *e = rt_mem_calloc(NULL, sizeof *e + n);
    if (e == NULL) return NULL;
    e->size = sizeof *e + n;
    memcpy(e->source, source, n);
    /* hwloc reads HWLOC_XMLFILE itself; topo_none.c ignores it. */
    if (rt_topology_create(NULL, &e->topo) != RT_OK)
        rt_log(RT_LOG_WARN, "topology unknown (%s): devices get no NUMA node and CPU threads "
               "are not pinned", rt_last_error());
    return e;
}

/* Two threads may load the same source at once; the first to publish wins
 * and the other drops its copy. */
static shared_topo_t *publish(shared_topo_t *e) {
    shared_topo_t *head = atomic_load(&shared_head);
    do {
        shared_topo_t *won = find_source(head, e->source);
        if (won != NULL) {
            drop(e);
            return won;
        }
        e->next = head;
    } while (!atomic_compare_exchange_weak(&shared_head, &head, e));
    return e;
}

const rt_topology_t *rt_topology_get_shared(void) {
    const char *xml = getenv("HWLOC_XMLFILE");
    const char *source = xml != NULL ? xml : "";
    shared_topo_t *e = find_source(atomic_load(&shared_head), source);
    if (e == NULL) {
        e = load_source(source);
        if (e == NULL) return NULL;
        e = publish(e);
    }
    return e->topo;
}

__attribute__((destructor)) static void shared_release(void) {
    shared_topo_t *e = atomic_exchange(&shared_head, NULL);
    while (e != NULL) {
        shared_topo_t *next = e->next;
        drop(e);
        e = next;
    }
}

//===--- the placement policy ---===//

static const char *const placement_names[RT_CPU_PLACEMENT_COUNT] = {
    [RT_CPU_PLACEMENT_DEFAULT] = "default",
    [RT_CPU_PLACEMENT_COMPACT] = "compact",
    [RT_CPU_PLACEMENT_SPREAD] = "spread",
    [RT_CPU_PLACEMENT_NONE] = "none",
};

const char *rt_cpu_placement_name(rt_cpu_placement_t placement) {
    return placement >= 0 && placement < RT_CPU_PLACEMENT_COUNT ? placement_names[placement] : "?";
}

rt_cpu_placement_t rt_topology_default_placement(void) {
    const char *v = getenv("RT_CPU_PLACEMENT");
    if (v == NULL || *v == '\0') return RT_CPU_PLACEMENT_COMPACT;
    for (rt_cpu_placement_t p = RT_CPU_PLACEMENT_COMPACT; p < RT_CPU_PLACEMENT_COUNT; p++)
        if (strcmp(v, placement_names[p]) == 0) return p;
    rt_log(RT_LOG_WARN, "RT_CPU_PLACEMENT=%s is not compact, spread or none; using compact", v);
    return RT_CPU_PLACEMENT_COMPACT;
}
