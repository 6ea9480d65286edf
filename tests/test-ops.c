/* SPDX-License-Identifier: MIT */
/* test-ops.c: the op conformance suite on the CPU device. It runs every
 * case of the conformance library (tests/conform/: one table of cases,
 * layouts and double-precision references, which rt-test-ops runs on every
 * other device) through the public API alone, at the strict tolerances the
 * table states, on three queues: the default thread count, 1 and 3
 * threads. One cmocka test per op; each reports all its failing cases
 * (check id ops-<test>.<case>, the op, the case, the shapes, the tolerance
 * and the thread count) before it fails. A case the CPU plugin does not
 * support fails here: the CPU implements every op. (The GPT-2 attention
 * block, end to end, is tests/test-attention.c.) */
#include "conform/conform.h"
#include "testutil.h"

#include <stdio.h>

static rt_queue_t *queues[TU_N_QUEUES];

static void report(void *user, const char *msg) {
    (void)user;
    tu_report("%s", msg);
}

static void test_op_cases(void **state) {
    const cf_op_test_t *t = *state;
    const int test_no = (int)(t - cf_op_tests) + 1;
    const cf_target_t target = {.dev = tu_cpu_device(), .queues = queues, .queue_threads = tu_queue_threads,
                                .n_queues = TU_N_QUEUES, .strict = true, .report = report};
    int n_run = 0;
    tu_n_failed = 0;
    for (size_t k = 0; k < cf_n_cases; k++) {
        if (!cf_case_applies(&cf_cases[k], t)) continue;
        char id[32];
        snprintf(id, sizeof id, "ops-%d.%d", test_no, ++n_run);
        const uint64_t seed = 0x5eed0000u + (uint64_t)test_no * 1000 + (uint64_t)n_run;
        if (cf_run_case(&target, t->op, &cf_cases[k], id, seed, NULL) == CF_UNSUPPORTED)
            tu_report("%s %s [%s]: supports_op is false for the result", id, t->name, cf_cases[k].name);
    }
    assert_true(n_run > 0);
    if (tu_n_failed > 0) fail_msg("%s: %d failing check(s) in %d case(s), listed above", t->name, tu_n_failed, n_run);
}

static int group_setup(void **state) {
    (void)state;
    rt_registry_t *reg = tu_registry();
    return tu_queues_create(reg != NULL ? rt_registry_device_by_name(reg, "cpu0") : NULL, queues);
}

static int group_teardown(void **state) {
    (void)state;
    tu_queues_destroy(queues);
    return 0;
}

int main(void) {
    static struct CMUnitTest tests[64];
    for (size_t k = 0; k < cf_n_op_tests && k < 64; k++)
        tests[k] = (struct CMUnitTest){.name = cf_op_tests[k].name, .test_func = test_op_cases,
                                       .initial_state = (void *)&cf_op_tests[k]};
    return _cmocka_run_group_tests("test-ops", tests, cf_n_op_tests, group_setup, group_teardown);
}
