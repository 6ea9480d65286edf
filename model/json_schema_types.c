/* SPDX-License-Identifier: MIT */
/* json_schema_types.c: the grammar of each type's keywords
 * (json_schema_impl.h).
 *
 * Objects: the required properties first, in the order of `properties`
 * (required names that `properties` does not list after them, in the
 * order of `required`), then the optional ones, each present or not, in
 * the order of `properties`, then any number of additional properties
 * (unless additionalProperties is false) whose names are none of those:
 * every object the schema allows is accepted with its members in that
 * order. The name of an additional property is matched against a trie
 * of the declared names, so that it cannot be one of them; until it has
 * left every declared name it may not use \u escapes (it may once it
 * has).
 *
 * Arrays: prefixItems (items as an array, in older drafts) then items
 * (additionalItems then), with minItems and maxItems as nested optional
 * groups and a {m,n} repetition. Strings: minLength/maxLength as a {m,n}
 * repetition of characters (an escape is one character, a surrogate pair
 * two); formats date, time, date-time and uuid by their RFC 3339 / 4122
 * shapes (any day 01..31 in any month), other formats as plain strings
 * (JSON Schema makes format an annotation). Integers: minimum, maximum
 * and their exclusive forms as an exact grammar of the decimal range
 * (digit by digit), without the "-0" that an unbounded integer allows. */
#include "json_schema_impl.h"

#ifdef RT_HAVE_JANSSON

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QUOTE "\"\\\"\"" /* the GBNF literal of one '"' */

/* "( inner ){lo,hi}" when hi allows any (hi < 0: no bound). */
static rt_status_t group_repeat(rtm_js_t *c, rtm_js_buf_t *out, const char *inner, int64_t lo,
                                int64_t hi) {
    if (hi == 0) return c->st;
    if (lo == 1 && hi == 1) return rtm_js_printf(c, out, " %s", inner);
    rtm_js_put(c, out, " ( ");
    rtm_js_put(c, out, inner);
    rtm_js_put(c, out, " )");
    return rtm_js_repeat(c, out, lo, hi);
}

//===--- objects ---===//

/* A node of the trie of declared names: its children by the UTF-8 bytes
 * of their code point, and whether a name ends there. */
typedef struct trie_node {
    char cpt[4];
    uint8_t cpt_len;
    bool terminal;
    int32_t first_child, last_child, next_sibling; /* -1: none */
} trie_node_t;

typedef struct trie {
    trie_node_t *nodes;
    int32_t n, cap;
} trie_t;

static size_t utf8_len(unsigned char lead) {
    return lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
}

/* node's child for the code point, added last when it has none (-2: no
 * memory). Names go in sorted, so an existing child can only be the last. */
static int32_t trie_child(trie_t *t, int32_t node, const char *cpt, size_t len) {
    int32_t last = t->nodes[node].last_child;
    if (last >= 0 && t->nodes[last].cpt_len == len && memcmp(t->nodes[last].cpt, cpt, len) == 0)
        return last;
    if (t->n == t->cap) {
        const int32_t cap = t->cap < 16 ? 16 : t->cap * 2;
        trie_node_t *p = realloc(t->nodes, (size_t)cap * sizeof p[0]);
        if (p == NULL) return -2;
        t->nodes = p;
        t->cap = cap;
    }
    trie_node_t *n = &t->nodes[t->n];
    *n = (trie_node_t){
        .cpt_len = (uint8_t)len, .first_child = -1, .last_child = -1, .next_sibling = -1};
    memcpy(n->cpt, cpt, len);
    if (last < 0)
        t->nodes[node].first_child = t->n;
    else
        t->nodes[last].next_sibling = t->n;
    t->nodes[node].last_child = t->n;
    return t->n++;
}

static bool trie_add(trie_t *t, const char *name, size_t len) {
    int32_t node = 0;
    for (size_t i = 0; i < len;) {
        size_t n = utf8_len((unsigned char)name[i]);
        if (n > len - i) n = len - i;
        node = trie_child(t, node, name + i, n);
        if (node < 0) return false;
        i += n;
    }
    t->nodes[node].terminal = true;
    return true;
}

/* How a name's code point is written in JSON, canonically (jansson's
 * spelling, as enum values and declared names are written). */
static const char *json_escape_of(const trie_node_t *n, char tmp[8]) {
    const unsigned char ch = (unsigned char)n->cpt[0];
    if (n->cpt_len != 1 || (ch >= 0x20 && ch != '"' && ch != '\\')) return NULL;
    const char *short_esc = ch == '"'    ? "\\\""
                            : ch == '\\' ? "\\\\"
                            : ch == '\b' ? "\\b"
                            : ch == '\f' ? "\\f"
                            : ch == '\n' ? "\\n"
                            : ch == '\r' ? "\\r"
                            : ch == '\t' ? "\\t"
                                         : NULL;
    if (short_esc != NULL) return short_esc;
    snprintf(tmp, 8, "\\u%04X", ch);
    return tmp;
}

