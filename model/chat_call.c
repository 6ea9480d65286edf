/* SPDX-License-Identifier: MIT */
/* chat_call.c: what a chat template can call. Functions: raise_exception
 * (fails the rendering with its message), namespace(k=v...), range(n),
 * strftime_now(fmt) (local time). String methods: strip lstrip rstrip
 * lower upper title startswith endswith replace split; dict methods: get
 * items keys values. Filters: trim length count tojson string lower upper
 * first last join default list int. Tests: defined undefined none string
 * number integer float boolean true false mapping iterable sequence even
 * odd. An unknown name fails naming it. */
#include "chat_eval.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define MAX_ARGS 8

typedef struct args {
    chat_value_t v[MAX_ARGS];
    const char *kw[MAX_ARGS];
    size_t kw_len[MAX_ARGS];
    int32_t n;
} args_t;

static bool name_is(const chat_node_t *n, const char *s) {
    return strlen(s) == n->len && memcmp(n->s, s, n->len) == 0;
}

static void eval_args(chat_eval_t *e, const chat_node_t *n, args_t *a) {
    a->n = 0;
    if (n->n_items > MAX_ARGS) {
        chat_fail(e, n->line, "more than %d arguments", MAX_ARGS);
        return;
    }
    for (int32_t i = 0; i < n->n_items; i++) {
        a->v[i] = chat_eval(e, n->items[i]);
        a->kw[i] = n->names[i], a->kw_len[i] = n->name_lens[i];
    }
    a->n = n->n_items;
}

/* Positional argument i or the keyword's, else fallback. */
static chat_value_t arg(const args_t *a, int32_t i, const char *kw, chat_value_t fallback) {
    for (int32_t k = 0; kw && k < a->n; k++)
        if (a->kw[k] && a->kw_len[k] == strlen(kw) && memcmp(a->kw[k], kw, a->kw_len[k]) == 0) return a->v[k];
    int32_t pos = 0;
    for (int32_t k = 0; k < a->n; k++)
        if (a->kw[k] == NULL && pos++ == i) return a->v[k];
    return fallback;
}

static const chat_value_t undef = {.kind = V_UNDEF};

//===--- strings ---===//

static bool in_set(char c, const chat_value_t *chars) {
    if (chars->kind != V_STR) return isspace((unsigned char)c);
    return memchr(chars->s, c, (size_t)chars->n) != NULL;
}

static chat_value_t strip(chat_eval_t *e, const chat_value_t *s, bool left, bool right, chat_value_t chars) {
    const char *a = s->s, *b = s->s + s->n;
    while (left && a < b && in_set(*a, &chars)) a++;
    while (right && b > a && in_set(b[-1], &chars)) b--;
    return chat_str(e, a, (size_t)(b - a));
}

static chat_value_t change_case(chat_eval_t *e, const chat_value_t *s, int how) {
    chat_value_t v = chat_str(e, s->s, (size_t)s->n);
    char *p = (char *)v.s;
    for (int64_t i = 0; v.kind == V_STR && i < v.n; i++) {
        const bool word_start = i == 0 || !isalpha((unsigned char)p[i - 1]);
        const bool up = how == 1 || (how == 2 && word_start);
        p[i] = (char)(up ? toupper((unsigned char)p[i]) : tolower((unsigned char)p[i]));
    }
    return v;
}

static bool affix(const chat_value_t *s, const chat_value_t *x, bool end) {
    if (s->kind != V_STR || x->kind != V_STR || x->n > s->n) return false;
    return memcmp(s->s + (end ? s->n - x->n : 0), x->s, (size_t)x->n) == 0;
}

static chat_value_t replace(chat_eval_t *e, const chat_value_t *s, const chat_value_t *from, const chat_value_t *to) {
    if (from->kind != V_STR || to->kind != V_STR || from->n == 0) return *s;
    chat_value_t out = {.kind = V_STR, .s = "", .n = 0};
    const char *p = s->s, *end = s->s + s->n;
    for (const char *hit; (hit = memmem(p, (size_t)(end - p), from->s, (size_t)from->n)) != NULL;
         p = hit + from->n) {
        const chat_value_t piece = chat_str(e, p, (size_t)(hit - p));
        chat_value_t joined = chat_str(e, NULL, (size_t)(out.n + piece.n + to->n));
        if (joined.kind != V_STR) return joined;
        memcpy((char *)joined.s, out.s, (size_t)out.n);
        memcpy((char *)joined.s + out.n, piece.s, (size_t)piece.n);
        memcpy((char *)joined.s + out.n + piece.n, to->s, (size_t)to->n);
        out = joined;
    }
    chat_value_t rest = chat_str(e, NULL, (size_t)(out.n + (end - p)));
    if (rest.kind == V_STR) memcpy((char *)rest.s, out.s, (size_t)out.n), memcpy((char *)rest.s + out.n, p, (size_t)(end - p));
    return rest;
}

