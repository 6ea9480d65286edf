/* SPDX-License-Identifier: MIT */
/* dist.c: a distributed run's life: joining the job (on MPI, or NCCL over
 * it), the rank's share of
 * the model, the checks before running, the calls a tool makes (each
 * falls back to the plain rtm_ call when there is no job), and the
 * statistics gathered at the end. The messages themselves are in
 * pipeline.c and tensor_parallel.c. */
#include "dist_impl.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//===--- the job ---===//

static rt_status_t join(rtd_t *d, int *argc, char ***argv, int32_t tp, rtd_transport_t transport) {
    for (int32_t i = 0; i < RTD_SLOTS; i++) d->ticket[i] = -1; /* first: a failed join drains none */
    rt_status_t st = rtd_comm_mpi_create(argc, argv, &d->comm);
    rtd_comm_t *nccl = NULL;
    if (st == RT_OK && transport == RTD_TRANSPORT_NCCL && d->comm->size > 1) {
        st = rtd_comm_nccl_create(d->comm, &nccl);
        if (st == RT_OK) d->comm = nccl;
    }
    if (st != RT_OK) return st;
    const int32_t n = d->comm->size;
    if (n > RTD_MAX_RANKS)
        return rtd_error(RT_ERR_UNSUPPORTED, "dist: %d ranks, at most %d", n, RTD_MAX_RANKS);
    if (tp > 1 && tp != n)
        return rtd_error(RT_ERR_INVALID_ARGUMENT, "dist: --tp %d in a job of %d rank(s): start it "
                         "with mpirun -np %d", tp, n, tp);
    d->mode = tp > 1 ? RTD_MODE_TENSOR : RTD_MODE_PIPELINE;
    return RT_OK;
}

/* Whether params, of its caller's size, has field (at offset, of size). */
static bool has(const rtd_params_t *params, size_t offset, size_t size) {
    return params != NULL && params->struct_size >= offset + size;
}
#define HAS(p, field) has(p, offsetof(rtd_params_t, field), sizeof(p)->field)

rt_status_t rtd_create(int *argc, char ***argv, const rtd_params_t *params, rtd_t **out) {
    *out = NULL;
    const int32_t tp = HAS(params, tp) ? params->tp : 0;
    const rtd_transport_t transport = HAS(params, transport) ? params->transport : RTD_TRANSPORT_MPI;
    if (transport != RTD_TRANSPORT_MPI && transport != RTD_TRANSPORT_NCCL)
        return rtd_error(RT_ERR_INVALID_ARGUMENT, "dist: transport %d", transport);
    if (!rtd_launched_by_mpi() && transport == RTD_TRANSPORT_NCCL)
        return rtd_error(RT_ERR_INVALID_ARGUMENT, "dist: --dist nccl joins the ranks of a job: "
                         "start it with mpirun -np N");
    if (!rtd_launched_by_mpi() && tp <= 1) return RT_OK;
    rtd_t *d = calloc(1, sizeof *d);
    if (d == NULL) return rtd_error(RT_ERR_OUT_OF_MEMORY, "dist: no memory");
    const rt_status_t st = join(d, argc, argv, tp, transport);
    if (st != RT_OK || d->comm->size == 1) { /* a job of one runs alone */
        rtd_destroy(d);
        return st;
    }
    *out = d;
    return RT_OK;
}

void rtd_destroy(rtd_t *d) {
    if (d == NULL) return;
    if (d->comm != NULL) rtd_pipeline_drain(d);
    rtd_comm_destroy(d->comm);
    free(d->recv_buf);
    for (int32_t i = 0; i < RTD_SLOTS; i++) free(d->slot[i]);
    free(d->partial);
    free(d->ctrl);
    free(d);
}

int32_t rtd_rank(const rtd_t *d) { return d ? d->comm->rank : 0; }
int32_t rtd_size(const rtd_t *d) { return d ? d->comm->size : 1; }

void rtd_abort(rtd_t *d, int code) {
    if (d != NULL) rtd_comm_abort(d->comm, code);
}

//===--- the rank's share ---===//


static rt_status_t alloc_buffers(rtd_t *d) {
    const size_t rows = (size_t)d->n_batch * (size_t)d->n_embd * sizeof(float);
    bool ok = (d->recv_buf = malloc(rows)) != NULL;
    for (int32_t i = 0; i < RTD_SLOTS; i++) ok = ok && (d->slot[i] = malloc(rows)) != NULL;
    ok = ok && (d->partial = malloc(rows)) != NULL;
    ok = ok && (d->ctrl = calloc((size_t)d->n_batch + 1, sizeof d->ctrl[0])) != NULL;
    return ok ? RT_OK : rtd_error(RT_ERR_OUT_OF_MEMORY, "dist: no memory for %d rows", d->n_batch);
}

