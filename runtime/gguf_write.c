/* SPDX-License-Identifier: MIT */
/* gguf_write.c: the GGUF writer, rt_gguf_writer_t (format in
 * abi/rt_gguf.h). Each key's value is encoded once, when it is set, into
 * the bytes that follow its type in the file; tensors keep their shape and
 * a borrowed data pointer. One serialiser lays the file out for every
 * destination (counting, memory, FILE), so the size reported, the bytes in
 * memory and the bytes on disk cannot disagree. Everything it accepts is
 * what the reader (gguf.c) accepts. */
#include "gguf.h"
#include "out_file.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

typedef struct wkv {
    char *key;               /* owned, NUL-terminated */
    rt_gguf_type_t type;
    uint8_t *blob;           /* owned: the encoded value */
    size_t blob_size;        /* bytes */
} wkv_t;

typedef struct wtensor {
    char name[RT_MAX_NAME];
    rt_type_t type;
    int32_t n_dims;
    int64_t ne[RT_MAX_DIMS];
    const void *data;        /* borrowed; NULL writes zeros */
    uint64_t size;           /* bytes */
} wtensor_t;

/* Keys and tensor names are found through open-addressed tables of
 * indices (FNV-1a with a seed of the writer's own, so that names crafted
 * to collide under one seed do not under another): rt-quantize copies a
 * file's keys one by one, and a linear search made a file of 200k keys
 * take two minutes. slot[i] is 0 when empty, else the entry's index + 1;
 * the table is kept at most half full. */
typedef struct name_table {
    size_t *slot;
    size_t cap;              /* a power of two, or 0 */
} name_table_t;

struct rt_gguf_writer {
    rt_allocator_t allocator;
    wkv_t *kvs;
    size_t n_kv, cap_kv;
    wtensor_t *tensors;
    size_t n_tensors, cap_tensors;
    name_table_t key_table, tensor_table;
    uint64_t seed;
    uint32_t alignment;      /* general.alignment, or the default */
    uint64_t data_bound;     /* data bytes with every tensor padded to 2^31: no layout overflows */
};

/* The largest alignment a UINT32 power of two can ask for. */
#define MAX_ALIGNMENT (UINT64_C(1) << 31)

//===--- the serialiser ---===//

/* Where bytes go: memory when mem is set, a FILE when file is set, nowhere
 * (only counted) otherwise. */
typedef struct sink {
    uint8_t *mem;
    FILE *file;
    uint64_t pos;            /* bytes put so far */
    bool failed;             /* a FILE write failed */
} sink_t;

static void put(sink_t *s, const void *p, size_t n) {
    if (n == 0) return;
    if (s->mem != NULL) memcpy(s->mem + s->pos, p, n);
    else if (s->file != NULL && !s->failed) s->failed = fwrite(p, 1, n, s->file) != n;
    s->pos += n;
}

static void put_zeros(sink_t *s, uint64_t n) {
    static const uint8_t zeros[4096];
    for (; n > 0; n -= n < sizeof zeros ? n : sizeof zeros)
        put(s, zeros, n < sizeof zeros ? (size_t)n : sizeof zeros);
}

static void put_u32(sink_t *s, uint32_t v) { put(s, &v, sizeof v); }
static void put_u64(sink_t *s, uint64_t v) { put(s, &v, sizeof v); }

static void put_str(sink_t *s, const char *str) {
    const size_t len = strlen(str);
    put_u64(s, len);
    put(s, str, len);
}

/* A value to encode: a scalar at data, a string (data is the char *), or an
 * array of n elem_type elements at data. */
typedef struct value {
    rt_gguf_type_t type;
    rt_gguf_type_t elem_type;
    const void *data;
    uint64_t n;
} value_t;

static void put_value(sink_t *s, const value_t *v) {
    if (v->type == RT_GGUF_TYPE_STRING) {
        put_str(s, v->data);
    } else if (v->type != RT_GGUF_TYPE_ARRAY) {
        put(s, v->data, rt_gguf_value_size(v->type));
    } else {
        put_u32(s, (uint32_t)v->elem_type);
        put_u64(s, v->n);
        if (v->elem_type != RT_GGUF_TYPE_STRING)
            put(s, v->data, (size_t)v->n * rt_gguf_value_size(v->elem_type));
        for (uint64_t i = 0; i < v->n && v->elem_type == RT_GGUF_TYPE_STRING; i++)
            put_str(s, ((const char *const *)v->data)[i]);
    }
}

