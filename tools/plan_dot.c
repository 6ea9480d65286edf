/* SPDX-License-Identifier: MIT */
/* plan_dot.c: see plan_dot.h. Tensors are named in DOT by their index
 * (l<i> for leaves, n<i> for nodes); a tensor a node reads that is neither
 * (a view's base outside the graph, or the copy of a split input the
 * scheduler made on the reader's device) is drawn as a note of its own
 * address. Layer clusters are written in layer order (plan_names.h says
 * which layer a name is of), the tensors of no layer (embeddings, output)
 * outside any. */
#include "plan_dot.h"
#include "plan_names.h"

#include <stdlib.h>
#include <string.h>

static const char *const palette[] = {"#9ecae1", "#fdae6b", "#a1d99b", "#bcbddc", "#fc9272", "#d9d9d9"};
#define N_PALETTE ((int32_t)(sizeof palette / sizeof palette[0]))

/* The layer of a tensor ("kq.3", "blk.3.attn_q.weight" -> 3), or -1. */
static int32_t layer_of(const rt_tensor_t *t) { return tool_tensor_layer(t->name); }

static const char *colour_of(const rt_sched_t *s, const rt_tensor_t *t) {
    const rt_device_t *dev = rt_sched_get_tensor_device(s, t);
    for (int32_t i = 0; dev != NULL && i < rt_sched_n_devices(s); i++)
        if (rt_sched_device(s, i) == dev) return palette[i < N_PALETTE ? i : N_PALETTE - 1];
    return "white";
}

static void write_tensor(FILE *f, const rt_sched_t *s, char kind, int32_t i, const rt_tensor_t *t) {
    fprintf(f, "    %c%d [label=\"%s\\n%s %s [%lld,%lld,%lld,%lld]\", fillcolor=\"%s\"%s];\n", kind, (int)i,
            t->name[0] ? t->name : "(unnamed)", rt_op_name(t->op), rt_type_name(t->type), (long long)t->ne[0],
            (long long)t->ne[1], (long long)t->ne[2], (long long)t->ne[3], colour_of(s, t),
            kind == 'l' ? ", shape=box" : "");
}

/* Every tensor of layer il (-1: of none), leaves and nodes. */
static void write_layer(FILE *f, const rt_graph_t *g, const rt_sched_t *s, int32_t il) {
    for (int32_t i = 0; i < rt_graph_n_leafs(g); i++)
        if (layer_of(rt_graph_leaf(g, i)) == il) write_tensor(f, s, 'l', i, rt_graph_leaf(g, i));
    for (int32_t i = 0; i < rt_graph_n_nodes(g); i++)
        if (layer_of(rt_graph_node(g, i)) == il) write_tensor(f, s, 'n', i, rt_graph_node(g, i));
}

/* The DOT id of t: its leaf or node index, else its address. */
static void dot_id(const rt_graph_t *g, const rt_tensor_t *t, char *buf, size_t size) {
    for (int32_t i = 0; i < rt_graph_n_leafs(g); i++)
        if (rt_graph_leaf(g, i) == t) {
            snprintf(buf, size, "l%d", (int)i);
            return;
        }
    for (int32_t i = 0; i < rt_graph_n_nodes(g); i++)
        if (rt_graph_node(g, i) == t) {
            snprintf(buf, size, "n%d", (int)i);
            return;
        }
    snprintf(buf, size, "t%p", (const void *)t);
}

static void write_edges(FILE *f, const rt_graph_t *g, const rt_sched_t *s) {
    char from[40], to[40];
    for (int32_t i = 0; i < rt_graph_n_nodes(g); i++) {
        const rt_tensor_t *t = rt_graph_node(g, i);
        dot_id(g, t, to, sizeof to);
        for (int k = 0; k < RT_MAX_SRC && t->src[k] != NULL; k++) {
            dot_id(g, t->src[k], from, sizeof from);
            if (from[0] == 't') /* a split input's copy, or a base outside the graph */
                fprintf(f, "  \"%s\" [label=\"%s\", shape=note, fillcolor=\"%s\"];\n", from, t->src[k]->name,
                        colour_of(s, t->src[k]));
            fprintf(f, "  %s%s%s -> %s;\n", from[0] == 't' ? "\"" : "", from, from[0] == 't' ? "\"" : "", to);
        }
    }
}

static void write_legend(FILE *f, const rt_sched_t *s) {
    fprintf(f, "  subgraph cluster_devices {\n    label=\"devices (%d splits)\";\n", (int)rt_sched_n_splits(s));
    for (int32_t i = 0; i < rt_sched_n_devices(s); i++)
        fprintf(f, "    dev%d [label=\"%s\", shape=box, fillcolor=\"%s\"];\n", (int)i,
                rt_device_name(rt_sched_device(s, i)), palette[i < N_PALETTE ? i : N_PALETTE - 1]);
    fprintf(f, "  }\n");
}

void tool_plan_write_dot(const rt_graph_t *g, const rt_sched_t *s, FILE *f) {
    int32_t n_layers = 0;
    for (int32_t i = 0; i < rt_graph_n_nodes(g); i++) {
        const int32_t il = layer_of(rt_graph_node(g, i));
        if (il + 1 > n_layers) n_layers = il + 1;
    }
    fprintf(f, "digraph rt_plan {\n  rankdir=TB;\n  node [fontname=\"monospace\", style=filled];\n");
    write_legend(f, s);
    write_layer(f, g, s, -1);
    for (int32_t il = 0; il < n_layers; il++) {
        fprintf(f, "  subgraph cluster_layer_%d {\n    label=\"layer %d\";\n", (int)il, (int)il);
        write_layer(f, g, s, il);
        fprintf(f, "  }\n");
    }
    write_edges(f, g, s);
    fprintf(f, "}\n");
}
