/* SPDX-License-Identifier: MIT */
/* dl_posix.c: the operating-system services the plugin registry needs, for
 * POSIX systems: dlopen and friends, where the core library itself lives,
 * the environment as a setuid process may read it, directory listing, path
 * canonicalisation, glob matching and a mutex. Nothing above this file
 * includes an OS header for these. */
#include "registry_impl.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fnmatch.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
