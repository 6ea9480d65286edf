/* SPDX-License-Identifier: MIT */
/* test-cpu-os.c: the CPU plugin's default thread count. The cgroup quota
 * reader (plugins/cpu/cgroup.c, linked in) is run on fake hierarchies
 * written to a temporary directory, the shapes Linux mounts: cgroup v2
 * with a quota, "max", a parent tighter than its child; cgroup v1's
 * cfs_quota_us under a "cpu,cpuacct" mount; no cgroup file at all. The
 * plugin's default queue then runs on this machine with no more threads
 * than the affinity mask has processors.
 *
 *   cpu-os-1  v2 quotas: rounded up, "max" is none, the smallest ancestor wins
 *   cpu-os-2  v1 quotas, -1 is none; no file or a garbled one is none
 *   cpu-os-3  the default thread count is within the affinity mask
 *   cpu-os-4  a large CPU buffer is backed by huge pages where Linux gives
 *             them on request (transparent huge pages "madvise" or "always") */
#include "testutil.h"

#include "../plugins/cpu/cpu.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PATH_SIZE 1024

static void put(const char *dir, const char *name, const char *text) {
    char path[2 * PATH_SIZE];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

/* out (PATH_SIZE bytes) = dir/name, created. */
static void mkdir_in(char *out, const char *dir, const char *name) {
    assert_true(snprintf(out, PATH_SIZE, "%s/%s", dir, name) < PATH_SIZE);
    assert_true(mkdir(out, 0700) == 0);
}

static void test_v2(void **state) {
    (void)state;
    char root[PATH_SIZE], a[PATH_SIZE], b[PATH_SIZE], self[PATH_SIZE + 16];
    assert_int_equal(tu_tmpdir_make(root, sizeof root, "rt-cgroup"), 0);
    mkdir_in(a, root, "a");
    mkdir_in(b, a, "b");
    snprintf(self, sizeof self, "%s/self", root);
    put(root, "self", "0::/a/b\n");
    put(b, "cpu.max", "250000 100000\n"); /* 2.5 CPUs: 3 threads */
    assert_int_equal(rt_cpu_cgroup_cpus(root, self), 3);
    put(b, "cpu.max", "max 100000\n");
    assert_int_equal(rt_cpu_cgroup_cpus(root, self), 0);
    put(a, "cpu.max", "100000 100000\n"); /* the parent's 1 CPU binds the child */
    assert_int_equal(rt_cpu_cgroup_cpus(root, self), 1);
    put(b, "cpu.max", "50000 100000\n");
    assert_int_equal(rt_cpu_cgroup_cpus(root, self), 1);
    put(root, "cpu.max", "800000 100000\n"); /* a looser root changes nothing */
    assert_int_equal(rt_cpu_cgroup_cpus(root, self), 1);
    assert_int_equal(tu_tmpdir_remove(root), 0);
}

static void test_v1_and_none(void **state) {
    (void)state;
    char root[PATH_SIZE], mnt[PATH_SIZE], c[PATH_SIZE], self[PATH_SIZE + 16];
    assert_int_equal(tu_tmpdir_make(root, sizeof root, "rt-cgroup"), 0);
    mkdir_in(mnt, root, "cpu,cpuacct");
    mkdir_in(c, mnt, "job");
    snprintf(self, sizeof self, "%s/self", root);
    put(root, "self", "9:name=systemd:/\n4:memory:/job\n2:cpu,cpuacct:/job\n");
    put(c, "cpu.cfs_quota_us", "400000\n");
    put(c, "cpu.cfs_period_us", "100000\n");
    assert_int_equal(rt_cpu_cgroup_cpus(root, self), 4);
    put(c, "cpu.cfs_quota_us", "-1\n");
    assert_int_equal(rt_cpu_cgroup_cpus(root, self), 0);
    put(c, "cpu.cfs_quota_us", "garbage\n");
    assert_int_equal(rt_cpu_cgroup_cpus(root, self), 0);
    put(root, "self", "2:cpuacct:/job\n"); /* cpuacct alone is not cpu */
    put(c, "cpu.cfs_quota_us", "100000\n");
    assert_int_equal(rt_cpu_cgroup_cpus(root, self), 0);
    snprintf(self, sizeof self, "%s/absent", root);
    assert_int_equal(rt_cpu_cgroup_cpus(root, self), 0);
    assert_int_equal(tu_tmpdir_remove(root), 0);
}

static void test_default_count(void **state) {
    (void)state;
    const int32_t n = rt_cpu_os_count();
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    assert_true(n >= 1);
    if (online > 0) assert_true(n <= online);
    tu_report("default CPU threads here: %d of %ld online", (int)n, online);
}

/* Whether transparent huge pages are given to memory that asks (the mode
 * in brackets is "madvise" or "always"). */
static bool thp_on_request(void) {
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (f == NULL) return false;
    char line[128] = "";
    const bool read = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    return read && (strstr(line, "[madvise]") != NULL || strstr(line, "[always]") != NULL);
}

/* The kB of AnonHugePages in the mapping that holds addr (/proc/self/smaps),
 * -1 when none is found. */
static long huge_kb_at(uintptr_t addr) {
    FILE *f = fopen("/proc/self/smaps", "r");
    if (f == NULL) return -1;
    char line[512];
    bool inside = false;
    long kb = -1;
    while (fgets(line, sizeof line, f) != NULL) {
        uintmax_t lo, hi;
        if (sscanf(line, "%jx-%jx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
            inside = addr >= lo && addr < hi;
            continue;
        }
        if (inside && sscanf(line, "AnonHugePages: %ld kB", &kb) == 1) break;
    }
    fclose(f);
    return kb;
}

static void test_huge_pages(void **state) {
    (void)state;
    if (!thp_on_request()) { /* macOS, or a Linux with THP "never" */
        print_message("cpu-os-4: no transparent huge pages on request here: skipped\n");
        skip();
    }
    const size_t size = 32u << 20;
    rt_buffer_t *buf = NULL;
    assert_int_equal(rt_buffer_alloc(rt_device_buffer_type(tu_cpu_device(), 0), size, &buf), RT_OK);
    char *base = rt_buffer_base(buf);
    memset(base, 1, size); /* first touch: the pages are given now */
    const long kb = huge_kb_at((uintptr_t)base + size / 2);
    rt_buffer_free(buf);
    if (kb < 2048)
        fail_msg("cpu-os-4: a %zu MiB CPU buffer holds %ld kB of huge pages, want at least one 2 MiB page",
                 size >> 20, kb);
    tu_report("cpu-os-4: a 32 MiB CPU buffer holds %ld kB of huge pages", kb);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_v2),
        cmocka_unit_test(test_v1_and_none),
        cmocka_unit_test(test_default_count),
        cmocka_unit_test(test_huge_pages),
    };
    return cmocka_run_group_tests_name("cpu-os", tests, NULL, NULL);
}
