/* SPDX-License-Identifier: MIT */
/* dist-wire.c: the communicator's promises on the wire, run by test-dist
 * under mpirun -np 2: a message longer than the receiver's buffer is an
 * error and leaves the bytes past the buffer untouched; a shorter one
 * gives its exact size and tag; a tensor of another size is refused; a
 * peer out of range is refused before anything is sent; the allreduce
 * sums. Prints "dist-wire: N checks, M failures" on rank 0 and exits 1 on
 * any failure. With --pingpong BYTES it measures instead what one message
 * of BYTES costs between the two ranks (half a round trip, the median of
 * 200), for dist/bench.sh. With --nccl the same checks run over the NCCL
 * communicator (host memory, staged), and an allreduce and a broadcast
 * run on a CUDA device buffer (the CUDA plugin's, NCCL in place); with
 * one rank only the device checks run, calling the communicator's
 * collectives directly (rtd_comm_allreduce skips a job of one), so that
 * one GPU checks NCCL too (tests/device/cuda.sh). */
#include "../dist/rt_dist.h"


#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int n_checks, n_failures;

static void check(bool ok, const char *what) {
    n_checks++;
    if (ok) return;
    n_failures++;
    fprintf(stderr, "dist-wire: FAILED: %s (%s)\n", what, rtd_last_error());
}

enum { BIG = 64, SMALL = 16, GUARD = 0x5a };

