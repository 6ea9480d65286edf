/* SPDX-License-Identifier: MIT */
/* oldplugin.c: the frozen 1.0 plugin. Built against tests/abi/v1.0/ alone
 * (-I tests/abi/v1.0, never abi/), it stands for a plugin compiled when ABI
 * 1.0 was declared and never rebuilt: every later runtime must load it,
 * list its device and run its graphs (tests/test-abi-compat.c). Its structs
 * have the 1.0 sizes, so a newer runtime sees an older, smaller plugin.
 *
 * One device, "frozen0", with one host buffer type; it runs ADD and MUL of
 * same-shaped contiguous F32 tensors and the view family. Like the headers
 * it is built from, this file is never edited once the version ships: a
 * change here would test a plugin nobody has. */
#include "rt_plugin.h"

#include <string.h>

#define OLD_ALIGN 32

typedef struct old_plugin {
    const rt_host_t *host;
    rt_buffer_type_desc_t buft;
} old_plugin_t;

typedef struct old_buffer {
    const rt_allocator_t *allocator;
    void *mem;   /* as allocated, size + OLD_ALIGN bytes */
    size_t size; /* bytes the core asked for */
    char *base;  /* mem, aligned */
} old_buffer_t;

static const rt_host_t *old_host;

static void *old_alloc(size_t size) {
    return old_host->allocator.realloc(old_host->allocator.user_data, NULL, 0, size);
}

static void old_free(void *p, size_t size) {
    if (p != NULL) old_host->allocator.realloc(old_host->allocator.user_data, p, size, 0);
}

//===--- buffers ---===//

static void buffer_destroy(void *state) {
    old_buffer_t *b = state;
    old_free(b->mem, b->size + OLD_ALIGN);
}

static void *buffer_base(void *state) { return ((old_buffer_t *)state)->base; }

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
    old_buffer_t *b = state;
    memset(b->base, value, b->size);
    return RT_OK;
}

static const rt_buffer_vtable_t buffer_vtable = {
    sizeof buffer_vtable, 0, buffer_destroy, buffer_base, NULL, buffer_set, buffer_get,
    buffer_memset, NULL, buffer_clear,
};

static rt_status_t buft_alloc(void *ctx, size_t size, void *state) {
    old_buffer_t *b = state;
    (void)ctx;
    b->allocator = &old_host->allocator;
    b->size = size;
    b->mem = old_alloc(size + OLD_ALIGN);
    if (b->mem == NULL)
        return old_host->set_error(RT_ERR_OUT_OF_MEMORY, "frozen0: no memory for %zu bytes", size);
    b->base = (char *)(((uintptr_t)b->mem + OLD_ALIGN - 1) & ~(uintptr_t)(OLD_ALIGN - 1));
    return RT_OK;
}

//===--- ops ---===//

static bool is_view_op(rt_op_t op) {
    return op == RT_OP_VIEW || op == RT_OP_RESHAPE || op == RT_OP_PERMUTE ||
           op == RT_OP_TRANSPOSE;
}

static bool f32_contiguous_like(const rt_tensor_t *t, const rt_tensor_t *n) {
    if (t == NULL || t->type != RT_TYPE_F32 || !old_host->tensor_is_contiguous(t)) return false;
    for (int i = 0; i < RT_MAX_DIMS; i++)
        if (t->ne[i] != n->ne[i]) return false;
    return true;
}

static bool supports_binary(const rt_tensor_t *n) {
    return (n->op == RT_OP_ADD || n->op == RT_OP_MUL) && f32_contiguous_like(n, n) &&
           f32_contiguous_like(n->src[0], n) && f32_contiguous_like(n->src[1], n);
}

/* Careless on purpose: it says yes to op codes newer than its ABI (past
 * RT_OP_ARGMAX, the last of 1.0), which the core must never ask it about. */
static bool device_supports_op(void *device, const rt_tensor_t *node) {
    (void)device;
    return node->op > RT_OP_ARGMAX || is_view_op(node->op) || supports_binary(node);
}

