/* SPDX-License-Identifier: MIT */
/* comm_nccl.c: the communicator on NCCL, for tensors in GPU memory, built
 * where ./configure found nccl.h and CUDA (and MPI). NCCL needs a bootstrap
 * and has neither tags nor message sizes, so it rides on the MPI
 * communicator, which it takes over: rank 0's ncclUniqueId is broadcast
 * over MPI, and each point-to-point message is an MPI header (the tag as
 * MPI's tag, the byte count as the payload) followed by the bytes over
 * NCCL. The receiver checks the count against its capacity before it
 * posts anything; a longer message is drained into the staging buffer
 * (up to DRAIN_MAX, beyond which the communicator is out of step and
 * refuses every later call) so that what follows still lines up.
 *
 * Data may be in device memory (a CUDA device pointer, as the CUDA
 * plugin's buffers hold: NCCL reads and writes it in place) or in host
 * memory (staged through one device buffer of this rank's GPU, grown as
 * needed). Every call synchronises the rank's one stream before it
 * returns, so a send is complete when send returns and wait has nothing
 * left to do.
 *
 * libnccl.so.2 (RTD_NCCL_LIBRARY overrides it) and the CUDA driver
 * (libcuda.so.1) are opened at run time, so librtdist links neither and a
 * machine without them runs MPI as before; --dist nccl there is refused
 * on every rank together, each rank saying why (rtd_comm_flags). The rank
 * uses GPU local_rank % devices (Open MPI's, MPICH's or Slurm's local
 * rank, else its rank). */
#include "dist_impl.h"

#include <cuda.h>
#include <dlfcn.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DRAIN_MAX ((size_t)256 << 20) /* the longest refused message drained */

#define STR(x) #x
#define XSTR(x) STR(x)

/* The entry points used, each named as the library exports it (cuda.h
 * maps cuMemAlloc to cuMemAlloc_v2 and so on; XSTR sees the mapping). */
#define CUDA_FNS(X) X(cuInit) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDevicePrimaryCtxRetain) \
    X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent) X(cuStreamCreate) X(cuStreamDestroy)      \
    X(cuStreamSynchronize) X(cuMemAlloc) X(cuMemFree) X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) \
    X(cuPointerGetAttribute) X(cuGetErrorName)
#define NCCL_FNS(X) X(ncclGetVersion) X(ncclGetUniqueId) X(ncclCommInitRank) X(ncclCommDestroy) \
    X(ncclCommAbort) X(ncclAllReduce) X(ncclBroadcast) X(ncclSend) X(ncclRecv) X(ncclGetErrorString)

#define FIELD(fn) __typeof__(fn) *fn;
typedef struct api {
    void *cuda_lib, *nccl_lib;
    CUDA_FNS(FIELD)
    NCCL_FNS(FIELD)
} api_t;
#undef FIELD

typedef struct comm_nccl {
    rtd_comm_t base;
    rtd_comm_t *ctrl; /* the MPI communicator: bootstrap, headers, abort */
    api_t api;
    CUdevice device;
    bool ctx_retained;
    CUstream stream;
    ncclComm_t nccl;
    CUdeviceptr stage;
    size_t stage_size;
    bool out_of_step;
    uint64_t header; /* the header of the send in progress */
} comm_nccl_t;

//===--- errors ---===//

static rt_status_t cu_fail(const comm_nccl_t *m, CUresult r, const char *what) {
    const char *name = NULL;
    if (m->api.cuGetErrorName == NULL || m->api.cuGetErrorName(r, &name) != CUDA_SUCCESS) name = "?";
    return rtd_error(RT_ERR_IO, "dist: nccl: rank %d: %s: %s (%d)", m->base.rank, what, name, (int)r);
}

static rt_status_t nccl_fail(const comm_nccl_t *m, ncclResult_t r, const char *what, int32_t peer) {
    return rtd_error(RT_ERR_IO, "dist: nccl: rank %d: %s rank %d failed: %s", m->base.rank, what, peer,
                     m->api.ncclGetErrorString(r));
}

