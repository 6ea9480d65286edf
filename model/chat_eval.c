/* SPDX-License-Identifier: MIT */
/* chat_eval.c: renders a chat template's tree. Values are Jinja's (none,
 * undefined, booleans, integers, floats, strings, lists, dicts), copied by
 * value, their contents in the rendering's arena. The globals are
 * messages (a list of {role, content} dicts), add_generation_prompt,
 * bos_token, eos_token, raise_exception() and namespace(); a for loop
 * opens a scope with its variable and loop.index0/index/first/last/length,
 * so that set inside a loop does not leak out, as in Jinja. Filters,
 * tests and string methods: the ones real templates call (chat_call.c). */
#include "chat_eval.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

rt_status_t chat_fail(chat_eval_t *e, int line, const char *fmt, ...) {
    if (e->st != RT_OK) return e->st;
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return e->st = rtm_error(RT_ERR_FORMAT, "chat template, line %d: %s", line, msg);
}

//===--- values ---===//

/* s NULL: len bytes to be filled by the caller. */
chat_value_t chat_str(chat_eval_t *e, const char *s, size_t len) {
    char *copy = chat_alloc(e->arena, len + 1);
    if (copy == NULL) {
        chat_fail(e, 0, "no memory");
        return (chat_value_t){.kind = V_NONE};
    }
    if (s != NULL) memcpy(copy, s, len);
    copy[len] = '\0';
    return (chat_value_t){.kind = V_STR, .s = copy, .n = (int64_t)len};
}

chat_value_t chat_list(chat_eval_t *e, int64_t n) {
    chat_value_t v = {.kind = V_LIST, .n = n};
    if (n && (v.items = chat_alloc(e->arena, (size_t)n * sizeof v.items[0])) == NULL) {
        chat_fail(e, 0, "no memory");
        v.n = 0;
    }
    return v;
}

bool chat_truthy(const chat_value_t *v) {
    switch (v->kind) {
    case V_BOOL: case V_INT: return v->i != 0;
    case V_FLOAT: return v->f != 0;
    case V_STR: case V_LIST: case V_DICT: return v->n > 0;
    default: return false;
    }
}

static bool str_eq(const chat_value_t *v, const char *s, size_t len) {
    return v->kind == V_STR && (size_t)v->n == len && memcmp(v->s, s, len) == 0;
}

bool chat_equal(const chat_value_t *a, const chat_value_t *b) {
    const bool na = a->kind == V_INT || a->kind == V_FLOAT || a->kind == V_BOOL;
    const bool nb = b->kind == V_INT || b->kind == V_FLOAT || b->kind == V_BOOL;
    if (na && nb) return chat_number(a) == chat_number(b);
    if (a->kind != b->kind) return false;
    if (a->kind == V_STR) return str_eq(a, b->s, (size_t)b->n);
    if (a->kind != V_LIST) return a->kind == V_NONE || a->kind == V_UNDEF;
    if (a->n != b->n) return false;
    for (int64_t i = 0; i < a->n; i++)
        if (!chat_equal(&a->items[i], &b->items[i])) return false;
    return true;
}

double chat_number(const chat_value_t *v) { return v->kind == V_FLOAT ? v->f : (double)v->i; }

/* The value of key in dict d, or undefined. */
chat_value_t chat_dict_get(const chat_value_t *d, const char *key, size_t len) {
    for (int64_t i = 0; d->kind == V_DICT && i < d->n; i++)
        if (str_eq(&d->keys[i], key, len)) return d->items[i];
    return (chat_value_t){.kind = V_UNDEF};
}

//===--- output ---===//

void chat_emit(chat_eval_t *e, const char *s, size_t len) {
    if (e->len + len < e->size) memcpy(e->buf + e->len, s, len);
    else if (e->len < e->size) memcpy(e->buf + e->len, s, e->size - e->len - 1);
    e->len += len;
}

