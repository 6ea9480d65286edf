/* SPDX-License-Identifier: MIT */
/* rt-run.c: runs a language model (model/rt_model.h): loads the GGUF onto
 * the devices, feeds the prompt in ubatches, streams the generated text to
 * stdout, then reports on stderr the load time, prompt and generation
 * speed and where each layer ran. Without -m it runs the bundled
 * stories260K (models/ of the build tree, or the installed share/rt: see
 * bundled_model.h). With no device options the layers go where the
 * predicted decode time is least (RTM_SPLIT_FASTEST: each device's speed
 * is measured once and cached), so a device slower than the CPU, such as
 * a software one, gets nothing; --split auto and --n-gpu-layers keep the
 * memory-only splits. The plan weighs the prompt's steps and -n decode
 * steps (run_explain.c says how). --explain prints that plan with its
 * predicted times before the run, and each device's measured times beside
 * them after it.
 *
 *   rt-run [-m MODEL] [-p PROMPT | -f FILE] [-n N] [sampling] [-dev LIST]
 *          [-ngl N | --split auto|fastest] [-t N] [-b N] [-c N] [-r STOP]...
 *          [-cnv [-sys TEXT]] [--dump-logits FILE] [--tp N] [--dist mpi|nccl]
 *          [--check-numerics] [--special] [--explain] [--grammar TEXT | --grammar-file FILE]
 *
 * (every option, with its default: rt-run --help; run_options.c). -r stops
 * the generation after any of the texts given (printed up to it). -cnv
 * chats on stdin through the model's chat template (run_chat.c).
 * --special parses special tokens' texts in the prompt ("<|im_start|>")
 * as those tokens; without it they are plain text. --grammar (GBNF, or
 * --grammar-file) holds each generated text to a grammar (rtm_grammar_t):
 * a grammar that does not parse is a usage error (exit 2) naming its line
 * and column, and generation ends once the grammar is complete and
 * nothing can follow.
 * --dump-logits writes one text line of n_vocab logits per position whose
 * logits were computed: every prompt token, then each generated one.
 * Logits that are not finite always stop the run with an error naming the
 * step; --check-numerics keeps every node of the graph so that the error
 * also names the first node whose result was not finite.
 * Under mpirun (dist/rt_dist.h) the model is split over the ranks: its
 * layers (pipeline), or with --tp N its heads and FFN columns; rank 0
 * prints, the rank holding the logits writes --dump-logits. --dist nccl
 * carries the tensors over NCCL on each rank's CUDA device.
 * The dump is written through out_file.h: complete, or the previous file kept.
 * Every error, a failed write to stdout or the dump included, is one line
 * on stderr and exit status 1 (2 for usage). */
#include "../abi/rt.h"
#include "../model/rt_model.h"
#include "../dist/rt_dist.h"
#include "bundled_model.h"
#include "default_batch.h"
#include "out_file.h"
#include "run.h"
#include "run_options.h"
#include "tool_cli.h"

#include <errno.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_DEVICES 16

//===--- finding things ---===//

//===--- running ---===//

