/* SPDX-License-Identifier: MIT */
/* chat_lex.c: a chat template's source as tokens. Outside tags the text is
 * kept as it is, but for the whitespace rules of HF's renderer (Jinja with
 * trim_blocks and lstrip_blocks): "{%-"/"{{-"/"{#-" strip the whitespace
 * before the tag, "-%}"/"-}}"/"-#}" the whitespace after it; a block or
 * comment tag drops the one newline after it, and the spaces and tabs
 * between the line's start and the tag. Comments produce no token. */
#include "chat_impl.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

typedef struct lexer {
    const char *src, *p, *end;
    int line;
    chat_arena_t *arena;
    chat_token_t *toks;
    int32_t n, cap;
    bool lstrip_next;   /* "-" closed the last tag: strip all whitespace after */
    bool trim_newline;  /* a block or comment tag closed: drop one newline after */
} lexer_t;

static chat_token_t *push(lexer_t *l, chat_tk_t kind, const char *s, size_t len) {
    if (l->n == l->cap) {
        const int32_t cap = l->cap ? l->cap * 2 : 256;
        chat_token_t *t = chat_alloc(l->arena, (size_t)cap * sizeof t[0]);
        if (t == NULL) return NULL;
        if (l->n) memcpy(t, l->toks, (size_t)l->n * sizeof t[0]);
        l->toks = t;
        l->cap = cap;
    }
    chat_token_t *t = &l->toks[l->n++];
    *t = (chat_token_t){.kind = kind, .s = s, .len = len, .line = l->line};
    return t;
}

static void count_lines(lexer_t *l, const char *from, const char *to) {
    for (const char *q = from; q < to; q++) l->line += *q == '\n';
}

/* The text before a tag at p, trimmed as that tag and the last one ask. */
static rt_status_t text(lexer_t *l, const char *s, const char *e, char open_kind, bool dash) {
    count_lines(l, s, e);
    if (l->lstrip_next) while (s < e && isspace((unsigned char)*s)) s++;
    else if (l->trim_newline && s < e && *s == '\n') s++;
    else if (l->trim_newline && e - s >= 2 && s[0] == '\r' && s[1] == '\n') s += 2;
    l->lstrip_next = l->trim_newline = false;
    if (dash) {
        while (e > s && isspace((unsigned char)e[-1])) e--;
    } else if (open_kind == '%' || open_kind == '#') { /* lstrip_blocks */
        const char *q = e;
        while (q > s && (q[-1] == ' ' || q[-1] == '\t')) q--;
        if (q == l->src || q[-1] == '\n') e = q; /* the tag starts its line */
    }
    return e > s && push(l, TK_TEXT, s, (size_t)(e - s)) == NULL ? RT_ERR_OUT_OF_MEMORY : RT_OK;
}

static rt_status_t lex_error(const lexer_t *l, const char *what) {
    return rtm_error(RT_ERR_FORMAT, "chat template, line %d: %s", l->line, what);
}

static const char *const ops2[] = {"==", "!=", "<=", ">=", "//", "**"};

/* A string literal at l->p (quote included), decoded into the arena. */
static rt_status_t string_literal(lexer_t *l) {
    const char q = *l->p++;
    const char *s = l->p;
    while (l->p < l->end && *l->p != q) l->p += *l->p == '\\' && l->p + 1 < l->end ? 2 : 1;
    if (l->p >= l->end) return lex_error(l, "a string is not closed");
    char *out = chat_alloc(l->arena, (size_t)(l->p - s) + 1);
    if (out == NULL) return RT_ERR_OUT_OF_MEMORY;
    size_t n = 0;
    for (const char *c = s; c < l->p; c++) {
        if (*c != '\\') {
            l->line += *c == '\n';
            out[n++] = *c;
            continue;
        }
        switch (*++c) {
        case 'n': out[n++] = '\n'; break;
        case 't': out[n++] = '\t'; break;
        case 'r': out[n++] = '\r'; break;
        default: out[n++] = *c; break; /* \\ \' \" and the rest as themselves */
        }
    }
    l->p++;
    return push(l, TK_STRING, out, n) ? RT_OK : RT_ERR_OUT_OF_MEMORY;
}

static rt_status_t number(lexer_t *l) {
    char *end;
    const char *s = l->p;
    const long long i = strtoll(s, &end, 10);
    chat_token_t *t;
    if (*end == '.' && isdigit((unsigned char)end[1])) {
        const double f = strtod(s, &end);
        if ((t = push(l, TK_FLOAT, s, (size_t)(end - s))) != NULL) t->f = f;
    } else if ((t = push(l, TK_INT, s, (size_t)(end - s))) != NULL) t->i = i;
    l->p = end;
    return t ? RT_OK : RT_ERR_OUT_OF_MEMORY;
}

