/* SPDX-License-Identifier: MIT */
/* test-model-faults.c: the model library under bad input and faults. Each
 * check loads something a careful user could hand it and asserts the
 * error rt gives, in one clean message, with nothing silently wrong.
 *
 *   mfaults-1  every variant of the malformed-model corpus (model_corpus.h)
 *              fails at its stage with its message; a load error names
 *              rtm_model_load once (no message formatted into itself); the
 *              valid ones that broke a tool load and decode
 *   mfaults-2  NaN weights: the decode fails naming the step; with
 *              check_numerics also the first node that was not finite
 *   mfaults-3  rtm_sampler_create with a NaN temperature or top-p: the
 *              message quotes the values (it read a freed sampler before)
 *   mfaults-4  a FIFO given as the model fails at once, not hanging
 *   mfaults-5  a model cut shorter while mapped: the process dies by SIGBUS
 *              with a message naming the file, never wrong output */
#include "testutil.h"

#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../model/rt_model.h"
#include "model_corpus.h"

#define MODEL "stories260K.gguf"

static char dir[64]; /* /tmp/rt-mfaults-XXXXXX */
static char src[PATH_MAX];

static int setup(void **state) {
    (void)state;
    tu_model_path(MODEL, src, sizeof src);
    setenv("RT_PLUGINS", "cpu", 1);
    return tu_tmpdir_make(dir, sizeof dir, "rt-mfaults");
}

static int teardown(void **state) {
    (void)state;
    return tu_tmpdir_remove(dir);
}

static void need_model(void) { tu_need_file(src); }

static rtm_model_t *load_on(rt_registry_t *reg, const char *path, rt_status_t *out_st) {
    /* No repacking: the weights are read from the mapping while decoding. */
    const rtm_model_params_t mp = {.struct_size = sizeof mp, .registry = reg, .no_progress = true,
                                   .no_repack = true};
    rtm_model_t *m = NULL;
    *out_st = rtm_model_load(path, &mp, &m);
    return m;
}

static rtm_model_t *load(const char *path, rt_status_t *out_st) { return load_on(tu_registry(), path, out_st); }

static int count(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++) n++;
    return n;
}

/* The first decode of two tokens; its status, the message in msg. */
static rt_status_t decode(rtm_model_t *m, bool check_numerics, char *msg, size_t size) {
    const rtm_context_params_t cp = {.struct_size = sizeof cp, .n_ctx = 16,
                                     .check_numerics = check_numerics};
    rtm_context_t *c = NULL;
    rt_status_t st = rtm_context_create(m, &cp, &c);
    const rtm_token_t toks[] = {1, 100};
    if (st == RT_OK) st = rtm_decode(c, toks, 2);
    snprintf(msg, size, "%s", st == RT_OK ? "" : rtm_last_error());
    rtm_context_destroy(c);
    return st;
}

//===--- mfaults-1, mfaults-2 ---===//

static void check_variant(const mc_variant_t *v, const char *path) {
    rt_status_t st;
    rtm_model_t *m = load(path, &st);
    const char *msg = rtm_last_error();
    if (v->stage == MC_LOAD) {
        if (st == RT_OK) tu_report("mfaults-1 %s: loaded", v->name);
        else if (strstr(msg, v->expect) == NULL || count(msg, "rtm_model_load") > 1)
            tu_report("mfaults-1 %s: message '%s', wanted '%s' once prefixed", v->name, msg, v->expect);
        rtm_model_destroy(m);
        return;
    }
    char dmsg[1024];
    if (st != RT_OK) tu_report("mfaults-2 %s: load failed: %s", v->name, msg);
    else if (v->stage == MC_RUNS) {
        if (decode(m, false, dmsg, sizeof dmsg) != RT_OK) tu_report("mfaults-1 %s: %s", v->name, dmsg);
    }
    else if (decode(m, false, dmsg, sizeof dmsg) != RT_ERR_FORMAT || strstr(dmsg, v->expect) == NULL)
        tu_report("mfaults-2 %s: decode message '%s', wanted '%s'", v->name, dmsg, v->expect);
    else if (decode(m, true, dmsg, sizeof dmsg) != RT_ERR_FORMAT ||
             strstr(dmsg, "first node not finite is ") == NULL || strstr(dmsg, "is none") != NULL)
        tu_report("mfaults-2 %s: check_numerics message '%s'", v->name, dmsg);
    rtm_model_destroy(m);
}

