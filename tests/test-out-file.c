/* SPDX-License-Identifier: MIT */
/* test-out-file.c: the tools' output files (tools/out_file.h) and the
 * tools that write through them. Every case runs in a fresh temporary
 * directory and checks what is on disk afterwards: the input and any
 * previous output must be intact, and no temporary file may be left.
 *
 *   outfile-1  an output that is the input (same path, symlink, hard link) is refused
 *   outfile-2  commit replaces the target, keeps its mode and a symlink to it
 *   outfile-3  abort, a failed write and a non-regular target leave the old file,
 *              never remove a device
 *   outfile-4  SIGINT while writing leaves the previous output and no temporary file
 *   outfile-5  rt-quantize: output = input (3 ways) refused, input intact;
 *              /dev/full refused with /dev/full still there
 *   outfile-6  rt-run --dump-logits /dev/full and stdout to /dev/full fail with exit 1
 *   outfile-7  rt_gguf_writer_write_file: replaces through a symlink, leaves
 *              nothing behind, fails on /dev/full with /dev/full kept
 *   outfile-8  rt-quantize killed (SIGINT, SIGTERM) after 0..30 ms: the output
 *              is the previous file or the whole new one, the input intact,
 *              no temporary file left
 *   outfile-9  rt-quantize killed by SIGKILL leaves its temporary file; the
 *              next write of that output removes it, and keeps another
 *              target's and one written after it began (a live writer's) */
#include "testutil.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../abi/rt_gguf.h"
#include "../tools/out_file.h"

#define MODEL "stories260K.gguf"

static char dir[64]; /* /tmp/rt-outfile-XXXXXX */

static int setup(void **state) {
    (void)state;
    return tu_tmpdir_make(dir, sizeof dir, "rt-outfile");
}

static int teardown(void **state) {
    (void)state;
    return tu_tmpdir_remove(dir);
}

static const char *at(const char *name, char *buf) {
    snprintf(buf, PATH_MAX, "%s/%s", dir, name);
    return buf;
}

