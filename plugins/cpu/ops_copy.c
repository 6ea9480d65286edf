/* SPDX-License-Identifier: MIT */
/* ops_copy.c: the ops that move elements without arithmetic. CONT and CPY
 * share one kernel: each thread takes rows of the destination and fills
 * each one from a cursor that walks the source in logical order, in runs
 * that never cross a source row or a destination row. A run is a memcpy
 * when both sides are dense and of one type (docs/memory.md §2.4), an
 * element loop otherwise, and a conversion through floats when the types
 * differ; a quantised destination gathers its row as floats and quantises
 * it with abi/rt_quant.h's reference codec. Copies within one quantised
 * type move whole blocks. Copies between float types of one shape whose
 * rows are dense go row to row without the cursor. GET_ROWS gathers rows by
 * I32 index into F32. */
#include "cpu.h"

#include <string.h>

//===--- geometry ---===//

/* Dense in the tensor's own units (elements, or blocks for a quantised type). */
static bool rt_cpu_is_dense(const rt_tensor_t *t) {
    const rt_cpu_type_t *ty = rt_cpu_type(t->type);
    size_t next = ty->size;
    for (int i = 0; i < RT_MAX_DIMS; i++) {
        if (t->ne[i] != 1 && t->nb[i] != next) return false;
        next *= (size_t)(i == 0 ? t->ne[0] / ty->blck : t->ne[i]);
    }
    return true;
}

/* Quantised data is only addressable as whole, adjacent blocks of a row. */
static bool rt_cpu_blocks_ok(const rt_tensor_t *t) {
    const rt_cpu_type_t *ty = rt_cpu_type(t->type);
    return ty->blck == 1 || (t->nb[0] == ty->size && t->ne[0] % ty->blck == 0);
}

/* A position in a tensor's logical order, in units of u elements. */
typedef struct rt_cpu_cursor {
    const rt_tensor_t *t;
    int64_t ne0;            /* units per row */
    int64_t i0, i1, i2, i3;
} rt_cpu_cursor_t;

static void rt_cpu_cursor_seek(rt_cpu_cursor_t *c, int64_t k) {
    const rt_tensor_t *t = c->t;
    c->i0 = k % c->ne0;
    k /= c->ne0;
    c->i1 = k % t->ne[1];
    k /= t->ne[1];
    c->i2 = k % t->ne[2];
    c->i3 = k / t->ne[2];
}

static const char *rt_cpu_cursor_ptr(const rt_cpu_cursor_t *c) {
    const rt_tensor_t *t = c->t;
    return (const char *)t->data + c->i0 * t->nb[0] + c->i1 * t->nb[1] + c->i2 * t->nb[2] +
           c->i3 * t->nb[3];
}

/* n never passes the end of the current row. */
static void rt_cpu_cursor_advance(rt_cpu_cursor_t *c, int64_t n) {
    if ((c->i0 += n) < c->ne0) return;
    c->i0 = 0;
    if (++c->i1 < c->t->ne[1]) return;
    c->i1 = 0;
    if (++c->i2 < c->t->ne[2]) return;
    c->i2 = 0;
    c->i3++;
}

//===--- CONT and CPY ---===//

static bool rt_cpu_copy_types_ok(const rt_tensor_t *a, const rt_tensor_t *d) {
    if (!rt_cpu_blocks_ok(a) || !rt_cpu_blocks_ok(d)) return false;
    if (a->type == d->type) return true;
    if (!rt_cpu_is_float(a->type)) return false;
    return rt_cpu_is_float(d->type) || d->type == RT_TYPE_Q8_0 || d->type == RT_TYPE_Q4_0;
}

bool rt_cpu_supports_copy(const rt_tensor_t *node) {
    const rt_tensor_t *a = node->src[0];
    if (!a || rt_cpu_nelements(a) != rt_cpu_nelements(node)) return false;
    /* CPY writes into the node, a view of b; a cast (rt_cast) has no b. */
    const rt_tensor_t *b = node->op == RT_OP_CPY ? node->src[1] : NULL;
    if (b && (b->type != node->type || !rt_cpu_same_shape(b, node))) return false;
    /* Same-type quantised copies count blocks: both rows must hold whole blocks. */
    return rt_cpu_copy_types_ok(a, node);
}

size_t rt_cpu_wsize_copy(const rt_tensor_t *node) {
    return node->src[0]->type == node->type ? 0 : rt_cpu_wsize_rows(1, node->ne[0]);
}

