/* SPDX-License-Identifier: MIT */
/* chat_parse.c: a chat template's tokens as a tree, by recursive descent
 * in Jinja's precedence, lowest first: "a if c else b", or, and, not,
 * comparisons and "in", "~", "+ -", "* / // %", unary minus, then a
 * primary with its postfixes (".name", "[i]", "[a:b]", "(args)") and its
 * filters ("| trim") and tests ("is defined"). Statements: if / elif /
 * else, for (with "for k, v in", and else), set; text and {{ }} between. */
#include "chat_impl.h"

#include <string.h>

typedef struct parser {
    const chat_token_t *t;
    int32_t i, n;
    chat_arena_t *arena;
    rt_status_t st;
} parser_t;

static const chat_token_t *peek(const parser_t *p) { return &p->t[p->i < p->n ? p->i : p->n - 1]; }
static const chat_token_t *next(parser_t *p) {
    const chat_token_t *t = peek(p);
    if (p->i < p->n - 1) p->i++;
    return t;
}

static bool is(const chat_token_t *t, chat_tk_t kind, const char *s) {
    return t->kind == kind && (s == NULL || (strlen(s) == t->len && memcmp(t->s, s, t->len) == 0));
}
static bool is_op(const parser_t *p, const char *s) { return is(peek(p), TK_OP, s); }
static bool is_name(const parser_t *p, const char *s) { return is(peek(p), TK_NAME, s); }

static chat_node_t *fail(parser_t *p, const char *what) {
    if (p->st == RT_OK)
        p->st = rtm_error(RT_ERR_FORMAT, "chat template, line %d: %s near '%.*s'", peek(p)->line, what,
                          (int)(peek(p)->len > 20 ? 20 : peek(p)->len), peek(p)->s);
    return NULL;
}

static chat_node_t *node(parser_t *p, chat_kind_t kind) {
    chat_node_t *n = p->st == RT_OK ? chat_alloc(p->arena, sizeof *n) : NULL;
    if (n == NULL && p->st == RT_OK) p->st = rtm_error(RT_ERR_OUT_OF_MEMORY, "chat template: no memory");
    if (n) {
        n->kind = kind;
        n->line = peek(p)->line;
    }
    return n;
}

static bool expect_op(parser_t *p, const char *s) {
    if (is_op(p, s)) return next(p), true;
    fail(p, s[0] == ')' ? "')' expected" : s[0] == ']' ? "']' expected" : "an operator expected");
    return false;
}

/* Appends item (and its keyword) to n's items. */
static bool add_item(parser_t *p, chat_node_t *n, chat_node_t *item, const char *kw, size_t kw_len) {
    if (item == NULL || p->st != RT_OK) return false;
    if ((n->n_items & (n->n_items - 1)) == 0) { /* 0, 1, 2, 4, ...: grow to the next power of two */
        const size_t cap = n->n_items ? (size_t)n->n_items * 2 : 1;
        chat_node_t **items = chat_alloc(p->arena, cap * sizeof items[0]);
        const char **names = chat_alloc(p->arena, cap * sizeof names[0]);
        size_t *lens = chat_alloc(p->arena, cap * sizeof lens[0]);
        if (!items || !names || !lens) return fail(p, "no memory"), false;
        if (n->n_items) {
            memcpy(items, n->items, (size_t)n->n_items * sizeof items[0]);
            memcpy(names, n->names, (size_t)n->n_items * sizeof names[0]);
            memcpy(lens, n->name_lens, (size_t)n->n_items * sizeof lens[0]);
        }
        n->items = items, n->names = names, n->name_lens = lens;
    }
    n->names[n->n_items] = kw;
    n->name_lens[n->n_items] = kw_len;
    n->items[n->n_items++] = item;
    return true;
}

//===--- expressions ---===//

static chat_node_t *expr(parser_t *p);
static chat_node_t *unary(parser_t *p);

static chat_node_t *binary(parser_t *p, chat_kind_t kind, const chat_token_t *op, chat_node_t *a,
                           chat_node_t *b) {
    chat_node_t *n = a && b ? node(p, kind) : NULL;
    if (n) n->s = op->s, n->len = op->len, n->a = a, n->b = b;
    return n;
}

/* "(a, b, k=c)" after a callee or a filter: the arguments into n. */
static void call_args(parser_t *p, chat_node_t *n) {
    next(p); /* ( */
    while (p->st == RT_OK && !is_op(p, ")")) {
        const char *kw = NULL;
        size_t kw_len = 0;
        if (peek(p)->kind == TK_NAME && is(&p->t[p->i + 1 < p->n ? p->i + 1 : p->i], TK_OP, "=")) {
            kw = peek(p)->s, kw_len = peek(p)->len;
            next(p), next(p);
        }
        add_item(p, n, expr(p), kw, kw_len);
        if (!is_op(p, ")") && !expect_op(p, ",")) return;
    }
    expect_op(p, ")");
}

