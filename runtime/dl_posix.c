/* SPDX-License-Identifier: MIT */
/* dl_posix.c: the operating-system services the plugin registry needs, for
 * POSIX systems: dlopen and friends, where the core library itself lives,
 * the environment as a setuid process may read it, directory listing, path
 * canonicalisation, who may write a plugin file, glob matching and a mutex.
 * Nothing above this file includes an OS header for these. */
#include "os.h"

#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

//===--- dynamic loading ---===//

#if UINTPTR_MAX > 0xffffffffu
typedef Elf64_Ehdr ehdr_t;
typedef Elf64_Phdr phdr_t;
#define NATIVE_CLASS ELFCLASS64
#else
typedef Elf32_Ehdr ehdr_t;
typedef Elf32_Phdr phdr_t;
#define NATIVE_CLASS ELFCLASS32
#endif

/* Why the segments of fd's program headers do not fit its size bytes, or
 * NULL. A truncated library would otherwise fault (SIGBUS) inside dlopen,
 * killing the process without a word. */
static const char *check_segments(int fd, const ehdr_t *eh, uint64_t size, char *err, size_t err_size) {
    for (unsigned i = 0; i < eh->e_phnum; i++) {
        phdr_t ph;
        if (pread(fd, &ph, sizeof ph, (off_t)(eh->e_phoff + (uint64_t)i * eh->e_phentsize)) != sizeof ph)
            return "cannot read its program headers";
        if (ph.p_type == PT_LOAD && (ph.p_offset > size || ph.p_filesz > size - ph.p_offset)) {
            snprintf(err, err_size, "truncated: segment %u needs bytes up to %llu, the file has %llu",
                     i, (unsigned long long)ph.p_offset + (unsigned long long)ph.p_filesz,
                     (unsigned long long)size);
            return err;
        }
    }
    return NULL;
}

/* Why path is not a whole shared object of this machine's class, or NULL.
 * Opened without blocking: a FIFO named like a plugin must not hang. */
static const char *check_elf(const char *path, char *err, size_t err_size) {
    const int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) return NULL; /* dlopen says why */
    struct stat st;
    ehdr_t eh;
    const char *why = NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        why = "not a regular file";
    else if (pread(fd, &eh, sizeof eh, 0) != (ssize_t)sizeof eh || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
        why = "not an ELF file";
    else if (eh.e_ident[EI_CLASS] != NATIVE_CLASS || eh.e_type != ET_DYN)
        why = "not a shared object of this machine's class";
    else if (eh.e_phentsize != sizeof(phdr_t) ||
             eh.e_phoff + (uint64_t)eh.e_phnum * eh.e_phentsize > (uint64_t)st.st_size)
        why = "truncated: its program headers pass the end of the file";
    else
        why = check_segments(fd, &eh, (uint64_t)st.st_size, err, err_size);
    close(fd);
    if (why != NULL && why != err) snprintf(err, err_size, "%s", why);
    return why;
}

void *rt_dl_open(const char *path, char *err, size_t err_size) {
    char why[256];
    if (check_elf(path, why, sizeof why) != NULL) {
        if (err_size > 0) snprintf(err, err_size, "%s", why); /* the caller names the file */
        return NULL;
    }
    /* RTLD_LOCAL: two plugins may define the same internal names; RTLD_NOW:
     * an unresolved symbol fails here, not in the middle of a graph. */
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (dl == NULL && err_size > 0) {
        const char *msg = dlerror();
        snprintf(err, err_size, "%s", msg != NULL ? msg : "unknown dlopen failure");
    }
    return dl;
}

void *rt_dl_sym(void *dl, const char *name) { return dl != NULL ? dlsym(dl, name) : NULL; }

void rt_dl_close(void *dl) {
    if (dl != NULL) dlclose(dl);
}

/* Plugin files end in the platform's name for a loadable library. */
const char *rt_dl_suffix(void) {
#if defined(__APPLE__)
    return ".dylib";
#else
    return ".so";
#endif
}

const char *rt_dl_self_dir(char *buf, size_t size) {
    Dl_info info;
    char resolved[4096];
    if (size == 0) return buf;
    buf[0] = '\0';
    /* Any function of librtcore names the library's file. */
    if (dladdr((void *)(uintptr_t)&rt_dl_self_dir, &info) == 0 || info.dli_fname == NULL)
        return buf;
    const char *file = info.dli_fname;
    if (realpath(file, resolved) != NULL) file = resolved;
    const char *slash = strrchr(file, '/');
    if (slash == NULL || file[0] != '/') return buf;
    const size_t n = slash == file ? 1 : (size_t)(slash - file); /* keep "/" for the root */
    if (n + 1 > size) return buf;
    memcpy(buf, file, n);
    buf[n] = '\0';
    return buf;
}

const char *rt_secure_getenv(const char *name) {
#if defined(__GLIBC__)
    return secure_getenv(name);
#else
    if (getuid() != geteuid() || getgid() != getegid()) return NULL;
    return getenv(name);
#endif
}

//===--- files ---===//

bool rt_os_list_dir(const char *dir, void (*fn)(void *ctx, const char *name), void *ctx) {
    DIR *d = opendir(dir);
    if (d == NULL) return false;
    for (struct dirent *e = readdir(d); e != NULL; e = readdir(d)) fn(ctx, e->d_name);
    closedir(d);
    return true;
}

