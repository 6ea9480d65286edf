/* SPDX-License-Identifier: MIT */
/* device.c: the CUDA plugin's start and stop, and its devices. Start asks
 * the (static) CUDA runtime for devices: without a driver or a GPU that
 * fails, and the plugin then loads with zero devices and logs the
 * runtime's reason. Each CUDA device becomes one rt device with its
 * properties (name, memory from cudaMemGetInfo, PCI bus id, UUID, compute
 * capability in the description, GPU or IGPU), its buffer types
 * (buffer.c), async and host-pointer extensions and its device table. Also
 * the plugin's error and memory helpers. */
#include "cuda_impl.h"

#include <stdio.h>
#include <string.h>

//===--- errors and memory ---===//

rt_status_t rt_cu_status(const rt_host_t *host, cudaError_t e, const char *func, const char *what) {
    if (e == cudaSuccess) return RT_OK;
    const rt_status_t st = e == cudaErrorMemoryAllocation ? RT_ERR_OUT_OF_MEMORY : RT_ERR_DEVICE;
    return host->set_error(st, "%s: %s: %s: %s", func, what, cudaGetErrorName(e),
                           cudaGetErrorString(e));
}

void *rt_cu_alloc(const rt_host_t *host, size_t size) {
    void *p = host->allocator.realloc(host->allocator.user_data, NULL, 0, size);
    if (p) memset(p, 0, size);
    return p;
}

void rt_cu_free(const rt_host_t *host, void *p, size_t size) {
    if (p) host->allocator.realloc(host->allocator.user_data, p, size, 0);
}

rt_status_t rt_cu_device_use(const rt_cu_device_t *dev) {
    return RT_CU_TRY(dev->host, cudaSetDevice(dev->ordinal));
}

//===--- properties ---===//

/* "0000:65:00.0": the runtime's bus id ("00000000:65:00.0") with the
 * 4-digit domain rt shows; the core parses either. */
static void cu_pci_bus_id(int ordinal, char *out, size_t size) {
    char raw[32];
    unsigned dom, bus, devno, fn;
    out[0] = '\0';
    if (cudaDeviceGetPCIBusId(raw, (int)sizeof raw, ordinal) != cudaSuccess) {
        (void)cudaGetLastError();
        return;
    }
    if (sscanf(raw, "%x:%x:%x.%x", &dom, &bus, &devno, &fn) == 4)
        snprintf(out, size, "%04x:%02x:%02x.%x", dom, bus, devno, fn);
    else snprintf(out, size, "%s", raw);
}

static void cu_version_text(int v, char *out, size_t size) {
    if (v > 0) snprintf(out, size, "%d.%d", v / 1000, v % 1000 / 10);
    else snprintf(out, size, "?");
}

static void cu_props_fill(rt_cu_device_t *dev, const struct cudaDeviceProp *prop) {
    const rt_cu_plugin_t *p = dev->plugin;
    rt_device_props_t *props = &dev->props;
    char drv[16], rt[16];
    cu_version_text(p->driver_version, drv, sizeof drv);
    cu_version_text(p->runtime_version, rt, sizeof rt);
    props->struct_size = sizeof *props;
    props->kind = dev->integrated ? RT_DEVICE_KIND_IGPU : RT_DEVICE_KIND_GPU;
    snprintf(props->name, sizeof props->name, "%.63s", prop->name);
    snprintf(props->description, sizeof props->description,
             "CUDA device %d, compute capability %d.%d, %d SMs, driver %s, runtime %s, %s%s",
             dev->ordinal, dev->cc_major, dev->cc_minor, dev->n_sm, drv, rt,
             p->cublas ? "cuBLAS " : "no cuBLAS",
             p->cublas ? rt_cu_cublas_version(p->cublas) : "");
    cu_pci_bus_id(dev->ordinal, props->pci_bus_id, sizeof props->pci_bus_id);
    memcpy(props->uuid, prop->uuid.bytes, sizeof props->uuid);
    props->has_uuid = 1;
    props->memory_total = prop->totalGlobalMem;
    props->caps = RT_DEVICE_CAP_ASYNC | RT_DEVICE_CAP_EVENTS | RT_DEVICE_CAP_HOST_BUFFER;
    if (dev->can_register) props->caps |= RT_DEVICE_CAP_BUFFER_FROM_HOST_PTR;
}

