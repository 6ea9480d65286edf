/* SPDX-License-Identifier: MIT */
/* chat_eval.h: the rendering state and the values chat_eval.c and
 * chat_call.c (functions, methods, filters, tests) share. */
#ifndef RTM_CHAT_EVAL_H
#define RTM_CHAT_EVAL_H

#include "chat_impl.h"

typedef enum { V_UNDEF, V_NONE, V_BOOL, V_INT, V_FLOAT, V_STR, V_LIST, V_DICT } chat_vkind_t;

/* A value. STR: s[0..n); LIST: items[0..n); DICT: keys[i] (strings) to
 * items[i], n pairs; BOOL and INT in i. Contents are borrowed (the arena,
 * the template, the caller's messages). */
typedef struct chat_value chat_value_t;
struct chat_value {
    chat_vkind_t kind;
    int64_t i;
    double f;
    const char *s;
    int64_t n;
    chat_value_t *items, *keys;
};

#define CHAT_SCOPE_MAX 64

typedef struct chat_scope chat_scope_t;
struct chat_scope {
    chat_scope_t *up;
    int32_t n;
    const char *names[CHAT_SCOPE_MAX];
    size_t lens[CHAT_SCOPE_MAX];
    chat_value_t values[CHAT_SCOPE_MAX];
};

/* Statements one rendering may run: real templates run a few per
 * message; a file's template that loops without end (nested loops, a
 * range of billions) fails instead of hanging the program. */
#define CHAT_MAX_STEPS (1 << 20)

/* The output is buf[0..size) (the rest counted in len, not written). */
typedef struct chat_eval {
    chat_arena_t *arena;
    chat_scope_t *scope;
    char *buf;
    size_t size, len;
    int64_t steps;        /* statements run */
    rt_status_t st;       /* the first failure; evaluation stops there */
} chat_eval_t;

RTM_INTERNAL rt_status_t chat_fail(chat_eval_t *e, int line, const char *fmt, ...) RT_PRINTF(3, 4);
RTM_INTERNAL chat_value_t chat_eval(chat_eval_t *e, const chat_node_t *n);
RTM_INTERNAL chat_value_t chat_str(chat_eval_t *e, const char *s, size_t len);
RTM_INTERNAL chat_value_t chat_list(chat_eval_t *e, int64_t n);
RTM_INTERNAL bool chat_truthy(const chat_value_t *v);
RTM_INTERNAL bool chat_equal(const chat_value_t *a, const chat_value_t *b);
RTM_INTERNAL double chat_number(const chat_value_t *v);
RTM_INTERNAL chat_value_t chat_dict_get(const chat_value_t *d, const char *key, size_t len);
RTM_INTERNAL chat_value_t chat_to_string(chat_eval_t *e, const chat_value_t *v);
RTM_INTERNAL void chat_emit(chat_eval_t *e, const char *s, size_t len);
RTM_INTERNAL chat_value_t chat_lookup(const chat_eval_t *e, const char *name, size_t len);
RTM_INTERNAL void chat_assign(chat_eval_t *e, const char *name, size_t len, chat_value_t v);

/* chat_call.c */
RTM_INTERNAL chat_value_t chat_call(chat_eval_t *e, const chat_node_t *n);
RTM_INTERNAL chat_value_t chat_filter(chat_eval_t *e, const chat_node_t *n);
RTM_INTERNAL chat_value_t chat_test(chat_eval_t *e, const chat_node_t *n);
/* A string's characters as a list of one-character strings. */
RTM_INTERNAL chat_value_t chat_call_list_of(chat_eval_t *e, const chat_value_t *s);
/* v as text: JSON (Python's json.dumps: ", " and ": " separators, with
 * indent > 0 a newline and that many spaces a level) or, not json,
 * Python's repr of lists and dicts ('single' quotes, True, None). */
RTM_INTERNAL chat_value_t chat_serialize(chat_eval_t *e, const chat_value_t *v, bool json, int indent);

#endif /* RTM_CHAT_EVAL_H */
