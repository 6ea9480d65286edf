/* SPDX-License-Identifier: MIT */
/* json_schema_conv.c: the converter's frame (json_schema_impl.h). The
 * text it writes (buffers, literals, repetitions), the rules and their
 * unique names, the JSON pointer errors name, the keywords (which are
 * converted, which annotate, which are refused by name), and the
 * subschemas that are not one type: $ref, anyOf/oneOf, allOf, enum and
 * const, and `type` itself, which hands each type to json_schema_types.c.
 * Last, rtm_js_convert: parse, convert from the root, print the rules. */
#include "json_schema_impl.h"

#ifdef RT_HAVE_JANSSON

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//===--- errors and text ---===//

rt_status_t rtm_js_fail(rtm_js_t *c, rt_status_t st, const char *key, const char *fmt, ...) {
    if (c->st != RT_OK) return c->st;
    char reason[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    const char *path = c->path.p != NULL ? c->path.p : "#";
    c->st = rtm_error(st, "json schema, %.150s%s%.60s: %s", path, key != NULL ? "/" : "",
                      key != NULL ? key : "", reason);
    return c->st;
}

static rt_status_t no_memory(rtm_js_t *c) {
    if (c->st == RT_OK) c->st = rtm_error(RT_ERR_OUT_OF_MEMORY, "json schema: no memory");
    return c->st;
}

/* Grows b to hold n more bytes and the NUL, without counting them. */
static bool buf_reserve(rtm_js_buf_t *b, size_t n) {
    if (b->n + n + 1 <= b->cap) return true;
    size_t cap = b->cap < 64 ? 64 : b->cap;
    while (cap < b->n + n + 1)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (p == NULL) return false;
    b->p = p;
    b->cap = cap;
    return true;
}

rt_status_t rtm_js_putn(rtm_js_t *c, rtm_js_buf_t *b, const char *s, size_t n) {
    if (c->st != RT_OK) return c->st;
    c->bytes += n;
    if (c->bytes > RTM_JS_MAX_BYTES)
        return rtm_js_fail(c, RT_ERR_UNSUPPORTED, NULL, "the grammar would be larger than %zu KiB",
                           RTM_JS_MAX_BYTES >> 10);
    if (!buf_reserve(b, n)) return no_memory(c);
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
    return RT_OK;
}

rt_status_t rtm_js_put(rtm_js_t *c, rtm_js_buf_t *b, const char *s) {
    return rtm_js_putn(c, b, s, strlen(s));
}

rt_status_t rtm_js_printf(rtm_js_t *c, rtm_js_buf_t *b, const char *fmt, ...) {
    char tmp[256], *text = tmp;
    va_list ap, again;
    va_start(ap, fmt);
    va_copy(again, ap);
    const int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    if (n >= (int)sizeof tmp && (text = malloc((size_t)n + 1)) != NULL)
        vsnprintf(text, (size_t)n + 1, fmt, again);
    va_end(again);
    va_end(ap);
    if (text == NULL) return no_memory(c);
    rtm_js_putn(c, b, text, n < 0 ? 0 : (size_t)n);
    if (text != tmp) free(text);
    return c->st;
}

void rtm_js_buf_free(rtm_js_buf_t *b) {
    free(b->p);
    *b = (rtm_js_buf_t){0};
}

rt_status_t rtm_js_prim(rtm_js_t *c, rtm_js_buf_t *b, int prim) {
    c->prims |= 1u << prim;
    return rtm_js_put(c, b, rtm_js_prim_name(prim));
}

/* One byte as GBNF writes it inside a literal (quote is '"') or a class
 * (alphanumerics as they are, other ASCII as \xHH so that ] ^ - \ mean
 * nothing); bytes >= 0x80 are UTF-8 and go through. */
static rt_status_t put_byte(rtm_js_t *c, rtm_js_buf_t *b, unsigned char ch, bool in_class) {
    char tmp[8];
    const bool alnum =
        (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
    if (ch >= 0x80 || alnum || (!in_class && ch >= 0x20 && ch < 0x7F && ch != '"' && ch != '\\')) {
        tmp[0] = (char)ch;
        return rtm_js_putn(c, b, tmp, 1);
    }
    if (!in_class && ch == '"') return rtm_js_put(c, b, "\\\"");
    if (!in_class && ch == '\\') return rtm_js_put(c, b, "\\\\");
    if (!in_class && ch == '\n') return rtm_js_put(c, b, "\\n");
    snprintf(tmp, sizeof tmp, "\\x%02X", ch);
    return rtm_js_put(c, b, tmp);
}

rt_status_t rtm_js_literal(rtm_js_t *c, rtm_js_buf_t *b, const char *s, size_t n) {
    rtm_js_put(c, b, "\"");
    for (size_t i = 0; i < n; i++)
        put_byte(c, b, (unsigned char)s[i], false);
    return rtm_js_put(c, b, "\"");
}

rt_status_t rtm_js_class_char(rtm_js_t *c, rtm_js_buf_t *b, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        put_byte(c, b, (unsigned char)s[i], true);
    return c->st;
}

rt_status_t rtm_js_repeat(rtm_js_t *c, rtm_js_buf_t *b, int64_t m, int64_t n) {
    if (n < 0) {
        if (m == 0) return rtm_js_put(c, b, "*");
        if (m == 1) return rtm_js_put(c, b, "+");
        return rtm_js_printf(c, b, "{%lld,}", (long long)m);
    }
    if (m == n) return m == 1 ? c->st : rtm_js_printf(c, b, "{%lld}", (long long)m);
    if (m == 0 && n == 1) return rtm_js_put(c, b, "?");
    return rtm_js_printf(c, b, "{%lld,%lld}", (long long)m, (long long)n);
}

//===--- the JSON pointer of the schema being converted ---===//

size_t rtm_js_push(rtm_js_t *c, const char *seg) {
    const size_t len = c->path.n;
    if (c->st == RT_OK && !buf_reserve(&c->path, 1 + 2 * strlen(seg))) no_memory(c);
    if (c->st != RT_OK) return len;
    char *p = c->path.p + len;
    *p++ = '/';
    for (const char *s = seg; *s != 0; s++) { /* RFC 6901: ~ is ~0, / is ~1 */
        if (*s == '~' || *s == '/') *p++ = '~';
        *p++ = *s == '~' ? '0' : *s == '/' ? '1' : *s;
    }
    *p = 0;
    c->path.n = (size_t)(p - c->path.p);
    return len;
}

size_t rtm_js_push_index(rtm_js_t *c, size_t i) {
    char seg[24];
    snprintf(seg, sizeof seg, "%zu", i);
    return rtm_js_push(c, seg);
}

void rtm_js_pop(rtm_js_t *c, size_t len) {
    if (c->path.p == NULL || len > c->path.n) return;
    c->path.n = len;
    c->path.p[len] = 0;
}

//===--- rules and their names ---===//

/* hint's letters and digits, every other run of bytes one '-', at most
 * 48 bytes: a GBNF rule name ([a-zA-Z0-9-]+). */
static void sanitize(const char *hint, char out[64]) {
    size_t n = 0;
    for (const char *s = hint; *s != 0 && n < 48; s++) {
        const char ch = *s;
        if ((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'))
            out[n++] = ch;
        else if (n > 0 && out[n - 1] != '-')
            out[n++] = '-';
    }
    while (n > 0 && out[n - 1] == '-')
        n--;
    if (n == 0) out[n++] = 'x';
    out[n] = 0;
}

int32_t rtm_js_rule_open(rtm_js_t *c, const char *hint) {
    if (c->st != RT_OK) return -1;
    char base[64], name[80];
    sanitize(hint, base);
    snprintf(name, sizeof name, "%s", base);
    /* the next suffix to try for this base, so that many rules of one
     * base cost one look-up each */
    json_t *next = json_object_get(c->suffixes, base);
    for (json_int_t i = next != NULL ? json_integer_value(next) : 2;
         json_object_get(c->names, name) != NULL; i++) {
        snprintf(name, sizeof name, "%s-%lld", base, (long long)i);
        if (json_object_set_new(c->suffixes, base, json_integer(i + 1)) != 0) {
            no_memory(c);
            return -1;
        }
    }
    if (c->n_rules == c->cap_rules) {
        const int32_t cap = c->cap_rules < 16 ? 16 : c->cap_rules * 2;
        rtm_js_rule_t *r = realloc(c->rules, (size_t)cap * sizeof r[0]);
        if (r == NULL) {
            no_memory(c);
            return -1;
        }
        c->rules = r;
        c->cap_rules = cap;
    }
    char *copy = strdup(name);
    if (copy == NULL || json_object_set_new(c->names, name, json_integer(c->n_rules)) != 0) {
        free(copy);
        no_memory(c);
        return -1;
    }
    c->rules[c->n_rules] = (rtm_js_rule_t){.name = copy};
    return c->n_rules++;
}

/* Gives rule idx its body (taken from *body), or drops it when the body
 * is one name and drop allows: then that name goes to out instead of the
 * rule's. */
static rt_status_t rule_close(rtm_js_t *c, int32_t idx, rtm_js_buf_t *body, bool drop,
                              rtm_js_buf_t *out) {
    if (c->st != RT_OK) {
        rtm_js_buf_free(body);
        return c->st;
    }
    rtm_js_rule_t *r = &c->rules[idx];
    const bool one_name = body->n > 0 && strspn(body->p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN"
                                                         "OPQRSTUVWXYZ0123456789-") == body->n;
    if (drop && one_name) {
        json_object_del(c->names, r->name);
        free(r->name);
        r->name = NULL;
        r->dropped = true;
        rtm_js_putn(c, out, body->p, body->n);
        c->bytes -= body->n; /* counted twice otherwise */
        rtm_js_buf_free(body);
        return c->st;
    }
    r->body = *body;
    *body = (rtm_js_buf_t){0};
    return rtm_js_put(c, out, r->name);
}

int32_t rtm_js_consumed(rtm_js_t *c) {
    const int32_t floor = c->chain_floor;
    c->chain_floor = c->n_chain;
    return floor;
}

void rtm_js_consumed_end(rtm_js_t *c, int32_t floor) { c->chain_floor = floor; }

//===--- keywords ---===//

/* Keywords that only annotate: read by people and tools, never by a
 * validator; "x-" extensions too. $defs and definitions hold schemas that
 * count only where a $ref reaches them. discriminator is OpenAPI's note on
 * a oneOf whose branches the const of a property tells apart already. */
static const char *const annotations[] = {
    "title", "description", "default",       "examples",  "$comment",        "$schema",
    "$id",   "deprecated",  "readOnly",      "writeOnly", "contentEncoding", "contentMediaType",
    "$defs", "definitions", "discriminator",
};

/* The keywords converted, by the type they constrain (NULL: any). */
static const struct {
    const char *key, *type;
} converted[] = {
    {"type", NULL},          {"enum", NULL},         {"const", NULL},
    {"anyOf", NULL},         {"oneOf", NULL},        {"allOf", NULL},
    {"$ref", NULL},          {"properties", "object"},         {"required", "object"},
    {"additionalProperties", "object"},              {"items", "array"},
    {"prefixItems", "array"}, {"additionalItems", "array"},    {"minItems", "array"},
    {"maxItems", "array"},   {"uniqueItems", "array"}, /* false only (check_keywords) */
    {"minLength", "string"}, {"maxLength", "string"}, {"format", "string"},
    {"minimum", "number"},   {"maximum", "number"},  {"exclusiveMinimum", "number"},
    {"exclusiveMaximum", "number"},
};

/* Keywords of JSON Schema (2020-12 and earlier drafts) this converter
 * refuses by name, with why where it helps. */
static const struct {
    const char *key, *why;
} refused[] = {
    {"not", ""},                {"if", ""},                 {"then", ""},
    {"else", ""},               {"dependentSchemas", ""},   {"dependentRequired", ""},
    {"dependencies", ""},       {"propertyNames", ""},      {"unevaluatedProperties", ""},
    {"unevaluatedItems", ""},   {"contains", ""},           {"minContains", ""},
    {"maxContains", ""},        {"minProperties", ""},      {"maxProperties", ""},
    {"multipleOf", ""},         {"$dynamicRef", ""},        {"$dynamicAnchor", ""},
    {"$recursiveRef", ""},      {"$recursiveAnchor", ""},   {"$vocabulary", ""},
    {"contentSchema", ""},
    {"pattern", " (regular expressions are not converted)"},
    {"patternProperties", " (regular expressions are not converted)"},
    {"$anchor", " (a $ref reaches schemas by JSON pointer only)"},
    {"nullable", " (OpenAPI's; write \"type\": [\"...\", \"null\"])"},
};

#define COUNT_OF(a) (sizeof(a) / sizeof(a)[0])

static bool is_annotation(const char *key) {
    if (strncmp(key, "x-", 2) == 0) return true;
    for (size_t i = 0; i < COUNT_OF(annotations); i++)
        if (strcmp(key, annotations[i]) == 0) return true;
    return false;
}

/* The type key constrains (NULL: any) when it is converted (*found). */
static const char *keyword_type(const char *key, bool *found) {
    *found = true;
    for (size_t i = 0; i < COUNT_OF(converted); i++)
        if (strcmp(key, converted[i].key) == 0) return converted[i].type;
    *found = false;
    return NULL;
}

bool rtm_js_has_keyword_of(json_t *schema, const char *type) {
    const char *key;
    json_t *v;
    json_object_foreach(schema, key, v) {
        bool found;
        const char *t = keyword_type(key, &found);
        if (found && t != NULL && strcmp(t, type) == 0) return true;
    }
    return false;
}

/* Refuses a keyword that is neither converted nor an annotation. */
static rt_status_t check_keywords(rtm_js_t *c, json_t *schema) {
    const char *key;
    json_t *v;
    json_object_foreach(schema, key, v) {
        bool found;
        keyword_type(key, &found);
        if (found || is_annotation(key)) continue;
        for (size_t i = 0; i < COUNT_OF(refused); i++)
            if (strcmp(key, refused[i].key) == 0)
                return rtm_js_fail(c, RT_ERR_UNSUPPORTED, key, "'%s' is not supported%s", key,
                                   refused[i].why);
        return rtm_js_fail(c, RT_ERR_UNSUPPORTED, key,
                           "unknown keyword '%.60s' (refused rather than ignored)", key);
    }
    if (json_is_true(json_object_get(schema, "uniqueItems")))
        return rtm_js_fail(c, RT_ERR_UNSUPPORTED, "uniqueItems",
                           "'uniqueItems': true is not supported");
    return RT_OK;
}

/* The first keyword of schema that constrains values, other than skip1 and
 * skip2 (NULL when there is none). */
static const char *validation_keyword(json_t *schema, const char *skip1, const char *skip2) {
    const char *key;
    json_t *v;
    json_object_foreach(schema, key, v) {
        if (is_annotation(key)) continue;
        if ((skip1 != NULL && strcmp(key, skip1) == 0) ||
            (skip2 != NULL && strcmp(key, skip2) == 0))
            continue;
        return key;
    }
    return NULL;
}

rt_status_t rtm_js_count(rtm_js_t *c, json_t *schema, const char *key, int64_t def, int64_t *out) {
    json_t *v = json_object_get(schema, key);
    *out = def;
    if (v == NULL) return RT_OK;
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        *out = (int64_t)json_integer_value(v);
        return RT_OK;
    }
    const double d = json_is_real(v) ? json_real_value(v) : -1;
    if (d >= 0 && d == floor(d)) {
        *out = d >= 9e18 ? INT64_MAX : (int64_t)d;
        return RT_OK;
    }
    return rtm_js_fail(c, RT_ERR_FORMAT, key, "'%s' wants a non-negative integer", key);
}

//===--- types ---===//

enum { T_OBJECT, T_ARRAY, T_STRING, T_NUMBER, T_INTEGER, T_BOOLEAN, T_NULL, T_COUNT };
static const char *const type_names[T_COUNT] = {"object",  "array",   "string", "number",
                                                "integer", "boolean", "null"};

/* The types `type` lists, in its order (out[], *n); every type but
 * integer (number holds it) when it is absent. */
static rt_status_t type_list(rtm_js_t *c, json_t *schema, int out[T_COUNT], int *n, bool *untyped) {
    json_t *t = json_object_get(schema, "type");
    *n = 0;
    *untyped = t == NULL;
    if (t == NULL) {
        const int all[] = {T_OBJECT, T_ARRAY, T_STRING, T_NUMBER, T_BOOLEAN, T_NULL};
        for (size_t i = 0; i < COUNT_OF(all); i++)
            out[(*n)++] = all[i];
        return RT_OK;
    }
    const size_t count = json_is_array(t) ? json_array_size(t) : 1;
    if (!json_is_array(t) && !json_is_string(t))
        return rtm_js_fail(c, RT_ERR_FORMAT, "type",
                           "'type' wants a type's name or a list of them");
    for (size_t i = 0; i < count; i++) {
        const char *name = json_string_value(json_is_array(t) ? json_array_get(t, i) : t);
        int k = 0;
        while (k < T_COUNT && (name == NULL || strcmp(name, type_names[k]) != 0))
            k++;
        if (k == T_COUNT)
            return rtm_js_fail(c, RT_ERR_FORMAT, "type", "'%.40s' is not a JSON Schema type",
                               name != NULL ? name : "(not a string)");
        bool seen = false;
        for (int j = 0; j < *n; j++)
            seen |= out[j] == k;
        if (!seen) out[(*n)++] = k;
    }
    if (*n == 0)
        return rtm_js_fail(c, RT_ERR_UNSUPPORTED, "type", "an empty 'type' list allows no value");
    return RT_OK;
}

static rt_status_t type_branch(rtm_js_t *c, json_t *schema, int t, const char *name,
                               rtm_js_buf_t *out) {
    switch (t) {
    case T_OBJECT:
        return rtm_js_has_keyword_of(schema, "object") ? rtm_js_object(c, schema, name, out)
                                                       : rtm_js_prim(c, out, RTM_JS_OBJECT);
    case T_ARRAY:
        return rtm_js_has_keyword_of(schema, "array") ? rtm_js_array(c, schema, name, out)
                                                      : rtm_js_prim(c, out, RTM_JS_ARRAY);
    case T_STRING: return rtm_js_string(c, schema, out);
    case T_NUMBER: return rtm_js_number(c, schema, out);
    case T_INTEGER: return rtm_js_integer(c, schema, out);
    case T_BOOLEAN: return rtm_js_prim(c, out, RTM_JS_BOOLEAN);
    default: return rtm_js_prim(c, out, RTM_JS_NULL);
    }
}

/* A schema without $ref, anyOf, oneOf, allOf, enum or const: the
 * alternation of its types, each with the keywords of that type (an
 * untyped schema allows every type, as JSON Schema says). */
static rt_status_t types_body(rtm_js_t *c, json_t *schema, const char *name, rtm_js_buf_t *out) {
    int types[T_COUNT], n;
    bool untyped;
    if (type_list(c, schema, types, &n, &untyped) != RT_OK) return c->st;
    bool any_keyword = false;
    for (int t = 0; t < T_COUNT; t++)
        any_keyword |= rtm_js_has_keyword_of(schema, type_names[t]);
    if (untyped && !any_keyword) return rtm_js_prim(c, out, RTM_JS_VALUE);
    for (int i = 0; i < n && c->st == RT_OK; i++) {
        if (i > 0) rtm_js_put(c, out, " | ");
        type_branch(c, schema, types[i], name, out);
    }
    return c->st;
}

//===--- enum and const ---===//

/* The value's JSON text, compact: strings with JSON's escapes ("\" \\ \b
 * \f \n \r \t, \u00XX for the other controls), numbers in their shortest
 * form that reads back the same. */
static rt_status_t json_text(rtm_js_t *c, rtm_js_buf_t *b, json_t *v);

rt_status_t rtm_js_json_string(rtm_js_t *c, rtm_js_buf_t *b, const char *s, size_t n) {
    rtm_js_put(c, b, "\"");
    for (size_t i = 0; i < n && c->st == RT_OK; i++) {
        const unsigned char ch = (unsigned char)s[i];
        const char *esc = ch == '"'    ? "\\\""
                          : ch == '\\' ? "\\\\"
                          : ch == '\b' ? "\\b"
                          : ch == '\f' ? "\\f"
                          : ch == '\n' ? "\\n"
                          : ch == '\r' ? "\\r"
                          : ch == '\t' ? "\\t"
                                       : NULL;
        if (esc != NULL)
            rtm_js_put(c, b, esc);
        else if (ch < 0x20)
            rtm_js_printf(c, b, "\\u%04X", ch);
        else
            rtm_js_putn(c, b, (const char *)&s[i], 1);
    }
    return rtm_js_put(c, b, "\"");
}

static rt_status_t json_real_text(rtm_js_t *c, rtm_js_buf_t *b, double d) {
    char tmp[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, d);
        if (strtod(tmp, NULL) == d) break;
    }
    return rtm_js_put(c, b, tmp);
}

static rt_status_t json_text(rtm_js_t *c, rtm_js_buf_t *b, json_t *v) {
    if (c->depth >= RTM_JS_MAX_DEPTH)
        return rtm_js_fail(c, RT_ERR_UNSUPPORTED, NULL, "a value nested deeper than %d levels",
                           RTM_JS_MAX_DEPTH);
    c->depth++;
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        const char *key;
        json_t *item;
        bool first = true;
        rtm_js_put(c, b, "{");
        json_object_foreach(v, key, item) {
            if (!first) rtm_js_put(c, b, ",");
            first = false;
            rtm_js_json_string(c, b, key, strlen(key));
            rtm_js_put(c, b, ":");
            json_text(c, b, item);
        }
        rtm_js_put(c, b, "}");
        break;
    }
    case JSON_ARRAY:
        rtm_js_put(c, b, "[");
        for (size_t i = 0; i < json_array_size(v); i++) {
            if (i > 0) rtm_js_put(c, b, ",");
            json_text(c, b, json_array_get(v, i));
        }
        rtm_js_put(c, b, "]");
        break;
    case JSON_STRING: rtm_js_json_string(c, b, json_string_value(v), json_string_length(v)); break;
    case JSON_INTEGER: rtm_js_printf(c, b, "%lld", (long long)json_integer_value(v)); break;
    case JSON_REAL: json_real_text(c, b, json_real_value(v)); break;
    case JSON_TRUE: rtm_js_put(c, b, "true"); break;
    case JSON_FALSE: rtm_js_put(c, b, "false"); break;
    default: rtm_js_put(c, b, "null"); break;
    }
    c->depth--;
    return c->st;
}

