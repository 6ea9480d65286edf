/* SPDX-License-Identifier: MIT */
/* rt-server: an OpenAI-compatible HTTP server over one model, on
 * libmicrohttpd (HTTP) and jansson (JSON). GET /health, GET /v1/models,
 * POST /v1/completions and /v1/chat/completions (the model's own chat
 * template, rtm_chat_template_t), both with "stream": true as server-sent
 * events ending in "data: [DONE]", POST /v1/embeddings (any model:
 * server_embed.h), and at GET / a chat page (tools/server_page.html,
 * built in). It binds 127.0.0.1 unless --host says otherwise; --api-key
 * asks every request but /health and the page for "Authorization: Bearer
 * KEY" (the page asks its user for the key).
 * Bodies over --max-body bytes, bad JSON, a prompt longer than the context
 * get an OpenAI-style error body ({"error": {"message", "type", "code"}}).
 *
 * Several requests at once (continuous batching): a thread per connection
 * hands its request to the slots (server_slots.c), whose one decode loop
 * runs every slot's next token in one batch of one context; the
 * connection takes its text as it comes. A request waits for a free slot
 * when all --parallel are busy. */
#include "../abi/rt.h"
#include "../model/rt_model.h"
#include "bundled_model.h"
#include "chat_source.h"
#include "server_answer.h"
#include "server_embed.h"
#include "server_embedder.h"
#include "server_guard.h"
#include "server_info.h"
#include "server_page.h"
#include "server_request.h"
#include "server_slots.h"
#include "tool_cli.h"

#include <arpa/inet.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <microhttpd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TOOL "rt-server"
#define MAX_CONNECTIONS 256
#define MAX_DEVICES 16
/* Tokens per graph run: the CPU's mat-vec kernels take up to 32 activation
 * rows in passes over weights that stay in L2 (RT_CPU_MV_MAX_N,
 * plugins/cpu/ops_mul_mat.c), so that 16 slots decode as one graph, each
 * weight read from memory once a step: SmolLM2's 16 clients, -t 2, 603
 * tokens/s at 8 (two graphs a step), 872 at 16, 885 at 32. */
#define SERVER_N_BATCH 32

typedef struct server_options {
    const char *model, *host, *alias;
    char *api_key_arg;             /* --api-key's value, wiped once read */
    const char *api_key_file;
    int32_t port, n_ctx, n_threads, timeout_s, max_body;
    int32_t conns_per_client;      /* 0: no limit */
    const char *devices;           /* -dev LIST, or NULL: all */
    int32_t split, n_gpu_layers;   /* rtm_split_t, -ngl */
    bool split_given;              /* --split or -ngl (else the fastest plan, without -dev) */
    const char *chat_template;     /* --chat-template NAME|FILE */
    int32_t n_parallel;            /* slots: sequences decoded together */
    int32_t n_batch;               /* tokens per graph run */
    int32_t flash_attn;            /* rtm_flash_attn_t */
    int32_t type_k, type_v;        /* the KV cache's rt_type_t */
    bool no_mmap;                  /* --no-mmap: weights copied, not mapped */
    int32_t pooling;               /* rtm_pooling_t of /v1/embeddings (--pooling) */
} server_options_t;

typedef struct server {
    server_options_t o;
    rt_registry_t *reg;
    rtm_model_t *model;
    rtm_context_t *ctx;            /* n_parallel sequences of n_ctx_slot positions; NULL for
                                      an embedding model, which has no slots */
    int32_t n_ctx_slot;
    srv_slots_t *slots;            /* the decode loop: the slots, and the embedder's tasks */
    srv_embedder_t *embedder;
    rtm_chat_template_t *tmpl;     /* NULL: the model has none (chat answers 400) */
    char *api_key;                 /* NULL: none asked for */
    char *tmpl_src;                /* the chat template's source (/props), NULL: none */
    char model_file[PATH_MAX];
} server_t;

//===--- options ---===//

