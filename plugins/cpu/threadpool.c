/* SPDX-License-Identifier: MIT */
/* threadpool.c: one persistent pool of threads per queue, and the graph
 * loop they run. The calling thread is thread 0 and n_threads - 1 workers
 * are the others. A graph is one pass of every thread over the same node
 * list: each does its share of a node's phase (most nodes have one,
 * rt_cpu_op_phases) and meets the others at one barrier per phase. The last
 * thread into a barrier resets the work counter that kernels claim items
 * from. Every wait (a worker between graphs, a thread in a barrier) backs
 * off the same way: it spins a bounded while (a decode loop submits graphs
 * back to back and its barriers are microseconds apart, while waking a
 * sleeper costs tens of them), then yields a few times, then sleeps on the
 * pool's condition variable. The barrier's spin budget adapts: a wait that
 * had to sleep halves it, one that ended sooner doubles it, so on busy
 * cores (a competing process, more threads than the affinity mask or a
 * cgroup quota lets run) a thread soon stops burning the core that the
 * thread it waits for needs, and on idle cores it keeps the fast path.
 * Backing off cannot make a thread that the OS does not run arrive at a
 * barrier sooner, so the pool also times its graphs (seconds per unit of
 * work) on all threads and on the caller alone, runs the faster way, and
 * tries the other now and then: on a machine whose cores are all busy, 2
 * threads are then never much slower than 1. No node allocates: the pool owns the per-thread and the shared scratch,
 * sized before each graph from what its nodes ask for. */
#include "cpu.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

typedef struct rt_cpu_worker {
    rt_cpu_pool_t *pool;
    pthread_t thread;
    int32_t ith;
} rt_cpu_worker_t;

/* Invariants: generation, stop and the graph fields change only on the
 * calling thread, and the graph fields only while no graph runs; mutex
 * guards nothing but the sleeps (rt_cpu_wait); a worker runs the
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
    double rate[2];                 /* seconds per work unit alone, on all; 0: unknown */
    uint32_t n_split;               /* graphs worth splitting run so far */
    atomic_int barrier_count;       /* threads arrived at the current barrier */
    _Atomic uint64_t barrier_phase; /* bumped when the last one arrives */
    atomic_int spin_limit;          /* a barrier's spins before yielding (adapted) */
    _Atomic int64_t counter;        /* work items claimed in the current phase */
    rt_cpu_error_t error;
};

/* Bounds of a wait's back-off. About 2^14 pauses are some 100 us on a
 * recent x86 core; a yield costs a system call, and on a busy core lets the
 * other process run for its time slice. */
#define RT_CPU_SPIN_IDLE (1 << 14)  /* between graphs */
#define RT_CPU_SPIN_MAX (1 << 12)   /* in a barrier, while its waits end spinning */
#define RT_CPU_SPIN_MIN (1 << 5)    /* in a barrier, once its waits end asleep */
#define RT_CPU_YIELDS 8
/* Every RT_CPU_PROBE-th graph worth splitting runs the way that was slower
 * (conditions change: a competitor ends, the graphs grow); a new rate
 * weighs RT_CPU_RATE_NEW in the smoothed one. */
#define RT_CPU_PROBE 16
#define RT_CPU_RATE_NEW 0.25

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

//===--- waiting: spin, yield, sleep ---===//

/* How a wait ended: the caller's spin budget is judged by it. */
typedef enum rt_cpu_waited { RT_CPU_SPUN, RT_CPU_YIELDED, RT_CPU_SLEPT } rt_cpu_waited_t;

/* Until *word moves past seen: spin up to spin_limit times, yield up to
 * RT_CPU_YIELDS times, then sleep. The sleeper counts itself before its
 * last look at the word and whoever moves the word looks at the count after
 * (rt_cpu_pool_notify), so one of the two always sees the other (both
 * sequentially consistent). */
static rt_cpu_waited_t rt_cpu_wait(rt_cpu_pool_t *pool, _Atomic uint64_t *word, uint64_t seen,
                                   int32_t spin_limit) {
    for (int32_t i = 0; i < spin_limit; i++) {
        if (atomic_load(word) != seen) return RT_CPU_SPUN;
        rt_cpu_relax();
    }
    for (int32_t i = 0; i < RT_CPU_YIELDS; i++) {
        if (atomic_load(word) != seen) return RT_CPU_YIELDED;
        sched_yield();
    }
    pthread_mutex_lock(&pool->mutex);
    atomic_fetch_add(&pool->n_sleeping, 1);
    while (atomic_load(word) == seen) pthread_cond_wait(&pool->wake, &pool->mutex);
    atomic_fetch_sub(&pool->n_sleeping, 1);
    pthread_mutex_unlock(&pool->mutex);
    return RT_CPU_SLEPT;
}

/* Called after moving a word that threads may sleep on: takes the lock
 * only when one may. Sleepers on the other word wake, see theirs
 * unchanged, and sleep again. */
static void rt_cpu_pool_notify(rt_cpu_pool_t *pool) {
    if (atomic_load(&pool->n_sleeping) > 0) {
        pthread_mutex_lock(&pool->mutex);
        pthread_cond_broadcast(&pool->wake);
        pthread_mutex_unlock(&pool->mutex);
    }
}

/* A barrier wait that slept spun for nothing: halve the budget; one that
 * ended sooner might have ended spinning: double it. Stored only when it
 * changes, so threads on idle cores do not share a written cache line. */
