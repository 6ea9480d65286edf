/* SPDX-License-Identifier: MIT */
/* ops_build.c: which nodes the Vulkan plugin runs and how. supports_op
 * says yes exactly for the types, shapes and strides the shaders handle
 * (everything else falls back to another device), and one builder per
 * kernel family turns a node into an rt_vk_dispatch_t: shader, op, bound
 * tensors, push constants (shapes in elements, strides in bytes, as the
 * tensor header has them) and the number of workgroups. ops.c records it. */
#include "vk_impl.h"

#include <string.h>

#define VK_WG 128u          /* elementwise kernels */
#define VK_ROW_WG_MAX 256u  /* row kernels: reduce.glsl's RT_REDUCE_MAX */
#define VK_MM_TILE_MAX 8u   /* mul_mat.comp's NT_MAX: more columns go to mul_mm.comp */
#define VK_MM_BM 64u        /* mul_mm.comp's output tile */
#define VK_MM_BN 64u
#define VK_DQ_GROUP 16u     /* elements dequant.glsl decodes at a time */

//===--- types and tensors ---===//

/* The quantised types the shaders decode (dequant.glsl). Every block size
 * is even, so all are addressed in 16-bit units. */
static bool vk_is_quant(rt_type_t t) {
    switch (t) {
    case RT_TYPE_Q4_0: case RT_TYPE_Q4_1: case RT_TYPE_Q5_0: case RT_TYPE_Q5_1:
    case RT_TYPE_Q8_0: case RT_TYPE_Q2_K: case RT_TYPE_Q3_K: case RT_TYPE_Q4_K:
    case RT_TYPE_Q5_K: case RT_TYPE_Q6_K: case RT_TYPE_IQ4_NL: case RT_TYPE_IQ4_XS:
        return true;
    default: return false;
    }
}

/* Bytes the shaders address the type in (its offsets and strides must be
 * multiples of it); 0 for a type they cannot read. */
uint32_t rt_vk_type_unit(rt_type_t type) {
    switch (type) {
    case RT_TYPE_F32: case RT_TYPE_I32: return 4;
    case RT_TYPE_F16: case RT_TYPE_BF16: return 2;
    default: return vk_is_quant(type) ? 2 : 0;
    }
}

/* The quantised types in blocks of 32 (the mat-vec's integer dots, b
 * rounded per block). */
static bool vk_is_block32(rt_type_t t) {
    return t == RT_TYPE_Q4_0 || t == RT_TYPE_Q4_1 || t == RT_TYPE_Q5_0 || t == RT_TYPE_Q5_1 ||
           t == RT_TYPE_Q8_0 || t == RT_TYPE_IQ4_NL;
}

static bool vk_is_float(rt_type_t t) { return t == RT_TYPE_F32 || t == RT_TYPE_F16 || t == RT_TYPE_BF16; }
static bool vk_is_f32_f16(rt_type_t t) { return t == RT_TYPE_F32 || t == RT_TYPE_F16; }

static int64_t vk_nelements(const rt_tensor_t *t) { return t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]; }
static uint64_t vk_nrows(const rt_tensor_t *t) { return (uint64_t)(t->ne[1] * t->ne[2] * t->ne[3]); }

static bool vk_same_shape(const rt_tensor_t *a, const rt_tensor_t *b) {
    return memcmp(a->ne, b->ne, sizeof a->ne) == 0;
}

/* Row-contiguous: element (or block) i0 at i0 * its size. */
static bool vk_rows_packed(const rt_vk_device_t *dev, const rt_tensor_t *t) {
    const rt_type_traits_t *tr = dev->host->type_traits(t->type);
    return tr && t->nb[0] == tr->type_size;
}

/* A tensor the shaders can address: 32-bit element counts, strides that
 * are multiples of the element's unit, and (unless split, ops_chunk.c) a
 * span of bytes one binding holds. */
static bool vk_tensor_ok(const rt_vk_device_t *dev, const rt_tensor_t *t, bool split) {
    const uint32_t unit = rt_vk_type_unit(t->type);
    if (!unit) return false;
    for (int i = 0; i < RT_MAX_DIMS; i++) {
        if (t->ne[i] < 0 || t->ne[i] > INT32_MAX) return false;
        if (t->ne[i] > 1 && t->nb[i] % unit != 0) return false;
    }
    return vk_nelements(t) <= INT32_MAX && (split || dev->host->tensor_nbytes(t) <= dev->max_binding);
}

//===--- supports_op, per op ---===//

static bool vk_supports_copy(const rt_vk_device_t *dev, const rt_tensor_t *n, const rt_tensor_t *a) {
    if (vk_is_quant(a->type)) /* copy_blocks.comp */
        return n->type == a->type && vk_same_shape(a, n) && vk_rows_packed(dev, a) &&
               vk_rows_packed(dev, n);
    if (vk_nelements(a) != vk_nelements(n) || !vk_is_float(a->type)) return false;
    if (n->op == RT_OP_CONT) return n->type == a->type;
    if (vk_is_float(n->type)) return true;
    /* quantize.comp writes the two types the KV cache and tests use */
    const bool q = n->type == RT_TYPE_Q8_0 || n->type == RT_TYPE_Q4_0;
    return a->type == RT_TYPE_F32 && q && n->ne[0] % 32 == 0 &&
           dev->host->tensor_is_contiguous(n);
}

