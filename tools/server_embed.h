/* SPDX-License-Identifier: MIT */
/* server_embed.h: a POST /v1/embeddings body (OpenAI's shape) read into
 * the inputs rt-server embeds, and its answer. As for the other
 * endpoints (server_request.h), every field is honoured or refused by
 * name, and null is the same as absent:
 *
 *   input            a string, a list of strings, a list of token ids, or a
 *                    list of lists of token ids (2048 inputs at most); none
 *                    empty, every id in the vocabulary
 *   encoding_format  "float" (the default): each embedding a list of
 *                    numbers; "base64": its little-endian float32 bytes in
 *                    base64
 *   dimensions       only the model's n_embd: OpenAI's shortened vectors
 *                    (truncated, then normalised) suit only models trained
 *                    for them, which a GGUF file does not say
 *   model, user      any string (one model is served)
 *
 * Token ids are embedded as given; a string as the model reads text
 * (tokenized with the special tokens the vocabulary adds: BERT's [CLS]
 * and [SEP], a BOS where the model wants one).
 *
 *     srv_embed_request_t q;
 *     if (!srv_embed_parse(&q, n_vocab, n_embd, body, len) ||
 *         !srv_embed_tokenize(&q, vocab, n_ctx))
 *         answer 400 with q.error, naming q.param;
 *     ... embed q.inputs[i].tokens into vectors + i * n_embd ...
 *     send(srv_embed_answer(&q, vectors, n_embd, "model"));
 *     srv_embed_deinit(&q);
 */
#ifndef RT_TOOLS_SERVER_EMBED_H
#define RT_TOOLS_SERVER_EMBED_H

#include "../model/rt_model.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#define SRV_EMBED_MAX_INPUTS 2048 /* OpenAI's limit */

typedef struct srv_embed_input {
    const char *text;       /* a string input (borrowed from the body), else NULL */
    size_t len;             /* its bytes */
    rtm_token_t *tokens;    /* n_tokens ids, malloc'd: as given, or the text's once tokenized */
    int32_t n_tokens;
} srv_embed_input_t;

typedef struct srv_embed_request {
    srv_embed_input_t *inputs; /* n_inputs, malloc'd */
    int32_t n_inputs;
    bool base64;            /* encoding_format "base64" */
    int32_t n_tokens;       /* all the inputs' tokens (usage), once tokenized */
    json_t *json;           /* the body, owning the strings above */
    char param[64];         /* after a refusal: the field at fault ("": the body) */
    char error[256];        /* after a refusal: why */
} srv_embed_request_t;

/* Reads body[0..len): false with q->error (and q->param) when refused.
 * q needs srv_embed_deinit either way. */
bool srv_embed_parse(srv_embed_request_t *q, int32_t n_vocab, int32_t n_embd, const char *body, size_t len);
/* Tokenizes the string inputs; false with q->error when one is longer
 * than n_ctx tokens (the most one embedding reads), as is a list of ids. */
bool srv_embed_tokenize(srv_embed_request_t *q, const rtm_vocab_t *vocab, int32_t n_ctx);
/* {"object": "list", "data": [{"object": "embedding", "index", "embedding"}],
 * "model", "usage"}: vectors holds n_inputs rows of n_embd. NULL when out
 * of memory. */
json_t *srv_embed_answer(const srv_embed_request_t *q, const float *vectors, int32_t n_embd, const char *model);
void srv_embed_deinit(srv_embed_request_t *q);

#endif /* RT_TOOLS_SERVER_EMBED_H */
