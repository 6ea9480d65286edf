/* SPDX-License-Identifier: MIT */
/* test-security.c: what the loader refuses to trust. A setgid process
 * ignores RT_PLUGIN_PATH (a setgid copy of tests/secure-probe.c, checked to
 * really run in secure-execution mode, against the same probe run
 * normally); a plugin file, or the directory it is in, that a user other
 * than root and the current one can change is refused with a warning and a
 * message naming it and the mode, whether it is loaded by name or found on
 * the search path. The relative-path rules are test-loader's (loader-5).
 *
 *   security-1  setgid: RT_PLUGIN_PATH ignored (needs root or a second group)
 *   security-2  world-writable file or directory: refused; a sticky directory
 *               holding our own file loads (nobody else can rename it)
 *   security-3  owned by another user: refused, group-writable or not (a file
 *               only its foreign owner can write too); ours group-writable
 *               loads (the foreign owner needs root)
 *   security-4  symlinks: the directory as named and as resolved
 *   security-5  found by a scan: listed with the reason, others load
 *   security-6  every directory up to "/": a 0755 plugin directory inside a
 *               0777 parent is refused naming the parent; inside a sticky
 *               1777 parent it loads while ours, not once another user's
 *   security-7  checked before dlopen: a truncated plugin, a FIFO and a text
 *               file named like plugins fail naming the file, no SIGBUS or hang
 *   security-8  (root) another user's symlink on the way: refused naming it,
 *               in a sticky directory too; and the race: while that user
 *               swaps the symlink between a good and an evil plugin's
 *               directory, 300 loads never run the evil one's constructor
 *
 * Runs from the repository root; CI runs it as root. */
#include "testutil.h"

#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define PATH_SIZE 4096

//===--- helpers ---===//

static void path_join(char *buf, const char *dir, const char *name) {
    const int n = snprintf(buf, PATH_SIZE, "%s/%s", dir, name);
    if (n < 0 || n >= PATH_SIZE) fail_msg("path %s/%s is too long", dir, name);
}

/* An absolute, fresh directory under the build directory (not /tmp: a
 * nosuid /tmp would void the setgid test), mode 0755. */
static void temp_dir(char *buf) {
    char build[PATH_SIZE];
    assert_non_null(realpath(tu_build_dir(), build));
    path_join(buf, build, "tests/security-XXXXXX");
    assert_non_null(mkdtemp(buf));
    assert_int_equal(chmod(buf, 0755), 0);
}