static chat_value_t split(chat_eval_t *e, const chat_value_t *s, const chat_value_t *sep) {
    int64_t n = 1;
    const bool ws = sep->kind != V_STR || sep->n == 0;
    for (int64_t i = 0; !ws && i + sep->n <= s->n; i++)
        if (memcmp(s->s + i, sep->s, (size_t)sep->n) == 0) n++, i += sep->n - 1;
    if (ws) n = s->n + 1;
    chat_value_t list = chat_list(e, n);
    int64_t k = 0, start = 0;
    for (int64_t i = 0; list.items && i <= s->n; i++) {
        const bool at_end = i == s->n;
        const bool cut = ws ? (at_end || isspace((unsigned char)s->s[i]))
                            : (at_end || (i + sep->n <= s->n && memcmp(s->s + i, sep->s, (size_t)sep->n) == 0));
        if (!cut) continue;
        if (!ws || i > start) list.items[k++] = chat_str(e, s->s + start, (size_t)(i - start));
        start = i + (ws ? 1 : sep->n);
        if (!ws && !at_end) i += sep->n - 1;
    }
    list.n = k;
    return list;
}

chat_value_t chat_call_list_of(chat_eval_t *e, const chat_value_t *s) {
    chat_value_t list = chat_list(e, s->n);
    for (int64_t i = 0; list.items && i < s->n; i++) list.items[i] = chat_str(e, s->s + i, 1);
    return list;
}

static chat_value_t string_method(chat_eval_t *e, const chat_node_t *m, const chat_value_t *s, const args_t *a) {
    const chat_value_t a0 = arg(a, 0, NULL, undef), a1 = arg(a, 1, NULL, undef);
    if (name_is(m, "strip")) return strip(e, s, true, true, a0);
    if (name_is(m, "lstrip")) return strip(e, s, true, false, a0);
    if (name_is(m, "rstrip")) return strip(e, s, false, true, a0);
    if (name_is(m, "lower")) return change_case(e, s, 0);
    if (name_is(m, "upper")) return change_case(e, s, 1);
    if (name_is(m, "title")) return change_case(e, s, 2);
    if (name_is(m, "startswith")) return (chat_value_t){.kind = V_BOOL, .i = affix(s, &a0, false)};
    if (name_is(m, "endswith")) return (chat_value_t){.kind = V_BOOL, .i = affix(s, &a0, true)};
    if (name_is(m, "replace")) return replace(e, s, &a0, &a1);
    if (name_is(m, "split")) return split(e, s, &a0);
    chat_fail(e, m->line, "no string method '%.*s'", (int)m->len, m->s);
    return undef;
}

//===--- dicts ---===//

static chat_value_t dict_method(chat_eval_t *e, const chat_node_t *m, const chat_value_t *d, const args_t *a) {
    if (name_is(m, "get")) {
        const chat_value_t k = arg(a, 0, NULL, undef);
        const chat_value_t v = k.kind == V_STR ? chat_dict_get(d, k.s, (size_t)k.n) : undef;
        return v.kind == V_UNDEF ? arg(a, 1, NULL, (chat_value_t){.kind = V_NONE}) : v;
    }
    const bool items = name_is(m, "items"), keys = name_is(m, "keys");
    if (!items && !keys && !name_is(m, "values")) {
        chat_fail(e, m->line, "no dict method '%.*s'", (int)m->len, m->s);
        return undef;
    }
    chat_value_t list = chat_list(e, d->n);
    for (int64_t i = 0; list.items && i < d->n; i++) {
        if (!items) {
            list.items[i] = keys ? d->keys[i] : d->items[i];
            continue;
        }
        chat_value_t pair = chat_list(e, 2);
        if (pair.items) pair.items[0] = d->keys[i], pair.items[1] = d->items[i];
        list.items[i] = pair;
    }
    return list;
}

//===--- functions ---===//

