/* SPDX-License-Identifier: MIT */
/* comm_nccl_none.c: the NCCL communicator where rt was built without it
 * (./configure found no nccl.h beside CUDA, or no MPI to bootstrap it):
 * there is none, and asking for one says why, on every rank alike. */
#include "dist_impl.h"

rt_status_t rtd_comm_nccl_create(rtd_comm_t *ctrl, rtd_comm_t **out) {
    *out = NULL;
    return rtd_error(RT_ERR_UNSUPPORTED, "dist: --dist nccl: rank %d: rt was built without NCCL "
                     "(./configure found no nccl.h with CUDA's nvcc and MPI); install NCCL and "
                     "configure again", ctrl->rank);
}
