/* SPDX-License-Identifier: MIT */
/* tools_os.h: what the tools ask of the operating system, behind one small
 * interface: tools_os_linux.c answers it on Linux, tools_os_darwin.c on
 * macOS (./configure picks one). */
#ifndef RT_TOOLS_OS_H
#define RT_TOOLS_OS_H

#include <stdbool.h>
#include <stddef.h>

/* The running executable's absolute path into buf; false when unknown. */
bool rt_tools_exe_path(char *buf, size_t size);
/* Processors this process may run on (its affinity mask), >= 1. */
int rt_tools_cpu_count(void);
/* The OS id of the i-th processor this process may run on, or -1 (also
 * where the OS cannot pin threads). */
int rt_tools_cpu_nth(int i);
/* Pins the calling thread to processor cpu; cpu < 0 lets it run on every
 * processor of the process's mask again. Does nothing where the OS has no
 * pinning. */
void rt_tools_pin_self(int cpu);
/* Asks for size bytes at p to be backed by huge pages where the OS offers
 * them (a hint: nothing happens elsewhere). */
void rt_tools_advise_huge(void *p, size_t size);

#endif /* RT_TOOLS_OS_H */