static void usage(FILE *f) {
    fprintf(f, "usage: rt-server [options]\n"
               "  -m, --model FILE      GGUF model (default: the bundled stories260K)\n"
               "      --host ADDR       IPv4 address to listen on (default: 127.0.0.1)\n"
               "      --port N          TCP port (default: 8080)\n"
               "      --api-key KEY     require \"Authorization: Bearer KEY\" (default: none; ps shows\n"
               "                        it until it is read: prefer RT_API_KEY or --api-key-file)\n"
               "      --api-key-file F  the key on F's first line\n"
               "  -a, --alias NAME      the model's id in /v1/models (default: the file's name)\n"
               "  -c, --ctx-size N      context length of each slot (default: the model's, at most 2048)\n"
               "  -np, --parallel N     slots: requests decoded together, in one batch (default: 4)\n"
               "  -b, --batch-size N    most tokens per graph run (default: 32)\n"
               "  -t, --threads N       CPU threads (default: the plugin's)\n"
               "  -dev, --device, --devices LIST  comma-separated devices (default: all)\n"
               "  -ngl, --n-gpu-layers, --gpu-layers N  the last N layers on the first GPU (-1: all)\n"
               "      --split auto|fastest  auto: as many layers on GPUs as fit, by free memory;\n"
               "                        fastest: the least predicted time (the default without\n"
               "                        -dev, -ngl or --split)\n"
               RT_CLI_CHAT_TEMPLATE_HELP
               RT_CLI_ATTN_HELP
               RT_CLI_MMAP_HELP
               "      --pooling mean|last  how /v1/embeddings pools a decoder's final hidden states\n"
               "                        (default: mean; an embedding model pools as it was trained)\n"
               "      --timeout S       seconds a client may take to send a request, and an idle\n"
               "                        connection is kept (default: 60; generation is not bounded)\n"
               "      --conns-per-client N  connections one client address may hold (default: 32;\n"
               "                        0: no limit, for a server behind a proxy)\n"
               "      --max-body N      largest request body, bytes (default: 1048576)\n"
               "  -h, --help            this text\n"
               "      --version         release, ABI and commit\n"
               "More requests than slots wait for a free one. GET / is a chat page.\n");
}

static bool parse_pooling(const char *s, int32_t *out) {
    *out = strcmp(s, "mean") == 0 ? RTM_POOLING_MEAN : strcmp(s, "last") == 0 ? RTM_POOLING_LAST : -1;
    if (*out < 0) fprintf(stderr, TOOL ": --pooling wants mean or last, not '%s'\n", s);
    return *out >= 0;
}

static int parse_args(int argc, char **argv, server_options_t *o) {
    enum { OPT_HOST = 1000, OPT_PORT, OPT_KEY, OPT_KEY_FILE, OPT_TIMEOUT, OPT_MAX_BODY, OPT_VERSION, OPT_PARALLEL,
           OPT_FA, OPT_CTK, OPT_CTV, OPT_NO_MMAP, OPT_PER_CLIENT, OPT_DEVICE, OPT_NGL, OPT_SPLIT,
           OPT_CHAT_TEMPLATE, OPT_POOLING };
    static const struct option opts[] = {
        {"model", required_argument, NULL, 'm'}, {"host", required_argument, NULL, OPT_HOST},
        {"port", required_argument, NULL, OPT_PORT}, {"api-key", required_argument, NULL, OPT_KEY},
        {"api-key-file", required_argument, NULL, OPT_KEY_FILE},
        {"conns-per-client", required_argument, NULL, OPT_PER_CLIENT},
        RT_CLI_DEVICE_OPTIONS(OPT_DEVICE), RT_CLI_NGL_OPTIONS(OPT_NGL),
        {"split", required_argument, NULL, OPT_SPLIT}, {"chat-template", required_argument, NULL, OPT_CHAT_TEMPLATE},
        {"alias", required_argument, NULL, 'a'}, {"ctx-size", required_argument, NULL, 'c'},
        {"threads", required_argument, NULL, 't'}, {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"max-body", required_argument, NULL, OPT_MAX_BODY}, {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, OPT_VERSION}, {"parallel", required_argument, NULL, OPT_PARALLEL},
        {"np", required_argument, NULL, OPT_PARALLEL}, {"batch-size", required_argument, NULL, 'b'},
        {"pooling", required_argument, NULL, OPT_POOLING},
        RT_CLI_ATTN_OPTIONS(OPT_FA, OPT_CTK, OPT_CTV), RT_CLI_MMAP_OPTION(OPT_NO_MMAP), {NULL, 0, NULL, 0}};
    *o = (server_options_t){.host = "127.0.0.1", .port = 8080, .timeout_s = 60, .max_body = 1 << 20,
                            .n_parallel = 4, .n_batch = SERVER_N_BATCH, .conns_per_client = 32};
    for (int c; (c = getopt_long_only(argc, argv, "m:a:c:t:b:h", opts, NULL)) != -1;) {
        bool ok = true;
        switch (c) {
        case 'm': o->model = optarg; break;
        case 'a': o->alias = optarg; break;
        case OPT_HOST: o->host = optarg; break;
        case OPT_KEY: o->api_key_arg = optarg; break;
        case OPT_KEY_FILE: o->api_key_file = optarg; break;
        case OPT_PER_CLIENT: ok = rt_cli_int(TOOL, "--conns-per-client", optarg, 0, MAX_CONNECTIONS, &o->conns_per_client); break;
        case OPT_PORT: ok = rt_cli_int(TOOL, "--port", optarg, 0, 65535, &o->port); break;
        case 'c': ok = rt_cli_int(TOOL, "--ctx-size", optarg, 16, 1 << 20, &o->n_ctx); break;
        case 't': ok = rt_cli_int(TOOL, "--threads", optarg, 1, 4096, &o->n_threads); break;
        case OPT_TIMEOUT: ok = rt_cli_int(TOOL, "--timeout", optarg, 1, 86400, &o->timeout_s); break;
        case OPT_MAX_BODY: ok = rt_cli_int(TOOL, "--max-body", optarg, 64, 1 << 30, &o->max_body); break;
        case OPT_PARALLEL: ok = rt_cli_int(TOOL, "--parallel", optarg, 1, 256, &o->n_parallel); break;
        case 'b': ok = rt_cli_int(TOOL, "--batch-size", optarg, 1, 4096, &o->n_batch); break;
        case OPT_FA: ok = rt_cli_flash_attn(TOOL, optarg, &o->flash_attn); break;
        case OPT_CTK: ok = rt_cli_cache_type(TOOL, "--cache-type-k", optarg, &o->type_k); break;
        case OPT_CTV: ok = rt_cli_cache_type(TOOL, "--cache-type-v", optarg, &o->type_v); break;
        case OPT_NO_MMAP: o->no_mmap = true; break;
        case OPT_DEVICE: o->devices = optarg; break;
        case OPT_SPLIT: ok = rt_cli_split(TOOL, optarg, &o->split), o->split_given = true; break;
        case OPT_NGL:
            o->split = RTM_SPLIT_N_GPU_LAYERS, o->split_given = true;
            ok = rt_cli_int(TOOL, "--n-gpu-layers", optarg, -1, INT32_MAX, &o->n_gpu_layers);
            break;
        case OPT_CHAT_TEMPLATE: o->chat_template = optarg; break;
        case OPT_POOLING: ok = parse_pooling(optarg, &o->pooling); break;
        case 'h': usage(stdout); return 1;
        case OPT_VERSION: rt_cli_print_version(stdout, TOOL); return 1;
        default: return rt_cli_bad_usage(TOOL);
        }
        if (!ok) return rt_cli_bad_usage(TOOL);
    }
    /* rt-run's rule: no device options, the fastest plan (the memory split
       would put layers on a software device such as lavapipe, ~40x slower
       here); named devices keep the memory split */
    if (!o->split_given && o->devices == NULL) o->split = RTM_SPLIT_FASTEST;
    return optind < argc ? rt_cli_bad_usage(TOOL) : 0;
}

