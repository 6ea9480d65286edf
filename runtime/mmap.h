/* SPDX-License-Identifier: MIT */
/* mmap.h: the OS interface for mapping a whole file read-only, so that the
 * GGUF reader stays free of OS calls. mmap_posix.c implements it; a Windows
 * port adds mmap_win.c behind the same two functions. */
#ifndef RT_MMAP_H
#define RT_MMAP_H

#include "internal.h"

/* A read-only view of a whole file. An empty file maps as addr NULL, size 0. */
typedef struct rt_mapping {
    const void *addr; /* the file's first byte */
    size_t size;      /* bytes */
} rt_mapping_t;

/* Maps |path|. RT_ERR_NOT_FOUND when it does not exist; RT_ERR_IO when it
 * cannot be opened, is not a regular file, or cannot be mapped. The message
 * names the path and the OS's reason. */
RT_INTERNAL rt_status_t rt_mmap_file(const char *path, rt_mapping_t *out_map);
/* Gives back the whole pages inside [offset, offset + size) of the mapping
 * (nothing for a zeroed mapping); reading them afterwards faults, and the
 * addresses stay reserved until rt_munmap. */
RT_INTERNAL void rt_mmap_release(const rt_mapping_t *map, uint64_t offset, uint64_t size);
/* Unmaps and zeroes *map; accepts a zeroed mapping. */
RT_INTERNAL void rt_munmap(rt_mapping_t *map);

#endif /* RT_MMAP_H */
