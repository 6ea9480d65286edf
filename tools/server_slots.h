/* SPDX-License-Identifier: MIT */
/* server_slots.h: continuous batching in rt-server. The server's one
 * context holds n_slots sequences (rtm_context_params_t.n_seq_max); each
 * request becomes a job that waits for a free slot (its sequence), and
 * one decode-loop thread runs every step as one batch: the next token of
 * each generating slot plus a chunk of the prompt of each slot still
 * reading its prompt, up to n_batch tokens (rtm_decode_batch). It samples
 * each slot with the slot's own sampler (server_gen.c) and hands the text
 * to the job, where the connection's thread takes it; a finished or
 * abandoned job frees its slot for the next. Each slot may hold n_ctx
 * positions, so the slots together never overflow the cache.
 *
 * A slot keeps its sequence when a job ends, and the tokens it holds: a
 * job goes to the free slot whose tokens share the longest prefix with its
 * prompt (the least recently used on a tie) and decodes only the rest, so
 * that each turn of a conversation reads only what the last turn did not.
 *
 * A job may watch its client's socket: at every step the loop looks
 * (without reading) whether the client has gone, and cancels the job if
 * so, so that a client that hangs up, streamed or not, frees its slot
 * within one step instead of keeping it decoding to the end.
 *
 * Other work on the devices (an embedding, on its own context) runs as a
 * task on the loop's thread, between two steps: it never runs beside a
 * step, so that two graphs never contend for the devices, and the slots
 * wait for one task at a time (a step runs between two tasks while both
 * wait). With no slots (an embedding model) the loop runs tasks only.
 *
 *     srv_slots_t *s;  srv_slots_create(ctx, 4, 512, &s);
 *     srv_job_t *j = srv_job_submit(s, &gen, fd); // gen begun: the job owns it
 *     srv_text_t text = {0};
 *     while (!srv_job_take(j, &text, false)) send(text), text.len = 0;
 *     srv_job_release(j);                        // also mid-way: cancels it
 *     srv_slots_destroy(s);
 */
#ifndef RT_TOOLS_SERVER_SLOTS_H
#define RT_TOOLS_SERVER_SLOTS_H

#include "server_gen.h"

typedef struct srv_slots srv_slots_t;
typedef struct srv_job srv_job_t;

/* Text a job produced, taken by the connection: len bytes, NUL-terminated
 * (p is malloc'd and grows), and the log-probabilities of its tokens when
 * the generation records them (lp, n_lp; malloc'd). The caller frees both
 * (srv_text_free). */
typedef struct srv_text {
    char *p;
    size_t len, cap;
    srv_logprob_t *lp;
    size_t n_lp, lp_cap;
} srv_text_t;

/* Empties t, keeping its memory. */
void srv_text_clear(srv_text_t *t);
void srv_text_free(srv_text_t *t);

/* What a finished job reports. */
typedef struct srv_job_result {
    const char *finish;       /* "stop", "length" */
    int32_t n_prompt, n_generated;
    bool failed;              /* a decode failed: message holds why */
    bool gone;                /* the client went away: cancelled */
    int32_t n_cached;         /* prompt tokens the slot already held (not decoded again) */
    bool context_full;        /* "length": the slot's positions ran out, not max_tokens */
    char message[256];
} srv_job_result_t;

/* The server's figures since it started (/metrics) and now. Decode time
 * is shared between the prompt and the generated tokens of a step by
 * their counts. */
typedef struct srv_stats {
    uint64_t n_requests;      /* jobs finished */
    uint64_t n_prompt_tokens; /* prompt tokens decoded (not those reused) */
    uint64_t n_generated;     /* tokens generated */
    double prompt_s, generate_s;
    int32_t n_busy, n_queued; /* jobs in slots, waiting for one */
    int32_t n_cells;          /* KV cells the slots' sequences hold */
} srv_stats_t;

/* One slot now (/slots). */
typedef struct srv_slot_info {
    bool busy;
    int32_t n_prompt, n_decoded; /* the running job's prompt tokens, tokens generated */
    int32_t n_cached;            /* tokens its sequence holds */
} srv_slot_info_t;

/* Starts the decode loop over ctx (which must hold n_slots sequences and
 * n_slots * n_ctx cells; borrowed, used by the loop alone until destroy);
 * n_slots 0 and ctx NULL: a loop for tasks alone. RT_ERR_OUT_OF_MEMORY,
 * or RT_ERR_UNSUPPORTED when the thread cannot start. */
rt_status_t srv_slots_create(rtm_context_t *ctx, int32_t n_slots, int32_t n_ctx, srv_slots_t **out_slots);
/* The figures, and each slot's into slots[0..n_slots) unless NULL. Thread-safe. */
void srv_slots_stats(srv_slots_t *s, srv_stats_t *out, srv_slot_info_t *slots);
int32_t srv_slots_count(const srv_slots_t *s);
/* Stops the loop and fails the jobs still waiting or running. */
void srv_slots_destroy(srv_slots_t *s);
/* Queues a request; the job takes gen (begun by srv_gen_begin) and ends
 * it. client_fd, unless < 0, is the client's socket, watched while the job
 * runs (a duplicate of it is kept until the job ends). NULL when out of
 * memory (gen is then ended). Thread-safe. */
srv_job_t *srv_job_submit(srv_slots_t *s, srv_gen_t *gen, int client_fd);
/* Waits until the job has text not yet taken (unless whole) or is
 * finished, appends that text (and its log-probabilities) to *text, and
 * returns true once the job is finished and all its text taken (false
 * with no text when out of memory: text->p NULL). A connection that waits
 * for the whole text is not woken at every token. */
bool srv_job_take(srv_job_t *j, srv_text_t *text, bool whole);
/* The finished job's report (valid after srv_job_take returned true). */
const srv_job_result_t *srv_job_result(const srv_job_t *j);
/* The connection is done with the job: an unfinished one is cancelled
 * (its slot freed at the next step). */
void srv_job_release(srv_job_t *j);

typedef void (*srv_task_fn)(void *arg);
/* Runs fn(arg) on the decode loop's thread between two steps and returns
 * once it has run; false, fn not run, when the loop is stopping. fn must
 * not call back into s. Thread-safe. */
bool srv_slots_run(srv_slots_t *s, srv_task_fn fn, void *arg);

#endif /* RT_TOOLS_SERVER_SLOTS_H */
