/* SPDX-License-Identifier: MIT */
/* test-plan.c: rt-plan, run as a program from the repository root, and
 * the model library's rtm_context_graph it plans with.
 *   plan-1  -m models/stories260K.gguf plans that model: the text names its
 *           layers' nodes after the weights and cache they read, the SVG names
 *           tensors inside their blocks, the DOT has one cluster per layer
 *           (5) and a device legend
 *   plan-2  --dot over two mock GPUs and the CPU with --n-gpu-layers 2:
 *           the last two layers take the first device's colour, layer 0
 *           the CPU's, and the graph is cut into several splits
 *   plan-3  an output file that is the model is refused and the model is
 *           left as it was; a file that is not a GGUF model is an error
 *   plan-4  sizes that would overflow a tensor or the graph are an error
 *   plan-5  for stories260K and every random-weight architecture of
 *           tests/arch/models, rt-plan -m plans as many nodes as the
 *           model library's context reserves for (rtm_context_graph) and,
 *           with -b 1, as its stats count for the one-token graph
 *   plan-6  the plan of a GQA model (random-qwen2: 4 query heads over 2
 *           KV heads of 8) draws the attention as the library runs it:
 *           the K cache view {8, n_kv, 2}, the scores {n_kv, n_batch, 4}
 *   plan-7  rtm_context_graph refuses sizes outside the context and
 *           leaves the context as it was (a decode after it gives the
 *           same logits as one before it)
 *   plan-8  rt-plan's and rt-bench's command lines: --help lists the
 *           defaults, --version its line, -dev and --devices are --device,
 *           --explain says where the layers went; a built-in graph's
 *           option with -m, a bad value, an unknown device or subcommand
 *           are usage errors (status 2); rt-bench ops times the fused
 *           attention (--op flash_attn)
 * Each test gets its own temporary directory, removed by its teardown. */
#include "testutil.h"

#include "../model/rt_model.h"

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
    snprintf(args, sizeof args, "-m %s -c 64 --svg %s/p.svg --dot %s/p.dot --devices cpu0", MODEL, f->dir,
             f->dir);
    int st;
    char *out = run_plan(f, "RT_PLUGINS=cpu", args, &st);
    if (st != 0) fail_msg("rt-plan failed (%d): %s", st, out);
    tu_expect_contains(out, "mul_mat(attn_q).4", "the text plan of a 5-layer model: the Q projection");
    tu_expect_contains(out, "mul_mat(cache_k).4", "the text plan: the scores read the K cache");
    tu_expect_contains(out, "n_ctx 64, n_batch 32: 32 tokens after 32: 155 nodes", "the graph line");
    free(out);
    char *svg = slurp(f->dir, "p.svg"), *dot = slurp(f->dir, "p.dot");
    tu_expect_contains(svg, "pointer-events=\"none\">get_rows(token_embd)</text>", "the SVG");
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
    assert_string_equal(colour_of(dot, "mul_mat(attn_q).4", l4, sizeof l4), gpu);
    assert_string_equal(colour_of(dot, "mul_mat(attn_q).3", l3, sizeof l3), gpu);
    assert_string_equal(colour_of(dot, "mul_mat(attn_q).0", l0, sizeof l0), cpu);
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

//===--- the model library's graph ---===//

/* stories260K and one random-weight model per architecture. */
static const char *const lib_models[] = {
    "tests/arch/models/random-llama.gguf", "tests/arch/models/random-llama3.gguf",
    "tests/arch/models/random-qwen2.gguf", "tests/arch/models/random-qwen3.gguf",
    "tests/arch/models/random-gemma3.gguf", "tests/arch/models/random-gpt2.gguf",
    "tests/arch/models/random-bert.gguf", NULL /* the bundled model, by tu_model_path */
};
#define N_LIB_MODELS (sizeof lib_models / sizeof lib_models[0])
#define LIB_N_CTX 64

typedef struct lib_model {
    rtm_model_t *m;
    rtm_context_t *c;
} lib_model_t;

static const char *lib_model_path(size_t i, char *buf, size_t size) {
    return lib_models[i] != NULL ? lib_models[i] : tu_model_path("stories260K.gguf", buf, size);
}

/* The model on the CPU alone (as rt-plan sees it with RT_PLUGINS=cpu) and
 * a context of LIB_N_CTX with the library's other defaults. */
static void lib_open(const char *path, lib_model_t *out) {
    rt_device_t *cpu = tu_cpu_device();
    const rtm_model_params_t mp = {.struct_size = sizeof mp, .registry = tu_registry(), .devices = &cpu,
                                   .n_devices = 1, .n_ctx = LIB_N_CTX, .no_progress = true};
    if (rtm_model_load(path, &mp, &out->m) != RT_OK) fail_msg("%s: %s", path, rtm_last_error());
    const rtm_context_params_t cp = {.struct_size = sizeof cp, .n_ctx = LIB_N_CTX};
    if (rtm_context_create(out->m, &cp, &out->c) != RT_OK) fail_msg("%s: %s", path, rtm_last_error());
}

static void lib_close(lib_model_t *l) {
    rtm_context_destroy(l->c);
    rtm_model_destroy(l->m);
}

