/* SPDX-License-Identifier: MIT */
/* test-batch.c: several sequences in one context (rtm_decode_batch), with
 * the bundled stories260K. Each sequence decoded among the others, its
 * prompt and its tokens interleaved with theirs in the same batches and
 * cells, must give the logits it gives decoded alone:
 *
 *   batch-1  three sequences started at different steps, prompts split
 *            over ubatches and mixed with the others' tokens: each one's
 *            logits at every step are its own run's (cpu0)
 *   batch-2  a sequence cleared mid-way and its slot reused for a new
 *            prompt while the others go on: the new one's logits are its
 *            own run's, the others' unchanged
 *   batch-3  a batch larger than the free cells is refused and runs
 *            nothing; after rtm_seq_clear it fits; bad sequence ids and
 *            parts are refused
 *   batch-4  batch-1 over a split: the last layers on mockgpu0 (against
 *            cpu0 alone)
 *   batch-5  batch-1 on vulkan0 (lavapipe in CI) when the plugin is built
 *   batch-6  rtm_decode is unchanged: the same logits with n_seq_max 1
 *            and 3 (sequence 0 alone), attention fused and not
 *   batch-7  batch-1 on the random-weight model of every other decoder
 *            architecture (tests/arch): sliding windows, learned positions,
 *            rope factors
 *   batch-8  batch-1 and batch-7 with fused attention (FLASH_ATTN), the
 *            references fused too; skipped while cpu0 has no kernel for it
 *   batch-9  rtm_seq_keep: a sequence that keeps the first half of its
 *            prompt (another sequence's cells among its own) and is fed
 *            the rest again gives its alone run's logits at every step,
 *            unfused and fused; keeping more than it holds changes nothing */
#include "testutil.h"

#include "../model/rt_model.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MODEL "stories260K.gguf"
#define N_SEQ 3
#define N_STEPS 12   /* tokens generated per sequence after its prompt */
#define N_BATCH 8    /* so that prompts span ubatches */
/* The same bound as test-model's runs that differ only in how the work is
 * cut: rounding of another summation order (the masked rows, a product
 * of several columns); a wrong mask or cell is off by ~1e-1. */
#define TOL_SAME 1e-5
/* Another device's kernels (test-model's TOL_VULKAN). */
#define TOL_DEVICE 1e-4

static const char *const PROMPTS[] = {
    "Once upon a time, there was a little girl named Lily who loved to play outside",
    "The dog ran",
    "One day, a big bear came to the park and",
    "Tom had a red ball.",
};

//===--- set-up ---===//

/* The attention every context of a case uses: the unfused graph (AUTO
 * would fuse the contexts of several sequences), but batch-8 fuses it. */
static int32_t flash_attn = RTM_FLASH_ATTN_OFF;

/* The model with its last n_gpu layers on `gpu` (NULL: all on cpu0). */
/* The model at path (NULL: the bundled one) with its last n_gpu layers
 * on `gpu` (NULL: all on cpu0). */
static rtm_model_t *load_file(rt_registry_t *reg, const char *file, const char *gpu, int32_t n_gpu) {
    char path[1024];
    rt_device_t *devs[2] = {gpu ? rt_registry_device_by_name(reg, gpu) : NULL,
                            rt_registry_device_by_name(reg, "cpu0")};
    if ((gpu && devs[0] == NULL) || devs[1] == NULL) fail_msg("no %s or cpu0", gpu ? gpu : "");
    const rtm_model_params_t mp = {.struct_size = sizeof mp, .registry = reg,
                                   .devices = gpu ? devs : devs + 1, .n_devices = gpu ? 2 : 1,
                                   .split = gpu ? RTM_SPLIT_N_GPU_LAYERS : RTM_SPLIT_AUTO,
                                   .n_gpu_layers = n_gpu, .no_progress = true};
    rtm_model_t *m = NULL;
    if (file) snprintf(path, sizeof path, "%s", file);
    else tu_model_path(MODEL, path, sizeof path);
    if (rtm_model_load(path, &mp, &m) != RT_OK) fail_msg("%s: %s", path, rtm_last_error());
    return m;
}

static rtm_model_t *load(rt_registry_t *reg, const char *gpu, int32_t n_gpu) {
    return load_file(reg, NULL, gpu, n_gpu);
}

