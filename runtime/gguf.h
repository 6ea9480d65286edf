/* SPDX-License-Identifier: MIT */
/* gguf.h: what the GGUF reader (gguf.c) and writer (gguf_write.c) share:
 * the sizes of the format's fields and values, the one tensor-shape rule
 * both enforce, and the checked arithmetic every size and offset taken from
 * a file goes through. */
#ifndef RT_GGUF_INTERNAL_H
#define RT_GGUF_INTERNAL_H

#include "internal.h"

/* The format is little-endian and values are copied as they lie. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#  error "rt's GGUF code assumes a little-endian host"
#endif

_Static_assert(sizeof(bool) == 1, "GGUF BOOL values are copied as C bool");
_Static_assert(sizeof(float) == 4 && sizeof(double) == 8, "GGUF floats are IEEE binary32/64");

/* Smallest encodings, which bound every count by the bytes left: a key/value
 * is a key length, a type and a one-byte value; a tensor info a name length,
 * n_dims, one ne, a type and an offset; a string element its length. */
#define RT_GGUF_MIN_KV_BYTES (8u + 4u + 1u)
#define RT_GGUF_MIN_TENSOR_INFO_BYTES (8u + 4u + 8u + 4u + 8u)
#define RT_GGUF_STRING_LEN_BYTES 8u

/* Bytes of one value of a fixed-size type; 0 for STRING, ARRAY and ids
 * outside the enum. */
RT_INTERNAL size_t rt_gguf_value_size(rt_gguf_type_t type);

/* Checks a tensor's type and shape: a type rt implements, n_dims 1..4,
 * 0 <= ne[i] <= INT64_MAX, ne[0] a multiple of the block, and the bytes of
 * the tensor with every 0 counted as 1 fitting in an int64 (so that no
 * stride computed from it overflows). Returns NULL and sets *out_size to the
 * data bytes, or returns why not (a static string). */
RT_INTERNAL const char *rt_gguf_check_shape(rt_type_t type, int32_t n_dims, const int64_t *ne,
                                            uint64_t *out_size);

/* Checked arithmetic: false when the exact result does not fit. */
static inline bool rt_gguf_add(uint64_t a, uint64_t b, uint64_t *out) {
    return !__builtin_add_overflow(a, b, out);
}
static inline bool rt_gguf_mul(uint64_t a, uint64_t b, uint64_t *out) {
    return !__builtin_mul_overflow(a, b, out);
}
/* x rounded up to a multiple of align (a power of two). */
static inline bool rt_gguf_align(uint64_t x, uint64_t align, uint64_t *out) {
    if (!rt_gguf_add(x, align - 1, out)) return false;
    *out &= ~(align - 1);
    return true;
}
static inline bool rt_gguf_is_pow2(uint64_t x) { return x != 0 && (x & (x - 1)) == 0; }

#endif /* RT_GGUF_INTERNAL_H */
