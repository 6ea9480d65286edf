/* SPDX-License-Identifier: MIT */
/* grammar.c: the matcher, a pushdown automaton over the rules of
 * grammar_impl.h run on all its possible stacks at once.
 *
 * A stack is where the text could be in the rules: its top a character
 * set (what may come next), below it the places each rule called goes on
 * after the call. A state is the set of every stack the text so far
 * allows. Advancing by a code point keeps the stacks whose top takes it,
 * moves each past its top and expands it again until every top is a
 * character set: an element after the last of an alternative returns to
 * the caller below; a reference pushes the caller's next position and
 * goes on at each alternative of the rule. A reference that is its
 * alternative's last element pushes nothing (the callee returns straight
 * to the caller's caller), so right recursion, which is what repetitions
 * become, never deepens a stack. The stack that is empty is the start
 * rule matched to its end: the text may stop there.
 *
 * Everything is interned. A stack is a chain of nodes (position, node
 * below) where equal chains are the same node, so a stack's identity is
 * its top node's id, a push or a pop costs one lookup, and stacks share
 * what is below. A set of stacks is a sorted list of ids, interned too,
 * and each transition computed (set, code point -> set) is kept: the
 * states met so far and their transitions are a deterministic automaton
 * built while it runs, and walking the vocabulary's trie mostly follows
 * transitions already known (inside a JSON string every character but a
 * few leads back to the same set). Expansion marks each node with the
 * number of the set being built (stamp), which removes duplicates and
 * stops the expansions that come back to a stack already met (the tail
 * calls of ("a"?)*; the looping kind of left recursion is refused by
 * grammar_check.c).
 *
 * Bytes come in, UTF-8 is decoded on the way: a character begun keeps
 * its bits and the range of code points it can still become (only valid
 * ones: no overlong forms, surrogates or values past U+10FFFF), and the
 * state lives while some stack's top can take a code point in that
 * range, so a token that ends inside a character is judged on what it
 * has.
 *
 * The cache only grows while a call runs and is bounded by GR_MAX_CACHE;
 * between calls, past GR_KEEP_CACHE, it is dropped and the current state
 * copied into a new one. */
#include "grammar_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A transition past ASCII: key (set << 21 | code point) + 1, 0 empty. */
typedef struct gr_trans {
    uint64_t key;
    int32_t set;
} gr_trans_t;

struct gr_cache {
    gr_node_t *nodes;
    int32_t n_nodes, cap_nodes;
    int32_t *node_heads;     /* node_mask + 1 chains */
    uint32_t node_mask;
    gr_set_t *sets;
    int32_t n_sets, cap_sets;
    int32_t *ids;            /* the sets' members */
    int32_t n_ids, cap_ids;
    int32_t *set_heads;      /* set_mask + 1 chains */
    uint32_t set_mask;
    gr_trans_t *trans;       /* trans_mask + 1 slots, at most half full */
    uint32_t trans_mask;
    int32_t n_trans;
    int32_t n_step_tables;   /* gr_set_t.step arrays allocated */
    int32_t *work;           /* nodes to expand */
    int32_t cap_work;
    int32_t *out;            /* the set being built */
    int32_t n_out, cap_out;
    uint32_t stamp;          /* the set being built's number */
};

//===--- failures and limits ---===//

/* Records the call's first failure ("grammar: ..."); returns false. */
static bool fail(gr_matcher_t *m, rt_status_t st, const char *fmt, ...) RT_PRINTF(3, 4);
static bool fail(gr_matcher_t *m, rt_status_t st, const char *fmt, ...) {
    if (m->err != RT_OK) return false;
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    m->err = rtm_error(st, "grammar: %s", msg);
    return false;
}

