/* SPDX-License-Identifier: MIT */
/* run_options.c: see run_options.h. One table of long options (each
 * llama.cpp spelling beside rt's), one switch over their codes, and the
 * help text stating every default. */
#include "run_options.h"
#include "../dist/rt_dist.h"
#include "chat_source.h"
#include "tool_cli.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOOL "rt-run"
#define DEFAULT_PROMPT "Once upon a time"
#define DEFAULT_N_PREDICT 64
#define DEFAULT_TOP_K 40
#define DEFAULT_TOP_P 0.95f
#define DEFAULT_MIN_P 0.05f
#define DEFAULT_REPEAT_PENALTY 1.0f
#define DEFAULT_REPEAT_LAST_N 64
#define MAX_PROMPT_FILE (64 << 20)

static void usage(FILE *f) {
    fprintf(f,
        "usage: rt-run [options]\n"
        "  -m, --model FILE          GGUF model (default: the bundled stories260K)\n"
        "  -p, --prompt TEXT         prompt (default: \"%s\")\n"
        "  -f, --file FILE           prompt read from FILE\n"
        "  -n, --n-predict N         tokens to generate; -1: until end of generation or\n"
        "                            the context is full (default: %d)\n"
        "  -c, --ctx-size, --ctx N   context length (default: the model's, at most 2048)\n"
        "  -b, --batch-size, --n-batch N  tokens per graph run (default: 512, halved\n"
        "                            while the prompt graph's estimate exceeds a\n"
        "                            quarter of a device's free memory; at least 32)\n"
        "  -t, --threads N           CPU threads (default: the CPU plugin's)\n"
        RT_CLI_ATTN_HELP
        RT_CLI_MMAP_HELP
        "  -dev, --device, --devices LIST  comma-separated devices (default: all)\n"
        "      --list-devices        list the devices and exit\n"
        "  -ngl, --n-gpu-layers, --gpu-layers N  the last N layers on the first GPU (-1: all)\n"
        "      --split auto|fastest  auto: as many layers on GPUs as fit, by free memory;\n"
        "                            fastest: the least predicted time of the prompt's\n"
        "                            steps and -n tokens (the default without -dev, -ngl\n"
        "                            or --split)\n"
        "      --explain             the placement plan before the run, measured times after\n"
        "      --tp N                tensor-parallel ranks under mpirun -np N (see README)\n"
        "      --dist mpi|nccl       what carries the tensors between ranks (default mpi;\n"
        "                            nccl: each rank's CUDA device)\n"
        "sampling (default: greedy; --temp > 0 samples):\n"
        "      --temp T              temperature (default: 0, greedy)\n"
        "      --top-k K             keep the K most likely (default: %d; 0: all)\n"
        "      --top-p P             keep the smallest set of mass P (default: %.2f; 1: all)\n"
        "      --min-p P             keep those at least P times the best (default: %.2f; 0: off)\n"
        "      --repeat-penalty X    penalise the last tokens' repeats (default: %.1f, off)\n"
        "      --repeat-last-n N     tokens the penalty looks at (default: %d)\n"
        "  -s, --seed S              sampling seed (default: 0)\n"
        "      --grammar TEXT        hold the output to a GBNF grammar (llama.cpp's format,\n"
        "                            the rule 'root' first); generation ends where it is\n"
        "                            complete and nothing more can follow (default: none)\n"
        "      --grammar-file FILE   the grammar read from FILE\n"
        "chat:\n"
        "  -cnv, --conversation, -i, --interactive\n"
        "                            chat through the model's chat template: each line\n"
        "                            on stdin a user message (-p: the first), -n tokens\n"
        "                            at most a reply; ends at the end of stdin\n"
        "  -no-cnv, --no-conversation  plain completion of the prompt (the default)\n"
        "  -sys, --system-prompt TEXT  the chat's system message (default: none)\n"
        RT_CLI_CHAT_TEMPLATE_HELP
        "  -r, --reverse-prompt TEXT stop after TEXT (up to %d times the option)\n"
        "      --color               the user's text in colour on a terminal\n"
        "other:\n"
        "      --special             special tokens' texts in the prompt are those tokens\n"
        "      --dump-logits FILE    one line of logits per computed position\n"
        "      --check-numerics      name the first graph node that was not finite\n"
        "  -h, --help                this text\n"
        "      --version             release, ABI and commit\n",
        DEFAULT_PROMPT, DEFAULT_N_PREDICT, DEFAULT_TOP_K, (double)DEFAULT_TOP_P,
        (double)DEFAULT_MIN_P, (double)DEFAULT_REPEAT_PENALTY, DEFAULT_REPEAT_LAST_N,
        RUN_MAX_STOPS);
}

