/* SPDX-License-Identifier: MIT */
/* secure-probe.c: a helper of tests/test-security.c. Prints whether the
 * kernel started this process in secure-execution mode (AT_SECURE: setuid,
 * setgid or file capabilities) and the plugin search path the registry
 * builds from the environment it was given. test-security runs a setgid
 * copy of it with RT_PLUGIN_PATH set, which must not reach the path. It
 * is linked with an absolute run path: a secure process ignores $ORIGIN. */
#include "../abi/rt.h"

#include <stdio.h>
#if defined(__linux__)
#  include <sys/auxv.h>
#  define PROBE_SECURE() getauxval(AT_SECURE)
#else
#  include <unistd.h>
#  define PROBE_SECURE() (unsigned long)issetugid() /* the BSDs' and macOS's word for it */
#endif

int main(void) {
    rt_registry_options_t opt = {.struct_size = sizeof opt, .no_scan = true};
    rt_registry_t *reg = NULL;
    if (rt_registry_create(&opt, &reg) != RT_OK) {
        fprintf(stderr, "secure-probe: %s\n", rt_last_error());
        return 1;
    }
    printf("at_secure=%lu\nsearch_path=%s\n", PROBE_SECURE(), rt_registry_search_path(reg));
    rt_registry_destroy(reg);
    return 0;
}