static void put_tensor_info(sink_t *s, const wtensor_t *t, uint64_t offset) {
    put_str(s, t->name);
    put_u32(s, (uint32_t)t->n_dims);
    for (int32_t d = 0; d < t->n_dims; d++) put_u64(s, (uint64_t)t->ne[d]);
    put_u32(s, (uint32_t)t->type);
    put_u64(s, offset);
}

/* The whole file. data_bound keeps every offset below 2^63. */
static void put_file(const rt_gguf_writer_t *w, sink_t *s) {
    put_u32(s, RT_GGUF_MAGIC);
    put_u32(s, RT_GGUF_VERSION);
    put_u64(s, w->n_tensors);
    put_u64(s, w->n_kv);
    for (size_t i = 0; i < w->n_kv; i++) {
        put_str(s, w->kvs[i].key);
        put_u32(s, (uint32_t)w->kvs[i].type);
        put(s, w->kvs[i].blob, w->kvs[i].blob_size);
    }
    uint64_t offset = 0;
    for (size_t i = 0; i < w->n_tensors; i++) {
        put_tensor_info(s, &w->tensors[i], offset);
        (void)rt_gguf_align(offset + w->tensors[i].size, w->alignment, &offset);
    }
    uint64_t data_offset; /* a file without tensors needs no data section */
    (void)rt_gguf_align(s->pos, w->n_tensors > 0 ? w->alignment : 1, &data_offset);
    put_zeros(s, data_offset - s->pos);
    for (size_t i = 0; i < w->n_tensors; i++) {
        const wtensor_t *t = &w->tensors[i];
        if (t->data != NULL) put(s, t->data, (size_t)t->size);
        else put_zeros(s, t->size);
        uint64_t end;
        (void)rt_gguf_align(s->pos, w->alignment, &end);
        put_zeros(s, end - s->pos);
    }
}

//===--- create, destroy ---===//

rt_status_t rt_gguf_writer_create(const rt_gguf_options_t *options, rt_gguf_writer_t **out_writer) {
    RT_ARMOR(out_writer != NULL);
    *out_writer = NULL;
    const rt_allocator_t *a = NULL;
    if (options != NULL && RT_STRUCT_HAS(options, rt_gguf_options_t, allocator)) a = options->allocator;
    if (a == NULL || a->realloc == NULL) a = rt_allocator_default();
    rt_gguf_writer_t *w = rt_mem_calloc(a, sizeof *w);
    if (w == NULL) return rt_error(RT_ERR_OUT_OF_MEMORY, "%s: the writer", __func__);
    w->allocator = *a;
    w->alignment = RT_GGUF_DEFAULT_ALIGNMENT;
    static _Atomic uint64_t writers;
    w->seed = ((uint64_t)(uintptr_t)w ^ (uint64_t)time(NULL) << 20 ^ writers++) * 0x9e3779b97f4a7c15ull;
    *out_writer = w;
    return RT_OK;
}

void rt_gguf_writer_destroy(rt_gguf_writer_t *w) {
    if (w == NULL) return;
    const rt_allocator_t a = w->allocator;
    for (size_t i = 0; i < w->n_kv; i++) {
        rt_mem_free_str(&a, w->kvs[i].key);
        rt_mem_free(&a, w->kvs[i].blob, w->kvs[i].blob_size);
    }
    rt_mem_free(&a, w->kvs, w->cap_kv * sizeof w->kvs[0]);
    rt_mem_free(&a, w->tensors, w->cap_tensors * sizeof w->tensors[0]);
    rt_mem_free(&a, w->key_table.slot, w->key_table.cap * sizeof w->key_table.slot[0]);
    rt_mem_free(&a, w->tensor_table.slot, w->tensor_table.cap * sizeof w->tensor_table.slot[0]);
    rt_mem_free(&a, w, sizeof *w);
}

