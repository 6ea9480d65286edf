/* SPDX-License-Identifier: MIT */
/* nmse.h: the normalised error every numerical check of the tests uses,
 * sqrt(sum (got-ref)^2) / sqrt(sum ref^2) (ggml's test-backend-ops
 * measure), header-only for the cmocka tests and the conformance library
 * alike. 0 when equal; ref all zero gives the absolute norm; NaN anywhere
 * gives infinity. */
#ifndef RT_CONFORM_NMSE_H
#define RT_CONFORM_NMSE_H

#include <math.h>
#include <stddef.h>

static inline double cf_nmse(const double *ref, const float *got, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        const double d = (double)got[i] - ref[i];
        num += d * d;
        den += ref[i] * ref[i];
    }
    if (isnan(num)) return INFINITY;
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

#endif /* RT_CONFORM_NMSE_H */
