/* SPDX-License-Identifier: MIT */
/* rt_dist.h: librtdist, one model over several processes (SPMD: every
 * rank runs the same program on its own share; rt_comm.h carries what
 * crosses). Above the model library and beside it: the core and the
 * plugins know nothing of it, and without an MPI launcher a program runs
 * alone exactly as before (rtd_create gives NULL and every call below
 * falls back to the plain rtm_ one).
 *
 * Pipeline parallel (the default under mpirun -np N): the layers are split
 * into N contiguous ranges; rank 0 embeds and runs the first, each rank
 * sends its hidden rows to the next with a non-blocking send (so the
 * prompt's ubatches overlap across the stages), the last runs the head,
 * samples and sends the token back to rank 0, which prints it. Per decoded
 * token exactly one row of n_embd F32 values crosses each of the N-1 stage
 * boundaries, and one int32 token comes back. Tensor parallel (tp = N):
 * every rank holds shard `rank` of each layer (rtm_model_params_t.shard),
 * rank 0 broadcasts each ubatch's tokens, and the partial sums of W_o and
 * W_down are allreduced before each residual add; rank 0 runs the head.
 *
 *     rtd_t *d;  rtd_create(&argc, &argv, &(rtd_params_t){sizeof(rtd_params_t)}, &d);
 *     rtd_plan(d, path, &settings, sizeof settings, &mp);  rtm_model_load(path, &mp, &m);
 *     rtd_setup(d, m, &cp);  rtm_context_create(m, &cp, &c);
 *     if (rtd_rank(d) == 0) {
 *         rtd_decode(d, c, prompt, n);
 *         while (rtd_next_token(d, c, sampler, n_vocab, &t) == RT_OK && !done(t)) rtd_decode(d, c, &t, 1);
 *     } else rtd_serve(d, c, sampler);
 *     rtd_finish(d, write_fn, user);  rtd_destroy(d);
 *
 * At the start every rank must agree with rank 0 on the model file (a hash
 * of its header, which holds every tensor's type, shape and offset, and of
 * its size and the library's version) and on the split plan (a hash of the
 * plan and of the caller's settings): otherwise every rank fails with a
 * message naming the ranks that differ. A rank that dies ends the job
 * (mpirun's job control; a failed call aborts it). */
#ifndef RTD_DIST_H
#define RTD_DIST_H

#include "../model/rt_model.h"
#include "rt_comm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The message of the last failing rtd_ call on this thread. */
RTD_API const char *rtd_last_error(void);

typedef struct rtd rtd_t;

#define RTD_MAX_RANKS 64   /* the largest job */

/* What carries the tensors between the ranks. */
typedef int32_t rtd_transport_t;
enum {
    RTD_TRANSPORT_MPI = 0,  /* MPI alone, host memory */
    RTD_TRANSPORT_NCCL = 1  /* NCCL on each rank's CUDA device, over MPI's bootstrap */
};

typedef struct rtd_params {
    uint32_t struct_size;
    int32_t tp;            /* tensor-parallel ranks (the job's size); 0 or 1: pipeline */
    rtd_transport_t transport; /* added with NCCL; RTD_TRANSPORT_* */
} rtd_params_t;

/* Joins the job when launched by MPI (or asked for tp > 1): *out is NULL
 * when the program runs alone. RT_ERR_UNSUPPORTED without MPI support or
 * when tp is not the job's size; with RTD_TRANSPORT_NCCL, what
 * rtd_comm_nccl_create refuses (on every rank), and outside a launcher. */
RTD_API rt_status_t rtd_create(int *argc, char ***argv, const rtd_params_t *params, rtd_t **out);
RTD_API void rtd_destroy(rtd_t *d);
RTD_API int32_t rtd_rank(const rtd_t *d);  /* 0 when d is NULL */
RTD_API int32_t rtd_size(const rtd_t *d);  /* 1 when d is NULL */
/* Ends every rank with exit status code (a failure on one rank). */
RTD_API void rtd_abort(rtd_t *d, int code);

/* Plans the split of the model file at path (its layer count read from
 * the header), checks that every rank agrees on the file and on the plan
 * with the settings (bytes every rank computed from its own command line:
 * sizes, sampling, lengths), and sets the rank's share in mp: its layers
 * (pipeline) or its shard (tensor parallel). Collective; before loading. */
RTD_API rt_status_t rtd_plan(rtd_t *d, const char *path, const void *settings, size_t settings_size,
                             rtm_model_params_t *mp);
/* After loading: the rank's layers into cp, and the buffers for the
 * context cp describes. */
RTD_API rt_status_t rtd_setup(rtd_t *d, const rtm_model_t *m, rtm_context_params_t *cp);

/* Rank 0: decodes n tokens across the job (returns once its own share is
 * done and sent). */
RTD_API rt_status_t rtd_decode(rtd_t *d, rtm_context_t *c, const rtm_token_t *tokens, int32_t n);
/* Rank 0: the token after the last decode (pipeline: the one the last rank
 * sampled; otherwise sampled here from the logits). */
RTD_API rt_status_t rtd_next_token(rtd_t *d, rtm_context_t *c, rtm_sampler_t *s, int32_t n_vocab,
                                   rtm_token_t *out);
/* What the logits callback is given: the context that holds the logits
 * of the n rows of the ubatch just run (rtm_get_logits_ith). */
typedef void (*rtd_logits_fn)(void *user, const rtm_context_t *c, int32_t n_rows);
/* Calls fn on the rank that runs the head (pipeline: the last; tensor
 * parallel: rank 0) after every ubatch, on the others never. */
RTD_API void rtd_set_logits_fn(rtd_t *d, rtd_logits_fn fn, void *user);
/* Whether this rank runs the head (true when d is NULL). */
RTD_API bool rtd_runs_head(const rtd_t *d);
/* Ranks > 0: runs their share of every decode until rank 0 finishes. */
RTD_API rt_status_t rtd_serve(rtd_t *d, rtm_context_t *c, rtm_sampler_t *s);
/* Every rank, at the end: stops the others (rank 0), then gathers the
 * statistics, which rank 0 writes as lines through write. Collective. */
RTD_API rt_status_t rtd_finish(rtd_t *d, rt_write_fn write, void *user);

/* What one run did, summed or per rank (rank 0's view after rtd_finish). */
typedef struct rtd_stats {
    uint32_t struct_size;
    int64_t decode_steps;         /* decodes after the prompt */
    uint64_t decode_bytes;        /* point-to-point bytes all ranks sent for them */
    uint64_t bytes_sent;          /* all point-to-point bytes of the run, all ranks */
    double comm_seconds[RT_SCHED_MAX_DEVICES];    /* per rank (first 16 ranks) */
    double compute_seconds[RTD_MAX_RANKS]; /* per rank: the model's parts */
} rtd_stats_t;
RTD_API rt_status_t rtd_get_stats(const rtd_t *d, rtd_stats_t *out);

#ifdef __cplusplus
}
#endif

#endif /* RTD_DIST_H */
