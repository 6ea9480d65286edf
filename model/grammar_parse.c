/* SPDX-License-Identifier: MIT */
/* grammar_parse.c: GBNF (llama.cpp's grammar format) into rules
 * (grammar_impl.h). The syntax read:
 *
 *     grammar   := (rule | blank line | comment)*
 *     rule      := name "::=" alternates           (ends with its line)
 *     alternates:= sequence ("|" sequence)*
 *     sequence  := item*
 *     item      := primary ("*" | "+" | "?" | "{m}" | "{m,}" | "{m,n}" | "{,n}")*
 *     primary   := "string" | [class] | [^class] | "." | name | "(" alternates ")"
 *
 * Names are letters, digits, "-" and "_". Strings and classes take the
 * escapes \n \t \r \\ \" \' \[ \] \- \^ \/ \xHH \uHHHH \UHHHHHHHH; the
 * text is UTF-8 and matching is by code point. "#" starts a comment to
 * the end of the line. A rule ends with its line, except inside
 * parentheses and after "|", and a line that starts with "|" goes on
 * with the rule before it.
 *
 * Everything becomes alternatives of character sets and references to
 * rules: a group is a rule of its own; x* a rule R ::= x R | (empty);
 * x+ is x x*; x? a rule O ::= x | (empty); x{m,n} m copies of x and a
 * chain of n - m nested optional rules (each "x next | empty"), so the
 * rules grow linearly with n and no stack grows while a repetition runs
 * (the recursive reference is the last element: grammar.c does not keep
 * a frame for it). Errors name the line and column (columns count
 * characters, from 1) and what was expected. */
#include "grammar_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A rule's elements while the grammar is read: each alternative ends in
 * GR_END. Rules are made as they are met, so each keeps its own body
 * until all of them are laid out one after another (flatten). */
typedef struct body {
    gr_elem_t *e;
    int32_t n, cap;
} body_t;

typedef struct loc {
    int line, col;
} loc_t;

typedef struct parser {
    const char *s;
    size_t len, pos;
    int line;                /* of pos, from 1 */
    size_t line_start;       /* where that line starts */
    int nest;                /* parentheses open */
    rtm_gbnf_t *g;
    body_t *bodies;          /* one per rule */
    int32_t cap_rules;
    int32_t n_elems;         /* in every body */
    int32_t cap_sets, cap_ranges;
    size_t names_len, names_cap;
    int32_t *names_map;      /* open addressing: named rule ids, -1 empty */
    uint32_t map_mask;
    int32_t n_named;
    int32_t owner;           /* the named rule being read */
    rt_status_t st;          /* the first failure */
} parser_t;

//===--- errors ---===//

/* The line and column of byte `at`: counted from the current line's
 * start when it is on that line, else from the text's (an error's path). */
static loc_t loc_at(const parser_t *p, size_t at) {
    int line = p->line;
    size_t start = p->line_start;
    if (at < start) {
        line = 1, start = 0;
        for (size_t i = 0; i < at; i++)
            if (p->s[i] == '\n') line++, start = i + 1;
    }
    int col = 1;
    for (size_t i = start; i < at && i < p->len; i++) col += ((unsigned char)p->s[i] & 0xC0) != 0x80;
    return (loc_t){line, col};
}

