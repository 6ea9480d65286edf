/* SPDX-License-Identifier: MIT */
/* device.c: rt_device_t, the core's wrapper of one plugin device. Wrapping
 * validates the device table and its buffer types (required slots, 1.0
 * sizes, power-of-two alignment), normalises them and the async and
 * host_ptr extensions into zero-filled copies, reads the properties once
 * and names the device after its plugin ("cpu0"). Also recognises one piece
 * of hardware reported by two plugins (equal PCI bus id or UUID), places
 * the device in the machine's topology (its NUMA node, from the PCI bus
 * id), and answers the public device and buffer-type queries. */
#include "abi_gate.h"
#include "device_impl.h"
#include "registry_impl.h"
#include "topo.h"

#include <stdio.h>
#include <string.h>

#define DEVICE_VTABLE_SIZE_1_0 RT_SIZE_THROUGH(rt_device_vtable_t, next)
#define BUFT_SIZE_1_0 RT_SIZE_THROUGH(rt_buffer_type_desc_t, buffer_vtable)
#define BUFFER_VTABLE_SIZE_1_0 RT_SIZE_THROUGH(rt_buffer_vtable_t, clear)
#define PROPS_SIZE_1_0 sizeof(rt_device_props_t) /* pinned in rt_device.h */
#define MAX_BUFTS 64

//===--- validating the plugin's tables ---===//

/* Returns the slot's name from the enclosing function when it is NULL. */
#define REQUIRE_SLOT(table, slot)              \
    do {                                       \
        if ((table)->slot == NULL) return #slot; \
    } while (0)

static const char *device_vtable_missing(const rt_device_vtable_t *vt) {
    REQUIRE_SLOT(vt, get_props);
    REQUIRE_SLOT(vt, buffer_type_count);
    REQUIRE_SLOT(vt, buffer_type);
    REQUIRE_SLOT(vt, supports_op);
    REQUIRE_SLOT(vt, queue_create);
    REQUIRE_SLOT(vt, queue_destroy);
    REQUIRE_SLOT(vt, graph_compute);
    REQUIRE_SLOT(vt, synchronize);
    return NULL;
}

static const char *buffer_vtable_missing(const rt_buffer_vtable_t *vt) {
    REQUIRE_SLOT(vt, destroy);
    REQUIRE_SLOT(vt, base);
    REQUIRE_SLOT(vt, set_tensor);
    REQUIRE_SLOT(vt, get_tensor);
    REQUIRE_SLOT(vt, memset_tensor);
    REQUIRE_SLOT(vt, clear);
    return NULL;
}

static rt_status_t check_device_vtable(const char *who, const rt_device_vtable_t *vt) {
    if (vt == NULL) return rt_error(RT_ERR_FORMAT, "%s: device_get gave no table", who);
    if (vt->struct_size < DEVICE_VTABLE_SIZE_1_0)
        return rt_error(RT_ERR_FORMAT, "%s: rt_device_vtable_t is %u bytes, smaller than the 1.0 "
                        "layout's %zu", who, vt->struct_size, DEVICE_VTABLE_SIZE_1_0);
    const char *missing = device_vtable_missing(vt);
    if (missing == NULL) return RT_OK;
    return rt_error(RT_ERR_FORMAT, "%s: required slot rt_device_vtable_t.%s is NULL", who, missing);
}

static rt_status_t check_buffer_vtable(const char *who, const rt_buffer_vtable_t *vt) {
    if (vt == NULL) return rt_error(RT_ERR_FORMAT, "%s: buffer_vtable is NULL", who);
    if (vt->struct_size < BUFFER_VTABLE_SIZE_1_0)
        return rt_error(RT_ERR_FORMAT, "%s: rt_buffer_vtable_t is %u bytes, smaller than the 1.0 "
                        "layout's %zu", who, vt->struct_size, BUFFER_VTABLE_SIZE_1_0);
    const char *missing = buffer_vtable_missing(vt);
    if (missing == NULL) return RT_OK;
    return rt_error(RT_ERR_FORMAT, "%s: required slot rt_buffer_vtable_t.%s is NULL", who, missing);
}