static bool vk_supports_get_rows(const rt_vk_device_t *dev, const rt_tensor_t *n,
                                 const rt_tensor_t *a, const rt_tensor_t *b) {
    return b && (vk_is_float(a->type) || vk_is_quant(a->type)) && vk_rows_packed(dev, a) &&
           b->type == RT_TYPE_I32 && n->type == RT_TYPE_F32 && b->ne[1] == a->ne[2] &&
           b->ne[2] == a->ne[3] && b->ne[3] == 1 && n->ne[0] == a->ne[0] && n->ne[1] == b->ne[0] &&
           n->ne[2] == b->ne[1] && n->ne[3] == b->ne[2];
}

/* The node is a view of a (its type, shape and strides are a's, any of
 * them: a transposed a takes columns); b F32, c I32, with any strides
 * vk_tensor_ok accepts. */
static bool vk_supports_set_rows(const rt_vk_device_t *dev, const rt_tensor_t *n,
                                 const rt_tensor_t *a, const rt_tensor_t *b, const rt_tensor_t *c) {
    return b && c && vk_is_float(a->type) && n->type == a->type && vk_same_shape(a, n) &&
           vk_tensor_ok(dev, n, false) && b->type == RT_TYPE_F32 && c->type == RT_TYPE_I32 &&
           b->ne[0] == a->ne[0] && b->ne[2] == a->ne[2] && b->ne[3] == a->ne[3] &&
           c->ne[0] == b->ne[1] && c->ne[1] == b->ne[2] && c->ne[2] == b->ne[3] && c->ne[3] == 1;
}

static bool vk_supports_binary(const rt_tensor_t *n, const rt_tensor_t *a, const rt_tensor_t *b) {
    if (!b || !vk_is_f32_f16(n->type) || a->type != n->type || b->type != n->type ||
        !vk_same_shape(a, n))
        return false;
    if (n->op == RT_OP_SWIGLU) return vk_same_shape(a, b);
    for (int i = 0; i < RT_MAX_DIMS; i++)
        if (b->ne[i] <= 0 || a->ne[i] % b->ne[i] != 0) return false;
    return true;
}

static bool vk_supports_mul_mat(const rt_vk_device_t *dev, const rt_tensor_t *n, const rt_tensor_t *a) {
    return rt_mul_mat_shapes_ok(n) && (vk_is_float(a->type) || vk_is_quant(a->type)) && vk_rows_packed(dev, a);
}

static bool vk_supports_soft_max(const rt_tensor_t *n, const rt_tensor_t *a, const rt_tensor_t *m) {
    if (a->type != RT_TYPE_F32 || n->type != a->type || !vk_same_shape(a, n)) return false;
    return !m || (vk_is_f32_f16(m->type) && m->ne[0] == a->ne[0] && m->ne[1] >= a->ne[1] &&
                  m->ne[2] > 0 && m->ne[3] > 0);
}

static bool vk_supports_rope(const rt_tensor_t *n, const rt_tensor_t *a, const rt_tensor_t *b) {
    const int32_t n_dims = n->op_params[0], mode = n->op_params[1];
    return b && vk_is_f32_f16(a->type) && n->type == a->type && vk_same_shape(a, n) &&
           b->type == RT_TYPE_I32 && b->ne[0] == a->ne[2] && n_dims >= 0 && n_dims % 2 == 0 &&
           n_dims <= a->ne[0] && (mode == RT_ROPE_MODE_NORMAL || mode == RT_ROPE_MODE_NEOX);
}

//===--- flash attention's tiles ---===//

/* flash_attn.comp's shape for one node: workgroup, queries and keys per
 * tile. */
typedef struct vk_fa_tiles {
    uint32_t wg, br, bc;
} vk_fa_tiles_t;

#define VK_FA_OPT_MAX 32u /* output elements an invocation holds in registers */

/* flash_attn.comp's shared arrays, in bytes: the query tile, the scores,
 * the K or V tile (staged for br > 1 only), three floats per row, two
 * words per invocation, and for br = 1 the key groups' output rows (vw
 * cache elements per 16 bytes). */
static uint64_t vk_fa_shared(const vk_fa_tiles_t *t, uint64_t d, uint64_t dv, uint64_t vw) {
    const uint64_t dmax = d > dv ? d : dv, ngv = (dv + vw - 1) / vw;
    const uint64_t kv = t->br > 1 ? t->bc * (dmax + 1) : 1;
    const uint64_t red = t->br > 1 ? 1 : t->wg / ngv * ngv * vw;
    return 4 * (t->br * d + t->br * t->bc + kv + 3 * t->br + 2 * (uint64_t)t->wg + red);
}

/* The device's tiles (vk_tuning_flash_attn), halved, keys first, until the
 * shared memory fits the head sizes; false when even a single query over
 * 8 keys does not (a head of several thousand), or when the device has no
 * kernel (no subgroup arithmetic). One query (decode) takes the tile of
 * one row, whose K and V are read in place. */
