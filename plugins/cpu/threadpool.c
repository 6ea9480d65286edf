/* SPDX-License-Identifier: MIT */
/* threadpool.c: one persistent pool of threads per queue, and the graph
 * loop they run. The calling thread is thread 0 and n_threads - 1 workers
 * are the others. Between graphs workers sleep on a condition variable (no
 * spinning while idle); a graph wakes them once, then every thread walks the
 * same node list, does its ith/nth share of each node, and meets the others
 * at one barrier per computing node (spinning briefly, then yielding, since
 * nodes are short). The pool also owns the per-thread scratch, sized before
 * each graph from what its nodes ask for, so kernels never allocate. */
#include "cpu.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

typedef struct rt_cpu_worker {
    rt_cpu_pool_t *pool;
    pthread_t thread;
    int32_t ith;
} rt_cpu_worker_t;

/* Invariants: generation, stop and the graph fields change only under
 * mutex, and the graph fields only while no graph runs; a worker runs the
 * graph of each generation exactly once. The final barrier of a graph is
 * the point after which no worker reads the node list. */
struct rt_cpu_pool {
    const rt_host_t *host;
    int32_t n_threads;
    int32_t n_started;              /* workers created (n_threads - 1 once up) */
    rt_cpu_worker_t *workers;       /* n_threads - 1 */
    pthread_mutex_t mutex;
    pthread_cond_t wake;
    uint64_t generation;            /* bumped once per graph */
    bool stop;
    rt_tensor_t *const *nodes;      /* the graph being run */
    int32_t n_nodes;
    void *wmem;                     /* scratch allocation, wmem_size bytes */
    size_t wmem_size;
    uint8_t *wdata;                 /* wmem aligned; thread i's at wdata + i * wsize */
    size_t wsize;                   /* bytes per thread, a multiple of RT_CPU_ALIGN */
    atomic_int barrier_count;       /* threads arrived at the current barrier */
    atomic_int barrier_phase;       /* bumped when the last one arrives */
    rt_cpu_error_t error;
};

//===--- helpers shared by the kernels ---===//

void rt_cpu_report(const rt_cpu_params_t *p, rt_status_t status, const char *fmt, ...) {
    int32_t expected = 0;
    if (!atomic_compare_exchange_strong(&p->error->claimed, &expected, 1))
        return;
    p->error->status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->error->message, sizeof p->error->message, fmt, ap);
    va_end(ap);
}

static size_t rt_cpu_pad(size_t n) {
    return (n + RT_CPU_ALIGN - 1) / RT_CPU_ALIGN * RT_CPU_ALIGN;
}

size_t rt_cpu_wsize_rows(int32_t n_regions, int64_t n) {
    return (size_t)n_regions * rt_cpu_pad((size_t)n * sizeof(float));
}

float *rt_cpu_scratch(const rt_cpu_params_t *p, int32_t region, int64_t n) {
    return (float *)((char *)p->wdata + (size_t)region * rt_cpu_pad((size_t)n * sizeof(float)));
}

void rt_cpu_split(int64_t n, int32_t ith, int32_t nth, int64_t *out_begin, int64_t *out_end) {
    *out_begin = n * ith / nth;
    *out_end = n * (ith + 1) / nth;
}

//===--- the barrier and the graph loop ---===//

static void rt_cpu_barrier(rt_cpu_pool_t *pool) {
    if (pool->n_threads == 1) return;
    const int phase = atomic_load(&pool->barrier_phase);
    if (atomic_fetch_add(&pool->barrier_count, 1) == pool->n_threads - 1) {
        atomic_store(&pool->barrier_count, 0);
        atomic_fetch_add(&pool->barrier_phase, 1);
        return;
    }
    for (int spins = 0; atomic_load(&pool->barrier_phase) == phase; spins++) {
        /* A node seldom takes long; past that, give the core away (the
         * machine may have fewer cores than threads). */
        if (spins > 1000) sched_yield();
    }
}

/* Every thread runs this for the same graph; a barrier separates two
 * computing nodes and ends the graph, and after each one every thread sees
 * the same error flag, so they all stop at the same node. */
