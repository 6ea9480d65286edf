/* SPDX-License-Identifier: MIT */
/* fuzz-plugin.c: the libFuzzer target for what the runtime accepts from a
 * plugin. Each input describes a fake plugin: the struct_size of every
 * table it hands over (the 1.0 size, smaller, larger with unknown trailing
 * bytes, or anything), its ABI version and name, which slots are NULL, how
 * many devices and buffer types it reports, and extension chains of known
 * and unknown record types whose next pointers may loop. The runtime's own
 * validation takes it from there: rt_plugin_adopt (as rt_plugin_open does
 * after dlopen), the plugin's create, rt_device_wrap for each device, then
 * the public calls on what was accepted (properties, buffers, host_ptr
 * buffers, queues).
 *
 * Every table lives in a heap block of exactly the bytes its struct_size
 * claims, so AddressSanitizer reports any read past struct_size (rule 1 of
 * abi/rt_base.h). A refusal must come with a message; nothing may crash,
 * leak or abort. Pointers the plugin hands over are NULL or valid: a
 * runtime cannot check a pointer, only that it is not NULL. Built by
 * `ninja fuzz` with the runtime sources it needs; run it with
 * `ninja fuzz-run`, or build/fuzz/fuzz-plugin DIR... (libFuzzer flags).
 * The seed corpus is tests/fuzz/corpus/plugin. */
#include "../../runtime/device_impl.h"
#include "../../runtime/registry_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                     \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            fprintf(stderr, "fuzz-plugin: %s:%d: %s (%s)\n", __FILE__, __LINE__, #cond, \
                    rt_last_error());                                                   \
            abort();                                                                    \
        }                                                                               \
    } while (0)

#define MAX_DEVICES 3
#define MAX_BUFTS 3
#define MAX_RECORDS 6
#define MAX_BLOCKS 64
#define STATE_MAX 256     /* buffer_state_size stays below: a huge one only makes
                             malloc fail, which AddressSanitizer turns into an abort */
#define ARENA_SIZE 4096   /* bytes of "device memory" behind every buffer */

//===--- reading the input ---===//

typedef struct input {
    const uint8_t *p;
    size_t n;
} input_t;

static uint8_t take8(input_t *in) {
    if (in->n == 0) return 0;
    in->n--;
    return *in->p++;
}

static uint32_t take32(input_t *in) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v |= (uint32_t)take8(in) << (8 * i);
    return v;
}

static uint64_t take64(input_t *in) { return take32(in) | (uint64_t)take32(in) << 32; }

/* A struct_size for a struct whose 1.0 (here: current) size is known:
 * mostly exact, else larger (a newer plugin), smaller, or anything. */
static uint32_t take_size(input_t *in, size_t known) {
    const uint8_t mode = take8(in);
    if (mode < 128) return (uint32_t)known;
    if (mode < 192) return (uint32_t)(known + take8(in) % 64);
    if (mode < 240) return (uint32_t)(take8(in) % known);
    return take32(in) % 1024;
}

/* Which slots of a table are NULL: mostly none. */
static uint32_t take_null_mask(input_t *in) {
    return take8(in) < 160 ? 0 : take32(in);
}

//===--- heap blocks of exactly the claimed size ---===//

typedef struct fuzz_state fuzz_state_t;

typedef struct device_spec {
    fuzz_state_t *fs;
    const rt_device_vtable_t *vtable;
    const rt_buffer_type_desc_t *bufts[MAX_BUFTS];
    uint32_t n_bufts;            /* what buffer_type_count says */
    rt_status_t get_status;      /* device_get's answer */
    rt_status_t props_status;
    uint8_t props_bytes[96];     /* written into the name and description */
    rt_status_t alloc_status;
} device_spec_t;

struct fuzz_state {
    void *blocks[MAX_BLOCKS];
    int n_blocks;
    uint32_t n_devices;
    rt_status_t create_status;
    device_spec_t devices[MAX_DEVICES];
    const rt_ext_header_t *records[MAX_RECORDS];
    uint8_t arena[ARENA_SIZE];
};

