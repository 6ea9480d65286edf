/* SPDX-License-Identifier: MIT */
/* speed.c: mockgpu's speed knobs (RT_MOCKGPU_GBPS, RT_MOCKGPU_COPY_US in
 * mockgpu.h), emulated by timing: the mock's work is the CPU plugin's, so
 * a mock can be made slower than the CPU but never faster. A graph takes
 * at least the bytes of its products' weights over the emulated bandwidth
 * (what a decode step is bound by), a copy at least its copy time; the
 * rest is slept away, so the machine's cores stay free for the CPU queue
 * the test compares with. */
#define MOCKGPU_INTERNAL
#include "mockgpu.h"

#include <errno.h>
#include <time.h>

double mockgpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void wait_until(double deadline) {
    for (double now = mockgpu_now(); now < deadline; now = mockgpu_now()) {
        const double left = deadline - now;
        const struct timespec ts = {(time_t)left, (long)((left - (double)(time_t)left) * 1e9)};
        if (nanosleep(&ts, NULL) != 0 && errno != EINTR) return;
    }
}

static uint64_t weight_bytes(rt_tensor_t *const *nodes, int32_t n_nodes) {
    uint64_t n = 0;
    for (int32_t i = 0; i < n_nodes; i++) {
        const rt_tensor_t *w = nodes[i]->op == RT_OP_MUL_MAT ? nodes[i]->src[0] : NULL;
        if (w) n += (uint64_t)w->nb[3] * (uint64_t)w->ne[3];
    }
    return n;
}

void mockgpu_pace_graph(const mockgpu_device_t *d, rt_tensor_t *const *nodes, int32_t n_nodes,
                        double t0) {
    if (d->gbps > 0) wait_until(t0 + (double)weight_bytes(nodes, n_nodes) / (d->gbps * 1e9));
}

void mockgpu_pace_copy(const mockgpu_device_t *d, double t0) {
    if (d->copy_us > 0) wait_until(t0 + d->copy_us * 1e-6);
}