/* Makes room for one more entry in a table of *cap entries of elem bytes. */
static rt_status_t grow(rt_gguf_writer_t *w, void **table, size_t n, size_t *cap, size_t elem) {
    if (n < *cap) return RT_OK;
    const size_t new_cap = *cap ? *cap * 2 : 16;
    void *p = new_cap <= SIZE_MAX / elem ? rt_mem_alloc(&w->allocator, new_cap * elem) : NULL;
    if (p == NULL) return rt_error(RT_ERR_OUT_OF_MEMORY, "gguf writer: table of %zu entries", new_cap);
    if (n > 0) memcpy(p, *table, n * elem);
    rt_mem_free(&w->allocator, *table, *cap * elem);
    *table = p;
    *cap = new_cap;
    return RT_OK;
}

//===--- name tables ---===//

static const char *key_at(const rt_gguf_writer_t *w, size_t i) { return w->kvs[i].key; }
static const char *tensor_at(const rt_gguf_writer_t *w, size_t i) { return w->tensors[i].name; }

static size_t name_hash(const rt_gguf_writer_t *w, const char *name) {
    uint64_t h = 0xcbf29ce484222325ull ^ w->seed;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) h = (h ^ *p) * 0x100000001b3ull;
    return (size_t)(h ^ (h >> 29));
}

/* The index of name in t, or SIZE_MAX. */
static size_t table_find(const rt_gguf_writer_t *w, const name_table_t *t,
                         const char *(*name_at)(const rt_gguf_writer_t *, size_t), const char *name) {
    for (size_t i = t->cap ? name_hash(w, name) & (t->cap - 1) : 0; t->cap && t->slot[i]; i = (i + 1) & (t->cap - 1))
        if (strcmp(name_at(w, t->slot[i] - 1), name) == 0) return t->slot[i] - 1;
    return SIZE_MAX;
}

static void table_put(const rt_gguf_writer_t *w, name_table_t *t, const char *name, size_t index) {
    size_t i = name_hash(w, name) & (t->cap - 1);
    while (t->slot[i]) i = (i + 1) & (t->cap - 1);
    t->slot[i] = index + 1;
}

/* Adds entry `index` (the n-th, n = index + 1 entries in all), growing
 * the table as it fills. */
static rt_status_t table_add(rt_gguf_writer_t *w, name_table_t *t,
                             const char *(*name_at)(const rt_gguf_writer_t *, size_t), size_t index) {
    if ((index + 1) * 2 > t->cap) {
        const size_t cap = t->cap ? t->cap * 2 : 64;
        name_table_t grown = {rt_mem_alloc(&w->allocator, cap * sizeof grown.slot[0]), cap};
        if (grown.slot == NULL) return rt_error(RT_ERR_OUT_OF_MEMORY, "gguf writer: a table of %zu names", cap);
        memset(grown.slot, 0, cap * sizeof grown.slot[0]);
        for (size_t i = 0; i < index; i++) table_put(w, &grown, name_at(w, i), i);
        rt_mem_free(&w->allocator, t->slot, t->cap * sizeof t->slot[0]);
        *t = grown;
    }
    table_put(w, t, name_at(w, index), index);
    return RT_OK;
}

//===--- keys and values ---===//

static wkv_t *find_kv(const rt_gguf_writer_t *w, const char *key) {
    const size_t i = table_find(w, &w->key_table, key_at, key);
    return i != SIZE_MAX ? &w->kvs[i] : NULL;
}

/* general.alignment decides the layout, so only a usable value is taken. */
static rt_status_t alignment_of(const value_t *v, uint32_t *out_align) {
    *out_align = 0;
    if (v->type == RT_GGUF_TYPE_UINT32) memcpy(out_align, v->data, sizeof *out_align);
    if (!rt_gguf_is_pow2(*out_align))
        return rt_error(RT_ERR_INVALID_ARGUMENT, "gguf writer: %s must be a u32 power of two",
                        RT_GGUF_KEY_ALIGNMENT);
    return RT_OK;
}

