/* SPDX-License-Identifier: MIT */
/* server_request.c: see server_request.h. One table lists every field
 * either endpoint knows, with the function that reads it; a field not in
 * the table is refused as unknown, and a reader refuses the values rt
 * cannot honour (tools, a JSON response format, images, mirostat, ...). */
#include "server_request.h"
#include "utf8_text.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#define MAX_MESSAGES 256

/* Refuses the request: q->param names the field, q->error says why.
 * Always false, so that a reader can return it. */
static bool refuse(srv_request_t *q, const char *param, const char *fmt, ...) RT_PRINTF(3, 4);
static bool refuse(srv_request_t *q, const char *param, const char *fmt, ...) {
    char why[sizeof q->error];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    /* a field's name cut short may end inside a character, and the JSON
       parser's "near '...'" may quote one cut short: JSON wants whole ones */
    rt_utf8_copy_valid(q->param, sizeof q->param, param ? param : "");
    rt_utf8_copy_valid(q->error, sizeof q->error, why);
    return false;
}

/* At most 32 bytes of a client's text for a message, cut before a
 * character rather than inside one. */
typedef struct clip {
    char s[33];
} clip_t;

static clip_t clip(const char *text) {
    clip_t c;
    snprintf(c.s, sizeof c.s, "%s", text ? text : "?");
    c.s[rt_utf8_complete(c.s, strlen(c.s))] = 0;
    return c;
}

//===--- values ---===//

/* v as a finite number in [lo, hi]. */
static bool number(srv_request_t *q, const char *name, json_t *v, double lo, double hi, float *out) {
    const double x = json_number_value(v);
    if (!json_is_number(v) || !isfinite(x) || x < lo || x > hi)
        return refuse(q, name, "'%s' wants a number from %g to %g", name, lo, hi);
    *out = (float)x;
    return true;
}

/* v as an integer in [lo, hi] (checked before it is narrowed). */
static bool integer(srv_request_t *q, const char *name, json_t *v, json_int_t lo, json_int_t hi, int32_t *out) {
    const json_int_t x = json_integer_value(v);
    if (!json_is_integer(v) || x < lo || x > hi)
        return refuse(q, name, "'%s' wants an integer from %lld to %lld", name, (long long)lo, (long long)hi);
    *out = (int32_t)x;
    return true;
}

static bool boolean(srv_request_t *q, const char *name, json_t *v, bool *out) {
    if (!json_is_boolean(v)) return refuse(q, name, "'%s' wants true or false", name);
    *out = json_is_true(v);
    return true;
}

//===--- the fields ---===//

typedef bool (*read_fn)(srv_request_t *q, const srv_request_info_t *info, const char *name, json_t *v);

static bool read_any(srv_request_t *q, const srv_request_info_t *info, const char *name, json_t *v) {
    (void)q, (void)info, (void)name, (void)v;
    return true; /* messages, prompt: read once the other fields are */
}

/* model: one is served, whatever the name; user: an id for the client's own logs. */
static bool read_string(srv_request_t *q, const srv_request_info_t *info, const char *name, json_t *v) {
    (void)info;
    return json_is_string(v) ? true : refuse(q, name, "'%s' wants a string", name);
}

static bool read_stream(srv_request_t *q, const srv_request_info_t *info, const char *name, json_t *v) {
    (void)info;
    return boolean(q, name, v, &q->stream);
}

static bool read_stream_options(srv_request_t *q, const srv_request_info_t *info, const char *name, json_t *v) {
    (void)info;
    if (!json_is_object(v)) return refuse(q, name, "'%s' wants an object", name);
    const char *key;
    json_t *x;
    json_object_foreach(v, key, x) {
        if (strcmp(key, "include_usage") != 0) return refuse(q, name, "'%s.%s' is not supported", name, key);
        if (!json_is_null(x) && !boolean(q, "stream_options.include_usage", x, &q->include_usage)) return false;
    }
    return true;
}

static bool read_max_tokens(srv_request_t *q, const srv_request_info_t *info, const char *name, json_t *v) {
    (void)info;
    return integer(q, name, v, strcmp(name, "n_predict") == 0 ? -1 : 0, INT32_MAX, &q->max_tokens);
}

static bool read_temperature(srv_request_t *q, const srv_request_info_t *info, const char *name, json_t *v) {
    (void)info;
    return number(q, name, v, 0, 100, &q->sampling.temp);
}

