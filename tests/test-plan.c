/* SPDX-License-Identifier: MIT */
/* test-plan.c: rt-plan, run as a program from the repository root.
 *   plan-1  -m models/stories260K.gguf plans that model: the text names its
 *           layers' tensors, the SVG names tensors inside their blocks, the
 *           DOT has one cluster per layer (5) and a device legend
 *   plan-2  --dot over two mock GPUs and the CPU with --n-gpu-layers 2:
 *           the last two layers take the first device's colour, layer 0
 *           the CPU's, and the graph is cut into several splits
 *   plan-3  an output file that is the model is refused and the model is
 *           left as it was; a file that is not a GGUF model is an error
 * Each test gets its own temporary directory, removed by its teardown. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <unistd.h>

#define MODEL "models/stories260K.gguf"

typedef struct plan_fixture {
    char dir[64];
    char cmd[2048];
} plan_fixture_t;

static int setup(void **state) {
    plan_fixture_t *f = calloc(1, sizeof *f);
    if (f == NULL) return -1;
    snprintf(f->dir, sizeof f->dir, "/tmp/rt-test-plan-XXXXXX");
    if (mkdtemp(f->dir) == NULL) {
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state) {
    plan_fixture_t *f = *state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    const int rc = system(cmd);
    free(f);
    return rc == 0 ? 0 : -1;
}

/* rt-plan's output for the arguments; its exit status in *status. */
static char *run_plan(plan_fixture_t *f, const char *env, const char *args, int *status) {
    snprintf(f->cmd, sizeof f->cmd, "%s %s/bin/rt-plan %s 2>&1", env, tu_build_dir(), args);
    return tu_run_capture(f->cmd, status);
}

static char *slurp(const char *dir, const char *file) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *fp = fopen(path, "rb");
    if (fp == NULL) fail_msg("%s was not written", path);
    fseek(fp, 0, SEEK_END);
    const long n = ftell(fp);
    rewind(fp);
    char *s = malloc((size_t)n + 1);
    assert_non_null(s);
    assert_int_equal(fread(s, 1, (size_t)n, fp), (size_t)n);
    s[n] = 0;
    fclose(fp);
    return s;
}

/* The fillcolor of DOT node `name` (its label starts with it). */
static char *colour_of(const char *dot, const char *name, char *buf, size_t size) {
    char key[96];
    snprintf(key, sizeof key, "[label=\"%s\\n", name);
    const char *p = strstr(dot, key);
    if (p == NULL) fail_msg("the DOT has no node %s", name);
    p = strstr(p, "fillcolor=\"");
    assert_non_null(p);
    p += strlen("fillcolor=\"");
    const char *e = strchr(p, '"');
    snprintf(buf, size, "%.*s", (int)(e - p), p);
    return buf;
}

/* plan-1 */
static void test_model_plan(void **state) {
    plan_fixture_t *f = *state;
    char args[512];
    snprintf(args, sizeof args, "-m %s --svg %s/p.svg --dot %s/p.dot --devices cpu0", MODEL, f->dir, f->dir);
    int st;
    char *out = run_plan(f, "RT_PLUGINS=cpu", args, &st);
    if (st != 0) fail_msg("rt-plan failed (%d): %s", st, out);
    tu_expect_contains(out, "kq.4", "the text plan of a 5-layer model");
    free(out);
    char *svg = slurp(f->dir, "p.svg"), *dot = slurp(f->dir, "p.dot");
    tu_expect_contains(svg, "pointer-events=\"none\">v_trans.0</text>", "the SVG");
    tu_expect_contains(dot, "subgraph cluster_layer_4 {", "the DOT");
    assert_null(strstr(dot, "cluster_layer_5"));
    tu_expect_contains(dot, "label=\"cpu0\"", "the DOT's device legend");
    free(svg);
    free(dot);
}

