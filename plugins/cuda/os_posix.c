/* SPDX-License-Identifier: MIT */
/* os_posix.c: what the CUDA plugin needs from the operating system, behind
 * the small interface in cuda_impl.h: opening cuBLAS at run time (so that a
 * machine without it still runs MUL_MAT on the plugin's kernels), mutexes
 * and the environment. */
#include "cuda_impl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

_Static_assert(sizeof(pthread_mutex_t) <= sizeof(((rt_cu_mutex_t *)0)->storage),
               "rt_cu_mutex_t too small for pthread_mutex_t");

void *rt_cu_dl_open(const char *name, char *err, size_t err_size) {
    void *dl = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!dl && err_size) {
        const char *e = dlerror();
        snprintf(err, err_size, "%s", e ? e : "dlopen failed");
    }
    return dl;
}

void *rt_cu_dl_sym(void *dl, const char *name) { return dl ? dlsym(dl, name) : NULL; }

void rt_cu_dl_close(void *dl) {
    if (dl) dlclose(dl);
}

bool rt_cu_mutex_init(rt_cu_mutex_t *m) {
    return pthread_mutex_init((pthread_mutex_t *)(void *)m->storage, NULL) == 0;
}

void rt_cu_mutex_deinit(rt_cu_mutex_t *m) { pthread_mutex_destroy((pthread_mutex_t *)(void *)m->storage); }

void rt_cu_mutex_lock(rt_cu_mutex_t *m) { pthread_mutex_lock((pthread_mutex_t *)(void *)m->storage); }

void rt_cu_mutex_unlock(rt_cu_mutex_t *m) { pthread_mutex_unlock((pthread_mutex_t *)(void *)m->storage); }

const char *rt_cu_getenv(const char *name) { return getenv(name); }
