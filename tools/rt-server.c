/* SPDX-License-Identifier: MIT */
/* rt-server: an OpenAI-compatible HTTP server over one model, on
 * libmicrohttpd (HTTP) and jansson (JSON). GET /health, GET /v1/models,
 * POST /v1/completions and /v1/chat/completions (the model's own chat
 * template, rtm_chat_template_t), both with "stream": true as server-sent
 * events ending in "data: [DONE]". It binds 127.0.0.1 unless --host says
 * otherwise; --api-key asks every request for "Authorization: Bearer KEY".
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
#define MAX_STOPS SRV_MAX_STOPS
#define MAX_CONNECTIONS 256
/* Tokens per graph run: the CPU's mat-vec kernels take up to 32 activation
 * rows in passes over weights that stay in L2 (RT_CPU_MV_MAX_N,
 * plugins/cpu/ops_mul_mat.c), so that 16 slots decode as one graph, each
 * weight read from memory once a step: SmolLM2's 16 clients, -t 2, 603
 * tokens/s at 8 (two graphs a step), 872 at 16, 885 at 32. */
#define SERVER_N_BATCH 32
#define MAX_MESSAGES 256

typedef struct server_options {
    const char *model, *host, *api_key, *alias;
    int32_t port, n_ctx, n_threads, timeout_s, max_body;
    int32_t n_parallel;            /* slots: sequences decoded together */
    int32_t n_batch;               /* tokens per graph run */
    int32_t flash_attn;            /* rtm_flash_attn_t */
    int32_t type_k, type_v;        /* the KV cache's rt_type_t */
    bool no_mmap;                  /* --no-mmap: weights copied, not mapped */
} server_options_t;

typedef struct server {
    server_options_t o;
    rt_registry_t *reg;
    rtm_model_t *model;
    rtm_context_t *ctx;            /* n_parallel sequences of n_ctx_slot positions */
    int32_t n_ctx_slot;
    srv_slots_t *slots;
    rtm_chat_template_t *tmpl;     /* NULL: the model has none (chat answers 400) */
    char model_file[PATH_MAX];
} server_t;

//===--- options ---===//

static void usage(FILE *f) {
    fprintf(f, "usage: rt-server [options]\n"
               "  -m, --model FILE      GGUF model (default: the bundled stories260K)\n"
               "      --host ADDR       IPv4 address to listen on (default: 127.0.0.1)\n"
               "      --port N          TCP port (default: 8080)\n"
               "      --api-key KEY     require \"Authorization: Bearer KEY\" (default: none)\n"
               "  -a, --alias NAME      the model's id in /v1/models (default: the file's name)\n"
               "  -c, --ctx-size N      context length of each slot (default: the model's, at most 2048)\n"
               "  -np, --parallel N     slots: requests decoded together, in one batch (default: 4)\n"
               "  -b, --batch-size N    most tokens per graph run (default: 32)\n"
               "  -t, --threads N       CPU threads (default: the plugin's)\n"
               RT_CLI_ATTN_HELP
               RT_CLI_MMAP_HELP
               "      --timeout S       seconds an idle connection is kept (default: 60)\n"
               "      --max-body N      largest request body, bytes (default: 1048576)\n"
               "  -h, --help            this text\n"
               "      --version         release, ABI and commit\n"
               "More requests than slots wait for a free one.\n");
}