static rt_status_t check_array(const value_t *v) {
    const rt_gguf_type_t et = v->elem_type;
    uint64_t bytes;
    if (et < 0 || et >= RT_GGUF_TYPE_COUNT || et == RT_GGUF_TYPE_ARRAY)
        return rt_error(RT_ERR_INVALID_ARGUMENT, "gguf writer: array element type %d", (int)et);
    if (v->n > 0 && v->data == NULL)
        return rt_error(RT_ERR_INVALID_ARGUMENT, "gguf writer: %" PRIu64 " elements at NULL", v->n);
    if (et != RT_GGUF_TYPE_STRING && (!rt_gguf_mul(v->n, rt_gguf_value_size(et), &bytes) ||
                                      bytes > SIZE_MAX / 2))
        return rt_error(RT_ERR_INVALID_ARGUMENT, "gguf writer: %" PRIu64 " elements", v->n);
    for (uint64_t i = 0; i < v->n && et == RT_GGUF_TYPE_STRING; i++)
        if (((const char *const *)v->data)[i] == NULL)
            return rt_error(RT_ERR_INVALID_ARGUMENT, "gguf writer: string %" PRIu64 " is NULL", i);
    for (uint64_t i = 0; i < v->n && et == RT_GGUF_TYPE_BOOL; i++)
        if (((const uint8_t *)v->data)[i] > 1)
            return rt_error(RT_ERR_INVALID_ARGUMENT, "gguf writer: bool %" PRIu64 " is not 0 or 1", i);
    return RT_OK;
}

static rt_status_t check_value(rt_gguf_writer_t *w, const char *key, const value_t *v) {
    if (w == NULL || key == NULL)
        return rt_error(RT_ERR_MISUSE, "gguf writer: writer or key is NULL");
    if (v->type == RT_GGUF_TYPE_STRING && v->data == NULL)
        return rt_error(RT_ERR_INVALID_ARGUMENT, "gguf writer: key '%s': string is NULL", key);
    if (v->type == RT_GGUF_TYPE_ARRAY) return check_array(v);
    return RT_OK;
}

/* Adds key with an encoded value, or replaces the value of an existing key.
 * Takes the blob in every case. */
static rt_status_t put_kv(rt_gguf_writer_t *w, const char *key, rt_gguf_type_t type,
                          uint8_t *blob, size_t blob_size) {
    wkv_t *kv = find_kv(w, key);
    char *copy = kv == NULL ? rt_mem_strdup(&w->allocator, key) : NULL;
    rt_status_t st = kv != NULL || copy != NULL
                         ? RT_OK
                         : rt_error(RT_ERR_OUT_OF_MEMORY, "gguf writer: key '%s'", key);
    if (st == RT_OK && kv == NULL) st = grow(w, (void **)&w->kvs, w->n_kv, &w->cap_kv, sizeof *kv);
    if (st != RT_OK) {
        rt_mem_free_str(&w->allocator, copy);
        rt_mem_free(&w->allocator, blob, blob_size);
        return st;
    }
    if (kv == NULL) {
        w->kvs[w->n_kv] = (wkv_t){.key = copy};
        if (table_add(w, &w->key_table, key_at, w->n_kv) != RT_OK) {
            rt_mem_free_str(&w->allocator, copy);
            rt_mem_free(&w->allocator, blob, blob_size);
            return RT_ERR_OUT_OF_MEMORY;
        }
        kv = &w->kvs[w->n_kv++];
    }
    rt_mem_free(&w->allocator, kv->blob, kv->blob_size);
    kv->type = type;
    kv->blob = blob;
    kv->blob_size = blob_size;
    return RT_OK;
}

static rt_status_t set_value(rt_gguf_writer_t *w, const char *key, const value_t *v) {
    rt_status_t st = check_value(w, key, v);
    const bool is_alignment = st == RT_OK && strcmp(key, RT_GGUF_KEY_ALIGNMENT) == 0;
    uint32_t align = 0;
    if (is_alignment) st = alignment_of(v, &align);
    if (st != RT_OK) return st;
    sink_t count = {0};
    put_value(&count, v);
    uint8_t *blob = rt_mem_alloc(&w->allocator, (size_t)count.pos);
    if (blob == NULL)
        return rt_error(RT_ERR_OUT_OF_MEMORY, "gguf writer: key '%s': %" PRIu64 " bytes", key,
                        count.pos);
    sink_t fill = {.mem = blob};
    put_value(&fill, v);
    st = put_kv(w, key, v->type, blob, (size_t)count.pos);
    if (st == RT_OK && is_alignment) w->alignment = align;
    return st;
}

