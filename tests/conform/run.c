/* SPDX-License-Identifier: MIT */
/* run.c: running one case on one target. The case's one-op graph is built
 * in a no_alloc context, its inputs' views and its result's header and
 * op_params are checked against the contract, the inputs are placed by
 * rt_alloc_ctx_tensors on the device's buffer type 0 and filled from the
 * seed, and the graph runs on each of the target's queues; the result (or,
 * for copies into a destination, the destination's whole base) is read
 * back and compared with the reference. A graph API that aborts is caught
 * (the abort hook longjmps back) and reported as a failure. Every failing
 * check goes to the target's report callback with the case's label. */
#include "case_run.h"
#include "nmse.h"
#include "rng.h"
#include "types.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

//===--- failures ---===//

static const cf_target_t *target;

void cf_report(const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (target != NULL && target->report != NULL) target->report(target->user, msg);
    else fprintf(stderr, "%s\n", msg);
}

typedef struct cmp_result {
    double err;      /* normalised error over finite elements; INFINITY on an inf/nan mismatch */
    int64_t worst;   /* element with the largest difference */
} cmp_result_t;

/* Infinities must match exactly; the finite rest is measured by cf_nmse. */
static cmp_result_t compare_values(const double *ref, const double *got, int64_t n) {
    cmp_result_t r = {0, 0};
    double *rf = malloc((size_t)(n ? n : 1) * sizeof *rf), worst = -1;
    float *gf = malloc((size_t)(n ? n : 1) * sizeof *gf);
    size_t m = 0;
    bool bad_any = false;
    for (int64_t k = 0; k < n; k++) {
        const bool inf = isinf(ref[k]) || isinf(got[k]);
        const bool bad = isnan(got[k]) || (inf && ref[k] != got[k]);
        const double d = bad ? INFINITY : inf ? 0.0 : fabs(got[k] - ref[k]);
        if (d > worst) worst = d, r.worst = k;
        bad_any |= bad;
        if (inf) continue;
        rf[m] = ref[k];
        gf[m++] = (float)got[k];
    }
    r.err = bad_any ? INFINITY : cf_nmse(rf, gf, m);
    free(rf);
    free(gf);
    return r;
}

//===--- one case's state ---===//

/* Static so that it survives a longjmp out of an aborting graph builder. */
static struct case_run {
    char label[512];
    rt_context_t *ctx;
    rt_buffer_t *buf;
    rt_graph_t *graph;
    cf_input_t in[CF_MAX_SRC];
    rt_tensor_t *out;
    rt_tensor_t *chk_t;   /* the tensor whose bytes are compared */
    layout_t chk;         /* its picture */
    uint8_t *want_bytes;  /* copies: expected bytes */
    uint8_t *got_bytes;
    double *ref, *got;
    double tol, err;      /* err: the largest normalised error seen */
    bool unsupported;
} run;

static void run_free(void) {
    for (int k = 0; k < CF_MAX_SRC; k++) free(run.in[k].bytes);
    free(run.want_bytes);
    free(run.got_bytes);
    free(run.ref);
    free(run.got);
    rt_buffer_free(run.buf);
    rt_context_destroy(run.ctx);
    memset(&run, 0, sizeof run);
}

static void append_label(const char *what, const layout_t *l) {
    char s[160];
    const size_t n = strlen(run.label);
    snprintf(run.label + n, sizeof run.label - n, " %s %s", what, lay_str(l, s, sizeof s));
}

static bool check_out(rt_op_t op, const cf_case_t *c) {
    const layout_t want = cf_expect_out(op, c, run.in);
    const rt_tensor_t *t = run.out;
    if (t == NULL || t->op != op) {
        cf_report("%s: result op %d, want %d", run.label, t ? t->op : -1, op);
        return false;
    }
    append_label("->", &want);
    if (op == RT_OP_CPY && !c->ext && t->view_src != run.in[1].base) {
        cf_report("%s: the CPY result is not a view of b", run.label);
        return false;
    }
    if (op == RT_OP_SET_ROWS && t->view_src != run.in[0].base) {
        cf_report("%s: the SET_ROWS result is not a view of a", run.label);
        return false;
    }
    return cf_header_is(run.label, "result", t, &want) && cf_check_params(run.label, op, c, t);
}

/* Quantise-on-copy: every element within the format's error of the input
 * (types.h's step of its block's max |x|), plus the F16 rounding of the
 * scale (max|x| * 2^-10 with margin). */
static bool check_quant_error(const char *label, const double *got) {
    const layout_t *o = &run.chk;
    const cf_type_t *ty = cf_type(o->type);
    float *x = cf_logical_floats(&run.in[0]);
    bool ok = true;
    for (int64_t b = 0; b < lay_nelem(o) && ok; b += ty->blck) {
        double amax = 0;
        for (int64_t k = 0; k < ty->blck; k++) amax = fmax(amax, fabs(x[b + k]));
        for (int64_t k = 0; k < ty->blck && ok; k++) {
            const double err = fabs(got[b + k] - x[b + k]), bound = amax * (ty->step + 1.0 / 1024) + 1e-7;
            if (!(err <= bound)) {
                cf_report("%s: element %lld is %g for input %g: error %g > format bound %g", label,
                          (long long)(b + k), got[b + k], x[b + k], err, bound);
                ok = false;
            }
        }
    }
    free(x);
    return ok;
}