static size_t cache_bytes(const gr_cache_t *c) {
    return (size_t)c->cap_nodes * sizeof c->nodes[0] + ((size_t)c->node_mask + 1) * sizeof(int32_t) +
           (size_t)c->cap_sets * sizeof c->sets[0] + (size_t)c->cap_ids * sizeof(int32_t) +
           ((size_t)c->set_mask + 1) * sizeof(int32_t) + ((size_t)c->trans_mask + 1) * sizeof c->trans[0] +
           (size_t)c->n_step_tables * 256 * sizeof(int32_t) + (size_t)c->cap_work * sizeof(int32_t) +
           (size_t)c->cap_out * sizeof(int32_t);
}

/* Room for `need` items of `size` bytes in *arr, within GR_MAX_CACHE. */
static bool grow(gr_matcher_t *m, void **arr, int32_t *cap, int32_t need, size_t size) {
    if (need <= *cap) return true;
    int32_t c = *cap < 64 ? 64 : *cap;
    while (c < need) c *= 2;
    if (cache_bytes(m->c) + (size_t)(c - *cap) * size > GR_MAX_CACHE)
        return fail(m, RT_ERR_OUT_OF_MEMORY, "the matcher's state passed its limit of %zu bytes",
                    GR_MAX_CACHE);
    void *a = realloc(*arr, (size_t)c * size);
    if (a == NULL) return fail(m, RT_ERR_OUT_OF_MEMORY, "no memory for the matcher's state (%zu bytes)",
                               cache_bytes(m->c));
    *arr = a;
    *cap = c;
    return true;
}

/* A chain table of n_buckets heads, all empty. */
static int32_t *new_heads(uint32_t n_buckets) {
    int32_t *h = malloc((size_t)n_buckets * sizeof h[0]);
    if (h) memset(h, 0xff, (size_t)n_buckets * sizeof h[0]);
    return h;
}

//===--- the cache ---===//

static void cache_free(gr_cache_t *c) {
    if (c == NULL) return;
    for (int32_t s = 0; s < c->n_sets; s++) free(c->sets[s].step);
    free(c->nodes), free(c->node_heads), free(c->sets), free(c->ids), free(c->set_heads);
    free(c->trans), free(c->work), free(c->out);
    free(c);
}

/* Node 0 (the bottom) and set 0 (empty). */
static gr_cache_t *cache_new(void) {
    gr_cache_t *c = calloc(1, sizeof *c);
    if (c == NULL) return NULL;
    c->node_mask = c->set_mask = 1023;
    c->trans_mask = 1023;
    c->cap_nodes = c->cap_sets = 1024;
    c->nodes = malloc((size_t)c->cap_nodes * sizeof c->nodes[0]);
    c->sets = malloc((size_t)c->cap_sets * sizeof c->sets[0]);
    c->node_heads = new_heads(c->node_mask + 1);
    c->set_heads = new_heads(c->set_mask + 1);
    c->trans = calloc((size_t)c->trans_mask + 1, sizeof c->trans[0]);
    if (!c->nodes || !c->sets || !c->node_heads || !c->set_heads || !c->trans) return cache_free(c), NULL;
    c->nodes[c->n_nodes++] = (gr_node_t){.pos = -1, .parent = -1, .depth = 0, .next = -1};
    c->sets[c->n_sets++] = (gr_set_t){.next = -1};
    return c;
}

//===--- nodes ---===//

static uint32_t hash2(uint32_t a, uint32_t b) {
    uint64_t h = ((uint64_t)a << 32 | b) * 0x9e3779b97f4a7c15ull;
    return (uint32_t)(h >> 32);
}

static bool rehash_nodes(gr_matcher_t *m) {
    gr_cache_t *c = m->c;
    const uint32_t n = (c->node_mask + 1) * 2;
    if (cache_bytes(c) + (size_t)n / 2 * sizeof(int32_t) > GR_MAX_CACHE)
        return fail(m, RT_ERR_OUT_OF_MEMORY, "the matcher's state passed its limit of %zu bytes", GR_MAX_CACHE);
    int32_t *heads = new_heads(n);
    if (heads == NULL) return fail(m, RT_ERR_OUT_OF_MEMORY, "no memory for %zu node chains", (size_t)n);
    for (int32_t id = 1; id < c->n_nodes; id++) {
        const uint32_t h = hash2((uint32_t)c->nodes[id].pos, (uint32_t)c->nodes[id].parent) & (n - 1);
        c->nodes[id].next = heads[h];
        heads[h] = id;
    }
    free(c->node_heads);
    c->node_heads = heads;
    c->node_mask = n - 1;
    return true;
}

