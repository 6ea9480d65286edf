/* SPDX-License-Identifier: MIT */
/* mmap_posix.c: rt_mmap_file and rt_munmap (mmap.h) on POSIX systems. The
 * descriptor is closed once the mapping exists; the mapping alone keeps
 * the file's pages reachable. */
#include "mmap.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

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
    return RT_OK;
}

rt_status_t rt_mmap_file(const char *path, rt_mapping_t *out_map) {
    out_map->addr = NULL;
    out_map->size = 0;
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
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
    if (map->addr != NULL) munmap((void *)map->addr, map->size);
    map->addr = NULL;
    map->size = 0;
}