static void test_corpus(void **state) {
    (void)state;
    need_model();
    tu_n_failed = 0;
    for (int i = 0; i < mc_n_variants; i++) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s.gguf", dir, mc_variants[i].name);
        if (mc_write(src, path, &mc_variants[i], false) != RT_OK)
            fail_msg("%s: %s", path, rt_last_error());
        check_variant(&mc_variants[i], path);
        unlink(path);
    }
    if (tu_n_failed) fail_msg("%d variant(s) misreported", tu_n_failed);
}

//===--- mfaults-3 ---===//

static void test_sampler_nan(void **state) {
    (void)state;
    const float bad[][2] = {{NAN, 0.9f}, {0.8f, NAN}};
    for (int i = 0; i < 2; i++) {
        const rtm_sampler_params_t p = {.struct_size = sizeof p, .temp = bad[i][0], .top_p = bad[i][1],
                                        .top_k = 40};
        rtm_sampler_t *s = (rtm_sampler_t *)&p;
        assert_int_equal(rtm_sampler_create(&p, &s), RT_ERR_INVALID_ARGUMENT);
        assert_null(s);
        assert_non_null(strstr(rtm_last_error(), "top_k 40"));
        assert_non_null(strstr(rtm_last_error(), "nan"));
    }
}

//===--- mfaults-4 ---===//

static void test_fifo(void **state) {
    (void)state;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/model.gguf", dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    alarm(20); /* a hang kills the program (a failure) rather than stalling the suite */
    rt_status_t st;
    rtm_model_t *m = load(path, &st);
    alarm(0);
    assert_null(m);
    assert_int_not_equal(st, RT_OK);
    assert_non_null(strstr(rtm_last_error(), "not a regular file"));
}

//===--- mfaults-5 ---===//

/* The child (a fresh process: this program run again, so that no thread
 * of the parent's plugins is missing): load the copy, cut it, decode. */
static int truncate_while_mapped(const char *path) {
    rt_registry_t *reg = NULL;
    if (rt_registry_create(NULL, &reg) != RT_OK) _exit(2);
    rt_status_t st;
    rtm_model_t *m = load_on(reg, path, &st);
    if (m == NULL) _exit(3);
    char msg[1024];
    if (truncate(path, 4096) != 0) _exit(4);
    for (int i = 0; i < 4; i++) decode(m, false, msg, sizeof msg);
    _exit(5); /* wrong: the weights were gone */
}

static void test_sigbus(void **state) {
    (void)state;
    need_model();
    char path[PATH_MAX], err[PATH_MAX + 8], cmd[3 * PATH_MAX];
    snprintf(path, sizeof path, "%s/cut.gguf", dir);
    snprintf(err, sizeof err, "%s/stderr", dir);
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", src, path);
    assert_int_equal(system(cmd), 0);
    fflush(NULL);
    const pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        const int fd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fd, 2);
        /* AddressSanitizer handles SIGBUS itself (and rt then leaves it be):
         * the child checks rt's own handler. */
        char asan[1024];
        const char *prev = getenv("ASAN_OPTIONS");
        snprintf(asan, sizeof asan, "%s%shandle_sigbus=0", prev ? prev : "", prev ? ":" : "");
        setenv("ASAN_OPTIONS", asan, 1);
        execl("/proc/self/exe", "test-model-faults", "--truncate-while-mapped", path, (char *)NULL);
        _exit(6);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    FILE *f = fopen(err, "r");
    char text[4096] = "";
    if (f != NULL) {
        text[fread(text, 1, sizeof text - 1, f)] = '\0';
        fclose(f);
    }
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGBUS)
        fail_msg("mfaults-5: the child ended with status %#x: %s", status, text);
    if (strstr(text, path) == NULL) fail_msg("mfaults-5: no message naming %s: '%s'", path, text);
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "--truncate-while-mapped") == 0) return truncate_while_mapped(argv[2]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_corpus, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sampler_nan, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fifo, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sigbus, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
