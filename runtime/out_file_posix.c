/* SPDX-License-Identifier: MIT */
/* out_file_posix.c: rt's atomic output file (out_file.h) on POSIX systems,
 * compiled into librtcore (hidden) and into each tool that writes files:
 * the checks made before anything is created (the output is not an input;
 * where the target really is), the temporary file beside it, the commit
 * (flush, fsync, rename, fsync of the directory) and the signal handler
 * that removes temporary files still open when the process is
 * interrupted. */
#include "out_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_PENDING 8

//===--- interrupted: remove the temporary files ---===//

/* The temporary files open now, claimed by compare-and-swap (files may be
 * written on several threads); the handler reads them, so a slot is set
 * only once its path is complete. */
static const char *_Atomic pending[MAX_PENDING];

static void on_signal(int sig) {
    for (int i = 0; i < MAX_PENDING; i++) {
        const char *tmp = pending[i];
        if (tmp != NULL) unlink(tmp); /* async-signal-safe */
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Installs the handler for the signals a user sends to stop a program,
 * unless the program handles them itself; the default action still ends
 * it, only after the temporary files are gone. */
static void install_once(void) {
    const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction old, sa = {.sa_handler = on_signal};
        sigemptyset(&sa.sa_mask);
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_DFL)
            sigaction(sigs[i], &sa, NULL);
    }
}

static void install_handlers(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, install_once);
}

static bool set_pending(const char *tmp, bool on) {
    for (int i = 0; i < MAX_PENDING; i++) {
        const char *expected = on ? NULL : tmp;
        if (atomic_compare_exchange_strong(&pending[i], &expected, on ? tmp : NULL)) return true;
    }
    return false;
}

//===--- helpers ---===//

static int fail(rt_out_file_t *of, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(of->error, sizeof of->error, fmt, ap);
    va_end(ap);
    return -1;
}

bool rt_out_file_same(const char *a, const char *b) {
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* of->target: the file the path names after all links, or for a new file
 * its resolved directory and its name. */
static int resolve_target(rt_out_file_t *of, const char *path, bool exists) {
    char buf[4096], real[PATH_MAX];
    if (exists) {
        if (realpath(path, real) == NULL) return fail(of, "%s: cannot resolve: %s", path, strerror(errno));
        snprintf(of->target, sizeof of->target, "%s", real);
        return 0;
    }
    snprintf(buf, sizeof buf, "%s", path);
    const char *dir = dirname(buf);
    if (realpath(dir, real) == NULL)
        return fail(of, "%s: cannot write in directory %s: %s", path, dir, strerror(errno));
    snprintf(buf, sizeof buf, "%s", path);
    const int n = snprintf(of->target, sizeof of->target, "%s/%s", real, basename(buf));
    if (n < 0 || (size_t)n >= sizeof of->target) return fail(of, "%s: path too long", path);
    return 0;
}

/* A target that is not a regular file (a device, a FIFO) is written where
 * it is: renaming over it would replace a device node with a file. */
static int open_in_place(rt_out_file_t *of) {
    const int fd = open(of->target, O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) return fail(of, "%s: cannot open for writing: %s", of->target, strerror(errno));
    of->f = fdopen(fd, "w");
    if (of->f == NULL) {
        close(fd);
        return fail(of, "%s: cannot open for writing: %s", of->target, strerror(errno));
    }
    of->path = of->target;
    return 0;
}

/* A fresh file "DIR/.NAME.tmp-<16 hex digits>", created exclusively with
 * mode 0666 so that the kernel applies the umask (reading the umask would
 * mean setting it, which races with other threads' files); -1 with errno. */
static int create_exclusive(rt_out_file_t *of, const char *dir, const char *name) {
    static _Atomic uint64_t counter;
    for (int attempt = 0; attempt < 64; attempt++) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t z = (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32) ^ (++counter * 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z ^= z >> 31;
        const int n = snprintf(of->tmp, sizeof of->tmp, "%s/.%s.tmp-%016llx", dir, name, (unsigned long long)z);
        if (n < 0 || (size_t)n >= sizeof of->tmp) {
            errno = ENAMETOOLONG;
            return -1;
        }
        /* Registered before it exists: a signal between the open and
         * the registration would leave the file behind, one before the
         * open unlinks nothing (the name is fresh). Past MAX_PENDING
         * files at once an interrupt leaves this one behind; the target
         * is safe either way. */
        const bool registered = set_pending(of->tmp, true);
        const int fd = open(of->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd >= 0) return fd;
        const int err = errno;
        if (registered) set_pending(of->tmp, false);
        errno = err;
        if (err != EEXIST) return -1;
    }
    return -1;
}

//===--- what killed writers left ---===//

/* When this process began (its copy of this file was loaded), as a file
 * time: a temporary file last written before it cannot be one this
 * process or a writer still at work is writing. */
static struct timespec process_start;

__attribute__((constructor)) static void note_start(void) { clock_gettime(CLOCK_REALTIME, &process_start); }

#if defined(__APPLE__)
#define st_mtim st_mtimespec
#endif

static bool before_start(const struct timespec *t) {
    return t->tv_sec < process_start.tv_sec ||
           (t->tv_sec == process_start.tv_sec && t->tv_nsec < process_start.tv_nsec);
}

/* Whether entry is ".NAME.tmp-" and 16 hex digits: rt's name for a
 * temporary file of target NAME. */
static bool temp_name_of(const char *entry, const char *name) {
    const size_t n = strlen(name);
    if (entry[0] != '.' || strncmp(entry + 1, name, n) != 0 || strncmp(entry + 1 + n, ".tmp-", 5) != 0) return false;
    const char *hex = entry + 1 + n + 5;
    for (int i = 0; i < 16; i++)
        if (!((hex[i] >= '0' && hex[i] <= '9') || (hex[i] >= 'a' && hex[i] <= 'f'))) return false;
    return hex[16] == '\0';
}

/* Removes the temporary files of earlier writes of the same target that a
 * killed process (SIGKILL, a power cut) left: rt's naming, a regular file
 * of this user's, last written before this process began. A writer still
 * at work wrote its file since, and keeps it. */
static void remove_leftovers(const char *dir, const char *name) {
    DIR *d = opendir(dir);
    if (d == NULL) return;
    struct stat st;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (temp_name_of(e->d_name, name) && fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISREG(st.st_mode) && st.st_uid == geteuid() && before_start(&st.st_mtim))
            unlinkat(dirfd(d), e->d_name, 0);
    closedir(d);
}

static int open_temp(rt_out_file_t *of) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", of->target);
    char *slash = strrchr(dir, '/');
    *slash = '\0';
    remove_leftovers(dir, slash + 1);
    install_handlers();
    const int fd = create_exclusive(of, dir, slash + 1);
    struct stat st;
    if (fd < 0) {
        const int err = errno;
        of->tmp[0] = '\0';
        return fail(of, "%s: cannot create a file in %s: %s", of->target, dir, strerror(err));
    }
    /* A replaced file keeps its mode; a new one has the umask's. */
    const bool keep_mode = of->mode != (mode_t)-1;
    if ((keep_mode && fchmod(fd, of->mode) != 0) || fstat(fd, &st) != 0 ||
        (of->f = fdopen(fd, "w")) == NULL) {
        const int err = errno;
        close(fd);
        unlink(of->tmp);
        set_pending(of->tmp, false);
        of->tmp[0] = '\0';
        return fail(of, "%s: cannot create a file in %s: %s", of->target, dir, strerror(err));
    }
    of->dev = st.st_dev;
    of->ino = st.st_ino;
    of->path = of->tmp;
    return 0;
}

