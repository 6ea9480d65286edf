/* SPDX-License-Identifier: MIT */
/* gguf_copy.c: a GGUF key copied from a reader into a writer
 * (gguf_copy.h): a scalar through the getter and setter of its type, an
 * array through its raw elements. */
#include "gguf_copy.h"

#include <stdbool.h>

/* Scalars by type: the getter's value handed to the setter. */
#define COPY_AS(get, set, field)                                    \
    do {                                                            \
        st = get(g, k, &v.field);                                   \
        if (st == RT_OK) st = set(w, k, v.field);                   \
    } while (0)

static rt_status_t copy_scalar(const rt_gguf_t *g, rt_gguf_writer_t *w, const char *k, rt_gguf_type_t t) {
    union { uint8_t u8; int8_t i8; uint16_t u16; int16_t i16; uint32_t u32; int32_t i32; float f32;
            bool b; uint64_t u64; int64_t i64; double f64; const char *s; } v;
    rt_status_t st = RT_ERR_FORMAT;
    switch (t) {
    case RT_GGUF_TYPE_UINT8: COPY_AS(rt_gguf_get_u8, rt_gguf_writer_set_u8, u8); break;
    case RT_GGUF_TYPE_INT8: COPY_AS(rt_gguf_get_i8, rt_gguf_writer_set_i8, i8); break;
    case RT_GGUF_TYPE_UINT16: COPY_AS(rt_gguf_get_u16, rt_gguf_writer_set_u16, u16); break;
    case RT_GGUF_TYPE_INT16: COPY_AS(rt_gguf_get_i16, rt_gguf_writer_set_i16, i16); break;
    case RT_GGUF_TYPE_UINT32: COPY_AS(rt_gguf_get_u32, rt_gguf_writer_set_u32, u32); break;
    case RT_GGUF_TYPE_INT32: COPY_AS(rt_gguf_get_i32, rt_gguf_writer_set_i32, i32); break;
    case RT_GGUF_TYPE_FLOAT32: COPY_AS(rt_gguf_get_f32, rt_gguf_writer_set_f32, f32); break;
    case RT_GGUF_TYPE_BOOL: COPY_AS(rt_gguf_get_bool, rt_gguf_writer_set_bool, b); break;
    case RT_GGUF_TYPE_STRING: COPY_AS(rt_gguf_get_str, rt_gguf_writer_set_str, s); break;
    case RT_GGUF_TYPE_UINT64: COPY_AS(rt_gguf_get_u64, rt_gguf_writer_set_u64, u64); break;
    case RT_GGUF_TYPE_INT64: COPY_AS(rt_gguf_get_i64, rt_gguf_writer_set_i64, i64); break;
    case RT_GGUF_TYPE_FLOAT64: COPY_AS(rt_gguf_get_f64, rt_gguf_writer_set_f64, f64); break;
    default: break;
    }
    return st;
}

rt_status_t rt_gguf_copy_key(const rt_gguf_t *g, rt_gguf_writer_t *w, int64_t kv) {
    const char *k = rt_gguf_kv_key(g, kv);
    const rt_gguf_type_t t = rt_gguf_kv_type(g, kv);
    if (t != RT_GGUF_TYPE_ARRAY) return copy_scalar(g, w, k, t);
    const void *data = NULL;
    uint64_t n = 0;
    const rt_gguf_type_t et = rt_gguf_kv_array_type(g, kv);
    rt_status_t st = rt_gguf_get_array(g, k, et, &data, &n);
    if (st == RT_OK) st = rt_gguf_writer_set_array(w, k, et, data, n);
    return st;
}
