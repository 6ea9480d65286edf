/* SPDX-License-Identifier: MIT */
/* tensor.c: tensor headers. Creating them in a context (rt_tensor_new_impl,
 * which view.c and ops.c build on), naming and flagging them, and every
 * question about a tensor's shape and strides that does not depend on where
 * its bytes live: element and byte counts, contiguity, permutation,
 * broadcasting, and the one-line description used in check messages. */
#include "tensor_impl.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Tensor data in the pool starts this far into the payload, so that it is
 * as aligned as the payload. */
#define TENSOR_DATA_OFFSET rt_align_up(sizeof(rt_tensor_t), RT_CONTEXT_ALIGN)

//===--- creation ---===//

/* Aborts unless type, n_dims and ne describe a tensor rt can hold. */
static const rt_type_traits_t *check_new(rt_type_t type, int n_dims, const int64_t *ne) {
    const rt_type_traits_t *tr = rt_type_traits(type);
    RT_CHECK(tr != NULL, "new tensor: unknown type id %d", (int)type);
    RT_CHECK(n_dims >= 1 && n_dims <= RT_MAX_DIMS, "new tensor: n_dims %d is not in 1..%d",
             n_dims, RT_MAX_DIMS);
    for (int i = 0; i < n_dims; i++)
        RT_CHECK(ne[i] >= 0, "new tensor: ne[%d] = %" PRId64 " is negative", i, ne[i]);
    RT_CHECK(ne[0] % tr->block_size == 0,
             "new tensor: ne[0] = %" PRId64 " is not a multiple of %s's block of %" PRId64,
             ne[0], tr->name, tr->block_size);
    return tr;
}

/* Contiguous strides for t's type and ne; returns the bytes they span, or
 * SIZE_MAX when that does not fit in a size_t. */
static size_t set_contiguous_strides(rt_tensor_t *t, const rt_type_traits_t *tr) {
    t->nb[0] = tr->type_size;
    t->nb[1] = tr->type_size * (size_t)(t->ne[0] / tr->block_size);
    size_t bytes = t->nb[1];
    bool overflow = false;
    for (int i = 1; i < RT_MAX_DIMS; i++) {
        overflow |= __builtin_mul_overflow(bytes, (size_t)t->ne[i], &bytes);
        if (i + 1 < RT_MAX_DIMS) t->nb[i + 1] = bytes;
    }
    return overflow ? SIZE_MAX : bytes;
}

/* Makes view_src the base and view_offs relative to it. */
static rt_tensor_t *resolve_base(rt_tensor_t *view_src, size_t *view_offs) {
    if (view_src != NULL && view_src->view_src != NULL) {
        *view_offs += view_src->view_offs;
        view_src = view_src->view_src;
    }
    return view_src;
}

rt_tensor_t *rt_tensor_new_impl(rt_context_t *ctx, rt_type_t type, int n_dims, const int64_t *ne,
                                rt_tensor_t *view_src, size_t view_offs) {
    RT_CHECK(ctx != NULL, "new tensor: the context is NULL");
    RT_CHECK(ne != NULL, "new tensor: ne is NULL");
    const rt_type_traits_t *tr = check_new(type, n_dims, ne);
    rt_tensor_t tmp = {.type = type, .ne = {1, 1, 1, 1}};
    memcpy(tmp.ne, ne, (size_t)n_dims * sizeof ne[0]);
    const size_t data_size = set_contiguous_strides(&tmp, tr);
    RT_CHECK(data_size != SIZE_MAX, "new tensor: %s{%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64
             "} overflows size_t", tr->name, tmp.ne[0], tmp.ne[1], tmp.ne[2], tmp.ne[3]);
    view_src = resolve_base(view_src, &view_offs);
    const bool own_data = view_src == NULL && !ctx->no_alloc;
    const size_t payload = own_data ? TENSOR_DATA_OFFSET + data_size : sizeof(rt_tensor_t);
    RT_CHECK(!own_data || payload > data_size, "new tensor: %zu data bytes overflow size_t",
             data_size);
    rt_tensor_t *t = rt_context_alloc_object(ctx, RT_OBJECT_TENSOR, payload);
    *t = tmp;
    t->view_src = view_src;
    t->view_offs = view_offs;
    if (own_data) t->data = (char *)t + TENSOR_DATA_OFFSET;
    else if (view_src != NULL && view_src->data != NULL) t->data = (char *)view_src->data + view_offs;
    if (view_src != NULL) t->buffer = view_src->buffer;
    return t;
}