static fuzz_state_t *g; /* for the slots that get no handle */

/* Keeps p to be freed after the input. */
static void *hold(fuzz_state_t *fs, void *p) {
    CHECK(p != NULL && fs->n_blocks < MAX_BLOCKS);
    fs->blocks[fs->n_blocks++] = p;
    return p;
}

/* A heap copy of the first `claimed` bytes of the table at full (whose
 * size is known); bytes past `known` are the input's. */
static void *publish(fuzz_state_t *fs, input_t *in, const void *full, size_t known,
                     uint32_t claimed) {
    const size_t n = claimed < sizeof(uint32_t) ? sizeof(uint32_t) : claimed;
    uint8_t *p = hold(fs, malloc(n));
    memcpy(p, full, n < known ? n : known);
    for (size_t i = known; i < n; i++) p[i] = take8(in);
    memcpy(p, &claimed, sizeof claimed); /* struct_size is the first field of each */
    return p;
}

static void free_blocks(fuzz_state_t *fs) {
    for (int i = 0; i < fs->n_blocks; i++) free(fs->blocks[i]);
    fs->n_blocks = 0;
}

/* A failing slot's answer: with a message (through set_error) for odd
 * codes, without one for even codes, as careless plugins do. */
static rt_status_t answer(rt_status_t st, const char *what) {
    if (st == RT_OK || (st & 1) == 0) return st;
    return rt_error(st, "fuzz: %s", what);
}

//===--- the fake plugin's slots ---===//

static void buffer_destroy(void *state) { (void)state; }

static void *buffer_base(void *state) {
    (void)state;
    return g->arena;
}

static rt_status_t buffer_init_tensor(void *state, rt_tensor_t *t) {
    (void)state;
    (void)t;
    return RT_OK;
}

static rt_status_t buffer_set(void *state, rt_tensor_t *t, const void *d, size_t o, size_t n) {
    (void)state, (void)t, (void)d, (void)o, (void)n;
    return RT_OK;
}

static rt_status_t buffer_get(void *state, const rt_tensor_t *t, void *d, size_t o, size_t n) {
    (void)state, (void)t, (void)d, (void)o, (void)n;
    return RT_OK;
}

static rt_status_t buffer_memset(void *state, rt_tensor_t *t, uint8_t v, size_t o, size_t n) {
    (void)state, (void)t, (void)v, (void)o, (void)n;
    return RT_OK;
}

static rt_status_t buffer_cpy(void *state, const rt_tensor_t *src, rt_tensor_t *dst) {
    (void)state, (void)src, (void)dst;
    return RT_ERR_UNSUPPORTED;
}

static rt_status_t buffer_clear(void *state, uint8_t value) {
    (void)state;
    memset(g->arena, value, sizeof g->arena);
    return RT_OK;
}

/* ctx is the device_spec whose buffer type this is. */
static rt_status_t buft_alloc(void *ctx, size_t size, void *state) {
    const device_spec_t *d = ctx;
    if (d->alloc_status != RT_OK) return answer(d->alloc_status, "alloc refused");
    if (size > ARENA_SIZE) return rt_error(RT_ERR_OUT_OF_MEMORY, "fuzz: %zu bytes", size);
    (void)state; /* buffer_state_size may be 0: nothing is written there */
    return RT_OK;
}

static bool buft_supports_tensor(void *ctx, const rt_tensor_t *t) {
    (void)ctx;
    return t != NULL;
}

static size_t buft_alloc_size(void *ctx, const rt_tensor_t *t) {
    (void)ctx;
    (void)t;
    return 64;
}

static rt_status_t device_get_props(void *device, rt_device_props_t *p) {
    const device_spec_t *d = device;
    CHECK(p->struct_size >= sizeof *p); /* the runtime hands over its whole struct */
    memcpy(p->name, d->props_bytes, sizeof p->name); /* maybe without a NUL */
    memcpy(p->description, d->props_bytes, sizeof d->props_bytes);
    memcpy(p->pci_bus_id, d->props_bytes + 64, sizeof p->pci_bus_id);
    p->caps = (uint64_t)d->props_bytes[0] << 56 | d->props_bytes[1];
    return answer(d->props_status, "get_props refused");
}

