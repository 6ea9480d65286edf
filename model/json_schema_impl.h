/* SPDX-License-Identifier: MIT */
/* json_schema_impl.h: the JSON Schema to GBNF converter's private state,
 * shared by json_schema.c (the public calls and the shared rules),
 * json_schema_conv.c (keywords, $ref, anyOf/oneOf/allOf, enum/const, the
 * rules and their names) and json_schema_types.c (objects, arrays,
 * strings, integers).
 *
 * How a schema becomes a grammar: each subschema is converted into a GBNF
 * expression. A subschema whose expression is one of the shared rules
 * (`string`, `integer`, ...) is referred to by that name; any other gets a
 * rule of its own, named after where it sits (root-address-street) and
 * referred to by name, so that every expression a converter writes is a
 * plain sequence or alternation of names, literals and classes. A $ref
 * target gets one rule, made the first time it is met and named before its
 * body is converted, so a recursive schema refers to its own rule. The
 * shared rules are printed last, only those used.
 *
 * The converter stops at its first error: rtm_js_fail records the message
 * (with the JSON pointer of the schema being converted) and the status
 * every later call returns. */
#ifndef RTM_JSON_SCHEMA_IMPL_H
#define RTM_JSON_SCHEMA_IMPL_H

#include "internal.h"

/* Limits, stated in rt_model.h: subschemas within subschemas ($ref
 * targets counted), any count written as a repetition (minLength,
 * maxLength, minItems, maxItems) and prefixItems' length, and the
 * grammar's size. */
#define RTM_JS_MAX_DEPTH 64
#define RTM_JS_MAX_COUNT 1000
#define RTM_JS_MAX_PREFIX 100
#define RTM_JS_MAX_BYTES ((size_t)1 << 20)
/* Whitespace allowed between two tokens, in characters. */
#define RTM_JS_MAX_WS 20

/* The shared rules, in the order they are printed. */
enum {
    RTM_JS_VALUE,
    RTM_JS_OBJECT,
    RTM_JS_ARRAY,
    RTM_JS_STRING,
    RTM_JS_CHAR,
    RTM_JS_NUMBER,
    RTM_JS_INTEGER,
    RTM_JS_BOOLEAN,
    RTM_JS_NULL,
    RTM_JS_WS,
    RTM_JS_PRIM_COUNT
};

/* The rule's name and body (GBNF), and the mask of the shared rules its
 * body names. */
RTM_INTERNAL const char *rtm_js_prim_name(int prim);
RTM_INTERNAL const char *rtm_js_prim_body(int prim);
RTM_INTERNAL uint32_t rtm_js_prim_deps(int prim);

#ifdef RT_HAVE_JANSSON
#include <jansson.h>

/* A growing text; p is NUL-terminated once anything was written. */
typedef struct rtm_js_buf {
    char *p;
    size_t n, cap; /* bytes written, bytes allocated */
} rtm_js_buf_t;

/* A rule. Its name is reserved before its body is converted (children
 * name theirs after it, a $ref target may refer to itself); a rule whose
 * body turns out to be one name is dropped and that name used instead. */
typedef struct rtm_js_rule {
    char *name; /* malloc'd; stable while rules[] grows */
    rtm_js_buf_t body;
    bool dropped;
} rtm_js_rule_t;

typedef struct rtm_js {
    json_t *doc;      /* the schema document ($ref targets are found in it) */
    json_t *names;    /* rule name -> index in rules (its keys are the names taken) */
    json_t *refs;     /* $ref string -> index of its rule */
    json_t *keep;     /* schemas made by merging allOf, alive until the end */
    json_t *suffixes; /* a name's base -> the next number to try after it ("root-3") */
    rtm_js_rule_t *rules;
    int32_t n_rules, cap_rules;
    rtm_js_buf_t path;  /* JSON pointer of the schema being converted ("#/properties/a") */
    const char **chain; /* $refs entered since the last character the grammar consumed */
    int32_t n_chain, cap_chain, chain_floor; /* refs below chain_floor are behind a character */
    uint32_t prims;                          /* the shared rules used (1 << RTM_JS_*) */
    size_t bytes;                            /* grammar text written so far */
    int32_t depth;                           /* subschemas being converted, one inside the other */
    rt_status_t st;                          /* the first error; RT_OK while none */
} rtm_js_t;

/* Records the first error: "json schema, <path>[/key]: <reason>";
 * returns c->st. */
RTM_INTERNAL rt_status_t rtm_js_fail(rtm_js_t *c, rt_status_t st, const char *key, const char *fmt,
                                     ...) RT_PRINTF(4, 5);

