/* SPDX-License-Identifier: MIT */
/* gguf.c: the GGUF reader, rt_gguf_t (format in abi/rt_gguf.h). It trusts
 * nothing in the file: every count is bounded by the bytes left, every size
 * and offset is computed with checked arithmetic, and the whole file is
 * checked before the caller sees any of it.
 *
 * Parsing walks the header, the key/values and the tensor infos twice with
 * the same code: the first walk checks the syntax and measures the arena
 * that will hold keys, strings and arrays; the second, after one allocation
 * each for the arena and the two tables, copies them. Then come the checks
 * that need the whole picture: alignment, duplicate keys and names, tensor
 * data inside the file and not overlapping. */
#include "gguf.h"
#include "mmap.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One key/value. Scalars live in v.raw (little-endian, as in the file);
 * strings and arrays in the arena. */
typedef struct gguf_kv {
    const char *key;
    uint64_t pos;            /* byte offset of the key in the file, for messages */
    rt_gguf_type_t type;
    rt_gguf_type_t arr_type; /* element type of an ARRAY, else -1 */
    uint64_t n;              /* elements of an ARRAY, else 0 */
    union {
        uint8_t raw[8];
        const char *str;
        const void *arr;     /* n elements, or for STRING n `const char *` */
    } v;
} gguf_kv_t;

typedef struct gguf_tensor {
    const char *name;
    uint64_t pos;            /* byte offset of the tensor info, for messages */
    uint64_t offset_pos;     /* byte offset of its offset field */
    rt_type_t type;
    int32_t n_dims;
    int64_t ne[RT_MAX_DIMS]; /* 1 past n_dims */
    uint64_t offset;         /* bytes from the data section */
    uint64_t size;           /* bytes */
} gguf_tensor_t;

/* index_build reads the name as the first field of either entry. */
_Static_assert(offsetof(gguf_kv_t, key) == 0, "the key leads a kv entry");
_Static_assert(offsetof(gguf_tensor_t, name) == 0, "the name leads a tensor entry");

/* Names sorted (by strcmp, then index) for lookups and duplicate checks:
 * O(n log n) whatever the names, which a hash table cannot promise
 * against a file crafted to collide. */
typedef struct name_entry {
    const char *name;
    int64_t i;               /* index of the kv or tensor */
} name_entry_t;

typedef struct name_index {
    name_entry_t *entries;   /* n, sorted */
    int64_t n;
} name_index_t;

struct rt_gguf {
    rt_allocator_t allocator;
    rt_mapping_t map;        /* zeroed for rt_gguf_parse */
    const uint8_t *data;     /* the file */
    size_t size;             /* bytes */
    uint32_t version;
    uint32_t alignment;      /* bytes */
    uint64_t info_end;       /* byte after the last tensor info */
    uint64_t data_offset;    /* info_end aligned up */
    int64_t n_kv, n_tensors;
    gguf_kv_t *kvs;          /* n_kv, or NULL until the second walk */
    gguf_tensor_t *tensors;  /* n_tensors, or NULL until the second walk */
    char *arena;             /* keys, strings, arrays */
    size_t arena_size;       /* bytes */
    name_index_t keys, names;
};

//===--- shared with the writer (gguf.h) ---===//