static rt_status_t check_buft(const char *who, const rt_buffer_type_desc_t *d) {
    if (d == NULL) return rt_error(RT_ERR_FORMAT, "%s: buffer type is NULL", who);
    if (d->struct_size < BUFT_SIZE_1_0)
        return rt_error(RT_ERR_FORMAT, "%s: rt_buffer_type_desc_t is %u bytes, smaller than the "
                        "1.0 layout's %zu", who, d->struct_size, BUFT_SIZE_1_0);
    if (d->name == NULL) return rt_error(RT_ERR_FORMAT, "%s: buffer type has no name", who);
    if (d->alignment == 0 || (d->alignment & (d->alignment - 1)) != 0)
        return rt_error(RT_ERR_FORMAT, "%s: buffer type %s: alignment %zu is not a power of two",
                        who, d->name, d->alignment);
    if (d->alloc == NULL)
        return rt_error(RT_ERR_FORMAT, "%s: buffer type %s: required slot alloc is NULL", who,
                        d->name);
    return check_buffer_vtable(who, d->buffer_vtable);
}

//===--- buffer types ---===//

static rt_status_t adopt_buft(rt_device_t *dev, rt_buffer_type_t *bt,
                              const rt_buffer_type_desc_t *d) {
    const rt_status_t st = check_buft(dev->name, d);
    if (st != RT_OK) return st;
    bt->device = dev;
    bt->plugin_desc = d;
    rt_struct_copy(&bt->desc, sizeof bt->desc, d, d->struct_size);
    rt_struct_copy(&bt->buffer_vtable, sizeof bt->buffer_vtable, d->buffer_vtable,
                   d->buffer_vtable->struct_size);
    bt->desc.struct_size = sizeof bt->desc;
    bt->buffer_vtable.struct_size = sizeof bt->buffer_vtable;
    bt->desc.buffer_vtable = &bt->buffer_vtable;
    return RT_OK;
}

/* Whether the application sees buffer type i (rt_base.h, rule 8). The
 * default one (index 0) must be usable by everyone, or the device is not. */
static bool shown(rt_device_t *dev, rt_buffer_type_t *bt, uint32_t i) {
    const bool ok = rt_abi_gate_buft(dev->plugin->info.abi_version, dev->registry->app_abi,
                                     &bt->desc.flags);
    if (!ok)
        rt_log(RT_LOG_INFO, "%s: buffer type %s hidden from this application (ABI %u.%u)",
               dev->name, bt->desc.name, RT_ABI_VERSION_GET_MAJOR(dev->registry->app_abi),
               RT_ABI_VERSION_GET_MINOR(dev->registry->app_abi));
    if (!ok) memset(bt, 0, sizeof *bt);
    return ok && (i == 0 || dev->n_bufts > 0);
}

static rt_status_t adopt_bufts(rt_device_t *dev) {
    const uint32_t n = dev->vtable.buffer_type_count(dev->handle);
    if (n == 0 || n > MAX_BUFTS)
        return rt_error(RT_ERR_FORMAT, "%s: reports %u buffer types (1 to %d allowed)", dev->name,
                        n, MAX_BUFTS);
    const rt_allocator_t *a = &dev->registry->allocator;
    dev->bufts = rt_mem_calloc(a, n * sizeof dev->bufts[0]);
    if (dev->bufts == NULL) return rt_error(RT_ERR_OUT_OF_MEMORY, "%s: no memory", dev->name);
    dev->n_bufts = 0;
    rt_status_t st = RT_OK;
    for (uint32_t i = 0; i < n && st == RT_OK; i++) {
        st = adopt_buft(dev, &dev->bufts[dev->n_bufts], dev->vtable.buffer_type(dev->handle, i));
        if (st == RT_OK && shown(dev, &dev->bufts[dev->n_bufts], i)) dev->n_bufts++;
    }
    if (st == RT_OK && dev->n_bufts == 0)
        st = rt_error(RT_ERR_UNSUPPORTED, "%s: its default buffer type is one this application "
                      "(ABI %u.%u) must not use", dev->name,
                      RT_ABI_VERSION_GET_MAJOR(dev->registry->app_abi),
                      RT_ABI_VERSION_GET_MINOR(dev->registry->app_abi));
    return st;
}