/* Total and free bytes of the device's memory, now; 0 when unknown. */
static void cu_memory_query(const rt_cu_device_t *dev, uint64_t *out_total, uint64_t *out_free) {
    size_t avail = 0, total = 0;
    if (cudaSetDevice(dev->ordinal) != cudaSuccess || cudaMemGetInfo(&avail, &total) != cudaSuccess) {
        (void)cudaGetLastError();
        return;
    }
    *out_total = total;
    *out_free = avail;
}

static rt_status_t cu_device_get_props(void *device, rt_device_props_t *props) {
    const rt_cu_device_t *dev = device;
    if (!dev || !props) return RT_ERR_MISUSE;
    rt_device_props_t now = dev->props;
    cu_memory_query(dev, &now.memory_total, &now.memory_free);
    const size_t size = props->struct_size < sizeof now ? props->struct_size : sizeof now;
    const size_t skip = sizeof props->struct_size;
    if (size > skip) memcpy((char *)props + skip, (const char *)&now + skip, size - skip);
    return RT_OK;
}

//===--- the device table ---===//

static uint32_t cu_device_buffer_type_count(void *device) {
    (void)device;
    return RT_CU_N_BUFT;
}

static const rt_buffer_type_desc_t *cu_device_buffer_type(void *device, uint32_t index) {
    const rt_cu_device_t *dev = device;
    return dev && index < RT_CU_N_BUFT ? &dev->bufts[index] : NULL;
}

/* Kernels read device memory; pinned host memory only where the GPU shares
 * the host's memory (an integrated GPU), since elsewhere every access would
 * cross the bus. Pinned buffers are for staging and for the CPU. */
static bool cu_device_supports_buft(void *device, const rt_buffer_type_desc_t *buft) {
    const rt_cu_device_t *dev = device;
    return buft == &dev->bufts[RT_CU_BUFT_DEVICE] ||
           (dev->integrated && buft == &dev->bufts[RT_CU_BUFT_HOST]);
}

static void cu_device_tables_init(rt_cu_device_t *dev) {
    rt_cu_buffer_types_init(dev);
    rt_cu_async_init(dev);
    dev->host_ptr = (rt_device_ext_host_ptr_t){
        .header = { sizeof(rt_device_ext_host_ptr_t), RT_EXT_DEVICE_HOST_PTR, NULL },
        .buffer_type = &dev->bufts[RT_CU_BUFT_HOST],
        .buffer_from_host_ptr = rt_cu_buffer_from_host_ptr,
    };
    if (dev->can_register) dev->async.header.next = &dev->host_ptr.header;
    dev->vtable = (rt_device_vtable_t){
        .struct_size = sizeof(rt_device_vtable_t),
        .destroy = NULL, /* the plugin's destroy releases its devices */
        .get_props = cu_device_get_props,
        .buffer_type_count = cu_device_buffer_type_count,
        .buffer_type = cu_device_buffer_type,
        .supports_op = rt_cu_supports_op,
        .supports_buft = cu_device_supports_buft,
        .queue_create = rt_cu_queue_create,
        .queue_destroy = rt_cu_queue_destroy,
        .graph_compute = rt_cu_graph_compute,
        .synchronize = rt_cu_queue_synchronize,
        .next = &dev->async.header,
    };
}

//===--- devices ---===//

/* The pool keeps at most an eighth of the device's memory cached. */
static rt_status_t cu_device_init(rt_cu_plugin_t *p, rt_cu_device_t *dev, int ordinal) {
    struct cudaDeviceProp prop;
    dev->plugin = p;
    dev->host = p->host;
    dev->ordinal = ordinal;
    dev->index = p->n_devices;
    dev->numa_node = -1;
    const cudaError_t e = cudaGetDeviceProperties(&prop, ordinal);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        p->host->log(RT_LOG_WARN, "cuda: skipping CUDA device %d: cudaGetDeviceProperties: %s",
                     ordinal, cudaGetErrorString(e));
        return RT_ERR_DEVICE;
    }
    int reg = 0;
    if (cudaDeviceGetAttribute(&reg, cudaDevAttrHostRegisterSupported, ordinal) != cudaSuccess) {
        (void)cudaGetLastError();
        reg = 0;
    }
    dev->cc_major = prop.major;
    dev->cc_minor = prop.minor;
    dev->n_sm = prop.multiProcessorCount;
    dev->integrated = prop.integrated != 0;
    /* Wrapping host memory in place (mmapped weights) is offered where the
     * GPU computes on host memory at full speed, an integrated one. On a
     * discrete GPU every access would cross the bus, and the model loader
     * maps weights in place on any device that offers it (model/weights.c),
     * so there weights are better copied into device memory. */
    dev->can_register = reg != 0 && dev->integrated;
    if (!rt_cu_pool_init(&dev->pool, prop.totalGlobalMem / 8))
        return p->host->set_error(RT_ERR_OUT_OF_MEMORY, "%s: no mutex", __func__);
    cu_props_fill(dev, &prop);
    cu_device_tables_init(dev);
    return RT_OK;
}