//===--- the libraries ---===//

static bool load_fns(void *lib, void **slots, const char *const *names, size_t n, const char **missing) {
    for (size_t i = 0; i < n; i++)
        if ((slots[i] = dlsym(lib, names[i])) == NULL) {
            *missing = names[i];
            return false;
        }
    return true;
}

#define NAME(fn) XSTR(fn),
#define COUNT(fn) +1
static rt_status_t load_api(api_t *a, int32_t rank) {
    static const char *const cuda_names[] = {CUDA_FNS(NAME)}, *const nccl_names[] = {NCCL_FNS(NAME)};
    const char *nccl = getenv("RTD_NCCL_LIBRARY") ? getenv("RTD_NCCL_LIBRARY") : "libnccl.so.2";
    const char *missing = NULL;
    if ((a->nccl_lib = dlopen(nccl, RTLD_NOW | RTLD_LOCAL)) == NULL)
        return rtd_error(RT_ERR_UNSUPPORTED, "rank %d has no NCCL library: %s (install NCCL or name it "
                         "in RTD_NCCL_LIBRARY)", rank, dlerror());
    if (!load_fns(a->nccl_lib, (void **)&a->ncclGetVersion, nccl_names, 0 NCCL_FNS(COUNT), &missing))
        return rtd_error(RT_ERR_UNSUPPORTED, "rank %d: %s lacks %s", rank, nccl, missing);
    if ((a->cuda_lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) == NULL)
        return rtd_error(RT_ERR_UNSUPPORTED, "rank %d has no CUDA driver (no NVIDIA GPU?): %s", rank,
                         dlerror());
    if (!load_fns(a->cuda_lib, (void **)&a->cuInit, cuda_names, 0 CUDA_FNS(COUNT), &missing))
        return rtd_error(RT_ERR_UNSUPPORTED, "rank %d: libcuda.so.1 lacks %s", rank, missing);
    return RT_OK;
}
#undef NAME
#undef COUNT

/* Open MPI's, MPICH's or Slurm's rank among the ranks of this host. */
static int32_t local_rank(int32_t rank) {
    static const char *const vars[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i]) != NULL) return (int32_t)strtol(getenv(vars[i]), NULL, 10);
    return rank;
}

/* This rank's GPU, its primary context current, and a stream. */
static rt_status_t open_device(comm_nccl_t *m) {
    api_t *a = &m->api;
    int count = 0;
    CUresult r = a->cuInit(0);
    if (r == CUDA_SUCCESS) r = a->cuDeviceGetCount(&count);
    if (r != CUDA_SUCCESS) return cu_fail(m, r, "no CUDA device: cuInit");
    if (count < 1) return rtd_error(RT_ERR_UNSUPPORTED, "rank %d: 0 CUDA devices", m->base.rank);
    CUcontext ctx = NULL;
    r = a->cuDeviceGet(&m->device, local_rank(m->base.rank) % count);
    if (r == CUDA_SUCCESS) r = a->cuDevicePrimaryCtxRetain(&ctx, m->device);
    m->ctx_retained = r == CUDA_SUCCESS;
    if (r == CUDA_SUCCESS) r = a->cuCtxSetCurrent(ctx);
    if (r == CUDA_SUCCESS) r = a->cuStreamCreate(&m->stream, CU_STREAM_NON_BLOCKING);
    return r == CUDA_SUCCESS ? RT_OK : cu_fail(m, r, "the CUDA device");
}

//===--- memory ---===//

static bool on_device(const comm_nccl_t *m, const void *p) {
    unsigned int type = 0;
    return p != NULL && m->api.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                                      (CUdeviceptr)(uintptr_t)p) == CUDA_SUCCESS &&
           type == CU_MEMORYTYPE_DEVICE;
}

