/* SPDX-License-Identifier: MIT */
/* server_slots.c: see server_slots.h. One mutex guards the queue, the
 * slots' jobs and every job's text and state, and the tasks; the decode
 * loop drops it while it decodes and samples, which touch only the
 * context and the generations of jobs in slots (the loop's alone), and
 * while it runs a task. A job is referenced by its connection and by the
 * slots until each lets go; the last frees it. A task lives on the stack
 * of the connection that waits for it. */
#include "server_slots.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct srv_job {
    srv_slots_t *s;
    srv_gen_t g;              /* the loop's, from admission to the end */
    int32_t n_fed;            /* prompt tokens decoded (the loop's) */
    int32_t n_decoded;        /* tokens generated, as last published (for srv_slots_stats) */
    bool gen_failed;          /* the text could not be kept (the loop's) */
    srv_text_t text;          /* produced, not yet taken */
    bool finished, cancelled;
    bool whole;               /* the connection waits for the end, not for pieces */
    pthread_cond_t changed;   /* text came (for a connection that takes pieces) or it finished */
    srv_job_result_t result;
    int32_t refs;
    int fd;                   /* a duplicate of the client's socket until finished, or -1 */
    srv_job_t *next;          /* in the queue */
};

/* A task waiting for the loop, or running: done once it ran or was refused. */
typedef struct srv_task {
    srv_task_fn fn;
    void *arg;
    bool done, ran;
    struct srv_task *next;
} srv_task_t;

struct srv_slots {
    rtm_context_t *ctx;
    int32_t n_slots, n_ctx, n_batch;
    srv_job_t **slot;         /* n_slots: slot i (sequence i) runs slot[i], or NULL */
    srv_job_t *head, *tail;   /* jobs waiting for a slot */
    pthread_mutex_t mu;
    pthread_cond_t work;      /* a job or a task came, a job was cancelled, or stop */
    srv_task_t *tasks;        /* waiting, first to run first */
    pthread_cond_t task_done; /* some task is done */
    pthread_t thread;
    bool stop, started;
    rtm_token_t **cached;     /* n_slots arrays of n_ctx: the tokens each sequence holds */
    int32_t *n_cached;
    uint64_t *last_used, tick; /* when each slot last took a job */
    srv_stats_t stats;        /* under the lock */
    /* one step's batch (the loop's): capacity n_slots + n_batch */
    rtm_token_t *tok;
    int32_t *seq;
    bool *want;
};

//===--- jobs ---===//

static bool text_append(srv_text_t *t, const char *s, size_t n) {
    if (t->len + n + 1 > t->cap) {
        const size_t cap = (t->len + n + 1) * 2 + 64;
        char *p = realloc(t->p, cap);
        if (p == NULL) return false;
        t->p = p, t->cap = cap;
    }
    memcpy(t->p + t->len, s, n);
    t->p[t->len += n] = 0;
    return true;
}

static bool lp_append(srv_text_t *t, const srv_logprob_t *lp, size_t n) {
    if (n == 0) return true;
    if (t->n_lp + n > t->lp_cap) {
        const size_t cap = (t->n_lp + n) * 2 + 8;
        srv_logprob_t *p = realloc(t->lp, cap * sizeof p[0]);
        if (p == NULL) return false;
        t->lp = p, t->lp_cap = cap;
    }
    memcpy(t->lp + t->n_lp, lp, n * sizeof lp[0]);
    t->n_lp += n;
    return true;
}

void srv_text_clear(srv_text_t *t) {
    t->len = t->n_lp = 0;
    if (t->p) t->p[0] = 0;
}

void srv_text_free(srv_text_t *t) {
    free(t->p);
    free(t->lp);
    *t = (srv_text_t){0};
}

static void job_unref(srv_job_t *j) {
    if (--j->refs > 0) return;
    pthread_cond_destroy(&j->changed);
    srv_text_free(&j->text);
    free(j);
}

/* Whether the client behind fd has closed or reset its end: the socket
 * reports a hang-up, or is readable with nothing to read (a request
 * pipelined behind this one is data, not a hang-up, and stays unread). */
static bool client_gone(int fd) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
#ifdef POLLRDHUP
    p.events |= POLLRDHUP;
