/* SPDX-License-Identifier: MIT */
/* threadpool.c: one persistent pool of threads per queue, and the graph
 * loop they run. The calling thread is thread 0 and n_threads - 1 workers
 * are the others. Between graphs a worker spins for a while on the graph
 * generation (a decode loop submits graphs back to back, and waking a
 * sleeping thread costs tens of microseconds), then sleeps on a condition
 * variable; the caller only takes the lock to wake sleepers. A graph is one
 * pass of every thread over the same node list: each does its share of a
 * node's phase (most nodes have one, rt_cpu_op_phases) and meets the others
 * at one barrier per phase, spinning briefly and then yielding (nodes are
 * short, and the machine may have fewer cores than threads). The last
 * thread into a barrier resets the work counter that kernels claim items
 * from. No node allocates and no barrier makes a system call unless a
 * thread has to wait long: the pool owns the per-thread and the shared
 * scratch, sized before each graph from what its nodes ask for. */
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
    _Atomic uint64_t generation;    /* bumped once per graph */
    atomic_int n_sleeping;          /* workers in (or about to be in) cond_wait */
    atomic_bool stop;
    rt_tensor_t *const *nodes;      /* the graph being run */
    int32_t n_nodes;
    void *wmem;                     /* scratch allocation, wmem_size bytes */
    size_t wmem_size;
    uint8_t *wdata;                 /* wmem aligned; thread i's at wdata + i * wsize */
    size_t wsize;                   /* bytes per thread, a multiple of RT_CPU_ALIGN */
    uint8_t *shared;                /* after the threads' scratch, shared_size bytes */
    size_t shared_size;
    int32_t n_active;               /* threads running the current graph: 1 or n_threads */
    atomic_int barrier_count;       /* threads arrived at the current barrier */
    atomic_int barrier_phase;       /* bumped when the last one arrives */
    _Atomic int64_t counter;        /* work items claimed in the current phase */
    rt_cpu_error_t error;
};

/* Spins before a thread gives its core away: in a barrier (then yields), and
 * between graphs (then sleeps). About 2^14 pauses are some 100 us. */
#define RT_CPU_SPIN_BARRIER (1 << 12)
#define RT_CPU_SPIN_IDLE (1 << 14)

static inline void rt_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

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

/* The last of n threads in resets the work counter for the next phase,
 * then releases the others (the phase bump publishes the reset). n is the
 * graph's thread count as each thread read it when the graph started: the
 * pool's field may already hold the next graph's once the last is in. */
static void rt_cpu_barrier(rt_cpu_pool_t *pool, int32_t n) {
    if (n == 1) {
        atomic_store_explicit(&pool->counter, 0, memory_order_relaxed);
        return;
    }
    const int phase = atomic_load(&pool->barrier_phase);
    if (atomic_fetch_add(&pool->barrier_count, 1) == n - 1) {
        atomic_store(&pool->barrier_count, 0);
        atomic_store_explicit(&pool->counter, 0, memory_order_relaxed);
        atomic_fetch_add(&pool->barrier_phase, 1);
        return;
    }
    for (int spins = 0; atomic_load(&pool->barrier_phase) == phase; spins++) {
        if (spins < RT_CPU_SPIN_BARRIER)
            rt_cpu_relax();
        else
            sched_yield();
    }
}

/* Every thread runs this for the same graph; a barrier separates two
 * computing phases and ends the graph, and after each one every thread sees
 * the same error flag, so they all stop at the same node. */
static void rt_cpu_run_graph(rt_cpu_pool_t *pool, int32_t ith) {
    rt_cpu_params_t p = {
        .ith = ith,
        .nth = pool->n_threads,
        .wdata = pool->wdata + (size_t)ith * pool->wsize,
        .wsize = pool->wsize,
        .shared = pool->shared,
        .shared_size = pool->shared_size,
        .counter = &pool->counter,
        .error = &pool->error,
    };
    const int32_t n_active = pool->n_active;
    bool first = true;
    for (int32_t i = 0; i < pool->n_nodes; i++) {
        rt_tensor_t *node = pool->nodes[i];
        if (!rt_cpu_op_computes(node->op)) continue;
        const int32_t n_phases = rt_cpu_op_phases(node);
        p.nth = rt_cpu_op_threads(node, n_active);
        for (p.phase = 0; p.phase < n_phases; p.phase++) {
            if (!first) {
                rt_cpu_barrier(pool, n_active);
                if (atomic_load(&pool->error.claimed)) goto done;
            }
            first = false;
            if (ith < p.nth) rt_cpu_op_compute(&p, node);
        }
    }
done:
    rt_cpu_barrier(pool, n_active);
}

/* Until the generation moves past seen (or stop): spin, then sleep. The
 * sleeper counts itself before its last look at the generation, and the
 * caller bumps the generation before looking at the count, so one of the
 * two always sees the other (both sequentially consistent). */
static uint64_t rt_cpu_worker_wait(rt_cpu_pool_t *pool, uint64_t seen) {
    for (int spins = 0; spins < RT_CPU_SPIN_IDLE; spins++) {
        const uint64_t g = atomic_load(&pool->generation);
        if (g != seen || atomic_load(&pool->stop)) return g;
        rt_cpu_relax();
    }
    pthread_mutex_lock(&pool->mutex);
    atomic_fetch_add(&pool->n_sleeping, 1);
    while (!atomic_load(&pool->stop) && atomic_load(&pool->generation) == seen)
        pthread_cond_wait(&pool->wake, &pool->mutex);
    atomic_fetch_sub(&pool->n_sleeping, 1);
    pthread_mutex_unlock(&pool->mutex);
    return atomic_load(&pool->generation);
}