/* Records the first failure only: "grammar: line L, column C: ...". */
static bool fail_loc(parser_t *p, size_t at, const char *fmt, ...) RT_PRINTF(3, 4);
static bool fail_loc(parser_t *p, size_t at, const char *fmt, ...) {
    if (p->st != RT_OK) return false;
    char msg[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const loc_t l = loc_at(p, at);
    p->st = rtm_error(RT_ERR_FORMAT, "grammar: line %d, column %d: %s", l.line, l.col, msg);
    return false;
}

static bool no_memory(parser_t *p) {
    if (p->st == RT_OK) p->st = rtm_error(RT_ERR_OUT_OF_MEMORY, "grammar: no memory for the rules");
    return false;
}

/* What is at pos, for "found ...". */
static const char *found(const parser_t *p, char *buf, size_t size) {
    if (p->pos >= p->len) return "the end of the text";
    const unsigned char c = (unsigned char)p->s[p->pos];
    if (c == '\n' || c == '\r') return "the end of the line";
    if (c >= 0x20 && c < 0x7F) snprintf(buf, size, "'%c'", c);
    else snprintf(buf, size, "byte 0x%02X", c);
    return buf;
}

static bool expected(parser_t *p, const char *what) {
    char buf[16];
    return fail_loc(p, p->pos, "expected %s, found %s", what, found(p, buf, sizeof buf));
}

//===--- growing arrays ---===//

/* Room for n + 1 items of size bytes in *arr (capacity *cap). */
static bool grow(void **arr, int32_t *cap, int32_t n, size_t size) {
    if (n < *cap) return true;
    const int32_t c = *cap ? *cap * 2 : 16;
    void *a = realloc(*arr, (size_t)c * size);
    if (a == NULL) return false;
    *arr = a;
    *cap = c;
    return true;
}

static bool push_elem(parser_t *p, int32_t rule, gr_kind_t kind, int32_t arg) {
    if (p->n_elems >= GR_MAX_ELEMS)
        return fail_loc(p, p->pos, "the grammar expands to more than %d elements (a large "
                        "repetition of a long group?)", GR_MAX_ELEMS);
    body_t *b = &p->bodies[rule];
    if (!grow((void **)&b->e, &b->cap, b->n, sizeof b->e[0])) return no_memory(p);
    b->e[b->n++] = (gr_elem_t){(uint32_t)kind, arg};
    p->n_elems++;
    return true;
}

/* A new rule (named: its name's offset; -1 for one the parser makes). */
static int32_t new_rule(parser_t *p, int32_t name, size_t at) {
    rtm_gbnf_t *g = p->g;
    if (g->n_rules >= GR_MAX_RULES) {
        fail_loc(p, at, "the grammar needs more than %d rules (a large repetition?)", GR_MAX_RULES);
        return -1;
    }
    if (!grow((void **)&g->rules, &p->cap_rules, g->n_rules, sizeof g->rules[0])) return no_memory(p), -1;
    int32_t cap = p->cap_rules;
    body_t *b = realloc(p->bodies, (size_t)cap * sizeof b[0]);
    if (b == NULL) return no_memory(p), -1;
    p->bodies = b;
    const int32_t r = g->n_rules++;
    b[r] = (body_t){0};
    const loc_t l = name >= 0 ? loc_at(p, at) : (loc_t){0, 0}; /* messages name named rules only */
    g->rules[r] = (gr_rule_t){.owner = name >= 0 ? r : p->owner, .name = name, .line = l.line, .col = l.col};
    return r;
}

//===--- rule names ---===//

static uint32_t hash_name(const char *s, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

static bool same_name(const parser_t *p, int32_t rule, const char *s, size_t n) {
    const char *name = p->g->names + p->g->rules[rule].name;
    return strncmp(name, s, n) == 0 && name[n] == 0;
}

static bool map_grow(parser_t *p) {
    const uint32_t size = p->map_mask ? (p->map_mask + 1) * 2 : 64;
    int32_t *m = malloc(size * sizeof m[0]);
    if (m == NULL) return no_memory(p);
    for (uint32_t i = 0; i < size; i++) m[i] = -1;
    for (uint32_t i = 0; p->names_map && i <= p->map_mask; i++) {
        const int32_t r = p->names_map[i];
        if (r < 0) continue;
        const char *name = p->g->names + p->g->rules[r].name;
        uint32_t j = hash_name(name, strlen(name)) & (size - 1);
        while (m[j] >= 0) j = (j + 1) & (size - 1);
        m[j] = r;
    }
    free(p->names_map);
    p->names_map = m;
    p->map_mask = size - 1;
    return true;
}

static int32_t add_name(parser_t *p, const char *s, size_t n, size_t at) {
    rtm_gbnf_t *g = p->g;
    if (p->names_len + n + 1 > p->names_cap) {
        const size_t cap = (p->names_len + n + 1) * 2;
        char *names = realloc(g->names, cap);
        if (names == NULL) return no_memory(p), -1;
        g->names = names;
        p->names_cap = cap;
    }
    memcpy(g->names + p->names_len, s, n);
    g->names[p->names_len + n] = 0;
    const int32_t r = new_rule(p, (int32_t)p->names_len, at);
    if (r >= 0) p->names_len += n + 1;
    return r;
}

/* The named rule s[0..n), made (first mentioned at `at`) when new; -1 on failure. */
static int32_t rule_named(parser_t *p, const char *s, size_t n, size_t at) {
    if ((uint32_t)(p->n_named + 1) * 2 > p->map_mask + 1 && !map_grow(p)) return -1;
    uint32_t j = hash_name(s, n) & p->map_mask;
    for (; p->names_map[j] >= 0; j = (j + 1) & p->map_mask)
        if (same_name(p, p->names_map[j], s, n)) return p->names_map[j];
    const int32_t r = add_name(p, s, n, at);
    if (r >= 0) p->names_map[j] = r, p->n_named++;
    return r;
}

//===--- characters ---===//

static bool at_end(const parser_t *p) { return p->pos >= p->len; }
static int peek(const parser_t *p) { return at_end(p) ? -1 : (unsigned char)p->s[p->pos]; }

static void advance(parser_t *p) {
    if (p->s[p->pos++] == '\n') p->line++, p->line_start = p->pos;
}

static bool is_name_char(int c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
}

/* Spaces, tabs, carriage returns and comments; newlines too when asked
 * (between rules, after "|", inside parentheses). */
static void skip_space(parser_t *p, bool newlines) {
    for (int c; (c = peek(p)) >= 0;) {
        if (c == ' ' || c == '\t' || c == '\r' || (c == '\n' && newlines)) advance(p);
        else if (c == '#')
            while (!at_end(p) && p->s[p->pos] != '\n') advance(p);
        else break;
    }
}

/* One UTF-8 character of the text, strictly (no overlong forms,
 * surrogates or stray bytes), into *cp. */
static bool text_char(parser_t *p, uint32_t *cp) {
    const unsigned char *s = (const unsigned char *)p->s + p->pos;
    const size_t left = p->len - p->pos;
    const unsigned c = s[0];
    const size_t n = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3
                   : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    uint32_t v = n == 1 ? c : n == 2 ? c & 0x1F : n == 3 ? c & 0x0F : c & 0x07;
    bool ok = n > 0 && n <= left;
    for (size_t i = 1; ok && i < n; i++) {
        ok = (s[i] & 0xC0) == 0x80;
        v = v << 6 | (s[i] & 0x3F);
    }
    ok = ok && !(n == 3 && v < 0x800) && !(n == 4 && (v < 0x10000 || v > GR_MAX_CPT)) &&
         !(v >= 0xD800 && v <= 0xDFFF);
    if (!ok) return fail_loc(p, p->pos, "invalid UTF-8 (byte 0x%02X)", c);
    if (c == 0) return fail_loc(p, p->pos, "a NUL byte in the grammar");
    for (size_t i = 0; i < n; i++) advance(p);
    *cp = v;
    return true;
}

static int hex_digit(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* \xHH, \uHHHH, \UHHHHHHHH: n hex digits after the letter. */
static bool hex_escape(parser_t *p, size_t at, int n, uint32_t *cp) {
    uint32_t v = 0;
    for (int i = 0; i < n; i++) {
        const int d = hex_digit(peek(p));
        if (d < 0)
            return fail_loc(p, at, "bad escape: \\%c wants %d hex digits", n == 2 ? 'x' : n == 4 ? 'u' : 'U', n);
        v = v << 4 | (uint32_t)d;
        advance(p);
    }
    if (v > GR_MAX_CPT) return fail_loc(p, at, "bad escape: U+%X is past U+10FFFF", v);
    *cp = v;
    return true;
}

/* After a backslash (at `at`). */
static bool escape(parser_t *p, size_t at, uint32_t *cp) {
    const int c = peek(p);
    if (c < 0) return fail_loc(p, at, "bad escape: the text ends after '\\'");
    advance(p);
    switch (c) {
    case 'n': *cp = '\n'; return true;
    case 't': *cp = '\t'; return true;
    case 'r': *cp = '\r'; return true;
    case '\\': case '"': case '\'': case '[': case ']': case '-': case '^': case '/':
        *cp = (uint32_t)c;
        return true;
    case 'x': return hex_escape(p, at, 2, cp);
    case 'u': return hex_escape(p, at, 4, cp);
    case 'U': return hex_escape(p, at, 8, cp);
    default:
        if (c >= 0x20 && c < 0x7F) return fail_loc(p, at, "bad escape '\\%c'", c);
        return fail_loc(p, at, "bad escape: byte 0x%02X after '\\'", c);
    }
}

/* A character of a string or class: an escape or one UTF-8 character. */
static bool literal_char(parser_t *p, uint32_t *cp) {
    if (peek(p) != '\\') return text_char(p, cp);
    const size_t at = p->pos;
    advance(p);
    return escape(p, at, cp);
}

//===--- character sets ---===//

static int by_lo(const void *a, const void *b) {
    const gr_range_t *x = a, *y = b;
    return (x->lo > y->lo) - (x->lo < y->lo);
}

/* Sorts and merges r[0..n) in place (overlapping or adjacent ranges
 * become one); returns the count. */
static int32_t merge_ranges(gr_range_t *r, int32_t n) {
    qsort(r, (size_t)n, sizeof r[0], by_lo);
    int32_t m = 0;
    for (int32_t i = 0; i < n; i++) {
        if (m > 0 && r[i].lo <= r[m - 1].hi + 1) {
            if (r[i].hi > r[m - 1].hi) r[m - 1].hi = r[i].hi;
        } else {
            r[m++] = r[i];
        }
    }
    return m;
}

/* The complement of merged r[0..n) over 0..GR_MAX_CPT into out (n + 1 at most). */
static int32_t complement(const gr_range_t *r, int32_t n, gr_range_t *out) {
    int32_t m = 0;
    uint32_t next = 0;
    for (int32_t i = 0; i < n; i++) {
        if (r[i].lo > next) out[m++] = (gr_range_t){next, r[i].lo - 1};
        next = r[i].hi + 1;
    }
    if (next <= GR_MAX_CPT) out[m++] = (gr_range_t){next, GR_MAX_CPT};
    return m;
}

/* A new charset of r[0..n) (merged); its id, or -1. */
static int32_t add_charset(parser_t *p, const gr_range_t *r, int32_t n) {
    rtm_gbnf_t *g = p->g;
    if (!grow((void **)&g->sets, &p->cap_sets, g->n_sets, sizeof g->sets[0])) return no_memory(p), -1;
    while (p->cap_ranges < g->n_ranges + n)
        if (!grow((void **)&g->ranges, &p->cap_ranges, p->cap_ranges, sizeof g->ranges[0]))
            return no_memory(p), -1;
    gr_charset_t *cs = &g->sets[g->n_sets];
    *cs = (gr_charset_t){.first = g->n_ranges, .n = n};
    for (int32_t i = 0; i < n; i++) {
        g->ranges[g->n_ranges++] = r[i];
        for (uint32_t c = r[i].lo; c <= r[i].hi && c < 128; c++) cs->ascii[c >> 5] |= 1u << (c & 31);
    }
    return g->n_sets++;
}

static bool push_chars(parser_t *p, int32_t rule, uint32_t lo, uint32_t hi) {
    const gr_range_t r = {lo, hi};
    const int32_t cs = add_charset(p, &r, 1);
    return cs >= 0 && push_elem(p, rule, GR_CHARS, cs);
}

//===--- primaries ---===//

static bool parse_alternates(parser_t *p, int32_t rule);

static bool parse_string(parser_t *p, int32_t rule) {
    const size_t at = p->pos;
    advance(p); /* the quote */
    for (;;) {
        if (at_end(p)) return fail_loc(p, at, "unterminated string (it starts here)");
        if (peek(p) == '"') break;
        uint32_t cp;
        if (!literal_char(p, &cp) || !push_chars(p, rule, cp, cp)) return false;
    }
    advance(p);
    return true;
}

/* One item of a class: a character, or a range "a-z" (a "-" before the
 * closing "]" is itself). */
static bool class_item(parser_t *p, size_t open, uint32_t *lo, uint32_t *hi) {
    if (at_end(p)) return fail_loc(p, open, "unterminated class (it starts here)");
    const size_t at = p->pos;
    if (!literal_char(p, lo)) return false;
    *hi = *lo;
    if (peek(p) != '-' || p->pos + 1 >= p->len || p->s[p->pos + 1] == ']') return true;
    advance(p);
    if (at_end(p)) return fail_loc(p, open, "unterminated class (it starts here)");
    if (!literal_char(p, hi)) return false;
    if (*hi < *lo) return fail_loc(p, at, "the range U+%04X-U+%04X in the class is backwards", *lo, *hi);
    return true;
}

/* [...] or [^...]: ranges gathered in a growing array, then one charset. */
static bool parse_class(parser_t *p, int32_t rule) {
    const size_t at = p->pos;
    advance(p); /* [ */
    const bool negated = peek(p) == '^';
    if (negated) advance(p);
    gr_range_t *r = NULL;
    int32_t n = 0, cap = 0;
    bool ok = true;
    while (ok && peek(p) != ']') {
        uint32_t lo = 0, hi = 0;
        ok = class_item(p, at, &lo, &hi);
        if (ok && !grow((void **)&r, &cap, n + 1, sizeof r[0])) ok = no_memory(p);
        if (ok) r[n++] = (gr_range_t){lo, hi};
    }
    if (ok && n == 0)
        ok = fail_loc(p, at, "empty class '[%s]' (for any character, write '.')", negated ? "^" : "");
    if (ok) {
        advance(p); /* ] */
        n = merge_ranges(r, n);
        if (negated) {
            gr_range_t *c = malloc(((size_t)n + 1) * sizeof c[0]);
            if (c == NULL) ok = no_memory(p);
            else n = complement(r, n, c), free(r), r = c;
        }
    }
    const int32_t cs = ok ? add_charset(p, r, n) : -1;
    free(r);
    return cs >= 0 && push_elem(p, rule, GR_CHARS, cs);
}

static bool parse_group(parser_t *p, int32_t rule) {
    const size_t at = p->pos;
    if (p->nest >= GR_MAX_NEST) return fail_loc(p, at, "parentheses nested deeper than %d", GR_MAX_NEST);
    advance(p);
    p->nest++;
    const int32_t group = new_rule(p, -1, at);
    if (group < 0) return false;
    skip_space(p, true);
    if (!parse_alternates(p, group)) return false;
    skip_space(p, true);
    char buf[16];
    if (peek(p) != ')')
        return fail_loc(p, p->pos, "expected ')' to close the '(' of line %d, column %d, found %s",
                        loc_at(p, at).line, loc_at(p, at).col, found(p, buf, sizeof buf));
    advance(p);
    p->nest--;
    return push_elem(p, rule, GR_REF, group);
}

static bool parse_reference(parser_t *p, int32_t rule) {
    const size_t at = p->pos;
    const size_t start = p->pos;
    while (is_name_char(peek(p))) advance(p);
    const int32_t r = rule_named(p, p->s + start, p->pos - start, at);
    return r >= 0 && push_elem(p, rule, GR_REF, r);
}

static bool parse_primary(parser_t *p, int32_t rule) {
    const int c = peek(p);
    if (c == '"') return parse_string(p, rule);
    if (c == '[') return parse_class(p, rule);
    if (c == '(') return parse_group(p, rule);
    if (c == '.') return advance(p), push_chars(p, rule, 0, GR_MAX_CPT);
    return parse_reference(p, rule); /* parse_sequence saw a name character */
}

//===--- repetition ---===//

/* A repetition count (at most GR_MAX_REPEAT); *out -1 when absent. */
static bool parse_count(parser_t *p, int32_t *out) {
    const size_t at = p->pos;
    int64_t v = -1;
    for (int c; (c = peek(p)) >= '0' && c <= '9'; advance(p)) {
        v = (v < 0 ? 0 : v) * 10 + (c - '0');
        if (v > GR_MAX_REPEAT)
            return fail_loc(p, at, "a repetition count over the limit of %d", GR_MAX_REPEAT);
    }
    *out = (int32_t)v;
    return true;
}

/* {m}, {m,}, {m,n}, {,n}: *max -1 for no bound. */
static bool parse_braces(parser_t *p, int32_t *min, int32_t *max) {
    const size_t at = p->pos;
    advance(p); /* { */
    skip_space(p, false);
    if (!parse_count(p, min)) return false;
    skip_space(p, false);
    const bool comma = peek(p) == ',';
    *max = *min;
    if (comma) {
        advance(p);
        skip_space(p, false);
        if (!parse_count(p, max)) return false;
        skip_space(p, false);
    }
    if (*min < 0 && !comma) return expected(p, "a count in '{m}', '{m,}' or '{m,n}'");
    if (peek(p) != '}') return expected(p, "'}' to end the repetition");
    advance(p);
    if (*min < 0) *min = 0;
    if (*max >= 0 && *min > *max)
        return fail_loc(p, at, "repetition bounds {%d,%d}: the minimum is greater than the maximum", *min, *max);
    return true;
}

/* The elements body[start..) as one element: a rule of their own when
 * there are several (a string). */
static bool make_single(parser_t *p, int32_t rule, int32_t start, size_t at) {
    const int32_t n = p->bodies[rule].n - start;
    if (n == 1) return true;
    const int32_t w = new_rule(p, -1, at);
    if (w < 0) return false;
    for (int32_t i = 0; i < n; i++) {
        const gr_elem_t e = p->bodies[rule].e[start + i];
        p->n_elems--; /* moved, not added */
        if (!push_elem(p, w, (gr_kind_t)e.kind, e.arg)) return false;
    }
    p->bodies[rule].n = start;
    return push_elem(p, w, GR_END, 0) && push_elem(p, rule, GR_REF, w);
}

/* R ::= x R | (empty): the reference to R is last, so it keeps no frame. */
static bool push_star(parser_t *p, int32_t rule, gr_elem_t x, size_t at) {
    const int32_t r = new_rule(p, -1, at);
    return r >= 0 && push_elem(p, r, (gr_kind_t)x.kind, x.arg) && push_elem(p, r, GR_REF, r) &&
           push_elem(p, r, GR_END, 0) && push_elem(p, r, GR_END, 0) && push_elem(p, rule, GR_REF, r);
}

/* n nested optionals: O_k ::= x O_(k-1) | (empty), O_1 ::= x | (empty). */
static bool push_optionals(parser_t *p, int32_t rule, gr_elem_t x, int32_t n, size_t at) {
    int32_t inner = -1;
    for (int32_t k = 0; k < n; k++) {
        const int32_t o = new_rule(p, -1, at);
        if (o < 0 || !push_elem(p, o, (gr_kind_t)x.kind, x.arg)) return false;
        if (inner >= 0 && !push_elem(p, o, GR_REF, inner)) return false;
        if (!push_elem(p, o, GR_END, 0) || !push_elem(p, o, GR_END, 0)) return false;
        inner = o;
    }
    return inner < 0 || push_elem(p, rule, GR_REF, inner);
}

/* x{min,max} for the one element x that ends the rule's body. */
static bool push_repeat(parser_t *p, int32_t rule, int32_t min, int32_t max, size_t at) {
    body_t *b = &p->bodies[rule];
    const gr_elem_t x = b->e[--b->n];
    p->n_elems--;
    for (int32_t i = 0; i < min; i++)
        if (!push_elem(p, rule, (gr_kind_t)x.kind, x.arg)) return false;
    if (max < 0) return push_star(p, rule, x, at);
    return push_optionals(p, rule, x, max - min, at);
}

static bool parse_postfix(parser_t *p, int32_t rule, int32_t start, size_t at) {
    const int c = peek(p);
    int32_t min = 0, max = -1;
    if (c == '{') {
        if (!parse_braces(p, &min, &max)) return false;
    } else {
        advance(p);
        min = c == '+';
        max = c == '?' ? 1 : -1;
    }
    if (p->bodies[rule].n == start) return true; /* "" repeated is still nothing */
    return make_single(p, rule, start, at) && push_repeat(p, rule, min, max, at);
}

//===--- sequences, alternatives, rules ---===//

static bool starts_item(int c) { return c == '"' || c == '[' || c == '(' || c == '.' || is_name_char(c); }
static bool is_postfix(int c) { return c == '*' || c == '+' || c == '?' || c == '{'; }

static bool parse_sequence(parser_t *p, int32_t rule) {
    for (;;) {
        skip_space(p, p->nest > 0);
        if (!starts_item(peek(p))) return true;
        const size_t at = p->pos;
        const int32_t start = p->bodies[rule].n;
        if (!parse_primary(p, rule)) return false;
        for (;;) {
            skip_space(p, p->nest > 0);
            if (!is_postfix(peek(p))) break;
            if (!parse_postfix(p, rule, start, at)) return false;
        }
    }
}

/* At the end of a line outside parentheses: whether the next line that
 * is not blank or a comment starts with "|", which goes on with the rule. */
static bool continues(parser_t *p) {
    const parser_t saved = *p;
    skip_space(p, true);
    if (peek(p) == '|') return true;
    p->pos = saved.pos, p->line = saved.line, p->line_start = saved.line_start;
    return false;
}

static bool parse_alternates(parser_t *p, int32_t rule) {
    for (;;) {
        if (!parse_sequence(p, rule) || !push_elem(p, rule, GR_END, 0)) return false;
        skip_space(p, p->nest > 0);
        if (peek(p) == '\n' && p->nest == 0 && !continues(p)) return true;
        if (peek(p) != '|') return true;
        advance(p);
        skip_space(p, true);
    }
}

static bool parse_rule(parser_t *p) {
    const size_t at = p->pos;
    const size_t start = p->pos;
    while (is_name_char(peek(p))) advance(p);
    if (p->pos == start) return expected(p, "a rule name (a rule's sequence ends with its line, "
                                            "outside parentheses)");
    const size_t n = p->pos - start;
    skip_space(p, false);
    if (p->len - p->pos < 3 || strncmp(p->s + p->pos, "::=", 3) != 0) {
        char what[96];
        snprintf(what, sizeof what, "'::=' after the rule name '%.*s'", (int)(n > 40 ? 40 : n), p->s + start);
        return expected(p, what);
    }
    p->pos += 3;
    const int32_t r = rule_named(p, p->s + start, n, at);
    if (r < 0) return false;
    gr_rule_t *rule = &p->g->rules[r];
    if (rule->defined)
        return fail_loc(p, at, "rule '%s' is defined twice (first at line %d)", p->g->names + rule->name,
                        rule->line);
    const loc_t l = loc_at(p, at);
    *rule = (gr_rule_t){.owner = r, .name = rule->name, .line = l.line, .col = l.col, .defined = true};
    p->owner = r;
    skip_space(p, true);
    if (!parse_alternates(p, r)) return false;
    if (!at_end(p) && peek(p) != '\n') return expected(p, "the end of the rule's line, '|' or an element");
    return true;
}

//===--- the rules laid out ---===//

/* Every body one after another in g->elems; each alternative's start in g->alts. */
static bool flatten(parser_t *p) {
    rtm_gbnf_t *g = p->g;
    int32_t n_alts = 0;
    for (int32_t r = 0; r < g->n_rules; r++)
        for (int32_t i = 0; i < p->bodies[r].n; i++) n_alts += p->bodies[r].e[i].kind == GR_END;
    g->elems = malloc(((size_t)p->n_elems + 1) * sizeof g->elems[0]);
    g->alts = malloc(((size_t)n_alts + 1) * sizeof g->alts[0]);
    if (g->elems == NULL || g->alts == NULL) return no_memory(p);
    for (int32_t r = 0; r < g->n_rules; r++) {
        const body_t *b = &p->bodies[r];
        g->rules[r].first_alt = g->n_alts;
        int32_t alt_start = g->n_elems;
        for (int32_t i = 0; i < b->n; i++) {
            g->elems[g->n_elems++] = b->e[i];
            if (b->e[i].kind != GR_END) continue;
            g->alts[g->n_alts++] = alt_start;
            alt_start = g->n_elems;
        }
        g->rules[r].n_alts = g->n_alts - g->rules[r].first_alt;
    }
    return true;
}

static void parser_free(parser_t *p) {
    for (int32_t r = 0; p->bodies && r < p->g->n_rules; r++) free(p->bodies[r].e);
    free(p->bodies);
    free(p->names_map);
}

rt_status_t rtm_gbnf_parse(const char *text, size_t len, const char *root, rtm_gbnf_t **out) {
    *out = NULL;
    rtm_gbnf_t *g = calloc(1, sizeof *g);
    if (g == NULL) return rtm_error(RT_ERR_OUT_OF_MEMORY, "grammar: no memory");
    parser_t p = {.s = text, .len = text ? len : 0, .line = 1, .g = g};
    for (;;) {
        skip_space(&p, true);
        if (at_end(&p) || !parse_rule(&p)) break;
    }
    if (p.st == RT_OK && p.n_named == 0) fail_loc(&p, p.pos, "the grammar has no rules");
    if (p.st == RT_OK) flatten(&p);
    parser_free(&p);
    rt_status_t st = p.st;
    if (st == RT_OK) st = rtm_gbnf_check(g, root);
    if (st != RT_OK) {
        rtm_gbnf_destroy(g);
        return st;
    }
    *out = g;
    return RT_OK;
}

void rtm_gbnf_destroy(rtm_gbnf_t *g) {
    if (g == NULL) return;
    free(g->elems);
    free(g->alts);
    free(g->rules);
    free(g->sets);
    free(g->ranges);
    free(g->names);
    free(g);
}

const char *rtm_gbnf_rule_name(const rtm_gbnf_t *g, int32_t rule) {
    const gr_rule_t *r = &g->rules[g->rules[rule].owner];
    return r->name >= 0 ? g->names + r->name : "?";
}