/* Python's str() of v, appended to the output or (to_buf) returned. */
chat_value_t chat_to_string(chat_eval_t *e, const chat_value_t *v) {
    char tmp[64];
    switch (v->kind) {
    case V_STR: return *v;
    case V_UNDEF: return chat_str(e, "", 0);
    case V_NONE: return chat_str(e, "None", 4);
    case V_BOOL: return v->i ? chat_str(e, "True", 4) : chat_str(e, "False", 5);
    case V_INT: return chat_str(e, tmp, (size_t)snprintf(tmp, sizeof tmp, "%" PRId64, v->i));
    case V_FLOAT: {
        int n = snprintf(tmp, sizeof tmp, "%.17g", v->f);
        if (strtod(tmp, NULL) != v->f || strlen(tmp) > 16) n = snprintf(tmp, sizeof tmp, "%.15g", v->f);
        if (!strpbrk(tmp, ".en")) n = snprintf(tmp, sizeof tmp, "%.1f", v->f);
        return chat_str(e, tmp, (size_t)n);
    }
    default: return chat_serialize(e, v, false, 0);
    }
}

//===--- scopes ---===//

chat_value_t chat_lookup(const chat_eval_t *e, const char *name, size_t len) {
    for (const chat_scope_t *s = e->scope; s; s = s->up)
        for (int32_t i = s->n - 1; i >= 0; i--)
            if (s->lens[i] == len && memcmp(s->names[i], name, len) == 0) return s->values[i];
    return (chat_value_t){.kind = V_UNDEF};
}

void chat_assign(chat_eval_t *e, const char *name, size_t len, chat_value_t v) {
    chat_scope_t *s = e->scope;
    for (int32_t i = 0; i < s->n; i++)
        if (s->lens[i] == len && memcmp(s->names[i], name, len) == 0) {
            s->values[i] = v;
            return;
        }
    if (s->n == CHAT_SCOPE_MAX) {
        chat_fail(e, 0, "more than %d variables in one scope", CHAT_SCOPE_MAX);
        return;
    }
    s->names[s->n] = name, s->lens[s->n] = len, s->values[s->n++] = v;
}

//===--- expressions ---===//

static chat_value_t attr(chat_eval_t *e, const chat_node_t *n, chat_value_t obj) {
    if (obj.kind == V_DICT) return chat_dict_get(&obj, n->s, n->len);
    return (chat_value_t){.kind = V_UNDEF};
}

static chat_value_t index_of(chat_eval_t *e, const chat_node_t *n, chat_value_t obj, chat_value_t key) {
    if (obj.kind == V_DICT && key.kind == V_STR) return chat_dict_get(&obj, key.s, (size_t)key.n);
    if ((obj.kind == V_LIST || obj.kind == V_STR) && key.kind == V_INT) {
        const int64_t i = key.i < 0 ? key.i + obj.n : key.i;
        if (i < 0 || i >= obj.n) return (chat_value_t){.kind = V_UNDEF};
        return obj.kind == V_LIST ? obj.items[i] : chat_str(e, obj.s + i, 1);
    }
    if (obj.kind == V_UNDEF) return obj;
    chat_fail(e, n->line, "cannot index this value");
    return (chat_value_t){.kind = V_UNDEF};
}

static int64_t clamp_index(int64_t i, int64_t n) {
    if (i < 0) i += n;
    return i < 0 ? 0 : i > n ? n : i;
}

static chat_value_t slice(chat_eval_t *e, const chat_node_t *n) {
    const chat_value_t obj = chat_eval(e, n->a);
    const chat_value_t step = n->n_items ? chat_eval(e, n->items[0]) : (chat_value_t){.kind = V_INT, .i = 1};
    const bool back = step.kind == V_INT && step.i == -1;
    const chat_value_t a = n->b ? chat_eval(e, n->b) : (chat_value_t){.kind = V_INT, .i = back ? obj.n - 1 : 0};
    const chat_value_t b = n->c ? chat_eval(e, n->c) : (chat_value_t){.kind = V_INT, .i = back ? -obj.n - 1 : obj.n};
    if ((obj.kind != V_LIST && obj.kind != V_STR) || a.kind != V_INT || b.kind != V_INT ||
        step.kind != V_INT || (step.i != 1 && !back)) {
        chat_fail(e, n->line, "a slice wants a list or string, integers and a step of 1 or -1");
        return (chat_value_t){.kind = V_UNDEF};
    }
    if (back) { /* [hi:lo:-1]: from hi down to lo + 1 */
        const int64_t hi = a.i < 0 ? a.i + obj.n : a.i >= obj.n ? obj.n - 1 : a.i;
        const int64_t lo = b.i < -obj.n ? -1 : b.i < 0 ? b.i + obj.n : b.i;
        const int64_t len = hi > lo ? hi - lo : 0;
        chat_value_t v = obj.kind == V_STR ? chat_str(e, NULL, (size_t)len) : chat_list(e, len);
        for (int64_t i = 0; i < len && e->st == RT_OK; i++) {
            if (obj.kind == V_STR) ((char *)v.s)[i] = obj.s[hi - i];
            else v.items[i] = obj.items[hi - i];
        }
        return v;
    }
    const int64_t lo = clamp_index(a.i, obj.n), hi = clamp_index(b.i, obj.n);
    const int64_t len = hi > lo ? hi - lo : 0;
    if (obj.kind == V_STR) return chat_str(e, obj.s + lo, (size_t)len);
    chat_value_t v = chat_list(e, len);
    if (len && v.items) memcpy(v.items, obj.items + lo, (size_t)len * sizeof v.items[0]);
    return v;
}