/* Appends text (counted against RTM_JS_MAX_BYTES); return c->st. */
RTM_INTERNAL rt_status_t rtm_js_put(rtm_js_t *c, rtm_js_buf_t *b, const char *s);
RTM_INTERNAL rt_status_t rtm_js_putn(rtm_js_t *c, rtm_js_buf_t *b, const char *s, size_t n);
RTM_INTERNAL rt_status_t rtm_js_printf(rtm_js_t *c, rtm_js_buf_t *b, const char *fmt, ...)
    RT_PRINTF(3, 4);
/* A shared rule's name, marked used. */
RTM_INTERNAL rt_status_t rtm_js_prim(rtm_js_t *c, rtm_js_buf_t *b, int prim);
/* A GBNF string literal of n bytes of UTF-8 ("..." with escapes). */
RTM_INTERNAL rt_status_t rtm_js_literal(rtm_js_t *c, rtm_js_buf_t *b, const char *s, size_t n);
/* n bytes of UTF-8 as a JSON string, canonically: the quote, the
 * backslash, BS, FF, LF, CR and TAB by their one-letter escapes, the other
 * controls as \u00XX, everything else as it is. */
RTM_INTERNAL rt_status_t rtm_js_json_string(rtm_js_t *c, rtm_js_buf_t *b, const char *s, size_t n);
/* One code point (its n UTF-8 bytes) as it is written inside [...]. */
RTM_INTERNAL rt_status_t rtm_js_class_char(rtm_js_t *c, rtm_js_buf_t *b, const char *s, size_t n);
/* "{m}", "{m,n}", "{m,}", "?", "*", "+" or "" for m..n repetitions of
 * what precedes (n < 0: no upper bound; m == n == 1: nothing). */
RTM_INTERNAL rt_status_t rtm_js_repeat(rtm_js_t *c, rtm_js_buf_t *b, int64_t m, int64_t n);
RTM_INTERNAL void rtm_js_buf_free(rtm_js_buf_t *b);

/* The JSON pointer: push appends "/seg" (escaped) and returns the length
 * to pop back to. */
RTM_INTERNAL size_t rtm_js_push(rtm_js_t *c, const char *seg);
RTM_INTERNAL size_t rtm_js_push_index(rtm_js_t *c, size_t i);
RTM_INTERNAL void rtm_js_pop(rtm_js_t *c, size_t len);

/* Converts schema (found at the current path, under key: NULL, "items",
 * "properties/name" are pushed by the caller) and appends the expression
 * that matches it to out: a shared rule's name, or the name of a new rule
 * called `hint` (made unique). */
RTM_INTERNAL rt_status_t rtm_js_schema(rtm_js_t *c, json_t *schema, const char *hint,
                                       rtm_js_buf_t *out);
/* Reserves a rule called hint (made unique); its index. */
RTM_INTERNAL int32_t rtm_js_rule_open(rtm_js_t *c, const char *hint);
/* A character was consumed: $refs met from here on cannot loop back to
 * those entered before. Returns the floor to give to rtm_js_consumed_end. */
RTM_INTERNAL int32_t rtm_js_consumed(rtm_js_t *c);
RTM_INTERNAL void rtm_js_consumed_end(rtm_js_t *c, int32_t floor);

/* A non-negative integer keyword (minItems...): *out, or def when absent.
 * RT_ERR_FORMAT for another value. */
RTM_INTERNAL rt_status_t rtm_js_count(rtm_js_t *c, json_t *schema, const char *key, int64_t def,
                                      int64_t *out);
/* Whether schema has key, one of the keywords that constrain `type`. */
RTM_INTERNAL bool rtm_js_has_keyword_of(json_t *schema, const char *type);

/* The bodies of the typed schemas (json_schema_types.c): each appends
 * the expression for values of that type that schema allows; name is
 * the rule being written (children's names start with it). */
RTM_INTERNAL rt_status_t rtm_js_object(rtm_js_t *c, json_t *schema, const char *name,
                                       rtm_js_buf_t *out);
RTM_INTERNAL rt_status_t rtm_js_array(rtm_js_t *c, json_t *schema, const char *name,
                                      rtm_js_buf_t *out);
RTM_INTERNAL rt_status_t rtm_js_string(rtm_js_t *c, json_t *schema, rtm_js_buf_t *out);
RTM_INTERNAL rt_status_t rtm_js_integer(rtm_js_t *c, json_t *schema, rtm_js_buf_t *out);
RTM_INTERNAL rt_status_t rtm_js_number(rtm_js_t *c, json_t *schema, rtm_js_buf_t *out);

/* The whole conversion: schema text in, grammar out (malloc'd). */
RTM_INTERNAL rt_status_t rtm_js_convert(const char *text, size_t len, char **out_gbnf);
#endif /* RT_HAVE_JANSSON */

#endif /* RTM_JSON_SCHEMA_IMPL_H */
