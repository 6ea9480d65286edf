/* SPDX-License-Identifier: MIT */
/* minimal_plugin.c: the "minimal plugin" of abi/rt_plugin.h's header
 * comment, compiled as it stands there (the build cuts the lines between
 * its BEGIN and END markers into minimal_plugin.inc), with stub slots
 * around it so that it links into a loadable plugin with no device.
 * tests/test-abi-compat.c loads it, so the example in the manual is
 * one that works. */
#include "../../abi/rt_plugin.h"

static void my_destroy(void *plugin) { (void)plugin; }

static rt_status_t my_create(const rt_host_t *host, void **out_plugin) {
    (void)host;
    static int instance;
    *out_plugin = &instance;
    return RT_OK;
}

static uint32_t my_device_count(void *plugin) {
    (void)plugin;
    return 0;
}

static rt_status_t my_device_get(void *plugin, uint32_t index, void **out_device,
                                 const rt_device_vtable_t **out_vtable) {
    (void)plugin;
    (void)index;
    *out_device = NULL;
    *out_vtable = NULL;
    return RT_ERR_INVALID_ARGUMENT;
}

#include "minimal_plugin.inc"
