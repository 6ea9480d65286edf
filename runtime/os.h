/* SPDX-License-Identifier: MIT */
/* os.h: what the core asks of the operating system, one interface that
 * dl_posix.c implements (and another OS's file would): the dynamic loader,
 * the environment, directories, paths and who may write them, globs and
 * mutexes. No other runtime file calls the OS for these. */
#ifndef RT_OS_H
#define RT_OS_H

#include "internal.h"

/* Loads the shared object open on fd (from rt_os_open_plugin) after
 * checking it is a whole one of this machine's class; takes fd (closed,
 * or kept open for as long as the process lives: one per file). NULL
 * with the reason in err. */
RT_INTERNAL void *rt_dl_open_fd(int fd, char *err, size_t err_size);
RT_INTERNAL void *rt_dl_sym(void *dl, const char *name);
RT_INTERNAL void rt_dl_close(void *dl);
/* Directory of the shared object that contains this function ("" if
 * unknown), written into buf. */
RT_INTERNAL const char *rt_dl_self_dir(char *buf, size_t size);
/* ".so", or ".dylib" on macOS: what plugin file names end in. */
RT_INTERNAL const char *rt_dl_suffix(void);
/* getenv, but NULL in setuid/setgid processes. */
RT_INTERNAL const char *rt_secure_getenv(const char *name);
/* Calls fn with the name of every entry of dir; false when dir cannot be
 * opened (missing: not an error for a search path). */
RT_INTERNAL bool rt_os_list_dir(const char *dir, void (*fn)(void *ctx, const char *name),
                                void *ctx);
/* The canonical absolute path of path into buf; false when it does not
 * resolve. */
RT_INTERNAL bool rt_os_realpath(const char *path, char *buf, size_t size);
/* Opens the plugin file at path for rt_dl_open_fd, walking it from "/"
 * without following a name twice: -1, with the reason in why, when it
 * cannot be opened, or (*refused) when an untrusted user (anyone but root,
 * the current user and the owner of librtcore's file) could change it:
 * the file, a directory on the way, or a symlink on the way (its own
 * owner) is owned by such a user or is world-writable (a sticky directory
 * only above a component with a trusted owner). */
RT_INTERNAL int rt_os_open_plugin(const char *path, bool *refused, char *why, size_t size);
/* Starts the plugin at path in a child process (probe_posix.c) that waits
 * at most timeout_s: RT_OK when the child came back, whether or not the
 * plugin loaded; RT_ERR_DEVICE with the reason (signal, exit status or
 * time-out, and the last step logged) when it died, exited or hung. */
RT_INTERNAL rt_status_t rt_os_probe_plugin(const char *path, double timeout_s, char *reason, size_t size);
/* Shell-style glob match of name against pattern (fnmatch). */
RT_INTERNAL bool rt_os_glob_match(const char *pattern, const char *name);
/* A mutex in memory from a; NULL on failure. Destroy accepts NULL. */
RT_INTERNAL void *rt_os_mutex_create(const rt_allocator_t *a);
RT_INTERNAL void rt_os_mutex_destroy(const rt_allocator_t *a, void *m);
RT_INTERNAL void rt_os_mutex_lock(void *m);
RT_INTERNAL void rt_os_mutex_unlock(void *m);

#endif /* RT_OS_H */
