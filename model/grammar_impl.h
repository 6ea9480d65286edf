/* SPDX-License-Identifier: MIT */
/* grammar_impl.h: grammar-constrained sampling's private types. A GBNF
 * text goes through five files:
 *
 *   grammar_parse.c  the text into rules (rtm_gbnf_t): groups and
 *                    repetitions become rules of their own, so a rule is
 *                    a list of alternatives, each a sequence of character
 *                    sets and references to rules;
 *   grammar_check.c  what the rules mean: undefined names, the start rule,
 *                    which rules can match nothing (nullable), and left
 *                    recursion, refused by name where it would loop;
 *   grammar.c        the matcher: a set of stacks of positions in the
 *                    rules, advanced one code point at a time (bytes in,
 *                    UTF-8 decoded on the way, a character cut between
 *                    tokens kept in the state), with every set and every
 *                    step it computes cached, a lazily built automaton;
 *   grammar_trie.c   the tokens' pieces as a trie, walked with the matcher
 *                    to find every token the grammar allows at once;
 *   grammar_vocab.c  the public rtm_grammar_t over all of them.
 *
 * Limits (each refused with a message, never a crash or a machine's
 * memory): GR_MAX_ELEMS elements and GR_MAX_RULES rules after expansion,
 * GR_MAX_REPEAT as a repetition's bound, GR_MAX_NEST parentheses deep;
 * GR_MAX_STACKS stacks in one set, GR_MAX_CACHE bytes of matcher state,
 * GR_MAX_WORK expansion steps in one call. A stack deeper than
 * GR_MAX_DEPTH is not followed: a token that would need it is not
 * allowed. */
#ifndef RTM_GRAMMAR_IMPL_H
#define RTM_GRAMMAR_IMPL_H

#include "internal.h"

#include <stddef.h>
#include <stdint.h>

#define GR_MAX_ELEMS (1 << 18)
#define GR_MAX_RULES (1 << 16)
#define GR_MAX_REPEAT 10000
#define GR_MAX_NEST 256
#define GR_MAX_DEPTH 1024
#define GR_MAX_STACKS 4096
#define GR_MAX_CACHE ((size_t)256 << 20)
#define GR_KEEP_CACHE ((size_t)32 << 20) /* more at the start of a call: cleared */
#define GR_MAX_WORK ((int64_t)1 << 26)
#define GR_MAX_CPT 0x10FFFFu

//===--- the rules (grammar_parse.c, grammar_check.c) ---===//

/* An element of a rule's alternative. Every alternative ends with GR_END,
 * so "the position after an element" is always an element. */
typedef enum { GR_END = 0, GR_CHARS = 1, GR_REF = 2 } gr_kind_t;

typedef struct gr_elem {
    uint32_t kind;   /* gr_kind_t */
    int32_t arg;     /* GR_CHARS: the charset; GR_REF: the rule */
} gr_elem_t;

/* Inclusive code point range. */
typedef struct gr_range {
    uint32_t lo, hi;
} gr_range_t;

/* A set of code points as sorted, disjoint, non-adjacent ranges (a
 * negated class is stored as its complement), with the ASCII half as a
 * bitmap for the common test. */
typedef struct gr_charset {
    int32_t first, n;        /* ranges[first .. first + n) */
    uint32_t ascii[4];       /* bit c: code point c (< 128) is in the set */
} gr_charset_t;

/* A rule's alternatives start at elems[alts[first_alt + i]]. A rule the
 * parser made (for a group or a repetition) belongs to the named rule it
 * was written in (owner), for messages. */
typedef struct gr_rule {
    int32_t first_alt, n_alts;
    int32_t owner;           /* a named rule (itself when it is one) */
    int32_t name;            /* named: offset of its name in names; -1 for the parser's */
    int32_t line, col;       /* where it is defined (named: first mentioned, until defined) */
    bool defined;            /* named: it has a "name ::=" line */
} gr_rule_t;