static void remove_tree(const char *dir) {
    char cmd[PATH_SIZE + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* Copies build/<rel> to dir/<name> with mode. */
static void install(const char *rel, const char *dir, const char *name, mode_t mode,
                    char *out_path) {
    char from[PATH_SIZE], buf[1 << 16];
    path_join(from, tu_build_dir(), rel);
    path_join(out_path, dir, name);
    FILE *in = fopen(from, "rb"), *out = fopen(out_path, "wb");
    assert_non_null(in);
    assert_non_null(out);
    for (size_t n; (n = fread(buf, 1, sizeof buf, in)) > 0;) assert_int_equal(fwrite(buf, 1, n, out), n);
    fclose(in);
    assert_int_equal(fclose(out), 0);
    assert_int_equal(chmod(out_path, mode), 0);
}

/* Warnings the runtime logs. */
static char warnings[16384];

static void keep_warnings(rt_log_level_t level, const char *message, void *user_data) {
    (void)user_data;
    const size_t used = strlen(warnings);
    if (level < RT_LOG_WARN || used + 2 >= sizeof warnings) return; /* full: the first ones are kept */
    strncat(warnings, message, sizeof warnings - used - 2);
    strcat(warnings, "\n");
}

static int setup(void **state) {
    (void)state;
    warnings[0] = '\0';
    rt_log_set(keep_warnings, NULL);
    unsetenv("RT_PLUGIN_PATH");
    unsetenv("RT_PLUGINS");
    return 0;
}

static int teardown(void **state) {
    (void)state;
    rt_log_set(NULL, NULL);
    return 0;
}

/* Loads path into a fresh registry; returns its status and leaves the
 * record's message in msg. */
static rt_status_t load(const char *path, char *msg, size_t size) {
    rt_registry_options_t opt = {.struct_size = sizeof opt, .no_scan = true};
    rt_registry_t *reg = NULL;
    assert_int_equal(rt_registry_create(&opt, &reg), RT_OK);
    const rt_status_t st = rt_registry_load_plugin(reg, path);
    snprintf(msg, size, "%s", rt_registry_plugin(reg, 0)->message);
    assert_int_equal(rt_registry_plugin(reg, 0)->status, st);
    if (st == RT_OK) assert_non_null(rt_registry_device_by_name(reg, "fake0"));
    rt_registry_destroy(reg);
    return st;
}

static void expect_loads(const char *path, const char *check) {
    char msg[2048];
    if (load(path, msg, sizeof msg) != RT_OK) fail_msg("%s: %s refused: %s", check, path, msg);
}

static void expect_refused(const char *path, const char *needle, const char *check) {
    char msg[2048];
    warnings[0] = '\0';
    const rt_status_t st = load(path, msg, sizeof msg);
    if (st != RT_ERR_UNSUPPORTED) fail_msg("%s: %s gave %s", check, path, rt_status_name(st));
    tu_expect_contains(msg, path, check);
    tu_expect_contains(msg, needle, check);
    tu_expect_contains(warnings, needle, check); /* and it was said out loud */
}

//===--- security-1: setgid ignores RT_PLUGIN_PATH ---===//

/* A group the setgid copy can take that differs from ours, or -1. */
static gid_t other_group(void) {
    if (geteuid() == 0) return 65534; /* nogroup; any gid but ours does */
    gid_t groups[256];
    const int n = getgroups(256, groups);
    for (int i = 0; i < n; i++)
        if (groups[i] != getegid()) return groups[i];
    return (gid_t)-1;
}

static char *run_probe(const char *probe, const char *marker) {
    char cmd[3 * PATH_SIZE];
    static char out[PATH_SIZE];
    snprintf(cmd, sizeof cmd, "RT_PLUGIN_PATH='%s' ASAN_OPTIONS=detect_leaks=0 '%s' 2>&1",
             marker, probe);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    const size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    if (pclose(p) != 0) fail_msg("security-1: %s failed: %s", probe, out);
    return out;
}

static void test_setgid(void **state) {
    (void)state;
    const gid_t gid = other_group();
    if (gid == (gid_t)-1) {
        print_message("security-1: needs root or a second group to make a setgid file\n");
        skip();
    }
    char dir[PATH_SIZE], probe[PATH_SIZE], normal[PATH_SIZE], marker[PATH_SIZE];
    temp_dir(dir);
    path_join(marker, dir, "marker-plugins");
    path_join(normal, tu_build_dir(), "tests/secure-probe");
    char *out = run_probe(normal, marker);
    tu_expect_contains(out, "at_secure=0", "security-1.1");      /* the control */
    tu_expect_contains(out, marker, "security-1.1");
    install("tests/secure-probe", dir, "secure-probe", 0755, probe);
    assert_int_equal(chown(probe, geteuid(), gid), 0);
    assert_int_equal(chmod(probe, 02755), 0);
    out = run_probe(probe, marker);
    if (strstr(out, "at_secure=1") == NULL)                    /* security-1.2 */
        fail_msg("security-1.2: the setgid probe did not run in secure-execution mode (a nosuid "
                 "mount, or no_new_privs?): %s", out);
    if (strstr(out, marker) != NULL)                           /* security-1.3 */
        fail_msg("security-1.3: a setgid process used RT_PLUGIN_PATH: %s", out);
    tu_expect_contains(out, "/rt-plugins", "security-1.4");     /* the rest of the path stays */
    remove_tree(dir);
}

//===--- security-2: writable by every user ---===//

static void test_world_writable(void **state) {
    (void)state;
    char dir[PATH_SIZE], so[PATH_SIZE];
    temp_dir(dir);
    install("tests/plugins/rt-plugin-fake.so", dir, "rt-plugin-fake.so", 0755, so);
    expect_loads(so, "security-2.1");                          /* the control */
    assert_int_equal(chmod(so, 0757), 0);
    expect_refused(so, "is writable by every user (mode 0757)", "security-2.2");
    assert_int_equal(chmod(so, 0755), 0);
    assert_int_equal(chmod(dir, 0777), 0);
    expect_refused(so, "directory", "security-2.3");
    expect_refused(so, "is writable by every user (mode 0777)", "security-2.3");
    assert_int_equal(chmod(dir, 01777), 0); /* sticky: only we can rename or remove our file */
    expect_loads(so, "security-2.4");
    assert_int_equal(chmod(dir, 0755), 0);
    expect_loads(so, "security-2.5");
    remove_tree(dir);
}

//===--- security-3: group-writable ---===//

static void test_group_writable(void **state) {
    (void)state;
    char dir[PATH_SIZE], so[PATH_SIZE];
    temp_dir(dir);
    install("tests/plugins/rt-plugin-fake.so", dir, "rt-plugin-fake.so", 0775, so);
    expect_loads(so, "security-3.1");  /* ours, group-writable: the owner's choice */
    if (geteuid() != 0) {
        print_message("security-3.2: needs root to give a file to another user\n");
        remove_tree(dir);
        skip();
    }
    assert_int_equal(chown(so, 65534, 65534), 0);
    expect_refused(so, "is owned by uid 65534", "security-3.2");
    assert_int_equal(chmod(so, 0755), 0);                     /* only its owner can write */
    expect_refused(so, "is owned by uid 65534", "security-3.3"); /* who could still swap it */
    assert_int_equal(chown(so, geteuid(), getegid()), 0);
    expect_loads(so, "security-3.3");
    assert_int_equal(chown(dir, 65534, 65534), 0);
    assert_int_equal(chmod(dir, 0775), 0);
    expect_refused(so, "directory", "security-3.4");
    remove_tree(dir);
}

//===--- security-4: symlinks ---===//

static void test_symlinks(void **state) {
    (void)state;
    char safe[PATH_SIZE], open_dir[PATH_SIZE], so[PATH_SIZE], link[PATH_SIZE];
    temp_dir(safe);
    temp_dir(open_dir);
    install("tests/plugins/rt-plugin-fake.so", open_dir, "rt-plugin-fake.so", 0755, so);
    path_join(link, safe, "rt-plugin-fake.so");
    assert_int_equal(symlink(so, link), 0);
    expect_loads(link, "security-4.1");
    assert_int_equal(chmod(open_dir, 0777), 0);   /* where the file really is */
    expect_refused(link, open_dir, "security-4.2");
    assert_int_equal(chmod(open_dir, 0755), 0);
    assert_int_equal(chmod(safe, 0777), 0);       /* where the link is: it can be swapped */
    expect_refused(link, safe, "security-4.3");
    assert_int_equal(chmod(safe, 0755), 0);
    remove_tree(safe);
    remove_tree(open_dir);
}

//===--- security-6: every directory up to the root ---===//

static void test_parents(void **state) {
    (void)state;
    char parent[PATH_SIZE], dir[PATH_SIZE], so[PATH_SIZE];
    temp_dir(parent);
    path_join(dir, parent, "plugins");
    assert_int_equal(mkdir(dir, 0755), 0);
    install("tests/plugins/rt-plugin-fake.so", dir, "rt-plugin-fake.so", 0755, so);
    expect_loads(so, "security-6.1");
    assert_int_equal(chmod(parent, 0777), 0); /* anyone can rename plugins/ away */
    expect_refused(so, parent, "security-6.2");
    expect_refused(so, "is writable by every user (mode 0777)", "security-6.2");
    assert_int_equal(chmod(parent, 01777), 0); /* sticky: plugins/ is ours, it stays */
    expect_loads(so, "security-6.3");
    if (geteuid() == 0) {
        assert_int_equal(chown(dir, 65534, 65534), 0); /* another user's, in a sticky parent */
        expect_refused(so, "is owned by uid 65534", "security-6.4");
    } else {
        print_message("security-6.4: needs root to give a directory to another user\n");
    }
    assert_int_equal(chmod(parent, 0755), 0);
    remove_tree(parent);
}

//===--- security-7: what dlopen is never given ---===//

static void expect_unloadable(const char *path, const char *needle, const char *check) {
    char msg[2048];
    alarm(20); /* a hang kills the program (a failure) rather than stalling the suite */
    const rt_status_t st = load(path, msg, sizeof msg);
    alarm(0);
    if (st == RT_OK) fail_msg("%s: %s loaded", check, path);
    tu_expect_contains(msg, path, check);
    tu_expect_contains(msg, needle, check);
}

static void test_not_elf(void **state) {
    (void)state;
    char dir[PATH_SIZE], so[PATH_SIZE], fifo[PATH_SIZE], text[PATH_SIZE];
    struct stat st;
    temp_dir(dir);
    install("tests/plugins/rt-plugin-fake.so", dir, "rt-plugin-fake.so", 0755, so);
    assert_int_equal(stat(so, &st), 0);
    assert_true(st.st_size > 8192);
    assert_int_equal(truncate(so, 8192), 0); /* inside its loaded segments: dlopen would fault */
    expect_unloadable(so, "truncated", "security-7.1");
    path_join(fifo, dir, "rt-plugin-fifo.so");
    assert_int_equal(mkfifo(fifo, 0644), 0);
    expect_unloadable(fifo, "not a regular file", "security-7.2");
    path_join(text, dir, "rt-plugin-text.so");
    FILE *f = fopen(text, "w");
    assert_non_null(f);
    fputs("#!/bin/sh\n", f);
    assert_int_equal(fclose(f), 0);
    expect_unloadable(text, "not an ELF file", "security-7.3");
    /* The same three found by a scan: listed, and the scan goes on. */
    rt_registry_options_t opt = {.struct_size = sizeof opt, .plugin_path = dir};
    rt_registry_t *reg = NULL;
    alarm(20);
    assert_int_equal(rt_registry_create(&opt, &reg), RT_OK);
    alarm(0);
    assert_non_null(rt_registry_device_by_name(reg, "cpu0"));               /* security-7.4 */
    rt_registry_destroy(reg);
    remove_tree(dir);
}

//===--- security-5: found by a scan ---===//

static void test_scan(void **state) {
    (void)state;
    char dir[PATH_SIZE], so[PATH_SIZE];
    temp_dir(dir);
    install("tests/plugins/rt-plugin-fake.so", dir, "rt-plugin-fake.so", 0757, so);
    rt_registry_options_t opt = {.struct_size = sizeof opt, .plugin_path = dir};
    rt_registry_t *reg = NULL;
    assert_int_equal(rt_registry_create(&opt, &reg), RT_OK);  /* the others load */
    assert_non_null(rt_registry_device_by_name(reg, "cpu0"));              /* security-5.1 */
    assert_null(rt_registry_device_by_name(reg, "fake0"));
    const rt_plugin_info_t *p = rt_registry_plugin(reg, 0);
    assert_string_equal(p->path, so);                                       /* security-5.2 */
    assert_int_equal(p->status, RT_ERR_UNSUPPORTED);
    tu_expect_contains(p->message, "writable by every user", "security-5.3");
    tu_expect_contains(warnings, so, "security-5.4");
    rt_registry_destroy(reg);
    remove_tree(dir);
}

//===--- security-8: another user's symlink, and swapping it ---===//

/* A process of uid 65534 that swaps link between two targets (a symlink
 * made beside it, renamed over it: atomic) until killed. */
static pid_t swapper(const char *link, const char *a, const char *b) {
    const pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid > 0) return pid;
    char tmp[PATH_SIZE + 8];
    snprintf(tmp, sizeof tmp, "%s.new", link);
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlives the test */
    alarm(60);
    const int null = open("/dev/null", O_RDWR);
    dup2(null, 1), dup2(null, 2);
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(2);
    for (unsigned i = 0;; i++) {
        unlink(tmp);
        if (symlink(i % 2 ? b : a, tmp) != 0 || rename(tmp, link) != 0) _exit(3);
    }
}

static void test_foreign_symlink(void **state) {
    (void)state;
    if (geteuid() != 0) {
        print_message("security-8: skipped: needs root to act as another user\n");
        skip();
    }
    char top[PATH_SIZE], sticky[PATH_SIZE], good[PATH_SIZE], evil[PATH_SIZE], link[PATH_SIZE], so[PATH_SIZE],
        marker[PATH_SIZE], via[PATH_SIZE];
    snprintf(top, sizeof top, "/tmp/rt-security-XXXXXX"); /* uid 65534 must reach it */
    assert_non_null(mkdtemp(top));
    assert_int_equal(chmod(top, 0755), 0);
    path_join(sticky, top, "sticky");
    path_join(good, top, "good");
    path_join(evil, top, "evil");
    path_join(marker, top, "evil-ran");
    assert_int_equal(mkdir(sticky, 0755) | chmod(sticky, 01777) | mkdir(good, 0755) | mkdir(evil, 0755), 0);
    install("tests/plugins/rt-plugin-fake.so", good, "rt-plugin-fake.so", 0755, so);
    install("tests/plugins/evil/rt-plugin-fake.so", evil, "rt-plugin-fake.so", 0755, so);
    setenv("RT_TEST_EVIL_MARKER", marker, 1);
    path_join(link, sticky, "plugins");
    path_join(via, link, "rt-plugin-fake.so");
    /* 8.1: the link is ours: it loads (the sticky directory keeps it ours) */
    assert_int_equal(symlink(good, link), 0);
    expect_loads(via, "security-8.1");
    /* 8.2: the same link, now another user's: they can point it anywhere */
    assert_int_equal(lchown(link, 65534, 65534), 0);
    expect_refused(via, "owned by uid 65534", "security-8.2");
    /* 8.3: that user swaps it between good and evil while we load */
    unlink(link);
    const pid_t pid = swapper(link, good, evil);
    int refused = 0, loaded = 0;
    char msg[2048];
    for (int i = 0; i < 300; i++) {
        const rt_status_t st = load(via, msg, sizeof msg);
        refused += st == RT_ERR_UNSUPPORTED;
        loaded += st == RT_OK;
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    struct stat st;
    if (stat(marker, &st) == 0) fail_msg("security-8.3: the evil plugin's constructor ran (%d loads)", loaded);
    if (loaded > 0) fail_msg("security-8.3: %d of 300 loads went through another user's symlink", loaded);
    print_message("security-8.3: 300 loads during the swaps: %d refused, none ran the evil plugin\n", refused);
    unsetenv("RT_TEST_EVIL_MARKER");
    remove_tree(top);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_setgid, setup, teardown),
        cmocka_unit_test_setup_teardown(test_world_writable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_group_writable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_symlinks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_scan, setup, teardown),
        cmocka_unit_test_setup_teardown(test_parents, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_elf, setup, teardown),
        cmocka_unit_test_setup_teardown(test_foreign_symlink, setup, teardown),
    };
    return cmocka_run_group_tests_name("security", tests, NULL, NULL);
}
