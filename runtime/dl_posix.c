/* SPDX-License-Identifier: MIT */
/* dl_posix.c: the operating-system services the plugin registry needs, for
 * POSIX systems: dlopen and friends, where the core library itself lives,
 * the environment as a setuid process may read it, directory listing, path
 * canonicalisation, who may write a plugin file, glob matching and a mutex.
 * Nothing above this file includes an OS header for these. */
#include "registry_impl.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fnmatch.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

//===--- dynamic loading ---===//

void *rt_dl_open(const char *path, char *err, size_t err_size) {
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

/* Why a user other than root and the current one can change the file or
 * directory st describes (into why), or false when none can. World-writable
 * is refused with or without the sticky bit: in a directory, the sticky bit
 * still lets anyone add a plugin file. Group-writable is the owner's choice
 * when the owner is root or the current user (umask 002 with per-user
 * groups); otherwise the owner is absent from the decision. */
static bool mode_lets_others_write(const struct stat *st, const char *what, const char *path,
                                   char *why, size_t size) {
    const mode_t mode = st->st_mode & 07777;
    const bool own = st->st_uid == 0 || st->st_uid == geteuid();
    if ((mode & S_IWOTH) != 0)
        snprintf(why, size, "%s %s is writable by every user (mode %04o)", what, path,
                 (unsigned)mode);
    else if ((mode & S_IWGRP) != 0 && !own)
        snprintf(why, size, "%s %s is writable by group %u and owned by uid %u, neither root "
                 "nor the current user (mode %04o)", what, path, (unsigned)st->st_gid,
                 (unsigned)st->st_uid, (unsigned)mode);
    else
        return false;
    return true;
}

static bool dir_lets_others_write(const char *file, char *why, size_t size) {
    char dir[4096];
    struct stat st;
    const char *slash = strrchr(file, '/');
    const size_t n = slash == NULL ? 1 : slash == file ? 1 : (size_t)(slash - file);
    if (n + 1 > sizeof dir) return false;
    memcpy(dir, slash == NULL ? "." : file, n);
    dir[n] = '\0';
    return stat(dir, &st) == 0 && mode_lets_others_write(&st, "directory", dir, why, size);
}

bool rt_os_writable_by_others(const char *path, char *why, size_t size) {
    char real[4096];
    struct stat st;
    if (size > 0) why[0] = '\0';
    /* The directory as named (a symlink in it can be swapped), then the
     * file and the directory it really lives in. */
    if (dir_lets_others_write(path, why, size)) return true;
    if (stat(path, &st) != 0 || realpath(path, real) == NULL) return false; /* dlopen says why */
    if (mode_lets_others_write(&st, "file", real, why, size)) return true;
    return dir_lets_others_write(real, why, size);
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