#endif
    if (poll(&p, 1, 0) <= 0) return false;
#ifdef POLLRDHUP
    if (p.revents & POLLRDHUP) return true;
#endif
    if (p.revents & (POLLHUP | POLLERR | POLLNVAL)) return true;
    char c;
    const ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

/* Under the lock: the job's report, its generation ended. */
static void job_finish(srv_slots_t *s, srv_job_t *j, const char *failure) {
    j->result.finish = j->g.finish ? j->g.finish : "stop";
    j->result.n_prompt = j->g.n_prompt;
    j->result.n_generated = j->g.n_generated;
    j->result.failed = failure != NULL;
    j->result.gone = j->cancelled;
    j->result.context_full = j->g.context_full;
    if (failure) snprintf(j->result.message, sizeof j->result.message, "%s", failure);
    srv_gen_end(&j->g);
    if (j->fd >= 0) close(j->fd);
    j->fd = -1;
    j->finished = true;
    pthread_cond_signal(&j->changed);
    job_unref(j);
}

srv_job_t *srv_job_submit(srv_slots_t *s, srv_gen_t *gen, int client_fd) {
    srv_job_t *j = calloc(1, sizeof *j);
    if (j == NULL) {
        srv_gen_end(gen);
        return NULL;
    }
    j->s = s;
    /* its own descriptor: the connection's may be closed and its number
       reused by another client's before this job ends */
    j->fd = client_fd >= 0 ? fcntl(client_fd, F_DUPFD_CLOEXEC, 0) : -1;
    pthread_cond_init(&j->changed, NULL);
    j->g = *gen;
    *gen = (srv_gen_t){0};
    j->refs = 2;
    pthread_mutex_lock(&s->mu);
    if (s->stop || s->n_slots == 0) {
        job_finish(s, j, s->stop ? "the server is stopping" : "the server has no slots to generate in");
    } else {
        if (s->tail) s->tail->next = j;
        else s->head = j;
        s->tail = j;
        pthread_cond_signal(&s->work);
    }
    pthread_mutex_unlock(&s->mu);
    return j;
}

bool srv_job_take(srv_job_t *j, srv_text_t *text, bool whole) {
    srv_slots_t *s = j->s;
    pthread_mutex_lock(&s->mu);
    j->whole = whole;
    while ((whole || (j->text.len == 0 && j->text.n_lp == 0)) && !j->finished)
        pthread_cond_wait(&j->changed, &s->mu);
    if ((j->text.len > 0 && !text_append(text, j->text.p, j->text.len)) ||
        !lp_append(text, j->text.lp, j->text.n_lp))
        srv_text_free(text);
    srv_text_clear(&j->text);
    const bool done = j->finished;
    pthread_mutex_unlock(&s->mu);
    return done;
}

const srv_job_result_t *srv_job_result(const srv_job_t *j) { return &j->result; }

void srv_job_release(srv_job_t *j) {
    if (j == NULL) return;
    srv_slots_t *s = j->s;
    pthread_mutex_lock(&s->mu);
    if (!j->finished) {
        j->cancelled = true;
        pthread_cond_signal(&s->work);
    }
    job_unref(j);
    pthread_mutex_unlock(&s->mu);
}

//===--- the slots (under the lock) ---===//

/* Slot i's job is done with. The sequence stays for the next job that
 * shares its prompt, unless a decode failed (what it holds is then in
 * doubt). */
static void slot_free(srv_slots_t *s, int32_t i, const char *failure) {
    srv_job_t *j = s->slot[i];
    s->slot[i] = NULL;
    if (failure) {
        rtm_seq_clear(s->ctx, i);
        s->n_cached[i] = 0;
    }
    s->stats.n_requests++;
    job_finish(s, j, failure);
}

/* Jobs whose clients went away are cancelled. */
static void watch_clients(srv_slots_t *s) {
    for (int32_t i = 0; i < s->n_slots; i++)
        if (s->slot[i] && s->slot[i]->fd >= 0 && client_gone(s->slot[i]->fd)) s->slot[i]->cancelled = true;
    for (srv_job_t *j = s->head; j; j = j->next)
        if (j->fd >= 0 && client_gone(j->fd)) j->cancelled = true;
}

