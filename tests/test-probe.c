/* SPDX-License-Identifier: MIT */
/* test-probe.c: plugins that kill their process (tests/plugins/crash.c):
 * one faults in its constructor, one aborts, one faults, one hangs and one
 * exits 0 in rt_plugin_query, one hangs and one exits in create.
 *
 *   probe-1  rt-devices (it probes by default) names each with its file,
 *            the signal, exit status or time-out, and the last step the
 *            runtime logged, while the CPU plugin beside them loads and
 *            rt-devices succeeds
 *   probe-2  rt-devices --no-probe: the first of them takes it down, the
 *            case the probe exists for
 *   probe-3  an application's own registry with RT_PLUGIN_PROBE=1 refuses
 *            them all, with the same reasons, and lives on with cpu0 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CMD_SIZE 8192
#define CRASHERS "segv_ctor,abort_query,segv_query,hang_query,exit_query,hang_create,exit_create"

/* AddressSanitizer catches the fault itself and ends the process its own
 * way (a report, then abort or exit): only the signal's number differs. */
#if defined(__SANITIZE_ADDRESS__)
#  define SEGV_SAYS "refused: it"
#else
#  define SEGV_SAYS "signal 11"
#endif

static char *run_devices(const char *flags, int *status) {
    char cmd[CMD_SIZE];
    const char *b = tu_build_dir_abs();
    snprintf(cmd, sizeof cmd,
             "RT_PLUGIN_PATH=%s/tests/plugins/crash "
             "RT_PLUGINS=cpu," CRASHERS " "
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

/* Each crashing plugin's reason, as rt-devices prints it (needles) or the
 * registry records it. */
static const struct {
    const char *file, *needles[3];
} crashes[] = {
    {"rt-plugin-segv_ctor.so: refused", {SEGV_SAYS, "opening (its constructors run now)", NULL}},
    {"rt-plugin-abort_query.so: refused", {"signal 6", "calling rt_plugin_query", NULL}},
    {"rt-plugin-segv_query.so: refused", {SEGV_SAYS, "calling rt_plugin_query", NULL}},
    {"rt-plugin-hang_query.so: refused", {"did not finish within 2 s", "calling rt_plugin_query", NULL}},
    {"rt-plugin-exit_query.so: refused", {"exit status 0", "calling rt_plugin_query", NULL}},
    {"rt-plugin-hang_create.so: refused", {"did not finish within 2 s", "calling create", NULL}},
    {"rt-plugin-exit_create.so: refused", {"exit status 3", "calling create", NULL}},
};

static void test_probe_names_each_crash(void **state) {
    (void)state;
    int status = -1;
    char *out = run_devices("--probe-timeout=2", &status);
    assert_int_equal(status, 0);                                            /* probe-1.1 */
    if (strstr(out, "] cpu0 ") == NULL) fail_msg("probe-1.2: cpu0 missing:\n%s", out);
    for (size_t i = 0; i < sizeof crashes / sizeof crashes[0]; i++)
        expect_line(out, crashes[i].file, crashes[i].needles, "probe-1.3");
    free(out);
}

static void test_without_probe_a_crash_is_fatal(void **state) {
    (void)state;
    int status = 0;
    char *out = run_devices("--no-probe", &status);
    assert_int_not_equal(status, 0); /* the constructor's fault kills rt-devices, probe-2.1 */
    free(out);
}

static void test_registry_probes(void **state) {
    (void)state;
    char dir[1024], all[2048] = "";
    snprintf(dir, sizeof dir, "%s/tests/plugins/crash", tu_build_dir_abs());
    setenv("RT_PLUGIN_PATH", dir, 1);
    setenv("RT_PLUGINS", "cpu," CRASHERS, 1);
    setenv("RT_PLUGIN_PROBE", "1", 1);
    setenv("RT_PLUGIN_PROBE_TIMEOUT", "2", 1);
    rt_registry_t *reg = NULL;
    assert_int_equal(rt_registry_create(NULL, &reg), RT_OK);
    assert_non_null(rt_registry_device_by_name(reg, "cpu0"));
    for (int32_t i = 0; i < rt_registry_plugin_count(reg); i++) {
        const rt_plugin_info_t *p = rt_registry_plugin(reg, i);
        strncat(all, p->message, sizeof all - strlen(all) - 2);
        strcat(all, "\n");
    }
    for (size_t i = 0; i < sizeof crashes / sizeof crashes[0]; i++)
        expect_line(all, crashes[i].file, crashes[i].needles, "probe-3");
    rt_registry_destroy(reg);
    unsetenv("RT_PLUGIN_PROBE");
    unsetenv("RT_PLUGIN_PROBE_TIMEOUT");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_probe_names_each_crash),
        cmocka_unit_test(test_without_probe_a_crash_is_fatal),
        cmocka_unit_test(test_registry_probes),
    };
    return cmocka_run_group_tests_name("probe", tests, NULL, NULL);
}
