/* SPDX-License-Identifier: MIT */
/* sched_state.c: what every file of the scheduler asks of its shared
 * state (sched_impl.h), in one place, so the passes (sched_assign.c) and
 * the split (sched_split.c) ask and never call each other: a tensor's
 * device slot, whether its bytes were placed by the caller (weights, a KV
 * cache) and in which buffer, whether a device can read them there, and
 * the growable arrays of splits, inputs and copies. */
#include "sched_impl.h"

//===--- the arrays ---===//

bool rt_sched_grow(rt_sched_t *s, void **at, int32_t *cap, int32_t n, size_t elem) {
    if (n <= *cap) return true;
    const int32_t want = n > 2 * *cap ? n : 2 * *cap;
    void *p = s->allocator.realloc(s->allocator.user_data, *at, (size_t)*cap * elem,
                                   (size_t)want * elem);
    if (p == NULL) return false;
    *at = p;
    *cap = want;
    return true;
}

//===--- per-tensor state ---===//

int32_t *rt_sched_device_slot(rt_sched_t *s, const rt_tensor_t *t) {
    size_t slot = rt_hash_find(&s->hash, t);
    if (slot == RT_HASH_NONE) {
        slot = rt_hash_insert(&s->hash, t);
        s->n_keys++;
    }
    return &s->tensor_device[slot];
}

int32_t rt_sched_device_of(const rt_sched_t *s, const rt_tensor_t *t) {
    const size_t slot = t != NULL ? rt_hash_find(&s->hash, t) : RT_HASH_NONE;
    return slot == RT_HASH_NONE ? -1 : s->tensor_device[slot];
}

static bool is_compute_buffer(const rt_sched_t *s, const rt_buffer_t *buf) {
    for (int32_t d = 0; d < s->n_devices; d++)
        if (buf == rt_gallocr_get_buffer(s->galloc, d)) return true;
    return false;
}

/* The buffer of t's bytes when someone else placed them, or NULL. Bytes in
 * the scheduler's compute buffers count as unplaced: the next alloc_graph
 * places them anew, so a graph split again is split as the first time. */
const rt_buffer_t *rt_sched_placed_buffer(const rt_sched_t *s, const rt_tensor_t *t) {
    const rt_buffer_t *buf = t->view_src != NULL ? t->view_src->buffer : t->buffer;
    return buf != NULL && !is_compute_buffer(s, buf) ? buf : NULL;
}

/* Weights, a KV cache, any leaf whose bytes the caller put in a buffer of
 * its own: the scheduler never moves them, it brings readers to them or
 * copies them to readers elsewhere. */
bool rt_sched_is_caller_placed(const rt_sched_t *s, const rt_tensor_t *t) {
    const rt_tensor_t *base = t->view_src != NULL ? t->view_src : t;
    return base->op == RT_OP_NONE && !(base->flags & RT_TENSOR_FLAG_INPUT) &&
           rt_sched_placed_buffer(s, base) != NULL;
}

bool rt_sched_buffer_supported(const rt_sched_t *s, const rt_tensor_t *t, int32_t d) {
    const rt_buffer_t *buf = rt_sched_placed_buffer(s, t);
    const rt_buffer_type_t *buft = NULL;
    if (buf != NULL) {
        buft = rt_buffer_get_type(buf);
    } else {
        int32_t td = rt_sched_device_of(s, t);
        if (td < 0 && t->view_src != NULL) td = rt_sched_device_of(s, t->view_src);
        if (td >= 0) buft = s->bufts[td];
    }
    return buft != NULL && rt_device_supports_buft(s->devices[d], buft);
}