static rtm_context_t *context(rtm_model_t *m, int32_t n_ctx, int32_t n_seq_max) {
    const rtm_context_params_t cp = {.struct_size = sizeof cp, .n_ctx = n_ctx, .n_batch = N_BATCH,
                                     .n_seq_max = n_seq_max, .flash_attn = flash_attn};
    rtm_context_t *c = NULL;
    if (rtm_context_create(m, &cp, &c) != RT_OK) fail_msg("rtm_context_create: %s", rtm_last_error());
    return c;
}

//===--- one sequence alone ---===//

/* A prompt, then N_STEPS greedy tokens, decoded alone: the tokens and the
 * logits after the prompt and after each token (N_STEPS + 1 rows). */
typedef struct seq_run {
    rtm_token_t tok[128];
    int32_t n_prompt;
    float *logits;
} seq_run_t;

/* Prompt s: PROMPTS[s] tokenized, or (synthetic, for models whose
 * vocabulary is noise) tokens spread over the vocabulary. */
static void prompt_tokens(rtm_model_t *m, int32_t s, bool synthetic, seq_run_t *r) {
    if (!synthetic) {
        assert_int_equal(rtm_vocab_tokenize(rtm_model_vocab(m), PROMPTS[s], strlen(PROMPTS[s]), true, false,
                                            r->tok, 128 - N_STEPS, &r->n_prompt), RT_OK);
        return;
    }
    static const int32_t lengths[4] = {13, 3, 9, 5};
    r->n_prompt = lengths[s];
    for (int32_t i = 0; i < r->n_prompt; i++) r->tok[i] = 1 + (7 * i + 31 * s) % (rtm_model_n_vocab(m) - 1);
}

static void run_alone(rtm_model_t *m, int32_t s, bool synthetic, seq_run_t *r) {
    const int32_t n_vocab = rtm_model_n_vocab(m);
    rtm_context_t *c = context(m, 256, 1);
    prompt_tokens(m, s, synthetic, r);
    r->logits = malloc((size_t)(N_STEPS + 1) * (size_t)n_vocab * sizeof(float));
    assert_int_equal(rtm_decode(c, r->tok, r->n_prompt), RT_OK);
    for (int32_t k = 0; k <= N_STEPS; k++) {
        memcpy(r->logits + (size_t)k * (size_t)n_vocab, rtm_get_logits(c), (size_t)n_vocab * sizeof(float));
        if (k == N_STEPS) break;
        r->tok[r->n_prompt + k] = tu_argmax(rtm_get_logits(c), n_vocab);
        assert_int_equal(rtm_decode(c, &r->tok[r->n_prompt + k], 1), RT_OK);
    }
    rtm_context_destroy(c);
}

//===--- several together ---===//

/* A sequence's part in the interleaved run: which alone-run it replays,
 * the step it starts at, and how far it got (-1: its prompt not yet run;
 * k >= 0: its prompt and k of its tokens fed, the logits are row k). */
typedef struct lane {
    const seq_run_t *ref;
    int32_t start, k;
} lane_t;

typedef struct batch_buf {
    rtm_token_t tok[512];
    int32_t seq[512];
    bool want[512];
    int32_t lane_of[512];  /* which lane's logits a wanted token gives */
    int32_t n;
} batch_buf_t;

static void add(batch_buf_t *b, rtm_token_t t, int32_t seq, bool want, int32_t lane) {
    b->tok[b->n] = t, b->seq[b->n] = seq, b->want[b->n] = want, b->lane_of[b->n] = lane;
    b->n++;
}

/* Lane l's tokens for step t: its whole prompt at its start, then one
 * token a step. */
static void add_lane(batch_buf_t *b, const lane_t *ln, int32_t l, int32_t t) {
    if (t == ln->start) {
        for (int32_t i = 0; i < ln->ref->n_prompt; i++)
            add(b, ln->ref->tok[i], l, i == ln->ref->n_prompt - 1, l);
    } else if (ln->k >= 0 && ln->k < N_STEPS) {
        add(b, ln->ref->tok[ln->ref->n_prompt + ln->k], l, true, l);
    }
}

/* Each wanted token's logits against its lane's alone-run; returns the
 * largest error. */