static void compute_binary(rt_tensor_t *n) {
    const float *a = n->src[0]->data, *b = n->src[1]->data;
    float *c = n->data;
    const size_t count = old_host->tensor_nbytes(n) / sizeof(float);
    for (size_t i = 0; i < count; i++) c[i] = n->op == RT_OP_ADD ? a[i] + b[i] : a[i] * b[i];
}

static rt_status_t graph_compute(void *queue, rt_tensor_t *const *nodes, int32_t n_nodes) {
    (void)queue;
    for (int32_t i = 0; i < n_nodes; i++) {
        if (is_view_op(nodes[i]->op)) continue;
        if (!supports_binary(nodes[i]))
            return old_host->set_error(RT_ERR_UNSUPPORTED, "frozen0: cannot run op %d",
                                       (int)nodes[i]->op);
        compute_binary(nodes[i]);
    }
    return RT_OK;
}

//===--- the device ---===//

static rt_status_t device_get_props(void *device, rt_device_props_t *p) {
    (void)device;
    p->kind = RT_DEVICE_KIND_SOFTWARE;
    strcpy(p->name, "Frozen 1.0 device");
    strcpy(p->description, "tests/abi/oldplugin.c, built against the frozen ABI 1.0 headers");
    p->caps = RT_DEVICE_CAP_HOST_BUFFER;
    return RT_OK;
}

static uint32_t device_buffer_type_count(void *device) {
    (void)device;
    return 1;
}

static const rt_buffer_type_desc_t *device_buffer_type(void *device, uint32_t index) {
    return index == 0 ? &((old_plugin_t *)device)->buft : NULL;
}

/* The queue has no state of its own: the device stands in for it. */
static rt_status_t queue_create(void *device, const rt_queue_options_t *options, void **out) {
    (void)options;
    *out = device;
    return RT_OK;
}

static void queue_destroy(void *queue) { (void)queue; }

static rt_status_t synchronize(void *queue) {
    (void)queue;
    return RT_OK;
}

static const rt_device_vtable_t device_vtable = {
    sizeof device_vtable, 0, NULL, device_get_props, device_buffer_type_count,
    device_buffer_type, device_supports_op, NULL, queue_create, queue_destroy, graph_compute,
    synchronize, NULL,
};

//===--- the plugin ---===//

static void plugin_destroy(void *plugin) { old_free(plugin, sizeof(old_plugin_t)); }

static rt_status_t plugin_create(const rt_host_t *host, void **out_plugin) {
    *out_plugin = NULL;
    old_host = host;
    old_plugin_t *p = old_alloc(sizeof *p);
    if (p == NULL) return host->set_error(RT_ERR_OUT_OF_MEMORY, "frozen: no memory");
    p->host = host;
    p->buft = (rt_buffer_type_desc_t){sizeof p->buft, RT_BUFT_FLAG_HOST, "Frozen", OLD_ALIGN, 0,
                                      sizeof(old_buffer_t), p, buft_alloc, NULL, &buffer_vtable};
    *out_plugin = p;
    return RT_OK;
}

static uint32_t plugin_device_count(void *plugin) {
    (void)plugin;
    return 1;
}

static rt_status_t plugin_device_get(void *plugin, uint32_t index, void **out_device,
                                     const rt_device_vtable_t **out_vtable) {
    if (index != 0) return old_host->set_error(RT_ERR_INVALID_ARGUMENT, "frozen: no device %u", index);
    *out_device = plugin;
    *out_vtable = &device_vtable;
    return RT_OK;
}

static const rt_plugin_vtable_t plugin_vtable = {
    sizeof plugin_vtable, 0, plugin_destroy, plugin_create, plugin_device_count,
    plugin_device_get,
};

static const rt_plugin_t plugin = {
    sizeof plugin, RT_ABI_VERSION, "frozen", "the frozen ABI 1.0 test plugin", "1.0",
    RT_PLUGIN_FLAG_UNLOAD_SAFE, NULL, &plugin_vtable,
};

RT_PLUGIN_EXPORT const rt_plugin_t *rt_plugin_query(uint32_t max_abi, const rt_host_t *host) {
    (void)host;
    return RT_ABI_VERSION_GET_MAJOR(max_abi) == RT_ABI_VERSION_MAJOR ? &plugin : NULL;
}