size_t rt_gguf_value_size(rt_gguf_type_t type) {
    static const uint8_t sizes[RT_GGUF_TYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    return type >= 0 && type < RT_GGUF_TYPE_COUNT ? sizes[type] : 0;
}

const char *rt_gguf_type_name(rt_gguf_type_t type) {
    static const char *const names[RT_GGUF_TYPE_COUNT] = {
        "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "str", "arr", "u64", "i64", "f64"};
    return type >= 0 && type < RT_GGUF_TYPE_COUNT ? names[type] : "?";
}

/* GGUF's block layouts of the ids rt reads but does not implement, so that
 * a file holding them still opens with every tensor's extent checked
 * (ids 4, 5 and 31..33 were removed from the format; their layout is
 * unknown and such tensors are not measured). */
static const struct { uint32_t type; int64_t blck; size_t size; } gguf_only_layouts[] = {
    {9, 32, 36},   /* q8_1 */    {16, 256, 66}, /* iq2_xxs */ {17, 256, 74}, /* iq2_xs */
    {18, 256, 98}, /* iq3_xxs */ {19, 256, 50}, /* iq1_s */   {21, 256, 110}, /* iq3_s */
    {22, 256, 82}, /* iq2_s */   {24, 1, 1},    /* i8 */      {25, 1, 2},    /* i16 */
    {27, 1, 8},    /* i64 */     {28, 1, 8},    /* f64 */     {29, 256, 56}, /* iq1_m */
    {34, 256, 54}, /* tq1_0 */   {35, 256, 66}, /* tq2_0 */   {39, 32, 17},  /* mxfp4 */
};

/* The block of GGUF type id `type`: rt's own types, then GGUF's others;
 * false when the layout is unknown. */
static bool gguf_layout(uint32_t type, int64_t *out_blck, size_t *out_size) {
    const rt_type_traits_t *tr = type < RT_TYPE_COUNT ? rt_type_traits((rt_type_t)type) : NULL;
    if (tr != NULL) {
        *out_blck = tr->block_size;
        *out_size = tr->type_size;
        return true;
    }
    for (size_t i = 0; i < sizeof gguf_only_layouts / sizeof gguf_only_layouts[0]; i++)
        if (gguf_only_layouts[i].type == type) {
            *out_blck = gguf_only_layouts[i].blck;
            *out_size = gguf_only_layouts[i].size;
            return true;
        }
    return false;
}

static const char *check_layout_shape(int64_t blck, size_t type_size, int32_t n_dims,
                                      const int64_t *ne, uint64_t *out_size) {
    *out_size = 0;
    if (n_dims < 1 || n_dims > RT_MAX_DIMS) return "n_dims is not 1..4";
    for (int32_t i = 0; i < n_dims; i++)
        if (ne[i] < 0) return "an ne is negative";
    if (ne[0] % blck != 0) return "ne[0] is not a multiple of the type's block size";
    uint64_t bound = type_size, size = type_size;
    bool ok = true;
    for (int32_t i = 0; i < n_dims; i++) {
        const uint64_t n = (uint64_t)(i == 0 ? ne[0] / blck : ne[i]);
        ok = ok && rt_gguf_mul(bound, n > 0 ? n : 1, &bound) && rt_gguf_mul(size, n, &size);
    }
    if (!ok || bound > INT64_MAX) return "the tensor's bytes overflow 63 bits";
    *out_size = size;
    return NULL;
}

const char *rt_gguf_check_shape(rt_type_t type, int32_t n_dims, const int64_t *ne,
                                uint64_t *out_size) {
    *out_size = 0;
    const rt_type_traits_t *tr = rt_type_traits(type);
    if (tr == NULL) return "not a type rt implements";
    return check_layout_shape(tr->block_size, tr->type_size, n_dims, ne, out_size);
}

//===--- error messages ---===//

static rt_status_t vfail(const char *file, uint64_t pos, const char *what, const char *fmt,
                         va_list ap) {
    char detail[256];
    vsnprintf(detail, sizeof detail, fmt, ap);
    return rt_error(RT_ERR_FORMAT, "%s: byte %" PRIu64 ": %s: %s", file, pos, what, detail);
}

/* A failure found after the walks; `what` names the field. */
static rt_status_t gfail(const char *file, uint64_t pos, const char *what, const char *fmt, ...)
    RT_PRINTF(4, 5);
static rt_status_t gfail(const char *file, uint64_t pos, const char *what, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    const rt_status_t st = vfail(file, pos, what, fmt, ap);
    va_end(ap);
    return st;
}

//===--- the cursor ---===//

/* Where a walk is, for bounds and for messages: the item being read (a kv
 * or a tensor info, with its index and name once known) and the array
 * element (-1 outside arrays). */
typedef struct reader {
    const uint8_t *p;
    size_t size;
    size_t pos;
    const char *file;
    const char *item;        /* "header", "kv", "tensor" */
    int64_t index;
    const uint8_t *item_name; /* in the file, not NUL-terminated */
    size_t item_name_len;
    int64_t elem;
} reader_t;

static rt_status_t rfail(const reader_t *r, uint64_t pos, const char *field, const char *fmt, ...)
    RT_PRINTF(4, 5);
static rt_status_t rfail(const reader_t *r, uint64_t pos, const char *field, const char *fmt, ...) {
    char what[192];
    int n = snprintf(what, sizeof what, "%s", r->item);
    if (r->index >= 0) n += snprintf(what + n, sizeof what - (size_t)n, " %" PRId64, r->index);
    if (r->item_name != NULL)
        n += snprintf(what + n, sizeof what - (size_t)n, " '%.*s'",
                      (int)(r->item_name_len < 64 ? r->item_name_len : 64),
                      (const char *)r->item_name);
    if (r->elem >= 0) n += snprintf(what + n, sizeof what - (size_t)n, " element %" PRId64, r->elem);
    snprintf(what + n, sizeof what - (size_t)n, " %s", field);
    va_list ap;
    va_start(ap, fmt);
    const rt_status_t st = vfail(r->file, pos, what, fmt, ap);
    va_end(ap);
    return st;
}

static void reader_item(reader_t *r, const char *item, int64_t index) {
    r->item = item;
    r->index = index;
    r->item_name = NULL;
    r->item_name_len = 0;
    r->elem = -1;
}

static size_t left(const reader_t *r) { return r->size - r->pos; }

static rt_status_t read_bytes(reader_t *r, uint64_t n, const char *field, const uint8_t **out) {
    *out = NULL;
    if (n > left(r))
        return rfail(r, r->pos, field, "needs %" PRIu64 " bytes, the file has %zu left", n,
                     left(r));
    *out = r->p + r->pos;
    r->pos += (size_t)n;
    return RT_OK;
}

static rt_status_t read_raw(reader_t *r, void *out, size_t n, const char *field) {
    const uint8_t *p;
    const rt_status_t st = read_bytes(r, n, field, &p);
    if (st == RT_OK) memcpy(out, p, n);
    return st;
}

static rt_status_t read_u32(reader_t *r, uint32_t *out, const char *field) {
    *out = 0;
    return read_raw(r, out, sizeof *out, field);
}

static rt_status_t read_u64(reader_t *r, uint64_t *out, const char *field) {
    *out = 0;
    return read_raw(r, out, sizeof *out, field);
}

/* A string: its length, then its bytes. `field` names the length. */
static rt_status_t read_string(reader_t *r, const char *field, const uint8_t **out_s,
                               uint64_t *out_len) {
    *out_s = NULL;
    const uint64_t len_pos = r->pos;
    rt_status_t st = read_u64(r, out_len, field);
    if (st == RT_OK && *out_len > left(r))
        return rfail(r, len_pos, field, "%" PRIu64 " bytes, but the file has %zu left", *out_len,
                     left(r));
    if (st == RT_OK) st = read_bytes(r, *out_len, field, out_s);
    return st;
}

//===--- the arena ---===//

/* In the measuring walk base is NULL: takes only count. In the filling
 * walk a take past cap (the file changed between the walks) gives NULL
 * and sets overflow. */
typedef struct arena {
    char *base;
    size_t cap;              /* bytes at base */
    size_t used;             /* bytes; bounded by a small multiple of the file size */
    bool overflow;
} arena_t;

/* At least one byte, so that an empty array still gets a pointer. */
static void *arena_take(arena_t *a, size_t n, size_t align) {
    const size_t off = rt_align_up(a->used, align);
    a->used = off + (n > 0 ? n : 1);
    a->overflow |= a->base != NULL && a->used > a->cap;
    return a->base != NULL && !a->overflow ? a->base + off : NULL;
}

static const char *arena_str(arena_t *a, const uint8_t *s, uint64_t len) {
    char *d = arena_take(a, (size_t)len + 1, 1);
    if (d != NULL) {
        if (len > 0) memcpy(d, s, (size_t)len);
        d[len] = 0;
    }
    return d;
}

//===--- key/values ---===//

/* BOOL values must be 0 or 1; b holds n of them, read from byte pos, the
 * elements of an array when in_array. */
static rt_status_t check_bools(reader_t *r, uint64_t pos, const uint8_t *b, uint64_t n,
                               bool in_array) {
    for (uint64_t i = 0; i < n; i++) {
        if (b[i] <= 1) continue;
        if (in_array) r->elem = (int64_t)i;
        return rfail(r, pos + i, "value", "bool is %u, not 0 or 1", b[i]);
    }
    return RT_OK;
}

static rt_status_t read_scalar(reader_t *r, rt_gguf_type_t type, uint8_t *out) {
    const uint64_t pos = r->pos;
    rt_status_t st = read_raw(r, out, rt_gguf_value_size(type), "value");
    if (st == RT_OK && type == RT_GGUF_TYPE_BOOL) st = check_bools(r, pos, out, 1, false);
    return st;
}

static rt_status_t read_string_array(reader_t *r, arena_t *a, gguf_kv_t *kv) {
    const char **table = arena_take(a, (size_t)kv->n * sizeof *table, sizeof *table);
    rt_status_t st = RT_OK;
    for (uint64_t i = 0; i < kv->n && st == RT_OK; i++) {
        const uint8_t *s;
        uint64_t len;
        r->elem = (int64_t)i;
        st = read_string(r, "string length", &s, &len);
        const char *copy = st == RT_OK ? arena_str(a, s, len) : NULL;
        if (table != NULL) table[i] = copy;
    }
    kv->v.arr = table;
    return st;
}

static rt_status_t read_scalar_array(reader_t *r, arena_t *a, gguf_kv_t *kv) {
    const size_t esize = rt_gguf_value_size(kv->arr_type);
    const size_t bytes = (size_t)kv->n * esize; /* read_array bounded n by the bytes left */
    const uint64_t pos = r->pos;
    const uint8_t *src;
    rt_status_t st = read_bytes(r, bytes, "array data", &src);
    if (st == RT_OK && kv->arr_type == RT_GGUF_TYPE_BOOL) st = check_bools(r, pos, src, kv->n, true);
    uint8_t *dst = arena_take(a, bytes, esize);
    if (st == RT_OK && dst != NULL && bytes > 0) memcpy(dst, src, bytes);
    kv->v.arr = dst;
    return st;
}

static rt_status_t read_array(reader_t *r, arena_t *a, gguf_kv_t *kv) {
    const uint64_t type_pos = r->pos;
    uint32_t et;
    rt_status_t st = read_u32(r, &et, "array element type");
    if (st == RT_OK && et >= RT_GGUF_TYPE_COUNT)
        st = rfail(r, type_pos, "array element type", "%" PRIu32 " is not a type 0..12", et);
    if (st == RT_OK && et == RT_GGUF_TYPE_ARRAY)
        st = rfail(r, type_pos, "array element type", "arrays of arrays are not supported");
    const uint64_t n_pos = r->pos;
    if (st == RT_OK) st = read_u64(r, &kv->n, "array length");
    if (st != RT_OK) return st;
    kv->arr_type = (rt_gguf_type_t)et;
    const size_t min =
        et == RT_GGUF_TYPE_STRING ? RT_GGUF_STRING_LEN_BYTES : rt_gguf_value_size(kv->arr_type);
    if (kv->n > left(r) / min)
        return rfail(r, n_pos, "array length",
                     "%" PRIu64 " elements of at least %zu bytes, but the file has %zu left", kv->n,
                     min, left(r));
    return et == RT_GGUF_TYPE_STRING ? read_string_array(r, a, kv) : read_scalar_array(r, a, kv);
}

static rt_status_t read_key(reader_t *r, arena_t *a, gguf_kv_t *kv) {
    const uint8_t *s;
    uint64_t len;
    kv->pos = r->pos;
    rt_status_t st = read_string(r, "key length", &s, &len);
    if (st == RT_OK && memchr(s, 0, (size_t)len) != NULL)
        st = rfail(r, kv->pos, "key", "contains a NUL byte");
    if (st != RT_OK) return st;
    r->item_name = s;
    r->item_name_len = (size_t)len;
    kv->key = arena_str(a, s, len);
    return RT_OK;
}

static rt_status_t read_kv(reader_t *r, arena_t *a, gguf_kv_t *kv) {
    kv->arr_type = -1;
    kv->n = 0;
    rt_status_t st = read_key(r, a, kv);
    const uint64_t type_pos = r->pos;
    uint32_t type = 0;
    if (st == RT_OK) st = read_u32(r, &type, "value type");
    if (st == RT_OK && type >= RT_GGUF_TYPE_COUNT)
        st = rfail(r, type_pos, "value type", "%" PRIu32 " is not a type 0..12", type);
    if (st != RT_OK) return st;
    kv->type = (rt_gguf_type_t)type;
    if (type == RT_GGUF_TYPE_ARRAY) return read_array(r, a, kv);
    if (type != RT_GGUF_TYPE_STRING) return read_scalar(r, kv->type, kv->v.raw);
    const uint8_t *s;
    uint64_t len;
    st = read_string(r, "string length", &s, &len);
    if (st == RT_OK) kv->v.str = arena_str(a, s, len);
    return st;
}

//===--- tensor infos ---===//

static rt_status_t read_tensor_name(reader_t *r, arena_t *a, gguf_tensor_t *t) {
    const uint8_t *s;
    uint64_t len;
    rt_status_t st = read_string(r, "name length", &s, &len);
    if (st == RT_OK && len >= RT_MAX_NAME)
        st = rfail(r, t->pos, "name length", "%" PRIu64 " bytes, the limit is %d", len,
                   RT_MAX_NAME - 1);
    if (st == RT_OK && memchr(s, 0, (size_t)len) != NULL)
        st = rfail(r, t->pos, "name", "contains a NUL byte");
    if (st != RT_OK) return st;
    r->item_name = s;
    r->item_name_len = (size_t)len;
    t->name = arena_str(a, s, len);
    return RT_OK;
}

static rt_status_t read_tensor_dims(reader_t *r, gguf_tensor_t *t) {
    static const char *const fields[RT_MAX_DIMS] = {"ne[0]", "ne[1]", "ne[2]", "ne[3]"};
    const uint64_t pos = r->pos;
    uint32_t n_dims;
    rt_status_t st = read_u32(r, &n_dims, "n_dims");
    if (st == RT_OK && (n_dims < 1 || n_dims > RT_MAX_DIMS))
        st = rfail(r, pos, "n_dims", "%" PRIu32 " is not 1..%d", n_dims, RT_MAX_DIMS);
    for (uint32_t i = 0; i < n_dims && st == RT_OK; i++) {
        const uint64_t ne_pos = r->pos;
        uint64_t ne;
        st = read_u64(r, &ne, fields[i]);
        if (st == RT_OK && ne > INT64_MAX)
            st = rfail(r, ne_pos, fields[i], "%" PRIu64 " is above INT64_MAX", ne);
        t->ne[i] = (int64_t)ne;
    }
    t->n_dims = (int32_t)n_dims;
    return st;
}

static rt_status_t read_tensor_info(reader_t *r, arena_t *a, gguf_tensor_t *t) {
    t->pos = r->pos;
    for (int i = 0; i < RT_MAX_DIMS; i++) t->ne[i] = 1;
    rt_status_t st = read_tensor_name(r, a, t);
    const uint64_t dims_pos = r->pos;
    if (st == RT_OK) st = read_tensor_dims(r, t);
    uint32_t type = 0;
    if (st == RT_OK) st = read_u32(r, &type, "type");
    /* A type rt does not implement is no format error: the file opens, and
       using the tensor fails (rt_gguf_get_tensor_info). A layout GGUF
       defines is checked as any other; an unknown one leaves size 0. */
    t->type = (rt_type_t)type;
    int64_t blck = 1;
    size_t bsize = 0;
    const bool known = gguf_layout(type, &blck, &bsize);
    const char *why = st == RT_OK && known
                          ? check_layout_shape(blck, bsize, t->n_dims, t->ne, &t->size)
                          : NULL;
    if (why != NULL)
        st = rfail(r, dims_pos, "shape", "{%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 "} %s: %s",
                   t->ne[0], t->ne[1], t->ne[2], t->ne[3], rt_type_name(t->type), why);
    t->offset_pos = r->pos;
    if (st == RT_OK) st = read_u64(r, &t->offset, "offset");
    return st;
}

//===--- the walk ---===//

static rt_status_t read_counts(reader_t *r, int64_t *out_n_tensors, int64_t *out_n_kv) {
    const uint64_t nt_pos = r->pos;
    uint64_t n_tensors, n_kv = 0;
    rt_status_t st = read_u64(r, &n_tensors, "n_tensors");
    const uint64_t nkv_pos = r->pos;
    if (st == RT_OK) st = read_u64(r, &n_kv, "n_kv");
    if (st == RT_OK && n_tensors > left(r) / RT_GGUF_MIN_TENSOR_INFO_BYTES)
        st = rfail(r, nt_pos, "n_tensors", "%" PRIu64 " tensor infos of at least %u bytes, "
                   "but the file has %zu left", n_tensors, RT_GGUF_MIN_TENSOR_INFO_BYTES, left(r));
    if (st == RT_OK && n_kv > left(r) / RT_GGUF_MIN_KV_BYTES)
        st = rfail(r, nkv_pos, "n_kv", "%" PRIu64 " key/values of at least %u bytes, "
                   "but the file has %zu left", n_kv, RT_GGUF_MIN_KV_BYTES, left(r));
    *out_n_tensors = (int64_t)n_tensors; /* bounded by the file size above */
    *out_n_kv = (int64_t)n_kv;
    return st;
}

static rt_status_t read_header(reader_t *r, rt_gguf_t *g, int64_t *out_n_tensors,
                               int64_t *out_n_kv) {
    uint32_t magic, version = 0;
    rt_status_t st = read_u32(r, &magic, "magic");
    if (st == RT_OK && magic != RT_GGUF_MAGIC)
        st = rfail(r, 0, "magic", "0x%08" PRIx32 " is not \"GGUF\" (0x%08x)", magic, RT_GGUF_MAGIC);
    if (st == RT_OK) st = read_u32(r, &version, "version");
    if (st == RT_OK && version != 2 && version != 3) {
        const char *hint = (version & 0xffffu) == 0 && version != 0 ? " (a big-endian file?)"
                           : version == 1 ? " (GGUF v1 is no longer supported)" : "";
        st = rfail(r, 4, "version", "%" PRIu32 " is not 2 or 3%s", version, hint);
    }
    g->version = version;
    return st == RT_OK ? read_counts(r, out_n_tensors, out_n_kv) : st;
}

/* A mapped file can change under us; the second walk must see the first's. */
static rt_status_t changed(const char *file) {
    return rt_error(RT_ERR_IO, "%s: the file changed while it was being read", file);
}

/* One walk over header, key/values and tensor infos. Measuring (fill
 * false), it checks and sets the counts and the arena size; filling, it
 * copies into the tables and the arena. */
static rt_status_t walk(rt_gguf_t *g, const char *file, arena_t *a, bool fill) {
    reader_t r = {.p = g->data, .size = g->size, .file = file};
    reader_item(&r, "header", -1);
    int64_t n_tensors = 0, n_kv = 0;
    rt_status_t st = read_header(&r, g, &n_tensors, &n_kv);
    if (st == RT_OK && fill && (n_tensors != g->n_tensors || n_kv != g->n_kv)) st = changed(file);
    if (st == RT_OK && !fill) g->n_tensors = n_tensors, g->n_kv = n_kv;
    for (int64_t i = 0; i < g->n_kv && st == RT_OK; i++) {
        gguf_kv_t scratch;
        reader_item(&r, "kv", i);
        st = read_kv(&r, a, fill ? &g->kvs[i] : &scratch);
    }
    for (int64_t i = 0; i < g->n_tensors && st == RT_OK; i++) {
        gguf_tensor_t scratch;
        reader_item(&r, "tensor", i);
        st = read_tensor_info(&r, a, fill ? &g->tensors[i] : &scratch);
    }
    g->info_end = r.pos;
    return st;
}

//===--- name indexes ---===//

static int entry_cmp(const void *pa, const void *pb) {
    const name_entry_t *a = pa, *b = pb;
    const int c = strcmp(a->name, b->name);
    return c != 0 ? c : (a->i > b->i) - (a->i < b->i);
}

static int64_t index_find(const name_index_t *ix, const char *name) {
    if (name == NULL) return -1;
    int64_t lo = 0, hi = ix->n; /* the first entry not below name is in [lo, hi] */
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (strcmp(ix->entries[mid].name, name) < 0) lo = mid + 1;
        else hi = mid;
    }
    return lo < ix->n && strcmp(ix->entries[lo].name, name) == 0 ? ix->entries[lo].i : -1;
}