static double check_step(rtm_context_t *c, const batch_buf_t *b, lane_t *lanes, int32_t n_vocab,
                         double tol, const char *what, int32_t t) {
    double worst = 0;
    for (int32_t i = 0; i < b->n; i++) {
        if (!b->want[i]) continue;
        lane_t *ln = &lanes[b->lane_of[i]];
        ln->k++;
        const float *got = rtm_get_logits_ith(c, i);
        if (got == NULL) fail_msg("%s: step %d token %d has no logits", what, t, i);
        const float *want = ln->ref->logits + (size_t)ln->k * (size_t)n_vocab;
        const double e = tu_nmse_error_f32(want, got, (size_t)n_vocab);
        if (!(e <= tol))
            fail_msg("%s: step %d, sequence %d (its token %d): logits differ by %.3g (> %g)", what, t,
                     b->seq[i], ln->k, e, tol);
        if (e > worst) worst = e;
    }
    return worst;
}

/* Runs the lanes (lane l is sequence l) until every one has fed all its
 * tokens; lane `reuse`, when >= 0, is cleared at step `at` and restarted
 * on ref2. Returns the largest error seen. */
static double run_lanes(rtm_context_t *c, lane_t *lanes, int32_t n_lanes, int32_t n_vocab, double tol,
                        const char *what, int32_t reuse, int32_t at, const seq_run_t *ref2) {
    double worst = 0;
    for (int32_t t = 0;; t++) {
        if (t == at && reuse >= 0) {
            rtm_seq_clear(c, reuse);
            assert_int_equal(rtm_seq_n_past(c, reuse), 0);
            lanes[reuse] = (lane_t){ref2, t, -1};
        }
        batch_buf_t b = {.n = 0};
        for (int32_t l = n_lanes - 1; l >= 0; l--) add_lane(&b, &lanes[l], l, t); /* not in seq order */
        if (b.n == 0 && t > at) break;
        if (b.n == 0) continue;
        const rtm_batch_t batch = {sizeof batch, b.n, b.tok, b.seq, b.want};
        if (rtm_decode_batch(c, &batch) != RT_OK) fail_msg("%s: step %d: %s", what, t, rtm_last_error());
        const double e = check_step(c, &b, lanes, n_vocab, tol, what, t);
        if (e > worst) worst = e;
    }
    for (int32_t l = 0; l < n_lanes; l++) {
        if (lanes[l].k != N_STEPS) fail_msg("%s: sequence %d stopped at %d", what, l, lanes[l].k);
        assert_int_equal(rtm_seq_n_past(c, l), lanes[l].ref->n_prompt + N_STEPS);
    }
    return worst;
}

static void alone_all(rtm_model_t *m, seq_run_t refs[4], bool synthetic) {
    for (int32_t s = 0; s < 4; s++) run_alone(m, s, synthetic, &refs[s]);
}

static void free_all(seq_run_t refs[4]) {
    for (int32_t s = 0; s < 4; s++) free(refs[s].logits);
}

/* batch-1 (and -4, -5): three sequences starting at steps 0, 1 and 3. */
static void interleaved(rtm_model_t *m, const seq_run_t refs[4], double tol, const char *what) {
    rtm_context_t *c = context(m, 256, N_SEQ);
    lane_t lanes[N_SEQ] = {{&refs[0], 0, -1}, {&refs[1], 1, -1}, {&refs[2], 3, -1}};
    const double e = run_lanes(c, lanes, N_SEQ, rtm_model_n_vocab(m), tol, what, -1, -1, NULL);
    print_message("%s: %d sequences interleaved, every step's logits within %.3g of each alone\n", what,
                  N_SEQ, e);
    rtm_context_destroy(c);
}

/* The references decoded alone on cpu0; the sequences interleaved with
 * the model's last n_gpu layers on gpu (NULL: all on cpu0). */
static void interleaved_vs_cpu(rt_registry_t *reg, const char *gpu, int32_t n_gpu, double tol,
                               const char *what) {
    rtm_model_t *mc = load(reg, NULL, 0);
    seq_run_t refs[4] = {0};
    alone_all(mc, refs, false);
    rtm_model_t *m = gpu ? load(reg, gpu, n_gpu) : mc;
    interleaved(m, refs, tol, what);
    if (m != mc) rtm_model_destroy(m);
    rtm_model_destroy(mc);
    free_all(refs);
}

//===--- the tests ---===//

static void test_interleaved(void **state) {
    (void)state;
    rt_registry_t *reg = tu_registry_open("cpu", 0);
    interleaved_vs_cpu(reg, NULL, 0, TOL_SAME, "batch-1 (cpu0)");
    rt_registry_destroy(reg);
}

