/* SPDX-License-Identifier: MIT */
/* cgroup.c: how many processors' worth of time a Linux cgroup CPU quota
 * gives this process (cpu.h, "the operating system"). A container limited
 * to 2 CPUs on a 64-core machine still sees 64 processors in its affinity
 * mask; 64 threads would then run a few at a time and wait on each other at
 * every barrier. The quota is the smallest of the cgroup's and its
 * ancestors': cgroup v2's cpu.max ("QUOTA PERIOD", or "max PERIOD"), or
 * v1's cpu.cfs_quota_us and cpu.cfs_period_us (-1: none). Plain file reads,
 * so the file compiles on every OS; only os_linux.c calls it, and the tests
 * call it on a fake hierarchy. */
#include "cpu.h"

#include <stdio.h>
#include <string.h>

#define RT_CPU_CGROUP_PATH 1024

/* dir/name into out; false when it does not fit. */
static bool rt_cpu_join(char out[RT_CPU_CGROUP_PATH], const char *dir, const char *name) {
    const int n = snprintf(out, RT_CPU_CGROUP_PATH, "%s/%s", dir, name);
    return n >= 0 && n < RT_CPU_CGROUP_PATH;
}

/* Processors' worth of quota / period, rounded up; 0 for none. */
static int32_t rt_cpu_quota_cpus(long long quota, long long period) {
    if (quota <= 0 || period <= 0) return 0;
    const long long n = (quota + period - 1) / period;
    return n > 4096 ? 4096 : (int32_t)n;
}

/* cgroup v2: dir/cpu.max; 0 when absent or "max". */
static int32_t rt_cpu_cgroup_v2(const char *dir) {
    char path[RT_CPU_CGROUP_PATH], word[32];
    long long period = 0;
    FILE *f = rt_cpu_join(path, dir, "cpu.max") ? fopen(path, "r") : NULL;
    if (!f) return 0;
    const int n = fscanf(f, "%31s %lld", word, &period);
    fclose(f);
    long long quota = 0;
    if (n != 2 || strcmp(word, "max") == 0 || sscanf(word, "%lld", &quota) != 1) return 0;
    return rt_cpu_quota_cpus(quota, period);
}

static long long rt_cpu_read_ll(const char *dir, const char *name) {
    char path[RT_CPU_CGROUP_PATH];
    long long v = -1;
    FILE *f = rt_cpu_join(path, dir, name) ? fopen(path, "r") : NULL;
    if (!f) return -1;
    if (fscanf(f, "%lld", &v) != 1) v = -1;
    fclose(f);
    return v;
}

/* cgroup v1: dir/cpu.cfs_quota_us over dir/cpu.cfs_period_us. */
static int32_t rt_cpu_cgroup_v1(const char *dir) {
    return rt_cpu_quota_cpus(rt_cpu_read_ll(dir, "cpu.cfs_quota_us"),
                             rt_cpu_read_ll(dir, "cpu.cfs_period_us"));
}

/* The smallest quota from root + rel up to root itself (a nested cgroup
 * inherits its parents' limits); 0 for none. */
static int32_t rt_cpu_cgroup_walk(const char *root, const char *rel, bool v2) {
    char dir[RT_CPU_CGROUP_PATH];
    const int len = snprintf(dir, sizeof dir, "%s%s", root, strcmp(rel, "/") == 0 ? "" : rel);
    if (len < 0 || (size_t)len >= sizeof dir) return 0;
    const size_t root_len = strlen(root);
    int32_t best = 0;
    for (;;) {
        const int32_t n = v2 ? rt_cpu_cgroup_v2(dir) : rt_cpu_cgroup_v1(dir);
        if (n > 0 && (best == 0 || n < best)) best = n;
        char *slash = strrchr(dir, '/');
        if (strlen(dir) <= root_len || !slash || (size_t)(slash - dir) < root_len) break;
        *slash = '\0';
    }
    return best;
}

/* A v1 line "ID:CONTROLLERS:PATH" whose controller list names cpu. */
static bool rt_cpu_v1_names_cpu(const char *controllers, size_t len) {
    for (size_t i = 0; i < len;) {
        size_t j = i;
        while (j < len && controllers[j] != ',') j++;
        if (j - i == 3 && strncmp(controllers + i, "cpu", 3) == 0) return true;
        i = j + 1;
    }
    return false;
}

int32_t rt_cpu_cgroup_cpus(const char *root, const char *self_cgroup) {
    FILE *f = fopen(self_cgroup, "r");
    if (!f) return 0;
    char line[RT_CPU_CGROUP_PATH], dir[RT_CPU_CGROUP_PATH];
    int32_t best = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2) continue;
        int32_t n = 0;
        if (c2 == c1 + 1 && strncmp(line, "0:", 2) == 0) {
            n = rt_cpu_cgroup_walk(root, c2 + 1, true);
        } else if (rt_cpu_v1_names_cpu(c1 + 1, (size_t)(c2 - c1 - 1))) {
            /* v1 mounts each hierarchy under its controller list's name. */
            *c2 = '\0';
            if (rt_cpu_join(dir, root, c1 + 1)) n = rt_cpu_cgroup_walk(dir, c2 + 1, false);
        }
        if (n > 0 && (best == 0 || n < best)) best = n;
    }
    fclose(f);
    return best;
}