static chat_value_t concat2(chat_eval_t *e, chat_value_t a, chat_value_t b) {
    a = chat_to_string(e, &a), b = chat_to_string(e, &b);
    chat_value_t v = chat_str(e, NULL, (size_t)(a.n + b.n));
    if (v.kind == V_STR) memcpy((char *)v.s, a.s, (size_t)a.n), memcpy((char *)v.s + a.n, b.s, (size_t)b.n);
    return v;
}

static bool contains(chat_eval_t *e, const chat_value_t *hay, const chat_value_t *needle) {
    if (hay->kind == V_STR && needle->kind == V_STR)
        return needle->n == 0 || memmem(hay->s, (size_t)hay->n, needle->s, (size_t)needle->n) != NULL;
    if (hay->kind == V_DICT && needle->kind == V_STR)
        return chat_dict_get(hay, needle->s, (size_t)needle->n).kind != V_UNDEF;
    for (int64_t i = 0; hay->kind == V_LIST && i < hay->n; i++)
        if (chat_equal(&hay->items[i], needle)) return true;
    return false;
}

/* Python's integer +, -, *, % (floored), // (floored) and ** on int64, into *r; false
 * where the result does not fit (Python's ints would grow; a template has no use for
 * that, and a wrapped value would be wrong). y is not zero for % and //, and not
 * negative for ** (2 ** -1 is a float). */
static bool int_arith(char op, bool two, int64_t x, int64_t y, int64_t *r) {
    if (op == '+') return !__builtin_add_overflow(x, y, r);
    if (op == '-') return !__builtin_sub_overflow(x, y, r);
    if (op == '*' && !two) return !__builtin_mul_overflow(x, y, r);
    if (op == '%' || op == '/') {
        if (y == -1) { /* the one quotient that overflows: INT64_MIN / -1 */
            *r = 0;
            return op == '%' || !__builtin_sub_overflow((int64_t)0, x, r);
        }
        const int64_t m = x % y, q = x / y;
        const bool floor = m != 0 && (m < 0) != (y < 0);
        *r = op == '%' ? (floor ? m + y : m) : (floor ? q - 1 : q);
        return true;
    }
    *r = 1; /* ** by squaring (y >= 0 here), exact where a double would round */
    for (int64_t b = x; y > 0; y >>= 1) {
        if ((y & 1) && __builtin_mul_overflow(*r, b, r)) return false;
        if (y > 1 && __builtin_mul_overflow(b, b, &b)) return false;
    }
    return true;
}

