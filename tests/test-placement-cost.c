/* SPDX-License-Identifier: MIT */
/* test-placement-cost.c: RT_PLACEMENT_FASTEST (abi/rt_sched.h), the layer
 * split of least predicted decode time, on made-up devices: four layers of
 * 100 bytes, an input of 50 and an output of 30; the CPU streams 100 bytes
 * a millisecond, so a layer costs it 1 ms. Each case names what the planner
 * must see: a fast device gets more layers than a slow one, a device slower
 * than the CPU gets none (a software device such as lavapipe), and a split
 * whose copies cost more than it saves is not made. Plans are written as in
 * test-sched: the layers' devices, then input and output ("0011 2 1").
 *
 *   cost-1  one GPU 10x the CPU with room for all: everything there
 *   cost-2  one GPU slower than the CPU: nothing there, whatever its memory
 *   cost-3  a fast GPU with room for 2 layers, a slower one for all: 2 + 2
 *   cost-4  a GPU 2x the CPU with room for one layer: its copies cost 2 ms,
 *           so no split; at 0.01 ms the split is made
 *   cost-5  predicted times: the shares add up to the whole, the text shows them
 *   cost-6  FASTEST without figures is refused; replan moves layers off */
#include "testutil.h"

#include "../abi/rt_sched.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define C_LAYERS 4
static const uint64_t c_layer[C_LAYERS] = {100, 100, 100, 100};
#define MS 1e-3
#define CPU_SPEED {1e5, 0, 0}
#define LOTS 100000

static rt_placement_t *plan(int32_t n_devices, const uint64_t *free_bytes,
                            const rt_device_speed_t *speed) {
    const rt_placement_params_t pp = {
        .struct_size = sizeof pp, .mode = RT_PLACEMENT_FASTEST, .n_layers = C_LAYERS,
        .layer_bytes = c_layer, .input_bytes = 50, .output_bytes = 30, .n_devices = n_devices,
        .memory_free = free_bytes, .speed = speed};
    rt_placement_t *p = NULL;
    assert_int_equal(rt_placement_create(&pp, &p), RT_OK);
    return p;
}

static void expect_plan(const rt_placement_t *p, const char *want, const char *id) {
    char got[32];
    int n = 0;
    for (int il = 0; il < C_LAYERS; il++)
        n += snprintf(got + n, sizeof got - (size_t)n, "%d", (int)rt_placement_layer_device(p, il));
    snprintf(got + n, sizeof got - (size_t)n, " %d %d", (int)rt_placement_input_device(p),
             (int)rt_placement_output_device(p));
    if (strcmp(got, want) != 0) fail_msg("%s: plan \"%s\", expected \"%s\"", id, got, want);
}

static void test_fast_gpu(void **state) {
    (void)state;
    const uint64_t free_bytes[2] = {LOTS, 0};
    const rt_device_speed_t speed[2] = {{1e6, 0, 0.05 * MS}, CPU_SPEED};
    rt_placement_t *p = plan(2, free_bytes, speed);
    expect_plan(p, "0000 0 0", "cost-1");
    rt_placement_destroy(p);
}

static void test_slow_gpu(void **state) {
    (void)state;
    const uint64_t free_bytes[2] = {LOTS, 0};
    const rt_device_speed_t speed[2] = {{2e4, 0, 0}, CPU_SPEED}; /* a fifth of the CPU */
    rt_placement_t *p = plan(2, free_bytes, speed);
    expect_plan(p, "1111 1 1", "cost-2");
    assert_int_equal(rt_placement_device_layers(p, 0), 0);
    assert_int_equal(rt_placement_device_bytes(p, 0), 0);
    rt_placement_destroy(p);
}

static void test_fast_and_slow(void **state) {
    (void)state;
    /* gpu0 is 2x the CPU with room for everything, gpu1 10x with room for
     * two layers and the output */
    const uint64_t free_bytes[3] = {LOTS, 240, 0};
    const rt_device_speed_t speed[3] = {{2e5, 0, 0.01 * MS}, {1e6, 0, 0.01 * MS}, CPU_SPEED};
    rt_placement_t *p = plan(3, free_bytes, speed);
    expect_plan(p, "0011 0 1", "cost-3");
    rt_placement_destroy(p);
    /* the same GPUs the other way round: the fast one comes first, and the
     * slow one's copy is worth it for the layers left over */
    const uint64_t swapped_free[3] = {240, LOTS, 0};
    const rt_device_speed_t swapped[3] = {{1e6, 0, 0.01 * MS}, {2e5, 0, 0.01 * MS}, CPU_SPEED};
    p = plan(3, swapped_free, swapped);
    assert_int_equal(rt_placement_device_layers(p, 0), 2);
    assert_int_equal(rt_placement_device_layers(p, 1), 2);
    assert_int_equal(rt_placement_device_layers(p, 2), 0);
    rt_placement_destroy(p);
}