/* n units of size bytes, each side with its own stride. */
static void rt_cpu_copy_units(char *d, size_t dstride, const char *s, size_t sstride, int64_t n,
                              size_t size) {
    if (dstride == size && sstride == size) {
        memcpy(d, s, (size_t)n * size);
    } else if (size == 4) {
        for (int64_t i = 0; i < n; i++) memcpy(d + i * dstride, s + i * sstride, 4);
    } else if (size == 2) {
        for (int64_t i = 0; i < n; i++) memcpy(d + i * dstride, s + i * sstride, 2);
    } else {
        for (int64_t i = 0; i < n; i++) memcpy(d + i * dstride, s + i * sstride, size);
    }
}

/* Both dense and of one type: the bytes are in order already. */
static void rt_cpu_copy_dense(const rt_cpu_params_t *p, rt_tensor_t *dst, const rt_tensor_t *a) {
    const rt_cpu_type_t *ty = rt_cpu_type(a->type);
    const int64_t n = rt_cpu_nelements(a) / ty->blck;
    int64_t begin, end;
    rt_cpu_split(n, p->ith, p->nth, &begin, &end);
    if (end > begin)
        memcpy((char *)dst->data + begin * ty->size, (const char *)a->data + begin * ty->size,
               (size_t)(end - begin) * ty->size);
}

/* One destination row of n units from the cursor. Same type: bytes; float
 * destination: a conversion per run; quantised destination: gather, then
 * quantise the row. */
static void rt_cpu_copy_row(rt_cpu_cursor_t *c, const rt_tensor_t *dst, char *drow, int64_t n,
                            float *buf) {
    const rt_tensor_t *a = c->t;
    const bool same = a->type == dst->type, to_float = rt_cpu_is_float(dst->type);
    for (int64_t done = 0, run; done < n; done += run) {
        run = c->ne0 - c->i0 < n - done ? c->ne0 - c->i0 : n - done;
        const char *s = rt_cpu_cursor_ptr(c);
        char *d = drow + done * dst->nb[0];
        if (same) {
            rt_cpu_copy_units(d, dst->nb[0], s, a->nb[0], run, rt_cpu_type(a->type)->size);
        } else if (to_float) {
            rt_cpu_load_f32(a->type, s, a->nb[0], buf, run);
            rt_cpu_store_f32(dst->type, d, dst->nb[0], buf, run);
        } else {
            rt_cpu_load_f32(a->type, s, a->nb[0], buf + done, run);
        }
        rt_cpu_cursor_advance(c, run);
    }
    if (!same && !to_float) rt_cpu_type(dst->type)->from_f32(buf, drow, n);
}

/* Same shape, rows dense on both sides (a permuted view made contiguous,
 * this step's K and V into the cache): row (i1, i2, i3) to the same row,
 * no cursor; a float conversion goes through the kernel table's row
 * converters, F32 read in place. */
static bool rt_cpu_copy_rowwise(const rt_tensor_t *a, const rt_tensor_t *dst) {
    return rt_cpu_same_shape(a, dst) && rt_cpu_is_float(a->type) && rt_cpu_is_float(dst->type) &&
           a->nb[0] == rt_cpu_type(a->type)->size && dst->nb[0] == rt_cpu_type(dst->type)->size;
}

/* Dims 1..3 of both headers reordered alike so that a's strides grow: the
 * rows are then visited in the order they lie in a's memory (a permuted
 * view read in place, not one page per row). Only ne and nb change. */
static void rt_cpu_copy_order(rt_tensor_t *a, rt_tensor_t *d) {
    for (int i = 1; i < RT_MAX_DIMS; i++)
        for (int j = i; j > 1 && a->nb[j] < a->nb[j - 1]; j--) {
            int64_t te = a->ne[j];
            size_t tb = a->nb[j];
            a->ne[j] = a->ne[j - 1], a->nb[j] = a->nb[j - 1], a->ne[j - 1] = te, a->nb[j - 1] = tb;
            te = d->ne[j], tb = d->nb[j];
            d->ne[j] = d->ne[j - 1], d->nb[j] = d->nb[j - 1], d->ne[j - 1] = te, d->nb[j - 1] = tb;
        }
}

/* The rows of one (i2, i3) from the iterator's current row on: a memcpy
 * each (one for all when both sides' rows are back to back), or a
 * conversion each. Short rows (a permuted head of 128) are why this takes
 * a span at a time: per row, the iterator and the lookups cost as much as
 * the copy. */
static void rt_cpu_copy_span(const rt_tensor_t *a, const rt_tensor_t *dst, rt_cpu_rows_t *it,
                             float *buf) {
    const int64_t n = dst->ne[0];
    const char *s = rt_cpu_row(a, it->i1, it->i2, it->i3);
    char *d = rt_cpu_row(dst, it->i1, it->i2, it->i3);
    const int64_t k = rt_cpu_rows_span(it);
    if (a->type != dst->type) {
        for (int64_t r = 0; r < k; r++) {
            const float *x = rt_cpu_row_in(a, s + r * a->nb[1], n, buf);
            rt_cpu_row_from_f32(dst, d + r * dst->nb[1], x, n);
        }
        return;
    }
    const size_t bytes = (size_t)n * rt_cpu_type(a->type)->size;
    if (a->nb[1] == bytes && dst->nb[1] == bytes) {
        memcpy(d, s, (size_t)k * bytes);
        return;
    }
    for (int64_t r = 0; r < k; r++) memcpy(d + r * dst->nb[1], s + r * a->nb[1], bytes);
}