static chat_value_t function(chat_eval_t *e, const chat_node_t *f, const args_t *a) {
    if (name_is(f, "raise_exception")) {
        const chat_value_t msg = arg(a, 0, NULL, undef);
        const chat_value_t s = chat_to_string(e, &msg);
        chat_fail(e, f->line, "raise_exception: %.*s", (int)s.n, s.s);
        return undef;
    }
    if (name_is(f, "namespace")) {
        chat_value_t d = chat_list(e, a->n);
        d.kind = V_DICT;
        d.keys = a->n ? chat_alloc(e->arena, (size_t)a->n * sizeof d.keys[0]) : NULL;
        for (int32_t i = 0; d.keys && i < a->n; i++) {
            d.keys[i] = a->kw[i] ? (chat_value_t){.kind = V_STR, .s = a->kw[i], .n = (int64_t)a->kw_len[i]} : undef;
            d.items[i] = a->v[i];
        }
        return d;
    }
    if (name_is(f, "range")) {
        const chat_value_t n = arg(a, 0, NULL, undef);
        chat_value_t list = chat_list(e, n.kind == V_INT && n.i > 0 && n.i < (1 << 20) ? n.i : 0);
        for (int64_t i = 0; list.items && i < list.n; i++) list.items[i] = (chat_value_t){.kind = V_INT, .i = i};
        return list;
    }
    if (name_is(f, "strftime_now")) {
        const chat_value_t fmt = arg(a, 0, NULL, undef);
        char fmt_z[64], out[128];
        snprintf(fmt_z, sizeof fmt_z, "%.*s", fmt.kind == V_STR ? (int)fmt.n : 0, fmt.s);
        const time_t now = time(NULL);
        struct tm tm;
        localtime_r(&now, &tm);
        return chat_str(e, out, strftime(out, sizeof out, fmt_z, &tm));
    }
    chat_fail(e, f->line, "no function '%.*s'", (int)f->len, f->s);
    return undef;
}

chat_value_t chat_call(chat_eval_t *e, const chat_node_t *n) {
    args_t a;
    const chat_node_t *callee = n->a;
    if (callee->kind == E_ATTR) {
        const chat_value_t obj = chat_eval(e, callee->a);
        eval_args(e, n, &a);
        if (obj.kind == V_STR) return string_method(e, callee, &obj, &a);
        if (obj.kind == V_DICT) return dict_method(e, callee, &obj, &a);
        chat_fail(e, n->line, "'%.*s' called on a value that has no methods", (int)callee->len, callee->s);
        return undef;
    }
    eval_args(e, n, &a);
    if (callee->kind == E_NAME) return function(e, callee, &a);
    chat_fail(e, n->line, "not a function");
    return undef;
}

//===--- serialising ---===//

typedef struct text {
    chat_eval_t *e;
    char *p;
    size_t n, cap;
} text_t;

static void put(text_t *t, const char *s, size_t n) {
    if (t->n + n > t->cap) {
        const size_t cap = (t->n + n) * 2 + 64;
        char *p = chat_alloc(t->e->arena, cap);
        if (p == NULL) return (void)chat_fail(t->e, 0, "no memory");
        if (t->n) memcpy(p, t->p, t->n);
        t->p = p, t->cap = cap;
    }
    memcpy(t->p + t->n, s, n);
    t->n += n;
}

static void put_string(text_t *t, const chat_value_t *v, bool json) {
    put(t, json ? "\"" : "'", 1);
    for (int64_t i = 0; i < v->n; i++) {
        const unsigned char c = (unsigned char)v->s[i];
        char esc[8];
        if (c == (json ? '"' : '\'') || c == '\\') esc[0] = '\\', esc[1] = (char)c, put(t, esc, 2);
        else if (c == '\n') put(t, "\\n", 2);
        else if (c == '\t') put(t, "\\t", 2);
        else if (c == '\r') put(t, "\\r", 2);
        else if (c < 0x20) put(t, esc, (size_t)snprintf(esc, sizeof esc, "\\u%04x", c));
        else put(t, (const char *)&c, 1);
    }
    put(t, json ? "\"" : "'", 1);
}

static void newline(text_t *t, int indent, int depth) {
    if (indent <= 0) return;
    put(t, "\n", 1);
    for (int i = 0; i < indent * depth; i++) put(t, " ", 1);
}

static void serialize(text_t *t, const chat_value_t *v, bool json, int indent, int depth) {
    if (depth > 64) return (void)chat_fail(t->e, 0, "a value nested deeper than 64");
    switch (v->kind) {
    case V_STR: put_string(t, v, json); return;
    case V_NONE: case V_UNDEF: put(t, json ? "null" : "None", json ? 4 : 4); return;
    case V_BOOL: put(t, v->i ? (json ? "true" : "True") : (json ? "false" : "False"), v->i ? 4 : 5); return;
    case V_INT: case V_FLOAT: {
        const chat_value_t s = chat_to_string(t->e, v);
        put(t, s.s, (size_t)s.n);
        return;
    }
    default: break;
    }
    const bool dict = v->kind == V_DICT;
    put(t, dict ? "{" : "[", 1);
    for (int64_t i = 0; i < v->n; i++) {
        if (i) put(t, indent > 0 ? "," : ", ", indent > 0 ? 1 : 2);
        newline(t, indent, depth + 1);
        if (dict) serialize(t, &v->keys[i], json, indent, depth + 1), put(t, ": ", 2);
        serialize(t, &v->items[i], json, indent, depth + 1);
    }
    if (v->n) newline(t, indent, depth);
    put(t, dict ? "}" : "]", 1);
}