static uint32_t device_buffer_type_count(void *device) {
    return ((const device_spec_t *)device)->n_bufts;
}

static const rt_buffer_type_desc_t *device_buffer_type(void *device, uint32_t i) {
    const device_spec_t *d = device;
    return i < MAX_BUFTS ? d->bufts[i] : NULL;
}

static bool device_supports_op(void *device, const rt_tensor_t *node) {
    (void)device;
    (void)node;
    return true;
}

static bool device_supports_buft(void *device, const rt_buffer_type_desc_t *buft) {
    (void)device;
    return buft != NULL;
}

static rt_status_t queue_create(void *device, const rt_queue_options_t *o, void **out) {
    CHECK(o != NULL && o->struct_size >= sizeof *o);
    *out = device;
    return RT_OK;
}

static void queue_destroy(void *queue) { (void)queue; }

static rt_status_t graph_compute(void *queue, rt_tensor_t *const *nodes, int32_t n) {
    (void)queue, (void)nodes, (void)n;
    return RT_OK;
}

static rt_status_t synchronize(void *queue) {
    (void)queue;
    return RT_OK;
}

static void device_destroy(void *device) { (void)device; }

static rt_status_t set_async(void *q, rt_tensor_t *t, const void *d, size_t o, size_t n) {
    (void)q, (void)t, (void)d, (void)o, (void)n;
    return RT_OK;
}

static rt_status_t get_async(void *q, const rt_tensor_t *t, void *d, size_t o, size_t n) {
    (void)q, (void)t, (void)d, (void)o, (void)n;
    return RT_OK;
}

static rt_status_t cpy_async(void *qs, void *qd, const rt_tensor_t *s, rt_tensor_t *d) {
    (void)qs, (void)qd, (void)s, (void)d;
    return RT_ERR_UNSUPPORTED;
}

static rt_status_t event_create(void *device, void **out) {
    *out = device;
    return RT_OK;
}

static void event_destroy(void *event) { (void)event; }

static rt_status_t event_record(void *event, void *queue) {
    (void)event, (void)queue;
    return RT_OK;
}

static rt_status_t event_wait(void *queue, void *event) {
    (void)event, (void)queue;
    return RT_OK;
}

static rt_status_t event_synchronize(void *event) {
    (void)event;
    return RT_OK;
}

static rt_status_t from_host_ptr(void *device, void *ptr, size_t size, void *state) {
    (void)device, (void)ptr, (void)size, (void)state;
    return RT_OK;
}

static void plugin_destroy(void *plugin) { (void)plugin; }

static rt_status_t plugin_create(const rt_host_t *host, void **out_plugin) {
    CHECK(host != NULL && host->struct_size >= sizeof *host);
    *out_plugin = g;
    return answer(g->create_status, "create refused");
}

static uint32_t plugin_device_count(void *plugin) { return ((fuzz_state_t *)plugin)->n_devices; }

static rt_status_t plugin_device_get(void *plugin, uint32_t i, void **out_device,
                                     const rt_device_vtable_t **out_vtable) {
    fuzz_state_t *fs = plugin;
    device_spec_t *d = &fs->devices[i % MAX_DEVICES];
    if (d->get_status != RT_OK) return answer(d->get_status, "device_get refused");
    *out_device = d;
    *out_vtable = d->vtable;
    return RT_OK;
}

//===--- building the tables from the input ---===//

/* Slot i of a table: fn, or NULL when bit i of mask is set. */
#define SLOT(mask, i, fn) (((mask) >> (i)) & 1u ? NULL : (fn))