//===--- responses ---===//

/* Sends body (stolen); close asks for the connection to be closed after it
 * (a request whose framing cannot be trusted); allow, unless NULL, is the
 * Allow header of a 405. */
static enum MHD_Result send_json_as(struct MHD_Connection *c, unsigned status, json_t *body, bool close,
                                    const char *allow) {
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (text == NULL) { /* out of memory, or a value jansson refused: still an answer */
        static const char oom[] = "{\"error\":{\"message\":\"the answer could not be made\","
                                  "\"type\":\"server_error\",\"param\":null,\"code\":500}}";
        status = 500;
        text = strdup(oom);
        if (text == NULL) return MHD_NO;
    }
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(r, "Content-Type", "application/json");
    if (close) MHD_add_response_header(r, "Connection", "close");
    if (allow) MHD_add_response_header(r, "Allow", allow);
    const enum MHD_Result ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result send_json(struct MHD_Connection *c, unsigned status, json_t *body) {
    return send_json_as(c, status, body, false, NULL);
}

static enum MHD_Result send_error(struct MHD_Connection *c, unsigned status, const char *type,
                                  const char *message) {
    return send_json(c, status, srv_answer_error(status, type, NULL, message));
}

//===--- generation ---===//

/* One request's choices, each a job, and the reply being built. */
typedef struct reply {
    const server_t *s;
    srv_request_t q;
    srv_answer_t a;
    srv_job_t *job[SRV_MAX_CHOICES];
    int32_t n_jobs;
    srv_usage_t usage;
} reply_t;

static void reply_free(reply_t *r) {
    for (int32_t i = 0; i < r->n_jobs; i++) srv_job_release(r->job[i]);
    srv_request_deinit(&r->q);
    free(r);
}

/* The client's socket, which the slots watch to cancel the jobs of a
 * client that went away. */
static int client_fd(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    return ci ? (int)ci->connect_fd : -1;
}

/* Begins and submits choice i (its seed the request's plus i, so that the
 * choices differ and each can be had again alone); NULL or an error. */
static const char *submit(reply_t *r, int32_t i, int fd) {
    const server_t *s = r->s;
    rtm_sampler_params_t sp = r->q.sampling;
    sp.seed += (uint64_t)i;
    const srv_gen_params_t gp = {.prompt = r->q.prompt, .parse_special = r->q.chat, .max_tokens = r->q.max_tokens,
                                 .sampling = &sp, .stops = r->q.stops, .n_stops = r->q.n_stops,
                                 .logprobs = r->q.logprobs};
    srv_gen_t g;
    const rt_status_t st = srv_gen_begin(&g, s->model, s->n_ctx_slot, &gp);
    if (st != RT_OK) {
        srv_gen_end(&g);
        return st == RT_ERR_DOES_NOT_FIT ? "the prompt is longer than the context" : rtm_last_error();
    }
    if ((r->job[i] = srv_job_submit(s->slots, &g, fd)) == NULL) return "no memory";
    r->n_jobs = i + 1;
    return NULL;
}

/* Adds a finished job's counts to the usage. */
static void count(reply_t *r, const srv_job_result_t *res) {
    r->usage.prompt_tokens = res->n_prompt;
    r->usage.cached_tokens = res->n_cached;
    r->usage.completion_tokens += res->n_generated;
}

static enum MHD_Result answer_whole(struct MHD_Connection *c, reply_t *r) {
    json_t *choices = json_array();
    const srv_job_result_t *bad = NULL;
    bool oom = false;
    for (int32_t i = 0; i < r->n_jobs && !bad && !oom; i++) {
        srv_text_t text = {0};
        for (bool done = false; !done;) {
            done = srv_job_take(r->job[i], &text, true);
            oom |= text.p == NULL && !done;
        }
        const srv_job_result_t *res = srv_job_result(r->job[i]);
        if (res->failed || res->gone) bad = res;
        count(r, res);
        json_array_append_new(choices, srv_answer_choice(&r->a, i, &text, res));
        srv_text_free(&text);
    }
    enum MHD_Result ok;
    if (bad && bad->gone) ok = MHD_NO; /* no one to answer */
    else if (bad || oom) ok = send_error(c, 500, "server_error", oom ? "no memory" : bad->message);
    else ok = send_json(c, 200, srv_answer_whole(&r->a, choices, &r->usage)), choices = NULL;
    json_decref(choices);
    reply_free(r);
    return ok;
}

/* A streamed reply: choice `at` is being sent; pending[sent..n_pending)
 * is the event not yet written. */
typedef struct stream {
    reply_t *r;
    int32_t at;
    bool started;             /* choice `at` had its first chunk */
    bool usage_sent;          /* stream_options.include_usage's chunk */
    bool ended;               /* the last event is pending */
    srv_text_t text;
    char *pending;
    size_t n_pending, sent;
} stream_t;

/* body (stolen) as "data: JSON\n\n"; NULL: "data: [DONE]". */
static void stream_event(stream_t *st, json_t *body) {
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    const char *data = text ? text : "[DONE]";
    free(st->pending);
    st->n_pending = strlen(data) + 8;
    st->pending = malloc(st->n_pending + 1);
    st->sent = 0;
    if (st->pending) snprintf(st->pending, st->n_pending + 1, "data: %s\n\n", data);
    else st->n_pending = 0;
    free(text);
}

/* The next event: a piece of choice `at`, its end, the usage, [DONE] or
 * an error; false when there is nothing more to send. */
static bool stream_next(stream_t *st) {
    reply_t *r = st->r;
    if (st->ended) return false;
    if (st->at == r->n_jobs) {
        if (r->q.include_usage && !st->usage_sent) {
            st->usage_sent = true;
            stream_event(st, srv_answer_usage_chunk(&r->a, &r->usage));
        } else {
            st->ended = true;
            stream_event(st, NULL);
        }
        return true;
    }
    srv_text_clear(&st->text);
    const bool finished = srv_job_take(r->job[st->at], &st->text, false);
    const srv_job_result_t *res = finished ? srv_job_result(r->job[st->at]) : NULL;
    if (st->text.p == NULL && !finished) res = NULL, st->ended = true;
    if (res && res->failed && st->text.len > 0) { /* text the failure came after: sent first, */
        stream_event(st, srv_answer_chunk(&r->a, st->at, &st->text, !st->started, NULL));
        st->started = true;
        return true;                              /* the error at the next call */
    }
    if (res && (res->failed || res->gone)) st->ended = true;
    if (st->ended) { /* an error event, then the end (no [DONE]: the reply failed) */
        stream_event(st, srv_answer_error(500, "server_error", NULL, res ? res->message : "no memory"));
        return true;
    }
    if (res) count(r, res);
    stream_event(st, srv_answer_chunk(&r->a, st->at, &st->text, !st->started, res));
    st->started = !finished;
    if (finished) st->at++;
    return true;
}

/* Runs in the connection's thread, which may wait here for the decode
 * loop's next piece. */
static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    stream_t *st = cls;
    while (st->sent == st->n_pending)
        if (!stream_next(st)) return MHD_CONTENT_READER_END_OF_STREAM;
    if (st->pending == NULL) return MHD_CONTENT_READER_END_WITH_ERROR;
    const size_t n = st->n_pending - st->sent < max ? st->n_pending - st->sent : max;
    memcpy(buf, st->pending + st->sent, n);
    st->sent += n;
    return (ssize_t)n;
}

