/* SPDX-License-Identifier: MIT */
/* server_embedder.h: the context rt-server computes embeddings on, apart
 * from the slots' (whose graphs end in logits): one sequence, made on
 * first use so that a server that never embeds holds no second KV cache.
 * A decoder's context keeps its final hidden states (the output norm's,
 * before the output projection) and pools them (rtm_pooling_t); an
 * embedding model's gives its own pooled vector and reads each input in
 * one ubatch. Every vector is of unit length. Its calls run on the decode
 * loop's thread (srv_slots_run), the only one that drives the devices, so
 * an embedding never runs beside a generation step.
 *
 *     srv_embedder_t *e;  srv_embedder_create(&params, &e);
 *     on the loop: srv_embedder_run(e, tokens, n, vector);   // n_embd floats
 *     srv_embedder_destroy(e);
 */
#ifndef RT_TOOLS_SERVER_EMBEDDER_H
#define RT_TOOLS_SERVER_EMBEDDER_H

#include "../model/rt_model.h"

typedef struct srv_embedder srv_embedder_t;

typedef struct srv_embedder_params {
    rtm_model_t *model;       /* borrowed: outlives the embedder */
    int32_t n_ctx;            /* the most tokens of one input (the model's training length
                                 bounds an embedding model's) */
    int32_t n_threads;        /* 0: the plugin's default */
    rtm_pooling_t pooling;    /* a decoder's (RTM_POOLING_DEFAULT: the mean) */
    int32_t flash_attn;       /* rtm_flash_attn_t */
    rt_type_t type_k, type_v; /* the KV cache's */
} srv_embedder_params_t;

/* Makes no context yet. RT_ERR_UNSUPPORTED for RTM_POOLING_LAST on an
 * embedding model (which pools as it was trained), RT_ERR_OUT_OF_MEMORY. */
rt_status_t srv_embedder_create(const srv_embedder_params_t *p, srv_embedder_t **out);
void srv_embedder_destroy(srv_embedder_t *e);
/* The most tokens one input may have. */
int32_t srv_embedder_n_ctx(const srv_embedder_t *e);
/* The pooling in use: RTM_POOLING_MEAN or RTM_POOLING_LAST. */
rtm_pooling_t srv_embedder_pooling(const srv_embedder_t *e);
/* The embedding of n tokens (1 <= n <= n_ctx) into out (n_embd floats),
 * the context made first if it is not yet. Fails as rtm_context_create
 * and rtm_decode do, with rtm_last_error on this thread. */
rt_status_t srv_embedder_run(srv_embedder_t *e, const rtm_token_t *tokens, int32_t n, float *out);

#endif /* RT_TOOLS_SERVER_EMBEDDER_H */