static void write_stderr(const char *text, size_t len, void *user) {
    (void)user;
    fwrite(text, 1, len, stderr);
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int run_fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("rt-run: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

//===--- over several processes (dist/) ---===//

/* Every rank must run with the same settings: they go into the plan hash. */
static int dist_plan(run_t *r, const char *file, rtm_model_params_t *mp) {
    const run_options_t *o = r->o;
    struct { int32_t n_predict, n_ctx, n_batch, top_k, tp, logits; float temp, top_p; uint64_t seed; }
        settings;
    memset(&settings, 0, sizeof settings); /* padding too: the bytes are hashed */
    settings.n_predict = o->n_predict;
    settings.n_ctx = o->n_ctx;
    settings.n_batch = o->n_batch;
    settings.top_k = o->sampling.top_k;
    settings.tp = o->tp;
    settings.logits = o->dump_logits != NULL;
    settings.temp = o->sampling.temp;
    settings.top_p = o->sampling.top_p;
    settings.seed = o->sampling.seed;
    if (rtd_plan(r->dist, file, &settings, sizeof settings, mp) == RT_OK) return 0;
    return run_fail("%s", rtd_last_error());
}

static int dist_join(run_t *r, int *argc, char ***argv) {
    const rtd_params_t p = {.struct_size = sizeof p, .tp = r->o->tp, .transport = r->o->dist};
    if (rtd_create(argc, argv, &p, &r->dist) != RT_OK) return run_fail("%s", rtd_last_error());
    if (r->dist)
        fprintf(stderr, "rt-run: rank %d of %d (pid %ld)\n", rtd_rank(r->dist), rtd_size(r->dist),
                (long)getpid());
    return 0;
}

static void dump_ubatch(void *user, const rtm_context_t *c, int32_t n_rows);

/* Ranks other than 0 run their share of each decode until rank 0 is done. */
static int dist_serve(run_t *r) {
    if (rtd_serve(r->dist, r->ctx, r->sampler) != RT_OK)
        return run_fail("%s", rtd_last_error());
    return 0;
}

/* The sampler, with --grammar's grammar over the model's vocabulary. */
static int make_sampler(run_t *r) {
    rtm_sampler_params_t sp = r->o->sampling;
    if (r->o->grammar) {
        if (r->dist) return run_fail("--grammar runs in one process, not under mpirun");
        const char *text = r->o->grammar;
        if (rtm_grammar_create(rtm_model_vocab(r->model), text, strlen(text), NULL, &r->grammar) != RT_OK)
            return run_fail("%s", rtm_last_error());
        sp.grammar = r->grammar;
    }
    if (rtm_sampler_create(&sp, &r->sampler) != RT_OK) return run_fail("%s", rtm_last_error());
    return 0;
}

static int load(run_t *r) {
    char path[PATH_MAX];
    rt_device_t *devs[MAX_DEVICES];
    int32_t n_devs = 0;
    if (r->o->devices && !rt_cli_find_devices("rt-run", r->reg, r->o->devices, devs, MAX_DEVICES, &n_devs)) return 1;
    rtm_model_params_t mp = {.struct_size = sizeof mp, .registry = r->reg,
                                   .devices = r->o->devices ? devs : NULL, .n_devices = n_devs,
                                   .split = r->o->split, .n_gpu_layers = r->o->n_gpu_layers,
                                   .n_ctx = r->o->n_ctx, .no_mmap = r->o->no_mmap};
    run_explain_job(r, &mp);
    const char *file = r->o->model ? r->o->model : rt_tools_bundled_model(path, sizeof path);
    snprintf(r->model_file, sizeof r->model_file, "%s", file);
    if (dist_plan(r, file, &mp) != 0) return 1;
    if (rtm_model_load(file, &mp, &r->model) != RT_OK) return run_fail("%s", rtm_last_error());
    rtm_context_params_t cp = {.struct_size = sizeof cp, .n_ctx = r->o->n_ctx,
                               .n_batch = r->o->n_batch, .n_threads = r->o->n_threads,
                               .logits_all = r->o->dump_logits != NULL,
                               .check_numerics = r->o->check_numerics, .type_k = r->o->type_k,
                               .type_v = r->o->type_v, .flash_attn = r->o->flash_attn};
    /* Every rank must agree on the ubatch: over several processes the
     * context's own default stands. */
    if (cp.n_batch == 0 && r->dist == NULL)
        cp.n_batch = rt_tool_default_n_batch(r->model, r->o->n_ctx);
    if (rtd_setup(r->dist, r->model, &cp) != RT_OK) return run_fail("%s", rtd_last_error());
    rtd_set_logits_fn(r->dist, dump_ubatch, r); /* the rank with the head dumps per ubatch */
    if (rtm_context_create(r->model, &cp, &r->ctx) != RT_OK) return run_fail("%s", rtm_last_error());
    if (r->o->explain) {
        fprintf(stderr, "plan (least predicted time of the job):\n");
        rtm_model_write_plan(r->model, write_stderr, NULL);
    }
    if (make_sampler(r) != 0) return 1;
    const char *inputs[] = {file, NULL};
    if (r->o->dump_logits && rtd_runs_head(r->dist) &&
        rt_out_file_open(&r->dump, r->o->dump_logits, inputs) != 0)
        return run_fail("%s", r->dump.error);
    return 0;
}

static int tokenize_prompt(run_t *r) {
    const rtm_vocab_t *v = rtm_model_vocab(r->model);
    const size_t len = strlen(r->o->prompt);
    int32_t n = 0;
    rtm_vocab_tokenize(v, r->o->prompt, len, true, r->o->special, NULL, 0, &n);
    r->prompt = malloc(((size_t)n + 1) * sizeof r->prompt[0]);
    if (r->prompt == NULL) return run_fail("no memory for the prompt");
    if (rtm_vocab_tokenize(v, r->o->prompt, len, true, r->o->special, r->prompt, n, &r->n_prompt) != RT_OK)
        return run_fail("%s", rtm_last_error());
    if (r->n_prompt == 0) return run_fail("the prompt gives no tokens");
    if (r->n_prompt > rtm_context_n_ctx(r->ctx))
        return run_fail("the prompt's %d tokens exceed the context of %d", r->n_prompt,
                    rtm_context_n_ctx(r->ctx));
    return 0;
}

static void dump_rows_now(run_t *r, int32_t n_rows) {
    const int32_t n_vocab = rtm_model_n_vocab(r->model);
    for (int32_t i = 0; r->dump.f && i < n_rows; i++) {
        const float *l = rtm_get_logits_ith(r->ctx, i);
        for (int32_t j = 0; j < n_vocab; j++) fprintf(r->dump.f, j ? " %.9g" : "%.9g", (double)l[j]);
        fputc('\n', r->dump.f);
    }
}

/* Alone, after each decode; in a job, dump_ubatch does it. */
static void dump_rows(run_t *r, int32_t n_rows) {
    if (r->dist == NULL) dump_rows_now(r, n_rows);
}

static void dump_ubatch(void *user, const rtm_context_t *c, int32_t n_rows) {
    (void)c;
    dump_rows_now(user, n_rows);
}

/* The text on stdout, and into the reply while the chat captures it. */
static void write_stdout(const char *text, size_t len, void *user) {
    run_t *r = user;
    fwrite(text, 1, len, stdout);
    if (!r->capture || r->reply_failed) return;
    if (r->reply_len + len + 1 > r->reply_cap) {
        const size_t cap = (r->reply_len + len + 1) * 2;
        char *p = realloc(r->reply, cap);
        if (p == NULL) return (void)(r->reply_failed = true);
        r->reply = p, r->reply_cap = cap;
    }
    memcpy(r->reply + r->reply_len, text, len);
    r->reply[r->reply_len += len] = 0;
}

/* The token's text through the stop strings onto stdout, however long its
 * piece; 1 after a message when it cannot be had or written. */
static int emit_token(run_t *r, rtm_token_t t) {
    char small[256], *buf = small;
    size_t len = 0;
    const rtm_vocab_t *v = rtm_model_vocab(r->model);
    rt_status_t st = rtm_vocab_token_to_piece(v, t, false, buf, sizeof small, &len);
    if (st == RT_ERR_DOES_NOT_FIT && (buf = malloc(len)) != NULL)
        st = rtm_vocab_token_to_piece(v, t, false, buf, len, &len);
    if (buf == NULL) return run_fail("no memory for the piece of token %d", t);
    if (st == RT_OK) r->stopped = rt_stop_text_feed(&r->stop, buf, len, write_stdout, r);
    if (buf != small) free(buf);
    if (st != RT_OK) return run_fail("token %d: %s", t, rtm_last_error());
    return fflush(stdout) != 0 || ferror(stdout) ? run_fail("cannot write stdout: %s", strerror(errno)) : 0;
}

int run_feed(run_t *r, const rtm_token_t *tokens, int32_t n) {
    if (rtd_decode(r->dist, r->ctx, tokens, n) != RT_OK) return run_fail("%s", rtd_last_error());
    for (int32_t i = 0; i < n; i++) rtm_sampler_accept(r->sampler, tokens[i]);
    dump_rows(r, n);
    return 0;
}

int run_generate(run_t *r, int32_t n_max) {
    const rtm_vocab_t *v = rtm_model_vocab(r->model);
    const double t0 = now();
    r->stopped = false;
    rtm_grammar_reset(r->grammar);
    int rc = rt_stop_text_init(&r->stop, r->o->stops, r->o->n_stops) ? 0 : run_fail("no memory for the stop strings");
    for (int32_t n = 0; rc == 0 && (n_max < 0 || n < n_max); n++) {
        rtm_token_t t; /* over several ranks, it comes when every stage is done */
        if (rtd_next_token(r->dist, r->ctx, r->sampler, rtm_model_n_vocab(r->model), &t) != RT_OK) {
            rc = run_fail("%s", rtd_last_error());
            break;
        }
        if (t == RTM_TOKEN_NULL || (r->grammar && rtm_grammar_accept(r->grammar, t) != RT_OK)) {
            rc = run_fail("%s", rtm_last_error()); /* the grammar allows no token here */
            break;
        }
        const bool eog = rtm_vocab_is_eog(v, t);
        const bool done = r->grammar && rtm_grammar_done(r->grammar);
        if (!eog && (rc = emit_token(r, t)) != 0) break;
        r->n_generated += !eog; /* counted as printed, also when the context is full */
        if (rtm_context_n_past(r->ctx) >= rtm_context_n_ctx(r->ctx)) {
            fprintf(stderr, "\nrt-run: the context of %d tokens is full: stopped after %d tokens (-c raises it)\n",
                    rtm_context_n_ctx(r->ctx), n + 1);
            break;
        }
        rc = run_feed(r, &t, 1);
        if (eog || r->stopped || done) break;
    }
    if (!r->stopped) rt_stop_text_finish(&r->stop, write_stdout, r);
    rt_stop_text_deinit(&r->stop);
    r->t_gen += now() - t0;
    if (rc == 0 && (fflush(stdout) != 0 || ferror(stdout))) rc = run_fail("cannot write stdout: %s", strerror(errno));
    return rc;
}

/* The prompt, then up to n_predict tokens. */
static int complete(run_t *r) {
    if (rtd_rank(r->dist) != 0) return dist_serve(r);
    run_explain_phase(r, -1);
    const double t0 = now();
    if (run_feed(r, r->prompt, r->n_prompt) != 0) return 1;
    r->t_prompt = now() - t0;
    run_explain_phase(r, 0);
    fputs(r->o->prompt, stdout);
    fflush(stdout);
    if (run_generate(r, r->o->n_predict) != 0) return 1;
    run_explain_phase(r, 1);
    fputc('\n', stdout);
    return fflush(stdout) != 0 || ferror(stdout) ? run_fail("cannot write stdout: %s", strerror(errno)) : 0;
}

static void report(const run_t *r) {
    rtm_load_stats_t ls = {.struct_size = sizeof ls};
    rtm_context_stats_t cs = {.struct_size = sizeof cs};
    rtm_model_get_load_stats(r->model, &ls);
    rtm_context_get_stats(r->ctx, &cs);
    fprintf(stderr, "\nload: %.3f s, %.2f MiB of weights: %.2f MiB mapped in place, %.2f MiB copied\n",
            ls.load_seconds, (double)ls.bytes_weights / 1048576.0, (double)ls.bytes_mapped / 1048576.0,
            (double)ls.bytes_copied / 1048576.0);
    fprintf(stderr, "prompt: %d tokens in %.3f s (%.1f tokens/s)\n", r->n_prompt, r->t_prompt,
            r->t_prompt > 0 ? r->n_prompt / r->t_prompt : 0.0);
    fprintf(stderr, "generation: %d tokens in %.3f s (%.1f tokens/s)\n", r->n_generated, r->t_gen,
            r->t_gen > 0 ? r->n_generated / r->t_gen : 0.0);
    fprintf(stderr, "context: n_ctx %d, n_batch %d, KV cache %.2f MiB (K %s, V %s), attention %s, "
            "compute buffers %.2f MiB, %d split(s) per token, %d graph(s), %d reserve(s)\n",
            rtm_context_n_ctx(r->ctx), rtm_context_n_batch(r->ctx), (double)cs.kv_bytes / 1048576.0,
            rt_type_name((rt_type_t)r->o->type_k), rt_type_name((rt_type_t)r->o->type_v),
            rtm_context_flash_attn(r->ctx) ? "fused" : "unfused", (double)cs.compute_bytes / 1048576.0,
            cs.tg_splits, cs.n_graphs, cs.n_reserves);
    fprintf(stderr, "layers (%s, %d):\n", rtm_model_arch(r->model), rtm_model_n_layer(r->model));
    rtm_model_write_placement(r->model, write_stderr, NULL);
    run_explain_report(r);
}

/* --list-devices: one line per device, in the registry's order. */
static void list_devices(const rt_registry_t *reg) {
    for (int32_t i = 0; i < rt_registry_device_count(reg); i++) {
        rt_device_t *d = rt_registry_device(reg, i);
        printf("%s (%s)\n", rt_device_name(d), rt_device_plugin_name(d));
    }
}

int main(int argc, char **argv) {
    run_options_t o;
    const int pa = run_options_parse(argc, argv, &o);
    if (pa != 0) return run_options_deinit(&o), pa == 1 ? 0 : 2;
    run_t r = {.o = &o};
    int rc = o.conversation && o.tp ? run_fail("-cnv runs in one process, not with --tp") : 0;
    if (rc == 0 && !o.list_devices) rc = dist_join(&r, &argc, &argv);
    if (rc == 0) rc = rt_registry_create(NULL, &r.reg) == RT_OK ? 0 : run_fail("%s", rt_last_error());
    if (rc == 0 && o.list_devices) list_devices(r.reg);
    else {
        if (rc == 0) rc = load(&r);
        if (rc == 0 && !o.conversation) rc = tokenize_prompt(&r);
        if (rc == 0) rc = o.conversation ? run_chat(&r) : complete(&r);
        if (rc == 0 && rtd_finish(r.dist, write_stderr, NULL) != RT_OK) rc = run_fail("%s", rtd_last_error());
        /* by the rank with the head, once every row is written */
        if (rc == 0 && r.dump.f && rt_out_file_commit(&r.dump) != 0) rc = run_fail("%s", r.dump.error);
        if (rc == 0 && rtd_rank(r.dist) == 0) report(&r);
        if (rc != 0) rtd_abort(r.dist, rc); /* the other ranks would wait for this one */
    }
    rtd_destroy(r.dist);
    rt_out_file_abort(&r.dump); /* after a commit, nothing is left to remove */
    free(r.prompt);
    rtm_sampler_destroy(r.sampler);
    rtm_grammar_destroy(r.grammar); /* after the sampler that borrows it */
    rtm_context_destroy(r.ctx);
    rtm_model_destroy(r.model);
    rt_registry_destroy(r.reg);
    run_options_deinit(&o);
    free(r.reply);
    return rc;
}