static int parse_args(int argc, char **argv, server_options_t *o) {
    enum { OPT_HOST = 1000, OPT_PORT, OPT_KEY, OPT_TIMEOUT, OPT_MAX_BODY, OPT_VERSION, OPT_PARALLEL,
           OPT_FA, OPT_CTK, OPT_CTV, OPT_NO_MMAP };
    static const struct option opts[] = {
        {"model", required_argument, NULL, 'm'}, {"host", required_argument, NULL, OPT_HOST},
        {"port", required_argument, NULL, OPT_PORT}, {"api-key", required_argument, NULL, OPT_KEY},
        {"alias", required_argument, NULL, 'a'}, {"ctx-size", required_argument, NULL, 'c'},
        {"threads", required_argument, NULL, 't'}, {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"max-body", required_argument, NULL, OPT_MAX_BODY}, {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, OPT_VERSION}, {"parallel", required_argument, NULL, OPT_PARALLEL},
        {"np", required_argument, NULL, OPT_PARALLEL}, {"batch-size", required_argument, NULL, 'b'},
        RT_CLI_ATTN_OPTIONS(OPT_FA, OPT_CTK, OPT_CTV), RT_CLI_MMAP_OPTION(OPT_NO_MMAP), {NULL, 0, NULL, 0}};
    *o = (server_options_t){.host = "127.0.0.1", .port = 8080, .timeout_s = 60, .max_body = 1 << 20,
                            .n_parallel = 4, .n_batch = SERVER_N_BATCH};
    for (int c; (c = getopt_long_only(argc, argv, "m:a:c:t:b:h", opts, NULL)) != -1;) {
        bool ok = true;
        switch (c) {
        case 'm': o->model = optarg; break;
        case 'a': o->alias = optarg; break;
        case OPT_HOST: o->host = optarg; break;
        case OPT_KEY: o->api_key = optarg; break;
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
        case 'h': usage(stdout); return 1;
        case OPT_VERSION: rt_cli_print_version(stdout, TOOL); return 1;
        default: return rt_cli_bad_usage(TOOL);
        }
        if (!ok) return rt_cli_bad_usage(TOOL);
    }
    return optind < argc ? rt_cli_bad_usage(TOOL) : 0;
}

//===--- responses ---===//