/* The context's n_batch as rtm_context_create will set it. */
static int32_t batch_of(const rtm_model_t *m, const rtm_context_params_t *cp) {
    const int32_t n_ctx = cp->n_ctx > 0 ? cp->n_ctx : rtm_model_n_ctx_train(m) < 2048
                        ? rtm_model_n_ctx_train(m) : 2048;
    const int32_t n_batch = cp->n_batch > 0 ? cp->n_batch : 32;
    return n_batch < n_ctx ? n_batch : n_ctx;
}

/* The rank's share into mp. */
static void share(const rtd_t *d, rtm_model_params_t *mp) {
    if (d->mode == RTD_MODE_TENSOR) {
        mp->shard = d->comm->rank;
        mp->n_shards = d->comm->size;
        return;
    }
    mp->layer_begin = d->plan[d->comm->rank].begin;
    mp->layer_end = d->plan[d->comm->rank].end;
}

rt_status_t rtd_plan(rtd_t *d, const char *path, const void *settings, size_t settings_size,
                     rtm_model_params_t *mp) {
    if (d == NULL) return RT_OK;
    uint64_t model = 0;
    rt_status_t st = rtd_model_hash(path, &model);
    if (st == RT_OK) st = rtd_agree(d, model, "the model file (header, size or version)");
    if (st == RT_OK) st = rtd_file_n_layer(path, &d->n_layer);
    if (st != RT_OK) return st;
    if (d->mode == RTD_MODE_PIPELINE && d->comm->size > d->n_layer)
        return rtd_error(RT_ERR_INVALID_ARGUMENT, "dist: %d ranks for %d layers: at most one rank "
                         "a layer", d->comm->size, d->n_layer);
    if (d->mode == RTD_MODE_PIPELINE) rtd_plan_pipeline(d, d->n_layer);
    else rtd_plan_tensor(d, d->n_layer);
    st = rtd_agree(d, rtd_plan_hash(d, settings, settings_size), "the split plan or the run's settings");
    if (st == RT_OK) share(d, mp);
    return st;
}

rt_status_t rtd_setup(rtd_t *d, const rtm_model_t *m, rtm_context_params_t *cp) {
    if (d == NULL) return RT_OK;
    d->n_embd = rtm_model_n_embd(m);
    d->n_vocab = rtm_model_n_vocab(m);
    d->n_batch = batch_of(m, cp);
    cp->layer_begin = d->plan[d->comm->rank].begin;
    cp->layer_end = d->plan[d->comm->rank].end;
    return alloc_buffers(d);
}

//===--- running ---===//

rt_status_t rtd_run_part(rtd_t *d, rtm_context_t *c, int32_t begin, int32_t end, rtm_block_t block,
                         const rtm_token_t *tokens, const float *in, int32_t n, float *out) {
    const rtm_part_t part = {sizeof part, begin, end, block};
    const double t0 = rtd_time_seconds();
    const rt_status_t st = rtm_decode_part(c, &part, tokens, in, n, out);
    d->compute_seconds += rtd_time_seconds() - t0;
    return st == RT_OK ? RT_OK : rtd_error_model(st, "dist");
}

rt_status_t rtd_decode(rtd_t *d, rtm_context_t *c, const rtm_token_t *tokens, int32_t n) {
    if (d == NULL) return rtm_decode(c, tokens, n) == RT_OK ? RT_OK : rtd_error_model(RT_ERR_IO, "decode");
    return d->mode == RTD_MODE_TENSOR ? rtd_tensor_decode(d, c, tokens, n)
                                      : rtd_pipeline_decode(d, c, tokens, n);
}

rt_status_t rtd_next_token(rtd_t *d, rtm_context_t *c, rtm_sampler_t *s, int32_t n_vocab,
                           rtm_token_t *out) {
    if (d != NULL && d->mode == RTD_MODE_PIPELINE) return rtd_pipeline_next_token(d, out);
    const float *logits = rtm_get_logits(c);
    if (logits == NULL) return rtd_error(RT_ERR_INVALID_ARGUMENT, "dist: no logits to sample");
    *out = rtm_sampler_sample(s, logits, n_vocab);
    return RT_OK;
}

