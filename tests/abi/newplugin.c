/* SPDX-License-Identifier: MIT */
/* newplugin.c: a plugin from the future. It declares ABI 1.(minor + 1), one
 * minor version newer than the runtime, and hands the runtime what such a
 * plugin would: every table is the current struct followed by fields and
 * slots the runtime cannot know (struct_size says so), extension chains
 * carry records of unknown types, and a known record (the async one) is
 * larger than the runtime's struct. Rules 1, 2, 4 and 5 of abi/rt_base.h
 * promise that the runtime loads it and ignores what it does not
 * understand; tests/test-abi-compat.c holds it to that.
 *
 * It does no work of its own: it wraps the frozen 1.0 plugin
 * (tests/abi/oldplugin.c, linked into the same object with its entry point
 * renamed rt_frozen_plugin_query), copying each 1.0 table into a larger
 * one. That copy is itself rule 1 seen from a plugin: it reads only what
 * the older table's struct_size covers.
 *
 * Compile-time switches: FUTURE_NAME=ident (the plugin's name, default
 * future) and FUTURE_SHRINK=n, which instead makes one struct smaller than
 * its 1.0 layout, or one extension chain malformed, for the refusal tests:
 * 1 rt_plugin_t, 2 rt_plugin_vtable_t, 3 rt_device_vtable_t,
 * 4 rt_buffer_type_desc_t, 5 an extension record smaller than its header,
 * 6 an extension chain that loops, 7 an async record whose struct_size
 * ends inside a function pointer (found by fuzz-plugin); and 8, not a
 * refusal: query answers its own newer version whatever max_abi is, as a
 * plugin that ignores rt_plugin.h's rule would, which the runtime still
 * loads. Otherwise query answers min(max_abi, its own) (rt_plugin.h). */
#include "../../abi/rt_plugin.h"

#include <stdlib.h>
#include <string.h>

#define FUTURE_STR_(x) #x
#define FUTURE_STR(x) FUTURE_STR_(x)
#ifdef FUTURE_NAME
#  define FUTURE_NAME_STR FUTURE_STR(FUTURE_NAME)
#else
#  define FUTURE_NAME_STR "future"
#endif
#ifndef FUTURE_SHRINK
#  define FUTURE_SHRINK 0
#endif

#define FUTURE_ABI RT_ABI_MAKE_VERSION(RT_ABI_VERSION_MAJOR, RT_ABI_VERSION_MINOR + 1)
#define FUTURE_PATTERN 0x5afe5afe5afe5afeull /* in every field the runtime cannot know */

/* Extension record types no runtime of this major knows. */
enum { FUTURE_EXT_PLUGIN_A = 0x7e570001, FUTURE_EXT_PLUGIN_B, FUTURE_EXT_DEVICE };

/* The frozen plugin's entry point (tests/abi/oldplugin.c, renamed). */
const rt_plugin_t *rt_frozen_plugin_query(uint32_t max_abi, const rt_host_t *host);

/* A slot a newer minor adds at the end of a table. The runtime cannot know
 * what it does, so calling it is a bug. */
typedef void (*future_slot_fn)(void);
static void future_slot(void) { abort(); }

//===--- the larger tables ---===//

typedef struct future_plugin {
    rt_plugin_t base;
    uint64_t future[4];
} future_plugin_t;

typedef struct future_plugin_vtable {
    rt_plugin_vtable_t base;
    future_slot_fn future[3];
} future_plugin_vtable_t;

typedef struct future_device_vtable {
    rt_device_vtable_t base;
    future_slot_fn future[2];
} future_device_vtable_t;

typedef struct future_buffer_vtable {
    rt_buffer_vtable_t base;
    future_slot_fn future[2];
} future_buffer_vtable_t;

typedef struct future_buft {
    rt_buffer_type_desc_t base;
    uint64_t future[3];
} future_buft_t;

typedef struct future_ext_async {
    rt_device_ext_async_t base;
    future_slot_fn future[2];
} future_ext_async_t;

/* A field a newer rt_device_props_t would have; written only when the
 * runtime's struct_size covers it, which it never does. */
typedef struct future_props {
    rt_device_props_t base;
    uint64_t clock_hz;
} future_props_t;

typedef struct future_record {
    rt_ext_header_t header;
    uint64_t payload[5];
} future_record_t;

//===--- state ---===//

