/* SPDX-License-Identifier: MIT */
/* evil.c: a plugin that stands for another user's code: its constructor,
 * which runs inside dlopen before any check of the plugin's answers could,
 * creates the file RT_TEST_EVIL_MARKER names. test-security's race
 * (security-8) looks for that file. Built from abi/ alone. */
#include "../../abi/rt_plugin.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void evil_on_load(void) {
    const char *marker = getenv("RT_TEST_EVIL_MARKER");
    const int fd = marker ? open(marker, O_WRONLY | O_CREAT | O_CLOEXEC, 0644) : -1;
    if (fd >= 0) close(fd);
}

RT_PLUGIN_EXPORT const rt_plugin_t *rt_plugin_query(uint32_t max_abi, const rt_host_t *host) {
    (void)max_abi, (void)host;
    return NULL;
}
