/* SPDX-License-Identifier: MIT */
/* rt_gguf.h: reading and writing GGUF files, the format of ggml's models.
 * A reader (rt_gguf_t) checks a whole file before it hands out anything and
 * points tensor data into the file mapped read-only; a writer
 * (rt_gguf_writer_t) collects keys and tensors and lays them out.
 *
 * The format (GGUF versions 2 and 3; all numbers little-endian, no padding
 * between fields unless said so; a "string" is a uint64 byte count followed
 * by that many bytes, UTF-8, no NUL):
 *
 *   header        uint32 magic      0x46554747, the bytes "GGUF"
 *                 uint32 version    2 or 3 (same layout; 1 used 32-bit counts)
 *                 uint64 n_tensors
 *                 uint64 n_kv
 *   n_kv times    string key        unique; rt also refuses NUL bytes in keys
 *                 uint32 type       rt_gguf_type_t, 0..12
 *                 value             by type: UINT8, INT8, BOOL 1 byte (BOOL is 0
 *                                   or 1); UINT16, INT16 2; UINT32, INT32,
 *                                   FLOAT32 4; UINT64, INT64, FLOAT64 8; STRING
 *                                   a string; ARRAY: uint32 element type,
 *                                   uint64 n, then n values of that type.
 *                                   Arrays of arrays are refused.
 *   n_tensors     string name       unique, < RT_MAX_NAME bytes, no NUL
 *     times       uint32 n_dims     1..4
 *                 uint64 ne[n_dims] elements per dimension, ne[0] innermost;
 *                                   0 allowed; ne[0] a multiple of the block
 *                 uint32 type       rt_type_t (GGUF's ggml_type ids)
 *                 uint64 offset     of the data, bytes from the data section;
 *                                   a multiple of the alignment
 *   padding       zeros up to the next multiple of the alignment: the data
 *                 section starts there (data_offset)
 *   data          each tensor's bytes, contiguous (rt_tensor.h), at its
 *                 offset; tensors may not overlap and must lie in the file
 *
 * The alignment is the UINT32 key "general.alignment", a power of two,
 * default 32. A file without tensors may end before data_offset.
 *
 * A file that breaks any rule above, or whose counts, lengths or sizes
 * overflow or point past the end, is refused as a whole with RT_ERR_FORMAT
 * and a message naming the file, the field and its byte offset.
 *
 * Reading, then writing, for shape:
 *
 *     rt_gguf_t *g;
 *     if (rt_gguf_open("model.gguf", NULL, &g) != RT_OK) die(rt_last_error());
 *     const char *arch; uint32_t n_layer;
 *     rt_gguf_get_str(g, "general.architecture", &arch);
 *     rt_gguf_get_u32(g, "llama.block_count", &n_layer);
 *     rt_gguf_tensor_info_t ti = { .struct_size = sizeof ti };
 *     rt_gguf_get_tensor_info(g, rt_gguf_find_tensor(g, "output.weight"), &ti);
 *     // ti.type, ti.ne[], ti.data: the bytes, inside the mapping
 *     rt_gguf_writer_t *w;
 *     rt_gguf_writer_create(NULL, &w);
 *     rt_gguf_writer_set_str(w, "general.architecture", arch);
 *     rt_gguf_writer_add_tensor(w, ti.name, ti.type, ti.n_dims, ti.ne, ti.data);
 *     rt_gguf_writer_write_file(w, "copy.gguf");
 *     rt_gguf_writer_destroy(w); rt_gguf_destroy(g);
 *
 * The host must be little-endian (every 64-bit target rt supports is).
 */
#ifndef RT_GGUF_H
#define RT_GGUF_H

#include "rt_base.h"
#include "rt_tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RT_GGUF_MAGIC 0x46554747u           /* "GGUF" read as a little-endian uint32 */
#define RT_GGUF_VERSION 3u                  /* what the writer writes */
#define RT_GGUF_DEFAULT_ALIGNMENT 32u       /* bytes, when general.alignment is absent */
#define RT_GGUF_KEY_ALIGNMENT "general.alignment"

/* Value types of the key/value section. The numbers are GGUF's. */
typedef int32_t rt_gguf_type_t;
enum {
    RT_GGUF_TYPE_UINT8 = 0,
    RT_GGUF_TYPE_INT8 = 1,
    RT_GGUF_TYPE_UINT16 = 2,
    RT_GGUF_TYPE_INT16 = 3,
    RT_GGUF_TYPE_UINT32 = 4,
    RT_GGUF_TYPE_INT32 = 5,
    RT_GGUF_TYPE_FLOAT32 = 6,
    RT_GGUF_TYPE_BOOL = 7,    /* one byte, 0 or 1 */
    RT_GGUF_TYPE_STRING = 8,
    RT_GGUF_TYPE_ARRAY = 9,
    RT_GGUF_TYPE_UINT64 = 10,
    RT_GGUF_TYPE_INT64 = 11,
    RT_GGUF_TYPE_FLOAT64 = 12,
    RT_GGUF_TYPE_COUNT = 13
};

