/* SPDX-License-Identifier: MIT */
/* rng.h: the tests' one random generator (xorshift64*), header-only so that
 * the cmocka tests (testutil.c) and the conformance library (which the
 * tools link too) draw the same numbers on every machine for a seed. */
#ifndef RT_CONFORM_RNG_H
#define RT_CONFORM_RNG_H

#include <stdint.h>

/* A seed of 0 would stay 0 forever: it stands for a fixed odd constant. */
static inline uint64_t cf_rng_init(uint64_t seed) { return seed ? seed : 0x9e3779b97f4a7c15ull; }

static inline uint64_t cf_rng_next(uint64_t *s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545f4914f6cdd1dull;
}

/* Uniform in [lo, hi), from the top 53 bits. */
static inline float cf_rng_uniform(uint64_t *s, float lo, float hi) {
    const double u = (double)(cf_rng_next(s) >> 11) * (1.0 / 9007199254740992.0);
    return (float)(lo + (hi - lo) * u);
}

#endif /* RT_CONFORM_RNG_H */
