/* SPDX-License-Identifier: MIT */
/* grammar_check.c: what the parsed rules mean, checked once before any
 * matching: every name used is defined, the start rule exists, and no
 * rule reachable from it is left-recursive in a way that would loop.
 *
 * Left recursion: a rule that can call itself again before a character
 * is matched (expr ::= expr "+" term, or through other rules, or behind
 * elements that can match nothing). A top-down matcher expanding it
 * would push a frame for what follows the call, forever. Such a grammar
 * is refused naming the rule. The one harmless kind is kept: when every
 * call on the way is the last element of its alternative (the matcher
 * keeps no frame for such a call), the expansion comes back to a stack it
 * has already seen and stops; ("a"?)* is written that way.
 *
 * The calls made before any character form a graph (a rule to each rule
 * its alternatives can start with); a cycle in it that holds a call with
 * something after it is the refused kind: its two ends are in the same
 * strongly connected component (Tarjan's algorithm, without recursion,
 * so a long chain of rules cannot overflow the C stack). */
#include "grammar_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static rt_status_t check_defined(const rtm_gbnf_t *g) {
    for (int32_t r = 0; r < g->n_rules; r++) {
        const gr_rule_t *rule = &g->rules[r];
        if (rule->name >= 0 && !rule->defined)
            return rtm_error(RT_ERR_FORMAT, "grammar: line %d, column %d: undefined rule '%s'", rule->line,
                             rule->col, g->names + rule->name);
    }
    return RT_OK;
}

static int32_t find_rule(const rtm_gbnf_t *g, const char *name) {
    for (int32_t r = 0; r < g->n_rules; r++)
        if (g->rules[r].name >= 0 && strcmp(g->names + g->rules[r].name, name) == 0) return r;
    return -1;
}

//===--- the rules that can match nothing ---===//

/* A worklist over the alternatives: left[a] counts the elements of
 * alternative a not yet known to match nothing; a rule is nullable when
 * one of its alternatives reaches 0, and each reference to it counts down
 * then. uses[] lists, by target rule, the alternatives referring to it. */
typedef struct nullable_work {
    int32_t *alt_rule, *left, *use_first, *uses, *queue;
} nullable_work_t;

static void nullable_free(nullable_work_t *w) {
    free(w->alt_rule), free(w->left), free(w->use_first), free(w->uses), free(w->queue);
}

static bool nullable_index(const rtm_gbnf_t *g, nullable_work_t *w) {
    const size_t na = (size_t)g->n_alts + 1, nr = (size_t)g->n_rules + 1, ne = (size_t)g->n_elems + 1;
    w->alt_rule = malloc(na * sizeof(int32_t));
    w->left = calloc(na, sizeof(int32_t));
    w->use_first = calloc(nr + 1, sizeof(int32_t));
    w->uses = malloc(ne * sizeof(int32_t));
    w->queue = malloc(nr * sizeof(int32_t));
    if (!w->alt_rule || !w->left || !w->use_first || !w->uses || !w->queue) return false;
    for (int32_t r = 0; r < g->n_rules; r++)
        for (int32_t a = g->rules[r].first_alt; a < g->rules[r].first_alt + g->rules[r].n_alts; a++) {
            w->alt_rule[a] = r;
            for (int32_t i = g->alts[a]; g->elems[i].kind != GR_END; i++) {
                w->left[a]++;
                if (g->elems[i].kind == GR_REF) w->use_first[g->elems[i].arg + 1]++;
            }
        }
    for (int32_t r = 0; r < g->n_rules; r++) w->use_first[r + 1] += w->use_first[r];
    int32_t *fill = w->queue; /* borrowed as each target's next slot */
    memcpy(fill, w->use_first, (size_t)g->n_rules * sizeof fill[0]);
    for (int32_t a = 0; a < g->n_alts; a++)
        for (int32_t i = g->alts[a]; g->elems[i].kind != GR_END; i++)
            if (g->elems[i].kind == GR_REF) w->uses[fill[g->elems[i].arg]++] = a;
    return true;
}

