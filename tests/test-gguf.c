/* SPDX-License-Identifier: MIT */
/* test-gguf.c: the GGUF reader and writer (abi/rt_gguf.h). Round trips of
 * every value type and every tensor type, one malformed file per rule the
 * reader enforces (each must fail with RT_ERR_FORMAT and name the field),
 * the real files in models/, allocation failure at every step, and
 * the fuzzer's corpus (tests run from the repository root). Malformed
 * files are built byte by byte here, since the writer refuses to produce
 * them. test_writer_many_names: 200k keys and 20k tensors written (the writer finds
 * names in a hash table: a linear search took two minutes for such a
 * file), a key set twice replaced, a tensor added twice refused, the file
 * read back whole. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

//===--- helpers ---===//

/* A GGUF file under construction, byte by byte. */
typedef struct tb {
    uint8_t buf[4096];
    size_t n;
} tb_t;

static void tb_bytes(tb_t *b, const void *p, size_t n) {
    assert_true(b->n + n <= sizeof b->buf);
    memcpy(b->buf + b->n, p, n);
    b->n += n;
}
static void tb_u8(tb_t *b, uint8_t v) { tb_bytes(b, &v, 1); }
static void tb_u32(tb_t *b, uint32_t v) { tb_bytes(b, &v, 4); }
static void tb_u64(tb_t *b, uint64_t v) { tb_bytes(b, &v, 8); }
static void tb_str(tb_t *b, const char *s) {
    tb_u64(b, strlen(s));
    tb_bytes(b, s, strlen(s));
}
static void tb_header(tb_t *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    b->n = 0;
    tb_u32(b, RT_GGUF_MAGIC);
    tb_u32(b, version);
    tb_u64(b, n_tensors);
    tb_u64(b, n_kv);
}
static void tb_kv_u32(tb_t *b, const char *key, uint32_t v) {
    tb_str(b, key);
    tb_u32(b, RT_GGUF_TYPE_UINT32);
    tb_u32(b, v);
}
static void tb_tensor(tb_t *b, const char *name, uint32_t n_dims, const uint64_t *ne,
                      uint32_t type, uint64_t offset) {
    tb_str(b, name);
    tb_u32(b, n_dims);
    for (uint32_t i = 0; i < n_dims; i++) tb_u64(b, ne[i]);
    tb_u32(b, type);
    tb_u64(b, offset);
}
/* Zeros up to a multiple of align, then n more zero bytes of data. */
static void tb_data(tb_t *b, size_t align, size_t n) {
    while (b->n % align) tb_u8(b, 0);
    for (size_t i = 0; i < n; i++) tb_u8(b, 0);
}

/* Parses size bytes and expects RT_ERR_FORMAT with a message that names the
 * file, a byte offset and `needle`. */
static void expect_format_n(const void *data, size_t size, const char *needle, const char *check) {
    rt_gguf_t *g = (rt_gguf_t *)1;
    const rt_status_t st = rt_gguf_parse(data, size, "t.gguf", NULL, &g);
    if (st != RT_ERR_FORMAT)
        fail_msg("%s: got %s, want RT_ERR_FORMAT (\"%s\")", check, rt_status_name(st), needle);
    assert_null(g);
    const char *msg = rt_last_error();
    if (strstr(msg, needle) == NULL || strstr(msg, "t.gguf: byte ") != msg)
        fail_msg("%s: message \"%s\" lacks \"t.gguf: byte \" or \"%s\"", check, msg, needle);
}
#define expect_format(b, needle, check) expect_format_n((b)->buf, (b)->n, needle, check)

static rt_gguf_t *parse_ok(const void *data, size_t size) {
    rt_gguf_t *g = NULL;
    const rt_status_t st = rt_gguf_parse(data, size, "ok.gguf", NULL, &g);
    if (st != RT_OK) fail_msg("parse: %s: %s", rt_status_name(st), rt_last_error());
    return g;
}

/* The writer's file in a malloc'd buffer. */
static uint8_t *write_mem(const rt_gguf_writer_t *w, size_t *out_size) {
    *out_size = (size_t)rt_gguf_writer_size(w);
    uint8_t *p = malloc(*out_size);
    assert_non_null(p);
    assert_int_equal(rt_gguf_writer_write_mem(w, p, *out_size), RT_OK);
    return p;
}

/* An allocator that counts live blocks and bytes (frees must pass the size
 * they were allocated with) and fails its fail_at-th allocation. */
typedef struct counting {
    long calls, fail_at, live_blocks;
    long long live_bytes;
    uint8_t *poke;           /* when set, the second allocation writes poke_value here */
    uint8_t poke_value;
} counting_t;

static void *counting_realloc(void *ud, void *p, size_t old_size, size_t new_size) {
    counting_t *c = ud;
    if (new_size == 0) {
        if (p != NULL) c->live_blocks--, c->live_bytes -= (long long)old_size;
        free(p);
        return NULL;
    }
    if (++c->calls == c->fail_at) return NULL;
    if (c->calls == 2 && c->poke != NULL) *c->poke = c->poke_value;
    void *q = realloc(p, new_size);
    if (q == NULL) return NULL;
    if (p == NULL) c->live_blocks++;
    c->live_bytes += (long long)new_size - (long long)(p != NULL ? old_size : 0);
    return q;
}

//===--- gguf-1: every value type ---===//

static const uint8_t u8s[] = {0, 1, 255};
static const int8_t i8s[] = {-128, 0, 127};
static const uint16_t u16s[] = {0, 65535};
static const int16_t i16s[] = {-32768, 32767};
static const uint32_t u32s[] = {0, 4294967295u, 7};
static const int32_t i32s[] = {INT32_MIN, -1, INT32_MAX};
static const float f32s[] = {-1.5f, 0.0f, 3.25e10f};
static const bool bools[] = {true, false, true};
static const uint64_t u64s[] = {UINT64_MAX, 0};
static const int64_t i64s[] = {INT64_MIN, INT64_MAX};
static const double f64s[] = {3.141592653589793, -0.0};
static const char *const strs[] = {"", "x", "h\xc3\xa9llo w\xc3\xb6rld", "<0x0A>"};

#define N(a) (sizeof(a) / sizeof (a)[0])

static const struct array_case {
    const char *key;
    rt_gguf_type_t type;
    const void *data;
    uint64_t n;
    size_t size; /* bytes of one element, 0 for strings */
} arrays[] = {
    {"a.u8", RT_GGUF_TYPE_UINT8, u8s, N(u8s), 1},     {"a.i8", RT_GGUF_TYPE_INT8, i8s, N(i8s), 1},
    {"a.u16", RT_GGUF_TYPE_UINT16, u16s, N(u16s), 2}, {"a.i16", RT_GGUF_TYPE_INT16, i16s, N(i16s), 2},
    {"a.u32", RT_GGUF_TYPE_UINT32, u32s, N(u32s), 4}, {"a.i32", RT_GGUF_TYPE_INT32, i32s, N(i32s), 4},
    {"a.f32", RT_GGUF_TYPE_FLOAT32, f32s, N(f32s), 4},
    {"a.bool", RT_GGUF_TYPE_BOOL, bools, N(bools), 1},
    {"a.str", RT_GGUF_TYPE_STRING, strs, N(strs), 0}, {"a.u64", RT_GGUF_TYPE_UINT64, u64s, N(u64s), 8},
    {"a.i64", RT_GGUF_TYPE_INT64, i64s, N(i64s), 8},  {"a.f64", RT_GGUF_TYPE_FLOAT64, f64s, N(f64s), 8},
    {"a.empty", RT_GGUF_TYPE_INT32, NULL, 0, 4},      {"a.nostr", RT_GGUF_TYPE_STRING, NULL, 0, 0},
};