static void *rt_cpu_worker_main(void *arg) {
    rt_cpu_worker_t *w = arg;
    rt_cpu_pool_t *pool = w->pool;
    uint64_t seen = 0;
    for (;;) {
        seen = rt_cpu_worker_wait(pool, seen);
        if (atomic_load(&pool->stop)) break;
        rt_cpu_run_graph(pool, w->ith);
    }
    return NULL;
}

/* Bumps the generation; takes the lock only when a worker may sleep. */
static void rt_cpu_pool_wake(rt_cpu_pool_t *pool, bool stop) {
    if (stop) atomic_store(&pool->stop, true);
    atomic_fetch_add(&pool->generation, 1);
    if (atomic_load(&pool->n_sleeping) > 0 || stop) {
        pthread_mutex_lock(&pool->mutex);
        pthread_cond_broadcast(&pool->wake);
        pthread_mutex_unlock(&pool->mutex);
    }
}

//===--- scratch ---===//

/* Grows the scratch to what the largest node asks for; keeps it otherwise.
 * *out_any says whether any node computes at all, *out_split whether any
 * is worth more than one thread. */
static rt_status_t rt_cpu_pool_reserve(rt_cpu_pool_t *pool, rt_tensor_t *const *nodes,
                                       int32_t n_nodes, bool *out_any, bool *out_split) {
    size_t wsize = 0, shared = 0;
    *out_any = *out_split = false;
    for (int32_t i = 0; i < n_nodes; i++) {
        if (!rt_cpu_op_computes(nodes[i]->op)) continue;
        if (rt_cpu_op_threads(nodes[i], pool->n_threads) > 1) *out_split = true;
        const size_t w = rt_cpu_pad(rt_cpu_op_wsize(nodes[i]));
        const size_t s = rt_cpu_pad(rt_cpu_op_shared_wsize(nodes[i]));
        if (w > wsize) wsize = w;
        if (s > shared) shared = s;
        *out_any = true;
    }
    if (!*out_any) return RT_OK;
    const size_t need = wsize * (size_t)pool->n_threads + shared + RT_CPU_ALIGN;
    pool->wsize = wsize;
    pool->shared_size = shared;
    if (need <= pool->wmem_size) {
        pool->shared = pool->wdata + wsize * (size_t)pool->n_threads;
        return RT_OK;
    }
    /* Geometric growth: decoding grows soft_max's rows by one key a token,
     * and must not allocate every few tokens. */
    const size_t cap = need > 2 * pool->wmem_size ? need : 2 * pool->wmem_size;
    const rt_allocator_t *a = &pool->host->allocator;
    if (pool->wmem) a->realloc(a->user_data, pool->wmem, pool->wmem_size, 0);
    pool->wmem = a->realloc(a->user_data, NULL, 0, cap);
    pool->wmem_size = pool->wmem ? cap : 0;
    pool->wdata = NULL;
    if (!pool->wmem)
        return pool->host->set_error(RT_ERR_OUT_OF_MEMORY,
                                     "cpu: cannot allocate %zu bytes of scratch for %d threads",
                                     need, (int)pool->n_threads);
    const uintptr_t p = (uintptr_t)pool->wmem;
    pool->wdata = (uint8_t *)pool->wmem + ((RT_CPU_ALIGN - p % RT_CPU_ALIGN) % RT_CPU_ALIGN);
    pool->shared = pool->wdata + wsize * (size_t)pool->n_threads;
    return RT_OK;
}

/* A graph of small nodes only (a small model's decode step) runs on the
 * calling thread alone: no wake-up, no barrier. */
rt_status_t rt_cpu_pool_compute(rt_cpu_pool_t *pool, rt_tensor_t *const *nodes, int32_t n_nodes) {
    bool any, split;
    rt_status_t st = rt_cpu_pool_reserve(pool, nodes, n_nodes, &any, &split);
    if (st != RT_OK || !any) return st; /* views only: nothing to wake the workers for */
    atomic_store(&pool->error.claimed, 0);
    atomic_store(&pool->counter, 0);
    pool->nodes = nodes; /* published by the generation bump */
    pool->n_nodes = n_nodes;
    pool->n_active = split ? pool->n_threads : 1;
    if (split) rt_cpu_pool_wake(pool, false);
    rt_cpu_run_graph(pool, 0);
    if (atomic_load(&pool->error.claimed))
        return pool->host->set_error(pool->error.status, "cpu: %s", pool->error.message);
    return RT_OK;
}

//===--- creation and shutdown ---===//

/* Pinning is a hint: a refused cpu id is logged and the worker runs anyway. */
static void rt_cpu_pin(const rt_host_t *host, rt_cpu_worker_t *w, int32_t cpu) {
    const int err = rt_cpu_os_pin(w->thread, cpu);
    if (err == ENOTSUP)
        host->log(RT_LOG_DEBUG, "cpu: worker %d: this OS does not pin threads", (int)w->ith);
    else if (err)
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
    pool->n_active = n_threads;
    pool->workers = workers;
    pthread_mutex_init(&pool->mutex, NULL);
    pthread_cond_init(&pool->wake, NULL);
    atomic_init(&pool->generation, 0);
    atomic_init(&pool->n_sleeping, 0);
    atomic_init(&pool->stop, false);
    atomic_init(&pool->counter, 0);
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
    rt_cpu_pool_wake(pool, true);
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