enum {
    OPT_TEMP = 1000, OPT_TOP_K, OPT_TOP_P, OPT_MIN_P, OPT_REPEAT_PENALTY, OPT_REPEAT_LAST_N,
    OPT_SPLIT, OPT_LIST_DEVICES, OPT_DEVICE, OPT_NGL, OPT_CNV, OPT_NO_CNV, OPT_SYS, OPT_COLOR,
    OPT_SPECIAL, OPT_DUMP_LOGITS, OPT_CHECK_NUMERICS, OPT_VERSION, OPT_EXPLAIN, OPT_TP, OPT_DIST,
    OPT_FA, OPT_CTK, OPT_CTV, OPT_NO_MMAP, OPT_CHAT_TEMPLATE, OPT_GRAMMAR, OPT_GRAMMAR_FILE
};

static const struct option long_options[] = {
    {"model", required_argument, NULL, 'm'},
    {"prompt", required_argument, NULL, 'p'},
    {"file", required_argument, NULL, 'f'},
    {"n-predict", required_argument, NULL, 'n'},
    {"ctx-size", required_argument, NULL, 'c'},
    {"ctx", required_argument, NULL, 'c'},
    {"batch-size", required_argument, NULL, 'b'},
    {"n-batch", required_argument, NULL, 'b'},
    {"threads", required_argument, NULL, 't'},
    {"seed", required_argument, NULL, 's'},
    {"reverse-prompt", required_argument, NULL, 'r'},
    {"temp", required_argument, NULL, OPT_TEMP},
    {"top-k", required_argument, NULL, OPT_TOP_K},
    {"top-p", required_argument, NULL, OPT_TOP_P},
    {"min-p", required_argument, NULL, OPT_MIN_P},
    {"repeat-penalty", required_argument, NULL, OPT_REPEAT_PENALTY},
    {"repeat-last-n", required_argument, NULL, OPT_REPEAT_LAST_N},
    {"grammar", required_argument, NULL, OPT_GRAMMAR},
    {"grammar-file", required_argument, NULL, OPT_GRAMMAR_FILE},
    {"split", required_argument, NULL, OPT_SPLIT},
    {"list-devices", no_argument, NULL, OPT_LIST_DEVICES},
    RT_CLI_DEVICE_OPTIONS(OPT_DEVICE),
    RT_CLI_NGL_OPTIONS(OPT_NGL),
    RT_CLI_ATTN_OPTIONS(OPT_FA, OPT_CTK, OPT_CTV),
    RT_CLI_MMAP_OPTION(OPT_NO_MMAP),
    {"cnv", no_argument, NULL, OPT_CNV},
    {"conversation", no_argument, NULL, OPT_CNV},
    {"interactive", no_argument, NULL, OPT_CNV},
    {"no-cnv", no_argument, NULL, OPT_NO_CNV},
    {"no-conversation", no_argument, NULL, OPT_NO_CNV},
    {"sys", required_argument, NULL, OPT_SYS},
    {"chat-template", required_argument, NULL, OPT_CHAT_TEMPLATE},
    {"system-prompt", required_argument, NULL, OPT_SYS},
    {"color", no_argument, NULL, OPT_COLOR},
    {"special", no_argument, NULL, OPT_SPECIAL},
    {"dump-logits", required_argument, NULL, OPT_DUMP_LOGITS},
    {"check-numerics", no_argument, NULL, OPT_CHECK_NUMERICS},
    {"explain", no_argument, NULL, OPT_EXPLAIN},
    {"tp", required_argument, NULL, OPT_TP},
    {"dist", required_argument, NULL, OPT_DIST},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0},
};

/* The whole of a text file (the prompt's, the grammar's), NUL-terminated,
 * into *out (malloc'd, replacing what was there); false after a message
 * naming what the file is. */