static void rt_cpu_run_graph(rt_cpu_pool_t *pool, int32_t ith) {
    rt_cpu_params_t p = {
        .ith = ith,
        .nth = pool->n_threads,
        .wdata = pool->wdata + (size_t)ith * pool->wsize,
        .wsize = pool->wsize,
        .error = &pool->error,
    };
    bool first = true;
    for (int32_t i = 0; i < pool->n_nodes; i++) {
        rt_tensor_t *node = pool->nodes[i];
        if (!rt_cpu_op_computes(node->op)) continue;
        if (!first) {
            rt_cpu_barrier(pool);
            if (atomic_load(&pool->error.claimed)) break;
        }
        first = false;
        rt_cpu_op_compute(&p, node);
    }
    rt_cpu_barrier(pool);
}

static void *rt_cpu_worker_main(void *arg) {
    rt_cpu_worker_t *w = arg;
    rt_cpu_pool_t *pool = w->pool;
    uint64_t seen = 0;
    pthread_mutex_lock(&pool->mutex);
    for (;;) {
        while (!pool->stop && pool->generation == seen)
            pthread_cond_wait(&pool->wake, &pool->mutex);
        if (pool->stop) break;
        seen = pool->generation;
        pthread_mutex_unlock(&pool->mutex);
        rt_cpu_run_graph(pool, w->ith);
        pthread_mutex_lock(&pool->mutex);
    }
    pthread_mutex_unlock(&pool->mutex);
    return NULL;
}

//===--- scratch ---===//

/* Grows the scratch to what the largest node asks for; keeps it otherwise.
 * *out_any says whether any node computes at all. */
static rt_status_t rt_cpu_pool_reserve(rt_cpu_pool_t *pool, rt_tensor_t *const *nodes,
                                       int32_t n_nodes, bool *out_any) {
    size_t wsize = 0;
    *out_any = false;
    for (int32_t i = 0; i < n_nodes; i++) {
        if (!rt_cpu_op_computes(nodes[i]->op)) continue;
        const size_t w = rt_cpu_pad(rt_cpu_op_wsize(nodes[i]));
        if (w > wsize) wsize = w;
        *out_any = true;
    }
    if (!*out_any) return RT_OK;
    const size_t need = wsize * (size_t)pool->n_threads + RT_CPU_ALIGN;
    pool->wsize = wsize;
    if (need <= pool->wmem_size) return RT_OK;
    const rt_allocator_t *a = &pool->host->allocator;
    if (pool->wmem) a->realloc(a->user_data, pool->wmem, pool->wmem_size, 0);
    pool->wmem = a->realloc(a->user_data, NULL, 0, need);
    pool->wmem_size = pool->wmem ? need : 0;
    pool->wdata = NULL;
    if (!pool->wmem)
        return pool->host->set_error(RT_ERR_OUT_OF_MEMORY,
                                     "cpu: cannot allocate %zu bytes of scratch for %d threads",
                                     need, (int)pool->n_threads);
    const uintptr_t p = (uintptr_t)pool->wmem;
    pool->wdata = (uint8_t *)pool->wmem + ((RT_CPU_ALIGN - p % RT_CPU_ALIGN) % RT_CPU_ALIGN);
    return RT_OK;
}

rt_status_t rt_cpu_pool_compute(rt_cpu_pool_t *pool, rt_tensor_t *const *nodes, int32_t n_nodes) {
    bool any;
    rt_status_t st = rt_cpu_pool_reserve(pool, nodes, n_nodes, &any);
    if (st != RT_OK || !any) return st; /* views only: nothing to wake the workers for */
    atomic_store(&pool->error.claimed, 0);
    pthread_mutex_lock(&pool->mutex);
    pool->nodes = nodes;
    pool->n_nodes = n_nodes;
    pool->generation++;
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->mutex);
    rt_cpu_run_graph(pool, 0);
    if (atomic_load(&pool->error.claimed))
        return pool->host->set_error(pool->error.status, "cpu: %s", pool->error.message);
    return RT_OK;
}

//===--- creation and shutdown ---===//

