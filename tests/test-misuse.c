/* SPDX-License-Identifier: MIT */
/* test-misuse.c: every public function called with NULL handles, NULL out
 * pointers and indices out of range (rt_base.h: RT_ERR_MISUSE). The calls
 * come from the headers themselves (tests/abi/gen_misuse.py writes one per
 * RT_API declaration at build time), so a new function is called the day
 * it is declared. A function that returns a status must return
 * RT_ERR_MISUSE; one that returns a handle must return NULL (or, for the
 * names and messages that are never NULL, a string); a graph builder,
 * whose contract is to abort through the hook on misuse, must reach the
 * hook with a message; none may crash. misuse-2 does the same for indices
 * out of range on live objects. Runs under ASan in CI. */
#include "testutil.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef enum { RETURNS_STATUS, RETURNS_POINTER, RETURNS_OTHER, BUILDS } misuse_kind_t;

typedef struct misuse_result {
    rt_status_t status;
    const void *pointer;
} misuse_result_t;

typedef struct misuse_call {
    const char *name;
    misuse_kind_t kind;
    void (*call)(misuse_result_t *r);
} misuse_call_t;

#include "misuse_calls.inc"

#define N_CALLS (sizeof misuse_calls / sizeof misuse_calls[0])

static jmp_buf on_abort;
static char abort_message[512];

static void catch_abort(const char *message, void *user_data) {
    (void)user_data;
    snprintf(abort_message, sizeof abort_message, "%s", message != NULL ? message : "");
    longjmp(on_abort, 1);
}

/* Names and messages: never NULL, by their contracts in rt.h. */
static bool never_null(const char *name) {
    static const char *const names[] = {
        "rt_version_string", "rt_status_name", "rt_last_error", "rt_type_name", "rt_op_name",
        "rt_cpu_placement_name", "rt_device_name", "rt_device_plugin_name",
        "rt_registry_search_path", "rt_buffer_type_name", "rt_get_name",
        "rt_tensor_describe", "rt_gguf_type_name", "rt_placement_mode_name", NULL};
    for (const char *const *n = names; *n != NULL; n++)
        if (strcmp(*n, name) == 0) return true;
    return false;
}

/* Graph builders (they take a context, or build a graph) abort through
 * the hook on misuse, by rt.h's contract; a NULL context or tensor is
 * misuse. */
static bool is_builder(const misuse_call_t *c) { return c->kind == BUILDS; }

static int failures;

static void verdict(const misuse_call_t *c, bool aborted, const misuse_result_t *r) {
    const char *bad = NULL;
    if (aborted && abort_message[0] == '\0') bad = "reached the abort hook with no message";
    else if (c->kind == BUILDS && !aborted) bad = "returned instead of reaching the abort hook";
    else if (c->kind == RETURNS_STATUS && !aborted && r->status != RT_ERR_MISUSE)
        bad = "did not return RT_ERR_MISUSE";
    else if (c->kind == RETURNS_STATUS && aborted) bad = "aborted instead of returning a status";
    else if (c->kind == RETURNS_POINTER && !aborted && r->pointer != NULL && !never_null(c->name))
        bad = "returned a non-NULL pointer";
    if (bad == NULL) return;
    failures++;
    fprintf(stderr, "misuse-1: %s %s (status %s, abort \"%s\")\n", c->name, bad,
            rt_status_name(r->status), aborted ? abort_message : "");
}

/* Runs one call; true when it reached the abort hook. */
static bool run_one(const misuse_call_t *c, misuse_result_t *out) {
    static misuse_result_t r; /* static: the longjmp leaves it as the call wrote it */
    r = (misuse_result_t){.status = RT_OK, .pointer = NULL};
    abort_message[0] = '\0';
    rt_abort_set(catch_abort, NULL);
    if (getenv("RT_MISUSE_TRACE") != NULL) fprintf(stderr, "calling %s\n", c->name);
    const bool aborted = setjmp(on_abort) != 0;
    if (!aborted) c->call(&r);
    rt_abort_set(catch_abort, NULL); /* rt_abort_set itself is among the calls */
    rt_log_set(NULL, NULL);
    *out = r;
    return aborted;
}

