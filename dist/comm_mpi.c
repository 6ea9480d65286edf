/* SPDX-License-Identifier: MIT */
/* comm_mpi.c: the communicator on MPI (Open MPI or MPICH), MPI_COMM_WORLD.
 * Errors return (MPI_ERRORS_RETURN) so that each is reported with the
 * peer it concerns before the job is aborted. A receive is posted with
 * the caller's capacity, so a longer message fails as truncated instead
 * of being written past the buffer. Waiting polls with a short sleep
 * after a few spins rather than spinning in MPI: on a machine where the
 * ranks share cores, a spinning receiver takes the cycles the stage it
 * waits for needs. Non-blocking sends live in a small table of requests
 * (a ticket is an index). */
#include "dist_impl.h"

#include <limits.h>
#include <mpi.h>
#include <stdlib.h>
#include <time.h>

#define MAX_REQUESTS 64

typedef struct comm_mpi {
    rtd_comm_t base;
    MPI_Request req[MAX_REQUESTS];
    bool busy[MAX_REQUESTS];
} comm_mpi_t;

static rt_status_t mpi_fail(int err, const rtd_comm_t *c, const char *what, int32_t peer) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(err, msg, &len);
    return rtd_error(RT_ERR_IO, "dist: rank %d: %s rank %d failed: %s", c->rank, what, peer, msg);
}

static void mpi_destroy(rtd_comm_t *c) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
    free(c);
}

static rt_status_t mpi_send(rtd_comm_t *c, int32_t peer, int32_t tag, const void *data, size_t bytes,
                            int32_t *out_ticket) {
    comm_mpi_t *m = (comm_mpi_t *)c;
    *out_ticket = -1;
    if (bytes > INT_MAX) return rtd_error(RT_ERR_INVALID_ARGUMENT, "dist: a message of %zu bytes", bytes);
    int32_t i = 0;
    while (i < MAX_REQUESTS && m->busy[i]) i++;
    if (i == MAX_REQUESTS) return rtd_error(RT_ERR_DOES_NOT_FIT, "dist: %d sends in flight", i);
    const int err = MPI_Isend(data, (int)bytes, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &m->req[i]);
    if (err != MPI_SUCCESS) return mpi_fail(err, c, "sending to", peer);
    m->busy[i] = true;
    *out_ticket = i;
    return RT_OK;
}

/* Spins a little, then sleeps 20 us between tests. */
static int poll_request(MPI_Request *req, MPI_Status *status) {
    const struct timespec nap = {0, 20000};
    for (int spins = 0;; spins++) {
        int done = 0;
        const int err = MPI_Test(req, &done, status);
        if (err != MPI_SUCCESS || done) return err;
        if (spins > 100) nanosleep(&nap, NULL);
    }
}

static rt_status_t mpi_wait(rtd_comm_t *c, int32_t ticket) {
    comm_mpi_t *m = (comm_mpi_t *)c;
    if (ticket < 0 || ticket >= MAX_REQUESTS || !m->busy[ticket])
        return rtd_error(RT_ERR_INVALID_ARGUMENT, "dist: no send %d in flight", ticket);
    const int err = poll_request(&m->req[ticket], MPI_STATUS_IGNORE);
    m->busy[ticket] = false;
    return err == MPI_SUCCESS ? RT_OK : mpi_fail(err, c, "a send to", -1);
}

static rt_status_t mpi_recv(rtd_comm_t *c, int32_t peer, void *data, size_t cap, size_t *out_bytes,
                            int32_t *out_tag) {
    MPI_Request req;
    MPI_Status status;
    const int n = cap > INT_MAX ? INT_MAX : (int)cap;
    int err = MPI_Irecv(data, n, MPI_BYTE, peer, MPI_ANY_TAG, MPI_COMM_WORLD, &req);
    if (err == MPI_SUCCESS) err = poll_request(&req, &status);
    int count = 0;
    if (err == MPI_SUCCESS) err = MPI_Get_count(&status, MPI_BYTE, &count);
    if (err != MPI_SUCCESS) return mpi_fail(err, c, "receiving from", peer);
    if (count < 0) return rtd_error(RT_ERR_FORMAT, "dist: rank %d: a message of unknown size from "
                                    "rank %d", c->rank, peer);
    *out_bytes = (size_t)count;
    *out_tag = status.MPI_TAG;
    return RT_OK;
}

static MPI_Datatype mpi_type(rtd_dtype_t t) {
    return t == RTD_DTYPE_F32 ? MPI_FLOAT : t == RTD_DTYPE_F64 ? MPI_DOUBLE : MPI_INT64_T;
}

/* Collectives are started non-blocking and waited for by polling, as
 * receives are: a blocking MPI collective spins. */
static rt_status_t mpi_allreduce(rtd_comm_t *c, void *data, size_t n, rtd_dtype_t type) {
    if (n > INT_MAX) return rtd_error(RT_ERR_INVALID_ARGUMENT, "dist: allreduce of %zu values", n);
    MPI_Request req;
    int err = MPI_Iallreduce(MPI_IN_PLACE, data, (int)n, mpi_type(type), MPI_SUM, MPI_COMM_WORLD, &req);
    if (err == MPI_SUCCESS) err = poll_request(&req, MPI_STATUS_IGNORE);
    return err == MPI_SUCCESS ? RT_OK : mpi_fail(err, c, "an allreduce with", -1);
}

static rt_status_t mpi_broadcast(rtd_comm_t *c, int32_t root, void *data, size_t bytes) {
    if (bytes > INT_MAX) return rtd_error(RT_ERR_INVALID_ARGUMENT, "dist: broadcast of %zu bytes", bytes);
    MPI_Request req;
    int err = MPI_Ibcast(data, (int)bytes, MPI_BYTE, root, MPI_COMM_WORLD, &req);
    if (err == MPI_SUCCESS) err = poll_request(&req, MPI_STATUS_IGNORE);
    return err == MPI_SUCCESS ? RT_OK : mpi_fail(err, c, "a broadcast from", root);
}

static void mpi_abort(rtd_comm_t *c, int code) {
    (void)c;
    MPI_Abort(MPI_COMM_WORLD, code);
    _Exit(code); /* MPI_Abort does not return; this is for the compiler */
}

static const rtd_comm_vtable_t mpi_vtable = {mpi_destroy, mpi_send, mpi_wait, mpi_recv,
                                             mpi_allreduce, mpi_broadcast, mpi_abort};

rt_status_t rtd_comm_mpi_create(int *argc, char ***argv, rtd_comm_t **out) {
    *out = NULL;
    comm_mpi_t *m = calloc(1, sizeof *m);
    if (m == NULL) return rtd_error(RT_ERR_OUT_OF_MEMORY, "dist: no memory");
    if (MPI_Init(argc, argv) != MPI_SUCCESS) {
        free(m);
        return rtd_error(RT_ERR_IO, "dist: MPI_Init failed");
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    m->base = (rtd_comm_t){.vt = &mpi_vtable, .rank = rank, .size = size};
    *out = &m->base;
    return RT_OK;
}