/* nullable[r] for every rule; false when out of memory. */
static bool find_nullable(const rtm_gbnf_t *g, bool *nullable) {
    nullable_work_t w = {0};
    bool ok = nullable_index(g, &w);
    int32_t n_queue = 0;
    for (int32_t a = 0; ok && a < g->n_alts; a++)
        if (w.left[a] == 0 && !nullable[w.alt_rule[a]]) nullable[w.queue[n_queue++] = w.alt_rule[a]] = true;
    for (int32_t q = 0; ok && q < n_queue; q++) {
        const int32_t t = w.queue[q];
        for (int32_t u = w.use_first[t]; u < w.use_first[t + 1]; u++) {
            const int32_t a = w.uses[u], r = w.alt_rule[a];
            if (--w.left[a] == 0 && !nullable[r]) nullable[w.queue[n_queue++] = r] = true;
        }
    }
    nullable_free(&w);
    return ok;
}

//===--- the calls made before a character ---===//

/* Edges in compressed rows: rule u's are to[first[u] .. first[u + 1]),
 * tail[e] when the call is its alternative's last element. */
typedef struct left_graph {
    int32_t *first, *to;
    bool *tail;
} left_graph_t;

static void graph_free(left_graph_t *lg) { free(lg->first), free(lg->to), free(lg->tail); }

static bool left_graph(const rtm_gbnf_t *g, const bool *nullable, left_graph_t *lg) {
    lg->first = calloc((size_t)g->n_rules + 1, sizeof(int32_t));
    lg->to = malloc(((size_t)g->n_elems + 1) * sizeof(int32_t));
    lg->tail = malloc(((size_t)g->n_elems + 1) * sizeof(bool));
    if (!lg->first || !lg->to || !lg->tail) return false;
    int32_t n = 0;
    for (int32_t u = 0; u < g->n_rules; u++) {
        lg->first[u] = n;
        for (int32_t a = g->rules[u].first_alt; a < g->rules[u].first_alt + g->rules[u].n_alts; a++)
            for (int32_t i = g->alts[a]; g->elems[i].kind == GR_REF; i++) {
                lg->to[n] = g->elems[i].arg;
                lg->tail[n++] = g->elems[i + 1].kind == GR_END;
                if (!nullable[g->elems[i].arg]) break;
            }
    }
    lg->first[g->n_rules] = n;
    return true;
}

/* reach[r]: r can be called from the start rule. */
static bool find_reachable(const rtm_gbnf_t *g, int32_t root, bool *reach) {
    int32_t *todo = malloc(((size_t)g->n_rules + 1) * sizeof todo[0]);
    if (todo == NULL) return false;
    int32_t n = 0;
    reach[todo[n++] = root] = true;
    while (n > 0) {
        const gr_rule_t *r = &g->rules[todo[--n]];
        for (int32_t a = r->first_alt; a < r->first_alt + r->n_alts; a++)
            for (int32_t i = g->alts[a]; g->elems[i].kind != GR_END; i++) {
                const int32_t callee = g->elems[i].arg;
                if (g->elems[i].kind == GR_REF && !reach[callee]) reach[todo[n++] = callee] = true;
            }
    }
    free(todo);
    return true;
}

//===--- strongly connected components ---===//

typedef struct tarjan {
    int32_t *index, *low, *comp, *stack, *call_v, *call_e;
    bool *on_stack;
    int32_t n_stack, n_call, counter, n_comp;
} tarjan_t;

static void tarjan_free(tarjan_t *t) {
    free(t->index), free(t->low), free(t->comp), free(t->stack), free(t->call_v), free(t->call_e);
    free(t->on_stack);
}

static void tarjan_enter(tarjan_t *t, const left_graph_t *lg, int32_t v) {
    t->index[v] = t->low[v] = t->counter++;
    t->stack[t->n_stack++] = v;
    t->on_stack[v] = true;
    t->call_v[t->n_call] = v;
    t->call_e[t->n_call++] = lg->first[v];
}