/* The frozen plugin's 1.0 tables, copied into larger ones once at create. */
typedef struct future_state {
    const rt_plugin_t *old;          /* the frozen plugin's rt_plugin_t */
    void *old_handle;
    void *old_device;
    const rt_device_vtable_t *old_device_vtable;
    future_device_vtable_t device_vtable;
    future_buft_t buft;
    future_buffer_vtable_t buffer_vtable;
    future_ext_async_t async;
    future_record_t device_record;
} future_state_t;

static future_state_t g_state;
static const rt_host_t *g_host;

/* Copies a table of src_size bytes into a larger dst of dst_size, reading
 * only what src_size covers; fields the older table lacks read as zero
 * (absent). */
static void copy_table(void *dst, size_t dst_size, const void *src, uint32_t src_size) {
    const size_t n = src_size < dst_size ? src_size : dst_size;
    memset(dst, 0, dst_size);
    memcpy(dst, src, n);
}

//===--- the device, through the frozen one ---===//

static rt_status_t future_get_props(void *device, rt_device_props_t *p) {
    rt_status_t st = g_state.old_device_vtable->get_props(device, p);
    if (RT_STRUCT_HAS(p, future_props_t, clock_hz)) ((future_props_t *)p)->clock_hz = 1;
    p->caps |= RT_DEVICE_CAP_ASYNC | RT_DEVICE_CAP_EVENTS; /* events: slots left NULL */
    return st;
}

static const rt_buffer_type_desc_t *future_buffer_type(void *device, uint32_t index) {
    (void)device;
    return index == 0 ? &g_state.buft.base : NULL;
}

static rt_status_t future_set_async(void *queue, rt_tensor_t *t, const void *data, size_t offset,
                                    size_t size) {
    (void)queue;
    memcpy((char *)t->data + offset, data, size); /* host memory: done at once */
    return RT_OK;
}

static rt_status_t future_get_async(void *queue, const rt_tensor_t *t, void *data, size_t offset,
                                    size_t size) {
    (void)queue;
    memcpy(data, (const char *)t->data + offset, size);
    return RT_OK;
}

static void link_device_records(future_state_t *s) {
    /* 7: the record ends halfway through get_tensor_async */
    const uint32_t async_size = FUTURE_SHRINK == 7
                                    ? (uint32_t)offsetof(rt_device_ext_async_t, get_tensor_async) + 4
                                    : (uint32_t)sizeof s->async;
    s->async.base = (rt_device_ext_async_t){{async_size, RT_EXT_DEVICE_ASYNC, NULL},
                                            future_set_async, future_get_async, NULL, NULL,
                                            NULL, NULL, NULL, NULL};
    s->async.future[0] = s->async.future[1] = future_slot;
    s->device_record = (future_record_t){{sizeof s->device_record, FUTURE_EXT_DEVICE,
                                          &s->async.base.header},
                                         {FUTURE_PATTERN, FUTURE_PATTERN, 0, 0, 0}};
    s->device_vtable.base.next = &s->device_record.header;
}

static void wrap_device(future_state_t *s, const rt_device_vtable_t *vt) {
    copy_table(&s->device_vtable, sizeof s->device_vtable, vt, vt->struct_size);
    s->device_vtable.base.struct_size = FUTURE_SHRINK == 3
                                            ? (uint32_t)offsetof(rt_device_vtable_t, next)
                                            : (uint32_t)sizeof s->device_vtable;
    s->device_vtable.base.get_props = future_get_props;
    s->device_vtable.base.buffer_type = future_buffer_type;
    s->device_vtable.future[0] = s->device_vtable.future[1] = future_slot;
    link_device_records(s);
}

static void wrap_buffer_type(future_state_t *s, const rt_buffer_type_desc_t *d) {
    copy_table(&s->buft, sizeof s->buft, d, d->struct_size);
    s->buft.base.struct_size = FUTURE_SHRINK == 4
                                   ? (uint32_t)offsetof(rt_buffer_type_desc_t, buffer_vtable)
                                   : (uint32_t)sizeof s->buft;
    s->buft.base.name = "Future";
    for (int i = 0; i < 3; i++) s->buft.future[i] = FUTURE_PATTERN;
    const rt_buffer_vtable_t *bv = d->buffer_vtable;
    copy_table(&s->buffer_vtable, sizeof s->buffer_vtable, bv, bv->struct_size);
    s->buffer_vtable.base.struct_size = sizeof s->buffer_vtable;
    s->buffer_vtable.future[0] = s->buffer_vtable.future[1] = future_slot;
    s->buft.base.buffer_vtable = &s->buffer_vtable.base;
}