static void put(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

/* The file's contents, or "" when missing (static buffer). */
static const char *get(const char *path) {
    static char buf[4096];
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (f == NULL) return buf;
    buf[fread(buf, 1, sizeof buf - 1, f)] = '\0';
    fclose(f);
    return buf;
}

static int n_entries(void) {
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

//===--- outfile-1 ---===//

static void test_same_file(void **state) {
    (void)state;
    char in[PATH_MAX], lnk[PATH_MAX], hard[PATH_MAX];
    put(at("in", in), "input");
    assert_int_equal(symlink(in, at("link", lnk)), 0);
    assert_int_equal(link(in, at("hard", hard)), 0);
    const char *inputs[] = {in, NULL};
    const char *outs[] = {in, lnk, hard};
    for (int i = 0; i < 3; i++) {
        rt_out_file_t of;
        assert_int_equal(rt_out_file_open(&of, outs[i], inputs), -1);
        assert_non_null(strstr(of.error, "refusing"));
        assert_null(of.f);
    }
    assert_string_equal(get(in), "input");
    assert_int_equal(n_entries(), 3);
}

//===--- outfile-2 ---===//

static void test_commit(void **state) {
    (void)state;
    char out[PATH_MAX], lnk[PATH_MAX], fresh[PATH_MAX];
    put(at("out", out), "old");
    assert_int_equal(chmod(out, 0640), 0);
    assert_int_equal(symlink("out", at("link", lnk)), 0);
    rt_out_file_t of;
    assert_int_equal(rt_out_file_open(&of, lnk, NULL), 0);
    fputs("new", of.f);
    assert_string_equal(get(out), "old"); /* nothing visible before commit */
    assert_int_equal(rt_out_file_commit(&of), 0);
    assert_string_equal(get(out), "new");
    struct stat st;
    assert_int_equal(lstat(lnk, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_int_equal(stat(out, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0640);
    assert_int_equal(rt_out_file_open(&of, at("fresh", fresh), NULL), 0);
    fputs("x", of.f);
    assert_int_equal(rt_out_file_commit(&of), 0);
    assert_string_equal(get(fresh), "x");
    assert_int_equal(n_entries(), 3);
}

//===--- outfile-3 ---===//

static void test_failures(void **state) {
    (void)state;
    char out[PATH_MAX];
    put(at("out", out), "old");
    rt_out_file_t of;
    assert_int_equal(rt_out_file_open(&of, out, NULL), 0);
    fputs("partial", of.f);
    rt_out_file_abort(&of);
    assert_string_equal(get(out), "old");
    assert_int_equal(n_entries(), 1);
    /* A device is written in place, its failure reported, the node kept. */
    struct stat st;
    if (stat("/dev/full", &st) != 0) skip();
    assert_int_equal(rt_out_file_open(&of, "/dev/full", NULL), 0);
    for (int i = 0; i < 10000; i++) fputs("data data data ", of.f);
    assert_int_equal(rt_out_file_commit(&of), -1);
    assert_non_null(strstr(of.error, "/dev/full"));
    assert_int_equal(stat("/dev/full", &st), 0);
    assert_true(S_ISCHR(st.st_mode));
    /* A missing directory fails before anything is created. */
    assert_int_equal(rt_out_file_open(&of, at("no/such/file", out), NULL), -1);
    assert_non_null(strstr(of.error, "no/such"));
}

//===--- outfile-4 ---===//

static void test_sigint(void **state) {
    (void)state;
    char out[PATH_MAX];
    put(at("out", out), "old");
    const pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        rt_out_file_t of;
        if (rt_out_file_open(&of, out, NULL) != 0) _exit(3);
        fputs("partial", of.f);
        fflush(of.f);
        raise(SIGINT);
        _exit(4); /* not reached: the handler re-raises with the default action */
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT);
    assert_string_equal(get(out), "old");
    assert_int_equal(n_entries(), 1);
}

//===--- outfile-5, outfile-6: the tools ---===//

/* The shell command's wait status. */
static int sh(const char *fmt, ...) RT_PRINTF(1, 2);
static int sh(const char *fmt, ...) {
    char cmd[4 * PATH_MAX];
    int status = -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    free(tu_run_capture(cmd, &status));
    return status;
}

/* in.gguf, a copy of the model; skips without it. */
static void copy_model(char *in) {
    char src[PATH_MAX];
    struct stat st;
    if (stat(tu_model_path(MODEL, src, sizeof src), &st) != 0) skip();
    assert_int_equal(sh("cp '%s' '%s'", src, at("in.gguf", in)), 0);
}

/* 0 when in.gguf is still byte for byte the model. */
static int changed(const char *in) {
    char src[PATH_MAX];
    return sh("cmp -s '%s' '%s'", tu_model_path(MODEL, src, sizeof src), in);
}

static void test_quantize(void **state) {
    (void)state;
    char in[PATH_MAX], lnk[PATH_MAX], hard[PATH_MAX];
    copy_model(in);
    struct stat st0, st;
    assert_int_equal(stat(in, &st0), 0);
    assert_int_equal(symlink(in, at("link.gguf", lnk)), 0);
    assert_int_equal(link(in, at("hard.gguf", hard)), 0);
    const char *outs[] = {in, lnk, hard};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(sh("%s/bin/rt-quantize '%s' '%s' q8_0 2>/dev/null", tu_build_dir_abs(), in, outs[i]), 256);
        assert_int_equal(stat(in, &st), 0);
        assert_int_equal(st.st_size, st0.st_size);
    }
    assert_int_equal(changed(in), 0);
    if (stat("/dev/full", &st) != 0) skip();
    assert_int_not_equal(sh("%s/bin/rt-quantize '%s' /dev/full q8_0 >/dev/null 2>&1", tu_build_dir_abs(), in), 0);
    assert_int_equal(stat("/dev/full", &st), 0);
    assert_true(S_ISCHR(st.st_mode));
    assert_int_equal(n_entries(), 3);
}

static void test_run_write_errors(void **state) {
    (void)state;
    char in[PATH_MAX];
    struct stat st;
    copy_model(in);
    if (stat("/dev/full", &st) != 0) skip();
    assert_int_equal(sh("%s/bin/rt-run -m '%s' -n 4 --devices cpu0 --dump-logits /dev/full >/dev/null 2>&1",
                         tu_build_dir_abs(), in), 256);
    assert_int_equal(sh("%s/bin/rt-run -m '%s' -n 4 --devices cpu0 >/dev/full 2>/dev/null",
                        tu_build_dir_abs(), in), 256);
    assert_true(S_ISCHR(st.st_mode));
}

static void test_gguf_writer(void **state) {
    (void)state;
    char out[PATH_MAX], lnk[PATH_MAX];
    put(at("old.gguf", out), "old");
    assert_int_equal(symlink("old.gguf", at("link.gguf", lnk)), 0);
    rt_gguf_writer_t *w = NULL;
    assert_int_equal(rt_gguf_writer_create(NULL, &w), RT_OK);
    assert_int_equal(rt_gguf_writer_set_str(w, "general.name", "outfile-7"), RT_OK);
    assert_int_equal(rt_gguf_writer_write_file(w, lnk), RT_OK);
    struct stat st;
    assert_int_equal(lstat(lnk, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_int_equal(stat(out, &st), 0);
    assert_int_equal((uint64_t)st.st_size, rt_gguf_writer_size(w));
    assert_int_equal(n_entries(), 2);
    if (stat("/dev/full", &st) == 0) {
        assert_int_equal(rt_gguf_writer_write_file(w, "/dev/full"), RT_ERR_IO);
        assert_non_null(strstr(rt_last_error(), "/dev/full"));
        assert_int_equal(stat("/dev/full", &st), 0);
        assert_true(S_ISCHR(st.st_mode));
    }
    rt_gguf_writer_destroy(w);
}

/* rt-quantize IN OUT q8_0 started in the background, stdout to /dev/null. */
static pid_t start_quantize(const char *q, const char *in, const char *out) {
    const pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        const int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        execl(q, "rt-quantize", in, out, "q8_0", (char *)NULL);
        _exit(127);
    }
    return pid;
}

static void test_quantize_killed(void **state) {
    (void)state;
    char in[PATH_MAX], out[PATH_MAX], whole[PATH_MAX], q[PATH_MAX];
    copy_model(in);
    at("whole.gguf", whole);
    snprintf(q, sizeof q, "%s/bin/rt-quantize", tu_build_dir_abs());
    assert_int_equal(sh("'%s' '%s' '%s' q8_0 >/dev/null", q, in, whole), 0);
    for (int i = 0; i < 8; i++) {
        put(at("out.gguf", out), "previous");
        const pid_t pid = start_quantize(q, in, out);
        usleep((useconds_t)(i * 4000));
        kill(pid, i % 2 ? SIGTERM : SIGINT);
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        const bool previous = strcmp(get(out), "previous") == 0;
        if (!previous && sh("cmp -s '%s' '%s'", out, whole) != 0)
            fail_msg("outfile-8: killed after %d ms: the output is neither file", i * 4);
        assert_int_equal(changed(in), 0);
        assert_int_equal(n_entries(), 3); /* in, whole, out */
    }
}

/* The temporary files of target name in dir ("." entries of rt's naming). */
static int n_temps(const char *name) {
    char prefix[128];
    snprintf(prefix, sizeof prefix, ".%s.tmp-", name);
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return n;
}

static void test_leftovers(void **state) {
    (void)state;
    char in[PATH_MAX], out[PATH_MAX], q[PATH_MAX], other[PATH_MAX], live[PATH_MAX];
    copy_model(in);
    at("out.gguf", out);
    snprintf(q, sizeof q, "%s/bin/rt-quantize", tu_build_dir_abs());
    for (int i = 0; i < 40 && n_temps("out.gguf") == 0; i++) {
        const pid_t pid = start_quantize(q, in, out);
        usleep((useconds_t)(2000 + i * 1000));
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    if (n_temps("out.gguf") == 0) fail_msg("outfile-9: no SIGKILL left a temporary file behind");
    put(at(".other.gguf.tmp-0123456789abcdef", other), "another target's");
    put(at(".out.gguf.tmp-fedcba9876543210", live), "a live writer's");
    const struct timespec later[2] = {{time(NULL) + 3600, 0}, {time(NULL) + 3600, 0}};
    assert_int_equal(utimensat(AT_FDCWD, live, later, 0), 0); /* written after the next write began */
    assert_int_equal(sh("'%s' '%s' '%s' q8_0 >/dev/null", q, in, out), 0);
    assert_int_equal(n_temps("out.gguf"), 1);          /* the live writer's alone */
    assert_string_equal(get(live), "a live writer's");
    assert_string_equal(get(other), "another target's");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_same_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_commit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failures, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sigint, setup, teardown),
        cmocka_unit_test_setup_teardown(test_quantize, setup, teardown),
        cmocka_unit_test_setup_teardown(test_run_write_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gguf_writer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_quantize_killed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_leftovers, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
