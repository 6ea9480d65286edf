/* SPDX-License-Identifier: MIT */
/* os_posix.c: what the Vulkan plugin needs from the operating system, behind
 * the small interface in vk_impl.h: opening the Vulkan loader at run time
 * (so that a machine without one still loads the plugin, which then reports
 * no devices) and mutexes. */
#include "vk_impl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

_Static_assert(sizeof(pthread_mutex_t) <= sizeof(((rt_vk_mutex_t *)0)->storage),
               "rt_vk_mutex_t too small for pthread_mutex_t");

void *rt_vk_dl_open(const char *name, char *err, size_t err_size) {
    void *dl = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!dl && err_size) {
        const char *e = dlerror();
        snprintf(err, err_size, "%s", e ? e : "dlopen failed");
    }
    return dl;
}

void *rt_vk_dl_sym(void *dl, const char *name) { return dl ? dlsym(dl, name) : NULL; }

void rt_vk_dl_close(void *dl) {
    if (dl) dlclose(dl);
}

bool rt_vk_mutex_init(rt_vk_mutex_t *m) {
    return pthread_mutex_init((pthread_mutex_t *)(void *)m->storage, NULL) == 0;
}

void rt_vk_mutex_deinit(rt_vk_mutex_t *m) { pthread_mutex_destroy((pthread_mutex_t *)(void *)m->storage); }

void rt_vk_mutex_lock(rt_vk_mutex_t *m) { pthread_mutex_lock((pthread_mutex_t *)(void *)m->storage); }

void rt_vk_mutex_unlock(rt_vk_mutex_t *m) { pthread_mutex_unlock((pthread_mutex_t *)(void *)m->storage); }

void rt_vk_call_once(void (*fn)(void)) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, fn);
}
