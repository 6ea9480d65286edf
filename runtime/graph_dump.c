/* SPDX-License-Identifier: MIT */
/* graph_dump.c: a graph as text, one line per leaf and node, and as
 * Graphviz DOT, both through the caller's writer. Tensors are named by
 * their place in the graph, "l<i>" for leaf i and "n<i>" for node i, so a
 * dump is the same on every run and a line can be found by grep. */
#include "graph_impl.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

typedef struct sink {
    rt_write_fn write;
    void *user_data;
} sink_t;

/* rt_write_text into the sink. */
#define emit(s, ...) rt_write_text((s)->write, (s)->user_data, __VA_ARGS__)

/* t's id, "n<i>" or "l<i>". Sources of node i come before it, so the
 * search runs backwards from there; dumps are rare, the scan is fine. */
static const char *tensor_id(const rt_graph_t *g, const rt_tensor_t *t, int32_t before,
                             char *buf, size_t size) {
    for (int32_t i = before - 1; i >= 0; i--) {
        if (g->nodes[i] != t) continue;
        snprintf(buf, size, "n%d", (int)i);
        return buf;
    }
    for (int32_t i = 0; i < g->n_leafs; i++) {
        if (g->leafs[i] != t) continue;
        snprintf(buf, size, "l%d", (int)i);
        return buf;
    }
    return "?";
}

#define ID_SIZE 16
#define ID(g, t, before) tensor_id((g), (t), (before), (char[ID_SIZE]){0}, ID_SIZE)

//===--- text ---===//

static void text_tensor(const sink_t *s, const char *id, const rt_tensor_t *t) {
    emit(s, "%-6s %-13s %-4s ne{%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 "} "
         "nb{%zu,%zu,%zu,%zu} %s", id, rt_op_name(t->op), rt_type_name(t->type), t->ne[0],
         t->ne[1], t->ne[2], t->ne[3], t->nb[0], t->nb[1], t->nb[2], t->nb[3],
         t->name[0] != 0 ? t->name : "-");
}

static void text_sources(const sink_t *s, const rt_graph_t *g, const rt_tensor_t *t,
                         int32_t index) {
    const char *sep = " <-";
    for (int i = 0; i < RT_MAX_SRC; i++) {
        if (t->src[i] == NULL) continue;
        emit(s, "%s %s:%s", sep, ID(g, t->src[i], index),
             t->src[i]->name[0] != 0 ? t->src[i]->name : "-");
        sep = ",";
    }
}

void rt_graph_write_text(const rt_graph_t *g, rt_write_fn write, void *user_data) {
    if (g == NULL || write == NULL) return;
    const sink_t s = {write, user_data};
    emit(&s, "graph: %d leafs, %d nodes, size %d\n", (int)g->n_leafs, (int)g->n_nodes,
         (int)g->size);
    char id[ID_SIZE];
    for (int32_t i = 0; i < g->n_leafs; i++) {
        snprintf(id, sizeof id, "l%d", (int)i);
        text_tensor(&s, id, g->leafs[i]);
        emit(&s, "\n");
    }
    for (int32_t i = 0; i < g->n_nodes; i++) {
        snprintf(id, sizeof id, "n%d", (int)i);
        text_tensor(&s, id, g->nodes[i]);
        text_sources(&s, g, g->nodes[i], i);
        emit(&s, "\n");
    }
}

//===--- DOT ---===//

/* The name as the inside of a DOT string: quotes and backslashes escaped. */
static const char *dot_escape(const char *name, char *buf, size_t size) {
    size_t n = 0;
    for (const char *c = name; *c != 0 && n + 2 < size; c++) {
        if (*c == '"' || *c == '\\') buf[n++] = '\\';
        buf[n++] = *c;
    }
    buf[n] = 0;
    return buf;
}

static void dot_tensor(const sink_t *s, const char *id, const rt_tensor_t *t, bool leaf) {
    char name[2 * RT_MAX_NAME];
    emit(s, "  %s [shape = %s%s, label = \"%s %s\\n%s\\n%s {%" PRId64 ",%" PRId64 ",%" PRId64
         ",%" PRId64 "}\"];\n", id, leaf ? "box" : "ellipse",
         t->view_src != NULL ? ", style = dashed" : "", id, rt_op_name(t->op),
         dot_escape(t->name, name, sizeof name), rt_type_name(t->type), t->ne[0], t->ne[1],
         t->ne[2], t->ne[3]);
}

static void dot_edges(const sink_t *s, const rt_graph_t *g, int32_t index) {
    const rt_tensor_t *t = g->nodes[index];
    for (int i = 0; i < RT_MAX_SRC; i++) {
        if (t->src[i] == NULL) continue;
        emit(s, "  %s -> n%d [label = \"src%d\"];\n", ID(g, t->src[i], index), (int)index, i);
    }
}

void rt_graph_write_dot(const rt_graph_t *g, rt_write_fn write, void *user_data) {
    if (g == NULL || write == NULL) return;
    const sink_t s = {write, user_data};
    emit(&s, "digraph rt_graph {\n  node [fontname = \"monospace\"];\n");
    char id[ID_SIZE];
    for (int32_t i = 0; i < g->n_leafs; i++) {
        snprintf(id, sizeof id, "l%d", (int)i);
        dot_tensor(&s, id, g->leafs[i], true);
    }
    for (int32_t i = 0; i < g->n_nodes; i++) {
        snprintf(id, sizeof id, "n%d", (int)i);
        dot_tensor(&s, id, g->nodes[i], false);
    }
    for (int32_t i = 0; i < g->n_nodes; i++) dot_edges(&s, g, i);
    emit(&s, "}\n");
}
