/* SPDX-License-Identifier: MIT */
/* grammar_trie.c: the vocabulary's pieces as a trie, and the walk that
 * finds every token a grammar state allows in one pass.
 *
 * Tokens are sorted by their piece's bytes; consecutive pieces share
 * their common prefix, so the trie comes out in preorder from one pass
 * (a node per byte past the prefix shared with the piece before), and
 * each node records where its subtree ends. The walk visits the nodes in
 * that order with the matcher's state at each depth: a node's state is
 * its parent's stepped by its byte, and when no stack survives the step
 * the whole subtree is skipped at once. A token is allowed when its node
 * is reached, also when its piece ends inside a UTF-8 character that can
 * still become one the grammar takes. Tokens with the same piece share a
 * node. */
#include "grammar_impl.h"

#include <stdlib.h>
#include <string.h>

typedef struct piece_ref {
    const char *p;
    uint32_t len;
    int32_t id;
} piece_ref_t;

static int by_piece(const void *a, const void *b) {
    const piece_ref_t *x = a, *y = b;
    const int c = memcmp(x->p, y->p, x->len < y->len ? x->len : y->len);
    if (c != 0) return c;
    if (x->len != y->len) return x->len < y->len ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* Lays the sorted pieces out as nodes; path[d] is the open node at depth d. */
static void lay_out(gr_trie_t *t, const piece_ref_t *r, int32_t n, int32_t *path) {
    int32_t open = 0, n_toks = 0;
    path[0] = 0;
    t->nodes[0] = (gr_trie_node_t){0};
    t->n_nodes = 1;
    for (int32_t i = 0; i < n; i++) {
        uint32_t lcp = 0;
        if (i > 0)
            while (lcp < r[i].len && lcp < r[i - 1].len && r[i].p[lcp] == r[i - 1].p[lcp]) lcp++;
        for (; open > (int32_t)lcp; open--) t->nodes[path[open]].skip = t->n_nodes;
        for (uint32_t d = lcp; d < r[i].len; d++) {
            path[++open] = t->n_nodes;
            t->nodes[t->n_nodes++] = (gr_trie_node_t){.depth = open, .byte = (uint8_t)r[i].p[d]};
        }
        gr_trie_node_t *node = &t->nodes[path[open]];
        if (node->tok_n++ == 0) node->tok_first = n_toks;
        t->toks[n_toks++] = r[i].id;
    }
    for (; open >= 0; open--) t->nodes[path[open]].skip = t->n_nodes;
}

rt_status_t gr_trie_init(gr_trie_t *t, char *blob, uint32_t *offs, int32_t n_tokens) {
    *t = (gr_trie_t){.blob = blob, .offs = offs, .n_tokens = n_tokens};
    piece_ref_t *r = malloc(((size_t)n_tokens + 1) * sizeof r[0]);
    int32_t n = 0;
    size_t bytes = 0;
    for (int32_t i = 0; r && i < n_tokens; i++) {
        const uint32_t len = offs[i + 1] - offs[i];
        if (len == 0) continue;
        r[n++] = (piece_ref_t){blob + offs[i], len, i};
        bytes += len;
        if ((int32_t)len > t->max_depth) t->max_depth = (int32_t)len;
    }
    int32_t *path = malloc(((size_t)t->max_depth + 1) * sizeof path[0]);
    t->nodes = malloc((bytes + 1) * sizeof t->nodes[0]);
    t->toks = malloc(((size_t)n + 1) * sizeof t->toks[0]);
    t->states = malloc(((size_t)t->max_depth + 1) * sizeof t->states[0]);
    rt_status_t st = RT_OK;
    if (!r || !path || !t->nodes || !t->toks || !t->states) {
        st = rtm_error(RT_ERR_OUT_OF_MEMORY, "grammar: no memory for the trie of %d tokens", n_tokens);
    } else {
        qsort(r, (size_t)n, sizeof r[0], by_piece);
        lay_out(t, r, n, path);
        gr_trie_node_t *fit = realloc(t->nodes, (size_t)t->n_nodes * sizeof fit[0]);
        if (fit) t->nodes = fit;
    }
    free(path);
    free(r);
    if (st != RT_OK) gr_trie_deinit(t);
    return st;
}

void gr_trie_deinit(gr_trie_t *t) {
    free(t->nodes), free(t->toks), free(t->states), free(t->blob), free(t->offs);
    *t = (gr_trie_t){0};
}

rt_status_t gr_trie_allowed(gr_trie_t *t, gr_matcher_t *m, gr_state_t from, uint8_t *allowed) {
    gr_state_t *states = t->states;
    states[0] = from;
    for (int32_t i = 1; i < t->n_nodes;) {
        const gr_trie_node_t *node = &t->nodes[i];
        gr_state_t s = states[node->depth - 1];
        if (!gr_step(m, &s, node->byte)) {
            if (m->err != RT_OK) return m->err;
            i = node->skip;
            continue;
        }
        states[node->depth] = s;
        for (int32_t k = 0; k < node->tok_n; k++) allowed[t->toks[node->tok_first + k]] = 1;
        i++;
    }
    return RT_OK;
}

bool gr_trie_take(const gr_trie_t *t, gr_matcher_t *m, gr_state_t *s, int32_t tok) {
    const uint32_t first = t->offs[tok], end = t->offs[tok + 1];
    if (first == end) return false;
    gr_state_t next = *s;
    for (uint32_t i = first; i < end; i++)
        if (!gr_step(m, &next, (uint8_t)t->blob[i])) return false;
    *s = next;
    return true;
}
