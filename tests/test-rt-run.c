/* SPDX-License-Identifier: MIT */
/* test-rt-run.c: what tools/rt-run reports, checked from the outside as a
 * user sees it (its exit status and its lines on stderr), on the bundled
 * model and on malformed variants of it (model_corpus.h).
 *
 *   rtrun-1  the context fills: the generation count is the tokens printed
 *   rtrun-2  more than 16 --devices: said so, not "no device named cpu0"
 *   rtrun-3  NaN weights: exit 1 naming the step; --check-numerics names the node
 *   rtrun-4  --temp nan / --top-p nan: exit 1 quoting the values
 *   rtrun-5  the corpus's valid models that broke rt-run print what they must
 *            (a 300-byte token piece was dropped)
 *   rtrun-6  --no-mmap copies the CPU's weights the default maps, and the
 *            story is the same */
#include "testutil.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "model_corpus.h"

#define MODEL "stories260K.gguf"

static char src[PATH_MAX];

static void need_model(void) { tu_need_file(tu_model_path(MODEL, src, sizeof src)); }

static void test_context_fills(void **state) {
    (void)state;
    need_model();
    int code, n_prompt = -1, n_gen = -1;
    char *out = tu_tool(&code, "rt-run", "-m '%s' -n 64 --ctx 8 --temp 0", src);
    const char *p = strstr(out, "prompt: "), *g = strstr(out, "generation: ");
    if (p) sscanf(p, "prompt: %d", &n_prompt);
    if (g) sscanf(g, "generation: %d", &n_gen);
    /* The last token printed fills the context: prompt + generated - 1 = 8. */
    if (code != 0 || n_prompt < 1 || n_gen != 8 - n_prompt + 1)
        fail_msg("rtrun-1: exit %d, prompt %d, generation %d: %s", code, n_prompt, n_gen, out);
    free(out);
}

static void test_many_devices(void **state) {
    (void)state;
    char list[17 * 5 + 1] = "";
    for (int i = 0; i < 17; i++) strcat(list, i ? ",cpu0" : "cpu0");
    int code;
    char *out = tu_tool(&code, "rt-run", "--devices %s -n 1", list);
    if (code != 1 || strstr(out, "more than 16 devices") == NULL)
        fail_msg("rtrun-2: exit %d: %s", code, out);
    free(out);
}

/* The text after the "weights" of cpu0's layers line: "... (mapped)". */
static bool cpu_weights_are(const char *out, const char *how) {
    const char *line = strstr(out, "\ncpu0 ");
    const char *end = line ? strchr(line + 1, '\n') : NULL;
    const char *w = line ? strstr(line, how) : NULL;
    return w != NULL && (end == NULL || w < end);
}

static void test_no_mmap(void **state) {
    (void)state;
    need_model();
    int code_map, code_copy;
    char *mapped = tu_tool(&code_map, "rt-run", "-m '%s' -n 24 --temp 0 --devices cpu0", src);
    char *copied = tu_tool(&code_copy, "rt-run", "-m '%s' -n 24 --temp 0 --devices cpu0 --no-mmap", src);
    if (code_map != 0 || !cpu_weights_are(mapped, "(mapped)"))
        fail_msg("rtrun-6: the default run (exit %d) does not map cpu0's weights: %s", code_map, mapped);
    if (code_copy != 0 || !cpu_weights_are(copied, "(copied)"))
        fail_msg("rtrun-6: --no-mmap (exit %d) does not copy cpu0's weights: %s", code_copy, copied);
    /* the story is the text before rt-run's report, which starts at "load: " */
    const char *end_m = strstr(mapped, "\nload: "), *end_c = strstr(copied, "\nload: ");
    if (end_m == NULL || end_c == NULL || strstr(mapped, "Once") == NULL || end_m - mapped != end_c - copied ||
        memcmp(mapped, copied, (size_t)(end_m - mapped)) != 0)
        fail_msg("rtrun-6: --no-mmap tells another story:\n%s\n---\n%s", mapped, copied);
    free(mapped);
    free(copied);
}

static void test_nan_weights(void **state) {
    (void)state;
    need_model();
    char path[64];
    snprintf(path, sizeof path, "/tmp/rt-rtrun-%d.gguf", (int)getpid());
    const mc_variant_t *v = NULL;
    for (int i = 0; i < mc_n_variants; i++)
        if (mc_variants[i].kind == MC_NAN) v = &mc_variants[i];
    assert_non_null(v);
    assert_int_equal(mc_write(src, path, v, false), RT_OK);
    int code;
    char *out = tu_tool(&code, "rt-run", "-m %s -n 4", path);
    const bool plain_ok = code == 1 && strstr(out, "step 1") && strstr(out, "--check-numerics");
    char *out2 = tu_tool(&code, "rt-run", "-m %s -n 4 --check-numerics", path);
    const bool checked_ok = code == 1 && strstr(out2, "the first node not finite is ") &&
                            strstr(out2, "is none") == NULL;
    unlink(path);
    if (!plain_ok) fail_msg("rtrun-3: %s", out);
    if (!checked_ok) fail_msg("rtrun-3: --check-numerics: %s", out2);
    free(out);
    free(out2);
}

static void test_nan_sampling(void **state) {
    (void)state;
    need_model();
    const char *opts[] = {"--temp nan", "--top-p nan"};
    for (int i = 0; i < 2; i++) {
        int code;
        char *out = tu_tool(&code, "rt-run", "-m '%s' -n 2 %s", src, opts[i]);
        if (code != 1 || strstr(out, "rtm_sampler_create: top_k") == NULL || strstr(out, "nan") == NULL)
            fail_msg("rtrun-4: %s: exit %d: %s", opts[i], code, out);
        free(out);
    }
}

static void test_corpus_runs(void **state) {
    (void)state;
    need_model();
    char path[64];
    snprintf(path, sizeof path, "/tmp/rt-rtrun-%d.gguf", (int)getpid());
    for (int i = 0; i < mc_n_variants; i++) {
        const mc_variant_t *v = &mc_variants[i];
        if (v->stage != MC_RUNS) continue;
        assert_int_equal(mc_write(src, path, v, false), RT_OK);
        int code;
        char *out = tu_tool(&code, "rt-run", "-m %s -n 1 --temp 0", path);
        unlink(path);
        if (code != 0 || strstr(out, v->expect) == NULL) fail_msg("rtrun-5 %s: exit %d: %s", v->name, code, out);
        free(out);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_context_fills),
        cmocka_unit_test(test_many_devices),
        cmocka_unit_test(test_nan_weights),
        cmocka_unit_test(test_nan_sampling),
        cmocka_unit_test(test_corpus_runs),
        cmocka_unit_test(test_no_mmap),
    };
    return cmocka_run_group_tests_name("rt-run", tests, NULL, NULL);
}