/* Nodes of the graph of n tokens after n_past. */
static int32_t lib_nodes(const rtm_context_t *c, int32_t n, int32_t n_past) {
    rt_context_t *gctx = NULL;
    rt_graph_t *g = NULL;
    if (rtm_context_graph(c, n, n_past, &gctx, &g) != RT_OK) fail_msg("rtm_context_graph: %s", rtm_last_error());
    const int32_t nodes = rt_graph_n_nodes(g);
    rt_context_destroy(gctx);
    return nodes;
}

/* The node count of rt-plan's "graph: ..." line. */
static int32_t plan_nodes(plan_fixture_t *f, const char *path, const char *more) {
    char args[512];
    snprintf(args, sizeof args, "-m %s --quiet -c %d %s", path, LIB_N_CTX, more);
    int st;
    char *out = run_plan(f, "RT_PLUGINS=cpu", args, &st);
    if (st != 0) fail_msg("rt-plan %s failed (%d): %s", args, st, out);
    const char *line = strstr(out, " tokens after ");
    int nodes = -1;
    if (line == NULL || sscanf(line, " tokens after %*d: %d nodes", &nodes) != 1)
        fail_msg("rt-plan %s: no node count in:\n%s", args, out);
    free(out);
    return nodes;
}

/* plan-5 */
static void test_model_node_counts(void **state) {
    plan_fixture_t *f = *state;
    char buf[512];
    for (size_t i = 0; i < N_LIB_MODELS; i++) {
        const char *path = lib_model_path(i, buf, sizeof buf);
        lib_model_t l;
        lib_open(path, &l);
        rtm_context_stats_t stats = {.struct_size = sizeof stats};
        assert_int_equal(rtm_context_get_stats(l.c, &stats), RT_OK);
        const int32_t n_batch = rtm_context_n_batch(l.c), n_ctx = rtm_context_n_ctx(l.c);
        const int32_t tg = lib_nodes(l.c, 1, n_ctx - 1), pp = lib_nodes(l.c, n_batch, n_ctx - n_batch);
        print_message("%s: %d nodes for %d tokens, %d for one (stats: %d)\n", path, (int)pp, (int)n_batch,
                      (int)tg, (int)stats.tg_nodes);
        assert_int_equal(tg, stats.tg_nodes);
        assert_int_equal(plan_nodes(f, path, ""), pp);
        assert_int_equal(plan_nodes(f, path, "-b 1"), stats.tg_nodes);
        lib_close(&l);
    }
}

/* plan-6 */
static void test_gqa_shapes(void **state) {
    plan_fixture_t *f = *state;
    char args[512];
    snprintf(args, sizeof args, "-m tests/arch/models/random-qwen2.gguf -c 64 -b 16 --dot %s/q.dot "
             "--devices cpu0", f->dir);
    int st;
    char *out = run_plan(f, "RT_PLUGINS=cpu", args, &st);
    if (st != 0) fail_msg("rt-plan failed (%d): %s", st, out);
    tu_expect_contains(out, "mul_mat(attn_k).1", "plan-6: the text names the K projection of layer 1");
    free(out);
    char *dot = slurp(f->dir, "q.dot");
    tu_expect_contains(dot, "[label=\"blk.0.attn_k.weight\\nNONE f32 [32,16,1,1]\"", "plan-6: W_k, 2 heads of 8");
    tu_expect_contains(dot, "[label=\"view(cache_k).0\\nVIEW f32 [8,64,2,1]\"", "plan-6: K, 2 heads");
    tu_expect_contains(dot, "[label=\"soft_max(kq_mask).0\\nSOFT_MAX f32 [64,16,4,1]\"",
                       "plan-6: the scores of 4 query heads");
    tu_expect_contains(dot, "subgraph cluster_layer_1 {", "plan-6");
    free(dot);
}