//===--- open, commit, abort ---===//

int rt_out_file_open(rt_out_file_t *of, const char *path, const char *const *inputs) {
    memset(of, 0, sizeof *of);
    for (size_t i = 0; inputs != NULL && inputs[i] != NULL; i++)
        if (rt_out_file_same(path, inputs[i]))
            return fail(of, "%s: refusing to write over the input %s (the same file)", path, inputs[i]);
    struct stat st;
    const bool exists = stat(path, &st) == 0;
    if (resolve_target(of, path, exists) != 0) return -1;
    if (exists && !S_ISREG(st.st_mode)) return open_in_place(of);
    of->mode = exists ? st.st_mode & 07777 : (mode_t)-1;
    return open_temp(of);
}

/* True while of->tmp is still the file this process created. */
static bool temp_is_ours(const rt_out_file_t *of) {
    struct stat st;
    return lstat(of->tmp, &st) == 0 && S_ISREG(st.st_mode) && st.st_dev == of->dev && st.st_ino == of->ino;
}

void rt_out_file_abort(rt_out_file_t *of) {
    if (of == NULL) return;
    if (of->f != NULL) fclose(of->f);
    of->f = NULL;
    if (of->tmp[0] != '\0') {
        if (temp_is_ours(of)) unlink(of->tmp);
        set_pending(of->tmp, false);
        of->tmp[0] = '\0';
    }
}

/* The rename is durable once the directory holding it is synced. */
static void sync_dir(const char *target) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", target);
    *strrchr(dir, '/') = '\0';
    const int fd = open(dir[0] ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

static int commit_in_place(rt_out_file_t *of) {
    int err = fflush(of->f) != 0 || ferror(of->f) ? (errno ? errno : EIO) : 0;
    /* Devices and FIFOs cannot be synced; that is not a write error. */
    if (err == 0 && fsync(fileno(of->f)) != 0 && errno != EINVAL && errno != EROFS) err = errno;
    if (fclose(of->f) != 0 && err == 0) err = errno;
    of->f = NULL;
    return err ? fail(of, "%s: cannot write: %s", of->target, strerror(err)) : 0;
}

int rt_out_file_commit(rt_out_file_t *of) {
    if (of->f == NULL) return fail(of, "%s: not open", of->target);
    if (of->tmp[0] == '\0') return commit_in_place(of);
    errno = 0;
    int err = fflush(of->f) != 0 || ferror(of->f) ? (errno ? errno : EIO) : 0;
    if (err == 0 && fsync(fileno(of->f)) != 0) err = errno;
    if (fclose(of->f) != 0 && err == 0) err = errno;
    of->f = NULL;
    if (err == 0 && !temp_is_ours(of)) {
        fail(of, "%s: the temporary file %s was replaced while writing", of->target, of->tmp);
        rt_out_file_abort(of); /* removes nothing: the file there is not ours */
        return -1;
    }
    if (err == 0 && rename(of->tmp, of->target) != 0) err = errno;
    if (err != 0) {
        rt_out_file_abort(of);
        return fail(of, "%s: cannot write: %s", of->target, strerror(err));
    }
    set_pending(of->tmp, false);
    of->tmp[0] = '\0';
    sync_dir(of->target);
    return 0;
}
