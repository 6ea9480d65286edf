/* SPDX-License-Identifier: MIT */
/* probe_posix.c: starting a plugin in a child process before the registry
 * loads it (RT_PLUGIN_PROBE=1; rt-devices does by default). A plugin that
 * crashes, aborts, hangs or exits while it is opened, queried or created
 * takes only the child with it; the registry then refuses it, naming the
 * signal or exit status and the last step the child logged, and loads the
 * others. The child creates an empty registry and loads the one file;
 * every step the runtime logs (it logs each before it runs it: opening,
 * query, create, devices) goes up a pipe, so the parent can say where a
 * dead child was. The child ends with _exit and a status of its own, so a
 * plugin that calls exit() is told apart. fork without exec: a process
 * that turns probing on should do so before it starts threads of its own
 * (the child only loads one file and leaves). */
#include "os.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PROBE_CAME_BACK 97 /* the child's status when load_plugin returned */
#define STEP_MAX 240

//===--- the child ---===//

static void child_log(rt_log_level_t level, const char *message, void *user_data) {
    (void)level;
    const int fd = *(const int *)user_data;
    char line[STEP_MAX + 2];
    const int n = snprintf(line, sizeof line, "%.*s\n", STEP_MAX, message);
    if (n > 0 && write(fd, line, (size_t)n) < 0) { /* the parent stopped listening: go on */ }
}

static _Noreturn void child(const char *path, int fd) {
    /* the parent's handlers (a test framework's, a crash reporter's) must
       not catch the plugin's fault and carry on as the parent would */
    static const int fatal[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTERM, SIGALRM};
    for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++) signal(fatal[i], SIG_DFL);
    unsetenv("RT_PLUGIN_PROBE"); /* the child loads the plugin itself */
    rt_log_set(child_log, &fd);
    rt_registry_options_t opt = {.struct_size = sizeof opt, .no_scan = true};
    rt_registry_t *reg = NULL;
    if (rt_registry_create(&opt, &reg) == RT_OK) rt_registry_load_plugin(reg, path);
    /* No destroy: a plugin's destructors are not what is probed. */
    _exit(PROBE_CAME_BACK);
}

//===--- the parent ---===//

/* Keeps the last complete line the child wrote. */
static void drain(int fd, char *last, size_t size, char *pending, size_t *n_pending) {
    char buf[1024];
    ssize_t got;
    while ((got = read(fd, buf, sizeof buf)) > 0) {
        for (ssize_t i = 0; i < got; i++) {
            if (buf[i] == '\n') {
                pending[*n_pending] = '\0';
                if (*n_pending > 0) snprintf(last, size, "%s", pending);
                *n_pending = 0;
            } else if (*n_pending < STEP_MAX) {
                pending[(*n_pending)++] = buf[i];
            }
        }
    }
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Waits for pid up to timeout_s, reading its steps; false on timeout. */
static bool wait_child(pid_t pid, int fd, double timeout_s, int *status, char *last, size_t size) {
    char pending[STEP_MAX + 1];
    size_t n_pending = 0;
    const double end = now_s() + timeout_s;
    for (;;) {
        drain(fd, last, size, pending, &n_pending);
        const pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid || (r < 0 && errno != EINTR)) break;
        if (now_s() > end) return false;
        nanosleep(&(struct timespec){0, 5 * 1000 * 1000}, NULL);
    }
    drain(fd, last, size, pending, &n_pending);
    return true;
}

static rt_status_t verdict(bool finished, int status, double timeout_s, const char *last,
                           char *reason, size_t size) {
    const char *step = last[0] != '\0' ? last : "before the first step";
    if (!finished)
        snprintf(reason, size, "did not finish within %.0f s in a probe process (killed); "
                 "last step: %s", timeout_s, step);
    else if (WIFSIGNALED(status))
        snprintf(reason, size, "killed the probe process with signal %d (%s); last step: %s",
                 WTERMSIG(status), strsignal(WTERMSIG(status)), step);
    else if (WIFEXITED(status) && WEXITSTATUS(status) != PROBE_CAME_BACK)
        snprintf(reason, size, "ended the probe process with exit status %d; last step: %s",
                 WEXITSTATUS(status), step);
    else
        return RT_OK;
    return RT_ERR_DEVICE;
}

rt_status_t rt_os_probe_plugin(const char *path, double timeout_s, char *reason, size_t reason_size) {
    int fds[2];
    if (pipe(fds) != 0) {
        snprintf(reason, reason_size, "cannot probe: pipe: %s", strerror(errno));
        return RT_ERR_IO;
    }
    fflush(NULL); /* nothing buffered is written twice */
    const pid_t pid = fork();
    if (pid < 0) {
        snprintf(reason, reason_size, "cannot probe: fork: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return RT_ERR_IO;
    }
    if (pid == 0) {
        close(fds[0]);
        child(path, fds[1]);
    }
    close(fds[1]);
    fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
    int status = 0;
    char last[STEP_MAX + 1] = "";
    const bool finished = wait_child(pid, fds[0], timeout_s, &status, last, sizeof last);
    if (!finished) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
    close(fds[0]);
    return verdict(finished, status, timeout_s, last, reason, reason_size);
}
