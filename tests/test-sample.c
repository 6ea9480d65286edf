/* SPDX-License-Identifier: MIT */
/* test-sample.c: the sampler's filters on hand-made logits (no model).
 *
 *   sample-1  min-p: with p = 0.5 only tokens at least half as likely as
 *             the best are ever drawn, whatever the seed
 *   sample-2  the repetition penalty turns greedy away from a token it
 *             accepted, divides positive and multiplies negative logits,
 *             and forgets tokens older than repeat_last_n (and on reset)
 *   sample-3  out-of-range min_p, repeat_penalty, repeat_last_n are refused
 *             with the values in the message
 *   sample-4  greedy is the first index of the largest logit at every
 *             position and length (ties, a lane's last, a short tail), NaNs
 *             never chosen, token 0 when logits[0] is NaN
 *   sample-5  presence and frequency penalties: subtracted once, and once
 *             per occurrence, over the last repeat_last_n; they turn greedy
 *   sample-6  logit biases: +5 makes a token greedy's choice, -100 keeps a
 *             token from ever being drawn, an id past the vocabulary is
 *             skipped, and the caller's array may go after create
 *   sample-7  typical-p: with p = 0.2 only the token whose surprise is
 *             nearest the entropy is drawn (not the likeliest), with 0.5
 *             the two nearest; a NaN typical_p or an infinite penalty is
 *             refused by name */
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../model/rt_model.h"

static rtm_sampler_t *make(rtm_sampler_params_t p) {
    p.struct_size = sizeof p;
    rtm_sampler_t *s = NULL;
    assert_int_equal(rtm_sampler_create(&p, &s), RT_OK);
    return s;
}

