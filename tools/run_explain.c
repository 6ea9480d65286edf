/* SPDX-License-Identifier: MIT */
/* run_explain.c: rt-run --explain after the run: each device's measured
 * share of a prompt step and of a decode step beside the plan's
 * predictions (rtm_model_predicted_s). The scheduler times its splits per
 * device (rt_sched_set_timing) only while --explain asks, since timing
 * waits for every split; the job the plan weighs is run_explain_job's.
 * The first prompt step also carries the run's warm-up (the mapped
 * weights' first reads, scratch growing, threads starting), which the
 * plan does not predict: a prompt of one step measures well above its
 * prediction, one of several steps near it. */
#include "run.h"

#include <stdio.h>
#include <string.h>

void run_explain_job(const run_t *r, rtm_model_params_t *mp) {
    /* The prompt is not tokenized before the model is loaded: about a
     * token per 4 bytes of text. Unlimited generation counts as the
     * context's length (the default 2048 when not given). */
    mp->n_prompt = (int32_t)(strlen(r->o->prompt) / 4) + 1;
    mp->n_generate = r->o->n_predict >= 0 ? r->o->n_predict
                   : r->o->n_ctx > 0 ? r->o->n_ctx : 2048;
    mp->n_ubatch = r->o->n_batch;
}

void run_explain_phase(run_t *r, int phase) {
    rt_sched_t *s = rtm_context_sched(r->ctx);
    if (!r->o->explain || s == NULL) return;
    for (int32_t d = 0; phase >= 0 && d < rt_sched_n_devices(s) && d < RT_SCHED_MAX_DEVICES; d++) {
        double compute = 0, copy = 0;
        rt_sched_device_time(s, d, &compute, &copy, NULL);
        r->measured_s[phase][d] = compute + copy;
    }
    rt_sched_set_timing(s, true); /* the counts start again for the next phase */
}

void run_explain_report(const run_t *r) {
    rt_sched_t *s = rtm_context_sched(r->ctx);
    if (!r->o->explain || s == NULL) return;
    const int32_t n_batch = rtm_context_n_batch(r->ctx);
    const int32_t steps = r->n_prompt > 0 ? (r->n_prompt + n_batch - 1) / n_batch : 0;
    fprintf(stderr, "measured beside predicted, per device (prompt: a step of up to %d tokens, "
            "%d step(s); decode: a token, %d):\n", n_batch, steps, r->n_generated);
    for (int32_t d = 0; d < rt_sched_n_devices(s) && d < RT_SCHED_MAX_DEVICES; d++)
        fprintf(stderr, "  device %d (%s): prompt %.3f ms measured, %.3f predicted; decode %.3f ms "
                "measured, %.3f predicted\n", d, rt_device_name(rt_sched_device(s, d)),
                steps > 0 ? r->measured_s[0][d] / steps * 1e3 : 0.0,
                rtm_model_predicted_s(r->model, d, true) * 1e3,
                r->n_generated > 0 ? r->measured_s[1][d] / r->n_generated * 1e3 : 0.0,
                rtm_model_predicted_s(r->model, d, false) * 1e3);
    if (r->n_generated > 0)
        fprintf(stderr, "measured decode: %.3f ms per token (wall clock, sampling included; "
                "predicted %.3f)\n", r->t_gen / r->n_generated * 1e3,
                rtm_model_predicted_s(r->model, -1, false) * 1e3);
}
