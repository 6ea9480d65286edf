/* SPDX-License-Identifier: MIT */
/* tensor_impl.h: what the graph-building files (tensor.c, view.c, ops.c,
 * graph.c) share beyond abi/: the one function that creates a tensor header
 * in a context (base or view), the pool footprint of an object, and a
 * helper that formats a tensor for an RT_CHECK message. */
#ifndef RT_TENSOR_IMPL_H
#define RT_TENSOR_IMPL_H

#include "context_impl.h"

/* Creates a tensor of `type` and shape ne[0..n_dims) (the rest 1) with
 * contiguous strides (docs/memory.md §1). With view_src it is
 * a view: view_src is resolved to its base (offsets add up), data is the
 * base's data + offset when the base has data, and no bytes are taken.
 * Without, the data follows the header in the pool unless the context is
 * no_alloc. Aborts on a bad type, n_dims, negative ne, ne[0] not whole
 * blocks, a size that overflows, or a full pool. The caller sets op, src,
 * op_params, name and, for views, strides (then checks the fit). */
RT_INTERNAL rt_tensor_t *rt_tensor_new_impl(rt_context_t *ctx, rt_type_t type, int n_dims,
                                            const int64_t *ne, rt_tensor_t *view_src,
                                            size_t view_offs);

/* context.c: pool bytes an object with `payload` bytes takes, its header
 * and alignment included. rt_tensor_overhead and rt_graph_overhead use it. */
RT_INTERNAL size_t rt_context_object_footprint(size_t payload);

/* For check messages: rt_tensor_describe into a temporary that lives until
 * the end of the enclosing block, e.g. RT_CHECK(ok, "ADD: a %s", RT_DESC(a)).
 * RT_CHECK evaluates it only when the check fails. */
#define RT_DESC_SIZE 256

/* Graph-builder misuse that the contract's checks cannot even look at: a
 * NULL context or tensor aborts through the hook, naming the builder. */
#define RT_NEED(x) RT_CHECK((x) != NULL, "%s: %s is NULL", __func__, #x)
#define RT_DESC(t) rt_tensor_describe((t), (char[RT_DESC_SIZE]){0}, RT_DESC_SIZE)

#endif /* RT_TENSOR_IMPL_H */