static enum MHD_Result send_json(struct MHD_Connection *c, unsigned status, json_t *body) {
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    if (text == NULL) return MHD_NO;
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(r, "Content-Type", "application/json");
    const enum MHD_Result ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result send_error(struct MHD_Connection *c, unsigned status, const char *type,
                                  const char *message) {
    return send_json(c, status, json_pack("{s:{s:s,s:s,s:i}}", "error", "message", message, "type", type,
                                          "code", (int)status));
}

//===--- requests ---===//

/* What a generation request asked for. */
typedef struct gen_request {
    bool chat, stream;
    char *prompt;                  /* malloc'd */
    int32_t max_tokens;
    rtm_sampler_params_t sampling;
    const char *stops[MAX_STOPS];
    int32_t n_stops;
    json_t *json;                  /* the body, owning the strings above */
} gen_request_t;

/* The chat messages rendered with the template; NULL after setting *err. */
static char *render_chat(const server_t *s, json_t *messages, const char **err) {
    rtm_chat_message_t m[MAX_MESSAGES];
    const size_t n = json_array_size(messages);
    if (!json_is_array(messages) || n == 0 || n > MAX_MESSAGES) return *err = "'messages' wants 1 to 256 messages", NULL;
    for (size_t i = 0; i < n; i++) {
        json_t *msg = json_array_get(messages, i);
        m[i].role = json_string_value(json_object_get(msg, "role"));
        m[i].content = json_string_value(json_object_get(msg, "content"));
        if (m[i].role == NULL || m[i].content == NULL) return *err = "each message wants 'role' and 'content' strings", NULL;
    }
    const rtm_vocab_t *v = rtm_model_vocab(s->model);
    const rtm_chat_render_params_t p = {.struct_size = sizeof p, .add_generation_prompt = true,
                                        .bos_token = rtm_vocab_token_text(v, rtm_vocab_bos(v)),
                                        .eos_token = rtm_vocab_token_text(v, rtm_vocab_eos(v))};
    size_t len = 0;
    char *out = NULL;
    rt_status_t st = rtm_chat_template_apply(s->tmpl, m, (int32_t)n, &p, NULL, 0, &len);
    if (st == RT_ERR_DOES_NOT_FIT && (out = malloc(len + 1)) != NULL)
        st = rtm_chat_template_apply(s->tmpl, m, (int32_t)n, &p, out, len + 1, &len);
    if (st != RT_OK) free(out), out = NULL, *err = rtm_last_error();
    return out;
}

/* The body as a request; NULL (after *err) when it is not one. */
static const char *parse_request(const server_t *s, const char *body, size_t len, gen_request_t *q) {
    json_error_t je;
    if ((q->json = json_loadb(body, len, 0, &je)) == NULL || !json_is_object(q->json)) return "the body is not a JSON object";
    json_t *j = q->json;
    q->stream = json_is_true(json_object_get(j, "stream"));
    json_t *mt = json_object_get(j, "max_tokens");
    if (mt == NULL) mt = json_object_get(j, "max_completion_tokens");
    q->max_tokens = json_is_integer(mt) ? (int32_t)json_integer_value(mt) : (q->chat ? -1 : 16);
    q->sampling = (rtm_sampler_params_t){.struct_size = sizeof q->sampling, .temp = 1.0f, .top_p = 1.0f};
    json_t *x;
    if (json_is_number(x = json_object_get(j, "temperature"))) q->sampling.temp = (float)json_number_value(x);
    if (json_is_number(x = json_object_get(j, "top_p"))) q->sampling.top_p = (float)json_number_value(x);
    if (json_is_integer(x = json_object_get(j, "top_k"))) q->sampling.top_k = (int32_t)json_integer_value(x);
    if (json_is_number(x = json_object_get(j, "min_p"))) q->sampling.min_p = (float)json_number_value(x);
    if (json_is_number(x = json_object_get(j, "repeat_penalty"))) q->sampling.repeat_penalty = (float)json_number_value(x);
    if (json_is_integer(x = json_object_get(j, "seed"))) q->sampling.seed = (uint64_t)json_integer_value(x);
    x = json_object_get(j, "stop");
    if (json_is_string(x) && json_string_length(x)) q->stops[q->n_stops++] = json_string_value(x);
    for (size_t i = 0; json_is_array(x) && i < json_array_size(x) && q->n_stops < MAX_STOPS; i++)
        if (json_string_length(json_array_get(x, i))) q->stops[q->n_stops++] = json_string_value(json_array_get(x, i));
    if (!q->chat) {
        const char *p = json_string_value(json_object_get(j, "prompt"));
        if (p == NULL) return "'prompt' wants a string";
        return (q->prompt = strdup(p)) ? NULL : "no memory";
    }
    if (s->tmpl == NULL) return "the model has no chat template";
    const char *err = NULL;
    q->prompt = render_chat(s, json_object_get(j, "messages"), &err);
    return q->prompt ? NULL : err;
}

static void request_free(gen_request_t *q) {
    free(q->prompt);
    json_decref(q->json);
}

//===--- answers ---===//

static json_t *choice(const gen_request_t *q, const char *text, const char *finish, bool delta) {
    json_t *ch = json_pack("{s:i}", "index", 0);
    if (q->chat) json_object_set_new(ch, delta ? "delta" : "message",
                                     delta ? json_pack("{s:s}", "content", text)
                                           : json_pack("{s:s,s:s}", "role", "assistant", "content", text));
    else json_object_set_new(ch, "text", json_string(text));
    json_object_set_new(ch, "finish_reason", finish ? json_string(finish) : json_null());
    return ch;
}

static json_t *envelope(const server_t *s, const gen_request_t *q, json_t *ch, bool chunk) {
    char id[64];
    snprintf(id, sizeof id, "%s-%ld", q->chat ? "chatcmpl" : "cmpl", (long)time(NULL));
    const char *object = q->chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion";
    return json_pack("{s:s,s:s,s:I,s:s,s:[o]}", "id", id, "object", object, "created", (json_int_t)time(NULL),
                     "model", s->o.alias, "choices", ch);
}

/* A streamed answer: its job and the bytes not yet sent. */
typedef struct stream {
    const server_t *s;
    gen_request_t q;
    srv_job_t *job;
    srv_text_t text;          /* what the last take gave */
    char *pending;
    size_t n_pending, at;
    bool finished, sent_done;
} stream_t;

static void stream_event(stream_t *st, json_t *body) {
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    const char *data = text ? text : "[DONE]";
    free(st->pending);
    st->n_pending = strlen(data) + 8;
    st->pending = malloc(st->n_pending + 1);
    st->at = 0;
    if (st->pending) snprintf(st->pending, st->n_pending + 1, "data: %s\n\n", data);
    else st->n_pending = 0;
    free(text);
}

/* Runs in the connection's thread, which may wait here for the decode
 * loop's next piece. */
static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    stream_t *st = cls;
    while (st->at == st->n_pending) {
        if (st->sent_done) return MHD_CONTENT_READER_END_OF_STREAM;
        if (st->finished) {
            stream_event(st, NULL);
            st->sent_done = true;
            break;
        }
        st->text.len = 0;
        if (st->text.p) st->text.p[0] = 0;
        st->finished = srv_job_take(st->job, &st->text, false);
        const srv_job_result_t *r = st->finished ? srv_job_result(st->job) : NULL;
        if (st->text.p == NULL && !st->finished) return MHD_CONTENT_READER_END_WITH_ERROR;
        if (r && r->failed) return MHD_CONTENT_READER_END_WITH_ERROR;
        if (st->text.len || st->finished)
            stream_event(st, envelope(st->s, &st->q, choice(&st->q, st->text.p ? st->text.p : "",
                                                            r ? r->finish : NULL, st->q.chat), true));
    }
    const size_t n = st->n_pending - st->at < max ? st->n_pending - st->at : max;
    memcpy(buf, st->pending + st->at, n);
    st->at += n;
    return (ssize_t)n;
}