/* Indexes the n names at names[k * stride] (the first field of each kv or
 * tensor entry). *out_dup is the first entry, in file order, whose name
 * an earlier one (*out_first) already has; both -1 when names are unique. */
static rt_status_t index_build(rt_gguf_t *g, name_index_t *ix, const void *names, size_t stride,
                               int64_t n, int64_t *out_first, int64_t *out_dup) {
    *out_first = *out_dup = -1;
    if (n == 0) return RT_OK;
    ix->entries = rt_mem_alloc(&g->allocator, (size_t)n * sizeof ix->entries[0]); /* n <= size */
    if (ix->entries == NULL)
        return rt_error(RT_ERR_OUT_OF_MEMORY, "gguf: name index of %" PRId64 " entries", n);
    ix->n = n;
    for (int64_t k = 0; k < n; k++) {
        const char *const *name = (const void *)((const char *)names + (size_t)k * stride);
        ix->entries[k] = (name_entry_t){*name, k};
    }
    qsort(ix->entries, (size_t)n, sizeof ix->entries[0], entry_cmp);
    for (int64_t k = 1; k < n; k++) {
        const name_entry_t *a = &ix->entries[k - 1], *b = &ix->entries[k];
        if (strcmp(a->name, b->name) == 0 && (*out_dup < 0 || b->i < *out_dup)) {
            *out_first = a->i;
            *out_dup = b->i;
        }
    }
    return RT_OK;
}