rt_tensor_t *rt_new_tensor(rt_context_t *ctx, rt_type_t type, int n_dims, const int64_t *ne) {
    return rt_tensor_new_impl(ctx, type, n_dims, ne, NULL, 0);
}

rt_tensor_t *rt_new_tensor_1d(rt_context_t *ctx, rt_type_t type, int64_t ne0) {
    return rt_new_tensor(ctx, type, 1, &ne0);
}

rt_tensor_t *rt_new_tensor_2d(rt_context_t *ctx, rt_type_t type, int64_t ne0, int64_t ne1) {
    const int64_t ne[2] = {ne0, ne1};
    return rt_new_tensor(ctx, type, 2, ne);
}

rt_tensor_t *rt_new_tensor_3d(rt_context_t *ctx, rt_type_t type, int64_t ne0, int64_t ne1,
                              int64_t ne2) {
    const int64_t ne[3] = {ne0, ne1, ne2};
    return rt_new_tensor(ctx, type, 3, ne);
}

rt_tensor_t *rt_new_tensor_4d(rt_context_t *ctx, rt_type_t type, int64_t ne0, int64_t ne1,
                              int64_t ne2, int64_t ne3) {
    const int64_t ne[4] = {ne0, ne1, ne2, ne3};
    return rt_new_tensor(ctx, type, 4, ne);
}

rt_tensor_t *rt_dup_tensor(rt_context_t *ctx, const rt_tensor_t *a) {
    RT_CHECK(a != NULL, "rt_dup_tensor: a is NULL");
    return rt_new_tensor(ctx, a->type, RT_MAX_DIMS, a->ne);
}

//===--- names and flags ---===//

/* The small accessors below take NULL as misuse that costs nothing to
 * survive: nothing happens, the answer is 0, false or NULL. */
rt_tensor_t *rt_set_name(rt_tensor_t *t, const char *name) {
    if (t == NULL) return NULL;
    snprintf(t->name, sizeof t->name, "%s", name != NULL ? name : "");
    return t;
}

rt_tensor_t *rt_format_name(rt_tensor_t *t, const char *fmt, ...) {
    if (t == NULL || fmt == NULL) return t;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->name, sizeof t->name, fmt, ap);
    va_end(ap);
    return t;
}

const char *rt_get_name(const rt_tensor_t *t) { return t != NULL ? t->name : ""; }

static void set_flag(rt_tensor_t *t, uint32_t flag) {
    if (t != NULL) t->flags |= flag;
}

void rt_set_input(rt_tensor_t *t) { set_flag(t, RT_TENSOR_FLAG_INPUT); }

void rt_set_output(rt_tensor_t *t) { set_flag(t, RT_TENSOR_FLAG_OUTPUT); }

void rt_set_param(rt_tensor_t *t) { set_flag(t, RT_TENSOR_FLAG_PARAM); }

//===--- sizes ---===//

int64_t rt_nelements(const rt_tensor_t *t) {
    return t != NULL ? t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3] : 0;
}

int64_t rt_nrows(const rt_tensor_t *t) { return t != NULL ? t->ne[1] * t->ne[2] * t->ne[3] : 0; }

/* ggml_nbytes: from the first byte to one past the last element, whatever
 * the strides (a quantised row counts whole blocks). */
size_t rt_nbytes(const rt_tensor_t *t) {
    if (t == NULL) return 0;
    const int64_t blck = rt_blck_size(t->type);
    if (blck == 0) return 0;
    for (int i = 0; i < RT_MAX_DIMS; i++)
        if (t->ne[i] <= 0) return 0;
    size_t bytes = blck == 1 ? rt_type_size(t->type) + (size_t)(t->ne[0] - 1) * t->nb[0]
                             : (size_t)(t->ne[0] / blck) * t->nb[0];
    for (int i = 1; i < RT_MAX_DIMS; i++) bytes += (size_t)(t->ne[i] - 1) * t->nb[i];
    return bytes;
}

