/* SPDX-License-Identifier: MIT */
/* server_gen.h: one request's generation in rt-server, a step at a time,
 * so that a streamed response can send each piece as it comes: begin
 * feeds the prompt into a cleared context, each step samples one token,
 * feeds it back, and leaves the text it adds (after the stop strings) in
 * out. Requests are served one at a time over the server's one context. */
#ifndef RT_TOOLS_SERVER_GEN_H
#define RT_TOOLS_SERVER_GEN_H

#include "../model/rt_model.h"
#include "stop_text.h"

typedef struct srv_gen {
    const rtm_model_t *model;
    rtm_context_t *ctx;
    rtm_sampler_t *sampler;
    rt_stop_text_t stop;
    int32_t max_tokens;       /* < 0: until end of generation or a full context */
    int32_t n_prompt, n_generated;
    bool done;
    const char *finish;       /* "stop" or "length" once done */
    char *out;                /* the text of the last step; out_len bytes, NUL-terminated */
    size_t out_len, out_cap;
    bool out_failed;
} srv_gen_t;

/* RT_ERR_DOES_NOT_FIT when the prompt does not fit the context (message
 * for rtm_last_error()), RT_ERR_INVALID_ARGUMENT for bad sampling. */
rt_status_t srv_gen_begin(srv_gen_t *g, const rtm_model_t *model, rtm_context_t *ctx, const char *prompt,
                          bool parse_special, int32_t max_tokens, const rtm_sampler_params_t *sampling,
                          const char *const *stops, int32_t n_stops);
/* One token; g->out holds what it adds to the text (maybe nothing). */
rt_status_t srv_gen_step(srv_gen_t *g);
void srv_gen_end(srv_gen_t *g);

#endif /* RT_TOOLS_SERVER_GEN_H */
