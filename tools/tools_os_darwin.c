/* SPDX-License-Identifier: MIT */
/* tools_os_darwin.c: tools_os.h on macOS: _NSGetExecutablePath, every
 * online processor, and no pinning (macOS has no affinity masks). Not yet
 * built on a Mac in CI (tests/device/metal.sh builds it). */
#include "tools_os.h"

#include <mach-o/dyld.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool rt_tools_exe_path(char *buf, size_t size) {
    char raw[4096];
    uint32_t n = sizeof raw;
    if (size == 0 || _NSGetExecutablePath(raw, &n) != 0) return false;
    char *real = realpath(raw, NULL);
    const char *path = real ? real : raw;
    const bool fits = strlen(path) < size;
    if (fits) memcpy(buf, path, strlen(path) + 1);
    free(real);
    return fits;
}

int rt_tools_cpu_count(void) {
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

int rt_tools_cpu_nth(int i) {
    (void)i;
    return -1;
}

void rt_tools_pin_self(int cpu) { (void)cpu; }

void rt_tools_advise_huge(void *p, size_t size) { (void)p, (void)size; }
