/* SPDX-License-Identifier: MIT */
/* numerics.c: non-finite values in a decode. The logits of every decode
 * are checked (a NaN logit makes the sampler emit a token that prints
 * nothing, so a poisoned model would otherwise "succeed"); with
 * check_numerics, every node of the graph is kept (an output the gallocr
 * never overwrites) so that a failing decode can name the first node, in
 * graph order, whose f32 result is not finite. */
#include "model_impl.h"

#include <math.h>
#include <stdlib.h>

/* The first non-finite of n floats, or -1. */
int64_t rtm_numerics_first_bad(const float *x, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return (int64_t)i;
    return -1;
}

void rtm_numerics_keep_nodes(rt_graph_t *g) {
    for (int32_t i = 0; i < rt_graph_n_nodes(g); i++) rt_set_output(rt_graph_node(g, i));
}

/* Whether node t (contiguous f32) holds a non-finite value; false when it
 * cannot be read. */
static bool node_is_bad(const rt_tensor_t *t) {
    if (t->type != RT_TYPE_F32 || !rt_is_contiguous(t) || t->data == NULL) return false;
    const size_t n = (size_t)rt_nelements(t);
    float *x = malloc(n * sizeof x[0]);
    const bool bad = x != NULL && rt_tensor_get(t, x, 0, n * sizeof x[0]) == RT_OK &&
                     rtm_numerics_first_bad(x, n) >= 0;
    free(x);
    return bad;
}

int32_t rtm_numerics_first_bad_node(const rt_graph_t *g) {
    for (int32_t i = 0; i < rt_graph_n_nodes(g); i++)
        if (node_is_bad(rt_graph_node(g, i))) return i;
    return -1;
}
