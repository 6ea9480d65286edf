/* SPDX-License-Identifier: MIT */
/* testutil.h: what the cmocka tests share. A seeded random generator (tests
 * never run on zeros), the normalised error used for every numerical check,
 * a way to assert that a graph-API misuse aborts with a message, and the
 * registry of the plugins built in this tree. */
#ifndef RT_TESTUTIL_H
#define RT_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../abi/rt.h"
#include "../abi/rt_plugin.h"
#include "plugins/mockgpu/mockgpu.h"

/* xorshift64*: the same numbers on every machine for a given seed. */
void tu_seed(uint64_t seed);
uint64_t tu_next(void);
float tu_uniform(float lo, float hi);
void tu_fill(float *x, size_t n, float lo, float hi);

/* sqrt(sum (got-ref)^2) / sqrt(sum ref^2): the normalised error ggml's
 * test-backend-ops uses. 0 when equal; ref all zero gives the absolute norm. */
double tu_nmse_error(const double *ref, const float *got, size_t n);
/* The same against an F32 reference (two runs' logits). */
double tu_nmse_error_f32(const float *ref, const float *got, size_t n);
/* K floats (whole 32-blocks) rounded through Q8_0 (quantised and back), as
 * the integer dot products of quantised mul_mat see an activation row. */
void tu_q8_round(const float *x, int64_t K, double *out);
double tu_max_abs_error(const double *ref, const float *got, size_t n);
/* The index of x's largest element (the first of equals): a greedy choice. */
int32_t tu_argmax(const float *x, int32_t n);

/* The build directory (RT_TEST_BUILD_DIR, set by tests/run.sh; else "build"). */
const char *tu_build_dir(void);

/* The build directory as an absolute path (for RT_PLUGIN_PATH, which
 * takes absolute directories only). */
const char *tu_build_dir_abs(void);

/* Whether configure built plugin `name` (lib/rt-plugins/rt-plugin-NAME.so):
 * only its absence excuses a missing device. */
bool tu_plugin_built(const char *name);

/* A registry of `plugins` (RT_PLUGINS syntax) from the build, with n_mock
 * mock GPUs of 1 GiB when mockgpu is among them; fails the test when it
 * cannot be made. */
rt_registry_t *tu_registry_open(const char *plugins, int n_mock);
/* tu_registry_open("cpu,vulkan", 0) with vulkan0 in it. Skips the test
 * (id names it in the message) when the Vulkan plugin was not built; fails
 * it when the plugin was built but no vulkan0 loaded. */
rt_registry_t *tu_registry_vulkan(const char *id);

/* models/file, the repository's bundled models (RT_TEST_MODELS_DIR
 * overrides the directory),
 * written into buf, which is returned. */
char *tu_model_path(const char *file, char *buf, size_t size);

/* tests/arch/models/random-NAME.gguf, the random-weight model of an
 * architecture (tests/arch/make_models.py), written into buf. */
char *tu_arch_model_path(const char *name, char *buf, size_t size);

/* A failing check: prints the message and counts it in tu_n_failed, so a
 * test can list every failing case before it fails (reset it per test). */
extern int tu_n_failed;
void tu_report(const char *fmt, ...) RT_PRINTF(1, 2);

/* Runs a shell command line; returns its output (stdout, and stderr where
 * the command redirects it), malloc'd, and its pclose status. */
char *tu_run_capture(const char *cmd, int *out_status);

/* Runs build/bin/<tool> with the arguments fmt makes, on the CPU plugin
 * alone (RT_PLUGINS=cpu), stderr folded into the output; returns the
 * output (malloc'd) and its exit code in *out_code (-1: killed). */
char *tu_tool(int *out_code, const char *tool, const char *fmt, ...) RT_PRINTF(3, 4);

/* Skips the calling test, saying which file is missing, unless path exists. */
void tu_need_file(const char *path);

/* An rt_allocator_t realloc over malloc, for host tables a test builds. */
void *tu_realloc(void *user_data, void *ptr, size_t old_size, size_t new_size);
/* A fresh directory /tmp/<prefix>-XXXXXX into dir (size bytes); 0 on
 * success, -1 otherwise (cmocka setup's convention). tu_tmpdir_remove
 * removes it with what it holds. */
int tu_tmpdir_make(char *dir, size_t size, const char *prefix);
int tu_tmpdir_remove(const char *dir);
/* The real GGUF files .ci/deps installs through pip, by
 * tests/pip_models.py: the paths of those present, each after a space,
 * written into buf (empty when none is), which is returned. */
char *tu_pip_models(char *buf, size_t size);

/* Line `index` of tests/pip_models.py (0: SmolLM2, 1: Gemma 3) into buf;
 * true when that file is installed and readable (else buf is ""). */
bool tu_pip_model(int index, char *buf, size_t size);

/* The mockgpu plugin's counters, reached through the loaded object's own
 * rt_plugin_query (the registry must have loaded it). */
const mockgpu_ext_counters_t *tu_mock_counters(void);

/* One registry per test process over the plugins next to the core library
 * (build/lib/rt-plugins). Destroyed at exit. */
rt_registry_t *tu_registry(void);
/* The CPU plugin's device; fails the test when it is missing. */
rt_device_t *tu_cpu_device(void);

/* The thread counts the tests run the CPU device at: its default (0), 1
 * and 3. tu_queues_create makes one queue of dev for each, for a group
 * setup (-1 with the reason printed when one fails); tu_queues_destroy is
 * its teardown (NULL-safe). */
#define TU_N_QUEUES 3
extern const int tu_queue_threads[TU_N_QUEUES];
int tu_queues_create(rt_device_t *dev, rt_queue_t *out[TU_N_QUEUES]);
void tu_queues_destroy(rt_queue_t *q[TU_N_QUEUES]);

/* Runs stmt with the abort hook redirected; passes when it aborted and the
 * message contains `needle`, fails otherwise. */
extern jmp_buf *tu_abort_target;
extern char tu_abort_message[2048];
void tu_abort_hook(const char *message, void *user_data);
#define TU_EXPECT_ABORT(stmt, needle)                                          \
    do {                                                                       \
        jmp_buf tu_jb_;                                                        \
        tu_abort_message[0] = 0;                                               \
        tu_abort_target = &tu_jb_;                                             \
        rt_abort_set(tu_abort_hook, NULL);                                     \
        if (setjmp(tu_jb_) == 0) {                                             \
            stmt;                                                              \
            rt_abort_set(NULL, NULL);                                          \
            tu_abort_target = NULL;                                            \
            fail_msg("expected an abort from: %s", #stmt);                     \
        }                                                                      \
        rt_abort_set(NULL, NULL);                                              \
        tu_abort_target = NULL;                                                \
        if (strstr(tu_abort_message, (needle)) == NULL)                        \
            fail_msg("abort message \"%s\" lacks \"%s\"", tu_abort_message, (needle)); \
    } while (0)

/* Fails the test (check names it) unless haystack contains needle; the
 * message shows the haystack. */
void tu_expect_contains(const char *haystack, const char *needle, const char *check);

/* A no_alloc=false context of `mb` MiB; freed by the caller. */
rt_context_t *tu_context(size_t mb, bool no_alloc);

#endif /* RT_TESTUTIL_H */
