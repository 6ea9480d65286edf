/* SPDX-License-Identifier: MIT */
/* comm.c: the communicator's calls as the rest of dist/ makes them: each
 * goes through the implementation's vtable with its arguments checked
 * (peers in range, counts that fit), its bytes counted and its wall time
 * added to the statistics; and the tensor helpers, which stage a tensor's
 * bytes through host memory. */
#include "dist_impl.h"

#include <stdlib.h>


bool rtd_launched_by_mpi(void) {
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK",
                                       "MPI_LOCALNRANKS"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i]) != NULL) return true;
    return false;
}

static rt_status_t check_peer(const rtd_comm_t *c, int32_t peer, const char *what) {
    if (peer >= 0 && peer < c->size && peer != c->rank) return RT_OK;
    return rtd_error(RT_ERR_INVALID_ARGUMENT, "dist: %s: rank %d has no peer %d (of %d ranks)",
                    what, c->rank, peer, c->size);
}

/* Adds the time since t0 to the statistics; passes st on. t0 is taken in a
 * statement of its own before the call: the order in which a call's
 * arguments are evaluated is unspecified. */
static rt_status_t timed(rtd_comm_t *c, double t0, rt_status_t st) {
    c->stats.seconds += rtd_time_seconds() - t0;
    return st;
}

void rtd_comm_destroy(rtd_comm_t *c) {
    if (c != NULL) c->vt->destroy(c);
}

rt_status_t rtd_comm_send(rtd_comm_t *c, int32_t peer, int32_t tag, const void *data, size_t bytes,
                          int32_t *out_ticket) {
    rt_status_t st = check_peer(c, peer, "send");
    if (st != RT_OK) return st;
    const double t0 = rtd_time_seconds();
    st = timed(c, t0, c->vt->send(c, peer, tag, data, bytes, out_ticket));
    if (st == RT_OK) {
        c->stats.bytes_sent += bytes;
        c->stats.messages_sent++;
    }
    return st;
}

rt_status_t rtd_comm_wait(rtd_comm_t *c, int32_t ticket) {
    const double t0 = rtd_time_seconds();
    return timed(c, t0, c->vt->wait(c, ticket));
}

rt_status_t rtd_comm_recv(rtd_comm_t *c, int32_t peer, void *data, size_t cap, size_t *out_bytes,
                          int32_t *out_tag) {
    *out_bytes = 0;
    *out_tag = 0;
    rt_status_t st = check_peer(c, peer, "recv");
    if (st != RT_OK) return st;
    const double t0 = rtd_time_seconds();
    st = timed(c, t0, c->vt->recv(c, peer, data, cap, out_bytes, out_tag));
    if (st == RT_OK && *out_bytes > cap) /* an implementation's bug must not become ours */
        return rtd_error(RT_ERR_FORMAT, "dist: rank %d got %zu bytes from rank %d into %zu",
                        c->rank, *out_bytes, peer, cap);
    return st;
}

static size_t dtype_size(rtd_dtype_t type) { return type == RTD_DTYPE_F32 ? 4 : 8; }

rt_status_t rtd_comm_allreduce(rtd_comm_t *c, void *data, size_t n, rtd_dtype_t type) {
    if (type < 0 || type >= RTD_DTYPE_COUNT)
        return rtd_error(RT_ERR_INVALID_ARGUMENT, "dist: allreduce of type %d", type);
    const double t0 = rtd_time_seconds();
    const rt_status_t st = timed(c, t0, c->size == 1 ? RT_OK : c->vt->allreduce(c, data, n, type));
    if (st == RT_OK) c->stats.bytes_reduced += n * dtype_size(type);
    return st;
}

rt_status_t rtd_comm_broadcast(rtd_comm_t *c, int32_t root, void *data, size_t bytes) {
    if (root < 0 || root >= c->size)
        return rtd_error(RT_ERR_INVALID_ARGUMENT, "dist: broadcast from rank %d of %d", root, c->size);
    const double t0 = rtd_time_seconds();
    const rt_status_t st = timed(c, t0, c->size == 1 ? RT_OK : c->vt->broadcast(c, root, data, bytes));
    if (st == RT_OK && c->rank == root) c->stats.bytes_broadcast += bytes;
    return st;
}

void rtd_comm_abort(rtd_comm_t *c, int code) { c->vt->abort(c, code); }

//===--- tensors ---===//

rt_status_t rtd_comm_send_tensor(rtd_comm_t *c, int32_t peer, int32_t tag, const rt_tensor_t *t,
                                 void *staging) {
    int32_t ticket = -1;
    rt_status_t st = rt_tensor_get(t, staging, 0, rt_nbytes(t));
    if (st == RT_OK) st = rtd_comm_send(c, peer, tag, staging, rt_nbytes(t), &ticket);
    if (st == RT_OK) st = rtd_comm_wait(c, ticket);
    return st;
}

rt_status_t rtd_comm_recv_tensor(rtd_comm_t *c, int32_t peer, rt_tensor_t *t, void *staging) {
    size_t bytes = 0;
    int32_t tag = 0;
    rt_status_t st = rtd_comm_recv(c, peer, staging, rt_nbytes(t), &bytes, &tag);
    if (st == RT_OK && bytes != rt_nbytes(t))
        st = rtd_error(RT_ERR_FORMAT, "dist: rank %d got %zu bytes from rank %d for tensor %s of "
                      "%zu", c->rank, bytes, peer, t->name, rt_nbytes(t));
    if (st == RT_OK) st = rt_tensor_set(t, staging, 0, bytes);
    return st;
}
