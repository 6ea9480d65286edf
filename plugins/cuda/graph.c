/* SPDX-License-Identifier: MIT */
/* graph.c: graph_compute for the CUDA plugin. Nodes are checked (ops.c),
 * the queue's scratch is sized for them, and their kernels are enqueued on
 * the queue's stream; graph_compute returns without waiting.
 *
 * CUDA graphs: launching a decode step's hundreds of small kernels one by
 * one costs more CPU time than the GPU spends on them. So each run's key
 * is built (per computing node: op, type, shape, strides, op_params and
 * the data addresses of the node and its sources, which are exactly what
 * the kernels' parameters are made of) and compared with the last one.
 * The second run in a row with the same key is captured into a CUDA graph
 * and launched; later runs with that key replay it without enqueueing a
 * kernel. Any other key runs eagerly. A capture that fails turns capture
 * off for the queue. RT_CUDA_GRAPHS=0 turns it off from the start. */
#include "cuda_impl.h"

#include <string.h>

//===--- keys ---===//

/* What a node contributes to the key. */
typedef struct cu_key_tensor {
    const void *data;
    int32_t type, reserved;
    int64_t ne[RT_MAX_DIMS];
    size_t nb[RT_MAX_DIMS];
} cu_key_tensor_t;

typedef struct cu_key_node {
    int32_t op;
    int32_t params[RT_MAX_OP_PARAMS / 4];
    cu_key_tensor_t t[1 + RT_CU_MAX_SRC]; /* the node, then its sources */
} cu_key_node_t;

static void cu_key_tensor(const rt_tensor_t *t, cu_key_tensor_t *k) {
    if (!t) return;
    k->data = t->data;
    k->type = t->type;
    memcpy(k->ne, t->ne, sizeof k->ne);
    memcpy(k->nb, t->nb, sizeof k->nb);
}

static bool cu_key_reserve(const rt_host_t *host, rt_cu_graph_key_t *k, size_t size) {
    if (size <= k->cap) return true;
    size_t cap = k->cap ? k->cap : 4096;
    while (cap < size) cap *= 2;
    const rt_allocator_t *a = &host->allocator;
    unsigned char *p = a->realloc(a->user_data, k->bytes, k->cap, cap);
    if (!p) return false;
    k->bytes = p;
    k->cap = cap;
    return true;
}

static void cu_key_free(const rt_host_t *host, rt_cu_graph_key_t *k) {
    rt_cu_free(host, k->bytes, k->cap);
    *k = (rt_cu_graph_key_t){ 0 };
}

/* The key of nodes into q->next (the scratch address goes first: the
 * conversions for cuBLAS write there). */
static bool cu_key_build(rt_cu_queue_t *q, rt_tensor_t *const *nodes, int32_t n_nodes) {
    rt_cu_graph_key_t *k = &q->next;
    const size_t max = sizeof q->scratch + (size_t)n_nodes * sizeof(cu_key_node_t);
    if (!cu_key_reserve(q->dev->host, k, max)) return false;
    memset(k->bytes, 0, max);
    memcpy(k->bytes, &q->scratch, sizeof q->scratch);
    k->size = sizeof q->scratch;
    for (int32_t i = 0; i < n_nodes; i++) {
        const rt_tensor_t *n = nodes[i];
        if (!rt_cu_node_computes(n)) continue;
        cu_key_node_t kn;
        memset(&kn, 0, sizeof kn);
        kn.op = n->op;
        memcpy(kn.params, n->op_params, sizeof kn.params);
        cu_key_tensor(n, &kn.t[0]);
        for (int s = 0; s < RT_CU_MAX_SRC; s++) cu_key_tensor(n->src[s], &kn.t[1 + s]);
        memcpy(k->bytes + k->size, &kn, sizeof kn);
        k->size += sizeof kn;
    }
    return true;
}

static bool cu_key_equal(const rt_cu_graph_key_t *a, const rt_cu_graph_key_t *b) {
    return a->size == b->size && a->size > 0 && memcmp(a->bytes, b->bytes, a->size) == 0;
}

