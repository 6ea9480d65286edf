/* SPDX-License-Identifier: MIT */
/* bundled_model.c: see bundled_model.h. The executable's own directory
 * (/proc/self/exe) anchors the lookup, so the tools find the model from any
 * working directory, in the build tree and installed alike. */
#include "bundled_model.h"
#include "tools_os.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define BUNDLED_MODEL "stories260K.gguf"

/* Places relative to the executable's directory, in order. */
static const char *const beside_exe[] = {"../../models", "../share/rt"};

const char *rt_tools_bundled_model(char *buf, size_t size) {
    char exe[PATH_MAX];
    if (rt_tools_exe_path(exe, sizeof exe)) {
        char *slash = strrchr(exe, '/');
        if (slash) *slash = 0;
        for (size_t i = 0; i < sizeof beside_exe / sizeof beside_exe[0]; i++) {
            const int len = snprintf(buf, size, "%s/%s/%s", exe, beside_exe[i], BUNDLED_MODEL);
            if (len > 0 && (size_t)len < size && access(buf, R_OK) == 0) return buf;
        }
    }
    snprintf(buf, size, "models/%s", BUNDLED_MODEL);
    return buf;
}
