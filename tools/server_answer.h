/* SPDX-License-Identifier: MIT */
/* server_answer.h: rt-server's replies in OpenAI's shapes, as jansson
 * values: a whole completion (text_completion / chat.completion) with its
 * choices and usage, the chunks of a streamed one (chat's first chunk of
 * each choice carries the role), the log-probabilities of either endpoint
 * (chat's logprobs.content[], completions' tokens / token_logprobs /
 * top_logprobs / text_offset), and error bodies.
 *
 *     srv_answer_t a;  srv_answer_init(&a, &q, model, "smollm2");
 *     json_t *choices = json_array();
 *     json_array_append_new(choices, srv_answer_choice(&a, 0, &text, "stop"));
 *     send(srv_answer_whole(&a, choices, &usage));
 */
#ifndef RT_TOOLS_SERVER_ANSWER_H
#define RT_TOOLS_SERVER_ANSWER_H

#include "server_request.h"
#include "server_slots.h"

#include <jansson.h>

/* One reply's identity and, per choice, how far its text has come (the
 * completions' text_offset of the next token, in characters). */
typedef struct srv_answer {
    const srv_request_t *q;
    const rtm_model_t *model;
    const char *model_name;
    char id[48];
    json_int_t created;
    int32_t n_ctx;            /* a slot's positions, for finish_detail */
    size_t offset[SRV_MAX_CHOICES];
} srv_answer_t;

typedef struct srv_usage {
    int32_t prompt_tokens, completion_tokens;
    int32_t cached_tokens;    /* of prompt_tokens, those the slot's cache already held */
} srv_usage_t;

void srv_answer_init(srv_answer_t *a, const srv_request_t *q, const rtm_model_t *model, const char *model_name,
                     int32_t n_ctx);
/* Choice i of a whole reply: its text (after the prompt when echo) and,
 * when asked, its tokens' log-probabilities; res its finish (and, when
 * the context ran out, "finish_detail" saying so: OpenAI's "length" does
 * not tell it from max_tokens). */
json_t *srv_answer_choice(srv_answer_t *a, int32_t i, const srv_text_t *text, const srv_job_result_t *res);
/* The whole reply around choices (stolen). */
json_t *srv_answer_whole(const srv_answer_t *a, json_t *choices, const srv_usage_t *usage);
/* A chunk of choice i: text (may be empty), first: chat's role (and the
 * echoed prompt), res: the last chunk's finish, else NULL. */
json_t *srv_answer_chunk(srv_answer_t *a, int32_t i, const srv_text_t *text, bool first,
                         const srv_job_result_t *res);
/* The stream's last chunk with stream_options.include_usage: no choices. */
json_t *srv_answer_usage_chunk(const srv_answer_t *a, const srv_usage_t *usage);
/* {"error": {"message", "type", "param", "code"}}; param NULL or "": null. */
json_t *srv_answer_error(unsigned status, const char *type, const char *param, const char *message);

#endif /* RT_TOOLS_SERVER_ANSWER_H */
