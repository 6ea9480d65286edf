/* SPDX-License-Identifier: MIT */
/* layout.h: the conformance library's own picture of a tensor's bytes,
 * written from the stride rules of docs/memory.md and the block layouts of
 * abi/rt_tensor.h, independent of the library's headers: contiguous
 * strides, permutes, addresses, and reading or writing any type as numbers
 * (through types.h's codecs). Every input is built twice (with the API and
 * with this) and results are read through this. */
#ifndef RT_CONFORM_LAYOUT_H
#define RT_CONFORM_LAYOUT_H

#include "../../abi/rt.h"

/* Element (i0..i3) of a layout lies at base + offs + (i0/blck)*nb0 + i1*nb1
 * + i2*nb2 + i3*nb3 (element i0 % blck of that block). */
typedef struct layout {
    rt_type_t type;
    int64_t ne[4];
    size_t nb[4];   /* bytes */
    size_t offs;    /* bytes from the base tensor's first byte */
} layout_t;

bool lay_is_quant(rt_type_t t);
int64_t lay_blck(rt_type_t t);
size_t lay_type_bytes(rt_type_t t);
const char *lay_type_str(rt_type_t t);
void lay_norm_ne(const int64_t in[4], int64_t out[4]);
int lay_ne_dims(const int64_t ne[4]);
layout_t lay_contig(rt_type_t type, const int64_t ne[4]);
int64_t lay_nelem(const layout_t *l);
size_t lay_span(const layout_t *l);
layout_t lay_permute(const layout_t *l, const int axes[4]);
void lay_unravel(int64_t flat, const int64_t ne[4], int64_t idx[4]);
size_t lay_addr(const layout_t *l, const int64_t idx[4]);
double lay_decode(rt_type_t type, const uint8_t *p, int64_t in_block);
bool lay_encode(rt_type_t type, uint8_t *p, float v);
double lay_get(const layout_t *l, const uint8_t *base, const int64_t idx[4]);
void lay_read(const layout_t *l, const uint8_t *base, double *out);
void lay_write(const layout_t *l, uint8_t *base, const float *v);
const char *lay_str(const layout_t *l, char *buf, size_t size);

#endif /* RT_CONFORM_LAYOUT_H */
