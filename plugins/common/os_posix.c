/* SPDX-License-Identifier: MIT */
/* os_posix.c: plugin_os.h on POSIX (dlopen, pthreads, getenv). */
#include "plugin_os.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

_Static_assert(sizeof(pthread_mutex_t) <= sizeof(((rt_plugin_mutex_t *)0)->storage),
               "rt_plugin_mutex_t too small for pthread_mutex_t");

void *rt_plugin_dl_open(const char *name, char *err, size_t err_size) {
    void *dl = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!dl && err_size) {
        const char *e = dlerror();
        snprintf(err, err_size, "%s", e ? e : "dlopen failed");
    }
    return dl;
}

void *rt_plugin_dl_sym(void *dl, const char *name) { return dl ? dlsym(dl, name) : NULL; }

void rt_plugin_dl_close(void *dl) {
    if (dl) dlclose(dl);
}

static pthread_mutex_t *native(rt_plugin_mutex_t *m) { return (pthread_mutex_t *)(void *)m->storage; }

bool rt_plugin_mutex_init(rt_plugin_mutex_t *m) { return pthread_mutex_init(native(m), NULL) == 0; }

void rt_plugin_mutex_deinit(rt_plugin_mutex_t *m) { pthread_mutex_destroy(native(m)); }

void rt_plugin_mutex_lock(rt_plugin_mutex_t *m) { pthread_mutex_lock(native(m)); }

void rt_plugin_mutex_unlock(rt_plugin_mutex_t *m) { pthread_mutex_unlock(native(m)); }

void rt_plugin_call_once(void (*fn)(void)) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, fn);
}

const char *rt_plugin_getenv(const char *name) { return getenv(name); }