static bool value_has_type(json_t *v, const int types[], int n) {
    for (int i = 0; i < n; i++) {
        const int t = types[i];
        if ((t == T_OBJECT && json_is_object(v)) || (t == T_ARRAY && json_is_array(v)) ||
            (t == T_STRING && json_is_string(v)) || (t == T_NUMBER && json_is_number(v)) ||
            (t == T_BOOLEAN && json_is_boolean(v)) || (t == T_NULL && json_is_null(v)) ||
            (t == T_INTEGER &&
             (json_is_integer(v) ||
              (json_is_real(v) && json_real_value(v) == floor(json_real_value(v))))))
            return true;
    }
    return false;
}

/* enum (or const, one value): the alternation of the values' texts that
 * have the schema's type; only the compact spelling of each is matched. */
static rt_status_t enum_body(rtm_js_t *c, json_t *schema, rtm_js_buf_t *out) {
    const bool is_const = json_object_get(schema, "const") != NULL;
    const char *key = is_const ? "const" : "enum";
    const char *other = validation_keyword(schema, key, "type");
    if (other != NULL)
        return rtm_js_fail(c, RT_ERR_UNSUPPORTED, other, "'%s' beside '%s' is not supported", other,
                           key);
    json_t *values = json_object_get(schema, key);
    if (!is_const && !json_is_array(values))
        return rtm_js_fail(c, RT_ERR_FORMAT, key, "'enum' wants an array of values");
    int types[T_COUNT], n;
    bool untyped;
    if (type_list(c, schema, types, &n, &untyped) != RT_OK) return c->st;
    const size_t count = is_const ? 1 : json_array_size(values);
    size_t written = 0;
    for (size_t i = 0; i < count && c->st == RT_OK; i++) {
        json_t *v = is_const ? values : json_array_get(values, i);
        if (!value_has_type(v, types, n)) continue;
        rtm_js_buf_t text = {0};
        json_text(c, &text, v);
        if (written++ > 0) rtm_js_put(c, out, " | ");
        if (c->st == RT_OK) rtm_js_literal(c, out, text.p, text.n);
        c->bytes -= text.n;
        rtm_js_buf_free(&text);
    }
    if (c->st == RT_OK && written == 0)
        return rtm_js_fail(c, RT_ERR_UNSUPPORTED, key,
                           "no value of '%s' has the schema's type: none is allowed", key);
    return c->st;
}