/* Cancelled jobs leave their slots, or the queue. */
static void drop_cancelled(srv_slots_t *s) {
    watch_clients(s);
    for (int32_t i = 0; i < s->n_slots; i++)
        if (s->slot[i] && s->slot[i]->cancelled) slot_free(s, i, NULL);
    for (srv_job_t **p = &s->head; *p;) {
        srv_job_t *j = *p;
        if (!j->cancelled) {
            p = &j->next;
            continue;
        }
        *p = j->next;
        job_finish(s, j, NULL);
    }
    s->tail = NULL;
    for (srv_job_t *j = s->head; j; j = j->next) s->tail = j;
}

static int32_t shared_prefix(const rtm_token_t *a, int32_t na, const rtm_token_t *b, int32_t nb) {
    int32_t n = 0;
    while (n < na && n < nb && a[n] == b[n]) n++;
    return n;
}

/* The free slot whose tokens share the most with the prompt (on a tie the
 * least recently used), and how many they share into *shared; -1 if
 * every slot is busy. */
static int32_t best_slot(const srv_slots_t *s, const srv_gen_t *g, int32_t *shared) {
    int32_t best = -1;
    *shared = 0;
    for (int32_t i = 0; i < s->n_slots; i++) {
        if (s->slot[i]) continue;
        const int32_t n = shared_prefix(s->cached[i], s->n_cached[i], g->prompt, g->n_prompt);
        if (best < 0 || n > *shared || (n == *shared && s->last_used[i] < s->last_used[best])) best = i, *shared = n;
    }
    return best;
}

/* Waiting jobs into free slots, each keeping what its slot's sequence
 * shares with its prompt but the prompt's last token (decoded again for
 * its logits); one with nothing to decode ends at once. */
static void admit(srv_slots_t *s) {
    int32_t i, shared;
    while (s->head && (i = best_slot(s, &s->head->g, &shared)) >= 0) {
        srv_job_t *j = s->head;
        s->head = j->next;
        if (s->head == NULL) s->tail = NULL;
        const int32_t keep = shared < j->g.n_prompt ? shared : j->g.n_prompt - 1;
        rtm_seq_keep(s->ctx, i, keep > 0 ? keep : 0);
        s->n_cached[i] = keep > 0 ? keep : 0;
        j->n_fed = j->result.n_cached = s->n_cached[i];
        s->last_used[i] = ++s->tick;
        s->slot[i] = j;
        if (j->g.done) slot_free(s, i, NULL);
    }
}

static bool any_busy(const srv_slots_t *s) {
    for (int32_t i = 0; i < s->n_slots; i++)
        if (s->slot[i]) return true;
    return false;
}

//===--- one step (the loop's, without the lock) ---===//

static void add(srv_slots_t *s, int32_t *n, rtm_token_t t, int32_t seq, bool want) {
    s->tok[*n] = t, s->seq[*n] = seq, s->want[*n] = want;
    (*n)++;
}

/* The next token of every generating slot (their count in *n_gen), then
 * prompt chunks in what is left of n_batch (at least one token, so
 * prompts always move). */
static int32_t gather(srv_slots_t *s, int32_t *n_gen) {
    int32_t n = 0;
    for (int32_t i = 0; i < s->n_slots; i++) {
        const srv_job_t *j = s->slot[i];
        if (j && j->n_fed == j->g.n_prompt) add(s, &n, j->g.next, i, true);
    }
    *n_gen = n;
    for (int32_t i = 0; i < s->n_slots; i++) {
        srv_job_t *j = s->slot[i];
        if (j == NULL || j->n_fed == j->g.n_prompt) continue;
        const int32_t room = s->n_batch - n > 1 ? s->n_batch - n : 1, left = j->g.n_prompt - j->n_fed;
        const int32_t k = left < room ? left : room;
        for (int32_t t = 0; t < k; t++) add(s, &n, j->g.prompt[j->n_fed + t], i, j->n_fed + t == j->g.n_prompt - 1);
        j->n_fed += k;
    }
    return n;
}

