/* SPDX-License-Identifier: MIT */
/* fake.c: a complete tiny rt plugin, built from abi/ alone as a third party
 * would build one, for the loader tests. One device of kind SOFTWARE with
 * one host buffer type; it supports the view family and ADD of two
 * same-shaped contiguous F32 tensors, and computes ADD.
 *
 * Compile-time switches: FAKE_NAME=ident (the plugin's name; default
 * "fake", or "badmajor" / "initfail" with the next two), FAKE_BAD_MAJOR
 * (declares ABI 2.0), FAKE_INIT_FAILS (create fails with a message).
 * Environment knobs, read by create: FAKE_PCI_ID (the device's PCI bus
 * id), FAKE_MAX_SIZE (the buffer type's max_size in bytes), FAKE_ALLOC_FAILS
 * (every buffer allocation fails with RT_ERR_OUT_OF_MEMORY), FAKE_CREATE_LOG
 * (a file to which every create appends a line: the lazy-start tests count
 * them).
 *
 *     cc -shared -fPIC -std=c11 -Iabi tests/plugins/fake.c -DFAKE_NAME=mine \
 *        -Wl,--version-script=abi/plugin.map -o rt-plugin-mine.so
 */
#include "../../abi/rt_plugin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_STR_(x) #x
#define FAKE_STR(x) FAKE_STR_(x)
#if defined(FAKE_NAME)
#  define FAKE_NAME_STR FAKE_STR(FAKE_NAME)
#elif defined(FAKE_BAD_MAJOR)
#  define FAKE_NAME_STR "badmajor"
#elif defined(FAKE_INIT_FAILS)
#  define FAKE_NAME_STR "initfail"
#else
#  define FAKE_NAME_STR "fake"
#endif

#define FAKE_ALIGN 64

#ifdef FAKE_INIT_FAILS
static const bool init_fails = true;
#else
static const bool init_fails = false;
#endif

typedef struct fake {
    const rt_host_t *host;
    char pci_bus_id[32];
    int alloc_fails;
    rt_buffer_type_desc_t buft;
} fake_t;

typedef struct fake_buffer {
    const rt_allocator_t *allocator;
    void *mem;   /* as allocated */
    size_t size; /* bytes allocated */
    char *base;  /* mem rounded up to FAKE_ALIGN */
    size_t used; /* bytes the core asked for */
} fake_buffer_t;

typedef struct fake_queue {
    fake_t *fake;
} fake_queue_t;

static const rt_host_t *g_host; /* for the few calls that get no handle */

//===--- buffers ---===//

static void buffer_destroy(void *state) {
    fake_buffer_t *b = state;
    b->allocator->realloc(b->allocator->user_data, b->mem, b->size, 0);
}

static void *buffer_base(void *state) { return ((fake_buffer_t *)state)->base; }

static rt_status_t buffer_set(void *state, rt_tensor_t *t, const void *data, size_t offset,
                              size_t size) {
    (void)state;
    memcpy((char *)t->data + offset, data, size);
    return RT_OK;
}

static rt_status_t buffer_get(void *state, const rt_tensor_t *t, void *data, size_t offset,
                              size_t size) {
    (void)state;
    memcpy(data, (const char *)t->data + offset, size);
    return RT_OK;
}

static rt_status_t buffer_memset(void *state, rt_tensor_t *t, uint8_t value, size_t offset,
                                 size_t size) {
    (void)state;
    memset((char *)t->data + offset, value, size);
    return RT_OK;
}

static rt_status_t buffer_clear(void *state, uint8_t value) {
    fake_buffer_t *b = state;
    memset(b->base, value, b->used);
    return RT_OK;
}

static const rt_buffer_vtable_t buffer_vtable = {
    sizeof buffer_vtable, 0, buffer_destroy, buffer_base, NULL, buffer_set, buffer_get,
    buffer_memset, NULL, buffer_clear,
};

