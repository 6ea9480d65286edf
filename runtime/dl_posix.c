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

/* Why the file open on fd is not a whole shared object of this machine's
 * class, or NULL. */
static const char *check_elf(int fd, char *err, size_t err_size) {
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
    if (why != NULL && why != err) snprintf(err, err_size, "%s", why);
    return why;
}

/* The descriptors plugins are loaded through, one per file (device and
 * inode), kept open for the life of the process. The loader knows a
 * library opened as /proc/self/fd/N by that name: were N closed and given
 * to another file, a later dlopen of that name would return the first
 * library. An open descriptor also keeps its file's inode from being
 * reused, so (device, inode) names one file for as long as it is kept. */
static struct kept_fd {
    dev_t dev;
    ino_t ino;
    int fd;
} *kept;
static size_t n_kept, cap_kept;
static pthread_mutex_t kept_mu = PTHREAD_MUTEX_INITIALIZER;

/* The descriptor to load fd's file through: one kept for that file already
 * (fd is closed), else fd, now kept; -1 when out of memory (fd closed). */
static int kept_fd_of(int fd) {
    struct stat st;
    if (fstat(fd, &st) != 0) return close(fd), -1;
    pthread_mutex_lock(&kept_mu);
    int use = fd;
    for (size_t i = 0; i < n_kept && use == fd; i++)
        if (kept[i].dev == st.st_dev && kept[i].ino == st.st_ino) use = kept[i].fd;
    if (use == fd && n_kept == cap_kept) {
        const size_t cap = cap_kept ? 2 * cap_kept : 16;
        struct kept_fd *p = realloc(kept, cap * sizeof p[0]);
        if (p != NULL) kept = p, cap_kept = cap;
    }
    if (use == fd && n_kept < cap_kept) kept[n_kept++] = (struct kept_fd){st.st_dev, st.st_ino, fd};
    else if (use == fd) use = -1;
    pthread_mutex_unlock(&kept_mu);
    if (use != fd) close(fd);
    return use;
}