/* The node (pos, parent): found, or made. -1 when it would be deeper than
 * GR_MAX_DEPTH (not followed) or a limit was passed (m->err). */
static int32_t node_get(gr_matcher_t *m, int32_t pos, int32_t parent) {
    gr_cache_t *c = m->c;
    const uint32_t h = hash2((uint32_t)pos, (uint32_t)parent);
    for (int32_t id = c->node_heads[h & c->node_mask]; id >= 0; id = c->nodes[id].next)
        if (c->nodes[id].pos == pos && c->nodes[id].parent == parent) return id;
    const int32_t depth = c->nodes[parent].depth + 1;
    if (depth > GR_MAX_DEPTH) return -1;
    if (!grow(m, (void **)&c->nodes, &c->cap_nodes, c->n_nodes + 1, sizeof c->nodes[0])) return -1;
    if ((uint32_t)c->n_nodes > c->node_mask && !rehash_nodes(m)) return -1;
    const int32_t id = c->n_nodes++;
    const uint32_t b = h & c->node_mask;
    c->nodes[id] = (gr_node_t){.pos = pos, .parent = parent, .depth = depth, .next = c->node_heads[b]};
    c->node_heads[b] = id;
    return id;
}

//===--- building a set ---===//

static void build_begin(gr_matcher_t *m) {
    gr_cache_t *c = m->c;
    c->n_out = 0;
    if (++c->stamp == 0) { /* wrapped: forget every mark */
        for (int32_t id = 0; id < c->n_nodes; id++) c->nodes[id].stamp = 0;
        c->stamp = 1;
    }
}

static bool out_push(gr_matcher_t *m, int32_t id) {
    gr_cache_t *c = m->c;
    if (c->n_out >= GR_MAX_STACKS)
        return fail(m, RT_ERR_UNSUPPORTED, "more than %zu stacks at once (the grammar is too ambiguous)",
                    (size_t)GR_MAX_STACKS);
    if (!grow(m, (void **)&c->out, &c->cap_out, c->n_out + 1, sizeof c->out[0])) return false;
    c->out[c->n_out++] = id;
    return true;
}

static bool work_push(gr_matcher_t *m, int32_t *n, int32_t id) {
    gr_cache_t *c = m->c;
    if (!grow(m, (void **)&c->work, &c->cap_work, *n + 1, sizeof c->work[0])) return false;
    c->work[(*n)++] = id;
    return true;
}

/* Pushes a reference's callee: one node per alternative of `rule`, each
 * returning to cont. */
static bool push_alternatives(gr_matcher_t *m, int32_t *n, int32_t rule, int32_t cont) {
    const gr_rule_t *r = &m->g->rules[rule];
    for (int32_t a = r->first_alt; a < r->first_alt + r->n_alts; a++) {
        const int32_t id = node_get(m, m->g->alts[a], cont);
        if (id < 0 && m->err != RT_OK) return false;
        if (id >= 0 && !work_push(m, n, id)) return false;
    }
    return true;
}

/* Expands stack `id` into the set being built: every stack it stands for
 * whose top is a character set, or the empty stack. */
