/* SPDX-License-Identifier: MIT */
/* fuzz-gguf.c: the libFuzzer target for the GGUF reader and writer. Each
 * input is parsed from memory; a refused input must come with a message.
 * An accepted one has every getter called on every key and tensor, every
 * byte it points at read (so AddressSanitizer sees any pointer outside the
 * input), and is then copied through the writer and parsed again, which
 * must give the same keys, values, shapes and tensor bytes. Built by
 * `ninja fuzz` straight from the runtime sources; run it with
 * `ninja fuzz-run` or as build/fuzz/fuzz-gguf DIR... (libFuzzer flags). */
#include "../../abi/rt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                 \
    do {                                                                            \
        if (!(cond)) {                                                              \
            fprintf(stderr, "fuzz-gguf: %s:%d: %s (%s)\n", __FILE__, __LINE__, #cond, \
                    rt_last_error());                                               \
            abort();                                                                \
        }                                                                           \
    } while (0)

/* Keeps reads from being optimised away. */
static volatile uint64_t sink;

static void touch(const void *p, size_t n) {
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) sink += b[i];
}

#define BITS(T, get)                       \
    {                                      \
        T v;                               \
        CHECK(get(g, key, &v) == RT_OK);   \
        memcpy(&bits, &v, sizeof v);       \
        return bits;                       \
    }

/* A scalar's bits through its typed getter; a string's characters are
 * touched and its first byte returned. */
static uint64_t scalar_bits(const rt_gguf_t *g, const char *key, rt_gguf_type_t type) {
    uint64_t bits = 0;
    const char *s;
    switch (type) {
    case RT_GGUF_TYPE_UINT8: BITS(uint8_t, rt_gguf_get_u8)
    case RT_GGUF_TYPE_INT8: BITS(int8_t, rt_gguf_get_i8)
    case RT_GGUF_TYPE_UINT16: BITS(uint16_t, rt_gguf_get_u16)
    case RT_GGUF_TYPE_INT16: BITS(int16_t, rt_gguf_get_i16)
    case RT_GGUF_TYPE_UINT32: BITS(uint32_t, rt_gguf_get_u32)
    case RT_GGUF_TYPE_INT32: BITS(int32_t, rt_gguf_get_i32)
    case RT_GGUF_TYPE_FLOAT32: BITS(float, rt_gguf_get_f32)
    case RT_GGUF_TYPE_BOOL: BITS(bool, rt_gguf_get_bool)
    case RT_GGUF_TYPE_UINT64: BITS(uint64_t, rt_gguf_get_u64)
    case RT_GGUF_TYPE_INT64: BITS(int64_t, rt_gguf_get_i64)
    case RT_GGUF_TYPE_FLOAT64: BITS(double, rt_gguf_get_f64)
    case RT_GGUF_TYPE_STRING:
        CHECK(rt_gguf_get_str(g, key, &s) == RT_OK);
        touch(s, strlen(s) + 1);
        return (uint8_t)s[0];
    default: CHECK(!"a scalar type");
    }
    return 0;
}