bool rt_os_realpath(const char *path, char *buf, size_t size) {
    char resolved[4096];
    if (realpath(path, resolved) == NULL) return false;
    const size_t n = strlen(resolved);
    if (n + 1 > size) return false;
    memcpy(buf, resolved, n + 1);
    return true;
}

//===--- who may change a plugin ---===//

/* The owners whose files are trusted: root, the current user, and the
 * owner of the core library's own file. Whoever can change librtcore
 * already runs code in this process, so trusting that user adds nobody;
 * it is what lets a container running as root use a build owned by the
 * host's user. Anyone else (a third user, even one who alone can write
 * the file) is refused: that user could swap the code for their own at
 * any time, and root would run it. */
static uid_t lib_owner; /* set once, by find_lib_owner */

static void find_lib_owner(void) {
    Dl_info info;
    struct stat st;
    if (dladdr((void *)(uintptr_t)&find_lib_owner, &info) != 0 && info.dli_fname != NULL &&
        stat(info.dli_fname, &st) == 0)
        lib_owner = st.st_uid;
}

static bool trusted_owner(uid_t uid) {
    static pthread_once_t once = PTHREAD_ONCE_INIT; /* registries may scan on several threads */
    pthread_once(&once, find_lib_owner);
    return uid == 0 || uid == geteuid() || uid == lib_owner;
}

/* Why someone untrusted can change the file or directory at path (st), or
 * false when nobody can. child is the next component down (NULL for the
 * file itself). World-writable is refused, except a sticky directory
 * (/tmp) above a child with a trusted owner, which only that owner can
 * rename or remove. Group-writable is the owner's choice when the owner is
 * trusted (umask 002 with per-user groups). */
static bool component_unsafe(const char *path, const struct stat *st, const struct stat *child,
                             char *why, size_t size) {
    const mode_t mode = st->st_mode & 07777;
    const char *what = S_ISDIR(st->st_mode) ? "directory" : S_ISLNK(st->st_mode) ? "symlink" : "file";
    const bool sticky_ok = S_ISDIR(st->st_mode) && (mode & S_ISVTX) && child != NULL &&
                           trusted_owner(child->st_uid);
    if (!trusted_owner(st->st_uid))
        snprintf(why, size, "%s %s is owned by uid %u, neither root, the current user nor the "
                 "owner of librtcore (mode %04o)", what, path, (unsigned)st->st_uid, (unsigned)mode);
    else if ((mode & S_IWOTH) != 0 && !sticky_ok && !S_ISLNK(st->st_mode)) /* a link's mode means nothing */
        snprintf(why, size, "%s %s is writable by every user (mode %04o)", what, path,
                 (unsigned)mode);
    else
        return false;
    return true;
}

/* Checks the absolute path and every directory above it up to "/", as sudo
 * and ssh's StrictModes do: replacing any of them replaces the plugin. The
 * first component is the link itself when it is one (its owner can point
 * it elsewhere); the directories above are followed. */
static bool chain_unsafe(const char *path, char *why, size_t size) {
    char buf[4096];
    struct stat st, child;
    bool have_child = false;
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) return false;
    for (;;) {
        if ((have_child ? stat(buf, &st) : lstat(buf, &st)) != 0) return false; /* dlopen says why */
        if (component_unsafe(buf, &st, have_child ? &child : NULL, why, size)) return true;
        char *slash = strrchr(buf, '/');
        if (slash == NULL || (slash == buf && buf[1] == '\0')) return false;
        if (slash == buf) slash[1] = '\0';
        else *slash = '\0';
        child = st;
        have_child = true;
    }
}

/* path as named, made absolute. */
static bool named_path(const char *path, char *buf, size_t size) {
    char cwd[4096];
    if (path[0] != '/' && getcwd(cwd, sizeof cwd) == NULL) return false;
    const int n = path[0] == '/' ? snprintf(buf, size, "%s", path) : snprintf(buf, size, "%s/%s", cwd, path);
    return n > 0 && (size_t)n < size;
}

bool rt_os_writable_by_others(const char *path, char *why, size_t size) {
    char real[4096], dir[4096];
    if (size > 0) why[0] = '\0';
    /* The directories as named (a symlink in them can be swapped), then the
     * file and every directory it really lives in. */
    if (named_path(path, dir, sizeof dir) && chain_unsafe(dir, why, size)) return true;
    if (realpath(path, real) == NULL) return false; /* dlopen says why */
    return chain_unsafe(real, why, size);
}

bool rt_os_glob_match(const char *pattern, const char *name) {
    return fnmatch(pattern, name, 0) == 0;
}

//===--- mutex ---===//

void *rt_os_mutex_create(const rt_allocator_t *a) {
    pthread_mutex_t *m = rt_mem_alloc(a, sizeof *m);
    if (m != NULL && pthread_mutex_init(m, NULL) != 0) {
        rt_mem_free(a, m, sizeof *m);
        m = NULL;
    }
    return m;
}

void rt_os_mutex_destroy(const rt_allocator_t *a, void *m) {
    if (m == NULL) return;
    pthread_mutex_destroy(m);
    rt_mem_free(a, m, sizeof(pthread_mutex_t));
}

void rt_os_mutex_lock(void *m) { pthread_mutex_lock(m); }

void rt_os_mutex_unlock(void *m) { pthread_mutex_unlock(m); }