static rt_status_t grow_stage(comm_nccl_t *m, size_t bytes) {
    if (bytes <= m->stage_size) return RT_OK;
    if (m->stage) m->api.cuMemFree(m->stage);
    m->stage = 0;
    m->stage_size = 0;
    const CUresult r = m->api.cuMemAlloc(&m->stage, bytes);
    if (r != CUDA_SUCCESS) return cu_fail(m, r, "the staging buffer");
    m->stage_size = bytes;
    return RT_OK;
}

/* The device address NCCL works on for [data, data + bytes): data itself,
 * or the staging buffer (filled from data when fill). */
static rt_status_t device_view(comm_nccl_t *m, const void *data, size_t bytes, bool fill, void **out) {
    if (on_device(m, data) || bytes == 0) {
        *out = (void *)data;
        return RT_OK;
    }
    rt_status_t st = grow_stage(m, bytes);
    CUresult r = CUDA_SUCCESS;
    if (st == RT_OK && fill) r = m->api.cuMemcpyHtoDAsync(m->stage, data, bytes, m->stream);
    if (st == RT_OK && r != CUDA_SUCCESS) st = cu_fail(m, r, "staging to the device");
    *out = (void *)(uintptr_t)m->stage;
    return st;
}

/* Waits for the stream; copies the staging buffer back into data when
 * dev is the staging buffer and back is set. */
static rt_status_t finish(comm_nccl_t *m, ncclResult_t nr, const char *what, int32_t peer, void *data,
                          const void *dev, size_t bytes, bool back) {
    if (nr != ncclSuccess) return nccl_fail(m, nr, what, peer);
    CUresult r = CUDA_SUCCESS;
    if (back && dev != data && bytes > 0) r = m->api.cuMemcpyDtoHAsync(data, m->stage, bytes, m->stream);
    if (r == CUDA_SUCCESS) r = m->api.cuStreamSynchronize(m->stream);
    return r == CUDA_SUCCESS ? RT_OK : cu_fail(m, r, what);
}

//===--- the vtable ---===//

/* What the communicator holds on the device, released. */
static void release(comm_nccl_t *m) {
    if (m->nccl) m->api.ncclCommDestroy(m->nccl);
    if (m->stage) m->api.cuMemFree(m->stage);
    if (m->stream) m->api.cuStreamDestroy(m->stream);
    if (m->ctx_retained) m->api.cuDevicePrimaryCtxRelease(m->device);
    /* the libraries stay loaded: NCCL's threads may outlive the communicator */
}

static void nccl_destroy(rtd_comm_t *c) {
    comm_nccl_t *m = (comm_nccl_t *)c;
    release(m);
    rtd_comm_destroy(m->ctrl);
    free(m);
}

static rt_status_t in_step(const comm_nccl_t *m) {
    return m->out_of_step ? rtd_error(RT_ERR_IO, "dist: nccl: rank %d: a refused message could not be "
                                      "drained; the communicator is out of step", m->base.rank)
                          : RT_OK;
}

static rt_status_t nccl_send(rtd_comm_t *c, int32_t peer, int32_t tag, const void *data, size_t bytes,
                             int32_t *out_ticket) {
    comm_nccl_t *m = (comm_nccl_t *)c;
    int32_t header_ticket = -1;
    void *dev = NULL;
    *out_ticket = 0;
    m->header = bytes;
    rt_status_t st = in_step(m);
    if (st == RT_OK) st = m->ctrl->vt->send(m->ctrl, peer, tag, &m->header, sizeof m->header, &header_ticket);
    if (st == RT_OK && bytes > 0) st = device_view(m, data, bytes, true, &dev);
    if (st == RT_OK && bytes > 0)
        st = finish(m, m->api.ncclSend(dev, bytes, ncclUint8, peer, m->nccl, m->stream), "sending to",
                    peer, NULL, dev, bytes, false);
    const rt_status_t w = header_ticket >= 0 ? m->ctrl->vt->wait(m->ctrl, header_ticket) : RT_OK;
    return st == RT_OK ? w : st;
}