static void cu_key_swap(rt_cu_graph_key_t *a, rt_cu_graph_key_t *b) {
    const rt_cu_graph_key_t t = *a;
    *a = *b;
    *b = t;
}

void rt_cu_graph_release(rt_cu_queue_t *q) {
    if (q->exec) cudaGraphExecDestroy(q->exec);
    q->exec = NULL;
    (void)cudaGetLastError();
    const rt_host_t *host = q->dev->host;
    cu_key_free(host, &q->captured);
    cu_key_free(host, &q->seen);
    cu_key_free(host, &q->next);
}

//===--- running ---===//

static rt_status_t cu_nodes_run(rt_cu_queue_t *q, rt_tensor_t *const *nodes, int32_t n_nodes) {
    rt_status_t st = RT_OK;
    for (int32_t i = 0; st == RT_OK && i < n_nodes; i++)
        if (rt_cu_node_computes(nodes[i])) st = rt_cu_node_run(q, nodes[i]);
    return st;
}

/* Captures the nodes into q->exec (updated in place when the new graph has
 * the old one's shape, which is cheaper than instantiating). On failure
 * nothing is left captured and the stream is usable. */
static rt_status_t cu_capture(rt_cu_queue_t *q, rt_tensor_t *const *nodes, int32_t n_nodes) {
    const rt_host_t *host = q->dev->host;
    cudaGraph_t graph = NULL;
    rt_status_t st = RT_CU_TRY(host, cudaStreamBeginCapture(q->stream, cudaStreamCaptureModeThreadLocal));
    if (st != RT_OK) return st;
    st = cu_nodes_run(q, nodes, n_nodes);
    const rt_status_t end = RT_CU_TRY(host, cudaStreamEndCapture(q->stream, &graph));
    if (st == RT_OK) st = end;
    if (st == RT_OK && q->exec) {
        cudaGraphExecUpdateResultInfo info;
        if (cudaGraphExecUpdate(q->exec, graph, &info) != cudaSuccess) {
            (void)cudaGetLastError();
            cudaGraphExecDestroy(q->exec);
            q->exec = NULL;
        }
    }
    if (st == RT_OK && !q->exec) st = RT_CU_TRY(host, cudaGraphInstantiate(&q->exec, graph, 0));
    if (graph) cudaGraphDestroy(graph);
    if (st != RT_OK && q->exec) {
        cudaGraphExecDestroy(q->exec);
        q->exec = NULL;
    }
    return st;
}

rt_status_t rt_cu_graph_compute(void *queue, rt_tensor_t *const *nodes, int32_t n_nodes) {
    rt_cu_queue_t *q = queue;
    if (!q) return RT_ERR_MISUSE;
    size_t scratch;
    rt_status_t st = rt_cu_graph_check(q, nodes, n_nodes, &scratch);
    if (st == RT_OK) st = rt_cu_device_use(q->dev);
    if (st == RT_OK) st = rt_cu_queue_scratch(q, scratch);
    if (st != RT_OK) return st;
    if (!q->graphs || !cu_key_build(q, nodes, n_nodes)) return cu_nodes_run(q, nodes, n_nodes);
    if (q->exec && cu_key_equal(&q->next, &q->captured))
        return RT_CU_TRY(q->dev->host, cudaGraphLaunch(q->exec, q->stream));
    if (!cu_key_equal(&q->next, &q->seen)) {
        cu_key_swap(&q->next, &q->seen);
        return cu_nodes_run(q, nodes, n_nodes);
    }
    /* Second run with this key: capture it. When capturing fails (a driver
     * or library that cannot be captured) the queue stops trying. */
    if (cu_capture(q, nodes, n_nodes) != RT_OK) {
        (void)cudaGetLastError();
        q->dev->host->log(RT_LOG_WARN, "cuda: CUDA%u: graph capture failed, running eagerly "
                          "from now on", q->dev->index);
        q->graphs = false;
        q->captured.size = 0;
        return cu_nodes_run(q, nodes, n_nodes);
    }
    cu_key_swap(&q->next, &q->captured);
    return RT_CU_TRY(q->dev->host, cudaGraphLaunch(q->exec, q->stream));
}
