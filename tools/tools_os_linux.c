/* SPDX-License-Identifier: MIT */
/* tools_os_linux.c: tools_os.h on Linux: /proc/self/exe, the affinity mask
 * of the process (sched_getaffinity, read once), pthread_setaffinity_np. */
#include "tools_os.h"

#include <pthread.h>
#include <sys/mman.h>
#include <sched.h>
#include <unistd.h>

bool rt_tools_exe_path(char *buf, size_t size) {
    if (size == 0) return false;
    const ssize_t n = readlink("/proc/self/exe", buf, size - 1);
    if (n <= 0) return false;
    buf[n] = '\0';
    return true;
}

/* The mask the process started with (the tools pin threads later). */
static const cpu_set_t *tools_mask(void) {
    static cpu_set_t mask;
    static int have = -1;
    if (have < 0) have = sched_getaffinity(0, sizeof mask, &mask) == 0;
    return have ? &mask : NULL;
}

int rt_tools_cpu_count(void) {
    const cpu_set_t *m = tools_mask();
    const int n = m ? CPU_COUNT(m) : 0;
    return n > 0 ? n : 1;
}

int rt_tools_cpu_nth(int i) {
    const cpu_set_t *m = tools_mask();
    for (int c = 0, seen = 0; m && c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, m) && seen++ == i) return c;
    return -1;
}

void rt_tools_pin_self(int cpu) {
    const cpu_set_t *m = tools_mask();
    if (!m || cpu >= CPU_SETSIZE) return;
    cpu_set_t set;
    if (cpu < 0) {
        set = *m;
    } else {
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
    }
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

void rt_tools_advise_huge(void *p, size_t size) {
    if (p != NULL) madvise(p, size, MADV_HUGEPAGE);
}