//===--- $ref ---===//

static int hex_digit(char ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

/* One segment of a JSON pointer in a URI fragment (n bytes of s) into out
 * (n + 1 bytes): %XX undone, then ~1 and ~0; false for a malformed one
 * (or %00). */
static bool pointer_segment(const char *s, size_t n, char *out) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        int ch = (unsigned char)s[i];
        if (ch == '%') {
            const int hi = i + 2 < n ? hex_digit(s[i + 1]) : -1,
                      lo = i + 2 < n ? hex_digit(s[i + 2]) : -1;
            if (hi < 0 || lo < 0 || hi + lo == 0) return false;
            ch = hi * 16 + lo;
            i += 2;
        }
        out[k++] = (char)ch;
    }
    size_t j = 0;
    for (size_t i = 0; i < k; i++, j++) {
        if (out[i] == '~' && i + 1 < k && (out[i + 1] == '0' || out[i + 1] == '1'))
            out[j] = out[++i] == '0' ? '~' : '/';
        else if (out[i] == '~')
            return false;
        else
            out[j] = out[i];
    }
    out[j] = 0;
    return true;
}

/* The schema ref ("#" or "#/a/b") points at in the document, NULL when
 * none; *last is its last segment, decoded (for the rule's name). */
static json_t *resolve(rtm_js_t *c, const char *ref, char *last, size_t last_size) {
    json_t *cur = c->doc;
    snprintf(last, last_size, "root");
    const char *p = ref + 1;
    while (*p == '/' && cur != NULL) {
        const char *end = strchr(p + 1, '/');
        const size_t n = end != NULL ? (size_t)(end - p - 1) : strlen(p + 1);
        char *seg = malloc(n + 1);
        if (seg == NULL) {
            no_memory(c);
            return NULL;
        }
        if (!pointer_segment(p + 1, n, seg)) {
            free(seg);
            return NULL;
        }
        if (json_is_object(cur)) {
            cur = json_object_get(cur, seg);
        } else if (json_is_array(cur) && n > 0 && strspn(seg, "0123456789") == strlen(seg) &&
                   (seg[0] != '0' || seg[1] == 0) && strlen(seg) < 10) {
            cur = json_array_get(cur, (size_t)strtoul(seg, NULL, 10));
        } else {
            cur = NULL;
        }
        snprintf(last, last_size, "%s", seg);
        free(seg);
        p += n + 1;
    }
    return *p == 0 ? cur : NULL;
}

