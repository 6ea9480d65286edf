/* SPDX-License-Identifier: MIT */
/* mmap_posix.c: rt_mmap_file and rt_munmap (mmap.h) on POSIX systems. The
 * descriptor is opened without blocking (a FIFO would otherwise wait for a
 * writer forever) and closed once the mapping exists; the mapping alone
 * keeps the file's pages reachable. A file cut shorter while mapped makes
 * the next read of a lost page raise SIGBUS: the mappings are listed, and
 * a SIGBUS handler (installed only where the program has none) says which
 * file changed before the signal takes its default course. */
#include "mmap.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

//===--- the mappings a SIGBUS can come from ---===//

#define MAX_WATCHED 64

/* A slot is in use while addr is not NULL; addr is written last on
 * insertion and first on removal, so the handler never reads a slot whose
 * path is half written. */
typedef struct watched {
    const char *volatile addr;
    size_t size;
    char path[256];
} watched_t;

static watched_t watched[MAX_WATCHED];
static pthread_mutex_t watched_lock = PTHREAD_MUTEX_INITIALIZER;

static void on_sigbus(int sig, siginfo_t *info, void *uctx) {
    (void)uctx;
    const char *a = info->si_addr;
    for (int i = 0; i < MAX_WATCHED; i++) {
        const char *lo = watched[i].addr;
        if (lo == NULL || a < lo || a >= lo + watched[i].size) continue;
        static const char pre[] = "rt: SIGBUS reading ";
        static const char post[] = ": the file changed (was cut shorter?) while mapped\n";
        ssize_t ignored = write(2, pre, sizeof pre - 1);
        ignored = write(2, watched[i].path, strnlen(watched[i].path, sizeof watched[i].path));
        ignored = write(2, post, sizeof post - 1);
        (void)ignored;
        break;
    }
    /* The default action on return: the faulting read runs again. */
    signal(sig, SIG_DFL);
}

static void install_sigbus(void) {
    static bool installed;
    struct sigaction old, sa = {.sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO};
    if (installed) return;
    installed = true;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGBUS, NULL, &old) == 0 && old.sa_handler == SIG_DFL && !(old.sa_flags & SA_SIGINFO))
        sigaction(SIGBUS, &sa, NULL);
}

static void watch(const void *addr, size_t size, const char *path) {
    pthread_mutex_lock(&watched_lock);
    install_sigbus();
    for (int i = 0; i < MAX_WATCHED; i++) {
        if (watched[i].addr != NULL) continue;
        watched[i].size = size;
        snprintf(watched[i].path, sizeof watched[i].path, "%s", path);
        watched[i].addr = addr;
        break;
    }
    pthread_mutex_unlock(&watched_lock);
}

static void unwatch(const void *addr) {
    pthread_mutex_lock(&watched_lock);
    for (int i = 0; i < MAX_WATCHED; i++)
        if (watched[i].addr == addr) watched[i].addr = NULL;
    pthread_mutex_unlock(&watched_lock);
}

//===--- mapping ---===//

static rt_status_t map_fd(int fd, const char *path, rt_mapping_t *out_map) {
    struct stat st;
    if (fstat(fd, &st) != 0)
        return rt_error(RT_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode)) return rt_error(RT_ERR_IO, "%s: not a regular file", path);
    if (st.st_size == 0) return RT_OK; /* mmap refuses length 0 */
    if ((uint64_t)st.st_size > SIZE_MAX)
        return rt_error(RT_ERR_IO, "%s: %lld bytes do not fit in the address space", path,
                        (long long)st.st_size);
    void *addr = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (addr == MAP_FAILED)
        return rt_error(RT_ERR_IO, "%s: cannot map %lld bytes: %s", path, (long long)st.st_size,
                        strerror(errno));
    out_map->addr = addr;
    out_map->size = (size_t)st.st_size;
    watch(addr, (size_t)st.st_size, path);
    return RT_OK;
}

rt_status_t rt_mmap_file(const char *path, rt_mapping_t *out_map) {
    out_map->addr = NULL;
    out_map->size = 0;
    const int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        const int err = errno;
        return rt_error(err == ENOENT ? RT_ERR_NOT_FOUND : RT_ERR_IO, "%s: cannot open: %s", path,
                        strerror(err));
    }
    const rt_status_t st = map_fd(fd, path, out_map);
    close(fd);
    return st;
}

void rt_mmap_release(const rt_mapping_t *map, uint64_t offset, uint64_t size) {
    if (map->addr == NULL || offset >= map->size) return;
    if (size > map->size - offset) size = map->size - offset;
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    const uintptr_t lo = ((uintptr_t)map->addr + offset + page - 1) / page * page;
    const uintptr_t hi = ((uintptr_t)map->addr + offset + size) / page * page;
    /* Replace the file pages with an inaccessible anonymous reservation
     * rather than unmapping them: the memory goes back all the same, but
     * the addresses stay ours, so nobody else (a driver's JIT) can be
     * mapped into the hole and then unmapped by the final rt_munmap. */
    if (lo < hi)
        mmap((void *)lo, hi - lo, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE,
             -1, 0);
}

void rt_munmap(rt_mapping_t *map) {
    if (map->addr != NULL) {
        unwatch(map->addr);
        munmap((void *)map->addr, map->size);
    }
    map->addr = NULL;
    map->size = 0;
}
