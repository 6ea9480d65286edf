/* SPDX-License-Identifier: MIT */
/* rt-quantize: a GGUF model with its matrices in another type, as
 * llama.cpp's quantize tool makes them:
 *
 *     rt-quantize IN.gguf OUT.gguf TYPE
 *
 * TYPE is one of quant_recipe.c's recipes: one type for every matrix
 * (q4_0 .. q6_K, f16, bf16; f32 converts every tensor) or a mix (q4_K_M,
 * q5_K_M). Every key and value is copied as it is (general.file_type set to
 * the llama.cpp number of the recipe); every tensor the recipe gives a new
 * type is read in whatever type it has (rt_dequantize) and converted
 * (rt_quantize, the GGUF block layouts); the others are copied. */
#include "../abi/rt.h"
#include "../abi/rt_gguf.h"
#include "quant_recipe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//===--- keys ---===//

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

static rt_status_t copy_keys(const rt_gguf_t *g, rt_gguf_writer_t *w, const rt_quant_recipe_t *r) {
    rt_status_t st = RT_OK;
    for (int64_t i = 0; i < rt_gguf_n_kv(g) && st == RT_OK; i++) {
        const char *k = rt_gguf_kv_key(g, i);
        const rt_gguf_type_t t = rt_gguf_kv_type(g, i);
        if (t != RT_GGUF_TYPE_ARRAY) {
            st = copy_scalar(g, w, k, t);
            continue;
        }
        const void *data = NULL;
        uint64_t n = 0;
        const rt_gguf_type_t et = rt_gguf_kv_array_type(g, i);
        st = rt_gguf_get_array(g, k, et, &data, &n);
        if (st == RT_OK) st = rt_gguf_writer_set_array(w, k, et, data, n);
    }
    if (st == RT_OK) st = rt_gguf_writer_set_u32(w, "general.file_type", (uint32_t)r->file_type);
    return st;
}

//===--- tensors ---===//

/* The tensor's bytes in type, in *owned (freed by the caller), or its file
 * bytes when it keeps its type. */
static const void *tensor_bytes(const rt_gguf_tensor_info_t *ti, rt_type_t type, void **owned) {
    *owned = NULL;
    if (type == ti->type) return ti->data;
    int64_t n = 1;
    for (int d = 0; d < RT_MAX_DIMS; d++) n *= ti->ne[d];
    float *f = malloc((size_t)n * sizeof *f);
    void *q = malloc((size_t)(n / rt_blck_size(type)) * rt_type_size(type));
    if (f == NULL || q == NULL) {
        free(f);
        free(q);
        return NULL;
    }
    rt_dequantize(ti->type, ti->data, f, n);
    rt_quantize(type, f, q, n);
    free(f);
    return *owned = q;
}

static rt_status_t add_tensors(const rt_gguf_t *g, rt_gguf_writer_t *w, const rt_quant_recipe_t *r,
                               void **owned) {
    for (int64_t i = 0; i < rt_gguf_n_tensors(g); i++) {
        rt_gguf_tensor_info_t ti = {.struct_size = sizeof ti};
        rt_status_t st = rt_gguf_get_tensor_info(g, i, &ti);
        if (st != RT_OK) return st;
        const rt_type_t type = rt_quant_recipe_type(r, g, &ti);
        const void *data = tensor_bytes(&ti, type, &owned[i]);
        if (data == NULL) return RT_ERR_OUT_OF_MEMORY;
        st = rt_gguf_writer_add_tensor(w, ti.name, type, ti.n_dims, ti.ne, data);
        if (st != RT_OK) return st;
        printf("  %-32s %-6s -> %s\n", ti.name, rt_type_name(ti.type), rt_type_name(type));
    }
    return RT_OK;
}

//===--- main ---===//

static rt_status_t quantize(const char *in, const char *out, const rt_quant_recipe_t *type) {
    rt_gguf_t *g = NULL;
    rt_gguf_writer_t *w = NULL;
    rt_status_t st = rt_gguf_open(in, NULL, &g);
    if (st == RT_OK) st = rt_gguf_writer_create(NULL, &w);
    void **owned = st == RT_OK ? calloc((size_t)rt_gguf_n_tensors(g) + 1, sizeof *owned) : NULL;
    if (st == RT_OK && owned == NULL) st = RT_ERR_OUT_OF_MEMORY;
    if (st == RT_OK) st = copy_keys(g, w, type);
    if (st == RT_OK) st = add_tensors(g, w, type, owned);
    if (st == RT_OK) st = rt_gguf_writer_write_file(w, out);
    for (int64_t i = 0; owned != NULL && i < rt_gguf_n_tensors(g); i++) free(owned[i]);
    free(owned);
    rt_gguf_writer_destroy(w);
    rt_gguf_destroy(g);
    return st;
}

int main(int argc, char **argv) {
    if (argc != 4 || rt_quant_recipe_find(argv[3]) == NULL) {
        fprintf(stderr, "usage: rt-quantize IN.gguf OUT.gguf %s\n", rt_quant_recipe_names());
        return 2;
    }
    const rt_status_t st = quantize(argv[1], argv[2], rt_quant_recipe_find(argv[3]));
    if (st != RT_OK) {
        fprintf(stderr, "rt-quantize: %s: %s\n", rt_status_name(st), rt_last_error());
        return 1;
    }
    printf("rt-quantize: wrote %s\n", argv[2]);
    return 0;
}