static rt_status_t index_all(rt_gguf_t *g, const char *file) {
    int64_t first, dup;
    rt_status_t st = index_build(g, &g->keys, g->kvs, sizeof g->kvs[0], g->n_kv, &first, &dup);
    if (st == RT_OK && dup >= 0)
        return gfail(file, g->kvs[dup].pos, "key", "kv %" PRId64 " '%s' repeats kv %" PRId64, dup,
                     g->kvs[dup].key, first);
    if (st == RT_OK)
        st = index_build(g, &g->names, g->tensors, sizeof g->tensors[0], g->n_tensors, &first, &dup);
    if (st == RT_OK && dup >= 0)
        return gfail(file, g->tensors[dup].pos, "tensor name",
                     "tensor %" PRId64 " '%s' repeats tensor %" PRId64, dup, g->tensors[dup].name,
                     first);
    return st;
}

//===--- layout checks ---===//

static rt_status_t check_alignment(rt_gguf_t *g, const char *file) {
    g->alignment = RT_GGUF_DEFAULT_ALIGNMENT;
    const int64_t i = index_find(&g->keys, RT_GGUF_KEY_ALIGNMENT);
    if (i >= 0) {
        const gguf_kv_t *kv = &g->kvs[i];
        if (kv->type != RT_GGUF_TYPE_UINT32)
            return gfail(file, kv->pos, RT_GGUF_KEY_ALIGNMENT, "type %s, must be u32",
                         rt_gguf_type_name(kv->type));
        memcpy(&g->alignment, kv->v.raw, sizeof g->alignment);
        if (!rt_gguf_is_pow2(g->alignment))
            return gfail(file, kv->pos, RT_GGUF_KEY_ALIGNMENT, "%" PRIu32 " is not a power of two",
                         g->alignment);
    }
    /* info_end <= file size and alignment < 2^32: no overflow */
    (void)rt_gguf_align(g->info_end, g->alignment, &g->data_offset);
    return RT_OK;
}