static bool chain_has(const rtm_js_t *c, const char *ref) {
    for (int32_t i = c->chain_floor; i < c->n_chain; i++)
        if (strcmp(c->chain[i], ref) == 0) return true;
    return false;
}

static rt_status_t chain_push(rtm_js_t *c, const char *ref) {
    if (c->n_chain == c->cap_chain) {
        const int32_t cap = c->cap_chain < 16 ? 16 : c->cap_chain * 2;
        const char **p = realloc(c->chain, (size_t)cap * sizeof p[0]);
        if (p == NULL) return no_memory(c);
        c->chain = p;
        c->cap_chain = cap;
    }
    c->chain[c->n_chain++] = ref;
    return RT_OK;
}

static rt_status_t schema_body(rtm_js_t *c, json_t *schema, const char *name, rtm_js_buf_t *out);

/* A $ref to "#..." in this document: the rule of its target, made the
 * first time (named before its body is converted, so that the target may
 * refer to itself). A $ref met again before any character was consumed
 * since it was entered would make the grammar loop: refused. */
static rt_status_t ref_expr(rtm_js_t *c, json_t *schema, rtm_js_buf_t *out) {
    const char *other = validation_keyword(schema, "$ref", NULL);
    if (other != NULL)
        return rtm_js_fail(c, RT_ERR_UNSUPPORTED, other,
                           "keywords beside '$ref' ('%s') are not supported", other);
    json_t *rv = json_object_get(schema, "$ref");
    const char *ref = json_string_value(rv);
    if (ref == NULL) return rtm_js_fail(c, RT_ERR_FORMAT, "$ref", "'$ref' wants a string");
    if (ref[0] != '#')
        return rtm_js_fail(c, RT_ERR_UNSUPPORTED, "$ref",
                           "remote $ref '%.80s' is not supported (only \"#...\" in this schema)",
                           ref);
    if (ref[1] != 0 && ref[1] != '/')
        return rtm_js_fail(
            c, RT_ERR_UNSUPPORTED, "$ref",
            "$ref '%.80s' names an anchor: only JSON pointers (\"#/$defs/name\") are supported",
            ref);
    json_t *known = json_object_get(c->refs, ref);
    if (known != NULL) {
        if (chain_has(c, ref))
            return rtm_js_fail(
                c, RT_ERR_UNSUPPORTED, "$ref",
                "$ref '%.80s' comes back to itself before any character (left recursion)", ref);
        return rtm_js_put(c, out, c->rules[json_integer_value(known)].name);
    }
    char last[64];
    json_t *target = resolve(c, ref, last, sizeof last);
    if (c->st != RT_OK) return c->st;
    if (target == NULL)
        return rtm_js_fail(c, RT_ERR_FORMAT, "$ref", "$ref '%.80s' points at nothing in the schema",
                           ref);
    if (c->depth >= RTM_JS_MAX_DEPTH)
        return rtm_js_fail(c, RT_ERR_UNSUPPORTED, "$ref", "subschemas nested deeper than %d",
                           RTM_JS_MAX_DEPTH);
    const int32_t idx = rtm_js_rule_open(c, last);
    if (idx < 0 || json_object_set_new(c->refs, ref, json_integer(idx)) != 0) return no_memory(c);
    /* errors inside the target name its own place */
    rtm_js_buf_t saved = c->path;
    c->path = (rtm_js_buf_t){0};
    if (!buf_reserve(&c->path, strlen(ref))) {
        c->path = saved;
        return no_memory(c);
    }
    memcpy(c->path.p, ref, strlen(ref) + 1);
    c->path.n = strlen(ref);
    chain_push(c, ref);
    rtm_js_buf_t body = {0};
    c->depth++;
    schema_body(c, target, c->rules[idx].name, &body);
    c->depth--;
    c->n_chain--;
    rtm_js_buf_free(&c->path);
    c->path = saved;
    return rule_close(c, idx, &body, false, out);
}