//===--- extensions ---===//

static rt_status_t visit_ext(void *ctx, const rt_ext_header_t *r) {
    rt_device_t *dev = ctx;
    if (r->type == RT_EXT_DEVICE_ASYNC)
        rt_struct_copy(&dev->async, sizeof dev->async, r, r->struct_size);
    else if (r->type == RT_EXT_DEVICE_HOST_PTR)
        rt_struct_copy(&dev->host_ptr, sizeof dev->host_ptr, r, r->struct_size);
    else if (r->type == RT_EXT_DEVICE_SPEED)
        rt_struct_copy(&dev->speed, sizeof dev->speed, r, r->struct_size);
    else
        rt_log(RT_LOG_DEBUG, "%s: skipping device extension of unknown type %u", dev->name,
               r->type);
    return RT_OK;
}

/* The host_ptr buffer type is usually one of the listed ones; otherwise it
 * is wrapped on its own. An incomplete extension is dropped. */
static rt_status_t adopt_host_ptr(rt_device_t *dev) {
    rt_device_ext_host_ptr_t *h = &dev->host_ptr;
    if (h->header.type == 0) return RT_OK;
    if (h->buffer_type == NULL || h->buffer_from_host_ptr == NULL) {
        rt_log(RT_LOG_WARN, "%s: host_ptr extension without buffer_type or "
               "buffer_from_host_ptr; ignored", dev->name);
        memset(h, 0, sizeof *h);
        return RT_OK;
    }
    for (int32_t i = 0; i < dev->n_bufts; i++)
        if (dev->bufts[i].plugin_desc == h->buffer_type) return RT_OK;
    return adopt_buft(dev, &dev->host_ptr_buft, h->buffer_type);
}

/* Capabilities promise what the extensions deliver; keep only those. */
static void mask_caps(rt_device_t *dev) {
    const rt_device_ext_async_t *as = &dev->async;
    const bool async = as->header.type != 0 && as->set_tensor_async != NULL &&
                       as->get_tensor_async != NULL;
    const bool events = async && as->event_create != NULL && as->event_destroy != NULL &&
                        as->event_record != NULL && as->event_wait != NULL &&
                        as->event_synchronize != NULL;
    if (!async) dev->props.caps &= ~(uint64_t)RT_DEVICE_CAP_ASYNC;
    if (!events) dev->props.caps &= ~(uint64_t)RT_DEVICE_CAP_EVENTS;
    if (dev->host_ptr.header.type == 0)
        dev->props.caps &= ~(uint64_t)RT_DEVICE_CAP_BUFFER_FROM_HOST_PTR;
}

//===--- wrapping ---===//

static rt_status_t read_props(rt_device_t *dev) {
    rt_error_snapshot_t snap;
    char what[128];
    memset(&dev->props, 0, sizeof dev->props);
    dev->props.struct_size = sizeof dev->props;
    rt_error_snapshot(&snap);
    rt_status_t st = dev->vtable.get_props(dev->handle, &dev->props);
    dev->props.struct_size = sizeof dev->props;
    dev->props.name[sizeof dev->props.name - 1] = '\0';
    dev->props.description[sizeof dev->props.description - 1] = '\0';
    dev->props.pci_bus_id[sizeof dev->props.pci_bus_id - 1] = '\0';
    if (st == RT_OK) return RT_OK;
    snprintf(what, sizeof what, "%s: get_props failed", dev->name);
    return rt_plugin_failed(st, &snap, what);
}