/* The components of everything reachable from v, into t->comp. */
static void tarjan_from(tarjan_t *t, const left_graph_t *lg, int32_t v0) {
    tarjan_enter(t, lg, v0);
    while (t->n_call > 0) {
        const int32_t v = t->call_v[t->n_call - 1];
        if (t->call_e[t->n_call - 1] < lg->first[v + 1]) {
            const int32_t w = lg->to[t->call_e[t->n_call - 1]++];
            if (t->index[w] < 0) tarjan_enter(t, lg, w);
            else if (t->on_stack[w] && t->index[w] < t->low[v]) t->low[v] = t->index[w];
            continue;
        }
        t->n_call--;
        if (t->low[v] == t->index[v]) {
            int32_t w;
            do {
                w = t->stack[--t->n_stack];
                t->on_stack[w] = false;
                t->comp[w] = t->n_comp;
            } while (w != v);
            t->n_comp++;
        }
        if (t->n_call > 0) {
            const int32_t u = t->call_v[t->n_call - 1];
            if (t->low[v] < t->low[u]) t->low[u] = t->low[v];
        }
    }
}

static rt_status_t refuse_cycle(const rtm_gbnf_t *g, int32_t u, int32_t w) {
    const gr_rule_t *owner = &g->rules[g->rules[u].owner];
    const char *a = rtm_gbnf_rule_name(g, u), *b = rtm_gbnf_rule_name(g, w);
    char through[96] = "";
    if (strcmp(a, b) != 0) snprintf(through, sizeof through, " through rule '%.64s'", b);
    return rtm_error(RT_ERR_FORMAT, "grammar: line %d, column %d: rule '%s' is left-recursive%s: it can "
                     "call itself again before matching a character, which never ends (write the "
                     "recursion as a repetition: list ::= item (\",\" item)*)", owner->line, owner->col, a,
                     through);
}

/* A cycle of calls before a character that holds a call with something
 * after it: refused, naming the rule that makes the call. */
static rt_status_t check_cycles(const rtm_gbnf_t *g, const left_graph_t *lg, const bool *reach) {
    const size_t n = (size_t)g->n_rules + 1;
    tarjan_t t = {.index = malloc(n * sizeof(int32_t)), .low = malloc(n * sizeof(int32_t)),
                  .comp = malloc(n * sizeof(int32_t)), .stack = malloc(n * sizeof(int32_t)),
                  .call_v = malloc(n * sizeof(int32_t)), .call_e = malloc(n * sizeof(int32_t)),
                  .on_stack = calloc(n, sizeof(bool))};
    rt_status_t st = RT_OK;
    if (!t.index || !t.low || !t.comp || !t.stack || !t.call_v || !t.call_e || !t.on_stack)
        st = rtm_error(RT_ERR_OUT_OF_MEMORY, "grammar: no memory to check the rules");
    for (int32_t v = 0; st == RT_OK && v < g->n_rules; v++) t.index[v] = -1;
    for (int32_t v = 0; st == RT_OK && v < g->n_rules; v++)
        if (reach[v] && t.index[v] < 0) tarjan_from(&t, lg, v);
    for (int32_t u = 0; st == RT_OK && u < g->n_rules; u++)
        for (int32_t e = lg->first[u]; reach[u] && e < lg->first[u + 1] && st == RT_OK; e++)
            if (!lg->tail[e] && t.comp[u] == t.comp[lg->to[e]]) st = refuse_cycle(g, u, lg->to[e]);
    tarjan_free(&t);
    return st;
}

static rt_status_t check_left_recursion(const rtm_gbnf_t *g) {
    bool *nullable = calloc((size_t)g->n_rules + 1, sizeof(bool));
    bool *reach = calloc((size_t)g->n_rules + 1, sizeof(bool));
    left_graph_t lg = {0};
    rt_status_t st = RT_OK;
    if (!nullable || !reach || !find_nullable(g, nullable) || !find_reachable(g, g->root, reach) ||
        !left_graph(g, nullable, &lg))
        st = rtm_error(RT_ERR_OUT_OF_MEMORY, "grammar: no memory to check the rules");
    if (st == RT_OK) st = check_cycles(g, &lg, reach);
    graph_free(&lg);
    free(nullable);
    free(reach);
    return st;
}

rt_status_t rtm_gbnf_check(rtm_gbnf_t *g, const char *root) {
    rt_status_t st = check_defined(g);
    if (st != RT_OK) return st;
    const char *name = root ? root : "root";
    g->root = find_rule(g, name);
    if (g->root < 0)
        return rtm_error(RT_ERR_FORMAT, "grammar: no rule named '%.64s' (the start rule)", name);
    return check_left_recursion(g);
}
