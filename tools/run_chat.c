/* SPDX-License-Identifier: MIT */
/* run_chat.c: rt-run -cnv, a chat on stdin. The conversation (the -sys
 * system message, each line read as a user message, each reply as the
 * assistant's) is rendered with the model's own tokenizer.chat_template
 * (rtm_chat_template_t) after every line, and only what the rendering
 * adds to the previous one (the last reply's end, the new user turn, the
 * assistant's opening) is tokenized, special tokens parsed, and fed: the
 * KV cache keeps the whole exchange, as llama.cpp's chat does. A reply
 * ends at end of generation (EOS/EOT, the token fed so the next turn
 * follows it), a -r stop string, -n tokens or a full context. */
#include "run.h"
#include "chat_source.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_TURNS 1024
#define MAX_LINE (1 << 20)

typedef struct chat {
    run_t *r;
    rtm_chat_template_t *tmpl;
    rtm_chat_message_t msgs[MAX_TURNS];
    char *owned[MAX_TURNS];     /* the texts the chat copied (NULL for borrowed ones) */
    int32_t n;
    char *prev;                 /* the last rendering, fed to the model already */
    size_t prev_len;
    bool started;               /* the first piece (with BOS) is fed */
    bool full;                  /* the context has no room for the next turn: the chat ends */
} chat_t;

/* --chat-template's, else the model file's tokenizer.chat_template, parsed. */
static int load_template(chat_t *c) {
    char *src = NULL, origin[256], names[128];
    if (!rt_chat_source("rt-run", c->r->o->chat_template, c->r->model_file, &src, origin, sizeof origin)) return 1;
    int rc = src ? 0 : run_fail("-cnv: %s has no tokenizer.chat_template; name its format with --chat-template (%s) "
                                "or give a template file", c->r->model_file, rt_chat_source_names(names, sizeof names));
    if (rc == 0 && rtm_chat_template_create(src, &c->tmpl) != RT_OK) rc = run_fail("%s: %s", origin, rtm_last_error());
    free(src);
    return rc;
}

static int add_message(chat_t *c, const char *role, const char *text) {
    if (c->n == MAX_TURNS) return run_fail("-cnv: more than %d messages", MAX_TURNS);
    char *copy = strdup(text);
    if (copy == NULL) return run_fail("no memory for a message");
    c->owned[c->n] = copy;
    c->msgs[c->n++] = (rtm_chat_message_t){role, copy};
    return 0;
}

/* The conversation rendered, malloc'd into *out. */
static int render(chat_t *c, bool gen_prompt, char **out, size_t *out_len) {
    const rtm_vocab_t *v = rtm_model_vocab(c->r->model);
    const rtm_chat_render_params_t p = {.struct_size = sizeof p, .add_generation_prompt = gen_prompt,
                                        .bos_token = rtm_vocab_token_text(v, rtm_vocab_bos(v)),
                                        .eos_token = rtm_vocab_token_text(v, rtm_vocab_eos(v))};
    size_t len = 0;
    rt_status_t st = rtm_chat_template_apply(c->tmpl, c->msgs, c->n, &p, NULL, 0, &len);
    if (st == RT_ERR_DOES_NOT_FIT && (*out = malloc(len + 1)) != NULL)
        st = rtm_chat_template_apply(c->tmpl, c->msgs, c->n, &p, *out, len + 1, &len);
    if (st != RT_OK) return run_fail("%s", st == RT_ERR_DOES_NOT_FIT ? "no memory" : rtm_last_error());
    *out_len = len;
    return 0;
}

/* Tokenizes text (special tokens parsed; BOS first on the first piece)
 * and feeds it. */
static int feed_text(chat_t *c, const char *text, size_t len) {
    run_t *r = c->r;
    const rtm_vocab_t *v = rtm_model_vocab(r->model);
    int32_t n = 0;
    rtm_vocab_tokenize(v, text, len, !c->started, true, NULL, 0, &n);
    if (n == 0) return 0;
    rtm_token_t *t = malloc((size_t)n * sizeof t[0]);
    if (t == NULL) return run_fail("no memory for %d tokens", n);
    int rc = rtm_vocab_tokenize(v, text, len, !c->started, true, t, n, &n) == RT_OK
                 ? 0 : run_fail("%s", rtm_last_error());
    if (rc == 0 && rtm_context_n_past(r->ctx) + n >= rtm_context_n_ctx(r->ctx)) {
        fprintf(stderr, "rt-run: the context of %d tokens is full: the chat ends here (-c raises it)\n",
                rtm_context_n_ctx(r->ctx));
        c->full = true;
        free(t);
        return 0;
    }
    if (rc == 0) rc = run_feed(r, t, n);
    r->n_prompt += rc == 0 ? n : 0;
    c->started = true;
    free(t);
    return rc;
}

/* One user message in, the assistant's reply out. */
static int turn(chat_t *c, const char *user) {
    char *now = NULL;
    size_t len = 0;
    int rc = add_message(c, "user", user);
    if (rc == 0) rc = render(c, true, &now, &len);
    /* A template may render the past differently once more follows; then
     * only the common prefix is known to be in the cache. */
    const bool same_past = len >= c->prev_len &&
                           (c->prev_len == 0 || memcmp(now, c->prev, c->prev_len) == 0);
    if (rc == 0 && !same_past)
        rc = run_fail("-cnv: the template changed the conversation's past; not supported");
    if (rc == 0) rc = feed_text(c, now + c->prev_len, len - c->prev_len);
    free(now);
    if (c->full) return rc;
    run_t *r = c->r;
    r->capture = true;
    r->reply_len = 0;
    if (r->reply) r->reply[0] = 0;
    if (rc == 0) rc = run_generate(r, r->o->n_predict);
    r->capture = false;
    fputc('\n', stdout);
    fflush(stdout);
    if (rc == 0 && r->reply_failed) rc = run_fail("no memory for the reply");
    if (rc == 0) rc = add_message(c, "assistant", r->reply ? r->reply : "");
    free(c->prev);
    c->prev = NULL;
    if (rc == 0) rc = render(c, false, &c->prev, &c->prev_len);
    return rc;
}

/* One line of stdin without its newline, malloc'd; NULL at the end. */
static char *read_line(void) {
    char *line = NULL;
    size_t cap = 0;
    ssize_t n = getline(&line, &cap, stdin);
    if (n < 0 || n > MAX_LINE) {
        free(line);
        return NULL;
    }
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
    return line;
}

int run_chat(run_t *r) {
    chat_t c = {.r = r};
    int rc = load_template(&c);
    if (rc == 0 && r->o->system_prompt) rc = add_message(&c, "system", r->o->system_prompt);
    if (rc == 0 && r->o->prompt_given) {
        if (r->o->color && isatty(STDOUT_FILENO)) printf("\033[32m> %s\033[0m\n", r->o->prompt);
        rc = turn(&c, r->o->prompt);
    }
    const bool tty = isatty(STDIN_FILENO);
    while (rc == 0 && !c.full) {
        if (tty) fputs(r->o->color ? "\033[32m> " : "> ", stdout), fflush(stdout);
        char *line = read_line();
        if (tty && r->o->color) fputs("\033[0m", stdout);
        if (line == NULL) break;
        if (line[0]) rc = turn(&c, line);
        free(line);
    }
    for (int32_t i = 0; i < c.n; i++) free(c.owned[i]);
    free(c.prev);
    rtm_chat_template_destroy(c.tmpl);
    return rc;
}