static void set_all_values(rt_gguf_writer_t *w) {
    assert_int_equal(rt_gguf_writer_set_u8(w, "s.u8", 200), RT_OK);
    assert_int_equal(rt_gguf_writer_set_i8(w, "s.i8", -100), RT_OK);
    assert_int_equal(rt_gguf_writer_set_u16(w, "s.u16", 65000), RT_OK);
    assert_int_equal(rt_gguf_writer_set_i16(w, "s.i16", -32000), RT_OK);
    assert_int_equal(rt_gguf_writer_set_u32(w, "s.u32", 4000000000u), RT_OK);
    assert_int_equal(rt_gguf_writer_set_i32(w, "s.i32", -2000000000), RT_OK);
    assert_int_equal(rt_gguf_writer_set_f32(w, "s.f32", 1e-5f), RT_OK);
    assert_int_equal(rt_gguf_writer_set_bool(w, "s.bool", true), RT_OK);
    assert_int_equal(rt_gguf_writer_set_str(w, "s.str", "llama"), RT_OK);
    assert_int_equal(rt_gguf_writer_set_u64(w, "s.u64", UINT64_MAX - 1), RT_OK);
    assert_int_equal(rt_gguf_writer_set_i64(w, "s.i64", INT64_MIN + 1), RT_OK);
    assert_int_equal(rt_gguf_writer_set_f64(w, "s.f64", 2.718281828459045), RT_OK);
    for (size_t i = 0; i < N(arrays); i++)
        assert_int_equal(rt_gguf_writer_set_array(w, arrays[i].key, arrays[i].type, arrays[i].data,
                                                  arrays[i].n), RT_OK);
}

static void check_scalars(const rt_gguf_t *g) {
    uint8_t u8; int8_t i8; uint16_t u16; int16_t i16; uint32_t u32; int32_t i32;
    float f32; bool b; const char *s; uint64_t u64; int64_t i64; double f64;
    assert_int_equal(rt_gguf_get_u8(g, "s.u8", &u8), RT_OK);
    assert_int_equal(u8, 200);
    assert_int_equal(rt_gguf_get_i8(g, "s.i8", &i8), RT_OK);
    assert_int_equal(i8, -100);
    assert_int_equal(rt_gguf_get_u16(g, "s.u16", &u16), RT_OK);
    assert_int_equal(u16, 65000);
    assert_int_equal(rt_gguf_get_i16(g, "s.i16", &i16), RT_OK);
    assert_int_equal(i16, -32000);
    assert_int_equal(rt_gguf_get_u32(g, "s.u32", &u32), RT_OK);
    assert_int_equal(u32, 4000000000u);
    assert_int_equal(rt_gguf_get_i32(g, "s.i32", &i32), RT_OK);
    assert_int_equal(i32, -2000000000);
    assert_int_equal(rt_gguf_get_f32(g, "s.f32", &f32), RT_OK);
    assert_true(f32 == 1e-5f);
    assert_int_equal(rt_gguf_get_bool(g, "s.bool", &b), RT_OK);
    assert_true(b);
    assert_int_equal(rt_gguf_get_str(g, "s.str", &s), RT_OK);
    assert_string_equal(s, "llama");
    assert_int_equal(rt_gguf_get_u64(g, "s.u64", &u64), RT_OK);
    assert_true(u64 == UINT64_MAX - 1);
    assert_int_equal(rt_gguf_get_i64(g, "s.i64", &i64), RT_OK);
    assert_true(i64 == INT64_MIN + 1);
    assert_int_equal(rt_gguf_get_f64(g, "s.f64", &f64), RT_OK);
    assert_true(f64 == 2.718281828459045);
}

static void check_array(const rt_gguf_t *g, const struct array_case *a) {
    const int64_t kv = rt_gguf_find_key(g, a->key);
    assert_true(kv >= 0);
    assert_int_equal(rt_gguf_kv_type(g, kv), RT_GGUF_TYPE_ARRAY);
    assert_int_equal(rt_gguf_kv_array_type(g, kv), a->type);
    assert_int_equal(rt_gguf_kv_array_len(g, kv), a->n);
    const void *data;
    uint64_t n;
    assert_int_equal(rt_gguf_get_array(g, a->key, a->type, &data, &n), RT_OK);
    assert_int_equal(n, a->n);
    assert_non_null(data);
    if (a->size > 0) {
        assert_int_equal((uintptr_t)data % a->size, 0);
        if (n > 0) assert_memory_equal(data, a->data, n * a->size);
        return;
    }
    for (uint64_t i = 0; i < n; i++) {
        const char *s;
        assert_string_equal(((const char *const *)data)[i], ((const char *const *)a->data)[i]);
        assert_int_equal(rt_gguf_get_array_str(g, a->key, i, &s), RT_OK);
        assert_string_equal(s, ((const char *const *)a->data)[i]);
    }
}

/* gguf-1.1..1.4 */
static void test_values_round_trip(void **state) {
    (void)state;
    rt_gguf_writer_t *w;
    assert_int_equal(rt_gguf_writer_create(NULL, &w), RT_OK);
    set_all_values(w);
    size_t size;
    uint8_t *file = write_mem(w, &size);
    rt_gguf_t *g = parse_ok(file, size);
    /* gguf-1.1: keys in order, one per set */
    assert_int_equal(rt_gguf_n_kv(g), 12 + N(arrays));
    assert_string_equal(rt_gguf_kv_key(g, 0), "s.u8");
    assert_string_equal(rt_gguf_kv_key(g, 8), "s.str");
    assert_int_equal(rt_gguf_kv_type(g, 8), RT_GGUF_TYPE_STRING);
    assert_int_equal(rt_gguf_kv_array_type(g, 8), -1);
    assert_null(rt_gguf_kv_key(g, rt_gguf_n_kv(g)));
    assert_int_equal(rt_gguf_version(g), 3);
    assert_int_equal(rt_gguf_n_tensors(g), 0);
    /* gguf-1.2: every scalar and every array */
    check_scalars(g);
    for (size_t i = 0; i < N(arrays); i++) check_array(g, &arrays[i]);
    /* gguf-1.3: absent keys and type mismatches */
    uint32_t u32 = 1;
    const char *s = "x";
    assert_int_equal(rt_gguf_get_u32(g, "nope", &u32), RT_ERR_NOT_FOUND);
    assert_int_equal(u32, 0);
    assert_int_equal(rt_gguf_get_u32(g, "s.i32", &u32), RT_ERR_INVALID_ARGUMENT);
    assert_int_equal(rt_gguf_get_str(g, "a.str", &s), RT_ERR_INVALID_ARGUMENT);
    assert_null(s);
    const void *data;
    uint64_t n;
    assert_int_equal(rt_gguf_get_array(g, "a.u32", RT_GGUF_TYPE_INT32, &data, &n),
                     RT_ERR_INVALID_ARGUMENT);
    assert_int_equal(rt_gguf_get_array_str(g, "a.str", N(strs), &s), RT_ERR_MISUSE);
    assert_int_equal(rt_gguf_get_array_str(g, "a.u8", 0, &s), RT_ERR_INVALID_ARGUMENT);
    assert_int_equal(rt_gguf_find_key(g, "s.u"), -1);
    assert_string_equal(rt_gguf_type_name(RT_GGUF_TYPE_ARRAY), "arr");
    assert_string_equal(rt_gguf_type_name(RT_GGUF_TYPE_COUNT), "?");
    rt_gguf_destroy(g);
    free(file);
    /* gguf-1.4: setting a key again replaces its value in place */
    assert_int_equal(rt_gguf_writer_set_str(w, "s.u8", "now a string"), RT_OK);
    file = write_mem(w, &size);
    g = parse_ok(file, size);
    assert_int_equal(rt_gguf_n_kv(g), 12 + N(arrays));
    assert_int_equal(rt_gguf_get_str(g, "s.u8", &s), RT_OK);
    assert_string_equal(s, "now a string");
    assert_int_equal(rt_gguf_find_key(g, "s.u8"), 0);
    rt_gguf_destroy(g);
    free(file);
    rt_gguf_writer_destroy(w);
}