/* Also called when the client went away mid-stream: the jobs are
 * cancelled and their slots freed by the decode loop. */
static void stream_free(void *cls) {
    stream_t *st = cls;
    reply_free(st->r);
    srv_text_free(&st->text);
    free(st->pending);
    free(st);
}

static enum MHD_Result answer_stream(struct MHD_Connection *c, reply_t *r) {
    stream_t *st = calloc(1, sizeof *st);
    if (st == NULL) {
        reply_free(r);
        return send_error(c, 500, "server_error", "no memory");
    }
    st->r = r;
    struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_read, st, stream_free);
    MHD_add_response_header(resp, "Content-Type", "text/event-stream");
    MHD_add_response_header(resp, "Cache-Control", "no-cache");
    const enum MHD_Result ok = MHD_queue_response(c, 200, resp);
    MHD_destroy_response(resp);
    return ok;
}

static enum MHD_Result generate(struct MHD_Connection *c, const server_t *s, bool chat, const char *body, size_t len) {
    if (s->ctx == NULL)
        return send_error(c, 400, "invalid_request_error", "this model makes embeddings; it cannot generate "
                                                           "(POST /v1/embeddings)");
    reply_t *r = calloc(1, sizeof *r);
    if (r == NULL) return send_error(c, 500, "server_error", "no memory");
    r->s = s;
    const srv_request_info_t info = {.model = s->model, .tmpl = s->tmpl, .n_ctx = s->n_ctx_slot};
    if (!srv_request_parse(&r->q, &info, chat, body, len)) {
        const enum MHD_Result ok = send_json(c, 400, srv_answer_error(400, "invalid_request_error", r->q.param,
                                                                    r->q.error));
        reply_free(r);
        return ok;
    }
    srv_answer_init(&r->a, &r->q, s->model, s->o.alias, s->n_ctx_slot);
    const char *err = NULL;
    const int fd = client_fd(c);
    for (int32_t i = 0; i < r->q.n && err == NULL; i++) err = submit(r, i, fd);
    if (err) {
        const enum MHD_Result ok = send_json(c, 400, srv_answer_error(400, "invalid_request_error", NULL, err));
        reply_free(r);
        return ok;
    }
    return r->q.stream ? answer_stream(c, r) : answer_whole(c, r);
}