//===--- anyOf, oneOf, allOf ---===//

/* anyOf and oneOf both become an alternation: a value that matches two
 * branches of a oneOf is accepted too. */
static rt_status_t alternatives(rtm_js_t *c, json_t *schema, const char *key, const char *name,
                                rtm_js_buf_t *out) {
    const char *other = validation_keyword(schema, key, NULL);
    if (other != NULL)
        return rtm_js_fail(c, RT_ERR_UNSUPPORTED, other, "'%s' beside '%s' is not supported", other,
                           key);
    json_t *arr = json_object_get(schema, key);
    if (!json_is_array(arr) || json_array_size(arr) == 0)
        return rtm_js_fail(c, RT_ERR_FORMAT, key, "'%s' wants a non-empty array of schemas", key);
    for (size_t i = 0; i < json_array_size(arr) && c->st == RT_OK; i++) {
        const size_t len = rtm_js_push(c, key);
        rtm_js_push_index(c, i);
        char hint[80];
        snprintf(hint, sizeof hint, "%s-%zu", name, i);
        if (i > 0) rtm_js_put(c, out, " | ");
        rtm_js_schema(c, json_array_get(arr, i), hint, out);
        rtm_js_pop(c, len);
    }
    return c->st;
}

/* allOf merges object schemas into one: properties (a property two
 * members declare differently becomes the allOf of both), required (the
 * union), `type` (the types every member allows). Members reached through
 * $ref are followed (at most 16 of them); nested allOf are flattened.
 * additionalProperties inside allOf would count the other members'
 * properties as additional: refused, as is any keyword of another type. */