static rt_status_t nccl_wait(rtd_comm_t *c, int32_t ticket) {
    (void)c; /* the send was complete when it returned */
    return ticket == 0 ? RT_OK : rtd_error(RT_ERR_INVALID_ARGUMENT, "dist: no send %d in flight", ticket);
}

/* A refused message of bytes from peer, received and dropped. */
static rt_status_t drain(comm_nccl_t *m, int32_t peer, size_t bytes) {
    rt_status_t st = bytes <= DRAIN_MAX ? grow_stage(m, bytes) : RT_ERR_DOES_NOT_FIT;
    if (st == RT_OK)
        st = finish(m, m->api.ncclRecv((void *)(uintptr_t)m->stage, bytes, ncclUint8, peer, m->nccl,
                                       m->stream), "draining a message from", peer, NULL, NULL, 0, false);
    m->out_of_step = st != RT_OK;
    return st;
}

static rt_status_t nccl_recv(rtd_comm_t *c, int32_t peer, void *data, size_t cap, size_t *out_bytes,
                             int32_t *out_tag) {
    comm_nccl_t *m = (comm_nccl_t *)c;
    uint64_t bytes = 0;
    size_t got = 0;
    void *dev = NULL;
    rt_status_t st = in_step(m);
    if (st == RT_OK) st = m->ctrl->vt->recv(m->ctrl, peer, &bytes, sizeof bytes, &got, out_tag);
    if (st == RT_OK && got != sizeof bytes)
        return rtd_error(RT_ERR_FORMAT, "dist: nccl: rank %d: a header of %zu bytes from rank %d",
                         c->rank, got, peer);
    if (st == RT_OK && bytes > cap) {
        drain(m, peer, (size_t)bytes);
        return rtd_error(RT_ERR_FORMAT, "dist: nccl: rank %d: a message of %llu bytes from rank %d "
                         "into %zu", c->rank, (unsigned long long)bytes, peer, cap);
    }
    if (st == RT_OK && bytes > 0) st = device_view(m, data, (size_t)bytes, false, &dev);
    if (st == RT_OK && bytes > 0)
        st = finish(m, m->api.ncclRecv(dev, (size_t)bytes, ncclUint8, peer, m->nccl, m->stream),
                    "receiving from", peer, data, dev, (size_t)bytes, true);
    *out_bytes = st == RT_OK ? (size_t)bytes : 0;
    return st;
}

static ncclDataType_t nccl_type(rtd_dtype_t t) {
    return t == RTD_DTYPE_F32 ? ncclFloat32 : t == RTD_DTYPE_F64 ? ncclFloat64 : ncclInt64;
}

static rt_status_t nccl_allreduce(rtd_comm_t *c, void *data, size_t n, rtd_dtype_t type) {
    comm_nccl_t *m = (comm_nccl_t *)c;
    const size_t bytes = n * (type == RTD_DTYPE_F32 ? 4 : 8);
    void *dev = NULL;
    rt_status_t st = in_step(m);
    if (st == RT_OK) st = device_view(m, data, bytes, true, &dev);
    return st != RT_OK ? st : finish(m, m->api.ncclAllReduce(dev, dev, n, nccl_type(type), ncclSum,
                                                             m->nccl, m->stream),
                                     "an allreduce with", -1, data, dev, bytes, true);
}

static rt_status_t nccl_broadcast(rtd_comm_t *c, int32_t root, void *data, size_t bytes) {
    comm_nccl_t *m = (comm_nccl_t *)c;
    void *dev = NULL;
    rt_status_t st = in_step(m);
    if (st == RT_OK) st = device_view(m, data, bytes, c->rank == root, &dev);
    return st != RT_OK ? st : finish(m, m->api.ncclBroadcast(dev, dev, bytes, ncclUint8, root, m->nccl,
                                                             m->stream),
                                     "a broadcast from", root, data, dev, bytes, c->rank != root);
}