static bool vk_fa_tiles(const rt_vk_device_t *dev, const rt_tensor_t *n, vk_fa_tiles_t *t) {
    const rt_vk_tuning_t *tu = &dev->tune;
    const uint64_t d = (uint64_t)n->src[0]->ne[0], dv = (uint64_t)n->ne[0];
    const uint64_t vw = 16 / rt_vk_type_unit(n->src[1]->type);
    if (tu->fa_wg == 0) return false;
    const bool one = n->ne[2] == 1;
    *t = (vk_fa_tiles_t){ tu->fa_wg, one ? 1 : tu->fa_br, one ? tu->fa_bc1 : tu->fa_bc };
    while (t->br > 1 && t->br * dv > VK_FA_OPT_MAX * t->wg) t->br /= 2;
    const uint64_t limit = dev->limits.maxComputeSharedMemorySize;
    while (vk_fa_shared(t, d, dv, vw) > limit && (t->bc > 8 || t->br > 1)) {
        if (t->bc > 8) t->bc /= 2;
        else t->br /= 2;
    }
    /* one row: every 16 bytes of it an invocation's */
    if (t->br == 1 && (dv + vw - 1) / vw > t->wg) return false;
    return vk_fa_shared(t, d, dv, vw) <= limit && (t->br * dv + t->wg - 1) / t->wg <= VK_FA_OPT_MAX;
}

/* q F32, k and v F32 or F16 (one type), an F32 or F16 mask or none, rows
 * packed (the builder checks the rest of the contract). */
static bool vk_supports_flash_attn(const rt_vk_device_t *dev, const rt_tensor_t *n) {
    const rt_tensor_t *q = n->src[0], *k = n->src[1], *v = n->src[2], *m = n->src[3];
    vk_fa_tiles_t t;
    if (!k || !v || q->type != RT_TYPE_F32 || !vk_is_f32_f16(k->type) || v->type != k->type ||
        n->type != RT_TYPE_F32 || !dev->host->tensor_is_contiguous(n))
        return false;
    if (!vk_rows_packed(dev, q) || !vk_rows_packed(dev, k) || !vk_rows_packed(dev, v)) return false;
    if (m && (!vk_is_f32_f16(m->type) || !vk_rows_packed(dev, m))) return false;
    return k->ne[2] > 0 && q->ne[2] % k->ne[2] == 0 && vk_fa_tiles(dev, n, &t);
}

static bool vk_supports_compute(const rt_vk_device_t *dev, const rt_tensor_t *n) {
    const rt_tensor_t *a = n->src[0], *b = n->src[1];
    if (!a) return false;
    switch (n->op) {
    case RT_OP_CONT: case RT_OP_CPY: return vk_supports_copy(dev, n, a);
    case RT_OP_GET_ROWS: return vk_supports_get_rows(dev, n, a, b);
    case RT_OP_SET_ROWS: return vk_supports_set_rows(dev, n, a, b, n->src[2]);
    case RT_OP_ADD: case RT_OP_SUB: case RT_OP_MUL: case RT_OP_DIV: case RT_OP_SWIGLU:
        return vk_supports_binary(n, a, b);
    case RT_OP_SCALE: case RT_OP_GELU: case RT_OP_SILU: case RT_OP_TANH:
        return vk_is_f32_f16(n->type) && a->type == n->type && vk_same_shape(a, n);
    case RT_OP_NORM: case RT_OP_RMS_NORM: case RT_OP_DIAG_MASK_INF:
        return n->type == RT_TYPE_F32 && a->type == n->type && vk_same_shape(a, n);
    case RT_OP_MUL_MAT: return vk_supports_mul_mat(dev, n, a);
    case RT_OP_SOFT_MAX: return vk_supports_soft_max(n, a, b);
    case RT_OP_ROPE: return vk_supports_rope(n, a, b);
    case RT_OP_FLASH_ATTN: return vk_supports_flash_attn(dev, n);
    case RT_OP_ARGMAX:
        return a->type == RT_TYPE_F32 && n->type == RT_TYPE_I32 && n->ne[0] == a->ne[1] &&
               n->ne[1] == a->ne[2] && n->ne[2] == a->ne[3] && n->ne[3] == 1;
    default: return false;
    }
}

bool rt_vk_supports_op(void *device, const rt_tensor_t *node) {
    const rt_vk_device_t *dev = device;
    if (!rt_abi_defines_node(rt_plugin_abi(dev->host), node)) return false; /* rt_plugin.h */
    if (!rt_op_computes(node->op)) return true;
    if (!vk_tensor_ok(dev, node, false)) return false;
    const bool split = rt_vk_chunk_rows(dev, node) > 0; /* a in chunks of rows */
    for (int i = 0; i < RT_MAX_SRC; i++)
        if (node->src[i] && !vk_tensor_ok(dev, node->src[i], i == 0 && split)) return false;
    return vk_supports_compute(dev, node);
}

//===--- push constants ---===//

static void vk_push(rt_vk_dispatch_t *d, uint32_t v) { d->push[d->n_push++] = v; }

static void vk_push_f(rt_vk_dispatch_t *d, float f) {
    uint32_t v;
    memcpy(&v, &f, sizeof v);
    vk_push(d, v);
}