static rt_status_t set_scalar(rt_gguf_writer_t *w, const char *key, rt_gguf_type_t type,
                              const void *v) {
    const value_t value = {.type = type, .elem_type = -1, .data = v};
    return set_value(w, key, &value);
}

rt_status_t rt_gguf_writer_set_u8(rt_gguf_writer_t *w, const char *key, uint8_t v) {
    return set_scalar(w, key, RT_GGUF_TYPE_UINT8, &v);
}
rt_status_t rt_gguf_writer_set_i8(rt_gguf_writer_t *w, const char *key, int8_t v) {
    return set_scalar(w, key, RT_GGUF_TYPE_INT8, &v);
}
rt_status_t rt_gguf_writer_set_u16(rt_gguf_writer_t *w, const char *key, uint16_t v) {
    return set_scalar(w, key, RT_GGUF_TYPE_UINT16, &v);
}
rt_status_t rt_gguf_writer_set_i16(rt_gguf_writer_t *w, const char *key, int16_t v) {
    return set_scalar(w, key, RT_GGUF_TYPE_INT16, &v);
}
rt_status_t rt_gguf_writer_set_u32(rt_gguf_writer_t *w, const char *key, uint32_t v) {
    return set_scalar(w, key, RT_GGUF_TYPE_UINT32, &v);
}
rt_status_t rt_gguf_writer_set_i32(rt_gguf_writer_t *w, const char *key, int32_t v) {
    return set_scalar(w, key, RT_GGUF_TYPE_INT32, &v);
}
rt_status_t rt_gguf_writer_set_f32(rt_gguf_writer_t *w, const char *key, float v) {
    return set_scalar(w, key, RT_GGUF_TYPE_FLOAT32, &v);
}
rt_status_t rt_gguf_writer_set_bool(rt_gguf_writer_t *w, const char *key, bool v) {
    return set_scalar(w, key, RT_GGUF_TYPE_BOOL, &v);
}
rt_status_t rt_gguf_writer_set_u64(rt_gguf_writer_t *w, const char *key, uint64_t v) {
    return set_scalar(w, key, RT_GGUF_TYPE_UINT64, &v);
}
rt_status_t rt_gguf_writer_set_i64(rt_gguf_writer_t *w, const char *key, int64_t v) {
    return set_scalar(w, key, RT_GGUF_TYPE_INT64, &v);
}
rt_status_t rt_gguf_writer_set_f64(rt_gguf_writer_t *w, const char *key, double v) {
    return set_scalar(w, key, RT_GGUF_TYPE_FLOAT64, &v);
}
rt_status_t rt_gguf_writer_set_str(rt_gguf_writer_t *w, const char *key, const char *v) {
    return set_scalar(w, key, RT_GGUF_TYPE_STRING, v);
}

rt_status_t rt_gguf_writer_set_array(rt_gguf_writer_t *w, const char *key,
                                     rt_gguf_type_t elem_type, const void *data, uint64_t n) {
    const value_t value = {.type = RT_GGUF_TYPE_ARRAY, .elem_type = elem_type, .data = data, .n = n};
    return set_value(w, key, &value);
}

//===--- tensors ---===//

