/* SPDX-License-Identifier: MIT */
/* plan_names.c: see plan_names.h. Layers are found in two passes over the
 * nodes: forward, each node takes the largest layer of its sources (the
 * residual stream carries it from layer to layer); backward, a node still
 * of no layer that is not tied to the embeddings or the head takes the
 * smallest layer of its readers, and a node read by one node only, of a
 * later layer, moves there (the norm that opens a layer reads the
 * residual stream of the one before). */
#include "plan_names.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Where a layer suffix (".N" or "_lN") starts at the end of name, its
 * number in *layer; strlen(name) and -1 when there is none. */
static size_t layer_suffix(const char *name, int32_t *layer) {
    const size_t len = strlen(name);
    size_t d = len;
    while (d > 0 && isdigit((unsigned char)name[d - 1])) d--;
    *layer = -1;
    if (d == len || len - d > 6) return len;
    const size_t sep = d >= 1 && name[d - 1] == '.' ? 1 : d >= 2 && name[d - 1] == 'l' && name[d - 2] == '_' ? 2 : 0;
    if (sep == 0) return len;
    *layer = (int32_t)atoi(name + d);
    return d - sep;
}

int32_t tool_tensor_layer(const char *name) {
    if (strncmp(name, "blk.", 4) == 0 && isdigit((unsigned char)name[4])) return (int32_t)atoi(name + 4);
    int32_t layer;
    layer_suffix(name, &layer);
    return layer;
}

/* A name the model gave (the core's view names "base (view)" are not). */
static bool own_name(const rt_tensor_t *t) { return t->name[0] != 0 && strstr(t->name, " (") == NULL; }

/* The weight, cache or input name without its layer: "blk.3.attn_q.weight"
 * -> "attn_q", "cache_k_l3" -> "cache_k". */
static void short_name(const char *name, char *out, size_t size) {
    if (strncmp(name, "blk.", 4) == 0) {
        const char *rest = strchr(name + 4, '.');
        if (rest != NULL) name = rest + 1;
    }
    int32_t layer;
    size_t len = layer_suffix(name, &layer);
    const size_t w = strlen(".weight");
    if (len > w && strncmp(name + len - w, ".weight", w) == 0) len -= w;
    snprintf(out, size, "%.*s", (int)len, name);
}

/* Index of t among g's first n nodes, or -1. */
static int32_t node_index(const rt_graph_t *g, int32_t n, const rt_tensor_t *t) {
    for (int32_t i = n - 1; i >= 0; i--)
        if (rt_graph_node(g, i) == t) return i;
    return -1;
}

typedef struct node_info {
    int32_t layer;
    bool global;     /* reads a weight of no layer: the embeddings or the head */
    bool from_back;  /* layer given by a reader */
    int32_t readers; /* nodes that read it */
    int32_t src[RT_MAX_SRC]; /* node index of each source, -1 for a leaf */
} node_info_t;

static void forward(const rt_graph_t *g, node_info_t *info) {
    for (int32_t i = 0; i < rt_graph_n_nodes(g); i++) {
        const rt_tensor_t *t = rt_graph_node(g, i);
        node_info_t *n = &info[i];
        n->layer = -1;
        for (int k = 0; k < RT_MAX_SRC; k++) {
            const rt_tensor_t *s = t->src[k];
            n->src[k] = s != NULL ? node_index(g, i, s) : -1;
            if (s == NULL) continue;
            if (n->src[k] >= 0) info[n->src[k]].readers++;
            const int32_t l = n->src[k] >= 0 ? info[n->src[k]].layer : tool_tensor_layer(s->name);
            if (n->src[k] < 0 && l < 0 && own_name(s) && !(s->flags & RT_TENSOR_FLAG_INPUT)) n->global = true;
            if (l > n->layer) n->layer = l;
        }
        if (n->global) n->layer = -1;
    }
}

/* Whether reader r gives source s its layer: s is of no layer yet, or
 * got one from a later reader that r precedes; or s is the one input of
 * a layer's first weighted op (the norm that opens it), which the
 * forward pass left in the layer before. */
static bool gives_layer(const node_info_t *r, const node_info_t *s) {
    if (s->global || r->layer < 0) return false;
    if (s->layer < 0 || (s->from_back && r->layer < s->layer)) return true;
    return s->readers == 1 && r->layer > s->layer;
}

static void backward(const rt_graph_t *g, node_info_t *info) {
    for (int32_t i = rt_graph_n_nodes(g) - 1; i >= 0; i--)
        for (int k = 0; k < RT_MAX_SRC; k++) {
            node_info_t *s = info[i].src[k] >= 0 ? &info[info[i].src[k]] : NULL;
            if (s == NULL || !gives_layer(&info[i], s)) continue;
            s->layer = info[i].layer;
            s->from_back = true;
        }
}

/* The named leaf (a weight, the cache, an input) t is, or is a view of. */
static const rt_tensor_t *leaf_of(const rt_tensor_t *t) {
    if (t != NULL && t->op != RT_OP_NONE) t = t->view_src;
    return t != NULL && t->op == RT_OP_NONE && own_name(t) ? t : NULL;
}

/* What the node reads, for its name: a weight or cache first (or a view
 * of one: the scores read the K cache), else an input. */
static const rt_tensor_t *read_leaf(const rt_tensor_t *t) {
    const rt_tensor_t *input = NULL;
    for (int k = 0; k < RT_MAX_SRC; k++) {
        const rt_tensor_t *s = leaf_of(t->src[k]);
        if (s == NULL) continue;
        if (!(s->flags & RT_TENSOR_FLAG_INPUT)) return s;
        if (input == NULL) input = s;
    }
    return input;
}

static void name_node(rt_tensor_t *t, const node_info_t *n) {
    char op[20], leaf[32], label[RT_MAX_NAME - 8]; /* room for ".N" */
    snprintf(op, sizeof op, "%s", rt_op_name(t->op));
    for (char *c = op; *c; c++) *c = (char)tolower((unsigned char)*c);
    const rt_tensor_t *s = read_leaf(t);
    if (s != NULL) short_name(s->name, leaf, sizeof leaf);
    if (s != NULL) snprintf(label, sizeof label, "%s(%s)", op, leaf);
    else snprintf(label, sizeof label, "%s", op);
    if (n->layer >= 0) rt_format_name(t, "%s.%d", label, (int)n->layer);
    else rt_set_name(t, label);
}

bool tool_plan_name_nodes(rt_graph_t *g) {
    const int32_t n = rt_graph_n_nodes(g);
    node_info_t *info = calloc((size_t)(n > 0 ? n : 1), sizeof info[0]);
    if (info == NULL) return false;
    forward(g, info);
    backward(g, info);
    for (int32_t i = 0; i < n; i++)
        if (!own_name(rt_graph_node(g, i))) name_node(rt_graph_node(g, i), &info[i]);
    free(info);
    return true;
}