//===--- embeddings ---===//

/* One input's embedding, computed on the decode loop's thread. */
typedef struct embed_task {
    srv_embedder_t *e;
    const srv_embed_input_t *in;
    float *out;
    rt_status_t st;
    char message[256];        /* why it failed (the loop thread's rtm_last_error) */
} embed_task_t;

static void embed_one(void *arg) {
    embed_task_t *t = arg;
    t->st = srv_embedder_run(t->e, t->in->tokens, t->in->n_tokens, t->out);
    if (t->st != RT_OK) snprintf(t->message, sizeof t->message, "%s", rtm_last_error());
}

/* Each input is a task of its own, so that a generation in flight waits
 * for one input at a time, never for a whole request. */
static enum MHD_Result embed(struct MHD_Connection *c, const server_t *s, const char *body, size_t len) {
    srv_embed_request_t q;
    const int32_t n_embd = rtm_model_n_embd(s->model);
    if (!srv_embed_parse(&q, rtm_model_n_vocab(s->model), n_embd, body, len) ||
        !srv_embed_tokenize(&q, rtm_model_vocab(s->model), srv_embedder_n_ctx(s->embedder))) {
        const enum MHD_Result ok = send_json(c, 400, srv_answer_error(400, "invalid_request_error", q.param, q.error));
        srv_embed_deinit(&q);
        return ok;
    }
    float *v = malloc((size_t)q.n_inputs * (size_t)n_embd * sizeof v[0]);
    const char *err = v ? NULL : "no memory";
    embed_task_t t = {.e = s->embedder};
    for (int32_t i = 0; err == NULL && i < q.n_inputs; i++) {
        t.in = &q.inputs[i];
        t.out = v + (size_t)i * (size_t)n_embd;
        if (!srv_slots_run(s->slots, embed_one, &t)) err = "the server is stopping";
        else if (t.st != RT_OK) err = t.message;
    }
    const enum MHD_Result ok = err ? send_error(c, 500, "server_error", err)
                                   : send_json(c, 200, srv_embed_answer(&q, v, n_embd, s->o.alias));
    free(v);
    srv_embed_deinit(&q);
    return ok;
}