static rt_status_t check_tensor_data(const rt_gguf_t *g, const gguf_tensor_t *t, int64_t i,
                                     const char *file) {
    uint64_t start, end;
    if (t->offset % g->alignment != 0)
        return gfail(file, t->offset_pos, "tensor offset",
                     "tensor %" PRId64 " '%s': %" PRIu64 " is not a multiple of the alignment %" PRIu32,
                     i, t->name, t->offset, g->alignment);
    if (!rt_gguf_add(g->data_offset, t->offset, &start) || !rt_gguf_add(start, t->size, &end) ||
        end > g->size)
        return gfail(file, t->offset_pos, "tensor offset",
                     "tensor %" PRId64 " '%s': data offset %" PRIu64 " + %" PRIu64 " bytes "
                     "ends past the file's %zu bytes (data section at %" PRIu64 ")",
                     i, t->name, t->offset, t->size, g->size, g->data_offset);
    return RT_OK;
}

typedef struct span {
    uint64_t start, end;
    int64_t i;
} span_t;

static int span_cmp(const void *pa, const void *pb) {
    const span_t *a = pa, *b = pb;
    return a->start < b->start ? -1 : a->start > b->start ? 1 : (a->i > b->i) - (a->i < b->i);
}

/* Sorted by start, a tensor overlaps an earlier one exactly when it starts
 * before the furthest end so far. Empty tensors overlap nothing. */