/* top_p, min_p, typical_p: a mass or a ratio. */
static bool read_unit(srv_request_t *q, const srv_request_info_t *info, const char *name, json_t *v) {
    (void)info;
    rtm_sampler_params_t *p = &q->sampling;
    float *dst = strcmp(name, "top_p") == 0 ? &p->top_p : strcmp(name, "min_p") == 0 ? &p->min_p : &p->typical_p;
    return number(q, name, v, 0, 1, dst);
}

static bool read_top_k(srv_request_t *q, const srv_request_info_t *info, const char *name, json_t *v) {
    (void)info;
    return integer(q, name, v, 0, INT32_MAX, &q->sampling.top_k);
}

static bool read_penalty(srv_request_t *q, const srv_request_info_t *info, const char *name, json_t *v) {
    (void)info;
    if (strcmp(name, "repeat_penalty") == 0) return number(q, name, v, 0, 100, &q->sampling.repeat_penalty);
    return number(q, name, v, -2, 2,
                  strcmp(name, "presence_penalty") == 0 ? &q->sampling.presence_penalty
                                                        : &q->sampling.frequency_penalty);
}

static bool read_repeat_last_n(srv_request_t *q, const srv_request_info_t *info, const char *name, json_t *v) {
    int32_t n = 0;
    if (!integer(q, name, v, -1, info->n_ctx, &n)) return false;
    q->sampling.repeat_last_n = n < 0 ? info->n_ctx : n; /* -1: the whole context, as llama-server */
    return true;
}

static bool read_seed(srv_request_t *q, const srv_request_info_t *info, const char *name, json_t *v) {
    (void)info;
    if (!json_is_integer(v)) return refuse(q, name, "'%s' wants an integer", name);
    if (json_integer_value(v) != -1) q->sampling.seed = (uint64_t)json_integer_value(v); /* -1: random */
    return true;
}

static bool read_stop(srv_request_t *q, const srv_request_info_t *info, const char *name, json_t *v) {
    (void)info;
    if (json_is_string(v)) {
        if (json_string_length(v)) q->stops[q->n_stops++] = json_string_value(v);
        return true;
    }
    if (!json_is_array(v) || json_array_size(v) > SRV_MAX_STOPS)
        return refuse(q, name, "'%s' wants a string or a list of at most %d strings", name, SRV_MAX_STOPS);
    for (size_t i = 0; i < json_array_size(v); i++) {
        json_t *x = json_array_get(v, i);
        if (!json_is_string(x)) return refuse(q, name, "'%s' wants a list of strings", name);
        if (json_string_length(x)) q->stops[q->n_stops++] = json_string_value(x);
    }
    return true;
}

static bool read_n(srv_request_t *q, const srv_request_info_t *info, const char *name, json_t *v) {
    (void)info;
    return integer(q, name, v, 1, SRV_MAX_CHOICES, &q->n);
}

/* {"token id": bias}: ids of this vocabulary, biases from -100 to 100. */
static bool read_logit_bias(srv_request_t *q, const srv_request_info_t *info, const char *name, json_t *v) {
    const int32_t n_vocab = rtm_model_n_vocab(info->model);
    if (!json_is_object(v) || json_object_size(v) > SRV_MAX_LOGIT_BIAS)
        return refuse(q, name, "'%s' wants an object of at most %d token ids", name, SRV_MAX_LOGIT_BIAS);
    if ((q->bias = calloc(json_object_size(v) + 1, sizeof q->bias[0])) == NULL) return refuse(q, name, "no memory");
    const char *key;
    json_t *x;
    json_object_foreach(v, key, x) {
        char *end = NULL;
        const long id = strtol(key, &end, 10);
        if (end == key || *end || id < 0 || id >= n_vocab)
            return refuse(q, name, "'%s' key '%s' is not a token id of this model (0 to %d)", name, clip(key).s, n_vocab - 1);
        float b = 0;
        if (!number(q, name, x, -100, 100, &b)) return false;
        q->bias[q->sampling.n_logit_bias++] = (rtm_logit_bias_t){(rtm_token_t)id, b};
    }
    q->sampling.logit_bias = q->bias;
    return true;
}

/* chat: true or false (top_logprobs says how many alternatives);
 * completions: the number of alternatives, 0 to 5. */