/* The one-letter escapes and what they stand for. */
static const char esc_letters[] = "\"\\/bfnrt";
static const char esc_values[] = "\"\\/\b\f\n\r\t";

static bool node_has_child_byte(const trie_t *t, int32_t node, char ch) {
    for (int32_t k = t->nodes[node].first_child; k >= 0; k = t->nodes[k].next_sibling)
        if (t->nodes[k].cpt_len == 1 && t->nodes[k].cpt[0] == ch) return true;
    return false;
}

/* After the opening quote, at trie node `node`: a name that leaves the
 * trie here (a character no child has; a one-letter escape that is none
 * of them), follows a child, or ends here when no declared name does. A
 * leaf is a declared name's end: any more characters leave it. */
static rt_status_t trie_body(rtm_js_t *c, const trie_t *t, int32_t node, const int32_t *rule_of,
                             rtm_js_buf_t *out) {
    const trie_node_t *n = &t->nodes[node];
    if (n->first_child < 0) {
        rtm_js_prim(c, out, RTM_JS_CHAR);
        return rtm_js_put(c, out, "+ " QUOTE);
    }
    rtm_js_put(c, out, "[^");
    for (int32_t k = n->first_child; k >= 0; k = t->nodes[k].next_sibling)
        rtm_js_class_char(c, out, t->nodes[k].cpt, t->nodes[k].cpt_len);
    rtm_js_put(c, out, "\"\\\\\\x00-\\x1F] ");
    rtm_js_prim(c, out, RTM_JS_CHAR);
    rtm_js_put(c, out, "* " QUOTE);
    char letters[sizeof esc_letters];
    size_t n_letters = 0;
    for (size_t i = 0; esc_letters[i] != 0; i++)
        if (!node_has_child_byte(t, node, esc_values[i])) letters[n_letters++] = esc_letters[i];
    if (n_letters > 0) {
        rtm_js_put(c, out, " | \"\\\\\" [");
        rtm_js_class_char(c, out, letters, n_letters);
        rtm_js_put(c, out, "] ");
        rtm_js_prim(c, out, RTM_JS_CHAR);
        rtm_js_put(c, out, "* " QUOTE);
    }
    for (int32_t k = n->first_child; k >= 0 && c->st == RT_OK; k = t->nodes[k].next_sibling) {
        char tmp[8];
        const char *esc = json_escape_of(&t->nodes[k], tmp);
        rtm_js_put(c, out, " | ");
        rtm_js_literal(c, out, esc != NULL ? esc : t->nodes[k].cpt,
                       esc != NULL ? strlen(esc) : t->nodes[k].cpt_len);
        rtm_js_put(c, out, " ");
        if (rule_of[k] >= 0)
            rtm_js_put(c, out, c->rules[rule_of[k]].name);
        else
            trie_body(c, t, k, rule_of, out); /* a leaf: one sequence */
    }
    if (!n->terminal) rtm_js_put(c, out, " | " QUOTE);
    return c->st;
}

