/* SPDX-License-Identifier: MIT */
/* rt_comm.h: the communication the distribution layer needs, as one
 * interface over interchangeable implementations: ranks (SPMD processes
 * of one job), point-to-point messages (a tensor's bytes or a control
 * word, tagged), a sum allreduce and a broadcast. MPI is the first
 * implementation (comm_mpi.c); NCCL is the second (comm_nccl.c), for
 * tensors in GPU memory: it takes device pointers (and stages host ones),
 * which is why data crosses this interface as pointer and byte count only
 * and never as a host-side structure to be parsed.
 *
 *     rtd_comm_t *c;
 *     if (rtd_comm_mpi_create(&argc, &argv, &c) != RT_OK) die(rt_last_error());
 *     if (c->rank == 0) rtd_comm_send(c, 1, RTD_TAG_HIDDEN, x, n * sizeof x[0], &ticket);
 *     else rtd_comm_recv(c, 0, x, cap, &bytes, &tag);   // bytes <= cap, always checked
 *     rtd_comm_allreduce(c, partial, n, RTD_DTYPE_F32); // sum over the ranks, in place
 *     rtd_comm_destroy(c);
 *
 * Security: only bytes cross; a receiver states the capacity of its buffer
 * and gets the byte count (a larger message is an error, never a write past
 * it), and every count taken from a message is checked by its user before
 * it sizes anything. Thread safety: one thread per communicator. */
#ifndef RTD_COMM_H
#define RTD_COMM_H

#include "../abi/rt.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RTD_API __attribute__((visibility("default")))

/* Message tags: what a point-to-point message carries (its size says how
 * many rows). */
enum {
    RTD_TAG_HIDDEN_MORE = 1, /* hidden-state rows of a ubatch; more of this decode follow */
    RTD_TAG_HIDDEN_LAST = 2, /* the last ubatch of a decode: sample after it */
    RTD_TAG_TOKEN = 3,       /* one sampled token, int32 */
    RTD_TAG_STOP = 4,        /* no payload: the run is over */
    RTD_TAG_COUNT
};

typedef int32_t rtd_dtype_t;
enum { RTD_DTYPE_F32 = 0, RTD_DTYPE_F64 = 1, RTD_DTYPE_I64 = 2, RTD_DTYPE_COUNT };

/* What crossed, for the reports and the byte-count test. */
typedef struct rtd_comm_stats {
    uint64_t bytes_sent;       /* point-to-point payload bytes this rank sent */
    uint64_t messages_sent;
    uint64_t bytes_reduced;    /* allreduce payload bytes (this rank's contribution) */
    uint64_t bytes_broadcast;  /* broadcast payload bytes (counted by the root) */
    double seconds;            /* wall time inside communication calls, waiting included */
} rtd_comm_stats_t;

typedef struct rtd_comm rtd_comm_t;

/* An implementation. Every slot is required. */
typedef struct rtd_comm_vtable {
    void (*destroy)(rtd_comm_t *c);
    /* Starts sending bytes to peer; the data must stay until wait(ticket). */
    rt_status_t (*send)(rtd_comm_t *c, int32_t peer, int32_t tag, const void *data, size_t bytes,
                        int32_t *out_ticket);
    rt_status_t (*wait)(rtd_comm_t *c, int32_t ticket);
    /* Receives the next message from peer, any tag, into at most cap bytes. */
    rt_status_t (*recv)(rtd_comm_t *c, int32_t peer, void *data, size_t cap, size_t *out_bytes,
                        int32_t *out_tag);
    rt_status_t (*allreduce)(rtd_comm_t *c, void *data, size_t n, rtd_dtype_t type);
    rt_status_t (*broadcast)(rtd_comm_t *c, int32_t root, void *data, size_t bytes);
    /* Ends every rank of the job with exit status code (never returns). */
    void (*abort)(rtd_comm_t *c, int code);
} rtd_comm_vtable_t;

/* The invariant: 0 <= rank < size; vt never NULL. */
struct rtd_comm {
    const rtd_comm_vtable_t *vt;
    int32_t rank, size;
    rtd_comm_stats_t stats;
};

/* Whether this process was started by an MPI launcher (mpirun, mpiexec,
 * srun): the launchers' environment, looked at before MPI is touched so
 * that a plain run never initialises it. */
RTD_API bool rtd_launched_by_mpi(void);

/* MPI_COMM_WORLD (initialises MPI; errors return instead of aborting, so
 * each is reported naming the peer). RT_ERR_UNSUPPORTED when rt was built
 * without MPI. */
RTD_API rt_status_t rtd_comm_mpi_create(int *argc, char ***argv, rtd_comm_t **out_comm);

/* The NCCL communicator over ctrl, an MPI one of the same ranks, which it
 * takes over on success (NCCL's bootstrap, the messages' headers, abort
 * go through it). Collective: every rank succeeds, or every rank fails
 * naming the ranks that could not and this rank's reason (no NCCL
 * library, no CUDA driver or device, NCCL's own refusal) and ctrl stays
 * the caller's. RT_ERR_UNSUPPORTED when rt was built without NCCL. */
RTD_API rt_status_t rtd_comm_nccl_create(rtd_comm_t *ctrl, rtd_comm_t **out_comm);

/* The calls, through the vtable, with the statistics kept. Peers out of
 * range are RT_ERR_INVALID_ARGUMENT. */
RTD_API void rtd_comm_destroy(rtd_comm_t *c);
RTD_API rt_status_t rtd_comm_send(rtd_comm_t *c, int32_t peer, int32_t tag, const void *data, size_t bytes,
                          int32_t *out_ticket);
RTD_API rt_status_t rtd_comm_wait(rtd_comm_t *c, int32_t ticket);
RTD_API rt_status_t rtd_comm_recv(rtd_comm_t *c, int32_t peer, void *data, size_t cap, size_t *out_bytes,
                          int32_t *out_tag);
RTD_API rt_status_t rtd_comm_allreduce(rtd_comm_t *c, void *data, size_t n, rtd_dtype_t type);
RTD_API rt_status_t rtd_comm_broadcast(rtd_comm_t *c, int32_t root, void *data, size_t bytes);
RTD_API void rtd_comm_abort(rtd_comm_t *c, int code);

/* A tensor's bytes (any device; staged through host memory of
 * rt_nbytes(t), which the caller provides) to peer, and back: recv_tensor
 * refuses a message whose size is not exactly rt_nbytes(t). */
RTD_API rt_status_t rtd_comm_send_tensor(rtd_comm_t *c, int32_t peer, int32_t tag, const rt_tensor_t *t,
                                 void *staging);
RTD_API rt_status_t rtd_comm_recv_tensor(rtd_comm_t *c, int32_t peer, rt_tensor_t *t, void *staging);

#ifdef __cplusplus
}
#endif

#endif /* RTD_COMM_H */