/* gguf-1.5: many keys, each found by name */
static void test_many_keys(void **state) {
    (void)state;
    enum { n_keys = 3000 };
    rt_gguf_writer_t *w;
    assert_int_equal(rt_gguf_writer_create(NULL, &w), RT_OK);
    char key[32];
    for (int i = n_keys - 1; i >= 0; i--) {
        snprintf(key, sizeof key, "k.%d", i * 7919 % n_keys);
        assert_int_equal(rt_gguf_writer_set_i32(w, key, i), RT_OK);
    }
    size_t size;
    uint8_t *file = write_mem(w, &size);
    rt_gguf_t *g = parse_ok(file, size);
    assert_int_equal(rt_gguf_n_kv(g), n_keys);
    for (int64_t i = 0; i < n_keys; i++) {
        int32_t v;
        assert_int_equal(rt_gguf_find_key(g, rt_gguf_kv_key(g, i)), i);
        assert_int_equal(rt_gguf_get_i32(g, rt_gguf_kv_key(g, i), &v), RT_OK);
        assert_int_equal(v, n_keys - 1 - i);
    }
    assert_int_equal(rt_gguf_find_key(g, "k."), -1);
    assert_int_equal(rt_gguf_find_key(g, "k.9999"), -1);
    assert_int_equal(rt_gguf_find_key(g, ""), -1);
    rt_gguf_destroy(g);
    free(file);
    rt_gguf_writer_destroy(w);
}

//===--- gguf-2: every tensor type ---===//

static const struct tensor_case {
    const char *name;
    rt_type_t type;
    int32_t n_dims;
    int64_t ne[4];
} tensors[] = {
    {"t.f32", RT_TYPE_F32, 2, {7, 3, 1, 1}},   {"t.f16", RT_TYPE_F16, 3, {5, 2, 3, 1}},
    {"t.bf16", RT_TYPE_BF16, 1, {9, 1, 1, 1}}, {"t.i32", RT_TYPE_I32, 4, {2, 3, 2, 2}},
    {"t.q8_0", RT_TYPE_Q8_0, 2, {64, 3, 1, 1}}, {"t.q4_0", RT_TYPE_Q4_0, 2, {32, 5, 1, 1}},
    {"t.empty", RT_TYPE_F32, 2, {4, 0, 1, 1}},
};

static size_t tensor_bytes(const struct tensor_case *c) {
    size_t n = (size_t)(c->ne[0] / rt_blck_size(c->type)) * rt_type_size(c->type);
    for (int i = 1; i < 4; i++) n *= (size_t)c->ne[i];
    return n;
}

static void check_tensor(const rt_gguf_t *g, int64_t i, const struct tensor_case *c,
                         const uint8_t *data) {
    rt_gguf_tensor_info_t ti = {.struct_size = sizeof ti};
    assert_int_equal(rt_gguf_find_tensor(g, c->name), i);
    assert_int_equal(rt_gguf_get_tensor_info(g, i, &ti), RT_OK);
    assert_string_equal(ti.name, c->name);
    assert_int_equal(ti.type, c->type);
    assert_int_equal(ti.n_dims, c->n_dims);
    assert_memory_equal(ti.ne, c->ne, sizeof ti.ne);
    assert_int_equal(ti.size, tensor_bytes(c));
    assert_int_equal(ti.offset % rt_gguf_alignment(g), 0);
    const uint8_t *base = rt_gguf_file_data(g);
    assert_ptr_equal(ti.data, base + rt_gguf_data_offset(g) + ti.offset);
    assert_ptr_equal(rt_gguf_tensor_data(g, i), ti.data);
    if (ti.size > 0) assert_memory_equal(ti.data, data, ti.size);
}

static uint8_t *random_bytes(size_t n) {
    uint8_t *p = malloc(n > 0 ? n : 1);
    assert_non_null(p);
    for (size_t i = 0; i < n; i++) p[i] = (uint8_t)tu_next();
    return p;
}

/* Writes every tensor case (with general.alignment when align != 0) and
 * checks the file both in memory and through rt_gguf_open. */
static void round_trip_tensors(uint32_t align) {
    uint8_t *data[N(tensors)];
    rt_gguf_writer_t *w;
    assert_int_equal(rt_gguf_writer_create(NULL, &w), RT_OK);
    if (align != 0) assert_int_equal(rt_gguf_writer_set_u32(w, RT_GGUF_KEY_ALIGNMENT, align), RT_OK);
    for (size_t i = 0; i < N(tensors); i++) {
        const struct tensor_case *c = &tensors[i];
        data[i] = random_bytes(tensor_bytes(c));
        assert_int_equal(rt_gguf_writer_add_tensor(w, c->name, c->type, c->n_dims, c->ne, data[i]),
                         RT_OK);
    }
    size_t size;
    uint8_t *file = write_mem(w, &size);
    char path[256];
    snprintf(path, sizeof path, "%s/test-gguf-%d.gguf", tu_build_dir(), (int)getpid());
    assert_int_equal(rt_gguf_writer_write_file(w, path), RT_OK);
    rt_gguf_t *g = parse_ok(file, size), *gf = NULL;
    assert_int_equal(rt_gguf_open(path, NULL, &gf), RT_OK);
    assert_int_equal(rt_gguf_file_size(gf), size);
    assert_memory_equal(rt_gguf_file_data(gf), file, size);
    assert_int_equal(rt_gguf_alignment(g), align != 0 ? align : 32);
    assert_int_equal(rt_gguf_data_offset(g) % rt_gguf_alignment(g), 0);
    assert_int_equal(rt_gguf_n_tensors(g), N(tensors));
    for (size_t i = 0; i < N(tensors); i++) {
        check_tensor(g, (int64_t)i, &tensors[i], data[i]);
        check_tensor(gf, (int64_t)i, &tensors[i], data[i]);
        free(data[i]);
    }
    assert_int_equal(rt_gguf_find_tensor(g, "t.none"), -1);
    rt_gguf_destroy(gf);
    rt_gguf_destroy(g);
    remove(path);
    free(file);
    rt_gguf_writer_destroy(w);
}

/* gguf-2.1: default alignment; gguf-2.2: general.alignment 256 */
static void test_tensors_round_trip(void **state) {
    (void)state;
    tu_seed(2);
    round_trip_tensors(0);
    round_trip_tensors(256);
}

/* gguf-2.3: a smaller struct_size gets only the fields inside it */
static void test_tensor_info_struct_size(void **state) {
    (void)state;
    rt_gguf_writer_t *w;
    assert_int_equal(rt_gguf_writer_create(NULL, &w), RT_OK);
    assert_int_equal(rt_gguf_writer_add_tensor(w, "x", RT_TYPE_F32, 1, (int64_t[]){8}, NULL), RT_OK);
    size_t size;
    uint8_t *file = write_mem(w, &size);
    rt_gguf_t *g = parse_ok(file, size);
    rt_gguf_tensor_info_t ti;
    memset(&ti, 0xab, sizeof ti);
    ti.struct_size = offsetof(rt_gguf_tensor_info_t, name);
    assert_int_equal(rt_gguf_get_tensor_info(g, 0, &ti), RT_OK);
    assert_int_equal(ti.type, RT_TYPE_F32);
    assert_int_equal(ti.n_dims, (int32_t)0xabababab);
    memset(&ti, 0xab, sizeof ti);
    ti.struct_size = 0; /* the 1.0 layout (rt_base.h, rule 9), which is the whole struct */
    assert_int_equal(rt_gguf_get_tensor_info(g, 0, &ti), RT_OK);
    assert_int_equal(ti.struct_size, sizeof ti);
    assert_int_equal(ti.n_dims, 1);
    assert_int_equal(ti.ne[0], 8);
    ti.struct_size = sizeof ti;
    assert_int_equal(rt_gguf_get_tensor_info(g, 1, &ti), RT_ERR_MISUSE);
    assert_int_equal(rt_gguf_get_tensor_info(g, -1, &ti), RT_ERR_MISUSE);
    assert_null(rt_gguf_tensor_data(g, 1));
    const uint8_t zeros[32] = {0};
    assert_memory_equal(rt_gguf_tensor_data(g, 0), zeros, 32); /* NULL data writes zeros */
    rt_gguf_destroy(g);
    free(file);
    rt_gguf_writer_destroy(w);
}

