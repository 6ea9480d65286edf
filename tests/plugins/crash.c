/* SPDX-License-Identifier: MIT */
/* crash.c: plugins that take their process down, for rt-devices --probe
 * (tests/test-probe.c). CRASH_AT says when: 1 in a constructor (while
 * dlopen runs), 2 in rt_plugin_query, 3 in create. CRASH_HOW says how: 1 a
 * segmentation fault, 2 abort(), 3 hang for ever, 4 exit(3), 5 exit(0) (a
 * process that ends "successfully" with nothing printed). CRASH_NAME is
 * the plugin's name. Built from abi/ alone, like any third party's. */
#include "../../abi/rt_plugin.h"

#include <stdlib.h>
#include <unistd.h>

#ifndef CRASH_AT
#  define CRASH_AT 1
#endif
#ifndef CRASH_HOW
#  define CRASH_HOW 1
#endif
#define CRASH_STR_(x) #x
#define CRASH_STR(x) CRASH_STR_(x)

/* Zero, but the compiler cannot know it: the store below really faults. */
static volatile uintptr_t crash_address;

static void crash_now(void) {
    switch (CRASH_HOW) {
    case 1: *(volatile int *)crash_address = 1; break;
    case 2: abort();
    case 3: for (;;) pause();
    case 4: exit(3);
    default: exit(0);
    }
}

#if CRASH_AT == 1
__attribute__((constructor)) static void crash_on_load(void) { crash_now(); }
#endif

static void crash_destroy(void *plugin) { (void)plugin; }

static rt_status_t crash_create(const rt_host_t *host, void **out_plugin) {
    (void)host;
    *out_plugin = NULL;
    if (CRASH_AT == 3) crash_now();
    return RT_ERR_DEVICE;
}

static uint32_t crash_device_count(void *plugin) {
    (void)plugin;
    return 0;
}

static rt_status_t crash_device_get(void *plugin, uint32_t index, void **out_device,
                                    const rt_device_vtable_t **out_vtable) {
    (void)plugin;
    (void)index;
    *out_device = NULL;
    *out_vtable = NULL;
    return RT_ERR_INVALID_ARGUMENT;
}

static const rt_plugin_vtable_t crash_vtable = {
    .struct_size = sizeof crash_vtable, .destroy = crash_destroy, .create = crash_create,
    .device_count = crash_device_count, .device_get = crash_device_get};

static const rt_plugin_t crash_plugin = {
    .struct_size = sizeof crash_plugin, .abi_version = RT_ABI_VERSION,
    .name = CRASH_STR(CRASH_NAME), .description = "a plugin that kills its process",
    .version = "0", .vtable = &crash_vtable};

RT_PLUGIN_EXPORT const rt_plugin_t *rt_plugin_query(uint32_t max_abi, const rt_host_t *host) {
    (void)host;
    if (CRASH_AT == 2) crash_now();
    return rt_plugin_negotiate(max_abi, RT_ABI_VERSION) == RT_ABI_VERSION ? &crash_plugin : NULL;
}