static bool read_text_file(const char *path, const char *what, char **out) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, TOOL ": cannot open the %s file '%s': %s\n", what, path, strerror(errno));
        return false;
    }
    size_t len = 0, cap = 4096;
    char *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + len, 1, cap - len - 1, f)) > 0;) {
        len += got;
        char *bigger = len + 1 == cap && cap < MAX_PROMPT_FILE ? realloc(buf, cap *= 2) : buf;
        if (bigger == NULL) free(buf);
        buf = len + 1 == cap ? NULL : bigger;
    }
    const bool ok = buf != NULL && !ferror(f);
    fclose(f);
    if (!ok) {
        fprintf(stderr, TOOL ": cannot read the %s file '%s' (at most %d MiB)\n", what, path,
                MAX_PROMPT_FILE >> 20);
        free(buf);
        return false;
    }
    buf[len] = 0;
    free(*out);
    *out = buf;
    return true;
}

static bool read_prompt_file(const char *path, run_options_t *o) {
    if (!read_text_file(path, "prompt", &o->prompt_buf)) return false;
    o->prompt = o->prompt_buf;
    return true;
}

/* --grammar's text (or --grammar-file's, from path), parsed now so that a
 * grammar error is a usage error: the message names the line and column. */
static bool grammar_option(const char *text, const char *path, run_options_t *o) {
    if (path) {
        o->grammar = NULL; /* it may be the buffer read_text_file replaces */
        if (!read_text_file(path, "grammar", &o->grammar_buf)) return false;
        text = o->grammar_buf;
    }
    rtm_grammar_t *g = NULL;
    if (rtm_grammar_create(NULL, text, strlen(text), NULL, &g) != RT_OK) {
        const char *msg = rtm_last_error();
        if (strncmp(msg, "grammar: ", 9) == 0) msg += 9;
        fprintf(stderr, TOOL ": %s%s: %s\n", path ? "--grammar-file " : "--grammar", path ? path : "", msg);
        return false;
    }
    rtm_grammar_destroy(g);
    o->grammar = text;
    return true;
}

static bool add_stop(const char *text, run_options_t *o) {
    if (o->n_stops < RUN_MAX_STOPS && text[0]) {
        o->stops[o->n_stops++] = text;
        return true;
    }
    fprintf(stderr, TOOL ": -r wants a non-empty text, at most %d of them\n", RUN_MAX_STOPS);
    return false;
}

static bool dist_option(const char *value, run_options_t *o) {
    const bool nccl = strcmp(value, "nccl") == 0;
    if (nccl || strcmp(value, "mpi") == 0) {
        o->dist = nccl ? RTD_TRANSPORT_NCCL : RTD_TRANSPORT_MPI;
        return true;
    }
    fprintf(stderr, TOOL ": --dist knows 'mpi' and 'nccl', not '%s'\n", value);
    return false;
}

/* The sampling options; false after a message. */
static bool sampling_option(int c, const char *name, const char *v, rtm_sampler_params_t *s) {
    switch (c) {
    case OPT_TEMP: return rt_cli_float(TOOL, name, v, &s->temp);
    case OPT_TOP_K: return rt_cli_int(TOOL, name, v, 0, INT32_MAX, &s->top_k);
    case OPT_TOP_P: return rt_cli_float(TOOL, name, v, &s->top_p);
    case OPT_MIN_P: return rt_cli_float(TOOL, name, v, &s->min_p);
    case OPT_REPEAT_PENALTY: return rt_cli_float(TOOL, name, v, &s->repeat_penalty);
    case OPT_REPEAT_LAST_N: return rt_cli_int(TOOL, name, v, 1, 1 << 20, &s->repeat_last_n);
    default: return rt_cli_u64(TOOL, name, v, &s->seed); /* 's' */
    }
}