/* Pinning is a hint: a refused cpu id is logged and the worker runs anyway. */
static void rt_cpu_pin(const rt_host_t *host, rt_cpu_worker_t *w, int32_t cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (cpu < 0 || cpu >= CPU_SETSIZE) {
        host->log(RT_LOG_WARN, "cpu: worker %d: cpu id %d out of range, not pinned", (int)w->ith,
                  (int)cpu);
        return;
    }
    CPU_SET(cpu, &set);
    const int err = pthread_setaffinity_np(w->thread, sizeof set, &set);
    if (err)
        host->log(RT_LOG_WARN, "cpu: worker %d: cannot pin to cpu %d: %s", (int)w->ith, (int)cpu,
                  strerror(err));
}

static rt_status_t rt_cpu_pool_start(rt_cpu_pool_t *pool, const int32_t *cpu_ids,
                                     int32_t n_cpu_ids) {
    for (int32_t i = 1; i < pool->n_threads; i++) {
        rt_cpu_worker_t *w = &pool->workers[i - 1];
        w->pool = pool;
        w->ith = i;
        const int err = pthread_create(&w->thread, NULL, rt_cpu_worker_main, w);
        if (err)
            return pool->host->set_error(err == EAGAIN ? RT_ERR_OUT_OF_MEMORY : RT_ERR_DEVICE,
                                         "cpu: cannot start worker %d of %d: %s", (int)i,
                                         (int)pool->n_threads, strerror(err));
        pool->n_started++;
        if (cpu_ids) rt_cpu_pin(pool->host, w, cpu_ids[i % n_cpu_ids]);
    }
    return RT_OK;
}

rt_status_t rt_cpu_pool_create(const rt_host_t *host, int32_t n_threads, const int32_t *cpu_ids,
                               int32_t n_cpu_ids, rt_cpu_pool_t **out_pool) {
    *out_pool = NULL;
    const rt_allocator_t *a = &host->allocator;
    rt_cpu_pool_t *pool = a->realloc(a->user_data, NULL, 0, sizeof *pool);
    const size_t wbytes = (size_t)(n_threads - 1) * sizeof(rt_cpu_worker_t);
    rt_cpu_worker_t *workers = wbytes ? a->realloc(a->user_data, NULL, 0, wbytes) : NULL;
    if (!pool || (wbytes && !workers)) {
        if (pool) a->realloc(a->user_data, pool, sizeof *pool, 0);
        if (workers) a->realloc(a->user_data, workers, wbytes, 0);
        return host->set_error(RT_ERR_OUT_OF_MEMORY, "cpu: cannot allocate a pool of %d threads",
                               (int)n_threads);
    }
    memset(pool, 0, sizeof *pool);
    pool->host = host;
    pool->n_threads = n_threads;
    pool->workers = workers;
    pthread_mutex_init(&pool->mutex, NULL);
    pthread_cond_init(&pool->wake, NULL);
    atomic_init(&pool->barrier_count, 0);
    atomic_init(&pool->barrier_phase, 0);
    atomic_init(&pool->error.claimed, 0);
    const rt_status_t st = rt_cpu_pool_start(pool, cpu_ids, n_cpu_ids);
    if (st != RT_OK) {
        rt_cpu_pool_destroy(pool);
        return st;
    }
    *out_pool = pool;
    return RT_OK;
}

void rt_cpu_pool_destroy(rt_cpu_pool_t *pool) {
    if (!pool) return;
    pthread_mutex_lock(&pool->mutex);
    pool->stop = true;
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->mutex);
    for (int32_t i = 0; i < pool->n_started; i++) pthread_join(pool->workers[i].thread, NULL);
    pthread_cond_destroy(&pool->wake);
    pthread_mutex_destroy(&pool->mutex);
    const rt_allocator_t *a = &pool->host->allocator;
    if (pool->wmem) a->realloc(a->user_data, pool->wmem, pool->wmem_size, 0);
    if (pool->workers)
        a->realloc(a->user_data, pool->workers,
                   (size_t)(pool->n_threads - 1) * sizeof(rt_cpu_worker_t), 0);
    a->realloc(a->user_data, pool, sizeof *pool, 0);
}
