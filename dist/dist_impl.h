/* SPDX-License-Identifier: MIT */
/* dist_impl.h: the layout of a distributed run, shared by the files that
 * set it up (dist.c, plan.c, check.c) and drive it (pipeline.c,
 * tensor_parallel.c).
 *
 * The invariants: plan[r] is rank r's layer range (pipeline: contiguous,
 * together every layer once; tensor parallel: every rank all layers);
 * slot[i] is a send buffer of n_batch rows of n_embd floats whose
 * non-blocking send, when ticket[i] >= 0, may still read it; call counts
 * the decodes this rank finished (0 while the prompt runs), so that bytes
 * sent with call >= 1 are the decode's. */
#ifndef RTD_DIST_IMPL_H
#define RTD_DIST_IMPL_H

#include "rt_dist.h"

#define RTD_INTERNAL __attribute__((visibility("hidden")))

#define RTD_SLOTS 4   /* ubatches in flight from one stage to the next */

enum { RTD_MODE_PIPELINE = 0, RTD_MODE_TENSOR = 1 };

typedef struct rtd_range {
    int32_t begin, end;
} rtd_range_t;

struct rtd {
    rtd_comm_t *comm;
    int32_t mode;                     /* RTD_MODE_* */
    rtd_range_t plan[RTD_MAX_RANKS];
    int32_t n_layer, n_embd, n_vocab, n_batch;
    float *recv_buf;                  /* n_batch rows */
    float *slot[RTD_SLOTS];           /* n_batch rows each */
    int32_t ticket[RTD_SLOTS];
    int32_t next_slot;
    float *partial;                   /* tensor parallel: n_batch rows */
    int32_t *ctrl;                    /* tensor parallel: 1 + n_batch int32 */
    int32_t pending_tokens;           /* rank 0, pipeline: tokens sent back, not received yet */
    int64_t call;                     /* decodes finished on this rank */
    uint64_t decode_bytes;            /* bytes sent during decodes with call >= 1 */
    double compute_seconds;
    rtd_logits_fn on_logits;          /* on the rank that runs the head, or NULL */
    void *on_logits_user;
    rtd_stats_t stats;                /* after rtd_finish */
};

RTD_INTERNAL rt_status_t rtd_error(rt_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
RTD_INTERNAL rt_status_t rtd_error_model(rt_status_t status, const char *what);
/* The same for a core (librtcore) failure: "what: rt_last_error()". */
RTD_INTERNAL rt_status_t rtd_error_core(rt_status_t status, const char *what);
RTD_INTERNAL double rtd_time_seconds(void);

//===--- plan.c ---===//

/* Contiguous ranges of n_layer layers over n ranks, as even as counts go
 * (the earlier ranks take the remainder: rank 0 also embeds). */
RTD_INTERNAL void rtd_plan_pipeline(rtd_t *d, int32_t n_layer);
RTD_INTERNAL void rtd_plan_tensor(rtd_t *d, int32_t n_layer);
/* FNV-1a, 64 bits, continued from h (start with RTD_FNV_SEED). */
#define RTD_FNV_SEED 0xcbf29ce484222325ull
RTD_INTERNAL uint64_t rtd_hash(uint64_t h, const void *data, size_t size);
RTD_INTERNAL uint64_t rtd_plan_hash(const rtd_t *d, const void *settings, size_t size);
/* The layer count in a GGUF's header (ARCH.block_count). */
RTD_INTERNAL rt_status_t rtd_file_n_layer(const char *path, int32_t *out);

//===--- check.c ---===//

/* The hash of a GGUF file's header bytes (up to its data), its size, and
 * the versions of the ABI and of this protocol. */
RTD_INTERNAL rt_status_t rtd_model_hash(const char *path, uint64_t *out);
/* Every rank's value equals rank 0's; else RT_ERR_INVALID_ARGUMENT on every
 * rank, naming the ranks that differ and `what`. Collective. */
RTD_INTERNAL rt_status_t rtd_agree(rtd_t *d, uint64_t value, const char *what);
/* Whether any rank's flag (mine on this one) is set, on every rank, and
 * which ranks set it ("1, 3" into ranks). Collective. */
RTD_INTERNAL rt_status_t rtd_comm_flags(rtd_comm_t *c, bool mine, char *ranks, size_t size, bool *out_any);

//===--- pipeline.c, tensor_parallel.c ---===//

RTD_INTERNAL rt_status_t rtd_pipeline_decode(rtd_t *d, rtm_context_t *c, const rtm_token_t *tokens,
                                                  int32_t n);
RTD_INTERNAL rt_status_t rtd_pipeline_next_token(rtd_t *d, rtm_token_t *out);
RTD_INTERNAL rt_status_t rtd_pipeline_serve(rtd_t *d, rtm_context_t *c, rtm_sampler_t *s);
RTD_INTERNAL rt_status_t rtd_pipeline_stop(rtd_t *d);
/* Waits for every send still in flight. */
RTD_INTERNAL rt_status_t rtd_pipeline_drain(rtd_t *d);

RTD_INTERNAL rt_status_t rtd_tensor_decode(rtd_t *d, rtm_context_t *c, const rtm_token_t *tokens,
                                                int32_t n);
RTD_INTERNAL rt_status_t rtd_tensor_serve(rtd_t *d, rtm_context_t *c);
RTD_INTERNAL rt_status_t rtd_tensor_stop(rtd_t *d);

/* One part of the model on this rank, timed. */
RTD_INTERNAL rt_status_t rtd_run_part(rtd_t *d, rtm_context_t *c, int32_t begin, int32_t end,
                                           rtm_block_t block, const rtm_token_t *tokens,
                                           const float *in, int32_t n, float *out);

#endif /* RTD_DIST_IMPL_H */