typedef struct rtm_gbnf {
    gr_elem_t *elems;
    int32_t n_elems;
    int32_t *alts;
    int32_t n_alts;
    gr_rule_t *rules;
    int32_t n_rules;
    gr_charset_t *sets;
    int32_t n_sets;
    gr_range_t *ranges;
    int32_t n_ranges;
    char *names;             /* the named rules' names, each NUL-terminated */
    int32_t root;            /* the start rule */
} rtm_gbnf_t;

/* Parses len bytes of GBNF and checks it (grammar_check.c) with root
 * (NULL: "root") as the start rule. RT_ERR_FORMAT with "grammar: line L,
 * column C: ..." for a syntax error, an undefined rule, a missing start
 * rule or left recursion; RT_ERR_OUT_OF_MEMORY. */
RTM_INTERNAL rt_status_t rtm_gbnf_parse(const char *text, size_t len, const char *root,
                                        rtm_gbnf_t **out_gbnf);
RTM_INTERNAL void rtm_gbnf_destroy(rtm_gbnf_t *g);
/* grammar_check.c: the start rule's id, and the refusals that need the
 * whole grammar (run by rtm_gbnf_parse). */
RTM_INTERNAL rt_status_t rtm_gbnf_check(rtm_gbnf_t *g, const char *root);
/* A rule's name for messages: its own, or its owner's. */
RTM_INTERNAL const char *rtm_gbnf_rule_name(const rtm_gbnf_t *g, int32_t rule);

static inline bool gr_charset_has(const rtm_gbnf_t *g, const gr_charset_t *cs, uint32_t c) {
    if (c < 128) return (cs->ascii[c >> 5] >> (c & 31)) & 1;
    const gr_range_t *r = g->ranges + cs->first;
    int32_t lo = 0, hi = cs->n; /* the first range whose hi >= c */
    while (lo < hi) {
        const int32_t mid = (lo + hi) / 2;
        if (r[mid].hi < c) lo = mid + 1;
        else hi = mid;
    }
    return lo < cs->n && r[lo].lo <= c;
}

//===--- the matcher (grammar.c) ---===//

/* A stack is a chain of nodes, its top first; node 0 is the bottom, and
 * the stack that is node 0 alone is the start rule matched to its end
 * ("complete"). Nodes are interned: the same (pos, parent) is the same
 * id, so a stack's id is its identity and sets of stacks are sets of ids.
 * A top is a GR_CHARS element (the character expected next); the nodes
 * below are where each caller goes on (an element after a GR_REF). */
typedef struct gr_node {
    int32_t pos;             /* element index; -1 for node 0 */
    int32_t parent;          /* the node below */
    int32_t depth;           /* nodes below it */
    int32_t next;            /* the intern table's chain */
    uint32_t stamp;          /* the set under construction that reached it last */
} gr_node_t;

/* A set of stacks, interned like the nodes: ids[first .. first + n),
 * sorted (0, the complete stack, first when present). Set 0 is the empty
 * set: nothing can follow. step[] caches its transitions: for an ASCII
 * byte b the set after it (-1: not yet known); for a UTF-8 lead byte
 * whether some stack could take a character starting with it (1, 0; -1:
 * not yet known). Other characters' transitions are in the matcher's
 * table. */
typedef struct gr_set {
    int32_t first, n;
    uint32_t hash;
    int32_t next;            /* the intern table's chain */
    int32_t *step;           /* 256 entries, allocated on first use */
} gr_set_t;

/* A character begun: need more continuation bytes to come, cp the bits
 * so far, lo..hi the code points it can still become (all valid). */
typedef struct gr_utf8 {
    uint32_t cp, lo, hi;
    uint8_t need;
} gr_utf8_t;

/* Where the matcher stands: a set and a character begun. */
typedef struct gr_state {
    int32_t set;
    gr_utf8_t u8;
} gr_state_t;

typedef struct gr_cache gr_cache_t;