static bool expand(gr_matcher_t *m, int32_t id0) {
    int32_t n = 0;
    if (!work_push(m, &n, id0)) return false;
    while (n > 0) {
        gr_cache_t *c = m->c;
        const int32_t id = c->work[--n];
        gr_node_t *node = &c->nodes[id];
        if (node->stamp == c->stamp) continue;
        node->stamp = c->stamp;
        if (--m->work < 0) return fail(m, RT_ERR_UNSUPPORTED, "matching took more than %zu steps in one call "
                                        "(the grammar is too ambiguous)", (size_t)GR_MAX_WORK);
        if (id == 0) {
            if (!out_push(m, 0)) return false;
            continue;
        }
        const int32_t pos = node->pos, parent = node->parent;
        const gr_elem_t e = m->g->elems[pos];
        if (e.kind == GR_CHARS) {
            if (!out_push(m, id)) return false;
        } else if (e.kind == GR_END) {
            if (!work_push(m, &n, parent)) return false;
        } else {
            const bool tail = m->g->elems[pos + 1].kind == GR_END;
            const int32_t cont = tail ? parent : node_get(m, pos + 1, parent);
            if (cont < 0 && m->err != RT_OK) return false;
            if (cont >= 0 && !push_alternatives(m, &n, e.arg, cont)) return false;
        }
    }
    return true;
}