#define MAX_MERGE_REFS 16

typedef struct merge {
    json_t *merged;   /* type, properties, required */
    json_t *required; /* the names in merged's required, as keys */
    uint32_t types; /* 1 << T_*: the types all members allow so far (number: and integer) */
    int refs;       /* $refs followed */
} merge_t;

static rt_status_t merge_member(rtm_js_t *c, merge_t *m, json_t *member);

static rt_status_t merge_properties(rtm_js_t *c, merge_t *m, json_t *props) {
    if (!json_is_object(props))
        return rtm_js_fail(c, RT_ERR_FORMAT, "properties", "'properties' wants an object");
    json_t *into = json_object_get(m->merged, "properties");
    if (into == NULL) {
        into = json_object();
        if (into == NULL || json_object_set_new(m->merged, "properties", into) != 0)
            return no_memory(c);
    }
    const char *k;
    json_t *v;
    json_object_foreach(props, k, v) {
        json_t *had = json_object_get(into, k);
        if (had != NULL && json_equal(had, v)) continue;
        json_t *nv = had == NULL ? json_incref(v) : json_pack("{s:[OO]}", "allOf", had, v);
        if (nv == NULL || json_object_set_new(into, k, nv) != 0) return no_memory(c);
    }
    return RT_OK;
}

static rt_status_t merge_required(rtm_js_t *c, merge_t *m, json_t *req) {
    if (!json_is_array(req))
        return rtm_js_fail(c, RT_ERR_FORMAT, "required", "'required' wants an array of names");
    json_t *into = json_object_get(m->merged, "required");
    if (into == NULL) {
        into = json_array();
        if (into == NULL || json_object_set_new(m->merged, "required", into) != 0)
            return no_memory(c);
    }
    for (size_t i = 0; i < json_array_size(req); i++) {
        const char *name = json_string_value(json_array_get(req, i));
        if (name == NULL)
            return rtm_js_fail(c, RT_ERR_FORMAT, "required", "'required' wants an array of names");
        if (json_object_get(m->required, name) != NULL) continue;
        if (json_object_set_new(m->required, name, json_true()) != 0 ||
            json_array_append(into, json_array_get(req, i)) != 0)
            return no_memory(c);
    }
    return RT_OK;
}

static rt_status_t merge_type(rtm_js_t *c, merge_t *m, json_t *schema) {
    int types[T_COUNT], n;
    bool untyped;
    if (type_list(c, schema, types, &n, &untyped) != RT_OK) return c->st;
    uint32_t mask = 0;
    for (int i = 0; i < n; i++)
        mask |= 1u << types[i] | (types[i] == T_NUMBER ? 1u << T_INTEGER : 0);
    m->types &= mask;
    return RT_OK;
}

