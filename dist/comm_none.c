/* SPDX-License-Identifier: MIT */
/* comm_none.c: the communicator where rt was built without MPI: there is
 * none, and asking for one says why. */
#include "dist_impl.h"

rt_status_t rtd_comm_mpi_create(int *argc, char ***argv, rtd_comm_t **out) {
    (void)argc;
    (void)argv;
    *out = NULL;
    return rtd_error(RT_ERR_UNSUPPORTED, "dist: rt was built without MPI (./configure found no "
                     "mpicc); install libopenmpi-dev and configure again");
}