static int cmp_id(const void *a, const void *b) {
    const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static void sort_ids(int32_t *v, int32_t n) {
    if (n > 16) {
        qsort(v, (size_t)n, sizeof v[0], cmp_id);
        return;
    }
    for (int32_t i = 1; i < n; i++)
        for (int32_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
            const int32_t t = v[j];
            v[j] = v[j - 1], v[j - 1] = t;
        }
}

static uint32_t hash_ids(const int32_t *v, int32_t n) {
    uint32_t h = 2166136261u;
    for (int32_t i = 0; i < n; i++) h = (h ^ (uint32_t)v[i]) * 16777619u;
    return h;
}

static bool rehash_sets(gr_matcher_t *m) {
    gr_cache_t *c = m->c;
    const uint32_t n = (c->set_mask + 1) * 2;
    int32_t *heads = new_heads(n);
    if (heads == NULL) return fail(m, RT_ERR_OUT_OF_MEMORY, "no memory for %zu set chains", (size_t)n);
    for (int32_t s = 1; s < c->n_sets; s++) {
        c->sets[s].next = heads[c->sets[s].hash & (n - 1)];
        heads[c->sets[s].hash & (n - 1)] = s;
    }
    free(c->set_heads);
    c->set_heads = heads;
    c->set_mask = n - 1;
    return true;
}

/* The set built, interned: its id (0 when empty), -1 on a failure. */
static int32_t build_end(gr_matcher_t *m) {
    gr_cache_t *c = m->c;
    if (c->n_out == 0) return 0;
    sort_ids(c->out, c->n_out);
    const uint32_t h = hash_ids(c->out, c->n_out);
    for (int32_t s = c->set_heads[h & c->set_mask]; s >= 0; s = c->sets[s].next)
        if (c->sets[s].hash == h && c->sets[s].n == c->n_out &&
            memcmp(c->ids + c->sets[s].first, c->out, (size_t)c->n_out * sizeof c->out[0]) == 0)
            return s;
    if (!grow(m, (void **)&c->ids, &c->cap_ids, c->n_ids + c->n_out, sizeof c->ids[0]) ||
        !grow(m, (void **)&c->sets, &c->cap_sets, c->n_sets + 1, sizeof c->sets[0]) ||
        ((uint32_t)c->n_sets > c->set_mask && !rehash_sets(m)))
        return -1;
    memcpy(c->ids + c->n_ids, c->out, (size_t)c->n_out * sizeof c->out[0]);
    const int32_t s = c->n_sets++;
    c->sets[s] = (gr_set_t){.first = c->n_ids, .n = c->n_out, .hash = h, .next = c->set_heads[h & c->set_mask]};
    c->set_heads[h & c->set_mask] = s;
    c->n_ids += c->n_out;
    return s;
}

//===--- transitions ---===//

/* The set after code point cp from set s, computed. */
static int32_t compute_step(gr_matcher_t *m, int32_t s, uint32_t cp) {
    build_begin(m);
    const gr_set_t set = m->c->sets[s];
    for (int32_t i = 0; i < set.n; i++) {
        const int32_t id = m->c->ids[set.first + i];
        if (id == 0) continue;
        const gr_node_t node = m->c->nodes[id];
        if (!gr_charset_has(m->g, &m->g->sets[m->g->elems[node.pos].arg], cp)) continue;
        const int32_t next = node_get(m, node.pos + 1, node.parent);
        if (next < 0 && m->err != RT_OK) return -1;
        if (next >= 0 && !expand(m, next)) return -1;
    }
    return build_end(m);
}

/* Set s's table of byte steps, made on first use. */
static int32_t *step_table(gr_matcher_t *m, int32_t s) {
    gr_cache_t *c = m->c;
    if (c->sets[s].step) return c->sets[s].step;
    const size_t bytes = 256 * sizeof(int32_t);
    if (cache_bytes(c) + bytes > GR_MAX_CACHE) {
        fail(m, RT_ERR_OUT_OF_MEMORY, "the matcher's state passed its limit of %zu bytes", GR_MAX_CACHE);
        return NULL;
    }
    int32_t *t = malloc(bytes);
    if (t == NULL) {
        fail(m, RT_ERR_OUT_OF_MEMORY, "no memory for a step table (%zu bytes)", bytes);
        return NULL;
    }
    memset(t, 0xff, bytes);
    c->n_step_tables++;
    return c->sets[s].step = t;
}

static bool trans_grow(gr_matcher_t *m) {
    gr_cache_t *c = m->c;
    const uint32_t n = (c->trans_mask + 1) * 2;
    if (cache_bytes(c) + (size_t)n / 2 * sizeof c->trans[0] > GR_MAX_CACHE)
        return fail(m, RT_ERR_OUT_OF_MEMORY, "the matcher's state passed its limit of %zu bytes", GR_MAX_CACHE);
    gr_trans_t *t = calloc(n, sizeof t[0]);
    if (t == NULL) return fail(m, RT_ERR_OUT_OF_MEMORY, "no memory for %zu transitions", (size_t)n);
    for (uint32_t i = 0; i <= c->trans_mask; i++) {
        if (c->trans[i].key == 0) continue;
        uint32_t j = hash2((uint32_t)(c->trans[i].key >> 32), (uint32_t)c->trans[i].key) & (n - 1);
        while (t[j].key) j = (j + 1) & (n - 1);
        t[j] = c->trans[i];
    }
    free(c->trans);
    c->trans = t;
    c->trans_mask = n - 1;
    return true;
}

/* The set after code point cp from set s: cached, or computed and kept.
 * -1 on a failure. */
static int32_t transition(gr_matcher_t *m, int32_t s, uint32_t cp) {
    if (s == 0) return 0;
    if (cp < 128) {
        int32_t *t = step_table(m, s);
        if (t == NULL) return -1;
        if (t[cp] < 0) t[cp] = compute_step(m, s, cp);
        return t[cp];
    }
    gr_cache_t *c = m->c;
    const uint64_t key = ((uint64_t)s << 21 | cp) + 1;
    uint32_t j = hash2((uint32_t)(key >> 32), (uint32_t)key) & c->trans_mask;
    for (; c->trans[j].key; j = (j + 1) & c->trans_mask)
        if (c->trans[j].key == key) return c->trans[j].set;
    const int32_t next = compute_step(m, s, cp);
    if (next < 0) return -1;
    if ((uint32_t)(c->n_trans + 1) * 2 > c->trans_mask + 1) {
        if (!trans_grow(m)) return -1;
        j = hash2((uint32_t)(key >> 32), (uint32_t)key) & c->trans_mask;
        while (c->trans[j].key) j = (j + 1) & c->trans_mask;
    }
    c->trans[j] = (gr_trans_t){key, next};
    c->n_trans++;
    return next;
}

//===--- UTF-8 ---===//

/* Whether some stack of set s can take a code point in lo..hi. */
static bool set_takes_range(const gr_matcher_t *m, int32_t s, uint32_t lo, uint32_t hi) {
    const gr_cache_t *c = m->c;
    for (int32_t i = 0; i < c->sets[s].n; i++) {
        const int32_t id = c->ids[c->sets[s].first + i];
        if (id == 0) continue;
        const gr_charset_t *cs = &m->g->sets[m->g->elems[c->nodes[id].pos].arg];
        const gr_range_t *r = m->g->ranges + cs->first;
        int32_t a = 0, b = cs->n; /* the first range whose hi >= lo */
        while (a < b) {
            const int32_t mid = (a + b) / 2;
            if (r[mid].hi < lo) a = mid + 1;
            else b = mid;
        }
        if (a < cs->n && r[a].lo <= hi) return true;
    }
    return false;
}

/* A lead byte's character: the bits it holds, the continuation bytes to
 * come and the valid code points it can become; need 0 for a byte that
 * cannot start one. */
static gr_utf8_t utf8_lead(uint8_t b) {
    if (b >= 0xC2 && b <= 0xDF) return (gr_utf8_t){b & 0x1Fu, (b & 0x1Fu) << 6, (b & 0x1Fu) << 6 | 0x3F, 1};
    if (b == 0xE0) return (gr_utf8_t){0, 0x800, 0xFFF, 2};
    if (b == 0xED) return (gr_utf8_t){0xD, 0xD000, 0xD7FF, 2};
    if (b >= 0xE1 && b <= 0xEF) return (gr_utf8_t){b & 0xFu, (b & 0xFu) << 12, (b & 0xFu) << 12 | 0xFFF, 2};
    if (b == 0xF0) return (gr_utf8_t){0, 0x10000, 0x3FFFF, 3};
    if (b >= 0xF1 && b <= 0xF3) return (gr_utf8_t){b & 7u, (b & 7u) << 18, (b & 7u) << 18 | 0x3FFFF, 3};
    if (b == 0xF4) return (gr_utf8_t){4, 0x100000, 0x10FFFF, 3};
    return (gr_utf8_t){0};
}

static bool step_lead(gr_matcher_t *m, gr_state_t *s, uint8_t b) {
    const gr_utf8_t u = utf8_lead(b);
    if (u.need == 0 || s->set == 0) return false;
    int32_t *t = step_table(m, s->set);
    if (t == NULL) return false;
    if (t[b] < 0) t[b] = set_takes_range(m, s->set, u.lo, u.hi);
    if (!t[b]) return false;
    s->u8 = u;
    return true;
}

/* A continuation byte: its prefix's range must lie inside the valid one
 * (which rules out overlong forms and surrogates at the first byte that
 * shows them). */
static bool step_continuation(gr_matcher_t *m, gr_state_t *s, uint8_t b) {
    if ((b & 0xC0) != 0x80) return false;
    const uint32_t cp = s->u8.cp << 6 | (b & 0x3Fu);
    const uint8_t need = (uint8_t)(s->u8.need - 1);
    const uint32_t lo = cp << (6 * need), hi = lo | ((1u << (6 * need)) - 1);
    if (lo < s->u8.lo || hi > s->u8.hi) return false;
    if (need > 0) {
        if (!set_takes_range(m, s->set, lo, hi)) return false;
        s->u8 = (gr_utf8_t){cp, lo, hi, need};
        return true;
    }
    const int32_t next = transition(m, s->set, cp);
    if (next <= 0) return false;
    s->set = next;
    s->u8 = (gr_utf8_t){0};
    return true;
}

bool gr_step(gr_matcher_t *m, gr_state_t *s, uint8_t b) {
    if (m->err != RT_OK) return false;
    if (s->u8.need > 0) return step_continuation(m, s, b);
    if (b >= 0x80) return step_lead(m, s, b);
    const int32_t next = transition(m, s->set, b);
    if (next <= 0) return false;
    s->set = next;
    return true;
}

//===--- states ---===//

bool gr_state_complete(const gr_matcher_t *m, gr_state_t s) {
    const gr_set_t *set = &m->c->sets[s.set];
    return s.u8.need == 0 && set->n > 0 && m->c->ids[set->first] == 0;
}

bool gr_state_done(const gr_matcher_t *m, gr_state_t s) {
    return gr_state_complete(m, s) && m->c->sets[s.set].n == 1;
}

int32_t gr_state_n_stacks(const gr_matcher_t *m, gr_state_t s) { return m->c->sets[s.set].n; }

/* The start set: every alternative of the root, expanded. */
static int32_t start_set(gr_matcher_t *m) {
    build_begin(m);
    const gr_rule_t *r = &m->g->rules[m->g->root];
    for (int32_t a = r->first_alt; a < r->first_alt + r->n_alts; a++) {
        const int32_t id = node_get(m, m->g->alts[a], 0);
        if (id < 0 || !expand(m, id)) return -1;
    }
    return build_end(m);
}

rt_status_t gr_matcher_init(gr_matcher_t *m, const rtm_gbnf_t *g) {
    *m = (gr_matcher_t){.g = g, .work = GR_MAX_WORK};
    if ((m->c = cache_new()) == NULL)
        return rtm_error(RT_ERR_OUT_OF_MEMORY, "grammar: no memory for the matcher");
    const int32_t s = start_set(m);
    if (s < 0) return m->err;
    if (s == 0)
        return rtm_error(RT_ERR_FORMAT, "grammar: the start rule '%s' can match no text: each of its "
                         "alternatives only calls back into itself", rtm_gbnf_rule_name(g, g->root));
    m->start = m->cur = (gr_state_t){.set = s};
    return RT_OK;
}

void gr_matcher_deinit(gr_matcher_t *m) {
    cache_free(m->c);
    m->c = NULL;
}

/* The set of old's stacks `ids` in m's (new) cache: each chain copied from
 * its bottom up. map[old id] is the new id (0 when not copied yet). */
static int32_t copy_set(gr_matcher_t *m, const gr_cache_t *old, const gr_set_t *set, int32_t *map) {
    int32_t chain[GR_MAX_DEPTH + 2];
    for (int32_t i = 0; i < set->n; i++) {
        int32_t n = 0;
        for (int32_t id = old->ids[set->first + i]; id > 0 && map[id] == 0; id = old->nodes[id].parent)
            chain[n++] = id;
        while (n > 0) {
            const int32_t id = chain[--n];
            map[id] = node_get(m, old->nodes[id].pos, map[old->nodes[id].parent]);
            if (map[id] < 0) return -1;
        }
    }
    build_begin(m);
    for (int32_t i = 0; i < set->n; i++)
        if (!out_push(m, map[old->ids[set->first + i]])) return -1;
    return build_end(m);
}

/* A new cache with the start state and the current one only. */
static rt_status_t renew_cache(gr_matcher_t *m) {
    gr_cache_t *old = m->c;
    int32_t *map = calloc((size_t)old->n_nodes, sizeof map[0]);
    m->c = cache_new();
    int32_t start = -1, cur = -1;
    if (map && m->c) {
        start = start_set(m);
        cur = copy_set(m, old, &old->sets[m->cur.set], map);
    }
    free(map);
    if (start < 0 || cur < 0) {
        cache_free(m->c);
        m->c = old; /* keep going on the old one */
        if (m->err != RT_OK) return m->err;
        return rtm_error(RT_ERR_OUT_OF_MEMORY, "grammar: no memory to renew the matcher");
    }
    cache_free(old);
    m->start.set = start;
    m->cur.set = cur;
    return RT_OK;
}

rt_status_t gr_matcher_begin(gr_matcher_t *m) {
    m->err = RT_OK;
    m->work = GR_MAX_WORK;
    if (cache_bytes(m->c) <= GR_KEEP_CACHE) return RT_OK;
    const rt_status_t st = renew_cache(m);
    m->work = GR_MAX_WORK;
    m->err = RT_OK;
    return st;
}