static void rt_cpu_adapt_spin(rt_cpu_pool_t *pool, int32_t limit, rt_cpu_waited_t how) {
    int32_t next = how == RT_CPU_SLEPT ? limit / 2 : limit * 2;
    next = next < RT_CPU_SPIN_MIN ? RT_CPU_SPIN_MIN : next > RT_CPU_SPIN_MAX ? RT_CPU_SPIN_MAX : next;
    if (next != limit) atomic_store_explicit(&pool->spin_limit, next, memory_order_relaxed);
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
    const uint64_t phase = atomic_load(&pool->barrier_phase);
    if (atomic_fetch_add(&pool->barrier_count, 1) == n - 1) {
        atomic_store(&pool->barrier_count, 0);
        atomic_store_explicit(&pool->counter, 0, memory_order_relaxed);
        atomic_fetch_add(&pool->barrier_phase, 1);
        rt_cpu_pool_notify(pool);
        return;
    }
    const int32_t limit = atomic_load_explicit(&pool->spin_limit, memory_order_relaxed);
    rt_cpu_adapt_spin(pool, limit, rt_cpu_wait(pool, &pool->barrier_phase, phase, limit));
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

static void *rt_cpu_worker_main(void *arg) {
    rt_cpu_worker_t *w = arg;
    rt_cpu_pool_t *pool = w->pool;
    uint64_t seen = 0;
    for (;;) {
        rt_cpu_wait(pool, &pool->generation, seen, RT_CPU_SPIN_IDLE);
        seen = atomic_load(&pool->generation);
        if (atomic_load(&pool->stop)) break;
        rt_cpu_run_graph(pool, w->ith);
    }
    return NULL;
}

/* Bumps the generation (stop is set first, so a stopping worker wakes). */
static void rt_cpu_pool_wake(rt_cpu_pool_t *pool, bool stop) {
    if (stop) atomic_store(&pool->stop, true);
    atomic_fetch_add(&pool->generation, 1);
    rt_cpu_pool_notify(pool);
}

//===--- scratch ---===//

/* Grows the scratch to what the largest node asks for; keeps it otherwise.
 * *out_work is the work of the nodes worth more than one thread (0: run
 * the graph alone), *out_any says whether any node computes at all. */
static rt_status_t rt_cpu_pool_reserve(rt_cpu_pool_t *pool, rt_tensor_t *const *nodes,
                                       int32_t n_nodes, bool *out_any, int64_t *out_work) {
    size_t wsize = 0, shared = 0;
    *out_any = false;
    *out_work = 0;
    for (int32_t i = 0; i < n_nodes; i++) {
        if (!rt_cpu_op_computes(nodes[i]->op)) continue;
        if (rt_cpu_op_threads(nodes[i], pool->n_threads) > 1) *out_work += rt_cpu_op_work(nodes[i]);
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

//===--- all threads or the caller alone ---===//

static double rt_cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* 1 (all threads) or 0 (the caller alone) for the next graph worth
 * splitting: a way not yet timed first (all threads before alone), then
 * the faster, the slower every RT_CPU_PROBE-th graph. */
static int rt_cpu_pool_choose(rt_cpu_pool_t *pool) {
    if (pool->n_threads == 1) return 0;
    const uint32_t n = pool->n_split++;
    if (pool->rate[1] == 0) return 1;
    if (pool->rate[0] == 0) return 0;
    const int best = pool->rate[1] <= pool->rate[0] ? 1 : 0;
    return n % RT_CPU_PROBE == RT_CPU_PROBE - 1 ? 1 - best : best;
}

static void rt_cpu_pool_learn(rt_cpu_pool_t *pool, int way, double seconds, int64_t work) {
    const double r = seconds / (double)work;
    pool->rate[way] = pool->rate[way] == 0 ? r : pool->rate[way] * (1 - RT_CPU_RATE_NEW) + r * RT_CPU_RATE_NEW;
}

/* A graph of small nodes only (a small model's decode step) runs on the
 * calling thread alone: no wake-up, no barrier; so does one the pool has
 * found faster that way (rt_cpu_pool_choose). */
rt_status_t rt_cpu_pool_compute(rt_cpu_pool_t *pool, rt_tensor_t *const *nodes, int32_t n_nodes) {
    bool any;
    int64_t work;
    rt_status_t st = rt_cpu_pool_reserve(pool, nodes, n_nodes, &any, &work);
    if (st != RT_OK || !any) return st; /* views only: nothing to wake the workers for */
    atomic_store(&pool->error.claimed, 0);
    atomic_store(&pool->counter, 0);
    pool->nodes = nodes; /* published by the generation bump */
    pool->n_nodes = n_nodes;
    const int way = work > 0 ? rt_cpu_pool_choose(pool) : 0;
    pool->n_active = way ? pool->n_threads : 1;
    const double t0 = work > 0 ? rt_cpu_seconds() : 0;
    if (way) rt_cpu_pool_wake(pool, false);
    rt_cpu_run_graph(pool, 0);
    if (atomic_load(&pool->error.claimed))
        return pool->host->set_error(pool->error.status, "cpu: %s", pool->error.message);
    if (work > 0) rt_cpu_pool_learn(pool, way, rt_cpu_seconds() - t0, work);
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
    atomic_init(&pool->spin_limit, RT_CPU_SPIN_MAX);
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