/* plan-7 */
static void test_context_graph_refusals(void **state) {
    (void)state;
    char buf[512];
    lib_model_t l;
    lib_open(tu_model_path("stories260K.gguf", buf, sizeof buf), &l);
    const rtm_token_t tokens[] = {1, 400, 20, 31};
    const int32_t n_vocab = rtm_model_n_vocab(l.m), n_batch = rtm_context_n_batch(l.c);
    assert_int_equal(rtm_decode(l.c, tokens, 4), RT_OK);
    float *before = malloc((size_t)n_vocab * sizeof before[0]);
    assert_non_null(before);
    memcpy(before, rtm_get_logits(l.c), (size_t)n_vocab * sizeof before[0]);
    rtm_context_stats_t s1 = {.struct_size = sizeof s1}, s2 = {.struct_size = sizeof s2};
    assert_int_equal(rtm_context_get_stats(l.c, &s1), RT_OK);
    rt_context_t *gctx = NULL;
    rt_graph_t *g = NULL;
    assert_int_equal(rtm_context_graph(l.c, 0, 0, &gctx, &g), RT_ERR_INVALID_ARGUMENT);
    assert_int_equal(rtm_context_graph(l.c, n_batch + 1, 0, &gctx, &g), RT_ERR_INVALID_ARGUMENT);
    assert_int_equal(rtm_context_graph(l.c, 1, -1, &gctx, &g), RT_ERR_INVALID_ARGUMENT);
    assert_int_equal(rtm_context_graph(l.c, 2, LIB_N_CTX - 1, &gctx, &g), RT_ERR_DOES_NOT_FIT);
    assert_int_equal(rtm_context_graph(NULL, 1, 0, &gctx, &g), RT_ERR_INVALID_ARGUMENT);
    assert_int_equal(rtm_context_graph(l.c, 1, 0, NULL, &g), RT_ERR_INVALID_ARGUMENT);
    assert_null(gctx);
    assert_null(g);
    assert_int_equal(rtm_context_graph(l.c, n_batch, LIB_N_CTX - n_batch, &gctx, &g), RT_OK);
    assert_true(rt_graph_n_nodes(g) > 0);
    rt_context_destroy(gctx);
    rtm_context_clear(l.c);
    assert_int_equal(rtm_decode(l.c, tokens, 4), RT_OK);
    assert_memory_equal(rtm_get_logits(l.c), before, (size_t)n_vocab * sizeof before[0]);
    assert_int_equal(rtm_context_get_stats(l.c, &s2), RT_OK);
    assert_int_equal(s2.n_builds, s1.n_builds); /* the graph it ran stayed allocated */
    assert_int_equal(s2.n_reserves, s1.n_reserves);
    assert_int_equal(s2.compute_bytes_changes, 0);
    free(before);
    lib_close(&l);
}

//===--- the command line ---===//

/* The exit status and output of one rt-plan or rt-bench command line. */
static char *run_tool(plan_fixture_t *f, const char *tool, const char *args, int *code) {
    snprintf(f->cmd, sizeof f->cmd, "RT_PLUGINS=cpu %s/bin/%s %s 2>&1", tu_build_dir(), tool, args);
    int st;
    char *out = tu_run_capture(f->cmd, &st);
    *code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return out;
}

/* plan-8 */
static void test_command_line(void **state) {
    plan_fixture_t *f = *state;
    static const struct {
        const char *tool, *args;
        int code;
        const char *want;
    } cases[] = {
        {"rt-plan", "--help", 0, "at most 2048; else 256)"},
        {"rt-plan", "--help", 0, "-dev, --device, --devices LIST"},
        {"rt-plan", "--version", 0, "rt-plan " RT_VERSION_STRING " (ABI "},
        {"rt-plan", "-dev cpu0 --quiet -b 8 -c 64", 0, "n_ctx 64, n_batch 8"},
        {"rt-plan", "--device=cpu0 --quiet --n-batch=8 --ctx-size 64", 0, "n_ctx 64, n_batch 8"},
        {"rt-plan", "--devices nosuch --quiet", 2, "no device named 'nosuch'"},
        {"rt-plan", "-m models/stories260K.gguf --n-layer 3", 2, "for the built-in graphs"},
        {"rt-plan", "--n-batch x", 2, "--n-batch wants an integer"},
        {"rt-plan", "--quiet extra", 2, "unexpected argument 'extra'"},
        {"rt-plan", "--split nope", 2, "--split knows 'auto' and 'fastest'"},
        {"rt-plan", "-m models/stories260K.gguf --explain --quiet -c 64", 0, "layers 0-4"},
        {"rt-bench", "--help", 0, "alloc"},
        {"rt-bench", "nosuch", 2, "unknown subcommand 'nosuch'"},
        {"rt-bench", "alloc --help", 0, "--n-batch 512 --n-ctx 4096"},
        {"rt-bench", "alloc --n-layer 1 --n-embd 64 -b 4 -c 32 --runs 1 -dev cpu0", 0, "n_batch 4, n_ctx 32"},
        {"rt-bench", "alloc --runs 0", 2, "--runs wants an integer"},
        {"rt-bench", "ops --n 1,x", 2, "--n wants a comma-separated list"},
        {"rt-bench", "ops --help", 0, "(default cpu0)"},
        /* the fused attention's row: 64 keys, one query, heads of 128 */
        {"rt-bench", "ops --op flash_attn --type f16 --n 1 --tokens 64 --time 0.01 --reps 3 --no-openblas", 0,
         "flash_attn f16              64      1    128"},
        {"rt-bench", "model --reps 1000", 2, "--reps wants an integer from 1 to 64"},
        {"rt-bench", "threads --dim 8", 2, "--dim wants an integer from 16"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int code;
        char *out = run_tool(f, cases[i].tool, cases[i].args, &code);
        if (code != cases[i].code || strstr(out, cases[i].want) == NULL)
            fail_msg("plan-8: %s %s: status %d (want %d), output lacks '%s':\n%s", cases[i].tool,
                     cases[i].args, code, cases[i].code, cases[i].want, out);
        free(out);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_sizes_that_overflow, setup, teardown),
        cmocka_unit_test_setup_teardown(test_model_plan, setup, teardown),
        cmocka_unit_test_setup_teardown(test_split_dot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_model_node_counts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gqa_shapes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_context_graph_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_command_line, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