static void cu_device_deinit(rt_cu_device_t *dev) {
    if (cudaSetDevice(dev->ordinal) != cudaSuccess) (void)cudaGetLastError();
    rt_cu_pool_deinit(dev->host, &dev->pool);
}

/* Why the runtime found nothing, at INFO when there is no driver at all
 * (the common case of a machine without an NVIDIA GPU), else at WARN. */
static void cu_log_no_devices(const rt_cu_plugin_t *p, cudaError_t e) {
    char err[160];
    void *drv = rt_plugin_dl_open("libcuda.so.1", err, sizeof err);
    rt_plugin_dl_close(drv);
    p->host->log(drv ? RT_LOG_WARN : RT_LOG_INFO, "cuda: no devices: cudaGetDeviceCount: %s: %s (%s)",
                 cudaGetErrorName(e), cudaGetErrorString(e),
                 drv ? "the driver, libcuda.so.1, is installed" : "no driver: libcuda.so.1 not found");
}

/* How many devices the runtime reports; 0 (and why, in the log) is not an
 * error. */
static int cu_device_count(const rt_cu_plugin_t *p) {
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        cu_log_no_devices(p, e);
        return 0;
    }
    if (n <= 0) p->host->log(RT_LOG_INFO, "cuda: no devices: the driver reports no CUDA device");
    return n > 0 ? n : 0;
}

static rt_status_t cu_devices_create(rt_cu_plugin_t *p, int n) {
    p->devices = rt_cu_alloc(p->host, (size_t)n * sizeof p->devices[0]);
    if (!p->devices)
        return p->host->set_error(RT_ERR_OUT_OF_MEMORY, "%s: no memory for %d devices", __func__, n);
    p->cap_devices = (uint32_t)n;
    for (int i = 0; i < n; i++) {
        rt_cu_device_t *dev = &p->devices[p->n_devices];
        const rt_status_t st = cu_device_init(p, dev, i);
        if (st == RT_ERR_OUT_OF_MEMORY) return st;
        if (st == RT_OK) p->n_devices++;
    }
    return RT_OK;
}

/* Whether the driver library is there at all. Without it the plugin has
 * no devices and touches nothing else: the CUDA runtime's own start-up and
 * cuBLAS (hundreds of MiB mapped) are what a machine without an NVIDIA GPU
 * would otherwise pay for listing its devices. */
static bool cu_driver_present(const rt_cu_plugin_t *p) {
    char err[160];
    void *drv = rt_plugin_dl_open("libcuda.so.1", err, sizeof err);
    if (drv == NULL) {
        p->host->log(RT_LOG_INFO, "cuda: no devices: no driver (libcuda.so.1: %s)", err);
        return false;
    }
    rt_plugin_dl_close(drv); /* the runtime opens it again itself */
    return true;
}

/* cuBLAS is opened only when there is a device to use it on (devices
 * describe themselves with its version). */
rt_status_t rt_cu_plugin_start(rt_cu_plugin_t *p) {
    if (!cu_driver_present(p)) return RT_OK;
    if (cudaDriverGetVersion(&p->driver_version) != cudaSuccess) p->driver_version = 0;
    if (cudaRuntimeGetVersion(&p->runtime_version) != cudaSuccess) p->runtime_version = 0;
    (void)cudaGetLastError();
    const int n = cu_device_count(p);
    if (n == 0) return RT_OK;
    p->cublas = rt_cu_cublas_load(p->host, p->cublas_reason, sizeof p->cublas_reason);
    const rt_status_t st = cu_devices_create(p, n);
    if (st == RT_OK && p->n_devices > 0 && !p->cublas)
        p->host->log(RT_LOG_INFO, "cuda: no cuBLAS (%s): MUL_MAT runs on the plugin's kernels",
                     p->cublas_reason);
    return st;
}

void rt_cu_plugin_stop(rt_cu_plugin_t *p) {
    for (uint32_t i = 0; i < p->n_devices; i++) cu_device_deinit(&p->devices[i]);
    rt_cu_free(p->host, p->devices, p->cap_devices * sizeof p->devices[0]);
    p->devices = NULL;
    p->cap_devices = 0;
    p->n_devices = 0;
    rt_cu_cublas_unload(p->host, p->cublas);
    p->cublas = NULL;
}