static rt_status_t check_overlap(const rt_gguf_t *g, span_t *spans, const char *file) {
    for (int64_t i = 0; i < g->n_tensors; i++)
        spans[i] = (span_t){g->tensors[i].offset, g->tensors[i].offset + g->tensors[i].size, i};
    qsort(spans, (size_t)g->n_tensors, sizeof spans[0], span_cmp);
    const span_t *furthest = NULL;
    for (int64_t k = 0; k < g->n_tensors; k++) {
        const span_t *s = &spans[k];
        if (s->start == s->end) continue;
        if (furthest != NULL && furthest->end > s->start) {
            const gguf_tensor_t *t = &g->tensors[s->i], *o = &g->tensors[furthest->i];
            return gfail(file, t->offset_pos, "tensor offset",
                         "tensor %" PRId64 " '%s' [%" PRIu64 ", %" PRIu64 ") overlaps tensor %"
                         PRId64 " '%s' [%" PRIu64 ", %" PRIu64 ")", s->i, t->name, s->start,
                         s->end, furthest->i, o->name, furthest->start, furthest->end);
        }
        if (furthest == NULL || s->end > furthest->end) furthest = s;
    }
    return RT_OK;
}

static rt_status_t check_tensors(rt_gguf_t *g, const char *file) {
    rt_status_t st = RT_OK;
    for (int64_t i = 0; i < g->n_tensors && st == RT_OK; i++)
        st = check_tensor_data(g, &g->tensors[i], i, file);
    if (st != RT_OK || g->n_tensors < 2) return st;
    const size_t bytes = (size_t)g->n_tensors * sizeof(span_t); /* bounded by the file size */
    span_t *spans = rt_mem_alloc(&g->allocator, bytes);
    if (spans == NULL)
        return rt_error(RT_ERR_OUT_OF_MEMORY, "%s: %zu bytes to sort tensors", file, bytes);
    st = check_overlap(g, spans, file);
    rt_mem_free(&g->allocator, spans, bytes);
    return st;
}

//===--- loading ---===//

/* A zeroed table of n entries of size bytes; NULL when n is 0. */
static rt_status_t alloc_table(rt_gguf_t *g, int64_t n, size_t size, void **out,
                               const char *file) {
    *out = NULL;
    uint64_t bytes;
    if (n == 0) return RT_OK;
    if (!rt_gguf_mul((uint64_t)n, size, &bytes) || (*out = rt_mem_calloc(&g->allocator, bytes)) == NULL)
        return rt_error(RT_ERR_OUT_OF_MEMORY, "%s: %" PRId64 " entries of %zu bytes", file, n, size);
    return RT_OK;
}

static rt_status_t load(rt_gguf_t *g, const char *file) {
    arena_t measure = {0};
    rt_status_t st = walk(g, file, &measure, false);
    if (st == RT_OK) st = alloc_table(g, g->n_kv, sizeof g->kvs[0], (void **)&g->kvs, file);
    if (st == RT_OK)
        st = alloc_table(g, g->n_tensors, sizeof g->tensors[0], (void **)&g->tensors, file);
    if (st == RT_OK && measure.used > 0 &&
        (g->arena = rt_mem_alloc(&g->allocator, measure.used)) == NULL)
        st = rt_error(RT_ERR_OUT_OF_MEMORY, "%s: %zu bytes of metadata", file, measure.used);
    g->arena_size = g->arena != NULL ? measure.used : 0;
    arena_t fill = {.base = g->arena, .cap = g->arena_size};
    if (st == RT_OK) st = walk(g, file, &fill, true);
    if (st == RT_OK && (fill.overflow || fill.used != measure.used)) st = changed(file);
    if (st == RT_OK) st = index_all(g, file);
    if (st == RT_OK) st = check_alignment(g, file);
    if (st == RT_OK) st = check_tensors(g, file);
    return st;
}

static rt_status_t create(const void *data, size_t size, const char *file,
                          const rt_gguf_options_t *options, rt_gguf_t **out_gguf) {
    rt_gguf_options_t opt;
    RT_COPY_IN(&opt, options, rt_gguf_options_t, allocator);
    const rt_allocator_t *a = opt.allocator;
    if (a == NULL || a->realloc == NULL) a = rt_allocator_default();
    rt_gguf_t *g = rt_mem_calloc(a, sizeof *g);
    if (g == NULL) return rt_error(RT_ERR_OUT_OF_MEMORY, "%s: the rt_gguf_t", file);
    g->allocator = *a;
    g->data = data;
    g->size = size;
    const rt_status_t st = load(g, file);
    if (st != RT_OK) {
        rt_gguf_destroy(g);
        return st;
    }
    *out_gguf = g;
    return RT_OK;
}

rt_status_t rt_gguf_parse(const void *data, size_t size, const char *name,
                          const rt_gguf_options_t *options, rt_gguf_t **out_gguf) {
    RT_ARMOR(out_gguf != NULL);
    *out_gguf = NULL;
    if (data == NULL && size != 0)
        return rt_error(RT_ERR_INVALID_ARGUMENT, "%s: data is NULL, size %zu", __func__, size);
    return create(data, size, name != NULL ? name : "<memory>", options, out_gguf);
}