static void test_clear_reuse(void **state) {
    (void)state;
    rt_registry_t *reg = tu_registry_open("cpu", 0);
    rtm_model_t *m = load(reg, NULL, 0);
    seq_run_t refs[4] = {0};
    alone_all(m, refs, false);
    rtm_context_t *c = context(m, 256, N_SEQ);
    lane_t lanes[N_SEQ] = {{&refs[0], 0, -1}, {&refs[1], 0, -1}, {&refs[2], 2, -1}};
    /* batch-2: sequence 1 is cleared at step 5 (its cells in the middle of
       the others') and restarts on the fourth prompt */
    const double e = run_lanes(c, lanes, N_SEQ, rtm_model_n_vocab(m), TOL_SAME, "batch-2", 1, 5, &refs[3]);
    print_message("batch-2: a cleared sequence reused for a new prompt: logits within %.3g\n", e);
    rtm_context_destroy(c);
    free_all(refs);
    rtm_model_destroy(m);
    rt_registry_destroy(reg);
}

static void test_overflow(void **state) {
    (void)state;
    rt_registry_t *reg = tu_registry_open("cpu", 0);
    rtm_model_t *m = load(reg, NULL, 0);
    rtm_context_t *c = context(m, 32, 2);
    rtm_token_t t[40];
    int32_t seq[40];
    for (int32_t i = 0; i < 40; i++) t[i] = 1 + i, seq[i] = i % 2;
    /* batch-3.1: 20 tokens of each sequence fill 40 > 32 cells: refused, nothing cached */
    rtm_batch_t b = {sizeof b, 40, t, seq, NULL};
    assert_int_equal(rtm_decode_batch(c, &b), RT_ERR_DOES_NOT_FIT);
    assert_non_null(strstr(rtm_last_error(), "free cells"));
    assert_int_equal(rtm_seq_n_past(c, 0), 0);
    assert_int_equal(rtm_seq_n_past(c, 1), 0);
    /* batch-3.2: 30 fit; then 3 more do not, 2 do */
    b.n_tokens = 30;
    assert_int_equal(rtm_decode_batch(c, &b), RT_OK);
    assert_int_equal(rtm_seq_n_past(c, 0), 15);
    assert_int_equal(rtm_seq_n_past(c, 1), 15);
    b.n_tokens = 3;
    assert_int_equal(rtm_decode_batch(c, &b), RT_ERR_DOES_NOT_FIT);
    assert_int_equal(rtm_decode(c, t, 3), RT_ERR_DOES_NOT_FIT);
    /* batch-3.3: clearing sequence 1 frees its 15 cells for sequence 0 */
    rtm_seq_clear(c, 1);
    assert_int_equal(rtm_seq_n_past(c, 1), 0);
    assert_int_equal(rtm_decode(c, t, 10), RT_OK);
    assert_int_equal(rtm_seq_n_past(c, 0), 25);
    /* batch-3.4: sequences out of range, parts with several sequences */
    const int32_t bad[1] = {2};
    rtm_batch_t b1 = {sizeof b1, 1, t, bad, NULL};
    assert_int_equal(rtm_decode_batch(c, &b1), RT_ERR_INVALID_ARGUMENT);
    assert_int_equal(rtm_seq_n_past(c, 2), -1);
    const rtm_part_t p = {sizeof p, 0, rtm_model_n_layer(m), RTM_BLOCK_LAYERS};
    assert_int_equal(rtm_decode_part(c, &p, t, NULL, 1, NULL), RT_ERR_INVALID_ARGUMENT);
    assert_int_equal(rtm_decode_batch(c, NULL), RT_ERR_INVALID_ARGUMENT);
    rtm_context_destroy(c);
    rtm_model_destroy(m);
    rt_registry_destroy(reg);
}

static void test_split(void **state) {
    (void)state;
    rt_registry_t *reg = tu_registry_open("cpu,mockgpu", 1);
    interleaved_vs_cpu(reg, "mockgpu0", 3, TOL_SAME, "batch-4 (3 layers on mockgpu0, 2 on cpu0)");
    rt_registry_destroy(reg);
}