/* A crash must not hide the calls after it: each runs in a child first,
 * and only one that came back is run again here, to be judged. */
static bool crashes(const misuse_call_t *c) {
    fflush(NULL);
    const pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        misuse_result_t r;
        run_one(c, &r);
        _exit(0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return false;
    fprintf(stderr, "misuse-1: %s crashed (%s %d)\n", c->name,
            WIFSIGNALED(status) ? "signal" : "exit status",
            WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    return true;
}

static void test_every_function_with_nulls(void **state) {
    (void)state;
    int n_aborted = 0;
    for (size_t i = 0; i < N_CALLS; i++) {
        const misuse_call_t *c = &misuse_calls[i];
        if (crashes(c)) {
            failures++;
            continue;
        }
        misuse_result_t r;
        const bool aborted = run_one(c, &r);
        if (aborted) n_aborted++;
        if (aborted && !is_builder(c)) {
            failures++;
            fprintf(stderr, "misuse-1: %s aborted: %s\n", c->name, abort_message);
            continue;
        }
        verdict(c, aborted, &r);
    }
    tu_report("misuse-1: %zu public functions called with NULLs, %d reached the abort hook",
              N_CALLS, n_aborted);
    assert_true(N_CALLS > 200); /* the generator found the headers' functions */
    assert_int_equal(failures, 0);
    rt_abort_set(NULL, NULL);
}

//===--- misuse-2: indices out of range on live objects ---===//

static void test_indices_out_of_range(void **state) {
    (void)state;
    rt_registry_t *reg = NULL;
    assert_int_equal(rt_registry_create(NULL, &reg), RT_OK);
    const int32_t n_dev = rt_registry_device_count(reg), n_plug = rt_registry_plugin_count(reg);
    assert_null(rt_registry_device(reg, -1));                               /* misuse-2.1 */
    assert_null(rt_registry_device(reg, n_dev));
    assert_null(rt_registry_plugin(reg, -1));
    assert_null(rt_registry_plugin(reg, n_plug));
    rt_device_t *cpu = rt_registry_device_by_name(reg, "cpu0");
    assert_non_null(cpu);
    assert_null(rt_device_buffer_type(cpu, -1));                            /* misuse-2.2 */
    assert_null(rt_device_buffer_type(cpu, rt_device_buffer_type_count(cpu)));

    rt_context_t *ctx = tu_context(1, true);
    rt_tensor_t *a = rt_new_tensor_1d(ctx, RT_TYPE_F32, 8);
    rt_graph_t *g = rt_graph_create(ctx, 8);
    rt_graph_build_forward_expand(g, rt_add(ctx, a, a));
    assert_null(rt_graph_node(g, 1));                                       /* misuse-2.3 */
    assert_null(rt_graph_node(g, -2));
    assert_null(rt_graph_leaf(g, 1));
    rt_gallocr_t *ga = NULL;
    assert_int_equal(rt_gallocr_create(rt_device_buffer_type(cpu, 0), &ga), RT_OK);
    assert_int_equal(rt_gallocr_reserve(ga, g), RT_OK);
    rt_gallocr_plan_entry_t e = {.struct_size = sizeof e};
    assert_int_equal(rt_gallocr_plan_get(ga, -1, &e), RT_ERR_MISUSE);     /* misuse-2.4 */
    assert_int_equal(rt_gallocr_plan_get(ga, rt_gallocr_plan_count(ga), &e), RT_ERR_MISUSE);
    rt_gallocr_destroy(ga);

    rt_gguf_writer_t *w = NULL;
    assert_int_equal(rt_gguf_writer_create(NULL, &w), RT_OK);
    assert_int_equal(rt_gguf_writer_set_array(w, "names", RT_GGUF_TYPE_STRING,
                                              (const char *[]){"a"}, 1), RT_OK);
    assert_int_equal(rt_gguf_writer_add_tensor(w, "t", RT_TYPE_F32, 1, (int64_t[]){8}, NULL),
                     RT_OK);
    static uint8_t file[4096];
    assert_int_equal(rt_gguf_writer_write_mem(w, file, sizeof file), RT_OK);
    rt_gguf_writer_destroy(w);
    rt_gguf_t *f = NULL;
    assert_int_equal(rt_gguf_parse(file, sizeof file, "misuse", NULL, &f), RT_OK);
    const int64_t n_kv = rt_gguf_n_kv(f);
    assert_null(rt_gguf_kv_key(f, -1));                                     /* misuse-2.5 */
    assert_null(rt_gguf_kv_key(f, n_kv));
    assert_int_equal(rt_gguf_kv_array_len(f, n_kv), 0);
    const char *s = NULL;
    assert_int_equal(rt_gguf_get_array_str(f, "names", 1, &s), RT_ERR_MISUSE);
    assert_null(s);
    rt_gguf_tensor_info_t ti = {.struct_size = sizeof ti};
    assert_int_equal(rt_gguf_get_tensor_info(f, 1, &ti), RT_ERR_MISUSE);   /* misuse-2.6 */
    assert_int_equal(rt_gguf_get_tensor_info(f, -1, &ti), RT_ERR_MISUSE);
    assert_null(rt_gguf_tensor_data(f, 1));
    rt_gguf_destroy(f);

    uint64_t bytes[2] = {100, 100};
    const uint64_t mem[2] = {1000, 1000};
    const rt_placement_params_t pp = {.struct_size = sizeof pp, .mode = RT_PLACEMENT_AUTO,
                                      .n_layers = 2, .layer_bytes = bytes, .n_devices = 2,
                                      .memory_free = mem};
    rt_placement_t *pl = NULL;
    assert_int_equal(rt_placement_create(&pp, &pl), RT_OK);
    assert_int_equal(rt_placement_layer_device(pl, 2), -1);                /* misuse-2.7 */
    assert_int_equal(rt_placement_layer_device(pl, -1), -1);
    assert_int_equal(rt_placement_device_layers(pl, 2), 0);
    assert_int_equal(rt_placement_device_bytes(pl, -1), 0);
    assert_int_equal(rt_placement_replan(pl, 5, 10), RT_ERR_MISUSE);
    rt_placement_destroy(pl);
    rt_context_destroy(ctx);
    rt_registry_destroy(reg);
}

//===--- misuse-3: the deeper checks of armored builds ---===//

/* A graph whose tensors live in a freed buffer: RT_ERR_MISUSE where the
 * armor is on (debug and sanitizer builds, so CI), not a use after free. */
static void test_freed_buffer(void **state) {
    (void)state;
#ifndef RT_API_ARMOR
    skip(); /* a release build: the check costs a walk of the buffer list per tensor */
#else
    rt_registry_t *reg = NULL;
    assert_int_equal(rt_registry_create(NULL, &reg), RT_OK);
    rt_device_t *cpu = rt_registry_device_by_name(reg, "cpu0");
    rt_context_t *ctx = tu_context(1, true);
    rt_tensor_t *a = rt_new_tensor_1d(ctx, RT_TYPE_F32, 8);
    rt_graph_t *g = rt_graph_create(ctx, 8);
    rt_graph_build_forward_expand(g, rt_add(ctx, a, a));
    rt_buffer_t *buf = NULL;
    assert_int_equal(rt_alloc_ctx_tensors(ctx, rt_device_buffer_type(cpu, 0), &buf), RT_OK);
    rt_queue_t *q = NULL;
    assert_int_equal(rt_queue_create(cpu, NULL, &q), RT_OK);
    assert_int_equal(rt_queue_compute(q, g), RT_OK);
    rt_buffer_free(buf);
    assert_int_equal(rt_queue_compute(q, g), RT_ERR_MISUSE);                /* misuse-3.1 */
    assert_non_null(strstr(rt_last_error(), "lives in a buffer that was freed"));
    rt_queue_destroy(q);
    rt_context_destroy(ctx);
    rt_registry_destroy(reg);
#endif
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_function_with_nulls),
        cmocka_unit_test(test_indices_out_of_range),
        cmocka_unit_test(test_freed_buffer),
    };
    return cmocka_run_group_tests_name("misuse", tests, NULL, NULL);
}
