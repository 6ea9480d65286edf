/* SPDX-License-Identifier: MIT */
/* ops.c: which nodes the CUDA plugin runs and how a node becomes a kernel
 * launch. The dispatch table maps each op to its support test and its
 * launcher (kernels/kernels.h); supports_op answers from it, with the same
 * rules as the CPU plugin (types F32, F16 and BF16 wherever the CPU takes
 * them, any strides, the same broadcasts). Before a graph runs, every node
 * is checked (supported, and every tensor in this device's memory, since a
 * kernel touching any other address would take the whole CUDA context
 * down) and the scratch the largest MUL_MAT or FLASH_ATTN needs is sized. */
#include "cuda_impl.h"

#include <string.h>

//===--- shapes and types ---===//

static int64_t cu_nelements(const rt_tensor_t *t) {
    return t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
}

static bool cu_same_shape(const rt_tensor_t *a, const rt_tensor_t *b) {
    return a->ne[0] == b->ne[0] && a->ne[1] == b->ne[1] && a->ne[2] == b->ne[2] &&
           a->ne[3] == b->ne[3];
}

static bool cu_is_float(rt_type_t t) {
    return t == RT_TYPE_F32 || t == RT_TYPE_F16 || t == RT_TYPE_BF16;
}

static bool cu_is_quant(rt_type_t t) { return rt_cu_block_elems(t) > 0; }

/* The quantised types a CPY may write (the reference quantisers in copy.cu). */
static bool cu_quantizes_to(rt_type_t t) { return t == RT_TYPE_Q8_0 || t == RT_TYPE_Q4_0; }

/* Types the kernels can address, with non-negative shapes. */
static bool cu_tensor_sane(const rt_tensor_t *t) {
    for (int i = 0; i < RT_MAX_DIMS; i++)
        if (t->ne[i] < 0) return false;
    return cu_is_float(t->type) || cu_is_quant(t->type) || t->type == RT_TYPE_I32;
}

/* Quantised data is only addressable as whole, adjacent blocks of a row. */
static bool cu_blocks_ok(const rt_tensor_t *t) {
    if (!cu_is_quant(t->type)) return true;
    return t->nb[0] == (size_t)rt_cu_block_bytes(t->type) && t->ne[0] % rt_cu_block_elems(t->type) == 0;
}

//===--- support ---===//

static bool cu_supports_copy(const rt_tensor_t *n) {
    const rt_tensor_t *a = n->src[0];
    if (!a || cu_nelements(a) != cu_nelements(n)) return false;
    /* CPY writes into the node, a view of b; a cast (rt_cast) has no b. */
    const rt_tensor_t *b = n->op == RT_OP_CPY ? n->src[1] : NULL;
    if (b && (b->type != n->type || !cu_same_shape(b, n))) return false;
    if (!cu_blocks_ok(a) || !cu_blocks_ok(n)) return false;
    if (a->type == n->type) return true;
    return cu_is_float(a->type) && (cu_is_float(n->type) || cu_quantizes_to(n->type));
}

static bool cu_supports_get_rows(const rt_tensor_t *n) {
    const rt_tensor_t *a = n->src[0], *b = n->src[1];
    if (!a || !b || b->type != RT_TYPE_I32 || n->type != RT_TYPE_F32) return false;
    if (a->type == RT_TYPE_I32 || !cu_blocks_ok(a)) return false;
    return b->ne[1] == a->ne[2] && b->ne[2] == a->ne[3] && b->ne[3] == 1 && n->ne[0] == a->ne[0] &&
           n->ne[1] == b->ne[0] && n->ne[2] == a->ne[2] && n->ne[3] == a->ne[3];
}

/* The node is a view of a (a's type, shape and strides), rows contiguous
 * as the contract requires; b F32 and c I32 with any strides. */
static bool cu_supports_set_rows(const rt_tensor_t *n) {
    const rt_tensor_t *a = n->src[0], *b = n->src[1], *c = n->src[2];
    if (!a || !b || !c || b->type != RT_TYPE_F32 || c->type != RT_TYPE_I32) return false;
    if (!cu_is_float(a->type) || n->type != a->type || !cu_same_shape(a, n)) return false;
    return b->ne[0] == a->ne[0] && b->ne[2] == a->ne[2] &&
           b->ne[3] == a->ne[3] && c->ne[0] == b->ne[1] && c->ne[1] == b->ne[2] &&
           c->ne[2] == b->ne[3] && c->ne[3] == 1;
}

static bool cu_supports_unary(const rt_tensor_t *n) {
    const rt_tensor_t *a = n->src[0];
    return a && cu_is_float(a->type) && cu_is_float(n->type) && cu_same_shape(a, n);
}

static bool cu_can_repeat(const rt_tensor_t *b, const rt_tensor_t *a) {
    for (int i = 0; i < RT_MAX_DIMS; i++)
        if (b->ne[i] == 0 ? a->ne[i] != 0 : a->ne[i] % b->ne[i] != 0) return false;
    return true;
}