//===--- gguf-3: versions and truncation ---===//

/* A small file whose last byte is the last byte of tensor data. */
static uint8_t *small_file(size_t *out_size) {
    rt_gguf_writer_t *w;
    assert_int_equal(rt_gguf_writer_create(NULL, &w), RT_OK);
    assert_int_equal(rt_gguf_writer_set_str(w, "general.architecture", "llama"), RT_OK);
    assert_int_equal(rt_gguf_writer_set_bool(w, "b", true), RT_OK);
    assert_int_equal(rt_gguf_writer_set_array(w, "toks", RT_GGUF_TYPE_STRING, strs, 3), RT_OK);
    assert_int_equal(rt_gguf_writer_set_array(w, "ids", RT_GGUF_TYPE_INT32, i32s, 3), RT_OK);
    assert_int_equal(rt_gguf_writer_add_tensor(w, "a", RT_TYPE_F16, 1, (int64_t[]){4}, NULL), RT_OK);
    assert_int_equal(rt_gguf_writer_add_tensor(w, "b", RT_TYPE_F32, 2, (int64_t[]){4, 2}, NULL), RT_OK);
    uint8_t *file = write_mem(w, out_size);
    rt_gguf_writer_destroy(w);
    return file;
}

/* gguf-3.1: version 2 reads like 3; gguf-3.2: 1, 4 and big-endian do not */
static void test_versions(void **state) {
    (void)state;
    size_t size;
    uint8_t *file = small_file(&size);
    file[4] = 2;
    rt_gguf_t *g = parse_ok(file, size);
    assert_int_equal(rt_gguf_version(g), 2);
    assert_int_equal(rt_gguf_n_tensors(g), 2);
    rt_gguf_destroy(g);
    file[4] = 1;
    expect_format_n(file, size, "header version: 1 is not 2 or 3 (GGUF v1", "gguf-3.2.1");
    file[4] = 4;
    expect_format_n(file, size, "header version: 4", "gguf-3.2.2");
    file[4] = 0;
    file[7] = 3;
    expect_format_n(file, size, "big-endian", "gguf-3.2.3");
    free(file);
}

/* gguf-3.3: every proper prefix of a valid file is refused */
static void test_truncated(void **state) {
    (void)state;
    size_t size;
    uint8_t *file = small_file(&size);
    rt_gguf_t *g = parse_ok(file, size);
    rt_gguf_destroy(g);
    for (size_t n = 0; n < size; n++) {
        uint8_t *copy = malloc(n > 0 ? n : 1); /* exact size, so ASan sees any overread */
        memcpy(copy, file, n);
        char check[48];
        snprintf(check, sizeof check, "gguf-3.3 at %zu", n);
        expect_format_n(n > 0 ? copy : NULL, n, ":", check);
        free(copy);
    }
    free(file);
}

//===--- gguf-4: malformed header and key/values ---===//

/* gguf-4.1..4.6 */
static void test_bad_header(void **state) {
    (void)state;
    tb_t b;
    tb_header(&b, 3, 0, 0);
    b.buf[0] = 'G', b.buf[1] = 'G', b.buf[2] = 'M', b.buf[3] = 'L';
    expect_format(&b, "header magic", "gguf-4.1");
    tb_header(&b, 3, UINT64_MAX, 0);
    expect_format(&b, "header n_tensors", "gguf-4.2");
    tb_header(&b, 3, 0, UINT64_MAX / 2);
    expect_format(&b, "header n_kv", "gguf-4.3");
    tb_header(&b, 3, 1, 1);
    tb_kv_u32(&b, "k", 1);
    expect_format(&b, "header n_tensors", "gguf-4.4"); /* 1 tensor info cannot fit in 17 bytes */
    tb_header(&b, 3, 0, 2);
    tb_kv_u32(&b, "k", 1);
    expect_format(&b, "header n_kv", "gguf-4.5");
    expect_format_n(NULL, 0, "header magic", "gguf-4.6");
}

/* One kv "k" whose value is `type` followed by the bytes the caller adds. */
static void kv_file(tb_t *b, uint32_t type) {
    tb_header(b, 3, 0, 1);
    tb_str(b, "k");
    tb_u32(b, type);
}

/* gguf-4.7..4.17 */
static void test_bad_kv(void **state) {
    (void)state;
    tb_t b;
    tb_header(&b, 3, 0, 1);
    tb_u64(&b, UINT64_MAX), tb_u64(&b, 0), tb_u64(&b, 0);
    expect_format(&b, "kv 0 key length", "gguf-4.7");
    kv_file(&b, RT_GGUF_TYPE_STRING);
    tb_u64(&b, 1ull << 40), tb_u64(&b, 0);
    expect_format(&b, "kv 0 'k' string length", "gguf-4.8");
    kv_file(&b, RT_GGUF_TYPE_ARRAY);
    tb_u32(&b, RT_GGUF_TYPE_UINT32), tb_u64(&b, 1ull << 61), tb_u64(&b, 0);
    expect_format(&b, "kv 0 'k' array length", "gguf-4.9");
    kv_file(&b, RT_GGUF_TYPE_ARRAY);
    tb_u32(&b, RT_GGUF_TYPE_STRING), tb_u64(&b, 2), tb_u64(&b, 0), tb_u64(&b, 1ull << 62);
    expect_format(&b, "kv 0 'k' element 1 string length", "gguf-4.10");
    kv_file(&b, RT_GGUF_TYPE_ARRAY);
    tb_u32(&b, RT_GGUF_TYPE_ARRAY), tb_u64(&b, 1), tb_u32(&b, RT_GGUF_TYPE_UINT8), tb_u64(&b, 0);
    expect_format(&b, "arrays of arrays", "gguf-4.11");
    kv_file(&b, 13);
    tb_u64(&b, 0);
    expect_format(&b, "kv 0 'k' value type: 13", "gguf-4.12");
    kv_file(&b, RT_GGUF_TYPE_ARRAY);
    tb_u32(&b, 0x80000000u), tb_u64(&b, 0);
    expect_format(&b, "array element type", "gguf-4.13");
    kv_file(&b, RT_GGUF_TYPE_BOOL);
    tb_u8(&b, 2);
    expect_format(&b, "kv 0 'k' value: bool is 2", "gguf-4.14");
    kv_file(&b, RT_GGUF_TYPE_ARRAY);
    tb_u32(&b, RT_GGUF_TYPE_BOOL), tb_u64(&b, 3), tb_u8(&b, 1), tb_u8(&b, 0), tb_u8(&b, 7);
    expect_format(&b, "element 2 value: bool is 7", "gguf-4.15");
    tb_header(&b, 3, 0, 1);
    tb_u64(&b, 3), tb_bytes(&b, "a\0b", 3), tb_u32(&b, RT_GGUF_TYPE_UINT8), tb_u8(&b, 0);
    expect_format(&b, "kv 0 key: contains a NUL", "gguf-4.16");
    tb_header(&b, 3, 0, 2);
    tb_kv_u32(&b, "dup", 1), tb_kv_u32(&b, "dup", 2);
    expect_format(&b, "kv 1 'dup' repeats kv 0", "gguf-4.17");
}