/* "u8", "str", "arr", ...; "?" for a value outside 0..12. */
RT_API const char *rt_gguf_type_name(rt_gguf_type_t type);

/* Options for the reader and the writer; a zeroed struct (or NULL) means the
 * defaults. */
typedef struct rt_gguf_options {
    uint32_t struct_size;
    const rt_allocator_t *allocator; /* NULL: malloc; copied, not kept */
} rt_gguf_options_t;

//===--- rt_gguf_t: a parsed file ---===//

/* A checked GGUF file. Keys, strings and arrays are copied out of the file
 * when it is opened (arrays aligned to their element size, strings with a
 * NUL added), so every pointer a getter returns is borrowed from the
 * rt_gguf_t and lives until rt_gguf_destroy. Tensor data is not copied: it
 * points into the mapping (or the caller's memory). An rt_gguf_t is never
 * modified after it is made, so any number of threads may read it. */
typedef struct rt_gguf rt_gguf_t;

/* Maps the file at |path| read-only and checks it. The mapping lives as long
 * as the rt_gguf_t. Fails with RT_ERR_NOT_FOUND (no such file), RT_ERR_IO
 * (cannot open, stat or map it, not a regular file, or it changed while
 * being read: the header is read twice), RT_ERR_FORMAT
 * (malformed; the message names path, field and byte offset) or
 * RT_ERR_OUT_OF_MEMORY. |options| may be NULL. */
RT_API rt_status_t rt_gguf_open(const char *path, const rt_gguf_options_t *options,
                                rt_gguf_t **out_gguf);
/* Checks the |size| bytes at |data| as a GGUF file without copying them: the
 * caller keeps them alive and unchanged until rt_gguf_destroy. |name| (may
 * be NULL) stands for the file in messages. Tensor data pointers are aligned
 * as far as |data| is. Fails with RT_ERR_FORMAT or RT_ERR_OUT_OF_MEMORY;
 * RT_ERR_INVALID_ARGUMENT when data is NULL and size is not 0. */
RT_API rt_status_t rt_gguf_parse(const void *data, size_t size, const char *name,
                                 const rt_gguf_options_t *options, rt_gguf_t **out_gguf);
/* Frees everything and unmaps the file; accepts NULL. Pointers obtained from
 * g (tensor data included) die with it. */
RT_API void rt_gguf_destroy(rt_gguf_t *g);

RT_API uint32_t rt_gguf_version(const rt_gguf_t *g);      /* 2 or 3 */
RT_API uint32_t rt_gguf_alignment(const rt_gguf_t *g);    /* bytes, a power of two */
RT_API uint64_t rt_gguf_data_offset(const rt_gguf_t *g);  /* bytes from the file start */
RT_API const void *rt_gguf_file_data(const rt_gguf_t *g); /* the file's first byte */
RT_API uint64_t rt_gguf_file_size(const rt_gguf_t *g);    /* bytes */
/* Says the file bytes [offset, offset + size) are no longer needed (their
 * tensors were copied to devices): the whole pages inside are unmapped, so
 * the memory goes back to the system. Tensor data pointers into that range
 * become invalid; keys, strings and arrays stay valid (they were copied).
 * Nothing happens for a file given to rt_gguf_parse. */
RT_API void rt_gguf_release_range(rt_gguf_t *g, uint64_t offset, uint64_t size);

//===--- rt_gguf_t: keys and values ---===//

/* Keys are numbered 0..n_kv-1 in file order. The index getters return
 * NULL / -1 / 0 for an index out of range. */
RT_API int64_t rt_gguf_n_kv(const rt_gguf_t *g);
/* The index of |key|, or -1 when the file has no such key. */
RT_API int64_t rt_gguf_find_key(const rt_gguf_t *g, const char *key);
RT_API const char *rt_gguf_kv_key(const rt_gguf_t *g, int64_t kv);
RT_API rt_gguf_type_t rt_gguf_kv_type(const rt_gguf_t *g, int64_t kv);
/* For an ARRAY: its element type and length; -1 and 0 for other types. */
RT_API rt_gguf_type_t rt_gguf_kv_array_type(const rt_gguf_t *g, int64_t kv);
RT_API uint64_t rt_gguf_kv_array_len(const rt_gguf_t *g, int64_t kv);