static bool cu_supports_binary(const rt_tensor_t *n) {
    const rt_tensor_t *b = n->src[1];
    if (!cu_supports_unary(n) || !b || !cu_is_float(b->type)) return false;
    return n->op == RT_OP_SWIGLU ? cu_same_shape(n->src[0], b) : cu_can_repeat(b, n->src[0]);
}

static bool cu_supports_soft_max(const rt_tensor_t *n) {
    const rt_tensor_t *a = n->src[0], *m = n->src[1];
    if (!cu_supports_unary(n)) return false;
    if (!m) return true;
    return (m->type == RT_TYPE_F32 || m->type == RT_TYPE_F16) && m->ne[0] == a->ne[0] &&
           m->ne[1] >= a->ne[1] && m->ne[2] > 0 && m->ne[3] > 0 && a->ne[2] % m->ne[2] == 0 &&
           a->ne[3] % m->ne[3] == 0;
}

static bool cu_supports_argmax(const rt_tensor_t *n) {
    const rt_tensor_t *a = n->src[0];
    return a && cu_is_float(a->type) && n->type == RT_TYPE_I32 && n->ne[0] == a->ne[1] &&
           n->ne[1] == a->ne[2] && n->ne[2] == a->ne[3] && n->ne[3] == 1;
}

static bool cu_supports_rope(const rt_tensor_t *n) {
    const rt_tensor_t *a = n->src[0], *b = n->src[1];
    if (!cu_supports_unary(n) || !b || b->type != RT_TYPE_I32 || b->ne[0] != a->ne[2]) return false;
    const int32_t n_dims = n->op_params[0], mode = n->op_params[1];
    return n_dims >= 0 && n_dims % 2 == 0 && n_dims <= a->ne[0] &&
           (mode == RT_ROPE_MODE_NORMAL || mode == RT_ROPE_MODE_NEOX);
}

//===--- dispatch ---===//

typedef cudaError_t (*cu_launch_fn)(const rt_cu_node_t *n, cudaStream_t stream);
typedef rt_status_t (*cu_run_fn)(rt_cu_queue_t *q, const rt_tensor_t *node, const rt_cu_node_t *n);
typedef size_t (*cu_scratch_fn)(const rt_cu_device_t *dev, const rt_tensor_t *node);

/* An op is one kernel family's launcher, or (MUL_MAT, FLASH_ATTN) a
 * planner that picks its kernels and the queue scratch they need. */
typedef struct cu_op {
    const char *name;
    bool (*supports)(const rt_tensor_t *node);
    cu_launch_fn launch;         /* NULL when run is set */
    cu_run_fn run;
    cu_scratch_fn scratch;       /* bytes of queue scratch the node needs */
} cu_op_t;

static const cu_op_t cu_ops[] = {
    [RT_OP_CONT] = { "CONT", cu_supports_copy, rt_cu_launch_copy },
    [RT_OP_CPY] = { "CPY", cu_supports_copy, rt_cu_launch_copy },
    [RT_OP_GET_ROWS] = { "GET_ROWS", cu_supports_get_rows, rt_cu_launch_get_rows },
    [RT_OP_ADD] = { "ADD", cu_supports_binary, rt_cu_launch_binary },
    [RT_OP_SUB] = { "SUB", cu_supports_binary, rt_cu_launch_binary },
    [RT_OP_MUL] = { "MUL", cu_supports_binary, rt_cu_launch_binary },
    [RT_OP_DIV] = { "DIV", cu_supports_binary, rt_cu_launch_binary },
    [RT_OP_SCALE] = { "SCALE", cu_supports_unary, rt_cu_launch_unary },
    [RT_OP_NORM] = { "NORM", cu_supports_unary, rt_cu_launch_norm },
    [RT_OP_RMS_NORM] = { "RMS_NORM", cu_supports_unary, rt_cu_launch_norm },
    [RT_OP_MUL_MAT] = { "MUL_MAT", rt_cu_mul_mat_supported, NULL, rt_cu_mul_mat_run, rt_cu_mul_mat_scratch },
    [RT_OP_SOFT_MAX] = { "SOFT_MAX", cu_supports_soft_max, rt_cu_launch_soft_max },
    [RT_OP_DIAG_MASK_INF] = { "DIAG_MASK_INF", cu_supports_unary, rt_cu_launch_unary },
    [RT_OP_GELU] = { "GELU", cu_supports_unary, rt_cu_launch_unary },
    [RT_OP_SILU] = { "SILU", cu_supports_unary, rt_cu_launch_unary },
    [RT_OP_SWIGLU] = { "SWIGLU", cu_supports_binary, rt_cu_launch_binary },
    [RT_OP_ROPE] = { "ROPE", cu_supports_rope, rt_cu_launch_rope },
    [RT_OP_ARGMAX] = { "ARGMAX", cu_supports_argmax, rt_cu_launch_argmax },
    [RT_OP_SET_ROWS] = { "SET_ROWS", cu_supports_set_rows, rt_cu_launch_set_rows },
    [RT_OP_TANH] = { "TANH", cu_supports_unary, rt_cu_launch_unary },
    [RT_OP_FLASH_ATTN] = { "FLASH_ATTN", rt_cu_flash_attn_supported, NULL, rt_cu_flash_attn_run,
                           rt_cu_flash_attn_scratch },
};