static bool run_once(rt_op_t op, int q) {
    char label[600];
    snprintf(label, sizeof label, "%s (threads %d)", run.label, target->queue_threads[q]);
    for (int k = 0; k < CF_MAX_SRC && run.in[k].spec != NULL; k++)
        if (!cf_upload(&run.in[k])) return false;
    if (run.chk_t == run.out) rt_tensor_memset(run.out, 0xff, 0, rt_nbytes(run.out)); /* NaN / -1 */
    rt_status_t st = rt_queue_compute(target->queues[q], run.graph);
    if (st == RT_OK) st = rt_tensor_get(run.chk_t, run.got_bytes, 0, lay_span(&run.chk));
    if (st != RT_OK) {
        cf_report("%s: %s: %s", label, rt_status_name(st), rt_last_error());
        return false;
    }
    lay_read(&run.chk, run.got_bytes, run.got);
    const int64_t n = lay_nelem(&run.chk);
    const cmp_result_t r = compare_values(run.ref, run.got, n);
    if (!(r.err <= run.err)) run.err = r.err;
    if (!(r.err <= run.tol)) {
        int64_t i[4];
        lay_unravel(r.worst, run.chk.ne, i);
        cf_report("%s: nmse %.3g > tol %.0e; worst at [%lld,%lld,%lld,%lld]: expected %.9g, got %.9g", label, r.err,
                  run.tol, (long long)i[0], (long long)i[1], (long long)i[2], (long long)i[3], run.ref[r.worst],
                  run.got[r.worst]);
        return false;
    }
    if (op == RT_OP_CPY && lay_is_quant(run.chk.type)) {
        if (target->strict && memcmp(run.want_bytes, run.got_bytes, lay_span(&run.chk)) != 0) {
            cf_report("%s: bytes differ from rt_quant.h's encoding of the same data", label);
            return false;
        }
        return check_quant_error(label, run.got);
    }
    return true;
}

/* A result op the device lacks (or whose types its plugin's ABI version
 * does not define) makes the case unsupported. Views are the runtime's (no
 * plugin computes them): a device that runs the result must accept them. */
static bool supported(void) {
    if (!rt_device_supports_op(target->dev, run.out)) {
        run.unsupported = true;
        return false;
    }
    for (int k = 0; k < CF_MAX_SRC && run.in[k].spec != NULL; k++)
        if (run.in[k].t != run.in[k].base && !rt_device_supports_op(target->dev, run.in[k].t)) {
            cf_report("%s: supports_op is false for input view %d (op %d)", run.label, k, run.in[k].t->op);
            return false;
        }
    return true;
}

static rt_context_t *new_context(void) {
    rt_context_t *ctx = NULL;
    const rt_context_params_t p = {.struct_size = sizeof p, .no_alloc = true,
                                   .mem_size = 32 * rt_tensor_overhead() + rt_graph_overhead(64)};
    const rt_status_t st = rt_context_create(&p, &ctx);
    if (st != RT_OK) cf_report("%s: rt_context_create: %s: %s", run.label, rt_status_name(st), rt_last_error());
    return ctx;
}

/* The graph, placed and filled, and (with_ref) the reference; false when a
 * check failed. */
static bool case_prepare(rt_op_t op, const cf_case_t *c, uint64_t seed, bool with_ref) {
    if ((run.ctx = new_context()) == NULL) return false;
    for (int k = 0; k < CF_MAX_SRC && c->src[k].ne[0] != 0; k++) {
        cf_make_input(run.ctx, &c->src[k], &run.in[k]);
        append_label((const char *[]){"a", "b", "c", "d"}[k], &run.in[k].lay);
        if (!cf_check_view(run.label, &run.in[k])) return false;
    }
    run.out = cf_build_op(run.ctx, op, c, run.in);
    if (!check_out(op, c)) return false;
    run.graph = rt_graph_create(run.ctx, 64);
    rt_graph_build_forward_expand(run.graph, run.out);
    if (!supported()) return false;
    const rt_status_t st = rt_alloc_ctx_tensors(run.ctx, rt_device_buffer_type(target->dev, 0), &run.buf);
    if (st != RT_OK) {
        cf_report("%s: rt_alloc_ctx_tensors: %s: %s", run.label, rt_status_name(st), rt_last_error());
        return false;
    }
    uint64_t rng = cf_rng_init(seed);
    for (int k = 0; k < CF_MAX_SRC && run.in[k].spec != NULL; k++)
        if (!cf_fill_input(&run.in[k], &rng)) return false;
    if (!with_ref) return true;
    /* Copies into a destination are checked over its whole base. */
    const int into = op == RT_OP_CPY && !c->ext ? 1 : op == RT_OP_SET_ROWS ? 0 : -1;
    run.chk_t = into >= 0 ? run.in[into].base : run.out;
    run.chk = into >= 0 ? run.in[into].base_lay : cf_expect_out(op, c, run.in);
    const int64_t n = lay_nelem(&run.chk);
    run.ref = malloc((size_t)n * sizeof *run.ref);
    run.got = malloc((size_t)n * sizeof *run.got);
    run.got_bytes = malloc(lay_span(&run.chk));
    cf_compute_ref(op, c, run.in, &run.chk, run.ref, &run.want_bytes);
    return true;
}