static rt_status_t check_tensor(const rt_gguf_writer_t *w, const char *name, rt_type_t type,
                                int32_t n_dims, const int64_t *ne, uint64_t *out_size) {
    *out_size = 0;
    if (w == NULL || name == NULL || ne == NULL)
        return rt_error(RT_ERR_MISUSE, "gguf writer: writer, name or ne is NULL");
    if (strlen(name) >= RT_MAX_NAME)
        return rt_error(RT_ERR_INVALID_ARGUMENT, "gguf writer: tensor name '%.64s...' is %zu bytes, "
                        "the limit is %d", name, strlen(name), RT_MAX_NAME - 1);
    if (table_find(w, &w->tensor_table, tensor_at, name) != SIZE_MAX)
        return rt_error(RT_ERR_INVALID_ARGUMENT, "gguf writer: tensor '%s' added twice", name);
    const int32_t n = n_dims >= 1 && n_dims <= RT_MAX_DIMS ? n_dims : 0;
    int64_t shape[RT_MAX_DIMS] = {1, 1, 1, 1};
    memcpy(shape, ne, (size_t)n * sizeof shape[0]);
    const char *why = rt_gguf_check_shape(type, n_dims, shape, out_size);
    if (why != NULL)
        return rt_error(RT_ERR_INVALID_ARGUMENT, "gguf writer: tensor '%s' (type %d, n_dims %d): %s",
                        name, (int)type, (int)n_dims, why);
    return RT_OK;
}

rt_status_t rt_gguf_writer_add_tensor(rt_gguf_writer_t *w, const char *name, rt_type_t type,
                                      int32_t n_dims, const int64_t *ne, const void *data) {
    uint64_t size, padded = 0, bound = 0;
    rt_status_t st = check_tensor(w, name, type, n_dims, ne, &size);
    if (st == RT_OK && (!rt_gguf_align(size, MAX_ALIGNMENT, &padded) ||
                        !rt_gguf_add(w->data_bound, padded, &bound) || bound > INT64_MAX ||
                        (data != NULL && size > SIZE_MAX)))
        st = rt_error(RT_ERR_INVALID_ARGUMENT,
                      "gguf writer: tensor '%s': the file would pass 2^63 bytes", name);
    if (st == RT_OK)
        st = grow(w, (void **)&w->tensors, w->n_tensors, &w->cap_tensors, sizeof w->tensors[0]);
    if (st != RT_OK) return st;
    wtensor_t *t = &w->tensors[w->n_tensors];
    *t = (wtensor_t){.type = type, .n_dims = n_dims, .ne = {1, 1, 1, 1}, .data = data, .size = size};
    memcpy(t->name, name, strlen(name) + 1);
    memcpy(t->ne, ne, (size_t)n_dims * sizeof ne[0]);
    if (table_add(w, &w->tensor_table, tensor_at, w->n_tensors) != RT_OK) return RT_ERR_OUT_OF_MEMORY;
    w->n_tensors++;
    w->data_bound = bound;
    return RT_OK;
}

//===--- output ---===//

uint64_t rt_gguf_writer_size(const rt_gguf_writer_t *w) {
    if (w == NULL) return 0;
    sink_t count = {0};
    put_file(w, &count);
    return count.pos;
}

rt_status_t rt_gguf_writer_write_mem(const rt_gguf_writer_t *w, void *dst, size_t size) {
    RT_ARMOR(w != NULL);
    const uint64_t need = rt_gguf_writer_size(w);
    if (dst == NULL || need > size)
        return rt_error(RT_ERR_DOES_NOT_FIT, "%s: the file takes %" PRIu64 " bytes, the buffer has %zu",
                        __func__, need, dst != NULL ? size : 0);
    sink_t s = {.mem = dst};
    put_file(w, &s);
    return RT_OK;
}

rt_status_t rt_gguf_writer_write_file(const rt_gguf_writer_t *w, const char *path) {
    RT_ARMOR(w != NULL && path != NULL);
    /* Through out_file.h: the old file or the whole new one, and a failure
     * removes only the temporary file (never a previous file or a device). */
    rt_out_file_t of;
    if (rt_out_file_open(&of, path, NULL) != 0) return rt_error(RT_ERR_IO, "%s", of.error);
    sink_t s = {.file = of.f};
    put_file(w, &s);
    if (s.failed) {
        const int err = errno;
        rt_out_file_abort(&of);
        return rt_error(RT_ERR_IO, "%s: cannot write %" PRIu64 " bytes: %s", path, s.pos,
                        strerror(err != 0 ? err : EIO));
    }
    if (rt_out_file_commit(&of) != 0) return rt_error(RT_ERR_IO, "%s", of.error);
    return RT_OK;
}