static chat_value_t arith(chat_eval_t *e, const chat_node_t *n, chat_value_t a, chat_value_t b) {
    const char op = n->s[0];
    const bool two = n->len == 2;
    if (op == '+' && a.kind == V_STR && b.kind == V_STR) return concat2(e, a, b);
    if (op == '+' && a.kind == V_LIST && b.kind == V_LIST) {
        chat_value_t v = chat_list(e, a.n + b.n);
        if (v.n) memcpy(v.items, a.items, (size_t)a.n * sizeof a.items[0]),
                 memcpy(v.items + a.n, b.items, (size_t)b.n * sizeof b.items[0]);
        return v;
    }
    const bool num = (a.kind == V_INT || a.kind == V_FLOAT || a.kind == V_BOOL) &&
                     (b.kind == V_INT || b.kind == V_FLOAT || b.kind == V_BOOL);
    if (!num) {
        chat_fail(e, n->line, "'%.*s' wants numbers (or strings or lists for +)", (int)n->len, n->s);
        return (chat_value_t){.kind = V_UNDEF};
    }
    const bool ints = a.kind != V_FLOAT && b.kind != V_FLOAT;
    if ((op == '/' || op == '%') && chat_number(&b) == 0) {
        chat_fail(e, n->line, "division by zero");
        return (chat_value_t){.kind = V_UNDEF};
    }
    if (ints && (op != '/' || two) && !(op == '*' && two && b.i < 0)) { /* 2 ** -1 is 0.5 */
        int64_t r;
        if (!int_arith(op, two, a.i, b.i, &r)) {
            chat_fail(e, n->line, "'%.*s' overflows a 64-bit integer", (int)n->len, n->s);
            return (chat_value_t){.kind = V_UNDEF};
        }
        return (chat_value_t){.kind = V_INT, .i = r};
    }
    const double x = chat_number(&a), y = chat_number(&b);
    double r = op == '+' ? x + y : op == '-' ? x - y : op == '*' ? (two ? pow(x, y) : x * y)
             : op == '%' ? fmod(x, y) : x / y;
    if (two && op == '/') r = floor(r);
    return (chat_value_t){.kind = V_FLOAT, .f = r};
}

static chat_value_t binary(chat_eval_t *e, const chat_node_t *n) {
    const chat_value_t a = chat_eval(e, n->a), b = chat_eval(e, n->b);
    chat_value_t r = {.kind = V_BOOL};
    if (n->len == 2 && n->s[0] == 'i') r.i = contains(e, &b, &a); /* in */
    else if (n->len == 2 && n->s[1] == '=' && (n->s[0] == '=' || n->s[0] == '!'))
        r.i = chat_equal(&a, &b) == (n->s[0] == '=');
    else if (n->s[0] == '<' || n->s[0] == '>') {
        int c;
        if (a.kind == V_STR && b.kind == V_STR) {
            const size_t m = (size_t)(a.n < b.n ? a.n : b.n);
            c = memcmp(a.s, b.s, m);
            if (c == 0) c = (a.n > b.n) - (a.n < b.n);
        } else {
            c = (chat_number(&a) > chat_number(&b)) - (chat_number(&a) < chat_number(&b));
        }
        const bool eq = n->len == 2;
        r.i = n->s[0] == '<' ? (c < 0 || (eq && c == 0)) : (c > 0 || (eq && c == 0));
    } else if (n->s[0] == '~') {
        return concat2(e, a, b);
    } else {
        return arith(e, n, a, b);
    }
    return r;
}

static chat_value_t collection(chat_eval_t *e, const chat_node_t *n) {
    if (n->kind == E_LIST) {
        chat_value_t v = chat_list(e, n->n_items);
        for (int32_t i = 0; i < v.n; i++) v.items[i] = chat_eval(e, n->items[i]);
        return v;
    }
    chat_value_t d = chat_list(e, n->n_items / 2);
    d.kind = V_DICT;
    d.keys = d.n ? chat_alloc(e->arena, (size_t)d.n * sizeof d.keys[0]) : NULL;
    if (d.n && d.keys == NULL) return chat_fail(e, n->line, "no memory"), d;
    for (int64_t i = 0; i < d.n; i++) {
        d.keys[i] = chat_eval(e, n->items[2 * i]);
        d.items[i] = chat_eval(e, n->items[2 * i + 1]);
    }
    return d;
}