static bool case_body(rt_op_t op, const cf_case_t *c, uint64_t seed) {
    if (!case_prepare(op, c, seed, true)) return false;
    for (int q = 0; q < target->n_queues; q++)
        if (!run_once(op, q)) return false;
    return true;
}

static jmp_buf abort_jump;
static char abort_message[1024];

static void abort_hook(const char *message, void *user_data) {
    (void)user_data;
    snprintf(abort_message, sizeof abort_message, "%s", message);
    longjmp(abort_jump, 1);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Work of one run: FLOPs for MUL_MAT and FLASH_ATTN, else bytes read and written (CPY
 * writes b, so b is not read). */
static double case_work(const rt_tensor_t *o, bool *out_flops) {
    *out_flops = o->op == RT_OP_MUL_MAT || o->op == RT_OP_FLASH_ATTN;
    if (o->op == RT_OP_MUL_MAT) return 2.0 * (double)o->src[0]->ne[0] * (double)rt_nelements(o);
    if (o->op == RT_OP_FLASH_ATTN) /* q.k and p.v for every key, masked or not */
        return 2.0 * (double)(o->src[0]->ne[0] + o->src[2]->ne[0]) * (double)o->src[1]->ne[1] *
               (double)(o->ne[1] * o->ne[2] * o->ne[3]);
    double bytes = (double)rt_nbytes(o);
    for (int i = 0; i < RT_MAX_SRC && o->src[i]; i++)
        if (o->op != RT_OP_CPY || i == 0) bytes += (double)rt_nbytes(o->src[i]);
    return bytes;
}

static bool time_body(rt_op_t op, const cf_case_t *c, uint64_t seed, cf_timing_t *out) {
    if (!case_prepare(op, c, seed, false)) return false;
    for (int k = 0; k < CF_MAX_SRC && run.in[k].spec != NULL; k++)
        if (!cf_upload(&run.in[k])) return false;
    rt_queue_t *q = target->queues[0];
    if (rt_queue_compute(q, run.graph) != RT_OK) { /* warm-up: pipelines, first touch */
        cf_report("%s: %s", run.label, rt_last_error());
        return false;
    }
    const double t0 = now_s();
    int runs = 0;
    do {
        if (rt_queue_compute(q, run.graph) != RT_OK) {
            cf_report("%s: %s", run.label, rt_last_error());
            return false;
        }
        runs++;
    } while (runs < 3 || now_s() - t0 < 0.3);
    out->seconds = (now_s() - t0) / runs;
    out->work = case_work(run.out, &out->flops);
    return true;
}

/* Runs body (case_body, time_body) with the abort hook armed, and frees
 * the case's state. */
static cf_result_t guarded(const cf_target_t *t, rt_op_t op, const cf_case_t *c, const char *id, uint64_t seed,
                           cf_timing_t *timing) {
    memset(&run, 0, sizeof run);
    target = t;
    run.tol = cf_tolerance(op, c, t->strict);
    snprintf(run.label, sizeof run.label, "%s %s [%s]", id, rt_op_name(op), c->name);
    bool ok = false;
    rt_abort_set(abort_hook, NULL);
    if (setjmp(abort_jump) == 0) ok = timing ? time_body(op, c, seed, timing) : case_body(op, c, seed);
    else cf_report("%s: the graph API aborted: %s", run.label, abort_message);
    rt_abort_set(NULL, NULL);
    return run.unsupported ? CF_UNSUPPORTED : ok ? CF_PASS : CF_FAIL;
}

cf_result_t cf_run_case(const cf_target_t *t, rt_op_t op, const cf_case_t *c, const char *id, uint64_t seed,
                        double *out_err) {
    const cf_result_t r = guarded(t, op, c, id, seed, NULL);
    if (out_err != NULL) *out_err = run.err;
    run_free();
    target = NULL;
    return r;
}

cf_result_t cf_time_case(const cf_target_t *t, rt_op_t op, const cf_case_t *c, uint64_t seed, cf_timing_t *out) {
    const cf_result_t r = guarded(t, op, c, "perf", seed, out);
    run_free();
    target = NULL;
    return r;
}
