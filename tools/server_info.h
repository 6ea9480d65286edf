/* SPDX-License-Identifier: MIT */
/* server_info.h: rt-server's endpoints beside generation, in
 * llama-server's shapes so that its clients work unchanged:
 *
 *   POST /tokenize    {"content", "add_special", "with_pieces"} -> {"tokens"}
 *   POST /detokenize  {"tokens"} -> {"content"}
 *   GET  /props       the model, the slots, the defaults, the chat template,
 *                     the embeddings' width and pooling
 *   GET  /slots       each slot: busy, its job's tokens, what its cache holds
 *   GET  /metrics     Prometheus text: requests, tokens, prompt and decode
 *                     seconds, slots busy, requests waiting, KV cells held
 *
 * Each builds its answer; a body it refuses gives *err (a 400) instead. */
#ifndef RT_TOOLS_SERVER_INFO_H
#define RT_TOOLS_SERVER_INFO_H

#include "../model/rt_model.h"
#include "server_slots.h"

#include <jansson.h>

typedef struct srv_info {
    const rtm_model_t *model;
    const char *model_path, *alias;
    const char *chat_template;     /* its source, NULL: none */
    srv_slots_t *slots;            /* none for an embedding model: total_slots 0, /slots [] */
    int32_t n_ctx_slot;
    const char *pooling;           /* /v1/embeddings': "mean" or "last" */
} srv_info_t;

json_t *srv_info_tokenize(const srv_info_t *in, const char *body, size_t len, const char **err);
json_t *srv_info_detokenize(const srv_info_t *in, const char *body, size_t len, const char **err);
json_t *srv_info_props(const srv_info_t *in);
json_t *srv_info_slots(const srv_info_t *in);
/* The Prometheus text, malloc'd. */
char *srv_info_metrics(const srv_info_t *in);

#endif /* RT_TOOLS_SERVER_INFO_H */