static rt_status_t buft_alloc(void *ctx, size_t size, void *state) {
    fake_t *f = ctx;
    fake_buffer_t *b = state;
    if (f->alloc_fails)
        return f->host->set_error(RT_ERR_OUT_OF_MEMORY, FAKE_NAME_STR "0: out of memory "
                                  "allocating %zu bytes (FAKE_ALLOC_FAILS)", size);
    b->allocator = &f->host->allocator;
    b->size = size + FAKE_ALIGN;
    b->mem = b->allocator->realloc(b->allocator->user_data, NULL, 0, b->size);
    if (b->mem == NULL)
        return f->host->set_error(RT_ERR_OUT_OF_MEMORY, FAKE_NAME_STR "0: out of memory "
                                  "allocating %zu bytes", size);
    b->base = (char *)(((uintptr_t)b->mem + FAKE_ALIGN - 1) & ~(uintptr_t)(FAKE_ALIGN - 1));
    b->used = size;
    return RT_OK;
}

//===--- ops ---===//

static bool is_view_op(rt_op_t op) {
    return op == RT_OP_VIEW || op == RT_OP_RESHAPE || op == RT_OP_PERMUTE ||
           op == RT_OP_TRANSPOSE;
}

static bool same_shape(const rt_tensor_t *a, const rt_tensor_t *b) {
    for (int i = 0; i < RT_MAX_DIMS; i++)
        if (a->ne[i] != b->ne[i]) return false;
    return true;
}

static bool supports_add(const rt_tensor_t *n) {
    const rt_tensor_t *a = n->src[0], *b = n->src[1];
    if (a == NULL || b == NULL) return false;
    if (n->type != RT_TYPE_F32 || a->type != RT_TYPE_F32 || b->type != RT_TYPE_F32) return false;
    return same_shape(n, a) && same_shape(n, b) && g_host->tensor_is_contiguous(n) &&
           g_host->tensor_is_contiguous(a) && g_host->tensor_is_contiguous(b);
}

static bool device_supports_op(void *device, const rt_tensor_t *node) {
    (void)device;
    return is_view_op(node->op) || (node->op == RT_OP_ADD && supports_add(node));
}

static void compute_add(rt_tensor_t *n) {
    const float *a = n->src[0]->data, *b = n->src[1]->data;
    float *c = n->data;
    const size_t count = g_host->tensor_nbytes(n) / sizeof(float);
    for (size_t i = 0; i < count; i++) c[i] = a[i] + b[i];
}

//===--- the device ---===//

static rt_status_t device_get_props(void *device, rt_device_props_t *p) {
    const fake_t *f = device;
    p->kind = RT_DEVICE_KIND_SOFTWARE;
    snprintf(p->name, sizeof p->name, "Fake device (%s)", FAKE_NAME_STR);
    snprintf(p->description, sizeof p->description, "tests/plugins/fake.c, ABI %u.%u",
             RT_ABI_VERSION_MAJOR, RT_ABI_VERSION_MINOR);
    p->memory_total = 1u << 30;
    p->memory_free = 1u << 30;
    p->caps = RT_DEVICE_CAP_HOST_BUFFER;
    if (RT_STRUCT_HAS(p, rt_device_props_t, pci_bus_id))
        snprintf(p->pci_bus_id, sizeof p->pci_bus_id, "%s", f->pci_bus_id);
    return RT_OK;
}

static uint32_t device_buffer_type_count(void *device) {
    (void)device;
    return 1;
}

static const rt_buffer_type_desc_t *device_buffer_type(void *device, uint32_t index) {
    return index == 0 ? &((fake_t *)device)->buft : NULL;
}

static rt_status_t queue_create(void *device, const rt_queue_options_t *options, void **out) {
    fake_t *f = device;
    (void)options;
    fake_queue_t *q = f->host->allocator.realloc(f->host->allocator.user_data, NULL, 0, sizeof *q);
    if (q == NULL) return f->host->set_error(RT_ERR_OUT_OF_MEMORY, "fake: no memory for a queue");
    q->fake = f;
    *out = q;
    return RT_OK;
}

static void queue_destroy(void *queue) {
    fake_queue_t *q = queue;
    if (q != NULL) q->fake->host->allocator.realloc(q->fake->host->allocator.user_data, q,
                                                    sizeof *q, 0);
}

static rt_status_t graph_compute(void *queue, rt_tensor_t *const *nodes, int32_t n_nodes) {
    (void)queue;
    for (int32_t i = 0; i < n_nodes; i++) {
        rt_tensor_t *n = nodes[i];
        if (is_view_op(n->op)) continue;
        if (n->op != RT_OP_ADD || !supports_add(n))
            return g_host->set_error(RT_ERR_UNSUPPORTED, "fake: cannot compute node %s (op %d)",
                                     n->name, (int)n->op);
        compute_add(n);
    }
    return RT_OK;
}