static bool read_logprobs(srv_request_t *q, const srv_request_info_t *info, const char *name, json_t *v) {
    (void)info;
    if (!q->chat) {
        int32_t n = 0;
        if (!integer(q, name, v, 0, 5, &n)) return false;
        q->logprobs = n;
        return true;
    }
    bool on = false;
    if (!boolean(q, name, v, &on)) return false;
    if (on && q->logprobs < 0) q->logprobs = 0;
    if (!on) q->logprobs = -1;
    return true;
}

static bool read_top_logprobs(srv_request_t *q, const srv_request_info_t *info, const char *name, json_t *v) {
    (void)info;
    int32_t n = 0;
    if (!integer(q, name, v, 0, SRV_MAX_TOP_LOGPROBS, &n)) return false;
    json_t *lp = json_object_get(q->json, "logprobs");
    if (n > 0 && !json_is_true(lp)) return refuse(q, name, "'%s' needs 'logprobs': true", name);
    if (json_is_true(lp)) q->logprobs = n;
    return true;
}

static bool read_echo(srv_request_t *q, const srv_request_info_t *info, const char *name, json_t *v) {
    (void)info;
    return boolean(q, name, v, &q->echo);
}

static bool read_response_format(srv_request_t *q, const srv_request_info_t *info, const char *name, json_t *v) {
    (void)info;
    const char *type = json_string_value(json_object_get(v, "type"));
    if (type && strcmp(type, "text") == 0 && json_object_size(v) == 1) return true;
    return refuse(q, name, "'%s' of type '%s' is not supported: only 'text'", name, clip(type).s);
}

/* Fields rt honours only "off", and the values that are off (as JSON): any
 * other value is refused. cache_prompt is off either way: prompts are
 * always reused, which changes no reply. */
static const struct off_value {
    const char *name, *off;
} off_values[] = {
    {"cache_prompt", "[true, false]"}, {"tools", "[[]]"}, {"tool_choice", "[\"none\"]"},
    {"parallel_tool_calls", "[true, false]"}, {"functions", "[[]]"}, {"function_call", "[\"none\"]"},
    {"grammar", "[\"\"]"}, {"json_schema", "[{}]"}, {"mirostat", "[0]"}, {"best_of", "[1]"},
    {"suffix", "[\"\"]"}, {"modalities", "[[\"text\"]]"}, {"audio", "[]"}, {"prediction", "[]"},
    {"store", "[false]"}, {"metadata", "[{}]"}, {"reasoning_effort", "[]"},
    {"service_tier", "[\"auto\", \"default\"]"}, {"web_search_options", "[]"},
};

static bool read_off(srv_request_t *q, const srv_request_info_t *info, const char *name, json_t *v) {
    (void)info;
    bool off = false;
    for (size_t i = 0; i < sizeof off_values / sizeof off_values[0]; i++) {
        if (strcmp(off_values[i].name, name) != 0) continue;
        json_t *values = json_loads(off_values[i].off, 0, NULL);
        for (size_t k = 0; k < json_array_size(values); k++) off |= json_equal(v, json_array_get(values, k));
        json_decref(values);
    }
    return off ? true : refuse(q, name, "'%s' is not supported by rt-server", name);
}

/* Where a field is read: completions, chat, both. */
enum { COMPLETIONS = 1, CHAT = 2, BOTH = 3 };

