/* SPDX-License-Identifier: MIT */
/* test-sample.c: the sampler's filters on hand-made logits (no model).
 *
 *   sample-1  min-p: with p = 0.5 only tokens at least half as likely as
 *             the best are ever drawn, whatever the seed
 *   sample-2  the repetition penalty turns greedy away from a token it
 *             accepted, divides positive and multiplies negative logits,
 *             and forgets tokens older than repeat_last_n (and on reset)
 *   sample-3  out-of-range min_p, repeat_penalty, repeat_last_n are refused
 *             with the values in the message */
#include "testutil.h"

#include <math.h>
#include <string.h>

#include "../model/rt_model.h"

static rtm_sampler_t *make(rtm_sampler_params_t p) {
    p.struct_size = sizeof p;
    rtm_sampler_t *s = NULL;
    assert_int_equal(rtm_sampler_create(&p, &s), RT_OK);
    return s;
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_min_p),
        cmocka_unit_test(test_repeat_penalty),
        cmocka_unit_test(test_bad_params),
    };
    return cmocka_run_group_tests_name("sample", tests, NULL, NULL);
}