static const cu_op_t *cu_op(rt_op_t op) {
    if (op < 0 || (size_t)op >= sizeof cu_ops / sizeof cu_ops[0]) return NULL;
    return cu_ops[op].supports ? &cu_ops[op] : NULL;
}

bool rt_cu_node_computes(const rt_tensor_t *node) {
    return rt_op_computes(node->op) && cu_nelements(node) > 0;
}

bool rt_cu_supports_op(void *device, const rt_tensor_t *node) {
    const rt_cu_device_t *dev = device;
    if (!node || !dev) return false;
    if (!rt_abi_defines_node(rt_plugin_abi(dev->host), node)) return false; /* rt_plugin.h */
    if (!rt_op_computes(node->op)) return true;
    const cu_op_t *op = cu_op(node->op);
    if (!op || !cu_tensor_sane(node)) return false;
    for (int i = 0; i < RT_MAX_SRC; i++)
        if (node->src[i] && !cu_tensor_sane(node->src[i])) return false;
    return op->supports(node);
}

//===--- running a node ---===//

void rt_cu_tensor_pack(const rt_tensor_t *t, rt_cu_tensor_t *out) {
    memset(out, 0, sizeof *out);
    if (!t) return;
    out->data = t->data;
    out->type = t->type;
    for (int i = 0; i < RT_MAX_DIMS; i++) {
        out->ne[i] = t->ne[i];
        out->nb[i] = (int64_t)t->nb[i];
    }
}

rt_status_t rt_cu_node_run(rt_cu_queue_t *q, const rt_tensor_t *node) {
    rt_cu_node_t n;
    memset(&n, 0, sizeof n);
    n.op = node->op;
    memcpy(n.params, node->op_params, sizeof n.params);
    rt_cu_tensor_pack(node, &n.dst);
    for (int i = 0; i < RT_CU_MAX_SRC; i++) rt_cu_tensor_pack(node->src[i], &n.src[i]);
    const cu_op_t *op = cu_op(node->op);
    if (op->run) return op->run(q, node, &n);
    const cudaError_t e = op->launch(&n, q->stream);
    if (e == cudaSuccess) return RT_OK;
    return q->dev->host->set_error(RT_ERR_DEVICE, "cuda: node '%s' (%s): %s", node->name, op->name,
                                   cudaGetErrorString(e));
}

//===--- checking a graph ---===//

/* In this device's memory (or host memory it shares, on an integrated GPU). */
static bool cu_tensor_here(const rt_cu_device_t *dev, const rt_tensor_t *t) {
    const rt_cu_buffer_t *b = rt_cu_buffer_of(dev->host, t);
    if (!b || b->dev != dev || !t->data) return false;
    return b->kind == RT_CU_MEM_DEVICE || dev->integrated;
}

static rt_status_t cu_node_check(const rt_cu_device_t *dev, int32_t i, const rt_tensor_t *n) {
    const rt_host_t *host = dev->host;
    if (!n) return host->set_error(RT_ERR_INVALID_ARGUMENT, "cuda: node %d is NULL", (int)i);
    if (!rt_cu_node_computes(n)) return RT_OK;
    if (!rt_cu_supports_op((void *)dev, n))
        return host->set_error(RT_ERR_UNSUPPORTED, "cuda: node %d '%s' (op %d, type %d): "
                               "unsupported op, types or layout", (int)i, n->name, (int)n->op,
                               (int)n->type);
    for (int s = -1; s < RT_MAX_SRC; s++) {
        const rt_tensor_t *t = s < 0 ? n : n->src[s];
        if (t && !cu_tensor_here(dev, t))
            return host->set_error(RT_ERR_INVALID_ARGUMENT, "cuda: node %d '%s': tensor '%s' is "
                                   "not in CUDA%u's memory", (int)i, n->name, t->name, dev->index);
    }
    return RT_OK;
}

rt_status_t rt_cu_graph_check(rt_cu_queue_t *q, rt_tensor_t *const *nodes, int32_t n_nodes,
                              size_t *out_scratch) {
    *out_scratch = 0;
    if (n_nodes < 0 || (n_nodes > 0 && !nodes))
        return q->dev->host->set_error(RT_ERR_INVALID_ARGUMENT, "cuda: bad node list (%d nodes)",
                                       (int)n_nodes);
    for (int32_t i = 0; i < n_nodes; i++) {
        const rt_status_t st = cu_node_check(q->dev, i, nodes[i]);
        if (st != RT_OK) return st;
        const cu_op_t *op = cu_op(nodes[i]->op);
        if (op && op->scratch && rt_cu_node_computes(nodes[i])) {
            const size_t need = op->scratch(q->dev, nodes[i]);
            if (need > *out_scratch) *out_scratch = need;
        }
    }
    return RT_OK;
}