/* gguf-4.18..4.20: general.alignment */
static void test_bad_alignment(void **state) {
    (void)state;
    tb_t b;
    tb_header(&b, 3, 0, 1);
    tb_kv_u32(&b, RT_GGUF_KEY_ALIGNMENT, 48);
    expect_format(&b, "general.alignment: 48 is not a power of two", "gguf-4.18");
    tb_header(&b, 3, 0, 1);
    tb_kv_u32(&b, RT_GGUF_KEY_ALIGNMENT, 0);
    expect_format(&b, "general.alignment: 0 is not", "gguf-4.19");
    tb_header(&b, 3, 0, 1);
    tb_str(&b, RT_GGUF_KEY_ALIGNMENT), tb_u32(&b, RT_GGUF_TYPE_UINT64), tb_u64(&b, 32);
    expect_format(&b, "general.alignment: type u64, must be u32", "gguf-4.20");
}

//===--- gguf-5: malformed tensor infos ---===//

/* One tensor "w" of the given shape and type at offset, followed by `data`
 * bytes of tensor data after the alignment padding. */
static void tensor_file(tb_t *b, uint32_t n_dims, const uint64_t *ne, uint32_t type, uint64_t offset,
                        size_t data) {
    tb_header(b, 3, 1, 0);
    tb_tensor(b, "w", n_dims, ne, type, offset);
    tb_data(b, 32, data);
}

/* gguf-5.1..5.12 */
static void test_bad_tensor_info(void **state) {
    (void)state;
    tb_t b;
    const uint64_t ne4[] = {4, 1, 1, 1, 1};
    tensor_file(&b, 1, ne4, RT_TYPE_F32, 0, 16);
    rt_gguf_destroy(parse_ok(b.buf, b.n)); /* the base case is valid */
    tensor_file(&b, 0, ne4, RT_TYPE_F32, 0, 16);
    expect_format(&b, "tensor 0 'w' n_dims: 0 is not 1..4", "gguf-5.1");
    tensor_file(&b, 5, ne4, RT_TYPE_F32, 0, 16);
    expect_format(&b, "tensor 0 'w' n_dims: 5 is not 1..4", "gguf-5.2");
    /* gguf-5.3, 5.4: types rt does not implement open (see test_unknown_types) */
    tensor_file(&b, 2, (const uint64_t[]){1ull << 40, 1ull << 40}, RT_TYPE_F32, 0, 16);
    expect_format(&b, "tensor 0 'w' shape: {1099511627776, 1099511627776, 1, 1} f32: the tensor's "
                  "bytes overflow", "gguf-5.5");
    tensor_file(&b, 4, (const uint64_t[]){0, 1ull << 32, 1ull << 32, 1ull << 32}, RT_TYPE_F32, 0, 16);
    expect_format(&b, "bytes overflow", "gguf-5.6"); /* a 0 does not hide the others */
    tensor_file(&b, 1, (const uint64_t[]){1ull << 63}, RT_TYPE_F32, 0, 16);
    expect_format(&b, "tensor 0 'w' ne[0]: 9223372036854775808 is above INT64_MAX", "gguf-5.7");
    tensor_file(&b, 1, (const uint64_t[]){33}, RT_TYPE_Q8_0, 0, 64);
    expect_format(&b, "ne[0] is not a multiple of the type's block size", "gguf-5.8");
    tensor_file(&b, 1, ne4, RT_TYPE_F32, 0, 15);
    expect_format(&b, "tensor offset: tensor 0 'w': data offset 0 + 16 bytes ends past", "gguf-5.9");
    tensor_file(&b, 1, ne4, RT_TYPE_F32, 1ull << 63, 16);
    expect_format(&b, "ends past", "gguf-5.10");
    tensor_file(&b, 1, ne4, RT_TYPE_F32, 16, 64);
    expect_format(&b, "16 is not a multiple of the alignment 32", "gguf-5.11");
    tensor_file(&b, 1, ne4, RT_TYPE_F32, UINT64_MAX - 31, 64);
    expect_format(&b, "ends past", "gguf-5.12"); /* aligned, but the sum overflows */
}

/* A tensor of a type rt does not implement: the file opens, its info is
 * filled, and asking for it fails naming the type and rt's types. */
static void expect_unsupported(const tb_t *b, uint64_t want_size, const char *needle,
                               const char *check) {
    rt_gguf_t *g = parse_ok(b->buf, b->n);
    rt_gguf_tensor_info_t ti = {.struct_size = sizeof ti};
    const rt_status_t st = rt_gguf_get_tensor_info(g, 0, &ti);
    if (st != RT_ERR_UNSUPPORTED)
        fail_msg("%s: got %s, want RT_ERR_UNSUPPORTED", check, rt_status_name(st));
    if (strstr(rt_last_error(), needle) == NULL || strstr(rt_last_error(), "rt implements f32") == NULL)
        fail_msg("%s: message \"%s\" lacks \"%s\" or rt's types", check, rt_last_error(), needle);
    assert_string_equal(ti.name, "w");
    assert_int_equal(ti.size, want_size);
    rt_gguf_destroy(g);
}

static void test_unknown_types(void **state) {
    (void)state;
    tb_t b;
    const uint64_t ne4[] = {4, 1, 1, 1, 1}, ne256[] = {256};
    tensor_file(&b, 1, ne4, 24 /* i8: GGUF's, not rt's */, 0, 16);
    expect_unsupported(&b, 4, "tensor 0 'w' has type i8 (GGUF id 24), which rt does not implement",
                       "gguf-5.3");
    tensor_file(&b, 1, ne256, 16 /* iq2_xxs: 66 bytes a block */, 0, 66);
    expect_unsupported(&b, 66, "type iq2_xxs (GGUF id 16)", "gguf-5.4");
    tensor_file(&b, 1, ne256, 16, 0, 64); /* a layout GGUF defines is still checked */
    expect_format(&b, "66 bytes ends past", "gguf-5.4.1");
    tensor_file(&b, 1, ne4, 0xffffffffu, 0, 16); /* an id nobody defines: not measured */
    expect_unsupported(&b, 0, "(GGUF id 4294967295)", "gguf-5.4.2");
    tensor_file(&b, 1, ne256, RT_TYPE_Q4_K, 0, 144); /* gguf-5.4.3: a K-quant is rt's now */
    rt_gguf_t *g = parse_ok(b.buf, b.n);
    rt_gguf_tensor_info_t ti = {.struct_size = sizeof ti};
    assert_int_equal(rt_gguf_get_tensor_info(g, 0, &ti), RT_OK);
    assert_int_equal(ti.size, 144);
    rt_gguf_destroy(g);
}