chat_value_t chat_serialize(chat_eval_t *e, const chat_value_t *v, bool json, int indent) {
    text_t t = {.e = e};
    serialize(&t, v, json, indent, 0);
    return (chat_value_t){.kind = V_STR, .s = t.p ? t.p : "", .n = (int64_t)t.n};
}

//===--- filters and tests ---===//

static chat_value_t join(chat_eval_t *e, const chat_value_t *list, const chat_value_t *sep) {
    chat_value_t out = {.kind = V_STR, .s = "", .n = 0};
    text_t t = {.e = e};
    for (int64_t i = 0; list->kind == V_LIST && i < list->n; i++) {
        if (i && sep->kind == V_STR) put(&t, sep->s, (size_t)sep->n);
        const chat_value_t s = chat_to_string(e, &list->items[i]);
        put(&t, s.s, (size_t)s.n);
    }
    if (t.p) out.s = t.p, out.n = (int64_t)t.n;
    return out;
}

chat_value_t chat_filter(chat_eval_t *e, const chat_node_t *n) {
    const chat_value_t v = chat_eval(e, n->a);
    args_t a;
    eval_args(e, n, &a);
    const chat_value_t a0 = arg(&a, 0, NULL, undef);
    if (name_is(n, "trim")) return v.kind == V_STR ? strip(e, &v, true, true, undef) : v;
    if (name_is(n, "length") || name_is(n, "count"))
        return (chat_value_t){.kind = V_INT, .i = v.kind >= V_STR ? v.n : 0};
    if (name_is(n, "tojson")) {
        const chat_value_t ind = arg(&a, 0, "indent", undef);
        return chat_serialize(e, &v, true, ind.kind == V_INT ? (int)ind.i : 0);
    }
    if (name_is(n, "string")) return chat_to_string(e, &v);
    if (name_is(n, "lower") && v.kind == V_STR) return change_case(e, &v, 0);
    if (name_is(n, "upper") && v.kind == V_STR) return change_case(e, &v, 1);
    if ((name_is(n, "first") || name_is(n, "last")) && v.kind == V_LIST)
        return v.n ? v.items[name_is(n, "first") ? 0 : v.n - 1] : undef;
    if (name_is(n, "join")) return join(e, &v, &a0);
    if (name_is(n, "default")) return v.kind == V_UNDEF ? a0 : v;
    if (name_is(n, "list")) return v.kind == V_STR ? chat_call_list_of(e, &v) : v;
    if (name_is(n, "int")) { /* Jinja's int: a number truncated, 0 where it has no int64 */
        const double x = chat_number(&v);
        return (chat_value_t){.kind = V_INT, .i = x > -0x1p63 && x < 0x1p63 ? (int64_t)x : 0};
    }
    chat_fail(e, n->line, "no filter '%.*s' (for this value)", (int)n->len, n->s);
    return undef;
}

chat_value_t chat_test(chat_eval_t *e, const chat_node_t *n) {
    const chat_value_t v = chat_eval(e, n->a);
    const chat_vkind_t k = v.kind;
    bool r;
    if (name_is(n, "defined")) r = k != V_UNDEF;
    else if (name_is(n, "undefined")) r = k == V_UNDEF;
    else if (name_is(n, "none")) r = k == V_NONE;
    else if (name_is(n, "string")) r = k == V_STR;
    else if (name_is(n, "number")) r = k == V_INT || k == V_FLOAT;
    else if (name_is(n, "integer")) r = k == V_INT;
    else if (name_is(n, "float")) r = k == V_FLOAT;
    else if (name_is(n, "boolean")) r = k == V_BOOL;
    else if (name_is(n, "true")) r = k == V_BOOL && v.i;
    else if (name_is(n, "false")) r = k == V_BOOL && !v.i;
    else if (name_is(n, "mapping")) r = k == V_DICT;
    else if (name_is(n, "iterable")) r = k == V_LIST || k == V_DICT || k == V_STR;
    else if (name_is(n, "sequence")) r = k == V_LIST || k == V_STR;
    else if (name_is(n, "even") || name_is(n, "odd")) r = k == V_INT && (v.i % 2 == 0) == name_is(n, "even");
    else {
        chat_fail(e, n->line, "no test '%.*s'", (int)n->len, n->s);
        return undef;
    }
    return (chat_value_t){.kind = V_BOOL, .i = r != n->negate};
}
