/* SPDX-License-Identifier: MIT */
/* test-bench-peer.c: `rt-bench model|ops --peer DIR` against fake llama.cpp
 * builds: shell scripts in DIR/bin that print what llama-bench (JSON and
 * markdown) and test-backend-ops print, so that the parsing and the ratios
 * are checked without llama.cpp.
 *
 *   peer-1  model: llama-bench's JSON figures are printed beside rt's, and
 *           each ratio is rt's figure over llama.cpp's; the arguments passed
 *           name the model, -p, -n, -t and -o json
 *   peer-2  model: llama-bench's markdown table is read as well
 *   peer-3  a DIR without llama-bench: rt's figures, and the reason
 *   peer-4  ops: the plain MUL_MAT row of the same type and shape is the one
 *           compared (not a broadcast one), with rt's GFLOPS over its; the
 *           peer is asked for the weight types, m and n that rt ran alone
 *   peer-5  model at depths (-d 0,16): llama-bench is run with the same -d
 *           and -fa 0,1, and each depth's row carries the peer's figures of
 *           that depth with and without its flash attention, the ratio
 *           against the one of rt's attention (here unfused: fa 0); its
 *           markdown rows "pp8 @ d16" are read as well
 *   peer-6  the peer runs on the device rt runs on: llama-bench with -dev
 *           none (its CPU) beside cpu0, -dev Vulkan0 beside vulkan0
 *           (test-backend-ops' -b is the same name: peer-4 has -b CPU)
 *   peer-7  --rounds 3: llama-bench runs three times, once after each
 *           round of rt's runs, and each figure is the median of the
 *           rounds' (100, 200, 600: 200, neither the first, the last nor
 *           the mean) */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PATH_SIZE 4096

static char dir[PATH_SIZE];

static int make_dir(void **state) {
    (void)state;
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/rt-peer-XXXXXX", tmp != NULL && *tmp ? tmp : "/tmp");
    if (mkdtemp(dir) == NULL) return -1;
    char bin[PATH_SIZE + 8];
    snprintf(bin, sizeof bin, "%s/bin", dir);
    return mkdir(bin, 0755);
}

