/* SPDX-License-Identifier: MIT */
/* pipeline.c: pipeline parallelism's messages. A decode of n tokens goes
 * through the stages in ubatches of at most n_batch: rank 0 embeds and
 * runs its layers, and sends each ubatch's hidden rows to rank 1 with a
 * non-blocking send from one of RTD_SLOTS buffers, so that it computes the
 * next ubatch while rank 1 works on this one (the prompt's ubatches
 * overlap across the stages); each stage does the same to the next; the
 * last runs the head and, after the decode's last ubatch (its tag says so:
 * RTD_TAG_HIDDEN_LAST), samples and sends the token back to rank 0.
 *
 * What crosses is sized by the message alone: a message of k rows is k *
 * n_embd F32 values, so one decoded token costs exactly n_embd * 4 bytes
 * per stage boundary plus the 4-byte token. A receiver accepts a message
 * only as whole rows, 1 to n_batch of them, with a known tag, and never
 * more bytes than its buffer holds; anything else ends the run. */
#include "dist_impl.h"

static size_t row_bytes(const rtd_t *d) { return (size_t)d->n_embd * sizeof(float); }

static void count(rtd_t *d, size_t bytes) {
    if (d->call >= 1) d->decode_bytes += bytes;
}

rt_status_t rtd_pipeline_drain(rtd_t *d) {
    rt_status_t st = RT_OK;
    for (int32_t i = 0; i < RTD_SLOTS; i++) {
        if (d->ticket[i] < 0) continue;
        const rt_status_t w = rtd_comm_wait(d->comm, d->ticket[i]);
        d->ticket[i] = -1;
        if (st == RT_OK) st = w;
    }
    return st;
}

/* The next send buffer, once the send that last used it is done. */
static rt_status_t take_slot(rtd_t *d, int32_t *out_slot) {
    const int32_t i = d->next_slot;
    d->next_slot = (i + 1) % RTD_SLOTS;
    *out_slot = i;
    if (d->ticket[i] < 0) return RT_OK;
    const rt_status_t st = rtd_comm_wait(d->comm, d->ticket[i]);
    d->ticket[i] = -1;
    return st;
}

static rt_status_t send_rows(rtd_t *d, int32_t slot, int32_t n, int32_t tag) {
    const size_t bytes = (size_t)n * row_bytes(d);
    count(d, bytes);
    return rtd_comm_send(d->comm, d->comm->rank + 1, tag, d->slot[slot], bytes, &d->ticket[slot]);
}

/* A small message sent and waited for. */
static rt_status_t send_now(rtd_t *d, int32_t peer, int32_t tag, const void *data, size_t bytes) {
    int32_t ticket = -1;
    count(d, bytes);
    rt_status_t st = rtd_comm_send(d->comm, peer, tag, data, bytes, &ticket);
    return st == RT_OK ? rtd_comm_wait(d->comm, ticket) : st;
}

//===--- rank 0 ---===//

rt_status_t rtd_pipeline_decode(rtd_t *d, rtm_context_t *c, const rtm_token_t *tokens, int32_t n) {
    const int32_t end = d->plan[0].end;
    rt_status_t st = n >= 1 ? RT_OK : rtd_error(RT_ERR_INVALID_ARGUMENT, "dist: decode of %d tokens", n);
    for (int32_t i = 0; st == RT_OK && i < n; i += d->n_batch) {
        const int32_t nb = n - i < d->n_batch ? n - i : d->n_batch;
        int32_t slot = 0;
        st = take_slot(d, &slot);
        if (st == RT_OK) st = rtd_run_part(d, c, 0, end, RTM_BLOCK_LAYERS, tokens + i, NULL, nb, d->slot[slot]);
        if (st == RT_OK && rtm_context_advance(c, nb) != RT_OK) st = rtd_error_model(RT_ERR_DOES_NOT_FIT, "dist");
        if (st == RT_OK)
            st = send_rows(d, slot, nb, i + nb == n ? RTD_TAG_HIDDEN_LAST : RTD_TAG_HIDDEN_MORE);
    }
    if (st == RT_OK) {
        d->pending_tokens++;
        d->call++;
    }
    return st;
}