/* gguf-5.13..5.17 */
static void test_bad_tensor_names(void **state) {
    (void)state;
    tb_t b;
    const uint64_t ne[] = {8};
    tb_header(&b, 3, 2, 0);
    tb_tensor(&b, "w", 1, ne, RT_TYPE_F32, 0), tb_tensor(&b, "w", 1, ne, RT_TYPE_F32, 32);
    tb_data(&b, 32, 64);
    expect_format(&b, "tensor 1 'w' repeats tensor 0", "gguf-5.13");
    tb_header(&b, 3, 2, 0);
    tb_tensor(&b, "a", 1, ne, RT_TYPE_F32, 0), tb_tensor(&b, "b", 1, (uint64_t[]){16}, RT_TYPE_F32, 0);
    tb_data(&b, 32, 64);
    expect_format(&b, "tensor 1 'b' [0, 64) overlaps tensor 0 'a' [0, 32)", "gguf-5.14");
    tb_header(&b, 3, 2, 0);
    tb_tensor(&b, "a", 1, (uint64_t[]){24}, RT_TYPE_F32, 0), tb_tensor(&b, "b", 1, ne, RT_TYPE_F32, 64);
    tb_data(&b, 32, 96);
    expect_format(&b, "tensor 1 'b' [64, 96) overlaps tensor 0 'a' [0, 96)", "gguf-5.15");
    char long_name[RT_MAX_NAME + 1];
    memset(long_name, 'n', RT_MAX_NAME);
    long_name[RT_MAX_NAME] = 0;
    tb_header(&b, 3, 1, 0);
    tb_tensor(&b, long_name, 1, ne, RT_TYPE_F32, 0);
    tb_data(&b, 32, 32);
    expect_format(&b, "tensor 0 name length: 64 bytes, the limit is 63", "gguf-5.16");
    tb_header(&b, 3, 1, 0);
    tb_u64(&b, 2), tb_bytes(&b, "w\0", 2), tb_u32(&b, 1), tb_u64(&b, 8), tb_u32(&b, 0), tb_u64(&b, 0);
    tb_data(&b, 32, 32);
    expect_format(&b, "tensor 0 name: contains a NUL", "gguf-5.17");
}

/* gguf-5.18: empty tensors overlap nothing; a file without tensors may end
 * before its data section */
static void test_edge_layouts(void **state) {
    (void)state;
    tb_t b;
    tb_header(&b, 3, 3, 0);
    tb_tensor(&b, "a", 1, (uint64_t[]){8}, RT_TYPE_F32, 0);
    tb_tensor(&b, "e", 2, (uint64_t[]){8, 0}, RT_TYPE_F32, 0);
    tb_tensor(&b, "f", 2, (uint64_t[]){0, 3}, RT_TYPE_F32, 32);
    tb_data(&b, 32, 32);
    rt_gguf_t *g = parse_ok(b.buf, b.n);
    assert_int_equal(rt_gguf_n_tensors(g), 3);
    rt_gguf_destroy(g);
    tb_header(&b, 3, 0, 1);
    tb_kv_u32(&b, "k", 5);
    g = parse_ok(b.buf, b.n);
    assert_int_equal(rt_gguf_data_offset(g), 64); /* 41 bytes of header, aligned */
    assert_int_equal(rt_gguf_file_size(g), 41);
    assert_int_equal(b.n, 41);
    rt_gguf_destroy(g);
}

//===--- gguf-6: the files in models/ ---===//

static rt_gguf_t *open_model(const char *file) {
    char path[1024];
    tu_model_path(file, path, sizeof path);
    rt_gguf_t *g = NULL;
    const rt_status_t st = rt_gguf_open(path, NULL, &g);
    if (st != RT_OK)
        fail_msg("%s: %s: %s (set RT_TEST_MODELS_DIR to the models directory)", path,
                 rt_status_name(st), rt_last_error());
    return g;
}

/* gguf-6.1: stories260K.gguf */
static void test_model_stories(void **state) {
    (void)state;
    rt_gguf_t *g = open_model("stories260K.gguf");
    const char *s;
    uint32_t u32;
    float eps;
    assert_int_equal(rt_gguf_version(g), 3);
    assert_int_equal(rt_gguf_n_kv(g), 19);
    assert_int_equal(rt_gguf_n_tensors(g), 48);
    assert_int_equal(rt_gguf_data_offset(g), 14176);
    assert_int_equal(rt_gguf_get_str(g, "general.architecture", &s), RT_OK);
    assert_string_equal(s, "llama");
    assert_int_equal(rt_gguf_get_u32(g, "llama.block_count", &u32), RT_OK);
    assert_int_equal(u32, 5);
    assert_int_equal(rt_gguf_get_f32(g, "llama.attention.layer_norm_rms_epsilon", &eps), RT_OK);
    assert_true(eps > 9.9e-6f && eps < 1.01e-5f);
    assert_int_equal(rt_gguf_get_array_str(g, "tokenizer.ggml.tokens", 3, &s), RT_OK);
    assert_string_equal(s, "<0x00>");
    rt_gguf_tensor_info_t ti = {.struct_size = sizeof ti};
    uint64_t end = 0;
    for (int64_t i = 0; i < 48; i++) {
        assert_int_equal(rt_gguf_get_tensor_info(g, i, &ti), RT_OK);
        assert_int_equal(ti.type, RT_TYPE_F32);
        if (ti.offset + ti.size > end) end = ti.offset + ti.size;
    }
    assert_int_equal(rt_gguf_data_offset(g) + end, rt_gguf_file_size(g));
    assert_int_equal(rt_gguf_get_tensor_info(g, rt_gguf_find_tensor(g, "blk.0.ffn_down.weight"), &ti),
                     RT_OK);
    assert_int_equal(ti.ne[0], 172);
    assert_int_equal(ti.ne[1], 64);
    assert_int_equal(ti.offset, 355840);
    rt_gguf_destroy(g);
}

/* gguf-6.3: released file ranges go back to the system (mincore: the page
 * read before is no longer resident) and the copied metadata stays
 * readable. */
static void test_release_range(void **state) {
    (void)state;
    rt_gguf_t *g = open_model("stories260K.gguf");
    const long page = sysconf(_SC_PAGESIZE);
    const uint64_t begin = rt_gguf_data_offset(g), size = rt_gguf_file_size(g) - begin;
    const uintptr_t mid = ((uintptr_t)rt_gguf_file_data(g) + begin + size / 2) / (uintptr_t)page *
                          (uintptr_t)page;
    volatile const unsigned char *p = (const unsigned char *)mid;
    unsigned char vec = 0, sink = p[0];
    (void)sink;
    assert_int_equal(mincore((void *)mid, (size_t)page, &vec), 0);
    assert_true(vec & 1);                                             /* gguf-6.3.1 resident */
    rt_gguf_release_range(g, begin, size);
    assert_int_equal(mincore((void *)mid, (size_t)page, &vec), 0);
    assert_false(vec & 1);                                            /* gguf-6.3.2 given back */
    const char *s;
    assert_int_equal(rt_gguf_get_str(g, "general.architecture", &s), RT_OK); /* gguf-6.3.3 */
    assert_string_equal(s, "llama");
    rt_gguf_destroy(g);
}

/* gguf-6.2: the vocab-only files */
static void test_model_vocabs(void **state) {
    (void)state;
    static const struct { const char *file, *model; uint64_t n_tokens; } vocabs[] = {
        {"ggml-vocab-gpt-2.gguf", "gpt2", 50257},
        {"ggml-vocab-llama-spm.gguf", "llama", 32000},
        {"ggml-vocab-bert-bge.gguf", "bert", 30522},
    };
    for (size_t v = 0; v < N(vocabs); v++) {
        rt_gguf_t *g = open_model(vocabs[v].file);
        const void *data;
        uint64_t n;
        const char *s;
        assert_int_equal(rt_gguf_n_tensors(g), 0);
        assert_int_equal(rt_gguf_get_str(g, "tokenizer.ggml.model", &s), RT_OK);
        assert_string_equal(s, vocabs[v].model);
        assert_int_equal(rt_gguf_get_array(g, "tokenizer.ggml.tokens", RT_GGUF_TYPE_STRING, &data, &n),
                         RT_OK);
        assert_int_equal(n, vocabs[v].n_tokens);
        assert_int_equal(rt_gguf_get_array(g, "tokenizer.ggml.token_type", RT_GGUF_TYPE_INT32, &data,
                                           &n), RT_OK);
        assert_int_equal(n, vocabs[v].n_tokens);
        rt_gguf_destroy(g);
    }
    rt_gguf_t *g = open_model("ggml-vocab-gpt-2.gguf");
    const char *merge;
    assert_int_equal(rt_gguf_get_array_str(g, "tokenizer.ggml.merges", 49999, &merge), RT_OK);
    assert_int_equal(rt_gguf_kv_array_len(g, rt_gguf_find_key(g, "tokenizer.ggml.merges")), 50000);
    rt_gguf_destroy(g);
    g = open_model("ggml-vocab-llama-spm.gguf");
    bool add_bos = false;
    assert_int_equal(rt_gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &add_bos), RT_OK);
    assert_true(add_bos);
    rt_gguf_destroy(g);
}

