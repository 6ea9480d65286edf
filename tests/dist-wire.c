/* SPDX-License-Identifier: MIT */
/* dist-wire.c: the communicator's promises on the wire, run by test-dist
 * under mpirun -np 2: a message longer than the receiver's buffer is an
 * error and leaves the bytes past the buffer untouched; a shorter one
 * gives its exact size and tag; a tensor of another size is refused; a
 * peer out of range is refused before anything is sent; the allreduce
 * sums. Prints "dist-wire: N checks, M failures" on rank 0 and exits 1 on
 * any failure. With --pingpong BYTES it measures instead what one message
 * of BYTES costs between the two ranks (half a round trip, the median of
 * 200), for dist/bench.sh. */
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

int main(int argc, char **argv) {
    rtd_comm_t *c = NULL;
    if (rtd_comm_mpi_create(&argc, &argv, &c) != RT_OK || c->size != 2) {
        fprintf(stderr, "dist-wire: needs MPI and 2 ranks (%s)\n", rtd_last_error());
        return 1;
    }
    if (argc == 3 && strcmp(argv[1], "--pingpong") == 0) return pingpong(c, (size_t)atol(argv[2]));
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
