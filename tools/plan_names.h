/* SPDX-License-Identifier: MIT */
/* plan_names.h: the layer of a tensor, read from its name, and names for
 * the nodes of a model's graph, which the model library leaves unnamed
 * (or named by the core after a view's base, "cache_k_l0 (view)"), so that
 * rt-plan's text, SVG and DOT can say what each node is. A node gets
 * "<op>(<what it reads>).<layer>": the op in lower case, the short name of
 * the weight, cache or input it reads ("blk.3.attn_q.weight" -> attn_q,
 * "cache_k_l3" -> cache_k, "kq_mask"), directly or through a view (the
 * attention scores read the K cache), and the layer of its sources, e.g.
 * "mul_mat(attn_q).3". A node that reads a weight of no layer (the token
 * embeddings, the output head) belongs to no layer and has no suffix; a
 * node that feeds a later layer only takes that layer (the norm that
 * opens a layer). */
#ifndef RT_TOOLS_PLAN_NAMES_H
#define RT_TOOLS_PLAN_NAMES_H

#include "../abi/rt.h"

/* The layer a name says: "blk.N." first (the file's weights), "..._lN"
 * at the end (the KV cache), ".N" at the end (the built-in graphs' and
 * tool_plan_name_nodes' names); -1 for none. */
int32_t tool_tensor_layer(const char *name);

/* Names every node of g that has no name of its own (none, or the core's
 * view name) as above. False when out of memory (g is left as it was). */
bool tool_plan_name_nodes(rt_graph_t *g);

#endif /* RT_TOOLS_PLAN_NAMES_H */