//===--- routing ---===//

typedef struct body {
    char *data;
    size_t len;
    bool too_big;
    bool refused;             /* framing: answered before the body */
} body_t;

static enum MHD_Result send_text(struct MHD_Connection *c, unsigned status, char *text, const char *type) {
    if (text == NULL) return send_error(c, 500, "server_error", "no memory");
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(r, "Content-Type", type);
    const enum MHD_Result ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ok;
}

static srv_info_t info_of(const server_t *s) {
    return (srv_info_t){.model = s->model, .model_path = s->model_file, .alias = s->o.alias,
                        .chat_template = s->tmpl_src, .slots = s->slots, .n_ctx_slot = s->n_ctx_slot,
                        .pooling = srv_embedder_pooling(s->embedder) == RTM_POOLING_LAST ? "last" : "mean"};
}

/* The chat page, built in: served without a key (it asks its user for
 * one), under a policy that lets it load nothing and reach this server
 * alone. */
static enum MHD_Result send_page(struct MHD_Connection *c) {
    struct MHD_Response *r = MHD_create_response_from_buffer(srv_page_html_size, (void *)srv_page_html,
                                                             MHD_RESPMEM_PERSISTENT);
    MHD_add_response_header(r, "Content-Type", "text/html; charset=utf-8");
    MHD_add_response_header(r, "Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; "
                            "style-src 'unsafe-inline'; connect-src 'self'; base-uri 'none'; "
                            "form-action 'none'; frame-ancestors 'none'");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
    const enum MHD_Result ok = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return ok;
}

/* An info endpoint's answer: json, or a 400 with err. */
static enum MHD_Result send_info(struct MHD_Connection *c, json_t *json, const char *err) {
    if (json) return send_json(c, 200, json);
    return err ? send_error(c, 400, "invalid_request_error", err) : send_error(c, 500, "server_error", "no memory");
}

typedef enum endpoint {
    EP_HEALTH, EP_MODELS, EP_COMPLETIONS, EP_CHAT, EP_TOKENIZE, EP_DETOKENIZE, EP_PROPS, EP_SLOTS, EP_METRICS,
    EP_EMBEDDINGS, EP_PAGE
} endpoint_t;

static const struct route {
    const char *path, *method;
    endpoint_t ep;
} routes[] = {
    {"/health", "GET", EP_HEALTH},            {"/v1/models", "GET", EP_MODELS},        {"/v1/completions", "POST", EP_COMPLETIONS},
    {"/completions", "POST", EP_COMPLETIONS}, {"/v1/chat/completions", "POST", EP_CHAT},
    {"/chat/completions", "POST", EP_CHAT},  {"/tokenize", "POST", EP_TOKENIZE},
    {"/detokenize", "POST", EP_DETOKENIZE},  {"/props", "GET", EP_PROPS},
    {"/slots", "GET", EP_SLOTS},             {"/metrics", "GET", EP_METRICS},
    {"/v1/embeddings", "POST", EP_EMBEDDINGS}, {"/embeddings", "POST", EP_EMBEDDINGS},
    {"/", "GET", EP_PAGE},                   {"/index.html", "GET", EP_PAGE},
};

static enum MHD_Result serve_endpoint(const server_t *s, struct MHD_Connection *c, endpoint_t ep, const body_t *b) {
    const srv_info_t in = info_of(s);
    const char *body = b->data ? b->data : "", *err = NULL;
    json_t *j = NULL;
    switch (ep) {
    case EP_HEALTH: return send_json(c, 200, json_pack("{s:s}", "status", "ok"));
    case EP_MODELS:
        return send_json(c, 200, json_pack("{s:s,s:[{s:s,s:s,s:s}]}", "object", "list", "data", "id", s->o.alias,
                                           "object", "model", "owned_by", "rt"));
    case EP_COMPLETIONS: return generate(c, s, false, body, b->len);
    case EP_CHAT: return generate(c, s, true, body, b->len);
    case EP_TOKENIZE: j = srv_info_tokenize(&in, body, b->len, &err); return send_info(c, j, err);
    case EP_DETOKENIZE: j = srv_info_detokenize(&in, body, b->len, &err); return send_info(c, j, err);
    case EP_PROPS: return send_info(c, srv_info_props(&in), NULL);
    case EP_SLOTS: return send_info(c, srv_info_slots(&in), NULL);
    case EP_METRICS: return send_text(c, 200, srv_info_metrics(&in), "text/plain; version=0.0.4");
    case EP_EMBEDDINGS: return embed(c, s, body, b->len);
    case EP_PAGE: return send_page(c);
    }
    return send_error(c, 404, "not_found_error", "no such endpoint");
}