static int compare_names(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The rule `<name>-key`: a JSON string that is none of the names (n of
 * them, sorted here); one rule per inner node of their trie. */
static rt_status_t other_name(rtm_js_t *c, const char *name, const char **names, size_t n,
                              rtm_js_buf_t *out) {
    trie_t t = {.nodes = malloc(16 * sizeof(trie_node_t)), .n = 1, .cap = 16};
    int32_t *rule_of = NULL;
    bool ok = t.nodes != NULL;
    if (ok) t.nodes[0] = (trie_node_t){.first_child = -1, .last_child = -1, .next_sibling = -1};
    qsort(names, n, sizeof names[0], compare_names);
    for (size_t i = 0; i < n && ok; i++)
        ok = trie_add(&t, names[i], strlen(names[i]));
    if (ok) ok = (rule_of = malloc((size_t)t.n * sizeof rule_of[0])) != NULL;
    if (!ok) {
        free(t.nodes);
        return rtm_js_fail(c, RT_ERR_OUT_OF_MEMORY, NULL, "no memory");
    }
    char hint[80];
    snprintf(hint, sizeof hint, "%s-key", name);
    for (int32_t i = 0; i < t.n; i++)
        rule_of[i] = i == 0 || t.nodes[i].first_child >= 0 ? rtm_js_rule_open(c, hint) : -1;
    for (int32_t i = 0; i < t.n && c->st == RT_OK; i++) {
        if (rule_of[i] < 0) continue;
        rtm_js_buf_t body = {0};
        if (i == 0) rtm_js_put(c, &body, QUOTE " ( ");
        trie_body(c, &t, i, rule_of, &body);
        if (i == 0) rtm_js_put(c, &body, " )");
        c->rules[rule_of[i]].body = body;
    }
    if (c->st == RT_OK) rtm_js_put(c, out, c->rules[rule_of[0]].name);
    free(rule_of);
    free(t.nodes);
    return c->st;
}

/* What an object's members are made of. */
typedef struct members {
    rtm_js_buf_t *req, *opt; /* each member's expression: name ws ":" ws value ws */
    size_t n_req, n_opt;
    const char **names; /* every name declared, for the additional names */
    size_t n_names;
    rtm_js_buf_t extra; /* an additional member's rule name; empty when none is allowed */
    json_t *required;   /* the names `required` lists, as keys */
} members_t;

static void members_free(members_t *m) {
    for (size_t i = 0; i < m->n_req; i++)
        rtm_js_buf_free(&m->req[i]);
    for (size_t i = 0; i < m->n_opt; i++)
        rtm_js_buf_free(&m->opt[i]);
    free(m->req);
    free(m->opt);
    free(m->names);
    rtm_js_buf_free(&m->extra);
    json_decref(m->required);
}

/* "\"key\"" ws ":" ws <value> ws, the value's schema at path/seg1/seg2. */
static rt_status_t member(rtm_js_t *c, const char *name, const char *key, json_t *schema,
                          const char *seg1, const char *seg2, rtm_js_buf_t *out) {
    rtm_js_buf_t text = {0};
    rtm_js_json_string(c, &text, key, strlen(key));
    if (c->st == RT_OK) rtm_js_literal(c, out, text.p, text.n);
    c->bytes -= text.n;
    rtm_js_buf_free(&text);
    rtm_js_put(c, out, " ws \":\" ws ");
    c->prims |= 1u << RTM_JS_WS;
    const size_t len = rtm_js_push(c, seg1);
    if (seg2 != NULL) rtm_js_push(c, seg2);
    char hint[80];
    snprintf(hint, sizeof hint, "%s-%s", name, key);
    if (schema != NULL)
        rtm_js_schema(c, schema, hint, out);
    else
        rtm_js_prim(c, out, RTM_JS_VALUE);
    rtm_js_pop(c, len);
    return rtm_js_put(c, out, " ws");
}

/* additionalProperties: NULL for any value, the schema, or *none. */
static rt_status_t additional(rtm_js_t *c, json_t *schema, json_t **out, bool *none) {
    json_t *a = json_object_get(schema, "additionalProperties");
    *out = NULL;
    *none = json_is_false(a);
    if (a == NULL || json_is_boolean(a)) return RT_OK;
    if (!json_is_object(a))
        return rtm_js_fail(c, RT_ERR_FORMAT, "additionalProperties",
                           "'additionalProperties' wants a schema");
    *out = json_object_size(a) == 0 ? NULL : a;
    return RT_OK;
}

static rt_status_t collect_members(rtm_js_t *c, json_t *schema, const char *name, members_t *m) {
    json_t *props = json_object_get(schema, "properties"),
           *required = json_object_get(schema, "required");
    if (props != NULL && !json_is_object(props))
        return rtm_js_fail(c, RT_ERR_FORMAT, "properties",
                           "'properties' wants an object of schemas");
    if (required != NULL && !json_is_array(required))
        return rtm_js_fail(c, RT_ERR_FORMAT, "required", "'required' wants an array of names");
    if ((m->required = json_object()) == NULL) return rtm_js_fail(c, RT_ERR_OUT_OF_MEMORY, NULL, "no memory");
    for (size_t i = 0; i < json_array_size(required); i++) {
        const char *req = json_string_value(json_array_get(required, i));
        if (req == NULL)
            return rtm_js_fail(c, RT_ERR_FORMAT, "required", "'required' wants an array of names");
        if (json_object_set_new(m->required, req, json_true()) != 0)
            return rtm_js_fail(c, RT_ERR_OUT_OF_MEMORY, NULL, "no memory");
    }
    json_t *extra;
    bool none;
    if (additional(c, schema, &extra, &none) != RT_OK) return c->st;
    const size_t n_props = json_object_size(props), n_required = json_array_size(required);
    m->req = calloc(n_props + n_required + 1, sizeof m->req[0]);
    m->opt = calloc(n_props + 1, sizeof m->opt[0]);
    m->names = calloc(n_props + n_required + 1, sizeof m->names[0]);
    if (m->req == NULL || m->opt == NULL || m->names == NULL)
        return rtm_js_fail(c, RT_ERR_OUT_OF_MEMORY, NULL, "no memory");
    const char *key;
    json_t *v;
    json_object_foreach(props, key, v) {
        const bool req = json_object_get(m->required, key) != NULL;
        m->names[m->n_names++] = key;
        if (json_is_false(v) && req)
            return rtm_js_fail(c, RT_ERR_UNSUPPORTED, "required",
                               "'%.60s' is required and its schema is false: no object is allowed",
                               key);
        if (json_is_false(v)) continue; /* never present (and no additional name either) */
        member(c, name, key, v, "properties", key, req ? &m->req[m->n_req++] : &m->opt[m->n_opt++]);
    }
    for (size_t i = 0; i < n_required && c->st == RT_OK; i++) {
        key = json_string_value(json_array_get(required, i));
        if (json_object_get(props, key) != NULL || json_object_get(m->required, key) != json_true())
            continue; /* declared, or listed twice (the set marks the first one done) */
        if (json_object_set_new(m->required, key, json_false()) != 0)
            return rtm_js_fail(c, RT_ERR_OUT_OF_MEMORY, NULL, "no memory");
        if (none)
            return rtm_js_fail(c, RT_ERR_UNSUPPORTED, "required",
                               "'%.60s' is required, 'properties' does not list it and "
                               "'additionalProperties' is false: no object is allowed",
                               key);
        m->names[m->n_names++] = key;
        member(c, name, key, extra, "additionalProperties", NULL, &m->req[m->n_req++]);
    }
    if (none || c->st != RT_OK) return c->st;
    /* an additional member: a name none of the above, then its value */
    char hint[80];
    snprintf(hint, sizeof hint, "%s-kv", name);
    const int32_t idx = rtm_js_rule_open(c, hint);
    if (idx < 0) return c->st;
    rtm_js_buf_t body = {0};
    if (m->n_names == 0)
        rtm_js_prim(c, &body, RTM_JS_STRING);
    else
        other_name(c, name, m->names, m->n_names, &body);
    rtm_js_put(c, &body, " ws \":\" ws ");
    const size_t len = rtm_js_push(c, "additionalProperties");
    snprintf(hint, sizeof hint, "%s-value", name);
    if (extra != NULL)
        rtm_js_schema(c, extra, hint, &body);
    else
        rtm_js_prim(c, &body, RTM_JS_VALUE);
    rtm_js_pop(c, len);
    rtm_js_put(c, &body, " ws");
    c->rules[idx].body = body;
    return rtm_js_put(c, &m->extra, c->rules[idx].name);
}

/* No required member: ( S1 )? where S_i, "the members from optional i
 * on", is O_i ( "," ws S_i+1 )? | S_i+1, one rule each, and after the
 * last optional member come the additional ones. */
static rt_status_t optional_chain(rtm_js_t *c, const members_t *m, const char *name,
                                  rtm_js_buf_t *out) {
    char extras[256] = "";
    if (m->extra.n > 0)
        snprintf(extras, sizeof extras, "%s ( \",\" ws %s )*", m->extra.p, m->extra.p);
    if (m->n_opt == 0) return rtm_js_printf(c, out, " ( %s )?", extras);
    int32_t *idx = malloc(m->n_opt * sizeof idx[0]);
    if (idx == NULL) return rtm_js_fail(c, RT_ERR_OUT_OF_MEMORY, NULL, "no memory");
    char hint[80];
    snprintf(hint, sizeof hint, "%s-rest", name);
    for (size_t i = 0; i < m->n_opt && c->st == RT_OK; i++)
        idx[i] = rtm_js_rule_open(c, hint);
    for (size_t i = 0; i < m->n_opt && c->st == RT_OK; i++) {
        rtm_js_buf_t body = {0};
        const char *next = i + 1 == m->n_opt ? extras : c->rules[idx[i + 1]].name;
        rtm_js_putn(c, &body, m->opt[i].p, m->opt[i].n);
        if (next[0] != 0) rtm_js_printf(c, &body, " ( \",\" ws %s )? | %s", next, next);
        c->rules[idx[i]].body = body;
    }
    if (c->st == RT_OK) rtm_js_printf(c, out, " ( %s )?", c->rules[idx[0]].name);
    free(idx);
    return c->st;
}

rt_status_t rtm_js_object(rtm_js_t *c, json_t *schema, const char *name, rtm_js_buf_t *out) {
    members_t m = {0};
    const int32_t floor = rtm_js_consumed(c);
    collect_members(c, schema, name, &m);
    rtm_js_consumed_end(c, floor);
    c->prims |= 1u << RTM_JS_WS;
    rtm_js_put(c, out, "\"{\" ws");
    if (m.n_req > 0) {
        for (size_t i = 0; i < m.n_req && c->st == RT_OK; i++) {
            if (i > 0) rtm_js_put(c, out, " \",\" ws");
            rtm_js_put(c, out, " ");
            rtm_js_putn(c, out, m.req[i].p, m.req[i].n);
        }
        for (size_t i = 0; i < m.n_opt && c->st == RT_OK; i++) {
            rtm_js_put(c, out, " ( \",\" ws ");
            rtm_js_putn(c, out, m.opt[i].p, m.opt[i].n);
            rtm_js_put(c, out, " )?");
        }
        if (m.extra.n > 0) rtm_js_printf(c, out, " ( \",\" ws %s )*", m.extra.p);
    } else if (m.n_opt > 0 || m.extra.n > 0) {
        optional_chain(c, &m, name, out);
    }
    rtm_js_put(c, out, " \"}\"");
    members_free(&m);
    return c->st;
}

//===--- arrays ---===//

typedef struct array_shape {
    json_t *prefix; /* array of schemas, or NULL */
    const char *prefix_key;
    json_t *items; /* the schema of the items after the prefix; NULL: any */
    const char *items_key;
    bool no_items;    /* no items after the prefix */
    int64_t min, max; /* max < 0: no bound */
} array_shape_t;

static rt_status_t array_shape(rtm_js_t *c, json_t *schema, array_shape_t *a) {
    json_t *items = json_object_get(schema, "items");
    *a = (array_shape_t){.prefix = json_object_get(schema, "prefixItems"),
                         .prefix_key = "prefixItems",
                         .items = items,
                         .items_key = "items"};
    if (json_is_array(items)) { /* drafts before 2020-12: items as an array is the prefix */
        if (a->prefix != NULL)
            return rtm_js_fail(c, RT_ERR_FORMAT, "items",
                               "'items' as an array beside 'prefixItems'");
        a->prefix = items;
        a->prefix_key = "items";
        a->items = json_object_get(schema, "additionalItems");
        a->items_key = "additionalItems";
    }
    if (a->prefix != NULL && !json_is_array(a->prefix))
        return rtm_js_fail(c, RT_ERR_FORMAT, a->prefix_key, "'%s' wants an array of schemas",
                           a->prefix_key);
    if (json_array_size(a->prefix) > RTM_JS_MAX_PREFIX)
        return rtm_js_fail(c, RT_ERR_UNSUPPORTED, a->prefix_key,
                           "%zu schemas are more than the %d converted", json_array_size(a->prefix),
                           RTM_JS_MAX_PREFIX);
    if (a->items != NULL && !json_is_object(a->items) && !json_is_boolean(a->items))
        return rtm_js_fail(c, RT_ERR_FORMAT, a->items_key, "'%s' wants a schema", a->items_key);
    a->no_items = json_is_false(a->items);
    if (json_is_true(a->items) || (json_is_object(a->items) && json_object_size(a->items) == 0))
        a->items = NULL;
    if (rtm_js_count(c, schema, "minItems", 0, &a->min) != RT_OK) return c->st;
    if (rtm_js_count(c, schema, "maxItems", -1, &a->max) != RT_OK) return c->st;
    const int64_t p = (int64_t)json_array_size(a->prefix);
    if (a->no_items && (a->max < 0 || a->max > p)) a->max = p;
    if (a->max >= 0 && a->min > a->max)
        return rtm_js_fail(c, RT_ERR_UNSUPPORTED, "minItems",
                           "minItems %lld is more than the %lld items allowed: no array is",
                           (long long)a->min, (long long)a->max);
    if (a->min > RTM_JS_MAX_COUNT || a->max > RTM_JS_MAX_COUNT)
        return rtm_js_fail(
            c, RT_ERR_UNSUPPORTED, a->min > RTM_JS_MAX_COUNT ? "minItems" : "maxItems",
            "%lld is more than the %d this converter writes",
            (long long)(a->min > RTM_JS_MAX_COUNT ? a->min : a->max), RTM_JS_MAX_COUNT);
    return RT_OK;
}

/* "[" ws P0 ws ( "," ws P1 ws ( ... ( "," ws I ws ){lo,hi} )? )? "]" with
 * groups only where the position is optional (at or past minItems). */
rt_status_t rtm_js_array(rtm_js_t *c, json_t *schema, const char *name, rtm_js_buf_t *out) {
    array_shape_t a;
    if (array_shape(c, schema, &a) != RT_OK) return c->st;
    const int64_t p = (int64_t)json_array_size(a.prefix);
    const int64_t n_prefix = a.max >= 0 && a.max < p ? a.max : p; /* positions maxItems leaves */
    const bool tail = !a.no_items && (a.max < 0 || a.max > p), any = n_prefix > 0 || tail;
    const int32_t floor = rtm_js_consumed(c);
    c->prims |= 1u << RTM_JS_WS;
    rtm_js_put(c, out, "\"[\" ws");
    if (any && a.min == 0) rtm_js_put(c, out, " (");
    int64_t open = 0;
    char hint[80];
    for (int64_t j = 0; j < n_prefix && c->st == RT_OK; j++) {
        if (j > 0 && j >= a.min) {
            rtm_js_put(c, out, " (");
            open++;
        }
        rtm_js_put(c, out, j > 0 ? " \",\" ws " : " ");
        const size_t len = rtm_js_push(c, a.prefix_key);
        rtm_js_push_index(c, (size_t)j);
        snprintf(hint, sizeof hint, "%s-%lld", name, (long long)j);
        rtm_js_schema(c, json_array_get(a.prefix, (size_t)j), hint, out);
        rtm_js_pop(c, len);
        rtm_js_put(c, out, " ws");
    }
    if (tail) {
        rtm_js_buf_t item = {0}, inner = {0};
        const size_t len = rtm_js_push(c, a.items_key);
        snprintf(hint, sizeof hint, "%s-item", name);
        if (a.items != NULL)
            rtm_js_schema(c, a.items, hint, &item);
        else
            rtm_js_prim(c, &item, RTM_JS_VALUE);
        rtm_js_pop(c, len);
        rtm_js_printf(c, &inner, "\",\" ws %s ws", item.p != NULL ? item.p : "");
        const int64_t lo = a.min > p ? a.min - p : 0, hi = a.max < 0 ? -1 : a.max - p;
        if (p == 0 && c->st == RT_OK) { /* the first item has no comma */
            rtm_js_printf(c, out, " %s ws", item.p);
            group_repeat(c, out, inner.p, lo > 1 ? lo - 1 : 0, hi < 0 ? -1 : hi - 1);
        } else if (c->st == RT_OK) {
            group_repeat(c, out, inner.p, lo, hi);
        }
        rtm_js_buf_free(&item);
        rtm_js_buf_free(&inner);
    }
    for (int64_t j = 0; j < open; j++)
        rtm_js_put(c, out, " )?");
    if (any && a.min == 0) rtm_js_put(c, out, " )?");
    rtm_js_consumed_end(c, floor);
    return rtm_js_put(c, out, " \"]\"");
}

//===--- strings ---===//

#define FMT_DATE                                                                                   \
    "[0-9]{4} \"-\" ( \"0\" [1-9] | \"1\" [0-2] ) \"-\" ( \"0\" [1-9] | [12] [0-9] | \"3\" [01] )"
#define FMT_HOUR "( [01] [0-9] | \"2\" [0-3] )"
#define FMT_TIME                                                                                   \
    FMT_HOUR " \":\" [0-5] [0-9] \":\" ( [0-5] [0-9] | \"60\" ) ( \".\" [0-9]+ )? "                  \
             "( [Zz] | [-+] " FMT_HOUR " \":\" [0-5] [0-9] )"
#define FMT_HEX "[0-9a-fA-F]"

static const struct {
    const char *name, *grammar;
} formats[] = {
    {"date", FMT_DATE},
    {"time", FMT_TIME},
    {"date-time", FMT_DATE " [Tt] " FMT_TIME},
    {"uuid", FMT_HEX "{8} \"-\" " FMT_HEX "{4} \"-\" " FMT_HEX "{4} \"-\" " FMT_HEX
                     "{4} \"-\" " FMT_HEX "{12}"},
};

rt_status_t rtm_js_string(rtm_js_t *c, json_t *schema, rtm_js_buf_t *out) {
    int64_t min, max;
    if (rtm_js_count(c, schema, "minLength", 0, &min) != RT_OK) return c->st;
    if (rtm_js_count(c, schema, "maxLength", -1, &max) != RT_OK) return c->st;
    json_t *format = json_object_get(schema, "format");
    if (format != NULL && !json_is_string(format))
        return rtm_js_fail(c, RT_ERR_FORMAT, "format", "'format' wants a string");
    for (size_t i = 0; format != NULL && i < sizeof formats / sizeof formats[0]; i++) {
        if (strcmp(json_string_value(format), formats[i].name) != 0) continue;
        if (json_object_get(schema, "minLength") != NULL ||
            json_object_get(schema, "maxLength") != NULL)
            return rtm_js_fail(c, RT_ERR_UNSUPPORTED, "format",
                               "minLength or maxLength beside format '%s' is not supported",
                               formats[i].name);
        return rtm_js_printf(c, out, QUOTE " %s " QUOTE, formats[i].grammar);
    }
    if (max >= 0 && min > max)
        return rtm_js_fail(c, RT_ERR_UNSUPPORTED, "minLength",
                           "minLength %lld is more than maxLength %lld: no string is allowed",
                           (long long)min, (long long)max);
    if (min > RTM_JS_MAX_COUNT || max > RTM_JS_MAX_COUNT)
        return rtm_js_fail(c, RT_ERR_UNSUPPORTED,
                           min > RTM_JS_MAX_COUNT ? "minLength" : "maxLength",
                           "%lld is more than the %d this converter writes",
                           (long long)(min > RTM_JS_MAX_COUNT ? min : max), RTM_JS_MAX_COUNT);
    if (min == 0 && max < 0) return rtm_js_prim(c, out, RTM_JS_STRING);
    if (max == 0) return rtm_js_put(c, out, QUOTE " " QUOTE);
    rtm_js_put(c, out, QUOTE " ");
    rtm_js_prim(c, out, RTM_JS_CHAR);
    rtm_js_repeat(c, out, min, max);
    return rtm_js_put(c, out, " " QUOTE);
}

//===--- numbers and integers ---===//

rt_status_t rtm_js_number(rtm_js_t *c, json_t *schema, rtm_js_buf_t *out) {
    static const char *const bounds[] = {"minimum", "maximum", "exclusiveMinimum",
                                         "exclusiveMaximum"};
    for (size_t i = 0; i < 4; i++)
        if (json_object_get(schema, bounds[i]) != NULL)
            return rtm_js_fail(c, RT_ERR_UNSUPPORTED, bounds[i],
                               "'%s' on a number that need not be an integer is not "
                               "supported (only integers take bounds)",
                               bounds[i]);
    return rtm_js_prim(c, out, RTM_JS_NUMBER);
}

#define MAX_BOUND 1e18

/* One bound as an integer: ceil (lower) or floor (upper) of the number,
 * exclusive ones moved by one; *has false when absent. Draft 4's boolean
 * exclusiveMinimum/exclusiveMaximum make minimum/maximum exclusive. */
static rt_status_t bound(rtm_js_t *c, json_t *schema, bool lower, bool *has, int64_t *out) {
    const char *key = lower ? "minimum" : "maximum",
               *ekey = lower ? "exclusiveMinimum" : "exclusiveMaximum";
    json_t *inc = json_object_get(schema, key), *exc = json_object_get(schema, ekey);
    const bool draft4 = json_is_boolean(exc);
    *has = false;
    for (int k = 0; k < 2; k++) {
        json_t *v = k == 0 ? inc : draft4 ? NULL : exc;
        const char *name = k == 0 ? key : ekey;
        if (v == NULL) continue;
        if (!json_is_number(v))
            return rtm_js_fail(c, RT_ERR_FORMAT, name, "'%s' wants a number", name);
        const double d = json_number_value(v);
        if (!(fabs(d) <= MAX_BOUND))
            return rtm_js_fail(c, RT_ERR_UNSUPPORTED, name,
                               "%g is beyond the +-1e18 this converter writes", d);
        const bool exclusive = k == 1 || (draft4 && json_is_true(exc));
        int64_t b = json_is_integer(v) ? (int64_t)json_integer_value(v)
                                       : (int64_t)(lower ? ceil(d) : floor(d));
        if (exclusive && (json_is_integer(v) || d == floor(d))) b += lower ? 1 : -1;
        if (!*has || (lower ? b > *out : b < *out)) *out = b;
        *has = true;
    }
    return RT_OK;
}

static int n_digits(uint64_t v) {
    int n = 1;
    for (; v >= 10; v /= 10)
        n++;
    return n;
}

static void digit_atom(rtm_js_t *c, rtm_js_buf_t *out, char lo, char hi) {
    if (lo == hi)
        rtm_js_printf(c, out, "\"%c\"", lo);
    else
        rtm_js_printf(c, out, "[%c-%c]", lo, hi);
}

/* Any n digits. */
static void any_digits(rtm_js_t *c, rtm_js_buf_t *out, int n) {
    if (n <= 0) return;
    rtm_js_put(c, out, " [0-9]");
    rtm_js_repeat(c, out, n, n);
}

/* The n-digit strings from a to b (a <= b, both n digits), digit by
 * digit: a shared first digit then the rest, or the range split into a's
 * first digit with the rest up to 9...9, the digits between with
 * anything after them, and b's first digit with the rest from 0...0. */
static void digit_range(rtm_js_t *c, rtm_js_buf_t *out, const char *a, const char *b, int n) {
    if (n == 0 || c->st != RT_OK) return;
    if (a[0] == b[0]) {
        digit_atom(c, out, a[0], a[0]);
        if (n > 1) rtm_js_put(c, out, " ");
        digit_range(c, out, a + 1, b + 1, n - 1);
        return;
    }
    const bool low_zeros = strspn(a + 1, "0") == (size_t)(n - 1),
               high_nines = strspn(b + 1, "9") == (size_t)(n - 1);
    const char lo = low_zeros ? a[0] : (char)(a[0] + 1), hi = high_nines ? b[0] : (char)(b[0] - 1);
    char nines[24], zeros[24]; /* the n - 1 digits after the first, all 9 or all 0 */
    memset(nines, '9', (size_t)(n - 1));
    memset(zeros, '0', (size_t)(n - 1));
    nines[n - 1] = zeros[n - 1] = 0;
    const bool several = (!low_zeros) + (lo <= hi) + (!high_nines) > 1;
    int alts = 0;
    if (several) rtm_js_put(c, out, "( ");
    if (!low_zeros) { /* then n > 1 */
        digit_atom(c, out, a[0], a[0]);
        rtm_js_put(c, out, " ");
        digit_range(c, out, a + 1, nines, n - 1);
        alts++;
    }
    if (lo <= hi) {
        if (alts++ > 0) rtm_js_put(c, out, " | ");
        digit_atom(c, out, lo, hi);
        any_digits(c, out, n - 1);
    }
    if (!high_nines) { /* then n > 1 */
        if (alts++ > 0) rtm_js_put(c, out, " | ");
        digit_atom(c, out, b[0], b[0]);
        rtm_js_put(c, out, " ");
        digit_range(c, out, zeros, b + 1, n - 1);
    }
    if (several) rtm_js_put(c, out, " )");
}

/* The decimal integers lo..hi without leading zeros (unbounded: no hi),
 * length by length, as an alternation in parentheses. */
static void uint_range(rtm_js_t *c, rtm_js_buf_t *out, uint64_t lo, uint64_t hi, bool unbounded) {
    const int first = n_digits(lo), last = unbounded ? first : n_digits(hi);
    uint64_t pow = 1;
    for (int i = 1; i < first; i++)
        pow *= 10;
    const bool several = last > first || unbounded;
    if (several) rtm_js_put(c, out, "( ");
    for (int len = first; len <= last && c->st == RT_OK; len++, pow *= 10) {
        const uint64_t a = len == first ? lo : pow,
                       b = !unbounded && len == last ? hi : pow * 10 - 1;
        char da[24], db[24];
        snprintf(da, sizeof da, "%0*llu", len, (unsigned long long)a);
        snprintf(db, sizeof db, "%0*llu", len, (unsigned long long)b);
        if (len > first) rtm_js_put(c, out, " | ");
        digit_range(c, out, da, db, len);
    }
    if (unbounded) {
        rtm_js_put(c, out, " | [1-9] [0-9]");
        rtm_js_repeat(c, out, first, -1);
    }
    if (several) rtm_js_put(c, out, " )");
}

rt_status_t rtm_js_integer(rtm_js_t *c, json_t *schema, rtm_js_buf_t *out) {
    bool has_lo, has_hi;
    int64_t lo = 0, hi = 0;
    if (bound(c, schema, true, &has_lo, &lo) != RT_OK ||
        bound(c, schema, false, &has_hi, &hi) != RT_OK)
        return c->st;
    if (!has_lo && !has_hi) return rtm_js_prim(c, out, RTM_JS_INTEGER);
    if (has_lo && has_hi && lo > hi)
        return rtm_js_fail(c, RT_ERR_UNSUPPORTED, "minimum",
                           "the least integer allowed, %lld, is more than the greatest, %lld: "
                           "none is",
                           (long long)lo, (long long)hi);
    bool alt = false;
    if (!has_lo || lo < 0) { /* "-" and the magnitudes max(1, -hi)..-lo */
        const uint64_t mlo = has_hi && hi < 0 ? (uint64_t)-hi : 1;
        rtm_js_put(c, out, "\"-\" ");
        uint_range(c, out, mlo, has_lo ? (uint64_t)-lo : 0, !has_lo);
        alt = true;
    }
    if (!has_hi || hi >= 0) {
        if (alt) rtm_js_put(c, out, " | ");
        uint_range(c, out, has_lo && lo > 0 ? (uint64_t)lo : 0, has_hi ? (uint64_t)hi : 0, !has_hi);
    }
    return c->st;
}

#else
typedef int rtm_json_schema_types_unused_t; /* jansson absent: json_schema.c says so */
#endif /* RT_HAVE_JANSSON */
