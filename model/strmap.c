/* SPDX-License-Identifier: MIT */
/* strmap.c: see strmap.h. The table is sized once for the count the caller
 * announces, so it never grows. */
#include "strmap.h"

#include <stdlib.h>
#include <string.h>

static uint64_t hash_bytes(const char *s, size_t len) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return h;
}

rt_status_t rtm_strmap_init(rtm_strmap_t *m, size_t n) {
    size_t cap = 16;
    while (cap < 2 * n) cap *= 2;
    m->slots = calloc(cap, sizeof m->slots[0]);
    m->mask = cap - 1;
    if (m->slots == NULL)
        return rtm_error(RT_ERR_OUT_OF_MEMORY, "rtm_strmap_init: no memory for %zu keys", n);
    return RT_OK;
}

void rtm_strmap_deinit(rtm_strmap_t *m) {
    free(m->slots);
    m->slots = NULL;
    m->mask = 0;
}

/* The slot holding key, or the empty slot where it would go. */
static rtm_strmap_slot_t *find_slot(const rtm_strmap_t *m, const char *key, size_t len) {
    size_t i = (size_t)hash_bytes(key, len) & m->mask;
    for (;;) {
        rtm_strmap_slot_t *s = &m->slots[i];
        if (s->key == NULL || (s->len == len && memcmp(s->key, key, len) == 0)) return s;
        i = (i + 1) & m->mask;
    }
}

void rtm_strmap_put(rtm_strmap_t *m, const char *key, size_t len, int32_t value, bool replace) {
    rtm_strmap_slot_t *s = find_slot(m, key, len);
    if (s->key != NULL && !replace) return;
    s->key = key;
    s->len = (uint32_t)len;
    s->value = value;
}

int32_t rtm_strmap_get(const rtm_strmap_t *m, const char *key, size_t len) {
    if (m->slots == NULL) return -1;
    const rtm_strmap_slot_t *s = find_slot(m, key, len);
    return s->key != NULL ? s->value : -1;
}