static void vk_push_ne(rt_vk_dispatch_t *d, const rt_tensor_t *t) {
    for (int i = 0; i < RT_MAX_DIMS; i++) vk_push(d, (uint32_t)t->ne[i]);
}

/* Byte strides. A stride of a dimension with ne == 1 may not fit 32 bits;
 * it is multiplied by index 0 only, so its truncation does no harm. */
static void vk_push_nb(rt_vk_dispatch_t *d, const rt_tensor_t *t) {
    for (int i = 0; i < RT_MAX_DIMS; i++) vk_push(d, (uint32_t)t->nb[i]);
}

static float vk_param_f(const rt_tensor_t *t, int i) {
    float f;
    memcpy(&f, &t->op_params[i], sizeof f);
    return f;
}

static uint64_t vk_ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

/* A power-of-two workgroup for one row of n elements. */
static uint32_t vk_row_wg(int64_t n) {
    uint32_t wg = 32;
    while (wg < n && wg < VK_ROW_WG_MAX) wg *= 2;
    return wg;
}

static void vk_dispatch_init(rt_vk_dispatch_t *d, const char *shader, uint32_t wg, uint32_t op,
                             const rt_tensor_t *dst) {
    memset(d, 0, sizeof *d);
    d->shader = shader;
    d->spec[RT_VK_SPEC_WG] = wg;
    d->spec[RT_VK_SPEC_OP] = op;
    d->bind[3] = dst;
    d->scratch = -1;
    d->n_push = RT_VK_N_BIND; /* the binding offsets come first */
}

//===--- builders ---===//

/* unary.comp's op ids */
enum { VK_UNARY_COPY, VK_UNARY_SCALE, VK_UNARY_GELU, VK_UNARY_SILU, VK_UNARY_DIAG_MASK_INF, VK_UNARY_TANH };

static void vk_build_unary(const rt_vk_device_t *dev, const rt_tensor_t *n, uint32_t op,
                           rt_vk_dispatch_t *d) {
    const rt_tensor_t *a = n->src[0];
    const rt_host_t *host = dev->host;
    vk_dispatch_init(d, "unary", VK_WG, op, n);
    d->spec[RT_VK_SPEC_EXTRA] = host->tensor_is_contiguous(a) && host->tensor_is_contiguous(n);
    d->bind[0] = a;
    vk_push_ne(d, a);
    vk_push_nb(d, a);
    vk_push_ne(d, n);
    vk_push_nb(d, n);
    vk_push(d, (uint32_t)vk_nelements(n));
    vk_push_f(d, op == VK_UNARY_SCALE ? vk_param_f(n, 0) : 0.0f);
    vk_push(d, op == VK_UNARY_DIAG_MASK_INF ? (uint32_t)n->op_params[0] : 0);
    d->n_groups = vk_ceil_div((uint64_t)vk_nelements(n), VK_WG);
}

static void vk_build_quantize(const rt_tensor_t *n, rt_vk_dispatch_t *d) {
    const rt_tensor_t *a = n->src[0];
    const uint64_t n_blocks = (uint64_t)vk_nelements(n) / 32;
    vk_dispatch_init(d, "quantize", 64, 0, n);
    d->bind[0] = a;
    vk_push_ne(d, a);
    vk_push_nb(d, a);
    vk_push(d, (uint32_t)n_blocks);
    d->n_groups = vk_ceil_div(n_blocks, 64);
}

/* One invocation per 16-bit word of the destination's rows of blocks. */
static void vk_build_copy_blocks(const rt_vk_device_t *dev, const rt_tensor_t *n, rt_vk_dispatch_t *d) {
    const rt_type_traits_t *tr = dev->host->type_traits(n->type);
    const uint64_t words = (uint64_t)(n->ne[0] / tr->block_size) * tr->type_size / 2;
    vk_dispatch_init(d, "copy_blocks", VK_WG, 0, n);
    d->bind[0] = n->src[0];
    vk_push(d, (uint32_t)words);
    for (int i = 1; i < RT_MAX_DIMS; i++) vk_push(d, (uint32_t)n->ne[i]);
    vk_push_nb(d, n->src[0]);
    vk_push_nb(d, n);
    vk_push(d, (uint32_t)(words * vk_nrows(n)));
    d->n_groups = vk_ceil_div(words * vk_nrows(n), VK_WG);
}

static void vk_build_binary(const rt_vk_device_t *dev, const rt_tensor_t *n, uint32_t op,
                            rt_vk_dispatch_t *d) {
    const rt_tensor_t *a = n->src[0], *b = n->src[1];
    const rt_host_t *host = dev->host;
    const bool flat_a = host->tensor_is_contiguous(a) && host->tensor_is_contiguous(n);
    const bool flat_b = flat_a && host->tensor_is_contiguous(b) && vk_same_shape(a, b);
    vk_dispatch_init(d, "binary", VK_WG, op, n);
    d->spec[RT_VK_SPEC_EXTRA] = (uint32_t)flat_a | (uint32_t)flat_b << 1;
    d->bind[0] = a;
    d->bind[1] = b;
    vk_push_ne(d, a);
    vk_push_nb(d, a);
    vk_push_ne(d, b);
    vk_push_nb(d, b);
    vk_push_nb(d, n);
    vk_push(d, (uint32_t)vk_nelements(n));
    d->n_groups = vk_ceil_div((uint64_t)vk_nelements(n), VK_WG);
}

