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

/* The bounds of the weight-only types (no case quantises into them; the
 * reference quantisers of the K-quants search their sub-block scales, whose
 * own 4 to 6 bits widen the error) are half a level of the type's step at
 * the block's scale, doubled for the K-quants.
 *  X(TYPE,  codec,  block,      error bound) */
#define CF_QUANT_TYPES(X)                    \
    X(Q8_0, q8_0, RT_QK8_0, 1.0 / 254)       \
    X(Q4_0, q4_0, RT_QK4_0, 1.0 / 8)         \
    X(Q4_1, q4_1, RT_QK4_1, 1.0 / 15)        \
    X(Q5_0, q5_0, RT_QK5_0, 1.0 / 16)        \
    X(Q5_1, q5_1, RT_QK5_1, 1.0 / 31)        \
    X(IQ4_NL, iq4_nl, RT_QK4_NL, 1.0 / 8)    \
    X(Q2_K, q2_k, RT_QK_K, 1.0 / 2)          \
    X(Q3_K, q3_k, RT_QK_K, 1.0 / 4)          \
    X(Q4_K, q4_k, RT_QK_K, 1.0 / 8)          \
    X(Q5_K, q5_k, RT_QK_K, 1.0 / 16)         \
    X(Q6_K, q6_k, RT_QK_K, 1.0 / 32)         \
    X(IQ4_XS, iq4_xs, RT_QK_K, 1.0 / 8)

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