/* plan-2 */
static void test_split_dot(void **state) {
    plan_fixture_t *f = *state;
    char env[512], args[512];
    snprintf(env, sizeof env, "RT_PLUGINS=cpu,mockgpu RT_PLUGIN_PATH=%s/tests/plugins/mockgpu", tu_build_dir_abs());
    snprintf(args, sizeof args, "-m %s --quiet --dot %s/s.dot --devices mockgpu0,mockgpu1 --n-gpu-layers 2", MODEL,
             f->dir);
    int st;
    char *out = run_plan(f, env, args, &st);
    if (st != 0) fail_msg("rt-plan failed (%d): %s", st, out);
    free(out);
    char *dot = slurp(f->dir, "s.dot");
    char gpu[32], cpu[32], l3[32], l4[32], l0[32];
    tu_expect_contains(dot, "label=\"mockgpu0\"", "the DOT's device legend");
    const char *legend_gpu = strstr(dot, "dev0 [label=\"mockgpu0\", shape=box, fillcolor=\"");
    const char *legend_cpu = strstr(dot, "[label=\"cpu0\", shape=box, fillcolor=\"");
    assert_non_null(legend_gpu);
    assert_non_null(legend_cpu);
    sscanf(strstr(legend_gpu, "fillcolor=\"") + 11, "%31[^\"]", gpu);
    sscanf(strstr(legend_cpu, "fillcolor=\"") + 11, "%31[^\"]", cpu);
    assert_string_equal(colour_of(dot, "kq.4", l4, sizeof l4), gpu);
    assert_string_equal(colour_of(dot, "kq.3", l3, sizeof l3), gpu);
    assert_string_equal(colour_of(dot, "kq.0", l0, sizeof l0), cpu);
    tu_expect_contains(dot, "shape=note", "the DOT (split inputs' copies)");
    free(dot);
}

/* plan-3 */
static void test_refusals(void **state) {
    plan_fixture_t *f = *state;
    char copy[128], args[512];
    snprintf(copy, sizeof copy, "%s/m.gguf", f->dir);
    snprintf(args, sizeof args, "cp %s %s", MODEL, copy);
    assert_int_equal(system(args), 0);
    struct stat before, after;
    assert_int_equal(stat(copy, &before), 0);
    snprintf(args, sizeof args, "-m %s --quiet --svg %s", copy, copy);
    int st;
    char *out = run_plan(f, "RT_PLUGINS=cpu", args, &st);
    assert_int_not_equal(st, 0);
    free(out);
    assert_int_equal(stat(copy, &after), 0);
    assert_int_equal(before.st_size, after.st_size);
    assert_int_equal(before.st_ino, after.st_ino);
    snprintf(args, sizeof args, "-m %s/tests/test-plan --quiet", tu_build_dir());
    out = run_plan(f, "RT_PLUGINS=cpu", args, &st);
    assert_int_not_equal(st, 0);
    tu_expect_contains(out, "rt-plan:", "the error for a file that is no model");
    free(out);
}

/* plan-4: sizes that would overflow a tensor or the graph are an error
 * with a message, never an abort inside the graph builders. */
static void test_sizes_that_overflow(void **state) {
    plan_fixture_t *f = *state;
    static const char *const args[] = {"--n-layer 100000000", "--n-embd 1000000000",
                                       "--n-embd 65536 --n-vocab 2000000000"};
    for (size_t i = 0; i < sizeof args / sizeof args[0]; i++) {
        int st = 0;
        char *out = run_plan(f, "RT_PLUGINS=cpu", args[i], &st);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 2 || strstr(out, "sizes too large") == NULL)
            fail_msg("plan-4.%zu: rt-plan %s: status %d, output:\n%s", i + 1, args[i], st, out);
        free(out);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_sizes_that_overflow, setup, teardown),
        cmocka_unit_test_setup_teardown(test_model_plan, setup, teardown),
        cmocka_unit_test_setup_teardown(test_split_dot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