/* One invocation per element, or per group of 16 of a quantised a. */
static void vk_build_get_rows(const rt_tensor_t *n, rt_vk_dispatch_t *d) {
    const rt_tensor_t *a = n->src[0], *b = n->src[1];
    const uint64_t units = (uint64_t)vk_nelements(n) / (vk_is_quant(a->type) ? VK_DQ_GROUP : 1);
    vk_dispatch_init(d, "get_rows", VK_WG, 0, n);
    d->bind[0] = a;
    d->bind[1] = b;
    vk_push_ne(d, n);
    vk_push_nb(d, n);
    vk_push_nb(d, a);
    vk_push_nb(d, b);
    vk_push(d, (uint32_t)units);
    vk_push(d, (uint32_t)a->ne[1]);
    vk_push(d, (uint32_t)n->op_params[0]); /* a chunk's first row (ops_chunk.c), else 0 */
    vk_push(d, (uint32_t)(n->op_params[1] ? n->op_params[1] : a->ne[1]));
    d->n_groups = vk_ceil_div(units, VK_WG);
}

/* One invocation per element of b, whatever the row length (set_rows.comp).
 * The destination binding is the node, whose bytes are a's: the hazard
 * tracking (ops.c) thus records the write over all of a, and orders it
 * before any later dispatch that reads another view of the same bytes (the
 * KV cache read back by attention). a itself is not bound: none of its
 * bytes are read. */
static void vk_build_set_rows(const rt_tensor_t *n, rt_vk_dispatch_t *d) {
    const rt_tensor_t *b = n->src[1], *c = n->src[2];
    vk_dispatch_init(d, "set_rows", VK_WG, 0, n);
    d->bind[1] = b;
    d->bind[2] = c;
    vk_push_ne(d, b);
    vk_push_nb(d, b);
    vk_push_nb(d, c);
    vk_push_nb(d, n);
    vk_push(d, (uint32_t)vk_nelements(b));
    vk_push(d, (uint32_t)n->ne[1]);
    d->n_groups = vk_ceil_div((uint64_t)vk_nelements(b), VK_WG);
}

/* Row kernels: one workgroup per row of a. */
static void vk_build_rows(const rt_tensor_t *n, const char *shader, uint32_t op, rt_vk_dispatch_t *d) {
    const rt_tensor_t *a = n->src[0];
    vk_dispatch_init(d, shader, vk_row_wg(a->ne[0]), op, n);
    d->bind[0] = a;
    vk_push_ne(d, a);
    vk_push_nb(d, a);
    d->n_groups = vk_nrows(a);
}

static void vk_build_norm(const rt_tensor_t *n, rt_vk_dispatch_t *d) {
    vk_build_rows(n, "norm", n->op == RT_OP_RMS_NORM, d);
    vk_push_nb(d, n);
    vk_push_f(d, vk_param_f(n, 0));
    vk_push(d, (uint32_t)d->n_groups);
}

bool rt_vk_fusable(const rt_vk_device_t *dev, const rt_tensor_t *first, const rt_tensor_t *then) {
    if (first->op != RT_OP_RMS_NORM || then->op != RT_OP_MUL || then->src[0] != first) return false;
    const rt_tensor_t *w = then->src[1];
    return w != first && then->type == RT_TYPE_F32 && w->ne[0] == first->ne[0] &&
           rt_vk_node_dispatches(dev, first) == 1 && rt_vk_node_dispatches(dev, then) == 1 &&
           rt_vk_supports_op((void *)dev, then);
}

/* norm.comp's OP_RMS_NORM_MUL: the norm's result at binding 2, w at 1,
 * the product at 3. */
void rt_vk_dispatch_build_fused(const rt_vk_device_t *dev, const rt_tensor_t *first,
                                const rt_tensor_t *then, rt_vk_dispatch_t *d) {
    (void)dev;
    vk_build_rows(first, "norm", 2, d);
    d->bind[1] = then->src[1];
    d->bind[2] = first;
    d->bind[3] = then;
    d->write2 = true;
    vk_push_nb(d, first);
    vk_push_f(d, vk_param_f(first, 0));
    vk_push(d, (uint32_t)d->n_groups);
    vk_push(d, 0);
    vk_push(d, 0);
    vk_push_ne(d, then->src[1]);
    vk_push_nb(d, then->src[1]);
    vk_push_nb(d, then);
}

static void vk_build_soft_max(const rt_tensor_t *n, rt_vk_dispatch_t *d) {
    const rt_tensor_t *m = n->src[1];
    vk_build_rows(n, "soft_max", 0, d);
    d->bind[1] = m;
    static const rt_tensor_t no_mask = { .ne = { 1, 1, 1, 1 } };
    vk_push_ne(d, m ? m : &no_mask);
    vk_push_nb(d, m ? m : &no_mask);
    vk_push_nb(d, n);
    vk_push_f(d, vk_param_f(n, 0));
    vk_push(d, m != NULL);
    vk_push(d, (uint32_t)d->n_groups);
}