//===--- gguf-7: allocation failures and API errors ---===//

/* gguf-7.1: parsing fails cleanly at every allocation */
static void test_oom_parse(void **state) {
    (void)state;
    size_t size;
    uint8_t *file = small_file(&size);
    for (long k = 1;; k++) {
        counting_t c = {.fail_at = k};
        const rt_allocator_t a = {counting_realloc, &c};
        const rt_gguf_options_t opt = {.struct_size = sizeof opt, .allocator = &a};
        rt_gguf_t *g = NULL;
        const rt_status_t st = rt_gguf_parse(file, size, "oom", &opt, &g);
        rt_gguf_destroy(g);
        assert_int_equal(c.live_blocks, 0);
        assert_int_equal(c.live_bytes, 0);
        if (st == RT_OK) break;
        assert_int_equal(st, RT_ERR_OUT_OF_MEMORY);
    }
    free(file);
}

static rt_status_t build_with(const rt_allocator_t *a, size_t *out_size) {
    const rt_gguf_options_t opt = {.struct_size = sizeof opt, .allocator = a};
    rt_gguf_writer_t *w = NULL;
    rt_status_t st = rt_gguf_writer_create(&opt, &w);
    for (size_t i = 0; i < N(arrays) && st == RT_OK; i++)
        st = rt_gguf_writer_set_array(w, arrays[i].key, arrays[i].type, arrays[i].data, arrays[i].n);
    for (int i = 0; i < 40 && st == RT_OK; i++) { /* past the first growth of each table */
        char name[16];
        snprintf(name, sizeof name, "t%d", i);
        st = rt_gguf_writer_set_u32(w, name, (uint32_t)i);
        if (st == RT_OK) st = rt_gguf_writer_add_tensor(w, name, RT_TYPE_F32, 1, (int64_t[]){2}, NULL);
    }
    if (st == RT_OK) *out_size = (size_t)rt_gguf_writer_size(w);
    rt_gguf_writer_destroy(w);
    return st;
}

/* gguf-7.2: the writer fails cleanly at every allocation */
static void test_oom_write(void **state) {
    (void)state;
    for (long k = 1;; k++) {
        counting_t c = {.fail_at = k};
        const rt_allocator_t a = {counting_realloc, &c};
        size_t size = 0;
        const rt_status_t st = build_with(&a, &size);
        assert_int_equal(c.live_blocks, 0);
        assert_int_equal(c.live_bytes, 0);
        if (st == RT_OK) break;
        assert_int_equal(st, RT_ERR_OUT_OF_MEMORY);
    }
}

/* Parses b with b->buf[at] set to value after the first walk (at the
 * second allocation): a file that changes under its mapping. */
static rt_status_t parse_changing(tb_t *b, size_t at, uint8_t value) {
    counting_t c = {.poke = &b->buf[at], .poke_value = value};
    const rt_allocator_t a = {counting_realloc, &c};
    const rt_gguf_options_t opt = {.struct_size = sizeof opt, .allocator = &a};
    rt_gguf_t *g = NULL;
    const rt_status_t st = rt_gguf_parse(b->buf, b->n, "changing", &opt, &g);
    rt_gguf_destroy(g);
    assert_int_equal(c.live_blocks, 0);
    return st;
}

/* gguf-7.3: a file that changes between the two walks is refused */
static void test_changed_under_us(void **state) {
    (void)state;
    tb_t b;
    tb_header(&b, 3, 0, 1);
    tb_str(&b, "k"), tb_u32(&b, RT_GGUF_TYPE_STRING), tb_str(&b, "ab");
    tb_data(&b, 1, 16); /* trailing bytes are allowed without tensors */
    rt_gguf_destroy(parse_ok(b.buf, b.n));
    const size_t len_at = 24 + 9 + 4;
    assert_int_equal(b.buf[len_at], 2);
    assert_int_equal(parse_changing(&b, len_at, 10), RT_ERR_IO); /* the arena would overflow */
    assert_non_null(strstr(rt_last_error(), "changing: the file changed"));
    b.buf[len_at] = 2;
    assert_int_equal(parse_changing(&b, len_at, 1), RT_ERR_IO); /* the arena is not filled */
    b.buf[len_at] = 2;
    assert_int_equal(parse_changing(&b, 16, 0), RT_ERR_IO); /* n_kv 1 -> 0 */
}

/* gguf-7.4: open errors */
static void test_open_errors(void **state) {
    (void)state;
    rt_gguf_t *g = (rt_gguf_t *)1;
    assert_int_equal(rt_gguf_open("/nonexistent/x.gguf", NULL, &g), RT_ERR_NOT_FOUND);
    assert_null(g);
    assert_non_null(strstr(rt_last_error(), "/nonexistent/x.gguf"));
    assert_int_equal(rt_gguf_open(".", NULL, &g), RT_ERR_IO);
    assert_int_equal(rt_gguf_parse(NULL, 4, "x", NULL, &g), RT_ERR_INVALID_ARGUMENT);
    char path[256];
    snprintf(path, sizeof path, "%s/test-gguf-empty-%d.gguf", tu_build_dir(), (int)getpid());
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(rt_gguf_open(path, NULL, &g), RT_ERR_FORMAT);
    assert_non_null(strstr(rt_last_error(), "header magic"));
    remove(path);
}

/* gguf-7.5: what the writer refuses */
static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void test_writer_many_names(void **state) {
    (void)state;
    enum { N_KEYS = 200000, N_TENSORS = 20000 };
    rt_gguf_writer_t *w;
    assert_int_equal(rt_gguf_writer_create(NULL, &w), RT_OK);
    char key[64];
    const int64_t ne[] = {32};
    const double t0 = now_s();
    for (uint32_t i = 0; i < N_KEYS; i++) {
        snprintf(key, sizeof key, "meta.key.%u", i);
        assert_int_equal(rt_gguf_writer_set_u32(w, key, i), RT_OK);
    }
    assert_int_equal(rt_gguf_writer_set_u32(w, "meta.key.7", 70), RT_OK); /* replaced, not added */
    for (uint32_t i = 0; i < N_TENSORS; i++) {
        snprintf(key, sizeof key, "t.%u", i);
        assert_int_equal(rt_gguf_writer_add_tensor(w, key, RT_TYPE_F32, 1, ne, NULL), RT_OK);
    }
    assert_int_equal(rt_gguf_writer_add_tensor(w, "t.123", RT_TYPE_F32, 1, ne, NULL), RT_ERR_INVALID_ARGUMENT);
    const double dt = now_s() - t0;
    const uint64_t size = rt_gguf_writer_size(w);
    uint8_t *buf = malloc((size_t)size);
    assert_non_null(buf);
    assert_int_equal(rt_gguf_writer_write_mem(w, buf, (size_t)size), RT_OK);
    rt_gguf_writer_destroy(w);
    rt_gguf_t *g = NULL;
    assert_int_equal(rt_gguf_parse(buf, (size_t)size, "many", NULL, &g), RT_OK);
    uint32_t v = 0;
    assert_int_equal(rt_gguf_n_kv(g), N_KEYS);
    assert_int_equal(rt_gguf_get_u32(g, "meta.key.7", &v), RT_OK);
    assert_int_equal(v, 70);
    assert_int_equal(rt_gguf_get_u32(g, "meta.key.199999", &v), RT_OK);
    assert_int_equal(v, 199999);
    assert_int_equal(rt_gguf_n_tensors(g), N_TENSORS);
    rt_gguf_destroy(g);
    free(buf);
    /* a linear search does 2 * 10^10 compares here; the table does 10^6 */
    if (dt > 20) fail_msg("%d keys and %d tensors took %.1f s", N_KEYS, N_TENSORS, dt);
    print_message("%d keys and %d tensors set in %.2f s\n", N_KEYS, N_TENSORS, dt);
}