static rt_status_t adopt_device(rt_device_t *dev, const rt_device_vtable_t *vt) {
    rt_status_t st = check_device_vtable(dev->name, vt);
    if (st != RT_OK) return st;
    rt_struct_copy(&dev->vtable, sizeof dev->vtable, vt, vt->struct_size);
    dev->vtable.struct_size = sizeof dev->vtable;
    st = rt_ext_walk(vt->next, dev->name, visit_ext, dev);
    if (st == RT_OK) st = read_props(dev);
    if (st == RT_OK) st = adopt_bufts(dev);
    if (st == RT_OK) st = adopt_host_ptr(dev);
    mask_caps(dev);
    return st;
}

rt_status_t rt_device_wrap(rt_registry_t *reg, rt_plugin_rec_t *rec, uint32_t index,
                           rt_device_t **out_dev) {
    *out_dev = NULL;
    rt_error_snapshot_t snap;
    char what[128];
    void *handle = NULL;
    const rt_device_vtable_t *vt = NULL;
    rt_error_snapshot(&snap);
    rt_status_t st = rec->vtable.device_get(rec->handle, index, &handle, &vt);
    if (st != RT_OK) {
        snprintf(what, sizeof what, "%s%u: device_get failed", rec->desc.name, index);
        return rt_plugin_failed(st, &snap, what);
    }
    rt_device_t *dev = rt_mem_calloc(&reg->allocator, sizeof *dev);
    if (dev == NULL)
        return rt_error(RT_ERR_OUT_OF_MEMORY, "%s%u: no memory for the device", rec->desc.name,
                        index);
    dev->registry = reg;
    dev->plugin = rec;
    dev->plugin_index = index;
    dev->handle = handle;
    snprintf(dev->name, sizeof dev->name, "%s%u", rec->desc.name, index);
    st = adopt_device(dev, vt);
    if (st != RT_OK) {
        rt_device_unwrap(dev);
        return st;
    }
    *out_dev = dev;
    return RT_OK;
}

void rt_device_unwrap(rt_device_t *dev) {
    if (dev == NULL) return;
    const rt_allocator_t *a = &dev->registry->allocator;
    if (dev->vtable.destroy != NULL) dev->vtable.destroy(dev->handle);
    rt_mem_free(a, dev->bufts, (size_t)dev->n_bufts * sizeof dev->bufts[0]);
    rt_mem_free(a, dev, sizeof *dev);
}

rt_buffer_type_t *rt_device_host_ptr_buffer_type(const rt_device_t *dev) {
    if (dev == NULL || dev->host_ptr.header.type == 0) return NULL;
    for (int32_t i = 0; i < dev->n_bufts; i++)
        if (dev->bufts[i].plugin_desc == dev->host_ptr.buffer_type) return &dev->bufts[i];
    return (rt_buffer_type_t *)&dev->host_ptr_buft;
}

//===--- the same hardware twice ---===//

bool rt_pci_bus_id_parse(const char *s, unsigned out_id[4]) {
    unsigned v[4];
    int end = 0;
    if (s == NULL) return false;
    if (sscanf(s, "%x:%x:%x.%x%n", &v[0], &v[1], &v[2], &v[3], &end) == 4 && s[end] == '\0') {
        memcpy(out_id, v, sizeof v);
        return true;
    }
    end = 0;
    if (sscanf(s, "%x:%x.%x%n", &v[1], &v[2], &v[3], &end) == 3 && s[end] == '\0') {
        out_id[0] = 0;
        memcpy(out_id + 1, v + 1, 3 * sizeof v[0]);
        return true;
    }
    return false;
}

/* Equal PCI addresses (numerically, so "0000:03:00.0" is "00000000:03:00.0"),
 * or equal UUIDs when both devices have one. */
static bool same_hardware(const rt_device_props_t *a, const rt_device_props_t *b) {
    unsigned ia[4], ib[4];
    if (a->pci_bus_id[0] != '\0' && b->pci_bus_id[0] != '\0') {
        if (rt_pci_bus_id_parse(a->pci_bus_id, ia) && rt_pci_bus_id_parse(b->pci_bus_id, ib))
            return memcmp(ia, ib, sizeof ia) == 0;
        return strcmp(a->pci_bus_id, b->pci_bus_id) == 0;
    }
    return a->has_uuid == 1 && b->has_uuid == 1 && memcmp(a->uuid, b->uuid, sizeof a->uuid) == 0;
}