/* "[a, b]" or "{k: v, ...}" */
static chat_node_t *collection(parser_t *p, bool dict) {
    chat_node_t *n = node(p, dict ? E_DICT : E_LIST);
    next(p);
    const char *close = dict ? "}" : "]";
    while (n && p->st == RT_OK && !is_op(p, close)) {
        add_item(p, n, expr(p), NULL, 0);
        if (dict && expect_op(p, ":")) add_item(p, n, expr(p), NULL, 0);
        if (!is_op(p, close) && !expect_op(p, ",")) return NULL;
    }
    return expect_op(p, close) ? n : NULL;
}

static chat_node_t *primary(parser_t *p) {
    const chat_token_t *t = peek(p);
    chat_node_t *n = NULL;
    if (is_op(p, "(")) {
        next(p);
        n = expr(p);
        return expect_op(p, ")") ? n : NULL;
    }
    if (is_op(p, "[") || is_op(p, "{")) return collection(p, is_op(p, "{"));
    if (t->kind == TK_STRING) {
        if ((n = node(p, E_STR)) == NULL) return NULL;
        n->s = t->s, n->len = t->len;
        next(p);
        while (peek(p)->kind == TK_STRING) { /* 'a' 'b' is 'ab' */
            const chat_token_t *u = next(p);
            char *s = chat_alloc(p->arena, n->len + u->len + 1);
            if (s == NULL) return fail(p, "no memory");
            memcpy(s, n->s, n->len), memcpy(s + n->len, u->s, u->len);
            n->s = s, n->len += u->len;
        }
        return n;
    }
    if (t->kind == TK_INT || t->kind == TK_FLOAT) {
        if ((n = node(p, t->kind == TK_INT ? E_INT : E_FLOAT)) != NULL) n->i = t->i, n->f = t->f;
        next(p);
        return n;
    }
    if (t->kind != TK_NAME) return fail(p, "an expression expected");
    next(p);
    if (is(t, TK_NAME, "true") || is(t, TK_NAME, "True") || is(t, TK_NAME, "false") || is(t, TK_NAME, "False")) {
        if ((n = node(p, E_BOOL)) != NULL) n->i = t->s[0] == 't' || t->s[0] == 'T';
    } else if (is(t, TK_NAME, "none") || is(t, TK_NAME, "None")) {
        n = node(p, E_NONE);
    } else if ((n = node(p, E_NAME)) != NULL) {
        n->s = t->s, n->len = t->len;
    }
    return n;
}

/* "[i]" or "[a:b]" or "[a:b:step]" after subject (the step in items[0]). */
static chat_node_t *subscript(parser_t *p, chat_node_t *subject) {
    next(p); /* [ */
    chat_node_t *start = is_op(p, ":") ? NULL : expr(p);
    if (!is_op(p, ":")) {
        chat_node_t *n = node(p, E_INDEX);
        if (n) n->a = subject, n->b = start;
        return expect_op(p, "]") ? n : NULL;
    }
    next(p);
    chat_node_t *n = node(p, E_SLICE);
    if (n == NULL) return NULL;
    n->a = subject, n->b = start, n->c = is_op(p, "]") || is_op(p, ":") ? NULL : expr(p);
    if (is_op(p, ":")) { /* a step: [a:b:s] */
        next(p);
        if (!is_op(p, "]")) add_item(p, n, expr(p), NULL, 0);
    }
    return expect_op(p, "]") ? n : NULL;
}

static chat_node_t *postfix(parser_t *p, chat_node_t *n) {
    while (n && p->st == RT_OK) {
        if (is_op(p, ".")) {
            next(p);
            const chat_token_t *t = next(p);
            if (t->kind != TK_NAME) return fail(p, "a name expected after '.'");
            chat_node_t *m = node(p, E_ATTR);
            if (m) m->a = n, m->s = t->s, m->len = t->len;
            n = m;
        } else if (is_op(p, "[")) {
            n = subscript(p, n);
        } else if (is_op(p, "(")) {
            chat_node_t *m = node(p, E_CALL);
            if (m) m->a = n, call_args(p, m);
            n = m;
        } else {
            break;
        }
    }
    return n;
}

