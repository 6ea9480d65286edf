/* SPDX-License-Identifier: MIT */
/* ops_chunk.c: weights larger than one binding. A descriptor spans at most
 * maxStorageBufferRange bytes (128 MiB on lavapipe, some GPUs 1-2 GiB),
 * less than a large vocabulary's embedding or output matrix (Gemma 3's
 * 262144 x 640 Q8_0 is 178 MB). A MUL_MAT or GET_ROWS whose 2-D a does not
 * fit is recorded as several dispatches, each over a run of a's rows that
 * does: MUL_MAT's chunk computes the matching rows of c (its c is a view of
 * those rows, its a a view of those rows of a); GET_ROWS's chunk writes
 * the output rows whose index falls in its run, the first chunk also the
 * zeros of indices out of range. A GET_ROWS chunk carries its first row
 * and a's whole row count in op_params[0] and [1] (GET_ROWS has no
 * parameters of its own; zero there means "not a chunk"). A FLASH_ATTN
 * whose keys are split over workgroups is two dispatches the same way:
 * its pass in op_params[2] (1 the partials, 2 their merge; 0 unsplit),
 * and so is a mat-vec that makes b's levels first (1 the levels, 2 the
 * product, whose chunks follow; rt_vk_mv_levels). */
#include "vk_impl.h"

uint64_t rt_vk_chunk_rows(const rt_vk_device_t *dev, const rt_tensor_t *node) {
    const rt_tensor_t *a = node->src[0];
    if ((node->op != RT_OP_MUL_MAT && node->op != RT_OP_GET_ROWS) || !a) return 0;
    if (dev->host->tensor_nbytes(a) <= dev->max_binding) return 0;
    if (a->ne[2] != 1 || a->ne[3] != 1 || a->nb[1] == 0 || a->nb[1] > dev->max_binding) return 0;
    return dev->max_binding / a->nb[1];
}

uint32_t rt_vk_node_dispatches(const rt_vk_device_t *dev, const rt_tensor_t *node) {
    if (!rt_op_computes(node->op)) return 0;
    for (int i = 0; i < RT_MAX_DIMS; i++)
        if (node->ne[i] == 0) return 0;
    if (node->op == RT_OP_FLASH_ATTN) return rt_vk_fa_splits(dev, node) > 1 ? 2 : 1;
    const uint64_t rows = rt_vk_chunk_rows(dev, node);
    const uint32_t n = rows ? (uint32_t)(((uint64_t)node->src[0]->ne[1] + rows - 1) / rows) : 1;
    return n + rt_vk_mv_levels(dev, node);
}

const rt_tensor_t *rt_vk_node_chunk(const rt_vk_device_t *dev, const rt_tensor_t *node,
                                    uint32_t chunk, rt_tensor_t views[2]) {
    if (node->op == RT_OP_FLASH_ATTN && rt_vk_fa_splits(dev, node) > 1) {
        views[1] = *node;
        views[1].op_params[2] = (int32_t)(1 + chunk);
        return &views[1];
    }
    /* b's levels first (over chunk 0's rows of a, which only give the
     * shader a's type), then the product's chunks */
    const bool levels = rt_vk_mv_levels(dev, node);
    const int32_t pass = !levels ? 0 : chunk == 0 ? 1 : 2;
    if (levels && chunk > 0) chunk--;
    const uint64_t rows = rt_vk_chunk_rows(dev, node);
    if (rows == 0 && !levels) return node;
    views[1] = *node;
    views[1].op_params[2] = pass;
    if (rows == 0) return &views[1];
    const rt_tensor_t *a = node->src[0];
    const int64_t r0 = (int64_t)(chunk * rows);
    const int64_t r1 = r0 + (int64_t)rows < a->ne[1] ? r0 + (int64_t)rows : a->ne[1];
    views[0] = *a;
    views[0].data = (char *)a->data + (size_t)r0 * a->nb[1];
    views[0].ne[1] = r1 - r0;
    views[1].src[0] = &views[0];
    if (node->op == RT_OP_MUL_MAT) {
        views[1].data = (char *)node->data + (size_t)r0 * node->nb[0];
        views[1].ne[0] = r1 - r0;
    } else {
        views[1].op_params[0] = (int32_t)r0;
        views[1].op_params[1] = (int32_t)a->ne[1];
    }
    return &views[1];
}