static void vk_build_argmax(const rt_tensor_t *n, rt_vk_dispatch_t *d) {
    vk_build_rows(n, "argmax", 0, d);
    vk_push_nb(d, n);
    vk_push(d, (uint32_t)d->n_groups);
}

static void vk_build_rope(const rt_tensor_t *n, rt_vk_dispatch_t *d) {
    const rt_tensor_t *a = n->src[0], *p = n->src[1];
    const int64_t n_dims = n->op_params[0];
    const uint64_t units = (uint64_t)(n_dims / 2 + a->ne[0] - n_dims) * vk_nrows(a);
    vk_dispatch_init(d, "rope", VK_WG, 0, n);
    d->bind[0] = a;
    d->bind[1] = p;
    vk_push_ne(d, a);
    vk_push_nb(d, a);
    vk_push_nb(d, n);
    vk_push(d, (uint32_t)p->nb[0]);
    vk_push(d, (uint32_t)n_dims);
    vk_push(d, (uint32_t)n->op_params[1]);
    vk_push_f(d, vk_param_f(n, 2));
    vk_push_f(d, vk_param_f(n, 3));
    vk_push(d, (uint32_t)units);
    d->n_groups = vk_ceil_div(units, VK_WG);
}

/* mul_mat.glsl's OP: b rounded by every team itself, b's levels into the
 * scratch, the product from them. */
enum { VK_MV_ROUND = 0, VK_MV_LEVELS = 1, VK_MV_FROM_LEVELS = 2 };
#define VK_MV_LEVEL_BYTES 48u /* a block's levels: 32 int8, d and s as F32, padding */

bool rt_vk_mv_levels(const rt_vk_device_t *dev, const rt_tensor_t *n) {
    return n->op == RT_OP_MUL_MAT && dev->tune.mv_levels && n->src[1]->ne[1] <= VK_MM_TILE_MAX &&
           vk_is_block32(n->src[0]->type);
}

/* The blocks of b's levels: every row of b (dims 1-3), block by block. */
static uint64_t vk_mv_level_blocks(const rt_tensor_t *n) {
    return (uint64_t)(n->ne[1] * n->ne[2] * n->ne[3]) * (uint64_t)(n->src[0]->ne[0] / 32);
}

/* The rows of a that one team of mul_mat.comp takes at once (the
 * workgroup's rows grow with them: each team keeps its number of passes):
 * a float a's, or one in blocks of 32; a super-block type's rows are taken
 * one at a time. */
static uint32_t vk_mv_team_rows(const rt_vk_tuning_t *tu, const rt_tensor_t *a) {
    switch (a->type) {
    case RT_TYPE_F32: case RT_TYPE_F16: case RT_TYPE_BF16: case RT_TYPE_Q4_0: case RT_TYPE_Q4_1:
    case RT_TYPE_Q5_0: case RT_TYPE_Q5_1: case RT_TYPE_Q8_0: case RT_TYPE_IQ4_NL:
        return tu->mv_team_rows > 1 ? tu->mv_team_rows : 1;
    default: return 1;
    }
}

/* Up to VK_MM_TILE_MAX columns: mul_mat.comp (or mul_mat_sg.comp, with
 * subgroup arithmetic), one workgroup per dev->tune.mv_rows rows of a and
 * tile of columns. More: mul_mm.comp, one per 64 x 64 tile of c, with
 * dev->tune's register block (ROWS x EXTRA). Both take the same push
 * constants, mul_mm one more. Zeroed tuning (the Metal plugin's view of a
 * device) gives the portable shapes. A mat-vec with b's levels
 * (rt_vk_mv_levels, op_params[2] the pass) is first the same shader in
 * VK_MV_LEVELS, one invocation per block of b into the scratch, then the
 * product reading them at binding 1. Each team rounding b for each row of
 * a (the portable shape) spends most of the product's instructions on it:
 * on lavapipe (2 threads, m = k = 4096, n = 1, `rt-test-ops perf`, with
 * and without RT_VULKAN_MV_LEVELS=0 in turn) q8_0 262 -> 142 ms, q4_0
 * 213 -> 101 ms, q4_1 209 -> 106 ms. */