void *rt_dl_open_fd(int fd, char *err, size_t err_size) {
    char why[256];
    if (check_elf(fd, why, sizeof why) != NULL) {
        if (err_size > 0) snprintf(err, err_size, "%s", why); /* the caller names the file */
        close(fd);
        return NULL;
    }
#if defined(__linux__)
    if ((fd = kept_fd_of(fd)) < 0) {
        if (err_size > 0) snprintf(err, err_size, "no memory to keep its descriptor");
        return NULL;
    }
#endif
    /* The descriptor, not the name: the file checked is the file loaded,
     * whatever happens to its name meanwhile. Where the system has no
     * /proc/self/fd (macOS), the name the walk resolved is loaded; every
     * component of it was checked to be changeable by trusted users only. */
    char by_fd[64];
#if defined(__linux__)
    snprintf(by_fd, sizeof by_fd, "/proc/self/fd/%d", fd);
#else
    if (fcntl(fd, F_GETPATH, by_fd) == -1) by_fd[0] = '\0';
#endif
    /* RTLD_LOCAL: two plugins may define the same internal names; RTLD_NOW:
     * an unresolved symbol fails here, not in the middle of a graph. */
    void *dl = by_fd[0] ? dlopen(by_fd, RTLD_NOW | RTLD_LOCAL) : NULL;
    if (dl == NULL && err_size > 0) {
        const char *msg = by_fd[0] ? dlerror() : "its path cannot be had from its descriptor";
        snprintf(err, err_size, "%s", msg != NULL ? msg : "unknown dlopen failure");
    }
#if !defined(__linux__)
    close(fd); /* loaded by name: the descriptor has done its part */
#endif
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

/* Opening a plugin: one walk from "/" to the file, a component at a time,
 * as sudo and ssh's StrictModes check a path, but on descriptors so that
 * nothing checked can be swapped before it is used. Each name is looked at
 * in the directory already opened (fstatat, not following a symlink) and
 * checked; a symlink is checked as itself (its owner can point it
 * elsewhere) and its target walked in its place; a directory or the file
 * is opened with O_NOFOLLOW and must be the object checked (device and
 * inode). The file's descriptor is what rt_dl_open_fd loads. */

#define WALK_DEPTH 64
#define WALK_LINKS 40

typedef struct walk {
    int fd[WALK_DEPTH];           /* the directories open, fd[depth - 1] the current one */
    struct stat st[WALK_DEPTH];
    size_t shown_len[WALK_DEPTH]; /* shown's length at each */
    int depth, links;
    char shown[4096];             /* the path walked, for messages */
    char todo[8192];              /* what is left to walk */
} walk_t;

#ifndef O_PATH
#define O_PATH O_RDONLY /* macOS: a directory opened for reading does as well */
#endif

static void walk_pop(walk_t *w) {
    close(w->fd[--w->depth]);
    w->shown[w->shown_len[w->depth - 1]] = '\0';
}

static bool walk_push(walk_t *w, int fd, const struct stat *st, const char *name) {
    if (w->depth == WALK_DEPTH) return close(fd), false;
    const size_t n = strlen(w->shown);
    snprintf(w->shown + n, sizeof w->shown - n, "%s%s", n > 1 ? "/" : "", name);
    w->fd[w->depth] = fd;
    w->st[w->depth] = *st;
    w->shown_len[w->depth++] = strlen(w->shown);
    return true;
}

/* The next name of todo into name (false: none left); *last when nothing follows it. */
static bool walk_next(char **p, char *name, size_t size, bool *last) {
    while (**p == '/') (*p)++;
    if (**p == '\0') return false;
    const size_t n = strcspn(*p, "/");
    snprintf(name, size, "%.*s", (int)n, *p);
    *p += n;
    const char *rest = *p;
    while (*rest == '/') rest++;
    *last = *rest == '\0';
    return true;
}

/* The child's path for a message (cut short past size). */
static const char *child_path(const walk_t *w, const char *name, char *buf, size_t size) {
    const int n = snprintf(buf, size, "%s%s", w->shown, strcmp(w->shown, "/") ? "/" : "");
    if (n >= 0 && (size_t)n < size) snprintf(buf + n, size - (size_t)n, "%s", name);
    return buf;
}

/* A symlink at name: checked, then its target put before the rest of todo. */
static int walk_link(walk_t *w, const char *name, const struct stat *lst, char **p, char *why, size_t size) {
    char path[4096], target[4096], rest[8192];
    if (component_unsafe(child_path(w, name, path, sizeof path), lst, NULL, why, size)) return -1;
    const ssize_t n = readlinkat(w->fd[w->depth - 1], name, target, sizeof target - 1);
    if (n < 0 || ++w->links > WALK_LINKS) {
        snprintf(why, size, "%s: %s", path, n < 0 ? strerror(errno) : "too many symlinks");
        return -2;
    }
    target[n] = '\0';
    snprintf(rest, sizeof rest, "%s", *p);
    const size_t nt = strlen(target), nr = strlen(rest);
    if (nt + 1 + nr >= sizeof w->todo) {
        snprintf(why, size, "%s: its target makes the path too long", path);
        return -2;
    }
    memcpy(w->todo, target, nt);
    w->todo[nt] = '/';
    memcpy(w->todo + nt + 1, rest, nr + 1);
    *p = w->todo;
    while (target[0] == '/' && w->depth > 1) walk_pop(w); /* an absolute target starts again at "/" */
    return 0;
}

/* Opens name in the current directory, which must still be the object
 * lst describes; a directory is pushed, the file's descriptor returned. */
static int walk_open(walk_t *w, const char *name, const struct stat *lst, bool last, char *why, size_t size) {
    char path[4096];
    const int flags = last ? O_RDONLY | O_NONBLOCK | O_NOCTTY : O_PATH | O_DIRECTORY;
    const int fd = openat(w->fd[w->depth - 1], name, flags | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_dev != lst->st_dev || st.st_ino != lst->st_ino) {
        snprintf(why, size, "%s: %s", child_path(w, name, path, sizeof path),
                 fd < 0 ? strerror(errno) : "changed while it was being checked");
        if (fd >= 0) close(fd);
        return -2;
    }
    if (!last) return walk_push(w, fd, &st, name) ? 0 : (snprintf(why, size, "%s: too deep", w->shown), -2);
    if (component_unsafe(child_path(w, name, path, sizeof path), &st, NULL, why, size)) {
        close(fd);
        return -1;
    }
    return fd;
}

/* One step of the walk: -1 unsafe, -2 cannot be opened, 0 go on, > 0 the file's descriptor. */
static int walk_step(walk_t *w, char **p, char *why, size_t size) {
    char name[256];
    bool last = false;
    if (!walk_next(p, name, sizeof name, &last)) return snprintf(why, size, "%s: not a file", w->shown), -2;
    if (strcmp(name, ".") == 0 && !last) return 0;
    if (strcmp(name, "..") == 0 && !last) {
        if (w->depth > 1) walk_pop(w);
        return 0;
    }
    struct stat lst;
    char path[4096];
    if (fstatat(w->fd[w->depth - 1], name, &lst, AT_SYMLINK_NOFOLLOW) != 0)
        return snprintf(why, size, "%s: %s", child_path(w, name, path, sizeof path), strerror(errno)), -2;
    /* a child of an untrusted owner is named as such (its directory would
       be refused for it too, when sticky); then the directory we are in,
       now that its child is known (the sticky rule) */
    if (!trusted_owner(lst.st_uid) &&
        component_unsafe(child_path(w, name, path, sizeof path), &lst, NULL, why, size))
        return -1;
    if (component_unsafe(w->shown, &w->st[w->depth - 1], &lst, why, size)) return -1;
    if (S_ISLNK(lst.st_mode)) return walk_link(w, name, &lst, p, why, size);
    return walk_open(w, name, &lst, last, why, size);
}

int rt_os_open_plugin(const char *path, bool *refused, char *why, size_t size) {
    walk_t w = {.depth = 0};
    char cwd[4096];
    *refused = false;
    if (path[0] != '/' && getcwd(cwd, sizeof cwd) == NULL) return snprintf(why, size, "no working directory"), -1;
    snprintf(w.todo, sizeof w.todo, "%s%s%s", path[0] == '/' ? "" : cwd, path[0] == '/' ? "" : "/", path);
    struct stat st;
    const int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root < 0 || fstat(root, &st) != 0) return snprintf(why, size, "/: %s", strerror(errno)), -1;
    w.fd[0] = root, w.st[0] = st, w.shown_len[0] = 1, w.depth = 1;
    snprintf(w.shown, sizeof w.shown, "/");
    char *p = w.todo;
    int r = 0;
    while (r == 0) r = walk_step(&w, &p, why, size);
    while (w.depth > 0) close(w.fd[--w.depth]);
    *refused = r == -1;
    return r > 0 ? r : -1;
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