void rtd_set_logits_fn(rtd_t *d, rtd_logits_fn fn, void *user) {
    if (d == NULL) return;
    d->on_logits = fn;
    d->on_logits_user = user;
}

bool rtd_runs_head(const rtd_t *d) {
    if (d == NULL) return true;
    return d->comm->rank == (d->mode == RTD_MODE_TENSOR ? 0 : d->comm->size - 1);
}

rt_status_t rtd_serve(rtd_t *d, rtm_context_t *c, rtm_sampler_t *s) {
    if (d == NULL || d->comm->rank == 0) return RT_OK;
    return d->mode == RTD_MODE_TENSOR ? rtd_tensor_serve(d, c) : rtd_pipeline_serve(d, c, s);
}

//===--- the end ---===//

/* Every rank's counters into d->stats (summed, or in its own slot). */
static rt_status_t gather(rtd_t *d) {
    const int32_t r = d->comm->rank;
    int64_t sums[3] = {r == 0 ? d->call - 1 : 0, (int64_t)d->decode_bytes,
                       (int64_t)d->comm->stats.bytes_sent};
    d->stats = (rtd_stats_t){.struct_size = sizeof d->stats};
    d->stats.comm_seconds[r] = d->comm->stats.seconds;
    d->stats.compute_seconds[r] = d->compute_seconds;
    rt_status_t st = rtd_comm_allreduce(d->comm, sums, 3, RTD_DTYPE_I64);
    if (st == RT_OK) st = rtd_comm_allreduce(d->comm, d->stats.comm_seconds, RTD_MAX_RANKS, RTD_DTYPE_F64);
    if (st == RT_OK)
        st = rtd_comm_allreduce(d->comm, d->stats.compute_seconds, RTD_MAX_RANKS, RTD_DTYPE_F64);
    d->stats.decode_steps = sums[0] > 0 ? sums[0] : 0;
    d->stats.decode_bytes = (uint64_t)sums[1];
    d->stats.bytes_sent = (uint64_t)sums[2];
    return st;
}

static void report(const rtd_t *d, rt_write_fn write, void *user) {
    const rtd_stats_t *s = &d->stats;
    const bool pp = d->mode == RTD_MODE_PIPELINE;
    rt_write_text(write, user, "dist: %s over %d ranks:", pp ? "pipeline" : "tensor parallel", d->comm->size);
    for (int32_t r = 0; pp && r < d->comm->size; r++)
        rt_write_text(write, user, " rank %d layers %d-%d", r, d->plan[r].begin, d->plan[r].end - 1);
    rt_write_text(write, user, "\ndist: decode: %" PRId64 " steps, %" PRIu64 " bytes %s, %.1f bytes per "
        "decoded token (n_embd %d); %" PRIu64 " point-to-point bytes in all\n", s->decode_steps,
        s->decode_bytes, pp ? "sent" : "into rank 0's allreduces and broadcasts",
        s->decode_steps ? (double)s->decode_bytes / (double)s->decode_steps : 0.0, d->n_embd,
        s->bytes_sent);
    for (int32_t r = 0; r < d->comm->size; r++)
        rt_write_text(write, user, "dist: rank %d: compute %.3f s, communication %.3f s (waiting included)\n",
            r, s->compute_seconds[r], s->comm_seconds[r]);
}

rt_status_t rtd_finish(rtd_t *d, rt_write_fn write, void *user) {
    if (d == NULL) return RT_OK;
    rt_status_t st = RT_OK;
    if (d->comm->rank == 0)
        st = d->mode == RTD_MODE_TENSOR ? rtd_tensor_stop(d) : rtd_pipeline_stop(d);
    if (st == RT_OK) st = rtd_pipeline_drain(d);
    if (st == RT_OK) st = gather(d);
    if (st == RT_OK && d->comm->rank == 0 && write != NULL) report(d, write, user);
    return st;
}

rt_status_t rtd_get_stats(const rtd_t *d, rtd_stats_t *out) {
    if (d == NULL || out == NULL || out->struct_size < sizeof(uint32_t))
        return rtd_error(RT_ERR_INVALID_ARGUMENT, "rtd_get_stats: no job or unsized out");
    const size_t n = out->struct_size < sizeof d->stats ? out->struct_size : sizeof d->stats;
    const uint32_t size = out->struct_size;
    memcpy(out, &d->stats, n);
    out->struct_size = size;
    return RT_OK;
}