static rt_status_t merge_key(rtm_js_t *c, merge_t *m, json_t *schema, const char *key, json_t *v) {
    if (is_annotation(key) || strcmp(key, "$ref") == 0) return RT_OK;
    if (strcmp(key, "allOf") == 0) {
        if (!json_is_array(v))
            return rtm_js_fail(c, RT_ERR_FORMAT, key, "'allOf' wants an array of schemas");
        for (size_t i = 0; i < json_array_size(v) && c->st == RT_OK; i++)
            merge_member(c, m, json_array_get(v, i));
        return c->st;
    }
    if (strcmp(key, "type") == 0) return merge_type(c, m, schema);
    if (strcmp(key, "properties") == 0) return merge_properties(c, m, v);
    if (strcmp(key, "required") == 0) return merge_required(c, m, v);
    if (strcmp(key, "additionalProperties") == 0 && json_is_true(v)) return RT_OK;
    if (strcmp(key, "additionalProperties") == 0)
        return rtm_js_fail(
            c, RT_ERR_UNSUPPORTED, key,
            "'additionalProperties' inside allOf is not merged (it would count the other "
            "members' properties as additional)");
    return rtm_js_fail(c, RT_ERR_UNSUPPORTED, key,
                       "allOf merges object schemas only ('%s' is not merged)", key);
}

static rt_status_t merge_member(rtm_js_t *c, merge_t *m, json_t *member) {
    if (json_is_true(member)) return RT_OK;
    if (c->depth >= RTM_JS_MAX_DEPTH)
        return rtm_js_fail(c, RT_ERR_UNSUPPORTED, NULL, "allOf nested deeper than %d",
                           RTM_JS_MAX_DEPTH);
    if (!json_is_object(member))
        return rtm_js_fail(c, RT_ERR_UNSUPPORTED, NULL,
                           "an allOf member that is not an object schema");
    if (check_keywords(c, member) != RT_OK) return c->st;
    json_t *rv = json_object_get(member, "$ref");
    if (rv != NULL) {
        const char *ref = json_string_value(rv);
        char last[64];
        if (ref == NULL || ref[0] != '#' || (ref[1] != 0 && ref[1] != '/'))
            return rtm_js_fail(c, RT_ERR_UNSUPPORTED, "$ref",
                               "an allOf member's $ref must be \"#...\"");
        if (++m->refs > MAX_MERGE_REFS)
            return rtm_js_fail(c, RT_ERR_UNSUPPORTED, "$ref",
                               "allOf follows at most %d $refs (circular?)", MAX_MERGE_REFS);
        json_t *target = resolve(c, ref, last, sizeof last);
        if (target == NULL && c->st == RT_OK)
            return rtm_js_fail(c, RT_ERR_FORMAT, "$ref",
                               "$ref '%.80s' points at nothing in the schema", ref);
        merge_member(c, m, target);
    }
    const char *key;
    json_t *v;
    c->depth++;
    json_object_foreach(member, key, v) {
        if (c->st != RT_OK) break;
        merge_key(c, m, member, key, v);
    }
    c->depth--;
    return c->st;
}

/* The merged schema's `type`: absent while every type is allowed. */
static rt_status_t merged_type(rtm_js_t *c, merge_t *m) {
    const uint32_t all = (1u << T_COUNT) - 1;
    if (m->types == all) return RT_OK;
    if (m->types == 0)
        return rtm_js_fail(c, RT_ERR_UNSUPPORTED, "type",
                           "the members of allOf allow no type in common: no value is");
    json_t *list = json_array();
    if (list == NULL || json_object_set_new(m->merged, "type", list) != 0) return no_memory(c);
    for (int t = 0; t < T_COUNT; t++) {
        const bool redundant = t == T_INTEGER && (m->types & (1u << T_NUMBER));
        if ((m->types & (1u << t)) && !redundant &&
            json_array_append_new(list, json_string(type_names[t])) != 0)
            return no_memory(c);
    }
    return RT_OK;
}

static rt_status_t all_of(rtm_js_t *c, json_t *schema, const char *name, rtm_js_buf_t *out) {
    json_t *arr = json_object_get(schema, "allOf");
    if (!json_is_array(arr) || json_array_size(arr) == 0)
        return rtm_js_fail(c, RT_ERR_FORMAT, "allOf", "'allOf' wants a non-empty array of schemas");
    const size_t len = rtm_js_push(c, "allOf");
    if (json_array_size(arr) == 1 && validation_keyword(schema, "allOf", NULL) == NULL) {
        char hint[80];
        snprintf(hint, sizeof hint, "%s-0", name);
        rtm_js_push_index(c, 0);
        rtm_js_schema(c, json_array_get(arr, 0), hint, out);
        rtm_js_pop(c, len);
        return c->st;
    }
    merge_t m = {.types = (1u << T_COUNT) - 1};
    /* c->keep owns both (json_array_append_new takes them, and frees them when it fails) */
    if (json_array_append_new(c->keep, m.merged = json_object()) != 0 ||
        json_array_append_new(c->keep, m.required = json_object()) != 0)
        return no_memory(c);
    const char *key;
    json_t *v;
    json_object_foreach(schema, key, v) {
        if (c->st != RT_OK) break;
        merge_key(c, &m, schema, key, v);
    }
    if (merged_type(c, &m) == RT_OK) types_body(c, m.merged, name, out);
    rtm_js_pop(c, len);
    return c->st;
}

//===--- one subschema ---===//