//===--- the plugin ---===//

static void future_destroy(void *plugin) {
    future_state_t *s = plugin;
    s->old->vtable->destroy(s->old_handle);
}

static rt_status_t future_create(const rt_host_t *host, void **out_plugin) {
    future_state_t *s = &g_state;
    *out_plugin = NULL;
    g_host = host;
    s->old = rt_frozen_plugin_query(host->abi_version, host);
    if (s->old == NULL) return host->set_error(RT_ERR_INCOMPATIBLE, "the frozen plugin declined");
    rt_status_t st = s->old->vtable->create(host, &s->old_handle);
    if (st == RT_OK) st = s->old->vtable->device_get(s->old_handle, 0, &s->old_device,
                                                     &s->old_device_vtable);
    if (st != RT_OK) {
        if (s->old_handle != NULL) s->old->vtable->destroy(s->old_handle);
        return st;
    }
    wrap_device(s, s->old_device_vtable);
    wrap_buffer_type(s, s->old_device_vtable->buffer_type(s->old_device, 0));
    *out_plugin = s;
    return RT_OK;
}

static uint32_t future_device_count(void *plugin) {
    (void)plugin;
    return 1;
}

static rt_status_t future_device_get(void *plugin, uint32_t index, void **out_device,
                                     const rt_device_vtable_t **out_vtable) {
    future_state_t *s = plugin;
    if (index != 0) return g_host->set_error(RT_ERR_INVALID_ARGUMENT, "no device %u", index);
    *out_device = s->old_device;
    *out_vtable = &s->device_vtable.base;
    return RT_OK;
}

static const future_plugin_vtable_t plugin_vtable = {
    {FUTURE_SHRINK == 2 ? offsetof(rt_plugin_vtable_t, device_get) : sizeof plugin_vtable, 0,
     future_destroy, future_create, future_device_count, future_device_get},
    {future_slot, future_slot, future_slot},
};

//===--- extension records on rt_plugin_t ---===//

static const future_record_t plugin_record_b = {
    {FUTURE_SHRINK == 5 ? 8 : sizeof plugin_record_b, FUTURE_EXT_PLUGIN_B, NULL},
    {FUTURE_PATTERN, FUTURE_PATTERN, FUTURE_PATTERN, FUTURE_PATTERN, FUTURE_PATTERN},
};

#if FUTURE_SHRINK == 6
static const future_record_t plugin_record_a; /* tentative: the loop needs it first */
static const future_record_t plugin_record_loop = {
    {sizeof plugin_record_loop, FUTURE_EXT_PLUGIN_B, &plugin_record_a.header}, {0}};
#  define FUTURE_AFTER_A (&plugin_record_loop.header)
#else
#  define FUTURE_AFTER_A (&plugin_record_b.header)
#endif

static const future_record_t plugin_record_a = {
    {sizeof plugin_record_a, FUTURE_EXT_PLUGIN_A, FUTURE_AFTER_A},
    {FUTURE_PATTERN, 0, 0, 0, 0},
};

#define FUTURE_PLUGIN(abi)                                                                \
    {                                                                                     \
        {FUTURE_SHRINK == 1 ? offsetof(rt_plugin_t, vtable) : sizeof(future_plugin_t), (abi), \
         FUTURE_NAME_STR, "a plugin one minor ABI version newer than the runtime", "9.9",  \
         RT_PLUGIN_FLAG_UNLOAD_SAFE, &plugin_record_a.header, &plugin_vtable.base},       \
        {FUTURE_PATTERN, FUTURE_PATTERN, FUTURE_PATTERN, FUTURE_PATTERN},                 \
    }
/* Its own version, and the version of the runtime it was built with: the
 * two answers it can give (a plugin keeps one table per version). */
static const future_plugin_t plugin = FUTURE_PLUGIN(FUTURE_ABI);
static const future_plugin_t plugin_now = FUTURE_PLUGIN(RT_ABI_VERSION);

/* Declines a version it has no table for (older runtimes). */
RT_PLUGIN_EXPORT const rt_plugin_t *rt_plugin_query(uint32_t max_abi, const rt_host_t *host) {
    (void)host;
    const uint32_t v = rt_plugin_negotiate(max_abi, FUTURE_ABI);
    if (v == 0) return NULL;
    if (FUTURE_SHRINK == 8 || v == FUTURE_ABI) return &plugin.base;
    return v == RT_ABI_VERSION ? &plugin_now.base : NULL;
}
