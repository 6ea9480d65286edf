/* SPDX-License-Identifier: MIT */
/* ops_flash_attn.c: how the CUDA plugin runs FLASH_ATTN (abi/rt_tensor.h
 * has the contract; kernels/flash_attn.cu the kernels). Which nodes it
 * takes: q F32, k and v F32 or F16 (one type) with contiguous rows and any
 * other strides, an optional F32/F16 mask {n_kv, >= N, 1, 1}, grouped
 * queries, head sizes up to RT_CU_FA_MAX_DIM. The plan (kernels.h) is made
 * once for the scratch size before the graph runs and again, identically,
 * when the node is launched, so that the partials of a split key range
 * land in scratch that was sized for them and nothing is allocated while
 * a graph is captured. */
#include "cuda_impl.h"

static size_t cu_fa_elem(rt_type_t t) { return t == RT_TYPE_F32 ? 4 : t == RT_TYPE_F16 ? 2 : 0; }

static bool cu_fa_rows_dense(const rt_tensor_t *t) {
    return cu_fa_elem(t->type) != 0 && t->nb[0] == cu_fa_elem(t->type);
}

static bool cu_fa_mask_ok(const rt_tensor_t *m, const rt_tensor_t *q, const rt_tensor_t *k) {
    if (!m) return true;
    return cu_fa_rows_dense(m) && m->ne[0] == k->ne[1] && m->ne[1] >= q->ne[1] && m->ne[2] == 1 &&
           m->ne[3] == 1;
}

bool rt_cu_flash_attn_supported(const rt_tensor_t *n) {
    const rt_tensor_t *q = n->src[0], *k = n->src[1], *v = n->src[2], *m = n->src[3];
    if (!q || !k || !v || q->type != RT_TYPE_F32 || k->type != v->type || n->type != RT_TYPE_F32) return false;
    if (!cu_fa_rows_dense(q) || !cu_fa_rows_dense(k) || !cu_fa_rows_dense(v) || n->nb[0] != sizeof(float))
        return false;
    if (q->ne[0] != k->ne[0] || k->ne[1] != v->ne[1] || k->ne[2] != v->ne[2] || q->ne[3] != k->ne[3] ||
        k->ne[3] != v->ne[3] || k->ne[2] <= 0 || q->ne[2] % k->ne[2] != 0)
        return false;
    if (n->ne[0] != v->ne[0] || n->ne[1] != q->ne[2] || n->ne[2] != q->ne[1] || n->ne[3] != q->ne[3]) return false;
    if (q->ne[0] > RT_CU_FA_MAX_DIM || v->ne[0] > RT_CU_FA_MAX_DIM || k->ne[2] * k->ne[3] > 65535) return false;
    return cu_fa_mask_ok(m, q, k);
}

static rt_cu_fa_plan_t cu_fa_plan(const rt_cu_device_t *dev, const rt_tensor_t *n) {
    const rt_tensor_t *q = n->src[0], *k = n->src[1], *v = n->src[2];
    return rt_cu_fa_plan(q->ne[1], q->ne[2], k->ne[2], q->ne[3], k->ne[1], v->ne[0], dev->n_sm);
}

size_t rt_cu_flash_attn_scratch(const rt_cu_device_t *dev, const rt_tensor_t *node) {
    return cu_fa_plan(dev, node).scratch;
}

rt_status_t rt_cu_flash_attn_run(rt_cu_queue_t *q, const rt_tensor_t *node, const rt_cu_node_t *n) {
    const rt_cu_fa_plan_t p = cu_fa_plan(q->dev, node);
    if (p.scratch > q->scratch_size)
        return q->dev->host->set_error(RT_ERR_INTERNAL, "cuda: FLASH_ATTN '%s': scratch of %zu bytes, "
                                       "%zu needed", node->name, q->scratch_size, p.scratch);
    const cudaError_t e = rt_cu_launch_flash_attn(n, &p, p.scratch ? (float *)q->scratch : NULL, q->stream);
    if (e == cudaSuccess) return RT_OK;
    return q->dev->host->set_error(RT_ERR_DEVICE, "cuda: node '%s' (FLASH_ATTN, %d range(s)): %s", node->name,
                                   p.n_split, cudaGetErrorString(e));
}