static rt_status_t schema_body(rtm_js_t *c, json_t *schema, const char *name, rtm_js_buf_t *out) {
    if (json_is_true(schema)) return rtm_js_prim(c, out, RTM_JS_VALUE);
    if (json_is_false(schema))
        return rtm_js_fail(c, RT_ERR_UNSUPPORTED, NULL, "the schema false allows no value here");
    if (!json_is_object(schema))
        return rtm_js_fail(c, RT_ERR_FORMAT, NULL, "a schema must be an object or a boolean");
    if (check_keywords(c, schema) != RT_OK) return c->st;
    if (json_object_get(schema, "$ref") != NULL) return ref_expr(c, schema, out);
    const bool any = json_object_get(schema, "anyOf") != NULL,
               one = json_object_get(schema, "oneOf") != NULL;
    if (any && one)
        return rtm_js_fail(c, RT_ERR_UNSUPPORTED, "oneOf",
                           "'oneOf' beside 'anyOf' is not supported");
    if (any || one) return alternatives(c, schema, any ? "anyOf" : "oneOf", name, out);
    if (json_object_get(schema, "allOf") != NULL) return all_of(c, schema, name, out);
    if (json_object_get(schema, "enum") != NULL && json_object_get(schema, "const") != NULL)
        return rtm_js_fail(c, RT_ERR_UNSUPPORTED, "const",
                           "'const' beside 'enum' is not supported");
    if (json_object_get(schema, "enum") != NULL || json_object_get(schema, "const") != NULL)
        return enum_body(c, schema, out);
    return types_body(c, schema, name, out);
}

rt_status_t rtm_js_schema(rtm_js_t *c, json_t *schema, const char *hint, rtm_js_buf_t *out) {
    if (c->st != RT_OK) return c->st;
    if (c->depth >= RTM_JS_MAX_DEPTH)
        return rtm_js_fail(c, RT_ERR_UNSUPPORTED, NULL, "subschemas nested deeper than %d",
                           RTM_JS_MAX_DEPTH);
    /* a bare $ref is its target's rule */
    if (json_is_object(schema) && json_object_size(schema) == 1 &&
        json_object_get(schema, "$ref") != NULL)
        return ref_expr(c, schema, out);
    const int32_t idx = rtm_js_rule_open(c, hint);
    if (idx < 0) return c->st;
    rtm_js_buf_t body = {0};
    c->depth++;
    schema_body(c, schema, c->rules[idx].name, &body);
    c->depth--;
    return rule_close(c, idx, &body, true, out);
}

//===--- the whole conversion ---===//

static rt_status_t setup(rtm_js_t *c, const char *text, size_t len) {
    json_error_t err;
    c->doc = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &err);
    /* jansson gives a reason for every syntax error; none means an
     * allocation failed (some of its failed allocations read as syntax
     * errors, though: "invalid token") */
    if (c->doc == NULL && (json_error_code(&err) == json_error_out_of_memory || err.text[0] == 0))
        return no_memory(c);
    if (c->doc == NULL)
        return c->st =
                   rtm_error(RT_ERR_FORMAT, "json schema: not JSON: %.120s (line %d, column %d)",
                             err.text, err.line, err.column);
    c->names = json_object();
    c->refs = json_object();
    c->keep = json_array();
    c->suffixes = json_object();
    if (c->names == NULL || c->refs == NULL || c->keep == NULL || c->suffixes == NULL)
        return no_memory(c);
    for (int p = 0; p < RTM_JS_PRIM_COUNT; p++)
        if (json_object_set_new(c->names, rtm_js_prim_name(p), json_integer(-1)) != 0)
            return no_memory(c);
    if (!buf_reserve(&c->path, 1)) return no_memory(c);
    memcpy(c->path.p, "#", 2);
    c->path.n = 1;
    return c->st;
}

/* "name ::= body\n" for every rule kept, then the shared rules used (and
 * those they use), in their fixed order. */
static rt_status_t print_rules(rtm_js_t *c, rtm_js_buf_t *out) {
    for (int32_t i = 0; i < c->n_rules && c->st == RT_OK; i++) {
        if (c->rules[i].dropped) continue;
        rtm_js_put(c, out, c->rules[i].name);
        rtm_js_put(c, out, " ::= ");
        rtm_js_putn(c, out, c->rules[i].body.p, c->rules[i].body.n);
        rtm_js_put(c, out, "\n");
    }
    uint32_t used = c->prims;
    for (uint32_t before = 0; before != used;) {
        before = used;
        for (int p = 0; p < RTM_JS_PRIM_COUNT; p++)
            if (used & (1u << p)) used |= rtm_js_prim_deps(p);
    }
    for (int p = 0; p < RTM_JS_PRIM_COUNT && c->st == RT_OK; p++) {
        if (!(used & (1u << p))) continue;
        rtm_js_printf(c, out, "%s ::= %s\n", rtm_js_prim_name(p), rtm_js_prim_body(p));
    }
    return c->st;
}

static void teardown(rtm_js_t *c) {
    for (int32_t i = 0; i < c->n_rules; i++) {
        free(c->rules[i].name);
        rtm_js_buf_free(&c->rules[i].body);
    }
    free(c->rules);
    free(c->chain);
    rtm_js_buf_free(&c->path);
    json_decref(c->keep);
    json_decref(c->refs);
    json_decref(c->names);
    json_decref(c->suffixes);
    json_decref(c->doc);
}

rt_status_t rtm_js_convert(const char *text, size_t len, char **out_gbnf) {
    rtm_js_t c = {0};
    rtm_js_buf_t body = {0}, out = {0};
    if (setup(&c, text, len) == RT_OK) {
        const int32_t root = rtm_js_rule_open(&c, "root");
        if (root >= 0 && json_object_set_new(c.refs, "#", json_integer(root)) != 0) no_memory(&c);
        chain_push(&c, "#");
        c.depth = 1;
        schema_body(&c, c.doc, "root", &body);
        rtm_js_buf_t ignored = {0};
        rule_close(&c, root, &body, false, &ignored);
        rtm_js_buf_free(&ignored);
        c.bytes = 0; /* the rules are printed again, counted again */
        print_rules(&c, &out);
    }
    const rt_status_t st = c.st;
    teardown(&c);
    rtm_js_buf_free(&body);
    if (st != RT_OK) {
        rtm_js_buf_free(&out);
        return st;
    }
    *out_gbnf = out.p;
    return RT_OK;
}

#else
typedef int rtm_json_schema_conv_unused_t; /* jansson absent: json_schema.c says so */
#endif /* RT_HAVE_JANSSON */