/* 405 with the Allow header RFC 9110 asks for. */
static enum MHD_Result send_not_allowed(struct MHD_Connection *c, const struct route *r) {
    char why[64];
    snprintf(why, sizeof why, "%s wants %s", r->path, r->method);
    return send_json_as(c, 405, srv_answer_error(405, "invalid_request_error", NULL, why), false, r->method);
}

static enum MHD_Result route(const server_t *s, struct MHD_Connection *c, const char *url, const char *method,
                             const body_t *b) {
    const struct route *r = NULL;
    for (size_t i = 0; i < sizeof routes / sizeof routes[0] && r == NULL; i++)
        if (strcmp(url, routes[i].path) == 0) r = &routes[i];
    if (r == NULL || (r->ep != EP_HEALTH && r->ep != EP_PAGE && !srv_guard_authorised(c, s->api_key)))
        return r ? send_error(c, 401, "authentication_error", "a valid API key is needed")
                 : send_error(c, 404, "not_found_error", "no such endpoint");
    if (strcmp(method, r->method) != 0) return send_not_allowed(c, r);
    if (b->too_big) return send_error(c, 413, "invalid_request_error", "the body is larger than --max-body");
    return serve_endpoint(s, c, r->ep, b);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                              const char *version, const char *data, size_t *size, void **con_cls) {
    (void)version;
    const server_t *s = cls;
    body_t *b = *con_cls;
    if (b == NULL) {
        if ((b = calloc(1, sizeof *b)) == NULL) return MHD_NO;
        *con_cls = b;
        unsigned status = 0;
        const char *bad = srv_guard_framing(c, &status);
        if (bad) b->refused = true;
        return bad ? send_json_as(c, status, srv_answer_error(status, "invalid_request_error", NULL, bad), true, NULL)
                   : MHD_YES;
    }
    if (b->refused) return MHD_NO; /* the answer is queued: the rest is not read */
    if (*size) {
        if (!b->too_big && b->len + *size <= (size_t)s->o.max_body) {
            char *p = realloc(b->data, b->len + *size + 1);
            if (p == NULL) return MHD_NO;
            memcpy(p + b->len, data, *size);
            b->data = p;
            b->data[b->len += *size] = 0;
        } else {
            b->too_big = true;
        }
        *size = 0;
        return MHD_YES;
    }
    return route(s, c, url, method, b);
}

static void request_done(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode t) {
    (void)cls, (void)c, (void)t;
    body_t *b = *con_cls;
    if (b) free(b->data);
    free(b);
    *con_cls = NULL;
}

//===--- main ---===//

/* --chat-template's, else the model's template. None is not a failure:
 * chat then answers 400 saying so, completions work. */
static int load_template(server_t *s) {
    char origin[256], names[128];
    if (!rt_chat_source(TOOL, s->o.chat_template, s->model_file, &s->tmpl_src, origin, sizeof origin)) return 1;
    if (s->tmpl_src == NULL)
        fprintf(stderr, TOOL ": %s has no chat template: /v1/chat/completions answers 400 until one is named "
                        "with --chat-template (%s or a file); /v1/completions works\n", s->o.alias,
                rt_chat_source_names(names, sizeof names));
    else if (rtm_chat_template_create(s->tmpl_src, &s->tmpl) != RT_OK)
        fprintf(stderr, TOOL ": %s is not usable (chat answers 400): %s\n", origin, rtm_last_error());
    return 0;
}

/* The embedder (its context is made by the first /v1/embeddings); an
 * embedding model has no chat template to load. */
static int load_embedder(server_t *s, bool encoder) {
    const srv_embedder_params_t ep = {.model = s->model, .n_ctx = s->n_ctx_slot, .n_threads = s->o.n_threads,
                                      .pooling = s->o.pooling, .flash_attn = s->o.flash_attn,
                                      .type_k = s->o.type_k, .type_v = s->o.type_v};
    const rt_status_t st = srv_embedder_create(&ep, &s->embedder);
    if (st != RT_OK) {
        fprintf(stderr, TOOL ": %s\n", st == RT_ERR_UNSUPPORTED
                ? "an embedding model pools as it was trained (the mean): --pooling last is refused"
                : "no memory");
        return 1;
    }
    if (!encoder) return load_template(s);
    fprintf(stderr, TOOL ": %s is an embedding model: /v1/embeddings answers, generation is refused (400)\n",
            s->o.alias);
    return 0;
}