static int remove_dir(void **state) {
    (void)state;
    char cmd[PATH_SIZE + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* DIR/bin/name, a script that records its arguments in DIR/args and
 * prints body. */
static void fake_program(const char *name, const char *body) {
    char path[PATH_SIZE + 64];
    snprintf(path, sizeof path, "%s/bin/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "#!/bin/sh\necho \"$@\" > '%s/args'\ncat <<'EOF'\n%sEOF\n", dir, body);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(chmod(path, 0755), 0);
}

static char *rt_bench_on(const char *plugins, const char *args) {
    char cmd[3 * PATH_SIZE];
    snprintf(cmd, sizeof cmd, "RT_PLUGINS=%s '%s/bin/rt-bench' %s --peer '%s' 2>/dev/null",
             plugins, tu_build_dir_abs(), args, dir);
    int status = -1;
    char *out = tu_run_capture(cmd, &status);
    if (status != 0) fail_msg("rt-bench %s failed (%d):\n%s", args, status, out);
    return out;
}

static char *rt_bench(const char *args) { return rt_bench_on("cpu", args); }

/* The number after the n-th (0-based) "key": in text. */
static double json_value(const char *text, const char *key, int nth) {
    char quoted[64];
    snprintf(quoted, sizeof quoted, "\"%s\": ", key);
    const char *p = text;
    for (int i = 0; i <= nth && p != NULL; i++) {
        p = strstr(p, quoted);
        if (p != NULL && i < nth) p += strlen(quoted);
    }
    if (p == NULL) fail_msg("no %s #%d in:\n%s", key, nth, text);
    return strtod(p + strlen(quoted), NULL);
}

/* rate_row: which "rate" is the row's (rt-bench ops leads with its FMA
 * peak's "gflops"); row: which of the peer's keys. */
static void expect_ratio(const char *out, int rate_row, int row, double peer, const char *rate,
                         const char *r, const char *peer_key, const char *id) {
    const double rt = json_value(out, rate, rate_row), got = json_value(out, r, row);
    assert_true(fabs(json_value(out, peer_key, row) - peer) < 1e-6 * peer);
    if (fabs(got - rt / peer) > 1e-3 * (rt / peer)) fail_msg("%s: ratio %g, not %g / %g", id, got, rt, peer);
}

/* The fake peer's last command line (DIR/args) contains needle. */
static void expect_args(const char *needle, const char *id) {
    char cmd[PATH_SIZE + 16];
    snprintf(cmd, sizeof cmd, "cat '%s/args'", dir);
    int status = 0;
    char *passed = tu_run_capture(cmd, &status);
    tu_expect_contains(passed, needle, id);
    free(passed);
}

static const char *const json_out =
    "[\n  {\n    \"build_commit\": \"fake\",\n    \"model_filename\": \"m.gguf\",\n"
    "    \"n_prompt\": 8,\n    \"n_gen\": 0,\n    \"avg_ts\": 100.000000,\n"
    "    \"stddev_ts\": 1.5,\n    \"samples_ts\": [ 99, 101 ]\n  },\n"
    "  {\n    \"n_prompt\": 0,\n    \"n_gen\": 4,\n    \"avg_ts\": 50.000000,\n"
    "    \"stddev_ts\": 0.5\n  }\n]\n";

static void test_model_json(void **state) {
    (void)state;
    fake_program("llama-bench", json_out);
    char *out = rt_bench("model -p 8 -n 4 --reps 1 --threads 2 --json");
    expect_ratio(out, 0, 0, 100, "tokens_per_s", "ratio", "peer_tokens_per_s", "peer-1.1");
    expect_ratio(out, 1, 1, 50, "tokens_per_s", "ratio", "peer_tokens_per_s", "peer-1.2");
    free(out);
    expect_args("stories260K.gguf", "peer-1.3");
    expect_args("-p 8 -n 4 -t 2 -o json", "peer-1.4");
    out = rt_bench("model -p 8 -n 4 --reps 1");
    tu_expect_contains(out, "llama.cpp      100.0 tokens/s; rt / llama.cpp", "peer-1.5");
    tu_expect_contains(out, "llama.cpp       50.0 tokens/s", "peer-1.6");
    free(out);
}

static void test_model_markdown(void **state) {
    (void)state;
    fake_program("llama-bench",
                 "| model | size | params | backend | threads | test | t/s |\n"
                 "| ----- | ---: | -----: | ------- | ------: | ---: | --: |\n"
                 "| llama ?B all F32 | 1.0 MiB | 292.35 K | CPU | 2 | pp8 | 200.00 ± 3.00 |\n"
                 "| llama ?B all F32 | 1.0 MiB | 292.35 K | CPU | 2 | tg4 | 80.00 ± 1.00 |\n");
    char *out = rt_bench("model -p 8 -n 4 --reps 1 --json");
    expect_ratio(out, 0, 0, 200, "tokens_per_s", "ratio", "peer_tokens_per_s", "peer-2.1");
    expect_ratio(out, 1, 1, 80, "tokens_per_s", "ratio", "peer_tokens_per_s", "peer-2.2");
    free(out);
}

static void test_no_peer_binary(void **state) {
    (void)state;
    char path[PATH_SIZE + 32];
    snprintf(path, sizeof path, "%s/bin/llama-bench", dir);
    unlink(path);
    char *out = rt_bench("model -p 8 -n 4 --reps 1");
    tu_expect_contains(out, "generation ", "peer-3.1");
    tu_expect_contains(out, "no llama-bench in", "peer-3.2");
    free(out);
}

static void test_ops(void **state) {
    (void)state;
    fake_program("test-backend-ops",
                 "Testing 1 devices\n\nBackend 1/1: CPU\n"
                 "  MUL_MAT(type_a=f32,type_b=f32,m=256,n=1,k=256,bs=[2,1],nr=[1,1],per=[0,1,2,3],"
                 "k_v=0,o=1):      1000 runs -    10.00 us/run -  262.14 kFLOP/run - "
                 "\033[1;34m999.00 GFLOPS\033[0m\n"
                 "  MUL_MAT(type_a=f32,type_b=f32,m=256,n=1,k=256,bs=[1,1],nr=[1,1],per=[0,1,2,3],"
                 "k_v=0,o=1):      1000 runs -    10.00 us/run -  131.07 kFLOP/run - "
                 "\033[1;34m 13.11 GFLOPS\033[0m\n"
                 "  Backend CPU: OK\n");
    char *out = rt_bench("ops --op mul_mat --type f32 --n 1 --k 256 --m 256 --time 0.01 --reps 3 "
                         "--no-openblas --json");
    expect_ratio(out, 1, 0, 13.11, "gflops", "ratio_to_peer", "peer_gflops", "peer-4.1");
    free(out);
    expect_args("perf -o MUL_MAT -b CPU -p type_a=(f32),type_b=f32,m=(256),n=(1),", "peer-4.2");
}

/* One llama-bench JSON result object. */
static void json_test(char *buf, size_t size, int np, int ng, int depth, int fa, double ts, bool last) {
    const size_t n = strlen(buf);
    snprintf(buf + n, size - n, "  {\n    \"flash_attn\": %d,\n    \"n_prompt\": %d,\n    \"n_gen\": %d,\n"
             "    \"n_depth\": %d,\n    \"avg_ts\": %.6f\n  }%s\n", fa, np, ng, depth, ts, last ? "" : ",");
}

static void test_model_depths(void **state) {
    (void)state;
    char body[4096] = "[\n";
    const int depths[2] = {0, 16};
    for (int d = 0; d < 2; d++)
        for (int fa = 0; fa < 2; fa++) {
            /* figures that say which they are: 100 * (1 + d) + 10 * fa (+ 1 for tg) */
            json_test(body, sizeof body, 8, 0, depths[d], fa, 100.0 * (1 + d) + 10 * fa, false);
            json_test(body, sizeof body, 0, 4, depths[d], fa, 100.0 * (1 + d) + 10 * fa + 1, d == 1 && fa == 1);
        }
    strncat(body, "]\n", sizeof body - strlen(body) - 1);
    fake_program("llama-bench", body);
    char *out = rt_bench("model -p 8 -n 4 -d 0,16 --reps 1 --threads 2 -fa off --json");
    expect_args("-fa 0,1 -d 0,16 -p 8 -n 4 -t 2 -o json", "peer-5.1");
    static const double want[4][2] = {{100, 110}, {101, 111}, {200, 210}, {201, 211}};
    for (int row = 0; row < 4; row++) {
        assert_true(json_value(out, "depth", row) == depths[row / 2]);
        assert_true(json_value(out, "peer_fa0_tokens_per_s", row) == want[row][0]);
        assert_true(json_value(out, "peer_fa1_tokens_per_s", row) == want[row][1]);
        expect_ratio(out, row, row, want[row][0], "tokens_per_s", "ratio", "peer_tokens_per_s", "peer-5.2");
    }
    free(out);
    fake_program("llama-bench",
                 "| model | size | params | backend | threads | test | t/s |\n"
                 "| ----- | ---: | -----: | ------- | ------: | ---: | --: |\n"
                 "| llama | 1.0 MiB | 292.35 K | CPU | 2 | pp8 | 300.00 ± 3.00 |\n"
                 "| llama | 1.0 MiB | 292.35 K | CPU | 2 | pp8 @ d16 | 250.00 ± 3.00 |\n"
                 "| llama | 1.0 MiB | 292.35 K | CPU | 2 | tg4 @ d16 | 70.00 ± 1.00 |\n");
    out = rt_bench("model -p 8 -n 4 -d 0,16 --reps 1 --json");
    expect_ratio(out, 0, 0, 300, "tokens_per_s", "ratio", "peer_tokens_per_s", "peer-5.3");
    expect_ratio(out, 2, 2, 250, "tokens_per_s", "ratio", "peer_tokens_per_s", "peer-5.4");
    expect_ratio(out, 3, 3, 70, "tokens_per_s", "ratio", "peer_tokens_per_s", "peer-5.5");
    free(out);
}

static void test_peer_device(void **state) {
    (void)state;
    fake_program("llama-bench", json_out);
    free(rt_bench("model -p 8 -n 4 --reps 1 --threads 2 --json"));
    expect_args("-dev none -r 1 -p 8", "peer-6.1");
    rt_registry_t *reg = tu_registry_vulkan("peer-6.2");
    rt_registry_destroy(reg);
    free(rt_bench_on("cpu,vulkan", "model --device vulkan0 -p 8 -n 4 --reps 1 --json"));
    expect_args("-dev Vulkan0 -r 1 -p 8", "peer-6.3");
}

/* A llama-bench whose prompt figure is 100, 200, then 600 in its calls
 * (counted in DIR/calls), generation 50. */
static void fake_rounds(void) {
    char path[PATH_SIZE + 64];
    snprintf(path, sizeof path, "%s/bin/llama-bench", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "#!/bin/sh\necho x >> '%s/calls'\nn=$(wc -l < '%s/calls')\n"
            "case $n in 1) ts=100;; 2) ts=200;; *) ts=600;; esac\n"
            "echo '[ {\"n_prompt\": 8, \"n_gen\": 0, \"avg_ts\": '$ts'},'\n"
            "echo '  {\"n_prompt\": 0, \"n_gen\": 4, \"avg_ts\": 50} ]'\n", dir, dir);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(chmod(path, 0755), 0);
}

static void test_rounds(void **state) {
    (void)state;
    fake_rounds();
    char *out = rt_bench("model -p 8 -n 4 --reps 1 --rounds 3 --json");
    expect_ratio(out, 0, 0, 200, "tokens_per_s", "ratio", "peer_tokens_per_s", "peer-7.1");
    expect_ratio(out, 1, 1, 50, "tokens_per_s", "ratio", "peer_tokens_per_s", "peer-7.2");
    free(out);
    char cmd[PATH_SIZE + 32];
    snprintf(cmd, sizeof cmd, "wc -l < '%s/calls'", dir);
    int status = 0;
    char *calls = tu_run_capture(cmd, &status);
    if (atoi(calls) != 3) fail_msg("peer-7.3: llama-bench ran %s times, not 3", calls);
    free(calls);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_model_json),
        cmocka_unit_test(test_model_markdown),
        cmocka_unit_test(test_no_peer_binary),
        cmocka_unit_test(test_ops),
        cmocka_unit_test(test_model_depths),
        cmocka_unit_test(test_peer_device),
        cmocka_unit_test(test_rounds),
    };
    return cmocka_run_group_tests_name("bench-peer", tests, make_dir, remove_dir);
}