/* Typed getters by key. Each fails with RT_ERR_NOT_FOUND when the key is
 * absent and RT_ERR_INVALID_ARGUMENT when the value has another type (no
 * conversions); *out is then left zero. Strings are NUL-terminated; a string
 * that holds a NUL byte reads as ending there. */
RT_API rt_status_t rt_gguf_get_u8(const rt_gguf_t *g, const char *key, uint8_t *out);
RT_API rt_status_t rt_gguf_get_i8(const rt_gguf_t *g, const char *key, int8_t *out);
RT_API rt_status_t rt_gguf_get_u16(const rt_gguf_t *g, const char *key, uint16_t *out);
RT_API rt_status_t rt_gguf_get_i16(const rt_gguf_t *g, const char *key, int16_t *out);
RT_API rt_status_t rt_gguf_get_u32(const rt_gguf_t *g, const char *key, uint32_t *out);
RT_API rt_status_t rt_gguf_get_i32(const rt_gguf_t *g, const char *key, int32_t *out);
RT_API rt_status_t rt_gguf_get_f32(const rt_gguf_t *g, const char *key, float *out);
RT_API rt_status_t rt_gguf_get_bool(const rt_gguf_t *g, const char *key, bool *out);
RT_API rt_status_t rt_gguf_get_str(const rt_gguf_t *g, const char *key, const char **out);
RT_API rt_status_t rt_gguf_get_u64(const rt_gguf_t *g, const char *key, uint64_t *out);
RT_API rt_status_t rt_gguf_get_i64(const rt_gguf_t *g, const char *key, int64_t *out);
RT_API rt_status_t rt_gguf_get_f64(const rt_gguf_t *g, const char *key, double *out);

/* The array under |key|, whose elements must be of |elem_type| (else
 * RT_ERR_INVALID_ARGUMENT). *out_data points at *out_n elements stored as
 * the C type of elem_type (uint8_t ... double; bool for BOOL), aligned for
 * it; for STRING it is a `const char *const *` table of n strings. An empty
 * array gives n 0 and a non-NULL pointer. */
RT_API rt_status_t rt_gguf_get_array(const rt_gguf_t *g, const char *key,
                                     rt_gguf_type_t elem_type, const void **out_data,
                                     uint64_t *out_n);
/* Element |i| of the string array under |key|; RT_ERR_INVALID_ARGUMENT when
 * the value is not a string array or i is not below its length. */
RT_API rt_status_t rt_gguf_get_array_str(const rt_gguf_t *g, const char *key, uint64_t i,
                                         const char **out);

//===--- rt_gguf_t: tensors ---===//

/* One tensor of the file, as rt_gguf_get_tensor_info fills it. */
typedef struct rt_gguf_tensor_info {
    uint32_t struct_size;        /* set by the caller: sizeof the struct it knows */
    rt_type_t type;              /* GGUF's type id as stored (an RT_TYPE_* when rt implements it) */
    const char *name;            /* NUL-terminated, < RT_MAX_NAME bytes */
    int32_t n_dims;              /* 1..4, as stored */
    int32_t reserved;            /* zero */
    int64_t ne[RT_MAX_DIMS];     /* elements per dimension; 1 past n_dims */
    uint64_t offset;             /* bytes from the data section, a multiple of the alignment */
    uint64_t size;               /* bytes of data (contiguous layout) */
    const void *data;            /* the bytes, in the mapping: file start + data_offset + offset */
} rt_gguf_tensor_info_t;

RT_STATIC_ASSERT(sizeof(rt_gguf_tensor_info_t) == 80, "rt_gguf_tensor_info_t 1.0 size");

/* Tensors are numbered 0..n_tensors-1 in file order. */
RT_API int64_t rt_gguf_n_tensors(const rt_gguf_t *g);
/* The index of the tensor named |name|, or -1. */
RT_API int64_t rt_gguf_find_tensor(const rt_gguf_t *g, const char *name);
/* Fills the fields of *out_info that lie inside out_info->struct_size (set
 * it first). RT_ERR_INVALID_ARGUMENT for an index out of range (-1 from
 * find_tensor included) or a struct_size of 0. A file whose tensors have
 * types rt does not implement still opens (abi >= 1.2): for such a tensor
 * the fields are filled all the same (size 0 when GGUF's layout of the id
 * is unknown too) and the call returns RT_ERR_UNSUPPORTED, its message
 * naming the type and the types rt implements. */
RT_API rt_status_t rt_gguf_get_tensor_info(const rt_gguf_t *g, int64_t i,
                                           rt_gguf_tensor_info_t *out_info);
/* Tensor i's bytes in the mapping, or NULL for an index out of range. */
RT_API const void *rt_gguf_tensor_data(const rt_gguf_t *g, int64_t i);

//===--- rt_gguf_writer_t ---===//