/* Each slot whose token kept its logits samples its next token. */
static void sample(srv_slots_t *s, int32_t n) {
    for (int32_t k = 0; k < n; k++) {
        if (!s->want[k]) continue;
        srv_job_t *j = s->slot[s->seq[k]];
        const int32_t i = s->seq[k];
        if (srv_gen_next(&j->g, rtm_get_logits_ith(s->ctx, k), rtm_seq_n_past(s->ctx, i)) != RT_OK)
            j->gen_failed = true;
    }
}

/* Under the lock: the step's text to the jobs; finished ones leave, all
 * of them when the decode failed. */
static void publish(srv_slots_t *s, int32_t n, const char *failure) {
    for (int32_t k = 0; k < n && !failure; k++) { /* what each sequence now holds */
        const int32_t i = s->seq[k];
        if (s->n_cached[i] < s->n_ctx) s->cached[i][s->n_cached[i]++] = s->tok[k];
    }
    for (int32_t k = 0; k < n; k++) {
        srv_job_t *j = s->slot[s->seq[k]];
        if (j == NULL) continue; /* freed at an earlier token of this step */
        if (failure) {
            slot_free(s, s->seq[k], failure);
            continue;
        }
        if (!s->want[k]) continue;
        j->n_decoded = j->g.n_generated;
        if (j->g.out_len && !text_append(&j->text, j->g.out, j->g.out_len)) j->gen_failed = true;
        if (j->g.has_lp && !lp_append(&j->text, &j->g.lp, 1)) j->gen_failed = true;
        if (j->gen_failed) slot_free(s, s->seq[k], "no memory for the text");
        else if (j->g.done) slot_free(s, s->seq[k], NULL);
        else if ((j->g.out_len || j->g.has_lp) && !j->whole) pthread_cond_signal(&j->changed);
    }
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

//===--- tasks ---===//

/* Under the lock: runs the first task without it. */
static void run_task(srv_slots_t *s) {
    srv_task_t *t = s->tasks;
    s->tasks = t->next;
    pthread_mutex_unlock(&s->mu);
    t->fn(t->arg);
    pthread_mutex_lock(&s->mu);
    t->done = t->ran = true;
    pthread_cond_broadcast(&s->task_done);
}

bool srv_slots_run(srv_slots_t *s, srv_task_fn fn, void *arg) {
    srv_task_t t = {fn, arg, false, false, NULL};
    pthread_mutex_lock(&s->mu);
    if (!s->stop) {
        srv_task_t **p = &s->tasks;
        while (*p) p = &(*p)->next;
        *p = &t;
        pthread_cond_signal(&s->work);
        while (!t.done) pthread_cond_wait(&s->task_done, &s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    return t.ran;
}

//===--- the loop ---===//

/* Under the lock, once the loop stops: the jobs fail, the tasks are refused. */
static void fail_all(srv_slots_t *s) {
    for (int32_t i = 0; i < s->n_slots; i++)
        if (s->slot[i]) slot_free(s, i, "the server is stopping");
    while (s->head) {
        srv_job_t *j = s->head;
        s->head = j->next;
        job_finish(s, j, "the server is stopping");
    }
    s->tail = NULL;
    for (; s->tasks; s->tasks = s->tasks->next) s->tasks->done = true;
    pthread_cond_broadcast(&s->task_done);
}

static void *loop(void *arg) {
    srv_slots_t *s = arg;
    bool tasks_turn = true; /* a step and a task take turns while both wait */
    pthread_mutex_lock(&s->mu);
    for (;;) {
        drop_cancelled(s);
        admit(s);
        if (s->stop) break;
        const bool busy = any_busy(s);
        if (s->tasks && (tasks_turn || !busy)) {
            run_task(s);
            tasks_turn = false;
            continue;
        }
        tasks_turn = true;
        if (!busy) {
            pthread_cond_wait(&s->work, &s->mu);
            continue;
        }
        pthread_mutex_unlock(&s->mu);
        int32_t n_gen = 0;
        const double t0 = now_s();
        const int32_t n = gather(s, &n_gen);
        const rtm_batch_t b = {sizeof b, n, s->tok, s->seq, s->want};
        char failure[256] = "";
        if (rtm_decode_batch(s->ctx, &b) == RT_OK) sample(s, n);
        else snprintf(failure, sizeof failure, "%s", rtm_last_error());
        const double dt = now_s() - t0;
        pthread_mutex_lock(&s->mu);
        s->stats.n_generated += (uint64_t)n_gen;
        s->stats.n_prompt_tokens += (uint64_t)(n - n_gen);
        s->stats.generate_s += dt * n_gen / n;
        s->stats.prompt_s += dt * (n - n_gen) / n;
        publish(s, n, failure[0] ? failure : NULL);
    }
    fail_all(s);
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

//===--- life ---===//

/* The slots' arrays and one step's batch; none without slots. */
static bool alloc_slots(srv_slots_t *s) {
    const int32_t n_slots = s->n_slots;
    if (n_slots == 0) return true;
    const size_t cap = (size_t)n_slots + (size_t)s->n_batch;
    s->slot = calloc((size_t)n_slots, sizeof s->slot[0]);
    s->tok = malloc(cap * sizeof s->tok[0]);
    s->seq = malloc(cap * sizeof s->seq[0]);
    s->want = malloc(cap * sizeof s->want[0]);
    s->cached = calloc((size_t)n_slots, sizeof s->cached[0]);
    s->n_cached = calloc((size_t)n_slots, sizeof s->n_cached[0]);
    s->last_used = calloc((size_t)n_slots, sizeof s->last_used[0]);
    bool ok = s->slot && s->tok && s->seq && s->want && s->cached && s->n_cached && s->last_used;
    for (int32_t i = 0; ok && i < n_slots; i++)
        ok = (s->cached[i] = malloc((size_t)s->n_ctx * sizeof s->cached[i][0])) != NULL;
    return ok;
}

rt_status_t srv_slots_create(rtm_context_t *ctx, int32_t n_slots, int32_t n_ctx, srv_slots_t **out_slots) {
    *out_slots = NULL;
    srv_slots_t *s = calloc(1, sizeof *s);
    if (s == NULL) return RT_ERR_OUT_OF_MEMORY;
    *s = (srv_slots_t){.ctx = ctx, .n_slots = ctx ? n_slots : 0, .n_ctx = n_ctx,
                       .n_batch = ctx ? rtm_context_n_batch(ctx) : 0};
    const bool ok = alloc_slots(s);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->work, NULL);
    pthread_cond_init(&s->task_done, NULL);
    rt_status_t st = ok ? RT_OK : RT_ERR_OUT_OF_MEMORY;
    if (st == RT_OK && pthread_create(&s->thread, NULL, loop, s) != 0) st = RT_ERR_UNSUPPORTED;
    s->started = st == RT_OK;
    if (st != RT_OK) {
        srv_slots_destroy(s);
        return st;
    }
    *out_slots = s;
    return RT_OK;
}

void srv_slots_destroy(srv_slots_t *s) {
    if (s == NULL) return;
    if (s->started) {
        pthread_mutex_lock(&s->mu);
        s->stop = true;
        pthread_cond_signal(&s->work);
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->thread, NULL);
    }
    pthread_cond_destroy(&s->work);
    pthread_cond_destroy(&s->task_done);
    pthread_mutex_destroy(&s->mu);
    free(s->slot);
    free(s->tok);
    free(s->seq);
    free(s->want);
    for (int32_t i = 0; s->cached && i < s->n_slots; i++) free(s->cached[i]);
    free(s->cached);
    free(s->n_cached);
    free(s->last_used);
    free(s);
}

int32_t srv_slots_count(const srv_slots_t *s) { return s->n_slots; }

void srv_slots_stats(srv_slots_t *s, srv_stats_t *out, srv_slot_info_t *slots) {
    pthread_mutex_lock(&s->mu);
    *out = s->stats;
    out->n_busy = out->n_queued = out->n_cells = 0;
    for (const srv_job_t *j = s->head; j; j = j->next) out->n_queued++;
    for (int32_t i = 0; i < s->n_slots; i++) {
        const srv_job_t *j = s->slot[i];
        out->n_busy += j != NULL;
        out->n_cells += s->n_cached[i];
        if (slots)
            slots[i] = (srv_slot_info_t){.busy = j != NULL, .n_prompt = j ? j->g.n_prompt : 0,
                                         .n_decoded = j ? j->n_decoded : 0, .n_cached = s->n_cached[i]};
    }
    pthread_mutex_unlock(&s->mu);
}
