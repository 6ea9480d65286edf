/* SPDX-License-Identifier: MIT */
/* server_gen.h: one request's generation in rt-server, a token at a time:
 * begin tokenizes the prompt (prompt[], which the decode loop feeds into
 * the request's sequence, server_slots.c) and sets up its sampler and stop
 * strings; each call of next takes the logits that the sequence's last
 * token gave, samples, and leaves the text the token adds (after the stop
 * strings, whole UTF-8 characters) in out, its log-probability in lp when
 * asked, and the token to feed in next, until done. Nothing here decodes:
 * the slots batch every request's tokens into one decode. A generation may
 * be copied by value (it owns only heap memory). */
#ifndef RT_TOOLS_SERVER_GEN_H
#define RT_TOOLS_SERVER_GEN_H

#include "../model/rt_model.h"
#include "server_request.h"
#include "stop_text.h"

/* A generated token's log-probability under the model (the logits before
 * any sampling filter) and its n_top likeliest alternatives, best first. */
typedef struct srv_logprob {
    rtm_token_t token;
    float logprob;
    int32_t n_top;
    rtm_token_t top[SRV_MAX_TOP_LOGPROBS];
    float top_logprob[SRV_MAX_TOP_LOGPROBS];
} srv_logprob_t;

typedef struct srv_gen_params {
    const char *prompt;
    bool parse_special;       /* the prompt's special-token texts are tokens (chat) */
    int32_t max_tokens;       /* < 0: until end of generation or a full context */
    const rtm_sampler_params_t *sampling;
    const char *const *stops; /* copied */
    int32_t n_stops;
    int32_t logprobs;         /* < 0: none; else lp each step with this many alternatives */
} srv_gen_params_t;

typedef struct srv_gen {
    const rtm_model_t *model;
    rtm_sampler_t *sampler;
    rt_stop_text_t stop;
    int32_t max_tokens;       /* < 0: until end of generation or a full context */
    int32_t n_ctx;            /* positions the request's sequence may hold */
    int32_t logprobs;         /* see srv_gen_params_t */
    rtm_token_t *prompt;      /* n_prompt tokens, malloc'd */
    int32_t n_prompt, n_generated;
    rtm_token_t next;         /* the token to feed (not done) */
    bool done;
    const char *finish;       /* "stop" or "length" once done */
    bool context_full;        /* "length" because the sequence's n_ctx positions are held */
    char *out;                /* the text of the last step; out_len bytes, NUL-terminated */
    size_t out_len, out_cap;
    bool out_failed;
    bool has_lp;              /* the last step chose a token of the text: lp is its */
    srv_logprob_t lp;
} srv_gen_t;

/* The prompt tokenized (add_special; parse_special for chat), the stop
 * strings copied. RT_ERR_DOES_NOT_FIT when the prompt does not leave room
 * in n_ctx positions, RT_ERR_INVALID_ARGUMENT for bad sampling,
 * RT_ERR_OUT_OF_MEMORY. */
rt_status_t srv_gen_begin(srv_gen_t *g, const rtm_model_t *model, int32_t n_ctx, const srv_gen_params_t *p);
/* One token from the logits of the sequence's last token, n_past
 * positions held: g->out holds what it adds to the text (maybe nothing);
 * g->done, or g->next is the token to feed. RT_ERR_OUT_OF_MEMORY when the
 * text could not be kept. */
rt_status_t srv_gen_next(srv_gen_t *g, const float *logits, int32_t n_past);
void srv_gen_end(srv_gen_t *g);

#endif /* RT_TOOLS_SERVER_GEN_H */
