/* SPDX-License-Identifier: MIT */
/* instance.c: the process's Vulkan loader and instance. The loader is
 * opened with dlopen("libvulkan.so.1") (the plugin links nothing of Vulkan,
 * so a machine without a loader still loads it, with zero devices), and one
 * instance without layers is created the first time any registry starts
 * the plugin. Both live until the process exits, as ggml's Vulkan backend
 * keeps its instance: destroying the last instance makes the loader unload
 * the driver, and drivers keep memory (and threads) in globals that would
 * then dangle. lavapipe in Mesa 22 is one: its unloaded globals show up as
 * a leak under LeakSanitizer. The plugin is not unload-safe either way.
 *
 * Nothing here reaches the host table: the first start-up may come from any
 * registry, so the outcome is kept as a status and a reason for each
 * plugin to report through its own host. */
#include "vk_impl.h"

#include <stdarg.h>
#include <stdio.h>

static rt_vk_instance_t vk_instance;

static rt_status_t vk_fail(rt_status_t st, const char *fmt, ...) RT_PRINTF(2, 3);
static rt_status_t vk_fail(rt_status_t st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(vk_instance.reason, sizeof vk_instance.reason, fmt, ap);
    va_end(ap);
    return st;
}

static rt_status_t vk_fail_result(VkResult r, const char *what) {
    if (r == VK_SUCCESS) return RT_OK;
    return vk_fail(RT_ERR_DEVICE, "%s: %s (%d)", what, rt_vk_result_name(r), (int)r);
}

static rt_status_t vk_fns_load(bool after_instance) {
    rt_vk_instance_fns_t *fn = &vk_instance.fn;
    const char *missing = NULL;
    bool ok = true;
#define X(name) RT_VK_LOAD(fn, fn->vkGetInstanceProcAddr, vk_instance.instance, name)
    if (!after_instance) { RT_VK_GLOBAL_FNS(X) }
    else { RT_VK_INSTANCE_FNS(X) }
#undef X
    return ok ? RT_OK : vk_fail(RT_ERR_UNSUPPORTED, "the Vulkan loader lacks %s", missing);
}

static rt_status_t vk_loader_open(void) {
    char err[200] = "";
    vk_instance.dl = rt_plugin_dl_open("libvulkan.so.1", err, sizeof err);
    if (!vk_instance.dl) return vk_fail(RT_ERR_NOT_FOUND, "no Vulkan loader: %s", err);
    vk_instance.fn.vkGetInstanceProcAddr = (PFN_vkGetInstanceProcAddr)(void (*)(void))rt_plugin_dl_sym(
        vk_instance.dl, "vkGetInstanceProcAddr");
    if (!vk_instance.fn.vkGetInstanceProcAddr)
        return vk_fail(RT_ERR_NOT_FOUND, "libvulkan.so.1 has no vkGetInstanceProcAddr");
    return vk_fns_load(false);
}

static rt_status_t vk_instance_create(void) {
    const rt_vk_instance_fns_t *fn = &vk_instance.fn;
    uint32_t version = VK_API_VERSION_1_0;
    rt_status_t st = vk_fail_result(fn->vkEnumerateInstanceVersion(&version), "vkEnumerateInstanceVersion");
    if (st != RT_OK) return st;
    if (version < VK_API_VERSION_1_1)
        return vk_fail(RT_ERR_UNSUPPORTED, "the Vulkan loader speaks %u.%u; rt needs 1.1",
                       VK_API_VERSION_MAJOR(version), VK_API_VERSION_MINOR(version));
    vk_instance.api_version = version >= VK_API_VERSION_1_2 ? VK_API_VERSION_1_2 : VK_API_VERSION_1_1;
    const VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pApplicationName = "rt",
        .pEngineName = "rt",
        .apiVersion = vk_instance.api_version,
    };
    const VkInstanceCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .pApplicationInfo = &app,
    };
    st = vk_fail_result(fn->vkCreateInstance(&info, NULL, &vk_instance.instance), "vkCreateInstance");
    if (st == RT_OK) st = vk_fns_load(true);
    return st;
}

static void vk_instance_init(void) {
    rt_status_t st = vk_loader_open();
    if (st == RT_OK) st = vk_instance_create();
    vk_instance.status = st;
}

const rt_vk_instance_t *rt_vk_instance_get(void) {
    rt_plugin_call_once(vk_instance_init);
    return &vk_instance;
}
