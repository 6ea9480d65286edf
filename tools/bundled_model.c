/* SPDX-License-Identifier: MIT */
/* bundled_model.c: see bundled_model.h. */
#include "bundled_model.h"
#include "tools_os.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define BUNDLED_MODEL "shared/models/stories260K.gguf"

const char *rt_tools_bundled_model(char *buf, size_t size) {
    char exe[PATH_MAX];
    if (rt_tools_exe_path(exe, sizeof exe)) {
        char *slash = strrchr(exe, '/');
        if (slash) *slash = 0;
        const int len = snprintf(buf, size, "%s/../../../%s", exe, BUNDLED_MODEL);
        if (len > 0 && (size_t)len < size && access(buf, R_OK) == 0) return buf;
    }
    snprintf(buf, size, "../%s", BUNDLED_MODEL);
    return buf;
}