/* One option; 0 to go on, 1 answered (help, version), 2 bad. */
static int one_option(int c, const char *name, const char *v, run_options_t *o) {
    bool ok = true;
    switch (c) {
    case 'm': o->model = v; break;
    case 'p': o->prompt = v, o->prompt_given = true; break;
    case 'f': ok = read_prompt_file(v, o), o->prompt_given = true; break;
    case 'n': ok = rt_cli_int(TOOL, name, v, -1, INT32_MAX, &o->n_predict); break;
    case 'c': ok = rt_cli_int(TOOL, name, v, 1, 1 << 24, &o->n_ctx); break;
    case 'b': ok = rt_cli_int(TOOL, name, v, 1, 1 << 20, &o->n_batch); break;
    case 't': ok = rt_cli_int(TOOL, name, v, 1, 4096, &o->n_threads); break;
    case 'r': ok = add_stop(v, o); break;
    case 's': case OPT_TEMP: case OPT_TOP_K: case OPT_TOP_P: case OPT_MIN_P:
    case OPT_REPEAT_PENALTY: case OPT_REPEAT_LAST_N: ok = sampling_option(c, name, v, &o->sampling); break;
    case OPT_SPLIT: ok = rt_cli_split(TOOL, v, &o->split), o->split_given = true; break;
    case OPT_LIST_DEVICES: o->list_devices = true; break;
    case OPT_DEVICE: o->devices = v; break;
    case OPT_NGL:
        o->split = RTM_SPLIT_N_GPU_LAYERS;
        o->split_given = true;
        ok = rt_cli_int(TOOL, name, v, -1, INT32_MAX, &o->n_gpu_layers);
        break;
    case OPT_CNV: o->conversation = true; break;
    case OPT_NO_CNV: o->conversation = false; break;
    case OPT_SYS: o->system_prompt = v; break;
    case OPT_CHAT_TEMPLATE: o->chat_template = v; break;
    case OPT_GRAMMAR: ok = grammar_option(v, NULL, o); break;
    case OPT_GRAMMAR_FILE: ok = grammar_option(NULL, v, o); break;
    case OPT_COLOR: o->color = true; break;
    case OPT_SPECIAL: o->special = true; break;
    case OPT_DUMP_LOGITS: o->dump_logits = v; break;
    case OPT_CHECK_NUMERICS: o->check_numerics = true; break;
    case OPT_NO_MMAP: o->no_mmap = true; break;
    case OPT_EXPLAIN: o->explain = true; break;
    case OPT_TP: ok = rt_cli_int(TOOL, name, v, 1, RTD_MAX_RANKS, &o->tp); break;
    case OPT_DIST: ok = dist_option(v, o); break;
    case OPT_FA: ok = rt_cli_flash_attn(TOOL, v, &o->flash_attn); break;
    case OPT_CTK: ok = rt_cli_cache_type(TOOL, name, v, &o->type_k); break;
    case OPT_CTV: ok = rt_cli_cache_type(TOOL, name, v, &o->type_v); break;
    case 'h': usage(stdout); return 1;
    case OPT_VERSION: rt_cli_print_version(stdout, TOOL); return 1;
    default: return 2; /* getopt said why */
    }
    return ok ? 0 : 2;
}

int run_options_parse(int argc, char **argv, run_options_t *o) {
    *o = (run_options_t){
        .prompt = DEFAULT_PROMPT, .n_predict = DEFAULT_N_PREDICT,
        .sampling = {.struct_size = sizeof o->sampling, .top_k = DEFAULT_TOP_K, .top_p = DEFAULT_TOP_P,
                     .min_p = DEFAULT_MIN_P, .repeat_penalty = DEFAULT_REPEAT_PENALTY,
                     .repeat_last_n = DEFAULT_REPEAT_LAST_N}};
    optind = 1;
    for (int c; (c = getopt_long_only(argc, argv, "m:p:f:n:c:b:t:s:r:hi", long_options, NULL)) != -1;) {
        const int rc = one_option(c == 'i' ? OPT_CNV : c, optarg ? rt_cli_option_name(argv, optind) : NULL,
                                  optarg, o);
        if (rc == 2) return rt_cli_bad_usage(TOOL);
        if (rc == 1) return 1;
    }
    if (optind < argc) {
        fprintf(stderr, TOOL ": unexpected argument '%s'\n", argv[optind]);
        return rt_cli_bad_usage(TOOL);
    }
    /* No device options: the fastest plan; named devices keep the memory split. */
    if (!o->split_given && o->devices == NULL) o->split = RTM_SPLIT_FASTEST;
    return 0;
}

void run_options_deinit(run_options_t *o) {
    free(o->prompt_buf);
    free(o->grammar_buf);
    o->prompt_buf = o->grammar_buf = NULL;
}
