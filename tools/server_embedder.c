/* SPDX-License-Identifier: MIT */
/* server_embedder.c: see server_embedder.h. */
#include "server_embedder.h"

#include <stdlib.h>
#include <string.h>

/* A decoder's input goes in ubatches of at most this many tokens: a whole
 * input of 2048 in one would reserve the scores of 2048 x n_ctx. */
#define EMBED_N_BATCH 512

struct srv_embedder {
    srv_embedder_params_t p;
    rtm_pooling_t pooling;    /* MEAN or LAST */
    rtm_context_t *ctx;       /* NULL until the first run (or after a failed creation) */
};

rt_status_t srv_embedder_create(const srv_embedder_params_t *p, srv_embedder_t **out) {
    *out = NULL;
    const bool encoder = rtm_model_is_embedding(p->model);
    if (encoder && p->pooling == RTM_POOLING_LAST)
        return RT_ERR_UNSUPPORTED;
    srv_embedder_t *e = calloc(1, sizeof *e);
    if (e == NULL) return RT_ERR_OUT_OF_MEMORY;
    e->p = *p;
    e->pooling = p->pooling == RTM_POOLING_LAST ? RTM_POOLING_LAST : RTM_POOLING_MEAN;
    const int32_t train = rtm_model_n_ctx_train(p->model);
    if (encoder && train > 0 && e->p.n_ctx > train) e->p.n_ctx = train; /* its learned positions end there */
    *out = e;
    return RT_OK;
}

void srv_embedder_destroy(srv_embedder_t *e) {
    if (e == NULL) return;
    rtm_context_destroy(e->ctx);
    free(e);
}

int32_t srv_embedder_n_ctx(const srv_embedder_t *e) { return e->p.n_ctx; }
rtm_pooling_t srv_embedder_pooling(const srv_embedder_t *e) { return e->pooling; }

/* An embedding model reads an input in one ubatch (its attention sees
 * the whole input); a decoder in ubatches, its cache holding the rest. */
static rt_status_t make_context(srv_embedder_t *e) {
    const bool encoder = rtm_model_is_embedding(e->p.model);
    const int32_t n_ctx = e->p.n_ctx;
    const rtm_context_params_t cp = {.struct_size = sizeof cp, .n_ctx = n_ctx,
                                     .n_batch = encoder || n_ctx < EMBED_N_BATCH ? n_ctx : EMBED_N_BATCH,
                                     .n_threads = e->p.n_threads, .type_k = e->p.type_k,
                                     .type_v = e->p.type_v, .flash_attn = e->p.flash_attn,
                                     .embeddings = true, .pooling = e->pooling};
    return rtm_context_create(e->p.model, &cp, &e->ctx);
}

rt_status_t srv_embedder_run(srv_embedder_t *e, const rtm_token_t *tokens, int32_t n, float *out) {
    rt_status_t st = e->ctx ? RT_OK : make_context(e);
    if (st != RT_OK) return st;
    rtm_context_clear(e->ctx);
    st = rtm_decode(e->ctx, tokens, n);
    const float *v = st == RT_OK ? rtm_get_embeddings(e->ctx) : NULL;
    if (v) memcpy(out, v, (size_t)rtm_model_n_embd(e->p.model) * sizeof out[0]);
    return st;
}