void rt_device_find_duplicates(rt_registry_t *reg) {
    for (int32_t i = 0; i < reg->n_devices; i++) {
        rt_device_t *dev = reg->devices[i];
        dev->same_as = NULL;
        for (int32_t j = 0; j < i && dev->same_as == NULL; j++)
            if (same_hardware(&reg->devices[j]->props, &dev->props)) dev->same_as = reg->devices[j];
    }
}

//===--- rt_device_t ---===//

const char *rt_device_name(const rt_device_t *dev) { return dev != NULL ? dev->name : "?"; }

const char *rt_device_plugin_name(const rt_device_t *dev) {
    return dev != NULL ? dev->plugin->desc.name : "?";
}

rt_status_t rt_device_get_props(const rt_device_t *dev, rt_device_props_t *props) {
    RT_ARMOR(dev != NULL && props != NULL);
    /* A newer caller's fields beyond what this core knows read as zero. */
    rt_struct_copy_out(props, &dev->props, sizeof dev->props, PROPS_SIZE_1_0);
    /* Free memory changes as buffers come and go (placement decides by
     * it): ask the plugin again, keeping the rest as read at load. */
    rt_device_props_t now = {.struct_size = sizeof now};
    if (dev->vtable.get_props(dev->handle, &now) == RT_OK &&
        RT_STRUCT_HAS(props, rt_device_props_t, memory_free))
        props->memory_free = now.memory_free;
    return RT_OK;
}

rt_device_t *rt_device_same_as(const rt_device_t *dev) {
    return dev != NULL ? dev->same_as : NULL;
}

//===--- the device's place in the machine ---===//

/* Looked up on every call rather than stored at load: the shared topology
 * follows HWLOC_XMLFILE, which tests change between registries. */
int32_t rt_device_numa_node(const rt_device_t *dev) {
    if (dev == NULL || dev->props.pci_bus_id[0] == '\0') return -1;
    return rt_topology_numa_node_of_pci(rt_topology_get_shared(), dev->props.pci_bus_id);
}

rt_status_t rt_device_numa_cpus(const rt_device_t *dev, int32_t max_ids, int32_t *out_cpu_ids,
                                int32_t *out_n_ids) {
    RT_ARMOR(dev != NULL && out_n_ids != NULL);
    *out_n_ids = 0;
    const int32_t node = rt_device_numa_node(dev);
    if (node < 0)
        return rt_error(RT_ERR_NOT_FOUND, "%s: NUMA node unknown (PCI bus id \"%s\")", dev->name,
                        dev->props.pci_bus_id);
    return rt_topology_numa_node_cpus(rt_topology_get_shared(), node, max_ids, out_cpu_ids,
                                      out_n_ids);
}

int32_t rt_device_buffer_type_count(const rt_device_t *dev) {
    return dev != NULL ? dev->n_bufts : 0;
}

rt_buffer_type_t *rt_device_buffer_type(const rt_device_t *dev, int32_t i) {
    if (dev == NULL || i < 0 || i >= dev->n_bufts) return NULL;
    return &dev->bufts[i];
}

/* A plugin is never asked about an op or a type its version does not
 * define (abi_gate.c). */
bool rt_device_supports_op(const rt_device_t *dev, const rt_tensor_t *node) {
    char why[160];
    if (dev == NULL || node == NULL) return false;
    if (rt_abi_gate_node(dev->plugin->info.abi_version, node, why, sizeof why) != NULL)
        return false;
    return dev->vtable.supports_op(dev->handle, node);
}

bool rt_device_supports_buft(const rt_device_t *dev, const rt_buffer_type_t *buft) {
    if (dev == NULL || buft == NULL) return false;
    if (dev->vtable.supports_buft != NULL)
        return dev->vtable.supports_buft(dev->handle, buft->plugin_desc);
    return buft->device == dev;
}