static void test_copies_cost(void **state) {
    (void)state;
    const uint64_t free_bytes[2] = {150, 0}; /* one layer and the output */
    const rt_device_speed_t dear[2] = {{2e5, 0, 2 * MS}, {1e5, 0, 2 * MS}};
    rt_placement_t *p = plan(2, free_bytes, dear);
    expect_plan(p, "1111 1 1", "cost-4.1"); /* saves 0.65 ms, costs 4 ms of copies */
    rt_placement_destroy(p);
    const rt_device_speed_t cheap[2] = {{2e5, 0, 0.01 * MS}, {1e5, 0, 0.01 * MS}};
    p = plan(2, free_bytes, cheap);
    expect_plan(p, "1110 1 0", "cost-4.2");
    rt_placement_destroy(p);
}

static void write_buf(const char *s, size_t n, void *user_data) {
    strncat((char *)user_data, s, n);
}

static void test_predicted(void **state) {
    (void)state;
    const uint64_t free_bytes[2] = {150, 0};
    const rt_device_speed_t speed[2] = {{2e5, 0.1 * MS, 0.2 * MS}, {1e5, 0, 0.2 * MS}};
    rt_placement_t *p = plan(2, free_bytes, speed);
    expect_plan(p, "1110 1 0", "cost-5");
    /* the CPU: 3 layers, 3 ms; the GPU: a copy in, 130 bytes, a layer's
     * fixed time, the logits back: 0.2 + 0.65 + 0.1 + 0.2 ms */
    assert_true(fabs(rt_placement_predicted_s(p, 1) - 3 * MS) < 1e-9);
    assert_true(fabs(rt_placement_predicted_s(p, 0) - 1.15 * MS) < 1e-9);
    assert_true(fabs(rt_placement_predicted_s(p, -1) - 4.15 * MS) < 1e-9);
    char text[1024] = "";
    rt_placement_write_text(p, write_buf, text);
    assert_string_equal(text, "device 0: layers 3, output, 130 bytes, predicted 1.150 ms\n"
                              "device 1 (cpu): layers 0-2, input, 350 bytes, predicted 3.000 ms\n"
                              "predicted decode: 4.150 ms per token\n");
    rt_placement_destroy(p);
}

static void test_misuse_replan(void **state) {
    (void)state;
    const uint64_t free_bytes[2] = {LOTS, 0};
    const rt_placement_params_t pp = {
        .struct_size = sizeof pp, .mode = RT_PLACEMENT_FASTEST, .n_layers = C_LAYERS,
        .layer_bytes = c_layer, .n_devices = 2, .memory_free = free_bytes};
    rt_placement_t *p = NULL;
    assert_int_equal(rt_placement_create(&pp, &p), RT_ERR_INVALID_ARGUMENT);
    assert_null(p);
    const rt_device_speed_t speed[2] = {{1e6, 0, 0.01 * MS}, CPU_SPEED};
    p = plan(2, free_bytes, speed);
    expect_plan(p, "0000 0 0", "cost-6");
    /* the GPU must keep all but 250 bytes free: two layers and the output stay */
    assert_int_equal(rt_placement_replan(p, 0, LOTS - 250), RT_OK);
    expect_plan(p, "1100 1 0", "cost-6");
    assert_true(rt_placement_device_bytes(p, 0) <= 250);
    rt_placement_destroy(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fast_gpu),
        cmocka_unit_test(test_slow_gpu),
        cmocka_unit_test(test_fast_and_slow),
        cmocka_unit_test(test_copies_cost),
        cmocka_unit_test(test_predicted),
        cmocka_unit_test(test_misuse_replan),
    };
    return cmocka_run_group_tests_name("placement-cost", tests, NULL, NULL);
}
