/* SPDX-License-Identifier: MIT */
/* tensor_parallel.c: tensor parallelism's messages. Every rank holds its
 * shard of every layer (model/shard.c) and runs every layer: rank 0
 * broadcasts each ubatch (its token count, then the tokens, in one block
 * of 1 + n_batch int32), every rank embeds it (the embeddings are whole on
 * every rank), and each layer is two parts: the attention block and the
 * feed-forward block each give this shard's partial sum of the
 * row-parallel product (W_o, W_down), which one allreduce adds up before
 * the residual add, done here on the host. Rank 0 alone runs the head and
 * samples. A count of 0 ends the run; any count outside 1..n_batch, or a
 * token outside the vocabulary (rtm_decode_part checks), ends it with an
 * error. */
#include "dist_impl.h"

#include <string.h>

static void count(rtd_t *d, size_t bytes) {
    if (d->call >= 1) d->decode_bytes += bytes;
}

/* x += the shards' sum of this rank's partial p. */
static rt_status_t reduce_into(rtd_t *d, float *x, float *p, int32_t n) {
    const size_t len = (size_t)n * (size_t)d->n_embd;
    count(d, len * sizeof p[0]);
    const rt_status_t st = rtd_comm_allreduce(d->comm, p, len, RTD_DTYPE_F32);
    for (size_t i = 0; st == RT_OK && i < len; i++) x[i] += p[i];
    return st;
}

static rt_status_t layer(rtd_t *d, rtm_context_t *c, int32_t il, float *x, int32_t n) {
    rt_status_t st = rtd_run_part(d, c, il, il + 1, RTM_BLOCK_ATTN, NULL, x, n, d->partial);
    if (st == RT_OK) st = reduce_into(d, x, d->partial, n);
    if (st == RT_OK) st = rtd_run_part(d, c, il, il + 1, RTM_BLOCK_FFN, NULL, x, n, d->partial);
    if (st == RT_OK) st = reduce_into(d, x, d->partial, n);
    return st;
}

static rt_status_t ubatch(rtd_t *d, rtm_context_t *c, const rtm_token_t *tokens, int32_t n) {
    float *x = d->slot[0];
    rt_status_t st = rtd_run_part(d, c, 0, 0, RTM_BLOCK_LAYERS, tokens, NULL, n, x);
    for (int32_t il = 0; st == RT_OK && il < d->n_layer; il++) st = layer(d, c, il, x, n);
    if (st == RT_OK && d->comm->rank == 0)
        st = rtd_run_part(d, c, d->n_layer, d->n_layer, RTM_BLOCK_LAYERS, NULL, x, n, NULL);
    if (st == RT_OK && d->comm->rank == 0 && d->on_logits) d->on_logits(d->on_logits_user, c, n);
    if (st == RT_OK && rtm_context_advance(c, n) != RT_OK) st = rtd_error_model(RT_ERR_DOES_NOT_FIT, "dist");
    return st;
}

static rt_status_t broadcast_ctrl(rtd_t *d) {
    const size_t bytes = ((size_t)d->n_batch + 1) * sizeof d->ctrl[0];
    if (d->comm->rank == 0) count(d, bytes);
    return rtd_comm_broadcast(d->comm, 0, d->ctrl, bytes);
}

rt_status_t rtd_tensor_decode(rtd_t *d, rtm_context_t *c, const rtm_token_t *tokens, int32_t n) {
    rt_status_t st = n >= 1 ? RT_OK : rtd_error(RT_ERR_INVALID_ARGUMENT, "dist: decode of %d tokens", n);
    for (int32_t i = 0; st == RT_OK && i < n; i += d->n_batch) {
        const int32_t nb = n - i < d->n_batch ? n - i : d->n_batch;
        d->ctrl[0] = nb;
        memcpy(d->ctrl + 1, tokens + i, (size_t)nb * sizeof tokens[0]);
        st = broadcast_ctrl(d);
        if (st == RT_OK) st = ubatch(d, c, d->ctrl + 1, nb);
    }
    if (st == RT_OK) d->call++;
    return st;
}

rt_status_t rtd_tensor_serve(rtd_t *d, rtm_context_t *c) {
    for (;;) {
        rt_status_t st = broadcast_ctrl(d);
        const int32_t n = d->ctrl[0];
        if (st == RT_OK && n == 0) return RT_OK;
        if (st == RT_OK && (n < 1 || n > d->n_batch))
            st = rtd_error(RT_ERR_FORMAT, "dist: rank %d: rank 0 broadcast a ubatch of %d tokens "
                           "(n_batch %d)", d->comm->rank, n, d->n_batch);
        if (st == RT_OK) st = ubatch(d, c, d->ctrl + 1, n);
        if (st != RT_OK) return st;
    }
}

rt_status_t rtd_tensor_stop(rtd_t *d) {
    d->ctrl[0] = 0;
    return broadcast_ctrl(d);
}