static void nccl_abort(rtd_comm_t *c, int code) {
    comm_nccl_t *m = (comm_nccl_t *)c;
    if (m->nccl) m->api.ncclCommAbort(m->nccl); /* NCCL's threads stop waiting on the dead */
    m->nccl = NULL;
    m->ctrl->vt->abort(m->ctrl, code);
}

static const rtd_comm_vtable_t nccl_vtable = {nccl_destroy, nccl_send, nccl_wait, nccl_recv,
                                              nccl_allreduce, nccl_broadcast, nccl_abort};

//===--- joining ---===//

/* Every rank's st, agreed: RT_OK on all of them or an error on all,
 * naming the ranks that failed and this rank's reason. */
static rt_status_t all_ranks(comm_nccl_t *m, rt_status_t st, const char *stage) {
    static const char prefix[] = "dist: nccl: "; /* said once, by the message below */
    char mine[512], ranks[256];
    const char *why = st == RT_OK ? "" : rtd_last_error();
    if (strncmp(why, prefix, sizeof prefix - 1) == 0) why += sizeof prefix - 1;
    snprintf(mine, sizeof mine, "%s", why);
    bool any = false;
    const rt_status_t agreed = rtd_comm_flags(m->ctrl, st != RT_OK, ranks, sizeof ranks, &any);
    if (agreed != RT_OK) return agreed;
    if (!any) return RT_OK;
    return rtd_error(st != RT_OK ? st : RT_ERR_UNSUPPORTED, "dist: --dist nccl: rank(s) %s cannot %s%s%s",
                     ranks, stage, mine[0] ? "; " : " (this rank could: see theirs)", mine);
}

/* Rank 0's unique id to every rank (with whether it has one). */
static rt_status_t share_id(comm_nccl_t *m, ncclUniqueId *id) {
    struct { int64_t ok; ncclUniqueId id; } msg = {0};
    if (m->base.rank == 0) {
        const ncclResult_t r = m->api.ncclGetUniqueId(&msg.id);
        msg.ok = r == ncclSuccess;
        if (!msg.ok) nccl_fail(m, r, "ncclGetUniqueId for", 0);
    }
    const rt_status_t st = m->ctrl->vt->broadcast(m->ctrl, 0, &msg, sizeof msg);
    if (st != RT_OK) return st;
    *id = msg.id;
    return msg.ok ? RT_OK : m->base.rank == 0 ? RT_ERR_IO
                                               : rtd_error(RT_ERR_IO, "rank 0 has no NCCL unique id");
}

rt_status_t rtd_comm_nccl_create(rtd_comm_t *ctrl, rtd_comm_t **out) {
    *out = NULL;
    comm_nccl_t *m = calloc(1, sizeof *m);
    if (m == NULL) return rtd_error(RT_ERR_OUT_OF_MEMORY, "dist: no memory");
    m->base = (rtd_comm_t){.vt = &nccl_vtable, .rank = ctrl->rank, .size = ctrl->size};
    m->ctrl = ctrl;
    rt_status_t st = load_api(&m->api, ctrl->rank);
    if (st == RT_OK) st = open_device(m);
    st = all_ranks(m, st, "use NCCL on a CUDA device");
    ncclUniqueId id;
    if (st == RT_OK) st = all_ranks(m, share_id(m, &id), "share rank 0's NCCL id");
    if (st == RT_OK) {
        const ncclResult_t r = m->api.ncclCommInitRank(&m->nccl, ctrl->size, id, ctrl->rank);
        if (r != ncclSuccess) m->nccl = NULL;
        st = all_ranks(m, r == ncclSuccess ? RT_OK : nccl_fail(m, r, "ncclCommInitRank with", 0),
                       "join the NCCL communicator");
    }
    if (st != RT_OK) { /* the caller keeps the MPI communicator */
        release(m);
        free(m);
        return st;
    }
    *out = &m->base;
    return RT_OK;
}