static const struct field {
    const char *name;
    int where;
    read_fn read;
} fields[] = {
    {"model", BOTH, read_string},              {"user", BOTH, read_string},
    {"messages", CHAT, read_any},              {"prompt", COMPLETIONS, read_any}, /* read last */
    {"stream", BOTH, read_stream},             {"stream_options", BOTH, read_stream_options},
    {"max_tokens", BOTH, read_max_tokens},     {"max_completion_tokens", CHAT, read_max_tokens},
    {"n_predict", BOTH, read_max_tokens},      {"temperature", BOTH, read_temperature},
    {"top_p", BOTH, read_unit},                {"min_p", BOTH, read_unit},
    {"typical_p", BOTH, read_unit},            {"top_k", BOTH, read_top_k},
    {"presence_penalty", BOTH, read_penalty},  {"frequency_penalty", BOTH, read_penalty},
    {"repeat_penalty", BOTH, read_penalty},    {"repeat_last_n", BOTH, read_repeat_last_n},
    {"seed", BOTH, read_seed},                 {"stop", BOTH, read_stop},
    {"n", BOTH, read_n},                       {"logit_bias", BOTH, read_logit_bias},
    {"logprobs", BOTH, read_logprobs},         {"top_logprobs", CHAT, read_top_logprobs},
    {"echo", COMPLETIONS, read_echo},          {"response_format", BOTH, read_response_format},
    {"cache_prompt", BOTH, read_off},          /* prompts are always reused */
    {"tools", CHAT, read_off},                 {"tool_choice", CHAT, read_off},
    {"parallel_tool_calls", CHAT, read_off},   {"functions", CHAT, read_off},
    {"function_call", CHAT, read_off},         {"grammar", BOTH, read_off},
    {"json_schema", BOTH, read_off},           {"mirostat", BOTH, read_off},
    {"best_of", COMPLETIONS, read_off},        {"suffix", COMPLETIONS, read_off},
    {"modalities", CHAT, read_off},            {"audio", CHAT, read_off},
    {"prediction", CHAT, read_off},            {"store", CHAT, read_off},
    {"metadata", CHAT, read_off},              {"reasoning_effort", CHAT, read_off},
    {"service_tier", BOTH, read_off},          {"web_search_options", CHAT, read_off},
};

static const struct field *find_field(const char *name, bool chat) {
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if (strcmp(fields[i].name, name) == 0 && (fields[i].where & (chat ? CHAT : COMPLETIONS))) return &fields[i];
    return NULL;
}

//===--- prompts ---===//

/* A message's text: a string, or a list of text parts joined. NULL after
 * a refusal; *owned is set when the text was malloc'd. */
static const char *message_text(srv_request_t *q, json_t *content, size_t i, char **owned) {
    char name[64];
    snprintf(name, sizeof name, "messages[%zu].content", i);
    *owned = NULL;
    if (json_is_string(content)) return json_string_value(content);
    if (!json_is_array(content)) return refuse(q, name, "'%s' wants a string or a list of text parts", name), NULL;
    size_t len = 0;
    for (size_t k = 0; k < json_array_size(content); k++) {
        json_t *part = json_array_get(content, k);
        const char *type = json_string_value(json_object_get(part, "type"));
        const bool text_only = json_object_size(part) == 2;
        if (type == NULL || strcmp(type, "text") != 0 || !json_is_string(json_object_get(part, "text")) || !text_only) {
            snprintf(name, sizeof name, "messages[%zu].content[%zu]", i, k);
            return refuse(q, name, "'%s' of type '%s' is not supported: the model reads text parts "
                                   "({\"type\": \"text\", \"text\": ...}) only", name, clip(type).s), NULL;
        }
        len += json_string_length(json_object_get(part, "text"));
    }
    if ((*owned = malloc(len + 1)) == NULL) return refuse(q, name, "no memory"), NULL;
    len = 0;
    for (size_t k = 0; k < json_array_size(content); k++) {
        json_t *text = json_object_get(json_array_get(content, k), "text");
        memcpy(*owned + len, json_string_value(text), json_string_length(text));
        len += json_string_length(text);
    }
    (*owned)[len] = 0;
    return *owned;
}

/* Reads message i into m (role "developer" is OpenAI's newer "system"). */
static bool read_message(srv_request_t *q, json_t *msg, size_t i, rtm_chat_message_t *m, char **owned) {
    char name[64];
    snprintf(name, sizeof name, "messages[%zu]", i);
    if (!json_is_object(msg)) return refuse(q, name, "'%s' wants an object", name);
    const char *key;
    json_t *x;
    json_object_foreach(msg, key, x) {
        if (strcmp(key, "role") == 0 || strcmp(key, "content") == 0 || json_is_null(x)) continue;
        snprintf(name, sizeof name, "messages[%zu].%s", i, clip(key).s);
        return refuse(q, name, "'%s' is not supported by rt-server", name);
    }
    m->role = json_string_value(json_object_get(msg, "role"));
    static const char *const roles[] = {"system", "user", "assistant", "developer"};
    bool known = false;
    for (size_t r = 0; m->role && r < sizeof roles / sizeof roles[0]; r++) known |= strcmp(m->role, roles[r]) == 0;
    if (!known) {
        snprintf(name, sizeof name, "messages[%zu].role", i);
        return refuse(q, name, "'%s' wants system, user, assistant or developer", name);
    }
    if (strcmp(m->role, "developer") == 0) m->role = "system";
    return (m->content = message_text(q, json_object_get(msg, "content"), i, owned)) != NULL;
}