static int load(server_t *s) {
    if (s->o.model) snprintf(s->model_file, sizeof s->model_file, "%s", s->o.model);
    else rt_tools_bundled_model(s->model_file, sizeof s->model_file);
    if (s->o.alias == NULL) {
        const char *slash = strrchr(s->model_file, '/');
        s->o.alias = slash ? slash + 1 : s->model_file;
    }
    const int32_t np = s->o.n_parallel;
    rt_device_t *devs[MAX_DEVICES];
    int32_t n_devs = 0;
    if (s->o.devices && !rt_cli_find_devices(TOOL, s->reg, s->o.devices, devs, MAX_DEVICES, &n_devs)) return 1;
    const rtm_model_params_t mp = {.struct_size = sizeof mp, .registry = s->reg, .n_ctx = s->o.n_ctx * np,
                                   .devices = n_devs ? devs : NULL, .n_devices = n_devs, .split = s->o.split,
                                   .n_gpu_layers = s->o.n_gpu_layers, .no_mmap = s->o.no_mmap};
    if (rtm_model_load(s->model_file, &mp, &s->model) != RT_OK) {
        fprintf(stderr, TOOL ": %s\n", rtm_last_error());
        return 1;
    }
    const int32_t train = rtm_model_n_ctx_train(s->model);
    s->n_ctx_slot = s->o.n_ctx ? s->o.n_ctx : train > 0 && train < 2048 ? train : 2048;
    const bool encoder = rtm_model_is_embedding(s->model); /* no slots: nothing to generate */
    const rtm_context_params_t cp = {.struct_size = sizeof cp, .n_ctx = s->n_ctx_slot * np,
                                     .n_threads = s->o.n_threads, .n_seq_max = np,
                                     .n_batch = s->o.n_batch, .type_k = s->o.type_k,
                                     .type_v = s->o.type_v, .flash_attn = s->o.flash_attn};
    if (!encoder && rtm_context_create(s->model, &cp, &s->ctx) != RT_OK) {
        fprintf(stderr, TOOL ": %s\n", rtm_last_error());
        return 1;
    }
    if (srv_slots_create(s->ctx, encoder ? 0 : np, s->n_ctx_slot, &s->slots) != RT_OK) {
        fprintf(stderr, TOOL ": cannot start the decode loop\n");
        return 1;
    }
    return load_embedder(s, encoder);
}

static int serve(server_t *s) {
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)s->o.port)};
    if (inet_pton(AF_INET, s->o.host, &addr.sin_addr) != 1) {
        fprintf(stderr, TOOL ": --host wants an IPv4 address, not '%s'\n", s->o.host);
        return 2;
    }
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL); /* the daemon's thread inherits the mask */
    signal(SIGPIPE, SIG_IGN);
    /* a thread per connection: each waits for its slot's text without
       holding up the others */
    struct MHD_Daemon *d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                                            MHD_USE_ERROR_LOG, 0, NULL, NULL,
                                            handle, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
                                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)s->o.timeout_s,
                                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)MAX_CONNECTIONS,
                                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)s->o.conns_per_client,
                                            MHD_OPTION_NOTIFY_COMPLETED, request_done, NULL, MHD_OPTION_END);
    if (d == NULL) {
        fprintf(stderr, TOOL ": cannot listen on %s:%d\n", s->o.host, s->o.port);
        return 1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    fprintf(stderr, TOOL ": listening on http://%s:%u (model %s, %d slots of %d tokens)\n", s->o.host,
            info ? (unsigned)info->port : (unsigned)s->o.port, s->o.alias, srv_slots_count(s->slots), s->n_ctx_slot);
    int sig = 0;
    sigwait(&set, &sig);
    MHD_stop_daemon(d);
    return 0;
}

int main(int argc, char **argv) {
    server_t s = {0};
    const int pa = parse_args(argc, argv, &s.o);
    if (pa != 0) return pa == 1 ? 0 : 2;
    const char *key_err = NULL;
    s.api_key = srv_guard_load_key(s.o.api_key_file, s.o.api_key_arg, &key_err);
    srv_guard_wipe_arg(s.o.api_key_arg);
    if (key_err) {
        fprintf(stderr, TOOL ": %s\n", key_err);
        return 2;
    }
    int rc = rt_registry_create(NULL, &s.reg) == RT_OK ? 0 : (fprintf(stderr, TOOL ": %s\n", rt_last_error()), 1);
    if (rc == 0) rc = load(&s);
    if (rc == 0) rc = serve(&s);
    srv_slots_destroy(s.slots);
    srv_embedder_destroy(s.embedder);
    rtm_chat_template_destroy(s.tmpl);
    rtm_context_destroy(s.ctx);
    rtm_model_destroy(s.model);
    rt_registry_destroy(s.reg);
    free(s.api_key);
    free(s.tmpl_src);
    return rc;
}