static void vk_build_mul_mat(const rt_vk_device_t *dev, const rt_tensor_t *n, rt_vk_dispatch_t *d) {
    const rt_tensor_t *a = n->src[0], *b = n->src[1];
    const int32_t pass = n->op_params[2];
    const bool mm = b->ne[1] > VK_MM_TILE_MAX;
    const uint32_t tile = mm ? VK_MM_BN : b->ne[1] == 1 ? 1 : b->ne[1] <= 4 ? 4 : VK_MM_TILE_MAX;
    const uint64_t n_tiles = vk_ceil_div((uint64_t)b->ne[1], tile);
    const rt_vk_tuning_t *tu = &dev->tune;
    const uint32_t team = vk_mv_team_rows(tu, a);
    const uint32_t rows = mm || tu->mv_rows == 0 ? 1 : tu->mv_rows * team;
    const uint64_t m_tiles = vk_ceil_div((uint64_t)n->ne[0], mm ? VK_MM_BM : rows);
    const char *mv = tu->subgroup_arith ? "mul_mat_sg" : "mul_mat";
    const uint32_t tm = tu->mm_tm ? tu->mm_tm : 4, tn = tu->mm_tn ? tu->mm_tn : 4;
    const uint32_t wg = mm ? (VK_MM_BM / tm) * (VK_MM_BN / tn) : tu->mv_wg ? tu->mv_wg : 32;
    const uint32_t op = pass == 1 ? VK_MV_LEVELS : pass == 2 ? VK_MV_FROM_LEVELS : VK_MV_ROUND;
    vk_dispatch_init(d, mm ? "mul_mm" : mv, op == VK_MV_LEVELS ? 64 : wg, op, n);
    d->spec[RT_VK_SPEC_EXTRA] = mm ? tn : tile;
    d->spec[RT_VK_SPEC_ROWS] = mm ? tm : rows;
    d->spec[RT_VK_SPEC_X] = mm ? 0 : team;
    d->bind[0] = a;
    d->bind[1] = op == VK_MV_FROM_LEVELS ? NULL : b;
    if (op != VK_MV_ROUND) d->scratch = op == VK_MV_LEVELS ? 3 : 1;
    vk_push_nb(d, a);
    vk_push_nb(d, b);
    vk_push_nb(d, n);
    vk_push_ne(d, n);
    vk_push(d, (uint32_t)a->ne[0]);
    vk_push(d, (uint32_t)(b->ne[2] / a->ne[2]));
    vk_push(d, (uint32_t)(b->ne[3] / a->ne[3]));
    vk_push(d, (uint32_t)n_tiles);
    if (mm) vk_push(d, (uint32_t)m_tiles);
    d->n_groups = m_tiles * n_tiles * (uint64_t)(n->ne[2] * n->ne[3]);
    if (op == VK_MV_LEVELS) d->n_groups = vk_ceil_div(vk_mv_level_blocks(n), 64);
}

/* flash_attn.comp's OP bits */
enum { VK_FA_MASK = 1, VK_FA_PARTIAL = 2, VK_FA_MERGE = 4 };
#define VK_FA_SPLIT_MAX 64u /* key runs per query: the merge reads them all per output element */

/* Decode's keys split over workgroups: with fewer heads (times planes)
 * than the device's tune.fa_split_groups, into runs of whole key tiles, at
 * least two tiles each (a run's partial costs a tile's worth to write and
 * merge), whose partials fit one binding. */
uint32_t rt_vk_fa_splits(const rt_vk_device_t *dev, const rt_tensor_t *n) {
    const rt_tensor_t *q = n->src[0], *k = n->src[1];
    const uint64_t groups = (uint64_t)(q->ne[2] * q->ne[3]), target = dev->tune.fa_split_groups;
    vk_fa_tiles_t t;
    if (n->op != RT_OP_FLASH_ATTN || q->ne[1] != 1 || target == 0 || groups >= target || !vk_fa_tiles(dev, n, &t))
        return 1;
    const uint64_t tiles = vk_ceil_div((uint64_t)k->ne[1], t.bc);
    uint64_t runs = vk_ceil_div(target, groups);
    if (runs > tiles / 2) runs = tiles / 2;
    if (runs > VK_FA_SPLIT_MAX) runs = VK_FA_SPLIT_MAX;
    if (runs <= 1) return 1;
    const uint64_t bytes = groups * runs * (uint64_t)(n->ne[0] + 2) * 4;
    return bytes <= dev->max_binding ? (uint32_t)vk_ceil_div(tiles, vk_ceil_div(tiles, runs)) : 1;
}

size_t rt_vk_node_scratch(const rt_vk_device_t *dev, const rt_tensor_t *n) {
    if (rt_vk_mv_levels(dev, n)) return (size_t)vk_mv_level_blocks(n) * VK_MV_LEVEL_BYTES;
    if (n->op != RT_OP_FLASH_ATTN || rt_vk_node_dispatches(dev, n) != 2) return 0;
    return (size_t)(n->ne[1] * n->ne[2] * n->ne[3]) * rt_vk_fa_splits(dev, n) * (size_t)(n->ne[0] + 2) * 4;
}

/* The push words both passes read (flash_attn.comp's Push). */
static void vk_fa_push(rt_vk_dispatch_t *d, const rt_tensor_t *n, uint64_t n_qtiles, uint32_t n_split,
                       uint32_t kv_chunk) {
    const rt_tensor_t *q = n->src[0], *k = n->src[1], *v = n->src[2], *m = n->src[3];
    vk_push(d, 0); /* the mask's offset, ops.c's */
    vk_push(d, (uint32_t)q->ne[1]);
    vk_push(d, (uint32_t)q->ne[2]);
    vk_push(d, (uint32_t)k->ne[1]);
    vk_push(d, (uint32_t)(q->ne[2] / k->ne[2]));
    vk_push(d, (uint32_t)n_qtiles);
    vk_push(d, (uint32_t)q->ne[3]);
    for (int i = 1; i < RT_MAX_DIMS; i++) vk_push(d, (uint32_t)q->nb[i]);
    for (int i = 1; i < RT_MAX_DIMS; i++) vk_push(d, (uint32_t)k->nb[i]);
    for (int i = 1; i < RT_MAX_DIMS; i++) vk_push(d, (uint32_t)v->nb[i]);
    vk_push(d, m ? (uint32_t)m->nb[1] : 0);
    vk_push_f(d, vk_param_f(n, 0));
    vk_push_f(d, vk_param_f(n, 1));
    vk_push(d, n_split);
    vk_push(d, kv_chunk);
}