static void rt_cpu_copy_rows(const rt_cpu_params_t *p, rt_tensor_t *node, const rt_tensor_t *src) {
    rt_tensor_t sa = *src, sd = *node;
    rt_cpu_copy_order(&sa, &sd);
    float *buf = rt_cpu_scratch(p, 0, sd.ne[0]);
    rt_cpu_rows_t it;
    rt_cpu_rows_init(&it, sd.ne, p);
    while (rt_cpu_rows_next(&it)) rt_cpu_copy_span(&sa, &sd, &it, buf);
}

void rt_cpu_compute_copy(const rt_cpu_params_t *p, rt_tensor_t *dst) {
    const rt_tensor_t *a = dst->src[0];
    const bool same = a->type == dst->type;
    if (same && rt_cpu_is_dense(a) && rt_cpu_is_dense(dst)) {
        rt_cpu_copy_dense(p, dst, a);
        return;
    }
    if (rt_cpu_copy_rowwise(a, dst)) {
        rt_cpu_copy_rows(p, dst, a);
        return;
    }
    /* A same-type copy moves blocks; a conversion counts elements. */
    const int64_t unit = same ? rt_cpu_type(a->type)->blck : 1;
    rt_cpu_cursor_t c = { .t = a, .ne0 = a->ne[0] / unit };
    const int64_t n = dst->ne[0] / unit;
    float *buf = same ? NULL : rt_cpu_scratch(p, 0, dst->ne[0]);
    rt_cpu_rows_t it;
    rt_cpu_rows_init(&it, dst->ne, p);
    while (rt_cpu_rows_next(&it)) {
        rt_cpu_cursor_seek(&c, it.ir * n);
        rt_cpu_copy_row(&c, dst, rt_cpu_row(dst, it.i1, it.i2, it.i3), n, buf);
    }
}

//===--- GET_ROWS ---===//

bool rt_cpu_supports_get_rows(const rt_tensor_t *node) {
    const rt_tensor_t *a = node->src[0], *b = node->src[1];
    if (!a || !b || b->type != RT_TYPE_I32 || node->type != RT_TYPE_F32) return false;
    if (!rt_cpu_type(a->type)->to_f32 || !rt_cpu_blocks_ok(a)) return false;
    return b->ne[1] == a->ne[2] && b->ne[2] == a->ne[3] && b->ne[3] == 1 &&
           node->ne[0] == a->ne[0] && node->ne[1] == b->ne[0] && node->ne[2] == a->ne[2] &&
           node->ne[3] == a->ne[3];
}

size_t rt_cpu_wsize_get_rows(const rt_tensor_t *node) {
    return rt_cpu_wsize_rows(1, node->ne[0]);
}

/* Destination row (i1, i2, i3) is row b[i1, i2, i3] of a's matrix (i2, i3).
 * An index outside a fails the graph and leaves that row zero. */
void rt_cpu_compute_get_rows(const rt_cpu_params_t *p, rt_tensor_t *dst) {
    const rt_tensor_t *a = dst->src[0], *b = dst->src[1];
    const int64_t n = dst->ne[0];
    float *buf = rt_cpu_scratch(p, 0, n);
    rt_cpu_rows_t it;
    rt_cpu_rows_init(&it, dst->ne, p);
    while (rt_cpu_rows_next(&it)) {
        int32_t idx;
        memcpy(&idx, (const char *)b->data + it.i1 * b->nb[0] + it.i2 * b->nb[1] +
                         it.i3 * b->nb[2], sizeof idx);
        void *drow = rt_cpu_row(dst, it.i1, it.i2, it.i3);
        float *out = rt_cpu_row_out(dst, drow, buf);
        if (idx < 0 || idx >= a->ne[1]) {
            rt_cpu_report(p, RT_ERR_INVALID_ARGUMENT,
                          "GET_ROWS '%s': row index %d out of range [0, %lld)", dst->name,
                          (int)idx, (long long)a->ne[1]);
            memset(out, 0, (size_t)n * sizeof out[0]);
        } else {
            rt_cpu_row_to_f32(a, rt_cpu_row(a, idx, it.i2, it.i3), out, n);
        }
        rt_cpu_row_commit(dst, drow, out, n);
    }
}
