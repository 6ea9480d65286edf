/* SPDX-License-Identifier: MIT */
/* run_options.h: rt-run's command line. llama.cpp's spellings (-c -b -t
 * -ngl -s -f -dev -r -cnv -no-cnv -sys, one dash for the long ones) are
 * accepted beside rt's (--ctx, --n-batch, --devices): getopt_long_only,
 * so a one-dash word is tried as a long option first. */
#ifndef RT_TOOLS_RUN_OPTIONS_H
#define RT_TOOLS_RUN_OPTIONS_H

#include "../model/rt_model.h"

#define RUN_MAX_STOPS 8

typedef struct run_options {
    const char *model;       /* NULL: the bundled model */
    const char *prompt;      /* -p, or the text of -f (then owned: prompt_buf) */
    char *prompt_buf;
    bool prompt_given;       /* -p or -f (the chat's first message then) */
    int32_t n_predict;       /* < 0: until end of generation or the context is full */
    rtm_sampler_params_t sampling;
    const char *devices;     /* comma-separated names, NULL: all */
    bool list_devices;
    rtm_split_t split;
    int32_t n_gpu_layers;
    int32_t n_threads, n_batch, n_ctx;
    int32_t flash_attn;      /* -fa: rtm_flash_attn_t */
    int32_t type_k, type_v;  /* -ctk, -ctv: rt_type_t of the KV cache */
    const char *dump_logits; /* file, or NULL */
    bool check_numerics;
    bool no_mmap;            /* --no-mmap: weights copied, not mapped */
    bool explain;            /* the placement plan before the run, the measured time after */
    bool split_given;        /* --split or -ngl (else the fastest plan, without -dev) */
    int32_t tp;              /* tensor-parallel ranks (mpirun -np N); 0: pipeline */
    int32_t dist;            /* --dist: RTD_TRANSPORT_* (what carries the tensors) */
    bool special;            /* special tokens' texts in the prompt are those tokens */
    bool conversation;       /* -cnv: a chat through the model's template */
    bool color;              /* the user's text in colour on a terminal */
    const char *system_prompt;
    const char *chat_template; /* --chat-template NAME|FILE; NULL: the model's */
    const char *stops[RUN_MAX_STOPS]; /* -r: generation stops after any of these texts */
    int32_t n_stops;
    const char *grammar;     /* --grammar TEXT, or the text of --grammar-file (then owned:
                                grammar_buf); NULL: none. Checked when parsed */
    char *grammar_buf;
} run_options_t;

/* Fills o from argv. Returns 0 to run, 1 when --help or --version was
 * answered (exit 0), 2 on a bad command line (after a message; a grammar
 * that does not parse is one). */
int run_options_parse(int argc, char **argv, run_options_t *o);
void run_options_deinit(run_options_t *o);

#endif /* RT_TOOLS_RUN_OPTIONS_H */