/* One token inside a tag; *closed when it was the tag's end. */
static rt_status_t inner(lexer_t *l, char kind, bool *closed) {
    const char *p = l->p;
    const char close = kind == '{' ? '}' : '%';
    const bool dash = p[0] == '-' && l->end - p >= 3 && p[1] == close && p[2] == '}';
    if (dash || (l->end - p >= 2 && p[0] == close && p[1] == '}')) {
        l->p += dash ? 3 : 2;
        *closed = true;
        l->lstrip_next = dash;
        l->trim_newline = !dash && kind == '%';
        return push(l, kind == '{' ? TK_EXPR_CLOSE : TK_STMT_CLOSE, p, 2) ? RT_OK : RT_ERR_OUT_OF_MEMORY;
    }
    if (*p == '\'' || *p == '"') return string_literal(l);
    if (isdigit((unsigned char)*p)) return number(l);
    if (isalpha((unsigned char)*p) || *p == '_') {
        while (l->p < l->end && (isalnum((unsigned char)*l->p) || *l->p == '_')) l->p++;
        return push(l, TK_NAME, p, (size_t)(l->p - p)) ? RT_OK : RT_ERR_OUT_OF_MEMORY;
    }
    for (size_t i = 0; i < sizeof ops2 / sizeof ops2[0]; i++)
        if (l->end - p >= 2 && memcmp(p, ops2[i], 2) == 0) {
            l->p += 2;
            return push(l, TK_OP, p, 2) ? RT_OK : RT_ERR_OUT_OF_MEMORY;
        }
    if (strchr("()[]{}.,:|+-*/%~<>=!", *p) == NULL) return lex_error(l, "unexpected character in a tag");
    l->p++;
    return push(l, TK_OP, p, 1) ? RT_OK : RT_ERR_OUT_OF_MEMORY;
}

/* A tag at l->p ("{{", "{%" or "{#"), the text before it already pushed. */
static rt_status_t tag(lexer_t *l) {
    const char kind = l->p[1];
    l->p += 2 + (l->p[2] == '-' || l->p[2] == '+');
    if (kind == '#') {
        const char *e = strstr(l->p, "#}");
        if (e == NULL || e > l->end) return lex_error(l, "a comment is not closed");
        count_lines(l, l->p, e);
        l->lstrip_next = e > l->p && e[-1] == '-';
        l->trim_newline = !l->lstrip_next;
        l->p = e + 2;
        return RT_OK;
    }
    if (push(l, kind == '{' ? TK_EXPR_OPEN : TK_STMT_OPEN, l->p, 2) == NULL) return RT_ERR_OUT_OF_MEMORY;
    for (bool closed = false; !closed;) {
        while (l->p < l->end && isspace((unsigned char)*l->p)) l->line += *l->p++ == '\n';
        if (l->p >= l->end) return lex_error(l, "a tag is not closed");
        const rt_status_t st = inner(l, kind, &closed);
        if (st != RT_OK) return st;
    }
    return RT_OK;
}

/* The next tag's start at or after p, or end. */
static const char *next_tag(const char *p, const char *end) {
    for (; p + 1 < end; p++)
        if (p[0] == '{' && (p[1] == '{' || p[1] == '%' || p[1] == '#')) return p;
    return end;
}

rt_status_t chat_lex(const char *src, chat_arena_t *a, chat_token_t **out, int32_t *out_n) {
    lexer_t l = {.src = src, .p = src, .end = src + strlen(src), .line = 1, .arena = a};
    rt_status_t st = RT_OK;
    while (st == RT_OK && l.p < l.end) {
        const char *t = next_tag(l.p, l.end);
        const bool dash = t + 2 < l.end && t[2] == '-';
        const bool plus = t + 2 < l.end && t[2] == '+'; /* "{%+": no lstrip */
        st = text(&l, l.p, t, plus || t == l.end ? '{' : t[1], dash);
        l.p = t;
        if (st == RT_OK && t < l.end) st = tag(&l);
    }
    if (st == RT_OK && push(&l, TK_EOF, l.p, 0) == NULL) st = RT_ERR_OUT_OF_MEMORY;
    *out = l.toks;
    *out_n = l.n;
    return st;
}