/* The first index of the largest, as a plain scan finds it. */
static int32_t first_max(const float *x, int32_t n) {
    int32_t b = 0;
    for (int32_t i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

static void test_greedy(void **state) {
    (void)state;
    rtm_sampler_t *s = make((rtm_sampler_params_t){.temp = 0});
    float x[40];
    for (int32_t n = 1; n <= 40; n++)
        for (int32_t at = 0; at < n; at++) {
            for (int32_t i = 0; i < n; i++) x[i] = (float)((i * 7) % 5) - 3.0f;
            x[at] = 9.0f;
            if (at + 3 < n) x[at + 3] = 9.0f; /* a tie after it */
            if (at > 1) x[at - 1] = NAN;
            const rtm_token_t t = rtm_sampler_sample(s, x, n);
            if (t != at || t != first_max(x, n))
                fail_msg("sample-4: greedy over %d logits chose %d, the largest first at %d", n, t, at);
        }
    for (int32_t i = 0; i < 40; i++) x[i] = (float)i;
    x[0] = NAN;
    assert_int_equal(rtm_sampler_sample(s, x, 40), 0);
    rtm_sampler_destroy(s);
}

static void test_min_p(void **state) {
    (void)state;
    /* probabilities at temperature 1 proportional to 8, 5, 3, 1 */
    const float logits[4] = {logf(8), logf(5), logf(3), logf(1)};
    int seen[4] = {0};
    for (uint64_t seed = 0; seed < 200; seed++) {
        rtm_sampler_t *s = make((rtm_sampler_params_t){.temp = 1, .min_p = 0.5f, .seed = seed});
        seen[rtm_sampler_sample(s, logits, 4)]++;
        rtm_sampler_destroy(s);
    }
    assert_true(seen[0] > 0 && seen[1] > 0);      /* 8 and 5 >= 0.5 * 8 */
    assert_int_equal(seen[2] + seen[3], 0);       /* 3 and 1 are cut */
    rtm_sampler_t *off = make((rtm_sampler_params_t){.temp = 1, .seed = 1});
    int any_low = 0;
    for (int i = 0; i < 400; i++) any_low += rtm_sampler_sample(off, logits, 4) >= 2;
    rtm_sampler_destroy(off);
    assert_true(any_low > 0); /* without min-p they are drawn */
}

static void test_repeat_penalty(void **state) {
    (void)state;
    const float logits[3] = {2.0f, 1.5f, -1.0f};
    rtm_sampler_t *s = make((rtm_sampler_params_t){.repeat_penalty = 1.5f, .repeat_last_n = 2});
    assert_int_equal(rtm_sampler_sample(s, logits, 3), 0);
    rtm_sampler_accept(s, 0);                       /* 2.0 / 1.5 = 1.33 < 1.5 */
    assert_int_equal(rtm_sampler_sample(s, logits, 3), 1);
    rtm_sampler_accept(s, 1);                       /* both penalised: 1.33 > 1.0 */
    assert_int_equal(rtm_sampler_sample(s, logits, 3), 0);
    rtm_sampler_accept(s, 2);                       /* window of 2: token 0 forgotten */
    assert_int_equal(rtm_sampler_sample(s, logits, 3), 0);
    const float neg[2] = {-1.0f, -1.2f};            /* -1 * 1.5 = -1.5 < -1.2 */
    rtm_sampler_reset(s);
    rtm_sampler_accept(s, 0);
    assert_int_equal(rtm_sampler_sample(s, neg, 2), 1);
    rtm_sampler_reset(s);
    assert_int_equal(rtm_sampler_sample(s, neg, 2), 0);
    rtm_sampler_destroy(s);
    rtm_sampler_t *off = make((rtm_sampler_params_t){.repeat_penalty = 1.0f});
    rtm_sampler_accept(off, 0);
    assert_int_equal(rtm_sampler_sample(off, logits, 3), 0);
    rtm_sampler_destroy(off);
}

static void test_bad_params(void **state) {
    (void)state;
    const rtm_sampler_params_t bad[] = {
        {.min_p = -0.1f}, {.min_p = 1.5f}, {.min_p = NAN}, {.repeat_penalty = -1}, {.repeat_last_n = -3},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rtm_sampler_params_t p = bad[i];
        p.struct_size = sizeof p;
        rtm_sampler_t *s = (rtm_sampler_t *)&p;
        assert_int_equal(rtm_sampler_create(&p, &s), RT_ERR_INVALID_ARGUMENT);
        assert_null(s);
        tu_expect_contains(rtm_last_error(), "min_p", "sample-3");
    }
}

static void test_presence_frequency(void **state) {
    (void)state;
    const float logits[3] = {2.0f, 1.5f, 0.0f};
    /* presence 0.6: token 0 seen once drops to 1.4 < 1.5 */
    rtm_sampler_t *s = make((rtm_sampler_params_t){.presence_penalty = 0.6f, .repeat_last_n = 4});
    assert_int_equal(rtm_sampler_sample(s, logits, 3), 0);
    rtm_sampler_accept(s, 0);
    assert_int_equal(rtm_sampler_sample(s, logits, 3), 1);
    rtm_sampler_accept(s, 0); /* presence counts once: 1.4 still */
    rtm_sampler_accept(s, 1); /* 1.5 - 0.6 = 0.9 */
    assert_int_equal(rtm_sampler_sample(s, logits, 3), 0);
    rtm_sampler_destroy(s);
    /* frequency 0.3: token 0 seen once 1.7 > 1.5, twice 1.4 < 1.5 */
    s = make((rtm_sampler_params_t){.frequency_penalty = 0.3f, .repeat_last_n = 2});
    rtm_sampler_accept(s, 0);
    assert_int_equal(rtm_sampler_sample(s, logits, 3), 0);
    rtm_sampler_accept(s, 0);
    assert_int_equal(rtm_sampler_sample(s, logits, 3), 1);
    rtm_sampler_accept(s, 2); /* the window of 2 holds one 0 again */
    assert_int_equal(rtm_sampler_sample(s, logits, 3), 0);
    rtm_sampler_destroy(s);
}

static void test_logit_bias(void **state) {
    (void)state;
    const float logits[4] = {1.0f, 0.5f, 0.2f, 0.9f};
    rtm_logit_bias_t *b = malloc(3 * sizeof *b);
    b[0] = (rtm_logit_bias_t){2, 5.0f}, b[1] = (rtm_logit_bias_t){0, -100.0f}, b[2] = (rtm_logit_bias_t){99, 9};
    rtm_sampler_t *g = make((rtm_sampler_params_t){.logit_bias = b, .n_logit_bias = 3});
    rtm_sampler_t *d = make((rtm_sampler_params_t){.temp = 1, .seed = 3, .logit_bias = b, .n_logit_bias = 2});
    memset(b, 0xff, 3 * sizeof *b); /* copied at create */
    free(b);
    assert_int_equal(rtm_sampler_sample(g, logits, 4), 2);
    int zero = 0;
    const float flat[4] = {0, 0, 0, 0};
    for (int i = 0; i < 500; i++) zero += rtm_sampler_sample(d, flat, 4) == 0;
    assert_int_equal(zero, 0);
    rtm_sampler_destroy(g);
    rtm_sampler_destroy(d);
}

static void test_typical(void **state) {
    (void)state;
    /* p = 0.5, 0.3, 0.15, 0.05: entropy 1.14 nats, surprises 0.69, 1.20,
       1.90, 3.00: token 1 nearest, then 0, 2, 3 */
    const float logits[4] = {logf(0.5f), logf(0.3f), logf(0.15f), logf(0.05f)};
    int seen[2][4] = {{0}};
    for (uint64_t seed = 0; seed < 200; seed++)
        for (int k = 0; k < 2; k++) {
            rtm_sampler_t *s = make((rtm_sampler_params_t){.temp = 1, .typical_p = k ? 0.5f : 0.2f, .seed = seed});
            seen[k][rtm_sampler_sample(s, logits, 4)]++;
            rtm_sampler_destroy(s);
        }
    assert_int_equal(seen[0][1], 200);
    assert_true(seen[1][0] > 0 && seen[1][1] > 0);
    assert_int_equal(seen[1][2] + seen[1][3], 0);
    const rtm_sampler_params_t bad[] = {{.typical_p = NAN}, {.presence_penalty = INFINITY}};
    const char *names[] = {"typical_p nan", "presence_penalty inf"};
    for (int i = 0; i < 2; i++) {
        rtm_sampler_params_t p = bad[i];
        p.struct_size = sizeof p;
        rtm_sampler_t *s = NULL;
        assert_int_equal(rtm_sampler_create(&p, &s), RT_ERR_INVALID_ARGUMENT);
        tu_expect_contains(rtm_last_error(), names[i], "sample-7");
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_min_p),
        cmocka_unit_test(test_repeat_penalty),
        cmocka_unit_test(test_bad_params),
        cmocka_unit_test(test_greedy),
        cmocka_unit_test(test_presence_frequency),
        cmocka_unit_test(test_logit_bias),
        cmocka_unit_test(test_typical),
    };
    return cmocka_run_group_tests_name("sample", tests, NULL, NULL);
}
