/* SPDX-License-Identifier: MIT */
/* os_darwin.c: what the CPU plugin asks of macOS (cpu.h, "the operating
 * system"), as os_linux.c answers it on Linux. macOS has no affinity masks
 * (thread affinity tags are hints about sharing caches, not processor
 * sets): every online processor counts and pinning is refused with
 * ENOTSUP, which the pool logs once at debug level. Memory available is
 * the free and inactive pages of the VM statistics. Not yet built on a Mac
 * in CI (tests/device/metal.sh builds it). */
#include "cpu.h"

#include <errno.h>
#include <mach/mach.h>
#include <pthread.h>
#include <unistd.h>

int32_t rt_cpu_os_count(void) {
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int32_t)n : 1;
}

int rt_cpu_os_pin(pthread_t thread, int32_t cpu) {
    (void)thread;
    (void)cpu;
    return ENOTSUP;
}

uint64_t rt_cpu_os_avail_bytes(void) {
    vm_statistics64_data_t vm;
    mach_msg_type_number_t n = HOST_VM_INFO64_COUNT;
    if (host_statistics64(mach_host_self(), HOST_VM_INFO64, (host_info64_t)&vm, &n) != KERN_SUCCESS)
        return 0;
    return ((uint64_t)vm.free_count + (uint64_t)vm.inactive_count) * (uint64_t)vm_page_size;
}

/* macOS has no such request for ordinary memory. */
void rt_cpu_os_advise_huge(void *p, size_t size) {
    (void)p, (void)size;
}
