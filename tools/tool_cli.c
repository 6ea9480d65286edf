/* SPDX-License-Identifier: MIT */
/* tool_cli.c: see tool_cli.h. The commit comes from build/gen/rt_commit.h,
 * which tools/git_commit.sh rewrites at build time only when it changes
 * (so a new commit rebuilds this file and relinks the tools, nothing
 * else). */
#include "tool_cli.h"
#include "../abi/rt.h"
#include "../model/rt_model.h"
#include "rt_commit.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

const char *rt_cli_commit(void) { return RT_GIT_COMMIT; }

bool rt_cli_find_devices(const char *tool, rt_registry_t *reg, const char *list, rt_device_t **devs,
                         int32_t max, int32_t *n_devs) {
    char name[128];
    *n_devs = 0;
    for (const char *p = list; *p;) {
        const size_t len = strcspn(p, ",");
        snprintf(name, sizeof name, "%.*s", (int)len, p);
        p += len + (p[len] == ',');
        if (!name[0]) continue;
        if (*n_devs >= max) {
            fprintf(stderr, "%s: --device names more than %d devices\n", tool, max);
            return false;
        }
        rt_device_t *dev = rt_registry_device_by_name(reg, name);
        if (dev == NULL) {
            fprintf(stderr, "%s: no device named '%s'; devices:", tool, name);
            for (int32_t i = 0; i < rt_registry_device_count(reg); i++)
                fprintf(stderr, " %s", rt_device_name(rt_registry_device(reg, i)));
            fprintf(stderr, "\n");
            return false;
        }
        devs[(*n_devs)++] = dev;
    }
    return true;
}

void rt_cli_print_version(FILE *f, const char *tool) {
    const uint32_t lib = rt_abi_version();
    fprintf(f, "%s %s (ABI %u.%u, library %s ABI %u.%u, commit %s)\n", tool, RT_VERSION_STRING,
            RT_ABI_VERSION_MAJOR, RT_ABI_VERSION_MINOR, rt_version_string(),
            RT_ABI_VERSION_GET_MAJOR(lib), RT_ABI_VERSION_GET_MINOR(lib), rt_cli_commit());
}

bool rt_cli_int(const char *tool, const char *option, const char *value, long lo, long hi,
                int32_t *out) {
    char *end;
    errno = 0;
    const long v = strtol(value, &end, 10);
    if (!errno && end != value && !*end && v >= lo && v <= hi) {
        *out = (int32_t)v;
        return true;
    }
    fprintf(stderr, "%s: %s wants an integer from %ld to %ld, not '%s'\n", tool, option, lo, hi, value);
    return false;
}

bool rt_cli_float(const char *tool, const char *option, const char *value, float *out) {
    char *end;
    const float v = strtof(value, &end);
    if (end != value && !*end) {
        *out = v;
        return true;
    }
    fprintf(stderr, "%s: %s wants a number, not '%s'\n", tool, option, value);
    return false;
}

bool rt_cli_u64(const char *tool, const char *option, const char *value, uint64_t *out) {
    char *end;
    errno = 0;
    const unsigned long long v = strtoull(value, &end, 10);
    if (!errno && end != value && !*end && value[0] != '-') {
        *out = v;
        return true;
    }
    fprintf(stderr, "%s: %s wants a non-negative integer, not '%s'\n", tool, option, value);
    return false;
}

bool rt_cli_split(const char *tool, const char *value, int32_t *out) {
    if (strcmp(value, "auto") == 0 || strcmp(value, "fastest") == 0) {
        *out = value[0] == 'a' ? RTM_SPLIT_AUTO : RTM_SPLIT_FASTEST;
        return true;
    }
    fprintf(stderr, "%s: --split knows 'auto' and 'fastest', not '%s'\n", tool, value);
    return false;
}

bool rt_cli_flash_attn(const char *tool, const char *value, int32_t *out) {
    static const struct { const char *name; int32_t mode; } modes[] = {
        {"auto", RTM_FLASH_ATTN_AUTO}, {"on", RTM_FLASH_ATTN_ON}, {"1", RTM_FLASH_ATTN_ON},
        {"off", RTM_FLASH_ATTN_OFF}, {"0", RTM_FLASH_ATTN_OFF}};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
        if (strcmp(value, modes[i].name) == 0) {
            *out = modes[i].mode;
            return true;
        }
    fprintf(stderr, "%s: --flash-attn knows 'on', 'off' and 'auto', not '%s'\n", tool, value);
    return false;
}

bool rt_cli_cache_type(const char *tool, const char *option, const char *value, int32_t *out) {
    if (strcmp(value, "f32") == 0 || strcmp(value, "f16") == 0) {
        *out = value[1] == '3' ? RT_TYPE_F32 : RT_TYPE_F16;
        return true;
    }
    fprintf(stderr, "%s: %s knows 'f32' and 'f16', not '%s'\n", tool, option, value);
    return false;
}

const char *rt_cli_option_name(char **argv, int optind_after) {
    return argv[optind_after - 1] == optarg ? argv[optind_after - 2] : argv[optind_after - 1];
}

int rt_cli_bad_usage(const char *tool) {
    fprintf(stderr, "%s: see '%s --help'\n", tool, tool);
    return 2;
}