chat_value_t chat_eval(chat_eval_t *e, const chat_node_t *n) {
    const chat_value_t undef = {.kind = V_UNDEF};
    if (e->st != RT_OK) return undef;
    switch (n->kind) {
    case E_STR: return (chat_value_t){.kind = V_STR, .s = n->s, .n = (int64_t)n->len};
    case E_INT: return (chat_value_t){.kind = V_INT, .i = n->i};
    case E_FLOAT: return (chat_value_t){.kind = V_FLOAT, .f = n->f};
    case E_BOOL: return (chat_value_t){.kind = V_BOOL, .i = n->i};
    case E_NONE: return (chat_value_t){.kind = V_NONE};
    case E_NAME: return chat_lookup(e, n->s, n->len);
    case E_ATTR: return attr(e, n, chat_eval(e, n->a));
    case E_INDEX: {
        const chat_value_t obj = chat_eval(e, n->a);
        return index_of(e, n, obj, chat_eval(e, n->b));
    }
    case E_SLICE: return slice(e, n);
    case E_CALL: return chat_call(e, n);
    case E_FILTER: return chat_filter(e, n);
    case E_TEST: return chat_test(e, n);
    case E_NOT: {
        const chat_value_t v = chat_eval(e, n->a);
        return (chat_value_t){.kind = V_BOOL, .i = !chat_truthy(&v)};
    }
    case E_NEG: {
        const chat_value_t v = chat_eval(e, n->a);
        if (v.kind == V_INT && v.i != INT64_MIN) return (chat_value_t){.kind = V_INT, .i = -v.i};
        return (chat_value_t){.kind = V_FLOAT, .f = -chat_number(&v)};
    }
    case E_AND: case E_OR: {
        const chat_value_t a = chat_eval(e, n->a);
        if (chat_truthy(&a) == (n->kind == E_OR)) return a;
        return chat_eval(e, n->b);
    }
    case E_COND: {
        const chat_value_t c = chat_eval(e, n->b);
        if (chat_truthy(&c)) return chat_eval(e, n->a);
        return n->c ? chat_eval(e, n->c) : undef;
    }
    case E_BINARY: return binary(e, n);
    case E_LIST: case E_DICT: return collection(e, n);
    default: chat_fail(e, n->line, "not an expression"); return undef;
    }
}

//===--- statements ---===//

static void exec(chat_eval_t *e, const chat_node_t *n);

static void for_loop(chat_eval_t *e, const chat_node_t *n) {
    chat_value_t seq = chat_eval(e, n->a);
    if (seq.kind == V_UNDEF || seq.kind == V_NONE) seq = chat_list(e, 0);
    if (seq.kind == V_STR) seq = chat_call_list_of(e, &seq);
    if (seq.kind != V_LIST && seq.kind != V_DICT) {
        chat_fail(e, n->line, "for wants a list");
        return;
    }
    if (seq.n == 0 && n->c) exec(e, n->c);
    static const char *const names[] = {"index0", "index", "first", "last", "length", "revindex", "revindex0"};
    chat_value_t loop = chat_list(e, 7);
    loop.kind = V_DICT;
    loop.keys = chat_alloc(e->arena, 7 * sizeof loop.keys[0]);
    if (loop.keys == NULL) return (void)chat_fail(e, n->line, "no memory");
    for (int i = 0; i < 7; i++) loop.keys[i] = (chat_value_t){.kind = V_STR, .s = names[i], .n = (int64_t)strlen(names[i])};
    for (int64_t i = 0; i < seq.n && e->st == RT_OK; i++) {
        chat_scope_t scope = {.up = e->scope};
        e->scope = &scope;
        const int64_t vals[7] = {i, i + 1, i == 0, i == seq.n - 1, seq.n, seq.n - i, seq.n - i - 1};
        chat_value_t l = loop;
        l.items = chat_alloc(e->arena, 7 * sizeof l.items[0]);
        if (l.items == NULL) chat_fail(e, n->line, "no memory");
        for (int k = 0; l.items && k < 7; k++)
            l.items[k] = (chat_value_t){.kind = k == 2 || k == 3 ? V_BOOL : V_INT, .i = vals[k]};
        chat_assign(e, "loop", 4, l);
        if (seq.kind == V_DICT && n->var2) {
            chat_assign(e, n->s, n->len, seq.keys[i]);
            chat_assign(e, n->var2, n->var2_len, seq.items[i]);
        } else if (seq.kind == V_DICT) {
            chat_assign(e, n->s, n->len, seq.keys[i]);
        } else if (n->var2 && seq.items[i].kind == V_LIST && seq.items[i].n == 2) {
            chat_assign(e, n->s, n->len, seq.items[i].items[0]);
            chat_assign(e, n->var2, n->var2_len, seq.items[i].items[1]);
        } else {
            chat_assign(e, n->s, n->len, seq.items[i]);
        }
        if (l.items) exec(e, n->b);
        e->scope = scope.up;
    }
}

/* "set ns.attr = v": namespace() objects are dicts changed in place. */
static void set_attr(chat_eval_t *e, const chat_node_t *n) {
    chat_value_t obj = chat_lookup(e, n->s, n->len);
    const chat_value_t v = chat_eval(e, n->a);
    for (int64_t i = 0; obj.kind == V_DICT && i < obj.n; i++)
        if (str_eq(&obj.keys[i], n->var2, n->var2_len)) {
            obj.items[i] = v;
            return;
        }
    chat_fail(e, n->line, "set %.*s.%.*s: not a namespace() attribute", (int)n->len, n->s,
              (int)n->var2_len, n->var2);
}

