/* SPDX-License-Identifier: MIT */
/* chat_template.c: rtm_chat_template_t, a parsed chat template (the
 * tokenizer.chat_template of a GGUF, Jinja), and the arena its pieces
 * live in: blocks of at least 16 KiB, each allocation rounded to 16 bytes,
 * freed all at once. See chat_impl.h for the three stages. */
#include "chat_impl.h"

#include <stdlib.h>
#include <string.h>

#define BLOCK_MIN (16 << 10)

struct chat_block {
    chat_block_t *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
};

void *chat_alloc(chat_arena_t *a, size_t n) {
    if (n > CHAT_ARENA_MAX) return NULL; /* before the rounding could wrap */
    n = (n + 15) & ~(size_t)15;
    chat_block_t *b = a->head;
    if (b == NULL || b->cap - b->used < n) {
        const size_t cap = n > BLOCK_MIN ? n : BLOCK_MIN;
        if (cap > CHAT_ARENA_MAX - a->total || (b = malloc(sizeof *b + cap)) == NULL) return NULL;
        *b = (chat_block_t){.next = a->head, .cap = cap};
        a->head = b;
        a->total += cap;
    }
    void *p = b->data + b->used;
    b->used += n;
    return memset(p, 0, n);
}

void chat_arena_free(chat_arena_t *a) {
    for (chat_block_t *b = a->head, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    a->head = NULL;
    a->total = 0;
}

struct rtm_chat_template {
    chat_arena_t arena;  /* the source's copy, the tokens, the tree */
    chat_node_t *root;
};

rt_status_t rtm_chat_template_create(const char *source, rtm_chat_template_t **out) {
    if (out) *out = NULL;
    if (source == NULL || out == NULL)
        return rtm_error(RT_ERR_INVALID_ARGUMENT, "rtm_chat_template_create: NULL source or out");
    rtm_chat_template_t *t = calloc(1, sizeof *t);
    if (t == NULL) return rtm_error(RT_ERR_OUT_OF_MEMORY, "rtm_chat_template_create: no memory");
    const size_t len = strlen(source);
    char *copy = chat_alloc(&t->arena, len + 1);
    chat_token_t *tokens = NULL;
    int32_t n = 0;
    rt_status_t st = copy ? RT_OK : rtm_error(RT_ERR_OUT_OF_MEMORY, "rtm_chat_template_create: no memory");
    if (st == RT_OK) st = chat_lex(memcpy(copy, source, len + 1), &t->arena, &tokens, &n);
    if (st == RT_OK) st = chat_parse(tokens, n, &t->arena, &t->root);
    if (st != RT_OK) {
        rtm_chat_template_destroy(t);
        return st;
    }
    *out = t;
    return RT_OK;
}

void rtm_chat_template_destroy(rtm_chat_template_t *t) {
    if (t == NULL) return;
    chat_arena_free(&t->arena);
    free(t);
}

rt_status_t rtm_chat_template_apply(const rtm_chat_template_t *t, const rtm_chat_message_t *messages,
                                    int32_t n_messages, const rtm_chat_render_params_t *params,
                                    char *buf, size_t size, size_t *out_len) {
    if (out_len) *out_len = 0;
    if (t == NULL || (messages == NULL && n_messages > 0) || n_messages < 0 || out_len == NULL ||
        (buf == NULL && size > 0))
        return rtm_error(RT_ERR_INVALID_ARGUMENT, "rtm_chat_template_apply: bad arguments");
    for (int32_t i = 0; i < n_messages; i++)
        if (messages[i].role == NULL || messages[i].content == NULL)
            return rtm_error(RT_ERR_INVALID_ARGUMENT, "rtm_chat_template_apply: message %d has no role "
                             "or content", i);
    rtm_chat_render_params_t p = {0};
    rtm_params_copy(&p, sizeof p, params);
    return chat_render(t->root, messages, n_messages, &p, buf, size, out_len);
}