/* "| name(args)" and "is [not] name(args)" after n. */
static chat_node_t *filters(parser_t *p, chat_node_t *n) {
    while (n && p->st == RT_OK && (is_op(p, "|") || is_name(p, "is"))) {
        const bool test = is_name(p, "is");
        next(p);
        const bool negate = test && is_name(p, "not");
        if (negate) next(p);
        const chat_token_t *t = next(p);
        if (t->kind != TK_NAME) return fail(p, "a filter or test name expected");
        chat_node_t *m = node(p, test ? E_TEST : E_FILTER);
        if (m == NULL) return NULL;
        m->a = n, m->s = t->s, m->len = t->len, m->negate = negate;
        if (is_op(p, "(")) call_args(p, m);
        n = m;
    }
    return n;
}

static chat_node_t *unary(parser_t *p) {
    if (is_op(p, "-")) {
        next(p);
        chat_node_t *n = node(p, E_NEG);
        if (n) n->a = unary(p);
        return n && n->a ? n : NULL;
    }
    return filters(p, postfix(p, primary(p)));
}

/* One level of left-associative binary operators. */
static chat_node_t *level(parser_t *p, const char *const *ops, chat_node_t *(*sub)(parser_t *)) {
    chat_node_t *n = sub(p);
    for (bool more = true; n && more && p->st == RT_OK;) {
        more = false;
        for (const char *const *o = ops; *o; o++)
            if (is_op(p, *o)) {
                const chat_token_t *op = next(p);
                n = binary(p, E_BINARY, op, n, sub(p));
                more = true;
                break;
            }
    }
    return n;
}

/* Jinja's **: tighter than * and left-associative, over unary operands. */
static chat_node_t *power(parser_t *p) {
    static const char *const ops[] = {"**", NULL};
    return level(p, ops, unary);
}
static chat_node_t *mul(parser_t *p) {
    static const char *const ops[] = {"*", "/", "//", "%", NULL};
    return level(p, ops, power);
}
static chat_node_t *add(parser_t *p) {
    static const char *const ops[] = {"+", "-", NULL};
    return level(p, ops, mul);
}
static chat_node_t *concat(parser_t *p) {
    static const char *const ops[] = {"~", NULL};
    return level(p, ops, add);
}

static chat_node_t *compare(parser_t *p) {
    static const char *const ops[] = {"==", "!=", "<", ">", "<=", ">=", NULL};
    chat_node_t *n = level(p, ops, concat);
    while (n && p->st == RT_OK) {
        const bool not_in = is_name(p, "not") && is(&p->t[p->i + 1 < p->n ? p->i + 1 : p->i], TK_NAME, "in");
        if (!not_in && !is_name(p, "in")) break;
        if (not_in) next(p);
        const chat_token_t *op = next(p);
        n = binary(p, E_BINARY, op, n, concat(p));
        if (n && not_in) {
            chat_node_t *m = node(p, E_NOT);
            if (m) m->a = n;
            n = m;
        }
    }
    return n;
}

static chat_node_t *not_expr(parser_t *p) {
    if (!is_name(p, "not")) return compare(p);
    next(p);
    chat_node_t *n = node(p, E_NOT);
    if (n) n->a = not_expr(p);
    return n && n->a ? n : NULL;
}

static chat_node_t *and_expr(parser_t *p) {
    chat_node_t *n = not_expr(p);
    while (n && is_name(p, "and")) {
        const chat_token_t *op = next(p); /* before the operand: C leaves argument order open */
        n = binary(p, E_AND, op, n, not_expr(p));
    }
    return n;
}

static chat_node_t *or_expr(parser_t *p) {
    chat_node_t *n = and_expr(p);
    while (n && is_name(p, "or")) {
        const chat_token_t *op = next(p);
        n = binary(p, E_OR, op, n, and_expr(p));
    }
    return n;
}

static chat_node_t *expr(parser_t *p) {
    chat_node_t *n = or_expr(p);
    if (n == NULL || !is_name(p, "if")) return n;
    next(p);
    chat_node_t *c = node(p, E_COND);
    if (c == NULL) return NULL;
    c->a = n, c->b = or_expr(p);
    if (is_name(p, "else")) next(p), c->c = expr(p);
    return c->b ? c : NULL;
}

//===--- statements ---===//

static chat_node_t *block(parser_t *p, const char *const *stops, const chat_token_t **out_stop);

static bool end_tag(parser_t *p) {
    if (peek(p)->kind == TK_STMT_CLOSE) return next(p), true;
    fail(p, "'%}' expected");
    return false;
}

/* After "if COND %}": the branches up to endif (elif as a nested if). */
static chat_node_t *if_stmt(parser_t *p) {
    static const char *const stops[] = {"elif", "else", "endif", NULL};
    chat_node_t *n = node(p, N_IF);
    if (n == NULL || (n->a = expr(p)) == NULL || !end_tag(p)) return NULL;
    const chat_token_t *stop = NULL;
    n->b = block(p, stops, &stop);
    if (stop == NULL) return NULL;
    if (is(stop, TK_NAME, "elif")) {
        n->c = if_stmt(p);
        return n->c ? n : NULL;
    }
    if (is(stop, TK_NAME, "else")) {
        static const char *const endif[] = {"endif", NULL};
        if (!end_tag(p) || (n->c = block(p, endif, &stop)) == NULL) return NULL;
    }
    return end_tag(p) ? n : NULL;
}

