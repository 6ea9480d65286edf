/* SPDX-License-Identifier: MIT */
/* memory.c: the Vulkan plugin's host memory helpers, every allocation
 * through the host's allocator (zeroed blocks, freeing with the size,
 * growing arrays). Nothing of Vulkan here: the Metal plugin links this
 * file too. */
#include "vk_impl.h"

#include <string.h>

void *rt_vk_alloc(const rt_host_t *host, size_t size) {
    void *p = host->allocator.realloc(host->allocator.user_data, NULL, 0, size);
    if (p) memset(p, 0, size);
    return p;
}

void rt_vk_free(const rt_host_t *host, void *p, size_t size) {
    if (p) host->allocator.realloc(host->allocator.user_data, p, size, 0);
}

bool rt_vk_grow(const rt_host_t *host, void **items, uint32_t *cap, uint32_t need, size_t elem) {
    if (need <= *cap) return true;
    uint32_t n = *cap ? *cap : 8;
    while (n < need) n *= 2;
    void *p = host->allocator.realloc(host->allocator.user_data, *items, (size_t)*cap * elem,
                                      (size_t)n * elem);
    if (!p) return false;
    memset((char *)p + (size_t)*cap * elem, 0, (size_t)(n - *cap) * elem);
    *items = p;
    *cap = n;
    return true;
}