static rt_status_t synchronize(void *queue) {
    (void)queue;
    return RT_OK;
}

/* An extension from a future minor version: the core must skip it. */
static const rt_ext_header_t future_ext = {sizeof future_ext, 0x7fff0001u, NULL};

static const rt_device_vtable_t device_vtable = {
    sizeof device_vtable, 0, NULL, device_get_props, device_buffer_type_count,
    device_buffer_type, device_supports_op, NULL, queue_create, queue_destroy, graph_compute,
    synchronize, &future_ext,
};

//===--- the plugin ---===//

static void plugin_destroy(void *plugin) {
    fake_t *f = plugin;
    if (f != NULL) f->host->allocator.realloc(f->host->allocator.user_data, f, sizeof *f, 0);
}

static void read_env(fake_t *f) {
    const char *pci = getenv("FAKE_PCI_ID");
    const char *max = getenv("FAKE_MAX_SIZE");
    snprintf(f->pci_bus_id, sizeof f->pci_bus_id, "%s", pci != NULL ? pci : "");
    f->buft.max_size = max != NULL ? (size_t)strtoull(max, NULL, 10) : 0;
    f->alloc_fails = getenv("FAKE_ALLOC_FAILS") != NULL;
}

/* One line per create, so that a test can tell whether the core started
 * this plugin at all. */
static void log_create(void) {
    const char *path = getenv("FAKE_CREATE_LOG");
    FILE *f = path != NULL && *path != '\0' ? fopen(path, "a") : NULL;
    if (f == NULL) return;
    fprintf(f, "%s created\n", FAKE_NAME_STR);
    fclose(f);
}

static rt_status_t plugin_create(const rt_host_t *host, void **out_plugin) {
    *out_plugin = NULL;
    log_create();
    if (init_fails)
        return host->set_error(RT_ERR_DEVICE, "the fake device is unplugged (FAKE_INIT_FAILS)");
    fake_t *f = host->allocator.realloc(host->allocator.user_data, NULL, 0, sizeof *f);
    if (f == NULL) return host->set_error(RT_ERR_OUT_OF_MEMORY, "fake: no memory");
    memset(f, 0, sizeof *f);
    g_host = host;
    f->host = host;
    f->buft = (rt_buffer_type_desc_t){.struct_size = sizeof f->buft, .flags = RT_BUFT_FLAG_HOST,
                                      .name = "Fake", .alignment = FAKE_ALIGN,
                                      .buffer_state_size = sizeof(fake_buffer_t), .ctx = f,
                                      .alloc = buft_alloc, .buffer_vtable = &buffer_vtable};
    read_env(f);
    *out_plugin = f;
    return RT_OK;
}

static uint32_t plugin_device_count(void *plugin) {
    (void)plugin;
    return 1;
}

static rt_status_t plugin_device_get(void *plugin, uint32_t index, void **out_device,
                                     const rt_device_vtable_t **out_vtable) {
    if (index != 0) return g_host->set_error(RT_ERR_INVALID_ARGUMENT, "fake: no device %u", index);
    *out_device = plugin;
    *out_vtable = &device_vtable;
    return RT_OK;
}

static const rt_plugin_vtable_t plugin_vtable = {
    sizeof plugin_vtable, 0, plugin_destroy, plugin_create, plugin_device_count,
    plugin_device_get,
};

#ifdef FAKE_BAD_MAJOR
#  define FAKE_ABI RT_ABI_MAKE_VERSION(2, 0)
#else
#  define FAKE_ABI RT_ABI_VERSION
#endif

static const rt_plugin_t plugin = {
    sizeof plugin, FAKE_ABI, FAKE_NAME_STR, "a fake device for the loader tests", "1.0",
    RT_PLUGIN_FLAG_UNLOAD_SAFE, &future_ext, &plugin_vtable,
};

RT_PLUGIN_EXPORT const rt_plugin_t *rt_plugin_query(uint32_t max_abi, const rt_host_t *host) {
    (void)host;
    /* A real plugin declines an unknown major; badmajor pretends to speak
     * 2.0 regardless, so that the loader's own check is what refuses it. */
#ifndef FAKE_BAD_MAJOR
    if (RT_ABI_VERSION_GET_MAJOR(max_abi) != RT_ABI_VERSION_MAJOR) return NULL;
#else
    (void)max_abi;
#endif
    return &plugin;
}
