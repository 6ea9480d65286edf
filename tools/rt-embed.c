/* SPDX-License-Identifier: MIT */
/* rt-embed.c: prints the sentence embedding an embedding model (BERT:
 * all-MiniLM-L6-v2 converted by tools/convert-bert.py) gives each text:
 * the text tokenized as the model was trained ([CLS] ... [SEP]), encoded
 * in one pass on the devices, mean-pooled and normalised to unit length.
 * One line per text: its n_embd numbers; --tokens prints the token ids
 * on the line before.
 *
 *   rt-embed -m MODEL [-dev LIST] [-t N] [--tokens] TEXT...
 *
 * Every error is one line on stderr and exit status 1 (2 for usage). */
#include "../abi/rt.h"
#include "../model/rt_model.h"
#include "tool_cli.h"

#include <getopt.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TOKENS 512
#define MAX_DEVICES 16

typedef struct embed_options {
    const char *model, *devices;
    int32_t n_threads;
    bool tokens;
    char **texts;
    int n_texts;
} embed_options_t;

static void usage(FILE *f) {
    fprintf(f, "usage: rt-embed -m MODEL [options] TEXT...\n"
               "  -m, --model FILE          the embedding model (required)\n"
               "  -dev, --device, --devices LIST  comma-separated devices (default: all)\n"
               "  -t, --threads N           CPU threads (default: the plugin's)\n"
               "      --tokens              the token ids on the line before each embedding\n"
               "  -h, --help                this text\n"
               "      --version             release, ABI and commit\n");
}

/* 0 to run, 1 after --help or --version, 2 on a bad command line. */
static int parse(int argc, char **argv, embed_options_t *o) {
    enum { OPT_DEVICE = 1000, OPT_TOKENS, OPT_VERSION };
    static const struct option opts[] = {
        {"model", required_argument, NULL, 'm'}, {"dev", required_argument, NULL, OPT_DEVICE},
        {"device", required_argument, NULL, OPT_DEVICE}, {"devices", required_argument, NULL, OPT_DEVICE},
        {"threads", required_argument, NULL, 't'}, {"tokens", no_argument, NULL, OPT_TOKENS},
        {"help", no_argument, NULL, 'h'}, {"version", no_argument, NULL, OPT_VERSION}, {NULL, 0, NULL, 0}};
    for (int c; (c = getopt_long_only(argc, argv, "+m:t:h", opts, NULL)) != -1;) {
        if (c == 'm') o->model = optarg;
        else if (c == OPT_DEVICE) o->devices = optarg;
        else if (c == 't' && !rt_cli_int("rt-embed", "--threads", optarg, 1, 4096, &o->n_threads)) return 2;
        else if (c == OPT_TOKENS) o->tokens = true;
        else if (c == 'h') return usage(stdout), 1;
        else if (c == OPT_VERSION) return rt_cli_print_version(stdout, "rt-embed"), 1;
        else if (c != 't') return 2;
    }
    o->texts = argv + optind;
    o->n_texts = argc - optind;
    return o->model != NULL && o->n_texts > 0 ? 0 : 2;
}

static int embed_one(rtm_model_t *m, rtm_context_t *c, const char *text, bool print_tokens) {
    rtm_token_t t[MAX_TOKENS];
    int32_t n = 0;
    if (rtm_vocab_tokenize(rtm_model_vocab(m), text, strlen(text), true, false, t, MAX_TOKENS, &n) != RT_OK ||
        n > MAX_TOKENS) {
        fprintf(stderr, "rt-embed: %s\n", n > MAX_TOKENS ? "the text is longer than 512 tokens" : rtm_last_error());
        return 1;
    }
    rtm_context_clear(c);
    if (rtm_decode(c, t, n) != RT_OK) {
        fprintf(stderr, "rt-embed: %s\n", rtm_last_error());
        return 1;
    }
    if (print_tokens)
        for (int32_t i = 0; i < n; i++) printf(i + 1 < n ? "%d " : "%d\n", t[i]);
    const float *e = rtm_get_embeddings(c);
    for (int32_t i = 0; i < rtm_model_n_embd(m); i++) printf(i + 1 < rtm_model_n_embd(m) ? "%.7g " : "%.7g\n", e[i]);
    return 0;
}

static int run(const embed_options_t *o, rt_registry_t *reg) {
    rt_device_t *devs[MAX_DEVICES];
    int32_t n_devs = 0;
    if (o->devices && !rt_cli_find_devices("rt-embed", reg, o->devices, devs, MAX_DEVICES, &n_devs)) return 1;
    const rtm_model_params_t mp = {.struct_size = sizeof mp, .registry = reg, .devices = n_devs ? devs : NULL,
                                   .n_devices = n_devs, .no_progress = true};
    rtm_model_t *m = NULL;
    if (rtm_model_load(o->model, &mp, &m) != RT_OK) {
        fprintf(stderr, "rt-embed: %s\n", rtm_last_error());
        return 1;
    }
    const rtm_context_params_t cp = {.struct_size = sizeof cp, .n_ctx = MAX_TOKENS, .n_batch = MAX_TOKENS,
                                     .n_threads = o->n_threads};
    rtm_context_t *c = NULL;
    int rc = 0;
    if (!rtm_model_is_embedding(m)) {
        fprintf(stderr, "rt-embed: %s is a %s model, not an embedding model\n", o->model, rtm_model_arch(m));
        rc = 1;
    } else if (rtm_context_create(m, &cp, &c) != RT_OK) {
        fprintf(stderr, "rt-embed: %s\n", rtm_last_error());
        rc = 1;
    }
    for (int i = 0; rc == 0 && i < o->n_texts; i++) rc = embed_one(m, c, o->texts[i], o->tokens);
    rtm_context_destroy(c);
    rtm_model_destroy(m);
    return rc;
}

int main(int argc, char **argv) {
    embed_options_t o = {0};
    const int parsed = parse(argc, argv, &o);
    if (parsed == 2) usage(stderr);
    if (parsed != 0) return parsed == 1 ? 0 : 2;
    rt_registry_t *reg = NULL;
    if (rt_registry_create(NULL, &reg) != RT_OK) {
        fprintf(stderr, "rt-embed: %s\n", rt_last_error());
        return 1;
    }
    const int rc = run(&o, reg);
    rt_registry_destroy(reg);
    return rc;
}