static void sender(rtd_comm_t *c) {
    unsigned char big[BIG], small[SMALL];
    memset(big, 1, sizeof big);
    memset(small, 2, sizeof small);
    int32_t t = -1;
    check(rtd_comm_send(c, 1, RTD_TAG_HIDDEN_MORE, big, sizeof big, &t) == RT_OK &&
          rtd_comm_wait(c, t) == RT_OK, "dist-4.1 send 64 bytes");
    check(rtd_comm_send(c, 1, RTD_TAG_HIDDEN_LAST, small, sizeof small, &t) == RT_OK &&
          rtd_comm_wait(c, t) == RT_OK, "dist-4.2 send 16 bytes");
    float row[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    check(rtd_comm_send(c, 1, RTD_TAG_HIDDEN_MORE, row, sizeof row, &t) == RT_OK &&
          rtd_comm_wait(c, t) == RT_OK, "dist-4.3 send a row of 8 floats");
}

static void receiver(rtd_comm_t *c) {
    unsigned char buf[BIG + 8];
    size_t bytes = 0;
    int32_t tag = 0;
    memset(buf, GUARD, sizeof buf);
    const rt_status_t st = rtd_comm_recv(c, 0, buf, SMALL, &bytes, &tag);
    bool guard = true;
    for (size_t i = SMALL; i < sizeof buf; i++) guard = guard && buf[i] == GUARD;
    check(st != RT_OK && guard, "dist-4.1 64 bytes into 16 fail, nothing written past them");
    memset(buf, GUARD, sizeof buf);
    check(rtd_comm_recv(c, 0, buf, BIG, &bytes, &tag) == RT_OK && bytes == SMALL &&
          tag == RTD_TAG_HIDDEN_LAST && buf[SMALL] == GUARD, "dist-4.2 16 bytes and their tag");
    float small[4];
    check(rtd_comm_recv(c, 0, small, sizeof small, &bytes, &tag) != RT_OK,
          "dist-4.3 a row of 8 floats into 4 is refused");
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int by_value(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One message there and back, rank 0 first. */
static bool round_trip(rtd_comm_t *c, void *buf, size_t bytes) {
    const int32_t peer = 1 - c->rank;
    size_t got = 0;
    int32_t tag = 0, t = -1;
    bool ok = true;
    if (c->rank == 1) ok = rtd_comm_recv(c, peer, buf, bytes, &got, &tag) == RT_OK;
    ok = ok && rtd_comm_send(c, peer, RTD_TAG_HIDDEN_LAST, buf, bytes, &t) == RT_OK &&
         rtd_comm_wait(c, t) == RT_OK;
    if (c->rank == 0) ok = ok && rtd_comm_recv(c, peer, buf, bytes, &got, &tag) == RT_OK;
    return ok && got == bytes;
}

static int pingpong(rtd_comm_t *c, size_t bytes) {
    enum { N = 200 };
    double us[N];
    char *buf = calloc(1, bytes ? bytes : 1);
    bool ok = buf != NULL;
    for (int i = 0; ok && i < N; i++) {
        const double t0 = now();
        ok = round_trip(c, buf, bytes);
        us[i] = (now() - t0) * 1e6 / 2;
    }
    qsort(us, N, sizeof us[0], by_value);
    if (c->rank == 0 && ok) printf("dist-wire: %zu bytes one way: %.1f us (median of %d)\n", bytes, us[N / 2], N);
    free(buf);
    rtd_comm_destroy(c);
    return ok ? 0 : 1;
}

/* 3 floats of rank + 1, 10, -1 in a buffer of this rank's CUDA device
 * (cuda<rank % devices>), allreduced and broadcast there in place. */
static void device_checks(rtd_comm_t *c) {
    rt_registry_t *reg = NULL;
    rt_context_t *ctx = NULL;
    rt_buffer_t *buf = NULL;
    int32_t n_cuda = 0;
    check(rt_registry_create(NULL, &reg) == RT_OK, "dist-6.1 a registry");
    for (int32_t i = 0; reg && i < rt_registry_device_count(reg); i++)
        n_cuda += strncmp(rt_device_name(rt_registry_device(reg, i)), "cuda", 4) == 0;
    char name[32];
    snprintf(name, sizeof name, "cuda%d", n_cuda ? c->rank % n_cuda : 0);
    rt_device_t *dev = reg ? rt_registry_device_by_name(reg, name) : NULL;
    check(dev != NULL, "dist-6.1 a CUDA device (the CUDA plugin)");
    const rt_context_params_t cp = {.struct_size = sizeof cp, .mem_size = 4 * rt_tensor_overhead(),
                                    .no_alloc = true};
    rt_tensor_t *t = NULL;
    if (dev && rt_context_create(&cp, &ctx) == RT_OK) t = rt_new_tensor_1d(ctx, RT_TYPE_F32, 3);
    const bool ok = t && rt_buffer_alloc(rt_device_buffer_type(dev, 0), 256, &buf) == RT_OK &&
                    rt_tensor_alloc(buf, t, rt_buffer_base(buf)) == RT_OK;
    check(ok, "dist-6.2 3 floats on the device");
    if (ok) {
        const float n = (float)c->size;
        float x[3] = {(float)c->rank + 1, 10, -1};
        check(rt_tensor_set(t, x, 0, sizeof x) == RT_OK &&
              c->vt->allreduce(c, t->data, 3, RTD_DTYPE_F32) == RT_OK &&
              rt_tensor_get(t, x, 0, sizeof x) == RT_OK && x[0] == n * (n + 1) / 2 && x[1] == 10 * n &&
              x[2] == -n, "dist-6.3 allreduce in device memory sums");
        float y[3] = {c->rank == 0 ? 7.0f : 0.0f, 8, 9};
        check(rt_tensor_set(t, y, 0, sizeof y) == RT_OK && c->vt->broadcast(c, 0, t->data, 4) == RT_OK &&
              rt_tensor_get(t, y, 0, sizeof y) == RT_OK && y[0] == 7, "dist-6.4 broadcast in device memory");
        int64_t h[2] = {c->rank, 1}; /* host memory through the staging buffer */
        check(c->vt->allreduce(c, h, 2, RTD_DTYPE_I64) == RT_OK && h[1] == c->size,
              "dist-6.5 allreduce of host memory (staged)");
    }
    rt_buffer_free(buf);
    rt_context_destroy(ctx);
    rt_registry_destroy(reg);
}

/* The communicator asked for: MPI, or NCCL over it (--nccl, first). */
static rtd_comm_t *communicator(int *argc, char ***argv, bool nccl) {
    rtd_comm_t *c = NULL, *n = NULL;
    if (rtd_comm_mpi_create(argc, argv, &c) != RT_OK) return NULL;
    if (!nccl) return c;
    if (rtd_comm_nccl_create(c, &n) == RT_OK) return n;
    char why[512]; /* MPI_Finalize must not be what the message says */
    snprintf(why, sizeof why, "%s", rtd_last_error());
    rtd_comm_destroy(c);
    fprintf(stderr, "dist-wire: %s\n", why);
    exit(1);
}

int main(int argc, char **argv) {
    const bool nccl = argc >= 2 && strcmp(argv[1], "--nccl") == 0;
    rtd_comm_t *c = communicator(&argc, &argv, nccl);
    if (c == NULL || c->size > 2 || (c->size != 2 && !nccl)) {
        fprintf(stderr, "dist-wire: needs MPI and 2 ranks (--nccl: 1 or 2) (%s)\n", rtd_last_error());
        return 1;
    }
    if (argc == 3 && strcmp(argv[1], "--pingpong") == 0) return pingpong(c, (size_t)atol(argv[2]));
    if (nccl) device_checks(c);
    if (c->size == 1) {
        printf("dist-wire: %d checks, %d failures\n", n_checks, n_failures);
        rtd_comm_destroy(c);
        return n_failures == 0 ? 0 : 1;
    }
    int32_t t = -1;
    check(rtd_comm_send(c, 2, RTD_TAG_TOKEN, &t, sizeof t, &t) == RT_ERR_INVALID_ARGUMENT &&
          rtd_comm_send(c, c->rank, RTD_TAG_TOKEN, &t, sizeof t, &t) == RT_ERR_INVALID_ARGUMENT,
          "dist-4.4 no peer out of range or self");
    if (c->rank == 0) sender(c);
    else receiver(c);
    float x[3] = {(float)c->rank + 1, 10, -1};
    check(rtd_comm_allreduce(c, x, 3, RTD_DTYPE_F32) == RT_OK && x[0] == 3 && x[1] == 20 && x[2] == -2,
          "dist-4.5 allreduce sums");
    int64_t failures = n_failures;
    check(rtd_comm_allreduce(c, &failures, 1, RTD_DTYPE_I64) == RT_OK, "dist-4.6 failures summed");
    if (c->rank == 0) printf("dist-wire: %d checks, %lld failures\n", n_checks, (long long)failures);
    rtd_comm_destroy(c);
    return failures == 0 ? 0 : 1;
}