/* The messages rendered with the model's template into q->prompt. */
static bool render_chat(srv_request_t *q, const srv_request_info_t *info, json_t *messages) {
    if (info->tmpl == NULL)
        return refuse(q, "messages", "the model has no usable chat template: start rt-server with --chat-template "
                                     "NAME|FILE, or use /v1/completions");
    const size_t n = json_array_size(messages);
    if (!json_is_array(messages) || n == 0 || n > MAX_MESSAGES)
        return refuse(q, "messages", "'messages' wants 1 to %d messages", MAX_MESSAGES);
    rtm_chat_message_t m[MAX_MESSAGES];
    char *owned[MAX_MESSAGES] = {0};
    bool ok = true;
    for (size_t i = 0; ok && i < n; i++) ok = read_message(q, json_array_get(messages, i), i, &m[i], &owned[i]);
    const rtm_vocab_t *v = rtm_model_vocab(info->model);
    const rtm_chat_render_params_t p = {.struct_size = sizeof p, .add_generation_prompt = true,
                                        .bos_token = rtm_vocab_token_text(v, rtm_vocab_bos(v)),
                                        .eos_token = rtm_vocab_token_text(v, rtm_vocab_eos(v))};
    size_t len = 0;
    rt_status_t st = ok ? rtm_chat_template_apply(info->tmpl, m, (int32_t)n, &p, NULL, 0, &len) : RT_OK;
    if (ok && st == RT_ERR_DOES_NOT_FIT && (q->prompt = malloc(len + 1)) != NULL)
        st = rtm_chat_template_apply(info->tmpl, m, (int32_t)n, &p, q->prompt, len + 1, &len);
    if (ok && (st != RT_OK || q->prompt == NULL)) ok = refuse(q, "messages", "%s", rtm_last_error());
    for (size_t i = 0; i < n && i < MAX_MESSAGES; i++) free(owned[i]);
    return ok;
}

/* A string, or a list holding one string (what the openai client sends
 * for a list of one prompt). */
static bool read_prompt(srv_request_t *q, json_t *v) {
    if (json_is_array(v) && json_array_size(v) == 1) v = json_array_get(v, 0);
    if (!json_is_string(v)) return refuse(q, "prompt", "'prompt' wants a string (one prompt a request)");
    if ((q->prompt = strdup(json_string_value(v))) == NULL) return refuse(q, "prompt", "no memory");
    return true;
}

//===--- the body ---===//

/* A seed no other request is likely to have. */
static uint64_t random_seed(void) {
    uint64_t seed = 0;
    if (getentropy(&seed, sizeof seed) != 0) seed = (uint64_t)time(NULL) ^ (uint64_t)clock() << 32;
    return seed;
}

static void set_defaults(srv_request_t *q, bool chat) {
    *q = (srv_request_t){.chat = chat, .n = 1, .logprobs = -1, .max_tokens = chat ? -1 : 16};
    q->sampling = (rtm_sampler_params_t){.struct_size = sizeof q->sampling, .temp = 1.0f, .top_p = 1.0f,
                                         .seed = random_seed()};
}

bool srv_request_parse(srv_request_t *q, const srv_request_info_t *info, bool chat, const char *body,
                       size_t len) {
    set_defaults(q, chat);
    json_error_t je;
    if ((q->json = json_loadb(body, len, 0, &je)) == NULL)
        return refuse(q, NULL, "the body is not JSON: %s (at byte %d)", je.text, je.position);
    if (!json_is_object(q->json)) return refuse(q, NULL, "the body is not a JSON object");
    const char *key;
    json_t *v;
    json_object_foreach(q->json, key, v) {
        const struct field *f = find_field(key, chat);
        if (f == NULL) return refuse(q, key, "'%s' is not a field rt-server knows", clip(key).s);
        if (!json_is_null(v) && !f->read(q, info, key, v)) return false;
    }
    if (chat) return render_chat(q, info, json_object_get(q->json, "messages"));
    return read_prompt(q, json_object_get(q->json, "prompt"));
}

void srv_request_deinit(srv_request_t *q) {
    free(q->prompt);
    free(q->bias);
    json_decref(q->json);
    q->prompt = NULL, q->bias = NULL, q->json = NULL;
}