typedef struct gr_matcher {
    const rtm_gbnf_t *g;     /* borrowed */
    gr_cache_t *c;           /* nodes, sets, transitions: rebuilt when it grows */
    gr_state_t start;        /* before any text */
    gr_state_t cur;          /* after what was accepted */
    int64_t work;            /* expansion steps left in this call */
    rt_status_t err;         /* the call's first failure (its message recorded) */
} gr_matcher_t;

/* The start state of g's root. RT_ERR_FORMAT when the root can match
 * nothing, RT_ERR_OUT_OF_MEMORY, or a limit passed. */
RTM_INTERNAL rt_status_t gr_matcher_init(gr_matcher_t *m, const rtm_gbnf_t *g);
RTM_INTERNAL void gr_matcher_deinit(gr_matcher_t *m);
/* Called at the start of each public call: clears err, renews the work
 * budget and, when the cache holds more than GR_KEEP_CACHE bytes, builds
 * a new one holding only the start and current states. */
RTM_INTERNAL rt_status_t gr_matcher_begin(gr_matcher_t *m);
/* Advances s by one byte. False when no stack can take it (s is then
 * left as it was) or a limit was passed (m->err set). */
RTM_INTERNAL bool gr_step(gr_matcher_t *m, gr_state_t *s, uint8_t byte);
/* The start rule can end here: no character begun, the complete stack in the set. */
RTM_INTERNAL bool gr_state_complete(const gr_matcher_t *m, gr_state_t s);
/* Complete, and nothing else can follow. */
RTM_INTERNAL bool gr_state_done(const gr_matcher_t *m, gr_state_t s);
/* Stacks in s's set (for tests). */
RTM_INTERNAL int32_t gr_state_n_stacks(const gr_matcher_t *m, gr_state_t s);

//===--- the tokens' trie (grammar_trie.c) ---===//

/* Nodes in preorder: a node's subtree is [i, skip), its parent the last
 * node before it one level up; node 0 is the root (the empty prefix).
 * The tokens whose piece ends at a node are toks[tok_first .. +tok_n). */
typedef struct gr_trie_node {
    int32_t skip;
    int32_t depth;           /* bytes of the prefix */
    int32_t tok_first, tok_n;
    uint8_t byte;            /* the prefix's last byte */
} gr_trie_node_t;

typedef struct gr_trie {
    gr_trie_node_t *nodes;
    int32_t n_nodes;
    int32_t *toks;
    int32_t max_depth;
    gr_state_t *states;      /* max_depth + 1: the walk's state at each depth */
    int32_t n_tokens;        /* ids 0 .. n_tokens - 1 */
    char *blob;              /* every piece: token t's is blob[offs[t] .. offs[t + 1]) */
    uint32_t *offs;
} gr_trie_t;

/* The trie of n_tokens pieces (token t's is blob[offs[t] .. offs[t + 1]);
 * empty pieces are left out). blob and offs become the trie's (freed by
 * gr_trie_deinit, also on failure). RT_ERR_OUT_OF_MEMORY. */
RTM_INTERNAL rt_status_t gr_trie_init(gr_trie_t *t, char *blob, uint32_t *offs, int32_t n_tokens);
RTM_INTERNAL void gr_trie_deinit(gr_trie_t *t);
/* allowed[tok] = 1 for each token whose piece the matcher can take from
 * state `from` (the rest untouched). m->err's status when a limit was
 * passed, else RT_OK. */
RTM_INTERNAL rt_status_t gr_trie_allowed(gr_trie_t *t, gr_matcher_t *m, gr_state_t from,
                                         uint8_t *allowed);
/* Steps s through token tok's piece; false when a byte is refused (or
 * the piece is empty). */
RTM_INTERNAL bool gr_trie_take(const gr_trie_t *t, gr_matcher_t *m, gr_state_t *s, int32_t tok);

#endif /* RTM_GRAMMAR_IMPL_H */
