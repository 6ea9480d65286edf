/* SPDX-License-Identifier: MIT */
/* struct_copy.c: the two normalisation steps of the struct_size rules
 * (abi/rt_base.h, rules 1 and 9). Plugin tables are copied out with
 * rt_struct_copy; every struct an application hands in is copied in with
 * rt_struct_copy_in, where a struct_size of 0 means the struct's 1.0
 * layout. Either way the rest of the core reads a zero-filled struct of the
 * size it knows, every field freely. */
#include "internal.h"

#include <string.h>

/* A field only partly inside src_size is not copied either: half a
 * function pointer is worse than none. Every struct that crosses abi/
 * holds a pointer or a 64-bit field, so its size, and every honest
 * struct_size, is a multiple of 8; a shorter source is cut to one. */
void rt_struct_copy(void *dst, size_t dst_size, const void *src, size_t src_size) {
    size_t n = src_size < dst_size ? src_size : dst_size;
    if (n < dst_size) n &= ~(size_t)7;
    memcpy(dst, src, n);
    memset((char *)dst + n, 0, dst_size - n);
}

void rt_struct_copy_in(void *dst, size_t dst_size, const void *src, size_t size_1_0) {
    if (src == NULL) {
        memset(dst, 0, dst_size);
    } else {
        uint32_t size;
        memcpy(&size, src, sizeof size); /* struct_size leads every such struct */
        rt_struct_copy(dst, dst_size, src, size != 0 ? size : size_1_0);
    }
    const uint32_t own = (uint32_t)dst_size;
    memcpy(dst, &own, sizeof own);
}

void rt_struct_copy_out(void *dst, const void *src, size_t src_size, size_t size_1_0) {
    uint32_t size;
    memcpy(&size, dst, sizeof size);
    if (size == 0) size = (uint32_t)size_1_0;
    rt_struct_copy(dst, size, src, src_size);
    memcpy(dst, &size, sizeof size); /* the caller's size stays: it says what it can hold */
}
