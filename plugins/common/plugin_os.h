/* SPDX-License-Identifier: MIT */
/* plugin_os.h: what the GPU plugins need from the operating system, one
 * small interface shared by the cuda and vulkan plugins (each links its
 * own copy of os_posix.c, hidden inside its shared object): opening a
 * library at run time (the CUDA plugin's cuBLAS, the Vulkan plugin's
 * loader, so that a machine without them still loads the plugin), mutexes
 * in storage the plugin owns, a once-per-process call and the environment.
 * A port to another OS is one more os_<os>.c. */
#ifndef RT_PLUGIN_OS_H
#define RT_PLUGIN_OS_H

#include <stdbool.h>
#include <stddef.h>

#define RT_PLUGIN_OS_INTERNAL __attribute__((visibility("hidden")))

/* Storage for a mutex; os_posix.c checks that the OS's fits. */
typedef struct rt_plugin_mutex {
    _Alignas(8) unsigned char storage[64];
} rt_plugin_mutex_t;

/* A library opened with its symbols resolved now and kept local; NULL with
 * the loader's message in err (err_size bytes, 0: none) when it fails. */
RT_PLUGIN_OS_INTERNAL void *rt_plugin_dl_open(const char *name, char *err, size_t err_size);
/* NULL when dl is NULL or lacks the symbol. */
RT_PLUGIN_OS_INTERNAL void *rt_plugin_dl_sym(void *dl, const char *name);
RT_PLUGIN_OS_INTERNAL void rt_plugin_dl_close(void *dl); /* NULL-safe */
RT_PLUGIN_OS_INTERNAL bool rt_plugin_mutex_init(rt_plugin_mutex_t *m);
RT_PLUGIN_OS_INTERNAL void rt_plugin_mutex_deinit(rt_plugin_mutex_t *m);
RT_PLUGIN_OS_INTERNAL void rt_plugin_mutex_lock(rt_plugin_mutex_t *m);
RT_PLUGIN_OS_INTERNAL void rt_plugin_mutex_unlock(rt_plugin_mutex_t *m);
/* Runs fn once per plugin, however many threads call; one caller per
 * plugin (the Vulkan plugin's instance). */
RT_PLUGIN_OS_INTERNAL void rt_plugin_call_once(void (*fn)(void));
/* The value of an environment variable, NULL when unset. */
RT_PLUGIN_OS_INTERNAL const char *rt_plugin_getenv(const char *name);

#endif /* RT_PLUGIN_OS_H */
