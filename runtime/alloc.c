/* SPDX-License-Identifier: MIT */
/* alloc.c: the default allocator and the helpers every runtime file uses to
 * reach whichever allocator it was given. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

static void *default_realloc(void *user_data, void *ptr, size_t old_size, size_t new_size) {
    (void)user_data;
    (void)old_size;
    if (new_size == 0) {
        free(ptr);
        return NULL;
    }
    return realloc(ptr, new_size);
}

static const rt_allocator_t default_allocator = {default_realloc, NULL};

const rt_allocator_t *rt_allocator_default(void) { return &default_allocator; }

void *rt_mem_alloc(const rt_allocator_t *a, size_t size) {
    if (size == 0) return NULL;
    if (a == NULL || a->realloc == NULL) a = &default_allocator;
    return a->realloc(a->user_data, NULL, 0, size);
}

void *rt_mem_calloc(const rt_allocator_t *a, size_t size) {
    void *p = rt_mem_alloc(a, size);
    if (p != NULL) memset(p, 0, size);
    return p;
}

void rt_mem_free(const rt_allocator_t *a, void *ptr, size_t size) {
    if (ptr == NULL) return;
    if (a == NULL || a->realloc == NULL) a = &default_allocator;
    a->realloc(a->user_data, ptr, size, 0);
}

char *rt_mem_strdup(const rt_allocator_t *a, const char *s) {
    if (s == NULL) return NULL;
    const size_t n = strlen(s) + 1;
    char *d = rt_mem_alloc(a, n);
    if (d != NULL) memcpy(d, s, n);
    return d;
}

void rt_mem_free_str(const rt_allocator_t *a, char *s) {
    if (s != NULL) rt_mem_free(a, s, strlen(s) + 1);
}
