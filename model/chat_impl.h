/* SPDX-License-Identifier: MIT */
/* chat_impl.h: the chat template interpreter's shared types. A template
 * (Jinja, the subset real chat templates use) goes through three files:
 * chat_lex.c cuts the source into tokens (text between tags, and inside
 * {{ }} and {% %} names, literals and operators), applying the whitespace
 * rules HF's renderer uses (trim_blocks, lstrip_blocks, "-" on a tag);
 * chat_parse.c builds the tree of nodes; chat_eval.c renders it against
 * the messages. Everything a template or a rendering allocates lives in
 * one arena, freed at once. */
#ifndef RTM_CHAT_IMPL_H
#define RTM_CHAT_IMPL_H

#include "internal.h"

#include <stddef.h>
#include <stdint.h>

//===--- arena ---===//

/* The most bytes one arena holds: a template's tree is a few times its
 * text, a rendering of real conversations far less; a template that
 * doubles a string forty times fails ("no memory") instead of taking the
 * machine's memory. */
#define CHAT_ARENA_MAX ((size_t)64 << 20)

typedef struct chat_block chat_block_t;
typedef struct chat_arena {
    chat_block_t *head;
    size_t total;        /* bytes of the blocks */
} chat_arena_t;
/* n zeroed bytes, NULL when out of memory or past CHAT_ARENA_MAX. */
RTM_INTERNAL void *chat_alloc(chat_arena_t *a, size_t n);
RTM_INTERNAL void chat_arena_free(chat_arena_t *a);

//===--- tokens (chat_lex.c) ---===//

typedef enum {
    TK_EOF, TK_TEXT, TK_EXPR_OPEN, TK_EXPR_CLOSE, TK_STMT_OPEN, TK_STMT_CLOSE,
    TK_NAME, TK_STRING, TK_INT, TK_FLOAT, TK_OP
} chat_tk_t;

typedef struct chat_token {
    chat_tk_t kind;
    const char *s;   /* TEXT, NAME, OP: into the source; STRING: decoded, in the arena */
    size_t len;
    int64_t i;
    double f;
    int line;
} chat_token_t;

/* The tokens of src (ending in TK_EOF) in *out; RT_ERR_FORMAT with the
 * line for an unclosed tag or string. */
RTM_INTERNAL rt_status_t chat_lex(const char *src, chat_arena_t *a, chat_token_t **out, int32_t *out_n);

//===--- nodes (chat_parse.c) ---===//

typedef enum {
    /* statements */
    N_BLOCK, N_TEXT, N_OUTPUT, N_IF, N_FOR, N_SET,
    /* expressions */
    E_STR, E_INT, E_FLOAT, E_BOOL, E_NONE, E_NAME, E_ATTR, E_INDEX, E_SLICE, E_CALL, E_FILTER,
    E_TEST, E_NOT, E_NEG, E_BINARY, E_AND, E_OR, E_COND, E_LIST, E_DICT
} chat_kind_t;

/* One node. s/len: text, name, string, operator, attribute, filter or test
 * name. a, b, c: the operands (IF: condition, then, else; FOR: the
 * sequence, body, else; SET: value; SLICE: subject, start, stop; COND:
 * then, condition, else). items: a block's statements, a call's or
 * filter's arguments, a list's items, a dict's keys and values in turn;
 * names[i] is argument i's keyword or NULL. */
typedef struct chat_node chat_node_t;
struct chat_node {
    chat_kind_t kind;
    int line;
    const char *s;
    size_t len;
    int64_t i;
    double f;
    bool negate;              /* E_TEST: "is not" */
    chat_node_t *a, *b, *c;
    chat_node_t **items;
    const char **names;
    size_t *name_lens;
    int32_t n_items;
    const char *var2;         /* N_FOR: the second name of "for k, v in" */
    size_t var2_len;
};

RTM_INTERNAL rt_status_t chat_parse(const chat_token_t *tokens, int32_t n, chat_arena_t *a,
                                    chat_node_t **out_root);

//===--- rendering (chat_eval.c) ---===//

RTM_INTERNAL rt_status_t chat_render(const chat_node_t *root, const rtm_chat_message_t *messages,
                                     int32_t n_messages, const rtm_chat_render_params_t *p,
                                     char *buf, size_t size, size_t *out_len);

#endif /* RTM_CHAT_IMPL_H */