static void exec(chat_eval_t *e, const chat_node_t *n) {
    if (e->st != RT_OK || n == NULL) return;
    if (++e->steps > CHAT_MAX_STEPS) {
        chat_fail(e, n->line, "the template runs more than %d statements", CHAT_MAX_STEPS);
        return;
    }
    switch (n->kind) {
    case N_BLOCK:
        for (int32_t i = 0; i < n->n_items; i++) exec(e, n->items[i]);
        break;
    case N_TEXT: chat_emit(e, n->s, n->len); break;
    case N_OUTPUT: {
        const chat_value_t v = chat_eval(e, n->a);
        const chat_value_t s = chat_to_string(e, &v);
        if (e->st == RT_OK) chat_emit(e, s.s, (size_t)s.n);
        break;
    }
    case N_IF: {
        const chat_value_t c = chat_eval(e, n->a);
        exec(e, chat_truthy(&c) ? n->b : n->c);
        break;
    }
    case N_FOR: for_loop(e, n); break;
    case N_SET:
        if (n->var2) set_attr(e, n);
        else chat_assign(e, n->s, n->len, chat_eval(e, n->a));
        break;
    default: chat_fail(e, n->line, "not a statement"); break;
    }
}

/* The messages as Jinja values: a list of {role, content} dicts. */
static chat_value_t messages_value(chat_eval_t *e, const rtm_chat_message_t *m, int32_t n) {
    chat_value_t list = chat_list(e, n);
    for (int32_t i = 0; i < n && e->st == RT_OK; i++) {
        chat_value_t d = chat_list(e, 2);
        d.kind = V_DICT;
        d.keys = chat_alloc(e->arena, 2 * sizeof d.keys[0]);
        if (d.keys == NULL) return chat_fail(e, 0, "no memory"), list;
        d.keys[0] = (chat_value_t){.kind = V_STR, .s = "role", .n = 4};
        d.keys[1] = (chat_value_t){.kind = V_STR, .s = "content", .n = 7};
        d.items[0] = (chat_value_t){.kind = V_STR, .s = m[i].role, .n = (int64_t)strlen(m[i].role)};
        d.items[1] = (chat_value_t){.kind = V_STR, .s = m[i].content, .n = (int64_t)strlen(m[i].content)};
        list.items[i] = d;
    }
    return list;
}

static chat_value_t cstr(const char *s) {
    return s ? (chat_value_t){.kind = V_STR, .s = s, .n = (int64_t)strlen(s)} : (chat_value_t){.kind = V_UNDEF};
}

rt_status_t chat_render(const chat_node_t *root, const rtm_chat_message_t *messages, int32_t n_messages,
                        const rtm_chat_render_params_t *p, char *buf, size_t size, size_t *out_len) {
    chat_arena_t arena = {0};
    chat_scope_t globals = {0};
    chat_eval_t e = {.arena = &arena, .scope = &globals, .buf = buf, .size = size};
    chat_assign(&e, "messages", 8, messages_value(&e, messages, n_messages));
    chat_assign(&e, "add_generation_prompt", 21,
                (chat_value_t){.kind = V_BOOL, .i = p->add_generation_prompt});
    chat_assign(&e, "bos_token", 9, cstr(p->bos_token));
    chat_assign(&e, "eos_token", 9, cstr(p->eos_token));
    static const char *const functions[] = {"raise_exception", "namespace", "range", "strftime_now"};
    for (size_t i = 0; i < sizeof functions / sizeof functions[0]; i++) /* for "is defined" */
        chat_assign(&e, functions[i], strlen(functions[i]), cstr("<function>"));
    chat_scope_t scope = {.up = &globals}; /* the template's own sets */
    e.scope = &scope;
    exec(&e, root);
    chat_arena_free(&arena);
    if (size) buf[e.len < size ? e.len : size - 1] = 0;
    *out_len = e.len;
    if (e.st != RT_OK) return e.st;
    return e.len < size ? RT_OK
                        : rtm_error(RT_ERR_DOES_NOT_FIT, "rtm_chat_template_apply: %zu bytes needed", e.len + 1);
}