/* After "for": "x in SEQ %}" or "k, v in SEQ %}", the body, else, endfor. */
static chat_node_t *for_stmt(parser_t *p) {
    static const char *const stops[] = {"else", "endfor", NULL}, *const end[] = {"endfor", NULL};
    chat_node_t *n = node(p, N_FOR);
    const chat_token_t *v = next(p);
    if (n == NULL || v->kind != TK_NAME) return fail(p, "a loop variable expected");
    n->s = v->s, n->len = v->len;
    if (is_op(p, ",")) {
        next(p);
        const chat_token_t *v2 = next(p);
        if (v2->kind != TK_NAME) return fail(p, "a second loop variable expected");
        n->var2 = v2->s, n->var2_len = v2->len;
    }
    if (!is_name(p, "in")) return fail(p, "'in' expected");
    next(p);
    if ((n->a = or_expr(p)) == NULL || !end_tag(p)) return NULL;
    const chat_token_t *stop = NULL;
    if ((n->b = block(p, stops, &stop)) == NULL) return NULL;
    if (is(stop, TK_NAME, "else") && (!end_tag(p) || (n->c = block(p, end, &stop)) == NULL)) return NULL;
    return end_tag(p) ? n : NULL;
}

/* After "set": "name = EXPR %}" or "obj.attr = EXPR %}". */
static chat_node_t *set_stmt(parser_t *p) {
    chat_node_t *n = node(p, N_SET);
    const chat_token_t *v = next(p);
    if (n == NULL || v->kind != TK_NAME) return fail(p, "a name expected after set");
    n->s = v->s, n->len = v->len;
    if (is_op(p, ".")) {
        next(p);
        const chat_token_t *attr = next(p);
        if (attr->kind != TK_NAME) return fail(p, "an attribute expected");
        n->var2 = attr->s, n->var2_len = attr->len;
    }
    if (!expect_op(p, "=") || (n->a = expr(p)) == NULL) return NULL;
    return end_tag(p) ? n : NULL;
}

/* "{% KEYWORD ..." with the open tag and keyword taken; NULL for a stop. */
static chat_node_t *statement(parser_t *p, const chat_token_t *kw) {
    if (is(kw, TK_NAME, "if")) return if_stmt(p);
    if (is(kw, TK_NAME, "for")) return for_stmt(p);
    if (is(kw, TK_NAME, "set")) return set_stmt(p);
    if (is(kw, TK_NAME, "generation") || is(kw, TK_NAME, "endgeneration")) { /* HF's marks: no output */
        chat_node_t *n = node(p, N_BLOCK);
        return end_tag(p) ? n : NULL;
    }
    return fail(p, "a statement this interpreter does not know");
}

/* Statements until one of stops (its keyword in *out_stop, the tag left
 * open) or the end (stops NULL). */
static chat_node_t *block(parser_t *p, const char *const *stops, const chat_token_t **out_stop) {
    chat_node_t *b = node(p, N_BLOCK);
    while (b && p->st == RT_OK) {
        const chat_token_t *t = next(p);
        if (t->kind == TK_EOF) {
            if (stops) return fail(p, "the template ends inside a block");
            return b;
        }
        chat_node_t *n = NULL;
        if (t->kind == TK_TEXT) {
            if ((n = node(p, N_TEXT)) != NULL) n->s = t->s, n->len = t->len;
        } else if (t->kind == TK_EXPR_OPEN) {
            if ((n = node(p, N_OUTPUT)) != NULL) n->a = expr(p);
            if (n && peek(p)->kind != TK_EXPR_CLOSE) return fail(p, "'}}' expected");
            next(p);
        } else if (t->kind == TK_STMT_OPEN) {
            const chat_token_t *kw = next(p);
            for (const char *const *s = stops; s && *s; s++)
                if (is(kw, TK_NAME, *s)) return *out_stop = kw, b;
            n = statement(p, kw);
        } else {
            return fail(p, "unexpected");
        }
        if (!add_item(p, b, n, NULL, 0)) return NULL;
    }
    return NULL;
}

rt_status_t chat_parse(const chat_token_t *tokens, int32_t n, chat_arena_t *a, chat_node_t **out_root) {
    parser_t p = {.t = tokens, .n = n, .arena = a};
    *out_root = block(&p, NULL, NULL);
    return p.st;
}