static void test_vulkan(void **state) {
    (void)state;
    rt_registry_t *reg = tu_registry_vulkan("batch-5");
    /* the batch on vulkan0 against cpu0 alone: test-model's vulkan bound */
    interleaved_vs_cpu(reg, "vulkan0", 5, TOL_DEVICE, "batch-5 (vulkan0)");
    rt_registry_destroy(reg);
}

static void test_decode_unchanged(void **state) {
    (void)state;
    rt_registry_t *reg = tu_registry_open("cpu", 0);
    rtm_model_t *m = load(reg, NULL, 0);
    const int32_t n_vocab = rtm_model_n_vocab(m);
    rtm_token_t t[64];
    int32_t n = 0;
    assert_int_equal(rtm_vocab_tokenize(rtm_model_vocab(m), PROMPTS[0], strlen(PROMPTS[0]), true, false, t,
                                        64, &n), RT_OK);
    float *l[2];
    const int32_t modes[] = {RTM_FLASH_ATTN_OFF, RTM_FLASH_ATTN_ON};
    for (int32_t mode = 0; mode < 2; mode++) {
        flash_attn = modes[mode];
        for (int32_t k = 0; k < 2; k++) {
            rtm_context_t *c = context(m, 256, k == 0 ? 1 : N_SEQ);
            assert_int_equal(rtm_decode(c, t, n), RT_OK);
            assert_int_equal(rtm_decode(c, t, 3), RT_OK);
            assert_int_equal(rtm_context_n_past(c), n + 3);
            assert_ptr_equal(rtm_get_logits_ith(c, 2), rtm_get_logits(c)); /* the last token's */
            assert_null(rtm_get_logits_ith(c, 1));
            l[k] = malloc((size_t)n_vocab * sizeof(float));
            memcpy(l[k], rtm_get_logits(c), (size_t)n_vocab * sizeof(float));
            rtm_context_destroy(c);
        }
        /* batch-6: bit-identical */
        assert_memory_equal(l[0], l[1], (size_t)n_vocab * sizeof(float));
        free(l[0]);
        free(l[1]);
    }
    flash_attn = RTM_FLASH_ATTN_OFF;
    rtm_model_destroy(m);
    rt_registry_destroy(reg);
}

/* batch-7: the other architectures' random-weight models (tests/arch):
 * Gemma 3's sliding window of 4 (the prompts and tokens pass it), GPT-2's
 * learned positions, Llama 3's rope factors, Qwen 3's norms of Q and K. */
static void test_architectures(void **state) {
    (void)state;
    static const char *const names[] = {"gemma3", "gpt2", "llama3", "qwen3", "qwen2"};
    rt_registry_t *reg = tu_registry_open("cpu", 0);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[256], what[64];
        tu_arch_model_path(names[i], path, sizeof path);
        snprintf(what, sizeof what, "batch-7 (%s)", names[i]);
        rtm_model_t *m = load_file(reg, path, NULL, 0);
        seq_run_t refs[4] = {0};
        alone_all(m, refs, true);
        interleaved(m, refs, TOL_SAME, what);
        free_all(refs);
        rtm_model_destroy(m);
    }
    rt_registry_destroy(reg);
}

/* batch-8: the fused graph keeps each sequence to its own cells as well. */
static void test_fused(void **state) {
    (void)state;
    static const char *const names[] = {"gemma3", "gpt2", "qwen3"};
    rt_registry_t *reg = tu_registry_open("cpu", 0);
    rtm_model_t *m = load(reg, NULL, 0);
    rtm_context_t *c = NULL;
    const rtm_context_params_t cp = {.struct_size = sizeof cp, .n_ctx = 256, .n_batch = N_BATCH,
                                     .n_seq_max = N_SEQ, .flash_attn = RTM_FLASH_ATTN_ON};
    const rt_status_t st = rtm_context_create(m, &cp, &c);
    if (st != RT_ERR_UNSUPPORTED) assert_int_equal(st, RT_OK);
    const bool fuses = st == RT_OK;
    rtm_context_destroy(c);
    rtm_model_destroy(m);
    if (!fuses) {
        rt_registry_destroy(reg);
        print_message("batch-8: cpu0 has no FLASH_ATTN kernel: skipped\n");
        skip();
    }
    flash_attn = RTM_FLASH_ATTN_ON;
    interleaved_vs_cpu(reg, NULL, 0, TOL_SAME, "batch-8 (cpu0, fused)");
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[256], what[64];
        tu_arch_model_path(names[i], path, sizeof path);
        snprintf(what, sizeof what, "batch-8 (%s, fused)", names[i]);
        m = load_file(reg, path, NULL, 0);
        seq_run_t refs[4] = {0};
        alone_all(m, refs, true);
        interleaved(m, refs, TOL_SAME, what);
        free_all(refs);
        rtm_model_destroy(m);
    }
    flash_attn = RTM_FLASH_ATTN_OFF;
    rt_registry_destroy(reg);
}

