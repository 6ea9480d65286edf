/* SPDX-License-Identifier: MIT */
/* server_request.h: an OpenAI request body (/v1/completions,
 * /v1/chat/completions) read into what rt-server generates. Every field
 * the body holds is either honoured, read into srv_request_t, or refused
 * with a message that names it: a client is never answered as if a field
 * it sent had been applied when it was not. A field set to null or to its
 * "off" value (tools: [], logprobs: false, response_format text, ...) is
 * the same as one left out. Numbers outside their range are refused by
 * name too (max_tokens 2^32 + 2 is not 2).
 *
 *     srv_request_t q;
 *     if (!srv_request_parse(&q, &info, chat, body, len))
 *         answer 400 with q.error, naming q.param;
 *     ... q.prompt, q.sampling, q.stops, q.n ...
 *     srv_request_deinit(&q);
 */
#ifndef RT_TOOLS_SERVER_REQUEST_H
#define RT_TOOLS_SERVER_REQUEST_H

#include "../model/rt_model.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#define SRV_MAX_STOPS 4          /* OpenAI's limit */
#define SRV_MAX_CHOICES 16       /* n */
#define SRV_MAX_TOP_LOGPROBS 20  /* chat's top_logprobs (completions' logprobs: 5) */
#define SRV_MAX_LOGIT_BIAS 1024

/* What parsing needs of the server. */
typedef struct srv_request_info {
    const rtm_model_t *model;
    const rtm_chat_template_t *tmpl; /* NULL: the model has none (chat is refused) */
    int32_t n_ctx;                   /* positions a slot holds */
} srv_request_info_t;

typedef struct srv_request {
    bool chat, stream;
    bool include_usage;            /* stream_options.include_usage: a last chunk with usage */
    bool echo;                     /* completions: the prompt before the text */
    char *prompt;                  /* malloc'd: the text, or the chat rendered by the template */
    int32_t max_tokens;            /* < 0: until the end of generation or of the context */
    int32_t n;                     /* choices, 1..SRV_MAX_CHOICES */
    int32_t logprobs;              /* < 0: none; else each token's log-probability and
                                      this many likeliest alternatives */
    rtm_sampler_params_t sampling; /* seed random unless the body gives one */
    rtm_logit_bias_t *bias;        /* sampling.logit_bias, malloc'd */
    const char *stops[SRV_MAX_STOPS]; /* borrowed from json */
    int32_t n_stops;
    json_t *json;                  /* the body, owning the strings above */
    char param[64];                /* after a refusal: the field at fault ("": the body) */
    char error[256];               /* after a refusal: why */
} srv_request_t;

/* Reads body[0..len) for the chat or the completions endpoint. False with
 * q->error (and q->param) set when the body is refused; q needs
 * srv_request_deinit either way. */
bool srv_request_parse(srv_request_t *q, const srv_request_info_t *info, bool chat, const char *body,
                       size_t len);
void srv_request_deinit(srv_request_t *q);

#endif /* RT_TOOLS_SERVER_REQUEST_H */