/* Also called when the client went away mid-stream: the job is cancelled
 * and its slot freed by the decode loop. */
static void stream_free(void *cls) {
    stream_t *st = cls;
    srv_job_release(st->job);
    request_free(&st->q);
    free(st->text.p);
    free(st->pending);
    free(st);
}

static enum MHD_Result answer_whole(struct MHD_Connection *c, const server_t *s, gen_request_t *q, srv_job_t *job) {
    srv_text_t text = {0};
    bool done = false, oom = false;
    while (!done) {
        done = srv_job_take(job, &text, true);
        if (text.p == NULL && !done) oom = true;
    }
    const srv_job_result_t *res = srv_job_result(job);
    enum MHD_Result r;
    if (res->failed || oom) r = send_error(c, 500, "server_error", oom ? "no memory" : res->message);
    else {
        json_t *body = envelope(s, q, choice(q, text.p ? text.p : "", res->finish, false), false);
        json_object_set_new(body, "usage", json_pack("{s:i,s:i,s:i}", "prompt_tokens", res->n_prompt,
                                                     "completion_tokens", res->n_generated,
                                                     "total_tokens", res->n_prompt + res->n_generated));
        r = send_json(c, 200, body);
    }
    free(text.p);
    srv_job_release(job);
    request_free(q);
    return r;
}

static enum MHD_Result generate(struct MHD_Connection *c, const server_t *s, bool chat, const char *body, size_t len) {
    stream_t *st = calloc(1, sizeof *st);
    if (st == NULL) return send_error(c, 500, "server_error", "no memory");
    st->s = s;
    st->q.chat = chat;
    const char *err = parse_request(s, body, len, &st->q);
    srv_gen_t g = {0};
    rt_status_t gs = err ? RT_ERR_INVALID_ARGUMENT
                         : srv_gen_begin(&g, s->model, s->n_ctx_slot, st->q.prompt, chat, st->q.max_tokens,
                                         &st->q.sampling, st->q.stops, st->q.n_stops);
    if (err == NULL && gs == RT_ERR_DOES_NOT_FIT) err = "the prompt is longer than the context";
    else if (err == NULL && gs != RT_OK) err = rtm_last_error();
    if (err == NULL && (st->job = srv_job_submit(s->slots, &g)) == NULL) err = "no memory";
    if (err) srv_gen_end(&g);
    if (err || !st->q.stream) {
        enum MHD_Result r = err ? send_error(c, 400, "invalid_request_error", err) : answer_whole(c, s, &st->q, st->job);
        if (err) request_free(&st->q);
        free(st);
        return r;
    }
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_read, st, stream_free);
    MHD_add_response_header(r, "Content-Type", "text/event-stream");
    MHD_add_response_header(r, "Cache-Control", "no-cache");
    const enum MHD_Result ok = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return ok;
}

//===--- routing ---===//

typedef struct body {
    char *data;
    size_t len;
    bool too_big;
} body_t;

static bool authorised(const server_t *s, struct MHD_Connection *c) {
    if (s->o.api_key == NULL) return true;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    return h && strncmp(h, "Bearer ", 7) == 0 && strcmp(h + 7, s->o.api_key) == 0;
}