static size_t elem_size(rt_gguf_type_t t) {
    static const uint8_t sizes[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    return t >= 0 && t < RT_GGUF_TYPE_COUNT ? sizes[t] : 0;
}

static void touch_array(const rt_gguf_t *g, const char *key, rt_gguf_type_t et, uint64_t n_want) {
    const void *arr;
    uint64_t n;
    CHECK(rt_gguf_get_array(g, key, et, &arr, &n) == RT_OK && n == n_want && arr != NULL);
    if (et != RT_GGUF_TYPE_STRING) {
        touch(arr, (size_t)n * elem_size(et));
        return;
    }
    for (uint64_t i = 0; i < n; i++) {
        const char *s;
        CHECK(rt_gguf_get_array_str(g, key, i, &s) == RT_OK && s == ((const char *const *)arr)[i]);
        touch(s, strlen(s) + 1);
    }
    const char *s;
    CHECK(rt_gguf_get_array_str(g, key, n, &s) == RT_ERR_MISUSE && s == NULL);
}

static void touch_kv(const rt_gguf_t *g, int64_t i) {
    const char *key = rt_gguf_kv_key(g, i);
    const rt_gguf_type_t type = rt_gguf_kv_type(g, i);
    CHECK(key != NULL && rt_gguf_find_key(g, key) == i);
    CHECK(type >= 0 && type < RT_GGUF_TYPE_COUNT && strcmp(rt_gguf_type_name(type), "?") != 0);
    uint32_t u32;
    const rt_status_t st = rt_gguf_get_u32(g, key, &u32); /* the mismatch path, mostly */
    CHECK(st == (type == RT_GGUF_TYPE_UINT32 ? RT_OK : RT_ERR_INVALID_ARGUMENT));
    if (type == RT_GGUF_TYPE_ARRAY)
        touch_array(g, key, rt_gguf_kv_array_type(g, i), rt_gguf_kv_array_len(g, i));
    else
        sink += scalar_bits(g, key, type);
}

/* A type rt does not implement opens (its metadata stays readable), and
 * asking for the tensor says so: RT_ERR_UNSUPPORTED, the fields filled. */
static bool touch_tensor(const rt_gguf_t *g, int64_t i) {
    rt_gguf_tensor_info_t ti = {.struct_size = sizeof ti};
    const rt_status_t st = rt_gguf_get_tensor_info(g, i, &ti);
    const bool known = rt_type_traits(ti.type) != NULL;
    CHECK(known ? st == RT_OK : st == RT_ERR_UNSUPPORTED);
    CHECK(ti.name != NULL && strlen(ti.name) < RT_MAX_NAME && rt_gguf_find_tensor(g, ti.name) == i);
    CHECK(ti.n_dims >= 1 && ti.n_dims <= RT_MAX_DIMS);
    if (!known) return false;
    CHECK(ti.offset % rt_gguf_alignment(g) == 0 && ti.data == rt_gguf_tensor_data(g, i));
    const uint8_t *base = rt_gguf_file_data(g);
    CHECK((const uint8_t *)ti.data + ti.size <= base + rt_gguf_file_size(g));
    touch(ti.data, (size_t)ti.size);
    return true;
}

#define COPY(T, get, set)                   \
    {                                       \
        T v;                                \
        CHECK(get(g, key, &v) == RT_OK);    \
        return set(w, key, v);              \
    }

static rt_status_t copy_scalar(const rt_gguf_t *g, const char *key, rt_gguf_type_t type,
                               rt_gguf_writer_t *w) {
    switch (type) {
    case RT_GGUF_TYPE_UINT8: COPY(uint8_t, rt_gguf_get_u8, rt_gguf_writer_set_u8)
    case RT_GGUF_TYPE_INT8: COPY(int8_t, rt_gguf_get_i8, rt_gguf_writer_set_i8)
    case RT_GGUF_TYPE_UINT16: COPY(uint16_t, rt_gguf_get_u16, rt_gguf_writer_set_u16)
    case RT_GGUF_TYPE_INT16: COPY(int16_t, rt_gguf_get_i16, rt_gguf_writer_set_i16)
    case RT_GGUF_TYPE_UINT32: COPY(uint32_t, rt_gguf_get_u32, rt_gguf_writer_set_u32)
    case RT_GGUF_TYPE_INT32: COPY(int32_t, rt_gguf_get_i32, rt_gguf_writer_set_i32)
    case RT_GGUF_TYPE_FLOAT32: COPY(float, rt_gguf_get_f32, rt_gguf_writer_set_f32)
    case RT_GGUF_TYPE_BOOL: COPY(bool, rt_gguf_get_bool, rt_gguf_writer_set_bool)
    case RT_GGUF_TYPE_UINT64: COPY(uint64_t, rt_gguf_get_u64, rt_gguf_writer_set_u64)
    case RT_GGUF_TYPE_INT64: COPY(int64_t, rt_gguf_get_i64, rt_gguf_writer_set_i64)
    case RT_GGUF_TYPE_FLOAT64: COPY(double, rt_gguf_get_f64, rt_gguf_writer_set_f64)
    default: return RT_ERR_INTERNAL;
    }
}

/* Copies key/value i of g into w. */
static rt_status_t copy_kv(const rt_gguf_t *g, int64_t i, rt_gguf_writer_t *w) {
    const char *key = rt_gguf_kv_key(g, i);
    const rt_gguf_type_t type = rt_gguf_kv_type(g, i);
    const void *arr;
    uint64_t n;
    if (type == RT_GGUF_TYPE_ARRAY) {
        const rt_gguf_type_t et = rt_gguf_kv_array_type(g, i);
        CHECK(rt_gguf_get_array(g, key, et, &arr, &n) == RT_OK);
        return rt_gguf_writer_set_array(w, key, et, arr, n);
    }
    if (type == RT_GGUF_TYPE_STRING) {
        const char *s;
        CHECK(rt_gguf_get_str(g, key, &s) == RT_OK);
        return rt_gguf_writer_set_str(w, key, s);
    }
    CHECK(rt_gguf_get_array(g, key, type, &arr, &n) == RT_ERR_INVALID_ARGUMENT);
    return copy_scalar(g, key, type, w);
}

static void same_kv(const rt_gguf_t *a, const rt_gguf_t *b, int64_t i) {
    const char *key = rt_gguf_kv_key(a, i);
    CHECK(strcmp(key, rt_gguf_kv_key(b, i)) == 0 && rt_gguf_kv_type(a, i) == rt_gguf_kv_type(b, i));
    CHECK(rt_gguf_kv_array_type(a, i) == rt_gguf_kv_array_type(b, i));
    CHECK(rt_gguf_kv_array_len(a, i) == rt_gguf_kv_array_len(b, i));
    const rt_gguf_type_t type = rt_gguf_kv_type(a, i), et = rt_gguf_kv_array_type(a, i);
    const void *da, *db;
    uint64_t n;
    if (type == RT_GGUF_TYPE_ARRAY && et != RT_GGUF_TYPE_STRING) {
        CHECK(rt_gguf_get_array(a, key, et, &da, &n) == RT_OK);
        CHECK(rt_gguf_get_array(b, key, et, &db, &n) == RT_OK);
        CHECK(memcmp(da, db, (size_t)n * elem_size(et)) == 0);
    }
    const bool strings = type == RT_GGUF_TYPE_ARRAY && et == RT_GGUF_TYPE_STRING;
    for (uint64_t k = 0; strings && k < rt_gguf_kv_array_len(a, i); k++) {
        const char *sa, *sb;
        CHECK(rt_gguf_get_array_str(a, key, k, &sa) == RT_OK);
        CHECK(rt_gguf_get_array_str(b, key, k, &sb) == RT_OK && strcmp(sa, sb) == 0);
    }
    const char *sa, *sb;
    if (type == RT_GGUF_TYPE_STRING)
        CHECK(rt_gguf_get_str(a, key, &sa) == RT_OK && rt_gguf_get_str(b, key, &sb) == RT_OK &&
              strcmp(sa, sb) == 0);
    else if (type != RT_GGUF_TYPE_ARRAY)
        CHECK(scalar_bits(a, key, type) == scalar_bits(b, key, type));
}

static void same_tensor(const rt_gguf_t *a, const rt_gguf_t *b, int64_t i) {
    rt_gguf_tensor_info_t ta = {.struct_size = sizeof ta}, tb = {.struct_size = sizeof tb};
    CHECK(rt_gguf_get_tensor_info(a, i, &ta) == RT_OK);
    CHECK(rt_gguf_get_tensor_info(b, i, &tb) == RT_OK);
    CHECK(strcmp(ta.name, tb.name) == 0 && ta.type == tb.type && ta.n_dims == tb.n_dims);
    CHECK(memcmp(ta.ne, tb.ne, sizeof ta.ne) == 0 && ta.size == tb.size);
    CHECK(ta.size == 0 || memcmp(ta.data, tb.data, (size_t)ta.size) == 0);
}

static void round_trip(const rt_gguf_t *g) {
    rt_gguf_writer_t *w;
    CHECK(rt_gguf_writer_create(NULL, &w) == RT_OK);
    for (int64_t i = 0; i < rt_gguf_n_kv(g); i++) CHECK(copy_kv(g, i, w) == RT_OK);
    for (int64_t i = 0; i < rt_gguf_n_tensors(g); i++) {
        rt_gguf_tensor_info_t ti = {.struct_size = sizeof ti};
        CHECK(rt_gguf_get_tensor_info(g, i, &ti) == RT_OK);
        CHECK(rt_gguf_writer_add_tensor(w, ti.name, ti.type, ti.n_dims, ti.ne, ti.data) == RT_OK);
    }
    const uint64_t size = rt_gguf_writer_size(w);
    uint8_t *out = size <= (64u << 20) ? malloc((size_t)size) : NULL; /* huge alignment: skip */
    rt_gguf_t *g2 = NULL;
    if (out != NULL) {
        CHECK(rt_gguf_writer_write_mem(w, out, (size_t)size) == RT_OK);
        CHECK(rt_gguf_parse(out, (size_t)size, "copy", NULL, &g2) == RT_OK);
        CHECK(rt_gguf_n_kv(g2) == rt_gguf_n_kv(g) && rt_gguf_n_tensors(g2) == rt_gguf_n_tensors(g));
        CHECK(rt_gguf_alignment(g2) == rt_gguf_alignment(g) && rt_gguf_version(g2) == 3);
        for (int64_t i = 0; i < rt_gguf_n_kv(g); i++) same_kv(g, g2, i);
        for (int64_t i = 0; i < rt_gguf_n_tensors(g); i++) same_tensor(g, g2, i);
    }
    rt_gguf_destroy(g2);
    free(out);
    rt_gguf_writer_destroy(w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    rt_gguf_t *g = NULL;
    const rt_status_t st = rt_gguf_parse(data, size, "fuzz", NULL, &g);
    if (st != RT_OK) {
        CHECK(g == NULL && (st == RT_ERR_FORMAT || st == RT_ERR_OUT_OF_MEMORY));
        CHECK(strncmp(rt_last_error(), "fuzz: byte ", 11) == 0 || st == RT_ERR_OUT_OF_MEMORY);
        return 0;
    }
    CHECK(rt_gguf_version(g) == 2 || rt_gguf_version(g) == 3);
    CHECK(rt_gguf_file_size(g) == size && rt_gguf_data_offset(g) % rt_gguf_alignment(g) == 0);
    for (int64_t i = 0; i < rt_gguf_n_kv(g); i++) touch_kv(g, i);
    bool all_known = true;
    for (int64_t i = 0; i < rt_gguf_n_tensors(g); i++) all_known &= touch_tensor(g, i);
    CHECK(rt_gguf_kv_key(g, rt_gguf_n_kv(g)) == NULL && rt_gguf_tensor_data(g, -1) == NULL);
    if (all_known) round_trip(g); /* the writer writes only types rt implements */
    rt_gguf_destroy(g);
    return 0;
}
