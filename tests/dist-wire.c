/* SPDX-License-Identifier: MIT */
/* dist-wire.c: the communicator's promises on the wire, run by test-dist
 * under mpirun -np 2: a message longer than the receiver's buffer is an
 * error and leaves the bytes past the buffer untouched; a shorter one
 * gives its exact size and tag; a tensor of another size is refused; a
 * peer out of range is refused before anything is sent; the allreduce
 * sums. Prints "dist-wire: N checks, M failures" on rank 0 and exits 1 on
 * any failure. */
#include "../dist/rt_dist.h"

#include <stdio.h>
#include <string.h>

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

int main(int argc, char **argv) {
    rtd_comm_t *c = NULL;
    if (rtd_comm_mpi_create(&argc, &argv, &c) != RT_OK || c->size != 2) {
        fprintf(stderr, "dist-wire: needs MPI and 2 ranks (%s)\n", rtd_last_error());
        return 1;
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