static const rt_buffer_vtable_t *make_buffer_vtable(fuzz_state_t *fs, input_t *in) {
    const uint32_t m = take_null_mask(in);
    const rt_buffer_vtable_t vt = {
        0, 0, SLOT(m, 0, buffer_destroy), SLOT(m, 1, buffer_base),
        SLOT(m, 2, buffer_init_tensor), SLOT(m, 3, buffer_set), SLOT(m, 4, buffer_get),
        SLOT(m, 5, buffer_memset), SLOT(m, 6, buffer_cpy), SLOT(m, 7, buffer_clear),
    };
    return publish(fs, in, &vt, sizeof vt, take_size(in, sizeof vt));
}

static size_t take_alignment(input_t *in) {
    static const size_t choices[] = {64, 1, 4096, 0, 3, (size_t)1 << 40};
    return choices[take8(in) % (sizeof choices / sizeof choices[0])];
}

static const rt_buffer_type_desc_t *make_buft(fuzz_state_t *fs, input_t *in, device_spec_t *d) {
    if (take8(in) >= 240) return NULL;
    const uint32_t m = take_null_mask(in);
    const rt_buffer_type_desc_t desc = {
        0, take32(in), SLOT(m, 0, "Fuzz"), take_alignment(in), take64(in) % (2 * ARENA_SIZE),
        take8(in) % STATE_MAX, d, SLOT(m, 1, buft_alloc), SLOT(m, 2, buft_alloc_size),
        (m >> 3) & 1u ? NULL : make_buffer_vtable(fs, in), SLOT(m, 4, buft_supports_tensor),
    };
    return publish(fs, in, &desc, sizeof desc, take_size(in, sizeof desc));
}

static const rt_ext_header_t *make_async(fuzz_state_t *fs, input_t *in, uint32_t type) {
    const uint32_t m = take_null_mask(in);
    const rt_device_ext_async_t r = {
        {0, type, NULL}, SLOT(m, 0, set_async), SLOT(m, 1, get_async), SLOT(m, 2, cpy_async),
        SLOT(m, 3, event_create), SLOT(m, 4, event_destroy), SLOT(m, 5, event_record),
        SLOT(m, 6, event_wait), SLOT(m, 7, event_synchronize),
    };
    return publish(fs, in, &r, sizeof r, take_size(in, sizeof r));
}

static const rt_ext_header_t *make_host_ptr(fuzz_state_t *fs, input_t *in, uint32_t type) {
    const uint32_t m = take_null_mask(in);
    const device_spec_t *d = &fs->devices[take8(in) % MAX_DEVICES];
    const rt_device_ext_host_ptr_t r = {
        {0, type, NULL}, (m & 1u) ? NULL : d->bufts[take8(in) % MAX_BUFTS],
        SLOT(m, 1, from_host_ptr),
    };
    return publish(fs, in, &r, sizeof r, take_size(in, sizeof r));
}

/* Records of any type, then their next pointers: any record or NULL, so
 * chains may share tails or loop. */
static void make_records(fuzz_state_t *fs, input_t *in) {
    for (int i = 0; i < MAX_RECORDS; i++) {
        const uint8_t kind = take8(in) % 4;
        const uint32_t type = kind == 0 ? take32(in) : kind == 1 ? 0 : kind == 2
                              ? RT_EXT_DEVICE_ASYNC : RT_EXT_DEVICE_HOST_PTR;
        if (type == RT_EXT_DEVICE_ASYNC) fs->records[i] = make_async(fs, in, type);
        else if (type == RT_EXT_DEVICE_HOST_PTR) fs->records[i] = make_host_ptr(fs, in, type);
        else {
            const rt_ext_header_t h = {0, type, NULL};
            fs->records[i] = publish(fs, in, &h, sizeof h, take_size(in, sizeof h));
        }
    }
    for (int i = 0; i < MAX_RECORDS; i++) {
        rt_ext_header_t *r = (rt_ext_header_t *)fs->records[i];
        const uint8_t to = take8(in) % (MAX_RECORDS + 2);
        if (r->struct_size >= sizeof *r) r->next = to < MAX_RECORDS ? fs->records[to] : NULL;
    }
}

static const rt_ext_header_t *take_chain(fuzz_state_t *fs, input_t *in) {
    const uint8_t i = take8(in) % (MAX_RECORDS + 2);
    return i < MAX_RECORDS ? fs->records[i] : NULL;
}