size_t rt_element_size(const rt_tensor_t *t) { return t != NULL ? rt_type_size(t->type) : 0; }

int rt_n_dims(const rt_tensor_t *t) {
    if (t == NULL) return 0;
    for (int i = RT_MAX_DIMS - 1; i >= 1; i--)
        if (t->ne[i] > 1) return i + 1;
    return 1;
}

//===--- layout predicates ---===//

/* ggml_is_contiguous: strides of dimensions with ne == 1 are never used to
 * reach an element, so they may be anything. */
bool rt_is_contiguous(const rt_tensor_t *t) {
    if (t == NULL) return false;
    const int64_t blck = rt_blck_size(t->type);
    if (blck == 0) return false;
    size_t next_nb = rt_type_size(t->type);
    if (t->ne[0] != blck && t->nb[0] != next_nb) return false;
    next_nb *= (size_t)(t->ne[0] / blck);
    for (int i = 1; i < RT_MAX_DIMS; i++) {
        if (t->ne[i] == 1) continue;
        if (t->nb[i] != next_nb) return false;
        next_nb *= (size_t)t->ne[i];
    }
    return true;
}

bool rt_is_transposed(const rt_tensor_t *t) { return t != NULL && t->nb[0] > t->nb[1]; }

bool rt_is_permuted(const rt_tensor_t *t) {
    return t != NULL && (t->nb[0] > t->nb[1] || t->nb[1] > t->nb[2] || t->nb[2] > t->nb[3]);
}

bool rt_is_view(const rt_tensor_t *t) { return t != NULL && t->view_src != NULL; }

bool rt_are_same_shape(const rt_tensor_t *a, const rt_tensor_t *b) {
    if (a == NULL || b == NULL) return false;
    for (int i = 0; i < RT_MAX_DIMS; i++)
        if (a->ne[i] != b->ne[i]) return false;
    return true;
}

/* ggml_can_repeat(b, a): every dimension of a is a whole number of b's; an
 * empty b repeats only into an empty a. */
bool rt_can_repeat(const rt_tensor_t *b, const rt_tensor_t *a) {
    if (a == NULL || b == NULL) return false;
    if (rt_nelements(b) == 0) return rt_nelements(a) == 0;
    for (int i = 0; i < RT_MAX_DIMS; i++)
        if (a->ne[i] % b->ne[i] != 0) return false;
    return true;
}

//===--- description ---===//

/* Strides exactly as a new tensor gets them. Stricter than rt_is_contiguous,
 * which ignores dimensions of one element: a message about strides should
 * show them whenever they were changed. */
static bool has_default_strides(const rt_tensor_t *t) {
    const rt_type_traits_t *tr = rt_type_traits(t->type);
    if (tr == NULL) return false;
    rt_tensor_t def = {.type = t->type};
    memcpy(def.ne, t->ne, sizeof def.ne);
    set_contiguous_strides(&def, tr);
    return memcmp(def.nb, t->nb, sizeof def.nb) == 0;
}

const char *rt_tensor_describe(const rt_tensor_t *t, char *buf, size_t size) {
    if (buf == NULL || size == 0) return "";
    if (t == NULL) {
        snprintf(buf, size, "NULL");
        return buf;
    }
    int n = snprintf(buf, size, "%s{%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 "}:%s",
                     t->name[0] != 0 ? t->name : "(unnamed)", t->ne[0], t->ne[1], t->ne[2],
                     t->ne[3], rt_type_name(t->type));
    if (n >= 0 && (size_t)n < size && !has_default_strides(t))
        snprintf(buf + n, size - (size_t)n, " nb{%zu,%zu,%zu,%zu}", t->nb[0], t->nb[1], t->nb[2],
                 t->nb[3]);
    return buf;
}