static void test_writer_errors(void **state) {
    (void)state;
    rt_gguf_writer_t *w;
    assert_int_equal(rt_gguf_writer_create(NULL, &w), RT_OK);
    const int64_t ne[] = {32, 2};
    const uint8_t bad_bools[] = {0, 2};
    const char *null_strs[] = {"a", NULL};
#define REFUSED(call) assert_int_equal((call), RT_ERR_INVALID_ARGUMENT)
    REFUSED(rt_gguf_writer_set_u32(w, RT_GGUF_KEY_ALIGNMENT, 24));
    REFUSED(rt_gguf_writer_set_u64(w, RT_GGUF_KEY_ALIGNMENT, 64));
    assert_int_equal(rt_gguf_writer_set_str(w, NULL, "x"), RT_ERR_MISUSE); /* a NULL key */
    REFUSED(rt_gguf_writer_set_str(w, "k", NULL));
    REFUSED(rt_gguf_writer_set_array(w, "k", RT_GGUF_TYPE_ARRAY, ne, 1));
    REFUSED(rt_gguf_writer_set_array(w, "k", 13, ne, 1));
    REFUSED(rt_gguf_writer_set_array(w, "k", RT_GGUF_TYPE_BOOL, bad_bools, 2));
    REFUSED(rt_gguf_writer_set_array(w, "k", RT_GGUF_TYPE_STRING, null_strs, 2));
    REFUSED(rt_gguf_writer_set_array(w, "k", RT_GGUF_TYPE_UINT8, NULL, 3));
    assert_int_equal(rt_gguf_writer_add_tensor(w, "t", RT_TYPE_Q8_0, 2, ne, NULL), RT_OK);
    REFUSED(rt_gguf_writer_add_tensor(w, "t", RT_TYPE_Q8_0, 2, ne, NULL));
    REFUSED(rt_gguf_writer_add_tensor(w, "u", RT_TYPE_Q8_0, 1, (int64_t[]){31}, NULL));
    REFUSED(rt_gguf_writer_add_tensor(w, "u", 24, 1, ne, NULL));
    REFUSED(rt_gguf_writer_add_tensor(w, "u", RT_TYPE_F32, 0, ne, NULL));
    REFUSED(rt_gguf_writer_add_tensor(w, "u", RT_TYPE_F32, 5, ne, NULL));
    REFUSED(rt_gguf_writer_add_tensor(w, "u", RT_TYPE_F32, 1, (int64_t[]){-1}, NULL));
    REFUSED(rt_gguf_writer_add_tensor(w, "u", RT_TYPE_F32, 2, (int64_t[]){INT64_MAX, 2}, NULL));
    char long_name[RT_MAX_NAME + 1];
    memset(long_name, 'n', RT_MAX_NAME);
    long_name[RT_MAX_NAME] = 0;
    REFUSED(rt_gguf_writer_add_tensor(w, long_name, RT_TYPE_F32, 1, ne, NULL));
#undef REFUSED
    long_name[RT_MAX_NAME - 1] = 0;
    assert_int_equal(rt_gguf_writer_add_tensor(w, long_name, RT_TYPE_F32, 1, ne, NULL), RT_OK);
    uint8_t small[16];
    assert_int_equal(rt_gguf_writer_write_mem(w, small, sizeof small), RT_ERR_DOES_NOT_FIT);
    assert_int_equal(rt_gguf_writer_write_file(w, "/nonexistent/dir/x.gguf"), RT_ERR_IO);
    size_t size;
    uint8_t *file = write_mem(w, &size); /* what it accepted still reads */
    rt_gguf_t *g = parse_ok(file, size);
    assert_int_equal(rt_gguf_n_kv(g), 0);
    assert_int_equal(rt_gguf_n_tensors(g), 2);
    rt_gguf_destroy(g);
    free(file);
    rt_gguf_writer_destroy(w);
    rt_gguf_writer_destroy(NULL);
    rt_gguf_destroy(NULL);
}

//===--- gguf-8: the fuzzer's corpus ---===//

/* The seeds in tests/fuzz/corpus/gguf and every input the fuzzer ever
 * crashed on (add those here with the status they must give). */
static const struct corpus_case {
    const char *file;
    rt_status_t status;
    const char *needle; /* in the message, for refused files */
} corpus[] = {
    {"empty.gguf", RT_OK, NULL},
    {"scalars.gguf", RT_OK, NULL},
    {"arrays.gguf", RT_OK, NULL},
    {"tensors.gguf", RT_OK, NULL},
    {"align64.gguf", RT_OK, NULL},
    {"v2.gguf", RT_OK, NULL},
    {"truncated.gguf", RT_ERR_FORMAT, "tensor 5 name length"},
    {"dupkey.gguf", RT_ERR_FORMAT, "repeats kv 0"},
    {"nested.gguf", RT_ERR_FORMAT, "arrays of arrays"},
    {"misaligned.gguf", RT_ERR_FORMAT, "not a multiple of the alignment"},
};

/* gguf-8.1: each gives its status, without a sanitizer report */
static void test_fuzz_corpus(void **state) {
    (void)state;
    for (size_t i = 0; i < N(corpus); i++) {
        char path[256];
        snprintf(path, sizeof path, "tests/fuzz/corpus/gguf/%s", corpus[i].file);
        rt_gguf_t *g = NULL;
        const rt_status_t st = rt_gguf_open(path, NULL, &g);
        if (st != corpus[i].status)
            fail_msg("gguf-8.1 %s: %s (%s), want %s", path, rt_status_name(st), rt_last_error(),
                     rt_status_name(corpus[i].status));
        if (corpus[i].needle != NULL && strstr(rt_last_error(), corpus[i].needle) == NULL)
            fail_msg("gguf-8.1 %s: \"%s\" lacks \"%s\"", path, rt_last_error(), corpus[i].needle);
        rt_gguf_destroy(g);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values_round_trip),   cmocka_unit_test(test_many_keys),
        cmocka_unit_test(test_tensors_round_trip),
        cmocka_unit_test(test_tensor_info_struct_size), cmocka_unit_test(test_versions),
        cmocka_unit_test(test_truncated),           cmocka_unit_test(test_bad_header),
        cmocka_unit_test(test_bad_kv),              cmocka_unit_test(test_bad_alignment),
        cmocka_unit_test(test_bad_tensor_info),     cmocka_unit_test(test_unknown_types),     cmocka_unit_test(test_bad_tensor_names),
        cmocka_unit_test(test_edge_layouts),        cmocka_unit_test(test_model_stories),
        cmocka_unit_test(test_model_vocabs),        cmocka_unit_test(test_oom_parse),
        cmocka_unit_test(test_release_range),
        cmocka_unit_test(test_oom_write),           cmocka_unit_test(test_changed_under_us),
        cmocka_unit_test(test_open_errors),
        cmocka_unit_test(test_writer_errors),       cmocka_unit_test(test_fuzz_corpus),
        cmocka_unit_test(test_writer_many_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
