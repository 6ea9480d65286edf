/* SPDX-License-Identifier: MIT */
/* types.h: what the conformance library knows of each element type: its
 * name, block size and bytes, and its codec, one block at a time. The
 * quantised types' codecs are abi/rt_quant.h's reference ones, so the
 * reference reads and writes every format as the contract defines it,
 * independently of the plugin under test. A new quantised type is one
 * X(...) entry of CF_QUANT_TYPES: its RT_TYPE_ suffix, the rt_quant.h name
 * of its block codecs, its block size, and the largest error of one element
 * as a fraction of its block's max |x| (the bound quantising copies are
 * held to). */
#ifndef RT_CONFORM_TYPES_H
#define RT_CONFORM_TYPES_H

#include "../../abi/rt_quant.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*  X(TYPE, codec,  block,      error bound) */
#define CF_QUANT_TYPES(X)                  \
    X(Q8_0, q8_0, RT_QK8_0, 1.0 / 254)     \
    X(Q4_0, q4_0, RT_QK4_0, 1.0 / 8)

/* The largest block of any type above. */
#define CF_MAX_BLCK 256

typedef struct cf_type {
    rt_type_t type;
    const char *name;
    int64_t blck;      /* elements per block (1: a plain type) */
    size_t bytes;      /* bytes per block */
    double step;       /* quantised: error bound as a fraction of max |x| */
    void (*decode)(const void *block, float *y);   /* blck elements */
    void (*encode)(const float *x, void *block);
} cf_type_t;

/* NULL for a type the library does not know. */
const cf_type_t *cf_type(rt_type_t t);

#endif /* RT_CONFORM_TYPES_H */