/* flash_attn.comp: one workgroup per tile of queries, head, plane (and run
 * of keys, split); the mask at the extra binding. A split node's pass
 * (op_params[2], ops_chunk.c) 1 writes the partials to the queue's scratch,
 * 2 merges them into the node, one workgroup per output row. */
static void vk_build_flash_attn(const rt_vk_device_t *dev, const rt_tensor_t *n, rt_vk_dispatch_t *d) {
    const rt_tensor_t *q = n->src[0], *k = n->src[1], *m = n->src[3];
    const int32_t pass = n->op_params[2];
    const uint32_t n_split = pass ? rt_vk_fa_splits(dev, n) : 1;
    vk_fa_tiles_t t;
    vk_fa_tiles(dev, n, &t); /* supports_op said yes */
    const uint64_t n_qtiles = vk_ceil_div((uint64_t)q->ne[1], t.br), key_tiles = vk_ceil_div((uint64_t)k->ne[1], t.bc);
    const uint32_t op = pass == 2 ? VK_FA_MERGE : (m ? VK_FA_MASK : 0) | (pass == 1 ? VK_FA_PARTIAL : 0);
    vk_dispatch_init(d, "flash_attn", t.wg, op, n);
    d->spec[RT_VK_SPEC_ROWS] = t.br;
    d->spec[RT_VK_SPEC_X] = t.bc;
    d->spec[RT_VK_SPEC_X + 1] = (uint32_t)q->ne[0];
    d->spec[RT_VK_SPEC_X + 2] = (uint32_t)n->ne[0];
    vk_fa_push(d, n, n_qtiles, n_split, (uint32_t)(vk_ceil_div(key_tiles, n_split) * t.bc));
    if (pass == 2) {
        d->scratch = 0;
        d->n_groups = (uint64_t)(n->ne[1] * n->ne[2] * n->ne[3]);
        return;
    }
    d->spec[RT_VK_SPEC_EXTRA] = m ? (uint32_t)m->type : 0;
    d->bind[0] = q;
    d->bind[1] = k;
    d->bind[2] = n->src[2];
    d->extra = m;
    if (pass == 1) d->scratch = 3;
    d->n_groups = n_qtiles * (uint64_t)(q->ne[2] * q->ne[3]) * n_split;
}

rt_status_t rt_vk_dispatch_build(const rt_vk_device_t *dev, const rt_tensor_t *node,
                                 rt_vk_dispatch_t *d) {
    switch (node->op) {
    case RT_OP_CONT: case RT_OP_CPY:
        if (vk_is_quant(node->src[0]->type)) vk_build_copy_blocks(dev, node, d);
        else if (vk_is_quant(node->type)) vk_build_quantize(node, d);
        else vk_build_unary(dev, node, VK_UNARY_COPY, d);
        break;
    case RT_OP_SCALE: vk_build_unary(dev, node, VK_UNARY_SCALE, d); break;
    case RT_OP_GELU: vk_build_unary(dev, node, VK_UNARY_GELU, d); break;
    case RT_OP_SILU: vk_build_unary(dev, node, VK_UNARY_SILU, d); break;
    case RT_OP_TANH: vk_build_unary(dev, node, VK_UNARY_TANH, d); break;
    case RT_OP_DIAG_MASK_INF: vk_build_unary(dev, node, VK_UNARY_DIAG_MASK_INF, d); break;
    case RT_OP_ADD: case RT_OP_SUB: case RT_OP_MUL: case RT_OP_DIV:
        vk_build_binary(dev, node, (uint32_t)(node->op - RT_OP_ADD), d);
        break;
    case RT_OP_SWIGLU: vk_build_binary(dev, node, 4, d); break;
    case RT_OP_GET_ROWS: vk_build_get_rows(node, d); break;
    case RT_OP_SET_ROWS: vk_build_set_rows(node, d); break;
    case RT_OP_NORM: case RT_OP_RMS_NORM: vk_build_norm(node, d); break;
    case RT_OP_SOFT_MAX: vk_build_soft_max(node, d); break;
    case RT_OP_ROPE: vk_build_rope(node, d); break;
    case RT_OP_ARGMAX: vk_build_argmax(node, d); break;
    case RT_OP_MUL_MAT: vk_build_mul_mat(dev, node, d); break;
    case RT_OP_FLASH_ATTN: vk_build_flash_attn(dev, node, d); break;
    default:
        return dev->host->set_error(RT_ERR_UNSUPPORTED, "%s: %s: op %d has no Vulkan kernel",
                                    __func__, node->name, (int)node->op);
    }
    return RT_OK;
}
