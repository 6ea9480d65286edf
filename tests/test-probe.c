/* SPDX-License-Identifier: MIT */
/* test-probe.c: rt-devices --probe with plugins that kill their process
 * (tests/plugins/crash.c): one faults in its constructor, one aborts in
 * rt_plugin_query, one hangs in create, one exits in create. Each must be
 * named with its file, the signal, exit status or time-out, and the last
 * step the runtime logged, while the CPU plugin beside them loads and
 * rt-devices succeeds. Without --probe the first of them takes rt-devices
 * down, which is the case the option exists for. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CMD_SIZE 8192

/* AddressSanitizer catches the fault itself and ends the process its own
 * way (a report, then abort or exit): only the signal's number differs. */
#if defined(__SANITIZE_ADDRESS__)
#  define SEGV_SAYS "refused by the application"
#else
#  define SEGV_SAYS "signal 11"
#endif

static char *run_devices(const char *flags, int *status) {
    char cmd[CMD_SIZE];
    const char *b = tu_build_dir_abs();
    snprintf(cmd, sizeof cmd,
             "RT_PLUGIN_PATH=%s/tests/plugins/crash "
             "RT_PLUGINS=cpu,segv_ctor,abort_query,hang_create,exit_create "
             "%s/bin/rt-devices %s 2>&1",
             b, b, flags);
    return tu_run_capture(cmd, status);
}

/* The line of out that names file, which must hold every needle. */
static void expect_line(const char *out, const char *file, const char *const *needles,
                        const char *check) {
    const char *at = strstr(out, file);
    if (at == NULL) fail_msg("%s: no line names %s in:\n%s", check, file, out);
    const char *start = at;
    while (start > out && start[-1] != '\n') start--;
    const char *end = strchr(at, '\n');
    const size_t n = end != NULL ? (size_t)(end - start) : strlen(start);
    char line[2048];
    snprintf(line, sizeof line, "%.*s", (int)n, start);
    for (const char *const *p = needles; *p != NULL; p++)
        if (strstr(line, *p) == NULL) fail_msg("%s: \"%s\" lacks \"%s\"", check, line, *p);
}

static void test_probe_names_each_crash(void **state) {
    (void)state;
    int status = -1;
    char *out = run_devices("--probe --probe-timeout=2", &status);
    assert_int_equal(status, 0);                                            /* probe-1.1 */
    if (strstr(out, "] cpu0 ") == NULL) fail_msg("probe-1.2: cpu0 missing:\n%s", out);
    expect_line(out, "rt-plugin-segv_ctor.so: refused",
                (const char *const[]){SEGV_SAYS, "opening (its constructors run now)", NULL},
                "probe-1.3");
    expect_line(out, "rt-plugin-abort_query.so: refused",
                (const char *const[]){"signal 6", "calling rt_plugin_query", NULL}, "probe-1.4");
    expect_line(out, "rt-plugin-hang_create.so: refused",
                (const char *const[]){"did not finish within 2 s", "calling create", NULL},
                "probe-1.5");
    expect_line(out, "rt-plugin-exit_create.so: refused",
                (const char *const[]){"exit status 3", "calling create", NULL}, "probe-1.6");
    free(out);
}

static void test_without_probe_a_crash_is_fatal(void **state) {
    (void)state;
    int status = 0;
    char *out = run_devices("", &status);
    assert_int_not_equal(status, 0); /* the constructor's fault kills rt-devices, probe-2.1 */
    free(out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_probe_names_each_crash),
        cmocka_unit_test(test_without_probe_a_crash_is_fatal),
    };
    return cmocka_run_group_tests_name("probe", tests, NULL, NULL);
}
