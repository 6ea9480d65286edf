/* SPDX-License-Identifier: MIT */
/* testutil.c: see testutil.h. */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

void tu_seed(uint64_t seed) { rng_state = seed ? seed : 0x9e3779b97f4a7c15ull; }

uint64_t tu_next(void) {
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}

float tu_uniform(float lo, float hi) {
    const double u = (double)(tu_next() >> 11) * (1.0 / 9007199254740992.0);
    return (float)(lo + (hi - lo) * u);
}

void tu_fill(float *x, size_t n, float lo, float hi) {
    for (size_t i = 0; i < n; i++) x[i] = tu_uniform(lo, hi);
}

double tu_nmse_error(const double *ref, const float *got, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        const double d = (double)got[i] - ref[i];
        num += d * d;
        den += ref[i] * ref[i];
    }
    if (isnan(num)) return INFINITY;
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

double tu_max_abs_error(const double *ref, const float *got, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        const double d = fabs((double)got[i] - ref[i]);
        if (!(d <= m)) m = d; /* NaN propagates */
    }
    return m;
}

const char *tu_build_dir(void) {
    const char *b = getenv("RT_TEST_BUILD_DIR");
    return b != NULL && *b ? b : "build";
}

static rt_registry_t *registry;

static void destroy_registry(void) {
    rt_registry_destroy(registry);
    registry = NULL;
}

rt_registry_t *tu_registry(void) {
    if (registry == NULL) {
        rt_status_t st = rt_registry_create(NULL, &registry);
        if (st != RT_OK) {
            fprintf(stderr, "rt_registry_create: %s: %s\n", rt_status_name(st), rt_last_error());
            return NULL;
        }
        atexit(destroy_registry);
    }
    return registry;
}

rt_device_t *tu_cpu_device(void) {
    rt_registry_t *reg = tu_registry();
    assert_non_null(reg);
    rt_device_t *dev = rt_registry_device_by_name(reg, "cpu0");
    if (dev == NULL) fail_msg("the CPU plugin's device cpu0 is not loaded");
    return dev;
}

jmp_buf *tu_abort_target;
char tu_abort_message[2048];

void tu_abort_hook(const char *message, void *user_data) {
    (void)user_data;
    snprintf(tu_abort_message, sizeof tu_abort_message, "%s", message);
    if (tu_abort_target != NULL) longjmp(*tu_abort_target, 1);
}

rt_context_t *tu_context(size_t mb, bool no_alloc) {
    rt_context_t *ctx = NULL;
    rt_context_params_t p = {.struct_size = sizeof p, .mem_size = mb << 20, .no_alloc = no_alloc};
    assert_int_equal(rt_context_create(&p, &ctx), RT_OK);
    return ctx;
}