static const rt_device_vtable_t *make_device_vtable(fuzz_state_t *fs, input_t *in) {
    const uint32_t m = take_null_mask(in);
    const rt_device_vtable_t vt = {
        0, 0, SLOT(m, 0, device_destroy), SLOT(m, 1, device_get_props),
        SLOT(m, 2, device_buffer_type_count), SLOT(m, 3, device_buffer_type),
        SLOT(m, 4, device_supports_op), SLOT(m, 5, device_supports_buft),
        SLOT(m, 6, queue_create), SLOT(m, 7, queue_destroy), SLOT(m, 8, graph_compute),
        SLOT(m, 9, synchronize), take_chain(fs, in),
    };
    return publish(fs, in, &vt, sizeof vt, take_size(in, sizeof vt));
}

static rt_status_t take_status(input_t *in) {
    const uint8_t v = take8(in);
    return v < 200 ? RT_OK : (rt_status_t)(v % 16); /* includes codes no runtime knows */
}

static void make_devices(fuzz_state_t *fs, input_t *in) {
    static const uint32_t counts[] = {1, 2, 3, 0, 300};
    fs->n_devices = counts[take8(in) % 5];
    for (int i = 0; i < MAX_DEVICES; i++) {
        device_spec_t *d = &fs->devices[i];
        d->fs = fs;
        for (int j = 0; j < MAX_BUFTS; j++) d->bufts[j] = make_buft(fs, in, d);
        d->n_bufts = take8(in) < 200 ? 1 + take8(in) % MAX_BUFTS : take8(in);
        d->get_status = take_status(in);
        d->props_status = take_status(in);
        d->alloc_status = take_status(in);
        for (size_t j = 0; j < sizeof d->props_bytes; j++) d->props_bytes[j] = take8(in);
    }
    make_records(fs, in);
    for (int i = 0; i < MAX_DEVICES; i++) fs->devices[i].vtable = make_device_vtable(fs, in);
}

/* A name from the input (maybe not [a-z0-9_], maybe too long), or one of
 * the interesting ones. */
static const char *take_name(fuzz_state_t *fs, input_t *in) {
    static const char *const names[] = {"fuzz", NULL, "", "Fuzz", "a-b",
                                        "abcdefghijklmnopqrstuvwx", "abcdefghijklmnopqrstuvw"};
    const uint8_t v = take8(in);
    if (v < 200) return names[v % (sizeof names / sizeof names[0])];
    char *s = hold(fs, calloc(1, 32));
    for (size_t i = 0; i < 31; i++) s[i] = (char)take8(in);
    return s;
}

static uint32_t take_version(input_t *in) {
    const uint8_t v = take8(in);
    if (v < 128) return RT_ABI_VERSION;
    if (v < 192) return RT_ABI_MAKE_VERSION(RT_ABI_VERSION_MAJOR, take8(in));
    return take32(in);
}

static const rt_plugin_t *make_plugin(fuzz_state_t *fs, input_t *in) {
    const uint32_t m = take_null_mask(in);
    fs->create_status = take_status(in);
    const rt_plugin_vtable_t vt = {
        0, 0, SLOT(m, 0, plugin_destroy), SLOT(m, 1, plugin_create),
        SLOT(m, 2, plugin_device_count), SLOT(m, 3, plugin_device_get),
    };
    const rt_plugin_vtable_t *pvt =
        (m >> 4) & 1u ? NULL : publish(fs, in, &vt, sizeof vt, take_size(in, sizeof vt));
    make_devices(fs, in);
    const rt_plugin_t p = {
        0, take_version(in), take_name(fs, in), SLOT(m, 5, "fuzzed"), SLOT(m, 6, "1"),
        take64(in), take_chain(fs, in), pvt,
    };
    return publish(fs, in, &p, sizeof p, take_size(in, sizeof p));
}

//===--- driving the runtime ---===//

