/* SPDX-License-Identifier: MIT */
/* run.h: one rt-run session, shared by its completion (rt-run.c) and its
 * chat (run_chat.c): the loaded model and context, the sampler, and the
 * two steps both are made of, feeding tokens and generating a reply. */
#ifndef RT_TOOLS_RUN_H
#define RT_TOOLS_RUN_H

#include "../abi/rt.h"
#include "../model/rt_model.h"
#include "../dist/rt_dist.h"
#include "out_file.h"
#include "run_options.h"
#include "stop_text.h"

typedef struct run {
    const run_options_t *o;
    rtd_t *dist;              /* NULL: this process runs alone */
    rt_registry_t *reg;
    rtm_model_t *model;
    char model_file[4096];    /* the GGUF loaded */
    rtm_context_t *ctx;
    rtm_sampler_t *sampler;
    rtm_grammar_t *grammar;   /* --grammar: the sampler's; NULL without */
    rt_out_file_t dump;       /* dump.f is NULL without --dump-logits */
    rtm_token_t *prompt;
    int32_t n_prompt, n_generated;
    double t_prompt, t_gen;   /* seconds */
    rt_stop_text_t stop;      /* during run_generate */
    bool stopped;             /* the last run_generate ended on a stop string */
    bool capture;             /* run_generate's text also goes into reply */
    char *reply;              /* malloc'd, reply_len bytes (NUL-terminated) */
    size_t reply_len, reply_cap;
    bool reply_failed;        /* no memory for the reply */
    double measured_s[2][RT_SCHED_MAX_DEVICES]; /* --explain: each device's prompt, decode seconds */
} run_t;

/* One line on stderr ("rt-run: ..."); returns the exit status 1. */
int run_fail(const char *fmt, ...) RT_PRINTF(1, 2);
/* Decodes n tokens after those in the cache; the sampler's history gets
 * them all. 0, or 1 after a message. */
int run_feed(run_t *r, const rtm_token_t *tokens, int32_t n);
/* Samples after the last feed until end of generation, a stop string, the
 * context's end, n_max tokens (< 0: no limit) or, with --grammar, the
 * grammar's end (it starts again at each call: a chat's every reply is
 * held to it); the text goes to stdout.
 * Each token chosen (the end-of-generation one too) is fed back, so the
 * cache holds the whole exchange. 0, or 1 after a message. */
int run_generate(run_t *r, int32_t n_max);
/* --explain (run_explain.c): the job the plan weighs into mp; the
 * scheduler's times per device once a phase (0 prompt, 1 decode; -1: none
 * yet) is over, timing the next; the measured and predicted times. */
void run_explain_job(const run_t *r, rtm_model_params_t *mp);
void run_explain_phase(run_t *r, int phase);
void run_explain_report(const run_t *r);
/* -cnv: the chat loop on stdin (run_chat.c). */
int run_chat(run_t *r);

#endif /* RT_TOOLS_RUN_H */
