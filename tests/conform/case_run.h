/* SPDX-License-Identifier: MIT */
/* case_run.h: the conformance library's private interface between its
 * parts: an input as the op sees it (the leaf, the view, and the library's
 * own picture of both), building the inputs and the op (inputs.c,
 * build.c), the reference (ref.c), and the failure reports that run.c
 * routes to the suite's callback. */
#ifndef RT_CONFORM_CASE_RUN_H
#define RT_CONFORM_CASE_RUN_H

#include "conform.h"

typedef struct cf_input {
    const cf_src_t *spec;
    rt_tensor_t *base;   /* the leaf that owns the bytes */
    rt_tensor_t *t;      /* what the op sees: base or a view of it */
    layout_t base_lay;   /* the library's picture of base */
    layout_t lay;        /* the library's picture of t */
    rt_op_t view_op;     /* the op t must carry (RT_OP_NONE for the base) */
    uint8_t *bytes;      /* the base's bytes as uploaded */
} cf_input_t;

/* One failing check, to the running suite's report callback. */
void cf_report(const char *fmt, ...) RT_PRINTF(1, 2);

/* inputs.c */
void cf_make_input(rt_context_t *ctx, const cf_src_t *s, cf_input_t *in);
bool cf_fill_input(cf_input_t *in, uint64_t *rng);
bool cf_upload(const cf_input_t *in);
double cf_in_at(const cf_input_t *in, int64_t i0, int64_t i1, int64_t i2, int64_t i3);
bool cf_header_is(const char *label, const char *what, const rt_tensor_t *t, const layout_t *l);
bool cf_check_view(const char *label, const cf_input_t *in);

/* build.c */
rt_tensor_t *cf_build_op(rt_context_t *ctx, rt_op_t op, const cf_case_t *c, const cf_input_t *in);
layout_t cf_expect_out(rt_op_t op, const cf_case_t *c, const cf_input_t *in);
bool cf_check_params(const char *label, rt_op_t op, const cf_case_t *c, const rt_tensor_t *t);

/* ref.c: the reference values of the checked tensor chk into ref; for
 * copies also its expected bytes (*want_bytes, malloc'd, else NULL). */
void cf_compute_ref(rt_op_t op, const cf_case_t *c, const cf_input_t *in, const layout_t *chk, double *ref,
                    uint8_t **want_bytes);
/* a's elements in logical order, as floats (every source type is exact in F32). */
float *cf_logical_floats(const cf_input_t *a);

#endif /* RT_CONFORM_CASE_RUN_H */