/* Feeds seq 0 its reference's tokens from position `from` on (the prompt's
 * rest in one batch, then a token a step), each logits row against the
 * reference's. */
static void refeed(rtm_context_t *c, const seq_run_t *ref, int32_t from, int32_t n_vocab, const char *what) {
    rtm_token_t tok[128];
    int32_t seq[128] = {0};
    bool want[128] = {false};
    const int32_t n = ref->n_prompt - from;
    memcpy(tok, ref->tok + from, (size_t)n * sizeof tok[0]);
    want[n - 1] = true;
    const rtm_batch_t b = {sizeof b, n, tok, seq, want};
    if (rtm_decode_batch(c, &b) != RT_OK) fail_msg("%s: %s", what, rtm_last_error());
    for (int32_t k = 0; k <= N_STEPS; k++) {
        const float *got = rtm_get_logits_ith(c, k == 0 ? n - 1 : 0);
        const double e = tu_nmse_error_f32(ref->logits + (size_t)k * (size_t)n_vocab, got, (size_t)n_vocab);
        if (!(e <= TOL_SAME)) fail_msg("%s: step %d: logits differ by %.3g", what, k, e);
        if (k == N_STEPS) break;
        const rtm_batch_t one = {sizeof one, 1, &ref->tok[ref->n_prompt + k], seq, want + n - 1};
        if (rtm_decode_batch(c, &one) != RT_OK) fail_msg("%s: step %d: %s", what, k, rtm_last_error());
    }
}

static void keep_half(rtm_model_t *m, const seq_run_t refs[4], const char *what) {
    rtm_context_t *c = context(m, 256, 2);
    lane_t lanes[2] = {{&refs[0], 0, -1}, {&refs[2], 1, -1}};
    run_lanes(c, lanes, 2, rtm_model_n_vocab(m), TOL_SAME, what, -1, -1, NULL);
    const int32_t k = refs[0].n_prompt / 2, held = refs[0].n_prompt + N_STEPS;
    rtm_seq_keep(c, 0, held + 5);
    assert_int_equal(rtm_seq_n_past(c, 0), held);
    rtm_seq_keep(c, 0, k);
    assert_int_equal(rtm_seq_n_past(c, 0), k);
    assert_int_equal(rtm_seq_n_past(c, 1), refs[2].n_prompt + N_STEPS);
    refeed(c, &refs[0], k, rtm_model_n_vocab(m), what);
    print_message("%s: a sequence kept to %d positions and fed again: its own logits\n", what, k);
    rtm_context_destroy(c);
}

static void test_keep(void **state) {
    (void)state;
    rt_registry_t *reg = tu_registry_open("cpu", 0);
    rtm_model_t *m = load(reg, NULL, 0);
    seq_run_t refs[4] = {0};
    alone_all(m, refs, false);
    keep_half(m, refs, "batch-9 (unfused)");
    flash_attn = RTM_FLASH_ATTN_ON;
    rtm_context_t *c = NULL;
    const rtm_context_params_t cp = {.struct_size = sizeof cp, .n_ctx = 256, .n_seq_max = 2,
                                     .flash_attn = RTM_FLASH_ATTN_ON};
    if (rtm_context_create(m, &cp, &c) == RT_OK) keep_half(m, refs, "batch-9 (fused)");
    rtm_context_destroy(c);
    flash_attn = RTM_FLASH_ATTN_OFF;
    free_all(refs);
    rtm_model_destroy(m);
    rt_registry_destroy(reg);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_interleaved),
        cmocka_unit_test(test_clear_reuse),
        cmocka_unit_test(test_overflow),
        cmocka_unit_test(test_split),
        cmocka_unit_test(test_vulkan),
        cmocka_unit_test(test_decode_unchanged),
        cmocka_unit_test(test_architectures),
        cmocka_unit_test(test_fused),
        cmocka_unit_test(test_keep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