/* Collects keys and tensors, then writes a GGUF version 3 file. Keys and
 * tensors are written in the order they were first set or added; setting a
 * key again replaces its value in place. Keys, strings and arrays are
 * copied; tensor data is borrowed and must stay valid until the last write
 * call (or destroy). The alignment is the value of general.alignment when
 * set (it must then be a UINT32 power of two), else 32. Padding is zeros;
 * every tensor's data is padded to the alignment, and a file without
 * tensors ends after its last key/value. Not thread-safe. */
typedef struct rt_gguf_writer rt_gguf_writer_t;

RT_API rt_status_t rt_gguf_writer_create(const rt_gguf_options_t *options,
                                         rt_gguf_writer_t **out_writer);
RT_API void rt_gguf_writer_destroy(rt_gguf_writer_t *w);

/* Setters. Fail with RT_ERR_INVALID_ARGUMENT for a NULL key or string, or a
 * general.alignment that is not a power of two set as UINT32;
 * RT_ERR_OUT_OF_MEMORY. */
RT_API rt_status_t rt_gguf_writer_set_u8(rt_gguf_writer_t *w, const char *key, uint8_t v);
RT_API rt_status_t rt_gguf_writer_set_i8(rt_gguf_writer_t *w, const char *key, int8_t v);
RT_API rt_status_t rt_gguf_writer_set_u16(rt_gguf_writer_t *w, const char *key, uint16_t v);
RT_API rt_status_t rt_gguf_writer_set_i16(rt_gguf_writer_t *w, const char *key, int16_t v);
RT_API rt_status_t rt_gguf_writer_set_u32(rt_gguf_writer_t *w, const char *key, uint32_t v);
RT_API rt_status_t rt_gguf_writer_set_i32(rt_gguf_writer_t *w, const char *key, int32_t v);
RT_API rt_status_t rt_gguf_writer_set_f32(rt_gguf_writer_t *w, const char *key, float v);
RT_API rt_status_t rt_gguf_writer_set_bool(rt_gguf_writer_t *w, const char *key, bool v);
RT_API rt_status_t rt_gguf_writer_set_str(rt_gguf_writer_t *w, const char *key, const char *v);
RT_API rt_status_t rt_gguf_writer_set_u64(rt_gguf_writer_t *w, const char *key, uint64_t v);
RT_API rt_status_t rt_gguf_writer_set_i64(rt_gguf_writer_t *w, const char *key, int64_t v);
RT_API rt_status_t rt_gguf_writer_set_f64(rt_gguf_writer_t *w, const char *key, double v);
/* An array of |n| elements of |elem_type| (any type but ARRAY) read from
 * |data|, laid out as rt_gguf_get_array returns them: the C type of
 * elem_type, or `const char *const *` for STRING. data may be NULL when n is
 * 0. BOOL elements must be 0 or 1. */
RT_API rt_status_t rt_gguf_writer_set_array(rt_gguf_writer_t *w, const char *key,
                                            rt_gguf_type_t elem_type, const void *data,
                                            uint64_t n);

/* Adds a tensor of |type| (one rt implements) and shape ne[0..n_dims-1]
 * (n_dims 1..4, every ne >= 0, ne[0] a multiple of the block size) whose
 * contiguous bytes are at |data|, or zeros when data is NULL. The writer
 * places it at the next multiple of the alignment. RT_ERR_INVALID_ARGUMENT
 * for a name that is NULL, RT_MAX_NAME bytes or longer, or already added,
 * and for a bad type or shape; RT_ERR_OUT_OF_MEMORY. */
RT_API rt_status_t rt_gguf_writer_add_tensor(rt_gguf_writer_t *w, const char *name,
                                             rt_type_t type, int32_t n_dims, const int64_t *ne,
                                             const void *data);

/* Bytes the file will take. */
RT_API uint64_t rt_gguf_writer_size(const rt_gguf_writer_t *w);
/* Writes the file to |path| the way a database would: into a temporary
 * file beside it, fsynced, then renamed over it, so |path| holds the old
 * file or the whole new one (a path that exists and is not a regular file,
 * such as /dev/null, is written in place). A failure, or SIGINT, SIGTERM or
 * SIGHUP while writing (a handler is installed where the program has
 * none), removes only the temporary file. RT_ERR_IO with the OS's reason. */
RT_API rt_status_t rt_gguf_writer_write_file(const rt_gguf_writer_t *w, const char *path);
/* Writes the file into the caller's |dst| of |size| bytes, which must hold
 * rt_gguf_writer_size bytes (else RT_ERR_DOES_NOT_FIT and nothing written). */
RT_API rt_status_t rt_gguf_writer_write_mem(const rt_gguf_writer_t *w, void *dst, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* RT_GGUF_H */
