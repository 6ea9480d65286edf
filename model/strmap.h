/* SPDX-License-Identifier: MIT */
/* strmap.h: a map from byte strings to int32 values, for the vocabulary
 * (token text -> id) and the BPE merges ("left right" -> rank). Open
 * addressing with linear probing, FNV-1a hashes. Keys are borrowed: the
 * bytes must outlive the map (they are the vocabulary's own strings).
 * Lookups take (pointer, length), so a piece of a larger text is looked up
 * without copying it. Read-only after it is filled, so any number of
 * threads may look up at once. */
#ifndef RTM_STRMAP_H
#define RTM_STRMAP_H

#include "internal.h"

typedef struct rtm_strmap_slot {
    const char *key;  /* NULL: empty slot */
    uint32_t len;     /* bytes of key */
    int32_t value;
} rtm_strmap_slot_t;

typedef struct rtm_strmap {
    rtm_strmap_slot_t *slots;
    size_t mask;      /* slot count - 1; the count is a power of two */
} rtm_strmap_t;

/* Room for n keys at most half full. RT_ERR_OUT_OF_MEMORY. */
RTM_INTERNAL rt_status_t rtm_strmap_init(rtm_strmap_t *m, size_t n);
RTM_INTERNAL void rtm_strmap_deinit(rtm_strmap_t *m);
/* Adds key -> value. When key is there already, replace says who wins:
 * the later value (llama.cpp's token_to_id[word] = i) or the earlier one
 * (its bpe_ranks.emplace). */
RTM_INTERNAL void rtm_strmap_put(rtm_strmap_t *m, const char *key, size_t len, int32_t value,
                                 bool replace);
/* The value of key, or -1. */
RTM_INTERNAL int32_t rtm_strmap_get(const rtm_strmap_t *m, const char *key, size_t len);

#endif /* RTM_STRMAP_H */