rt_status_t rt_gguf_open(const char *path, const rt_gguf_options_t *options, rt_gguf_t **out_gguf) {
    RT_ARMOR(out_gguf != NULL && path != NULL);
    *out_gguf = NULL;
    rt_mapping_t map;
    rt_status_t st = rt_mmap_file(path, &map);
    if (st == RT_OK) st = create(map.addr, map.size, path, options, out_gguf);
    if (st != RT_OK) {
        rt_munmap(&map);
        return st;
    }
    (*out_gguf)->map = map;
    return RT_OK;
}

void rt_gguf_destroy(rt_gguf_t *g) {
    if (g == NULL) return;
    const rt_allocator_t a = g->allocator;
    rt_mem_free(&a, g->keys.entries, (size_t)g->keys.n * sizeof g->keys.entries[0]);
    rt_mem_free(&a, g->names.entries, (size_t)g->names.n * sizeof g->names.entries[0]);
    rt_mem_free(&a, g->arena, g->arena_size);
    rt_mem_free(&a, g->kvs, (size_t)g->n_kv * sizeof g->kvs[0]);
    rt_mem_free(&a, g->tensors, (size_t)g->n_tensors * sizeof g->tensors[0]);
    rt_munmap(&g->map);
    rt_mem_free(&a, g, sizeof *g);
}

//===--- getters: the file ---===//

/* A NULL file is misuse the getters survive: 0, -1 or NULL. */
uint32_t rt_gguf_version(const rt_gguf_t *g) { return g != NULL ? g->version : 0; }
uint32_t rt_gguf_alignment(const rt_gguf_t *g) { return g != NULL ? g->alignment : 0; }
uint64_t rt_gguf_data_offset(const rt_gguf_t *g) { return g != NULL ? g->data_offset : 0; }
const void *rt_gguf_file_data(const rt_gguf_t *g) { return g != NULL ? g->data : NULL; }
uint64_t rt_gguf_file_size(const rt_gguf_t *g) { return g != NULL ? g->size : 0; }

void rt_gguf_release_range(rt_gguf_t *g, uint64_t offset, uint64_t size) {
    if (g != NULL) rt_mmap_release(&g->map, offset, size);
}

//===--- getters: key/values ---===//

int64_t rt_gguf_n_kv(const rt_gguf_t *g) { return g != NULL ? g->n_kv : 0; }

int64_t rt_gguf_find_key(const rt_gguf_t *g, const char *key) {
    return g != NULL ? index_find(&g->keys, key) : -1;
}

static const gguf_kv_t *kv_at(const rt_gguf_t *g, int64_t kv) {
    return kv >= 0 && kv < g->n_kv ? &g->kvs[kv] : NULL;
}

const char *rt_gguf_kv_key(const rt_gguf_t *g, int64_t kv) {
    const gguf_kv_t *p = kv_at(g, kv);
    return p != NULL ? p->key : NULL;
}

rt_gguf_type_t rt_gguf_kv_type(const rt_gguf_t *g, int64_t kv) {
    const gguf_kv_t *p = kv_at(g, kv);
    return p != NULL ? p->type : -1;
}

rt_gguf_type_t rt_gguf_kv_array_type(const rt_gguf_t *g, int64_t kv) {
    const gguf_kv_t *p = kv_at(g, kv);
    return p != NULL ? p->arr_type : -1;
}

uint64_t rt_gguf_kv_array_len(const rt_gguf_t *g, int64_t kv) {
    const gguf_kv_t *p = kv_at(g, kv);
    return p != NULL ? p->n : 0;
}

/* The kv under key if it has `type` (and for arrays, elements `arr_type`). */
static rt_status_t get_kv(const rt_gguf_t *g, const char *key, rt_gguf_type_t type,
                          rt_gguf_type_t arr_type, const gguf_kv_t **out_kv) {
    *out_kv = NULL;
    if (g == NULL || key == NULL)
        return rt_error(RT_ERR_MISUSE, "gguf: get: g, key or out is NULL");
    const gguf_kv_t *kv = kv_at(g, rt_gguf_find_key(g, key));
    if (kv == NULL) return rt_error(RT_ERR_NOT_FOUND, "gguf: no key '%s'", key);
    if (kv->type != type || kv->arr_type != arr_type)
        return rt_error(RT_ERR_INVALID_ARGUMENT, "gguf: key '%s' is %s%s%s, not %s%s%s", key,
                        rt_gguf_type_name(kv->type), kv->arr_type >= 0 ? " of " : "",
                        kv->arr_type >= 0 ? rt_gguf_type_name(kv->arr_type) : "",
                        rt_gguf_type_name(type), arr_type >= 0 ? " of " : "",
                        arr_type >= 0 ? rt_gguf_type_name(arr_type) : "");
    *out_kv = kv;
    return RT_OK;
}

static rt_status_t get_scalar(const rt_gguf_t *g, const char *key, rt_gguf_type_t type, void *out) {
    RT_ARMOR(out != NULL);
    const size_t size = rt_gguf_value_size(type);
    memset(out, 0, size);
    const gguf_kv_t *kv;
    const rt_status_t st = get_kv(g, key, type, -1, &kv);
    if (st == RT_OK) memcpy(out, kv->v.raw, size);
    return st;
}