static enum MHD_Result route(const server_t *s, struct MHD_Connection *c, const char *url, const char *method,
                             const body_t *b) {
    if (strcmp(url, "/health") == 0) return send_json(c, 200, json_pack("{s:s}", "status", "ok"));
    if (!authorised(s, c)) return send_error(c, 401, "authentication_error", "a valid API key is needed");
    if (strcmp(url, "/v1/models") == 0 && strcmp(method, "GET") == 0)
        return send_json(c, 200, json_pack("{s:s,s:[{s:s,s:s,s:s}]}", "object", "list", "data", "id", s->o.alias,
                                           "object", "model", "owned_by", "rt"));
    const bool chat = strcmp(url, "/v1/chat/completions") == 0;
    if (!chat && strcmp(url, "/v1/completions") != 0) return send_error(c, 404, "not_found_error", "no such endpoint");
    if (strcmp(method, "POST") != 0) return send_error(c, 405, "invalid_request_error", "POST wanted");
    if (b->too_big) return send_error(c, 413, "invalid_request_error", "the body is larger than --max-body");
    return generate(c, s, chat, b->data ? b->data : "", b->len);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                              const char *version, const char *data, size_t *size, void **con_cls) {
    (void)version;
    const server_t *s = cls;
    body_t *b = *con_cls;
    if (b == NULL) {
        if ((b = calloc(1, sizeof *b)) == NULL) return MHD_NO;
        *con_cls = b;
        return MHD_YES;
    }
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

static int load(server_t *s) {
    if (s->o.model) snprintf(s->model_file, sizeof s->model_file, "%s", s->o.model);
    else rt_tools_bundled_model(s->model_file, sizeof s->model_file);
    if (s->o.alias == NULL) {
        const char *slash = strrchr(s->model_file, '/');
        s->o.alias = slash ? slash + 1 : s->model_file;
    }
    const int32_t np = s->o.n_parallel;
    /* rt-run's default plan: the memory split (RTM_SPLIT_AUTO) would put
     * layers on a software device such as lavapipe, ~40x slower here */
    const rtm_model_params_t mp = {.struct_size = sizeof mp, .registry = s->reg, .n_ctx = s->o.n_ctx * np,
                                   .split = RTM_SPLIT_FASTEST, .no_mmap = s->o.no_mmap};
    rt_status_t st = rtm_model_load(s->model_file, &mp, &s->model);
    if (st == RT_OK) {
        const int32_t train = rtm_model_n_ctx_train(s->model);
        s->n_ctx_slot = s->o.n_ctx ? s->o.n_ctx : train > 0 && train < 2048 ? train : 2048;
        const rtm_context_params_t cp = {.struct_size = sizeof cp, .n_ctx = s->n_ctx_slot * np,
                                         .n_threads = s->o.n_threads, .n_seq_max = np,
                                         .n_batch = s->o.n_batch, .type_k = s->o.type_k,
                                         .type_v = s->o.type_v, .flash_attn = s->o.flash_attn};
        st = rtm_context_create(s->model, &cp, &s->ctx);
    }
    if (st == RT_OK) st = srv_slots_create(s->ctx, np, s->n_ctx_slot, &s->slots);
    if (st != RT_OK) {
        fprintf(stderr, TOOL ": %s\n", s->slots == NULL && s->ctx != NULL ? "cannot start the decode loop"
                                                                          : rtm_last_error());
        return 1;
    }
    rt_gguf_t *g = NULL;
    const char *src = NULL;
    if (rt_gguf_open(s->model_file, NULL, &g) == RT_OK && rt_gguf_get_str(g, "tokenizer.chat_template", &src) == RT_OK &&
        rtm_chat_template_create(src, &s->tmpl) != RT_OK)
        fprintf(stderr, TOOL ": the chat template is not usable (chat answers 400): %s\n", rtm_last_error());
    rt_gguf_destroy(g);
    return 0;
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
                                            MHD_OPTION_NOTIFY_COMPLETED, request_done, NULL, MHD_OPTION_END);
    if (d == NULL) {
        fprintf(stderr, TOOL ": cannot listen on %s:%d\n", s->o.host, s->o.port);
        return 1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    fprintf(stderr, TOOL ": listening on http://%s:%u (model %s, %d slots of %d tokens)\n", s->o.host,
            info ? (unsigned)info->port : (unsigned)s->o.port, s->o.alias, s->o.n_parallel, s->n_ctx_slot);
    int sig = 0;
    sigwait(&set, &sig);
    MHD_stop_daemon(d);
    return 0;
}

int main(int argc, char **argv) {
    server_t s = {0};
    const int pa = parse_args(argc, argv, &s.o);
    if (pa != 0) return pa == 1 ? 0 : 2;
    int rc = rt_registry_create(NULL, &s.reg) == RT_OK ? 0 : (fprintf(stderr, TOOL ": %s\n", rt_last_error()), 1);
    if (rc == 0) rc = load(&s);
    if (rc == 0) rc = serve(&s);
    srv_slots_destroy(s.slots);
    rtm_chat_template_destroy(s.tmpl);
    rtm_context_destroy(s.ctx);
    rtm_model_destroy(s.model);
    rt_registry_destroy(s.reg);
    return rc;
}