static void exercise_buffers(rt_device_t *dev, input_t *in) {
    for (int32_t i = 0; i < rt_device_buffer_type_count(dev); i++) {
        rt_buffer_type_t *bt = rt_device_buffer_type(dev, i);
        CHECK(bt != NULL && rt_buffer_type_name(bt) != NULL);
        CHECK(rt_buffer_type_alignment(bt) != 0);
        (void)rt_device_supports_buft(dev, bt);
        rt_buffer_t *buf = NULL;
        if (rt_buffer_alloc(bt, take8(in) * 32u, &buf) == RT_OK) {
            CHECK(rt_buffer_clear(buf, 0) == RT_OK);
            rt_buffer_free(buf);
        } else {
            CHECK(buf == NULL && rt_last_error()[0] != '\0');
        }
    }
    rt_buffer_t *buf = NULL;
    if (rt_device_buffer_from_host_ptr(dev, g->arena, 256, &buf) == RT_OK) rt_buffer_free(buf);
}

static void exercise_device(rt_device_t *dev, input_t *in) {
    rt_device_props_t props = {.struct_size = sizeof props};
    CHECK(rt_device_get_props(dev, &props) == RT_OK);
    CHECK(memchr(props.name, 0, sizeof props.name) != NULL);
    CHECK(memchr(props.description, 0, sizeof props.description) != NULL);
    /* An older application's smaller struct: only its bytes are written. */
    uint32_t *small = malloc(8);
    CHECK(small != NULL);
    small[0] = 8;
    CHECK(rt_device_get_props(dev, (rt_device_props_t *)small) == RT_OK);
    free(small);
    exercise_buffers(dev, in);
    rt_queue_t *q = NULL;
    if (rt_queue_create(dev, NULL, &q) == RT_OK) rt_queue_destroy(q);
}

static void run_plugin(rt_registry_t *reg, rt_plugin_rec_t *rec, input_t *in) {
    void *handle = NULL;
    /* Called directly, as rt_plugin_open would: a failure is the plugin's
     * own (with or without a message), and ends the input. */
    if (rec->vtable.create(&reg->host, &handle) != RT_OK) return;
    rec->handle = handle;
    rec->live = true;
    const uint32_t n = rec->vtable.device_count(handle);
    for (uint32_t i = 0; i < n && i < MAX_DEVICES + 1; i++) {
        rt_device_t *dev = NULL;
        rt_error(RT_OK, "%s", "");
        if (rt_device_wrap(reg, rec, i, &dev) != RT_OK) {
            CHECK(dev == NULL && rt_last_error()[0] != '\0');
            continue;
        }
        exercise_device(dev, in);
        rt_device_unwrap(dev);
    }
}

static void quiet(rt_log_level_t level, const char *message, void *user_data) {
    (void)level, (void)message, (void)user_data;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static fuzz_state_t fs;
    rt_log_set(quiet, NULL); /* refusals are logged as warnings: thousands a second */
    input_t in = {data, size};
    memset(&fs, 0, sizeof fs);
    g = &fs;
    const rt_plugin_t *plugin = make_plugin(&fs, &in);
    rt_registry_options_t opt = {.struct_size = sizeof opt, .no_scan = true};
    rt_registry_t *reg = NULL;
    CHECK(rt_registry_create(&opt, &reg) == RT_OK);
    rt_plugin_rec_t *rec = rt_mem_calloc(&reg->allocator, sizeof *rec);
    CHECK(rec != NULL);
    rec->path = rt_mem_strdup(&reg->allocator, "/fuzz/rt-plugin-fuzz.so");
    rt_error(RT_OK, "%s", "");
    if (rt_plugin_adopt(reg, rec, plugin) == RT_OK) run_plugin(reg, rec, &in);
    else CHECK(strncmp(rt_last_error(), "/fuzz/rt-plugin-fuzz.so: ", 25) == 0);
    rt_plugin_close(reg, rec);
    rt_mem_free(&reg->allocator, rec, sizeof *rec);
    rt_registry_destroy(reg);
    free_blocks(&fs);
    return 0;
}