rt_status_t rt_gguf_get_u8(const rt_gguf_t *g, const char *key, uint8_t *out) {
    return get_scalar(g, key, RT_GGUF_TYPE_UINT8, out);
}
rt_status_t rt_gguf_get_i8(const rt_gguf_t *g, const char *key, int8_t *out) {
    return get_scalar(g, key, RT_GGUF_TYPE_INT8, out);
}
rt_status_t rt_gguf_get_u16(const rt_gguf_t *g, const char *key, uint16_t *out) {
    return get_scalar(g, key, RT_GGUF_TYPE_UINT16, out);
}
rt_status_t rt_gguf_get_i16(const rt_gguf_t *g, const char *key, int16_t *out) {
    return get_scalar(g, key, RT_GGUF_TYPE_INT16, out);
}
rt_status_t rt_gguf_get_u32(const rt_gguf_t *g, const char *key, uint32_t *out) {
    return get_scalar(g, key, RT_GGUF_TYPE_UINT32, out);
}
rt_status_t rt_gguf_get_i32(const rt_gguf_t *g, const char *key, int32_t *out) {
    return get_scalar(g, key, RT_GGUF_TYPE_INT32, out);
}
rt_status_t rt_gguf_get_f32(const rt_gguf_t *g, const char *key, float *out) {
    return get_scalar(g, key, RT_GGUF_TYPE_FLOAT32, out);
}
rt_status_t rt_gguf_get_bool(const rt_gguf_t *g, const char *key, bool *out) {
    return get_scalar(g, key, RT_GGUF_TYPE_BOOL, out);
}
rt_status_t rt_gguf_get_u64(const rt_gguf_t *g, const char *key, uint64_t *out) {
    return get_scalar(g, key, RT_GGUF_TYPE_UINT64, out);
}
rt_status_t rt_gguf_get_i64(const rt_gguf_t *g, const char *key, int64_t *out) {
    return get_scalar(g, key, RT_GGUF_TYPE_INT64, out);
}
rt_status_t rt_gguf_get_f64(const rt_gguf_t *g, const char *key, double *out) {
    return get_scalar(g, key, RT_GGUF_TYPE_FLOAT64, out);
}

rt_status_t rt_gguf_get_str(const rt_gguf_t *g, const char *key, const char **out) {
    RT_ARMOR(out != NULL);
    *out = NULL;
    const gguf_kv_t *kv;
    const rt_status_t st = get_kv(g, key, RT_GGUF_TYPE_STRING, -1, &kv);
    if (st == RT_OK) *out = kv->v.str;
    return st;
}

rt_status_t rt_gguf_get_array(const rt_gguf_t *g, const char *key, rt_gguf_type_t elem_type,
                              const void **out_data, uint64_t *out_n) {
    RT_ARMOR(out_data != NULL && out_n != NULL);
    *out_data = NULL;
    *out_n = 0;
    const gguf_kv_t *kv;
    const rt_status_t st = get_kv(g, key, RT_GGUF_TYPE_ARRAY, elem_type, &kv);
    if (st == RT_OK) {
        *out_data = kv->v.arr;
        *out_n = kv->n;
    }
    return st;
}

rt_status_t rt_gguf_get_array_str(const rt_gguf_t *g, const char *key, uint64_t i,
                                  const char **out) {
    RT_ARMOR(out != NULL);
    *out = NULL;
    const gguf_kv_t *kv;
    const rt_status_t st = get_kv(g, key, RT_GGUF_TYPE_ARRAY, RT_GGUF_TYPE_STRING, &kv);
    if (st == RT_OK && i >= kv->n)
        return rt_error(RT_ERR_MISUSE, "gguf: key '%s': element %" PRIu64
                        " of %" PRIu64, key, i, kv->n);
    if (st == RT_OK) *out = ((const char *const *)kv->v.arr)[i];
    return st;
}

//===--- getters: tensors ---===//

int64_t rt_gguf_n_tensors(const rt_gguf_t *g) { return g != NULL ? g->n_tensors : 0; }

int64_t rt_gguf_find_tensor(const rt_gguf_t *g, const char *name) {
    return g != NULL ? index_find(&g->names, name) : -1;
}

const void *rt_gguf_tensor_data(const rt_gguf_t *g, int64_t i) {
    if (i < 0 || i >= g->n_tensors) return NULL;
    return g->data + g->data_offset + g->tensors[i].offset;
}

/* "f32, f16, ...": the names of the types rt implements, for messages. */
static void implemented_types(char *buf, size_t size) {
    size_t used = 0;
    buf[0] = 0;
    for (rt_type_t t = 0; t < RT_TYPE_COUNT; t++) {
        const rt_type_traits_t *tr = rt_type_traits(t);
        if (tr == NULL || t == RT_TYPE_Q8_K) continue; /* Q8_K: activations only */
        const int w = snprintf(buf + used, size - used, "%s%s", used ? ", " : "", tr->name);
        if (w < 0 || (size_t)w >= size - used) break;
        used += (size_t)w;
    }
}

rt_status_t rt_gguf_get_tensor_info(const rt_gguf_t *g, int64_t i, rt_gguf_tensor_info_t *out_info) {
    RT_ARMOR(g != NULL && out_info != NULL);
    if (i < 0 || i >= g->n_tensors)
        return rt_error(RT_ERR_MISUSE, "%s: tensor %" PRId64 " of %" PRId64, __func__, i,
                        g->n_tensors);
    const gguf_tensor_t *t = &g->tensors[i];
    rt_gguf_tensor_info_t info = {
        .struct_size = sizeof info, .type = t->type, .name = t->name, .n_dims = t->n_dims,
        .offset = t->offset, .size = t->size, .data = rt_gguf_tensor_data(g, i),
    };
    memcpy(info.ne, t->ne, sizeof info.ne);
    rt_struct_copy_out(out_info, &info, sizeof info, sizeof info); /* unchanged since 1.0 */
    if (rt_type_traits(t->type) != NULL) return RT_OK;
    char known[512];
    implemented_types(known, sizeof known);
    return rt_error(RT_ERR_UNSUPPORTED,
                    "tensor %" PRId64 " '%s' has type %s (GGUF id %" PRIu32 "), which rt does not "
                    "implement; rt implements %s", i, t->name, rt_type_name(t->type),
                    (uint32_t)t->type, known);
}
