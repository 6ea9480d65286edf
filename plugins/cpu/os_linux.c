/* SPDX-License-Identifier: MIT */
/* os_linux.c: what the CPU plugin asks of Linux (cpu.h, "the operating
 * system"): the processors of the process's affinity mask, which taskset
 * and cpusets narrow, capped by its cgroup CPU quota (cgroup.c: docker
 * --cpus, systemd CPUQuota); pinning a worker to one processor; the memory
 * available now. os_darwin.c answers the same on macOS. */
#include "cpu.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

static int32_t rt_cpu_os_affinity(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        const int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int32_t)n : 1;
}

int32_t rt_cpu_os_count(void) {
    const int32_t n = rt_cpu_os_affinity();
    const int32_t quota = rt_cpu_cgroup_cpus("/sys/fs/cgroup", "/proc/self/cgroup");
    return quota > 0 && quota < n ? quota : n;
}

int rt_cpu_os_pin(pthread_t thread, int32_t cpu) {
    if (cpu < 0 || cpu >= CPU_SETSIZE) return EINVAL;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(thread, sizeof set, &set);
}

uint64_t rt_cpu_os_avail_bytes(void) {
    const long page = sysconf(_SC_PAGESIZE), n = sysconf(_SC_AVPHYS_PAGES);
    return page > 0 && n > 0 ? (uint64_t)n * (uint64_t)page : 0;
}

/* A buffer streamed by a decode (the weights, the KV cache) spans tens of
 * thousands of 4 KiB pages: their TLB misses stall the kernels' reads. */
void rt_cpu_os_advise_huge(void *p, size_t size) {
#ifdef MADV_HUGEPAGE
    const uintptr_t huge = (uintptr_t)2 << 20, b = ((uintptr_t)p + huge - 1) / huge * huge;
    const uintptr_t e = ((uintptr_t)p + size) / huge * huge;
    if (e > b) (void)madvise((void *)b, e - b, MADV_HUGEPAGE);
#else
    (void)p, (void)size;
#endif
}