rt_status_t rtd_pipeline_next_token(rtd_t *d, rtm_token_t *out) {
    int32_t t = 0, tag = 0;
    size_t bytes = 0;
    const int32_t last = d->comm->size - 1;
    if (d->pending_tokens < 1) return rtd_error(RT_ERR_INVALID_ARGUMENT, "dist: no decode to wait for");
    rt_status_t st = rtd_comm_recv(d->comm, last, &t, sizeof t, &bytes, &tag);
    if (st != RT_OK) return st;
    d->pending_tokens--;
    if (tag != RTD_TAG_TOKEN || bytes != sizeof t || t < 0 || t >= d->n_vocab)
        return rtd_error(RT_ERR_FORMAT, "dist: rank 0: rank %d sent %zu bytes, tag %d, for a token "
                         "(value %d, vocabulary of %d)", last, bytes, tag, t, d->n_vocab);
    *out = t;
    return RT_OK;
}

rt_status_t rtd_pipeline_stop(rtd_t *d) {
    rtm_token_t t;
    rt_status_t st = RT_OK;
    while (st == RT_OK && d->pending_tokens > 0) st = rtd_pipeline_next_token(d, &t);
    if (st == RT_OK) st = rtd_pipeline_drain(d);
    return st == RT_OK ? send_now(d, 1, RTD_TAG_STOP, NULL, 0) : st;
}

//===--- the other stages ---===//

/* A message from the previous stage as n whole rows, or a stop. */
static rt_status_t receive_rows(rtd_t *d, int32_t *out_n, int32_t *out_tag) {
    const int32_t prev = d->comm->rank - 1;
    size_t bytes = 0;
    const size_t cap = (size_t)d->n_batch * row_bytes(d);
    rt_status_t st = rtd_comm_recv(d->comm, prev, d->recv_buf, cap, &bytes, out_tag);
    *out_n = 0;
    if (st != RT_OK || (*out_tag == RTD_TAG_STOP && bytes == 0)) return st;
    const bool rows = *out_tag == RTD_TAG_HIDDEN_MORE || *out_tag == RTD_TAG_HIDDEN_LAST;
    if (!rows || bytes == 0 || bytes % row_bytes(d) != 0)
        return rtd_error(RT_ERR_FORMAT, "dist: rank %d: rank %d sent %zu bytes with tag %d, not "
                         "whole rows of %zu bytes", d->comm->rank, prev, bytes, *out_tag, row_bytes(d));
    *out_n = (int32_t)(bytes / row_bytes(d)); /* <= n_batch: bytes <= cap */
    return RT_OK;
}

/* The last stage: layers, head, and after a decode's last ubatch the token. */
static rt_status_t run_last(rtd_t *d, rtm_context_t *c, rtm_sampler_t *s, int32_t n, int32_t tag) {
    const rtd_range_t r = d->plan[d->comm->rank];
    rt_status_t st = rtd_run_part(d, c, r.begin, r.end, RTM_BLOCK_LAYERS, NULL, d->recv_buf, n, NULL);
    if (st != RT_OK) return st;
    if (d->on_logits) d->on_logits(d->on_logits_user, c, n);
    if (tag != RTD_TAG_HIDDEN_LAST) return RT_OK;
    const int32_t t = rtm_sampler_sample(s, rtm_get_logits(c), d->n_vocab);
    return send_now(d, 0, RTD_TAG_TOKEN, &t, sizeof t);
}

static rt_status_t run_middle(rtd_t *d, rtm_context_t *c, int32_t n, int32_t tag) {
    const rtd_range_t r = d->plan[d->comm->rank];
    int32_t slot = 0;
    rt_status_t st = take_slot(d, &slot);
    if (st == RT_OK) st = rtd_run_part(d, c, r.begin, r.end, RTM_BLOCK_LAYERS, NULL, d->recv_buf, n, d->slot[slot]);
    return st == RT_OK ? send_rows(d, slot, n, tag) : st;
}

rt_status_t rtd_pipeline_serve(rtd_t *d, rtm_context_t *c, rtm_sampler_t *s) {
    const bool last = d->comm->rank == d->comm->size - 1;
    for (;;) {
        int32_t n = 0, tag = 0;
        rt_status_t st = receive_rows(d, &n, &tag);
        if (st == RT_OK && n == 0) /* stop: pass it on */
            return last ? RT_OK : (st = rtd_pipeline_drain(d)) == RT_OK
                   ? send_now(d, d->comm->rank + 1, RTD_TAG_STOP, NULL, 0) : st;
        if (st == RT_OK) st = last ? run_last(d, c, s, n, tag) : run_middle(d, c, n, tag);
        if (st == RT_OK && rtm_context_advance(c, n) != RT_OK) st = rtd_error_model(RT_ERR_DOES_NOT_FIT, "dist");
        if (st != RT_OK) return st;
        if (tag == RTD_TAG_HIDDEN_LAST) d->call++;
    }
}
