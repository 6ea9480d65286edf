/* SPDX-License-Identifier: MIT */
/* rt-quantize: a GGUF model with its matrices in another type, as
 * llama.cpp's quantize tool makes them (one type for all):
 *
 *     rt-quantize IN.gguf OUT.gguf q8_0|q4_0|f16|bf16
 *
 * Every key and value is copied as it is (general.file_type set to the
 * llama.cpp number of the new type); every 2-D tensor in a float type whose
 * rows hold whole blocks of the new type is converted (rt_quantize, the
 * GGUF block layouts); the others (norms, odd-sized matrices) are copied.
 * An output that is the input (the same file through any links) is
 * refused; the writer replaces the output atomically, so a failure or an
 * interrupt at any moment leaves the input and any previous output as they
 * were. */
#include "../abi/rt.h"
#include "../abi/rt_gguf.h"
#include "gguf_copy.h"
#include "out_file.h"

#include "tool_cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* llama.cpp's LLAMA_FTYPE_MOSTLY_* for the types rt-quantize makes. */
static int file_type(rt_type_t t) {
    switch (t) {
    case RT_TYPE_F16: return 1;
    case RT_TYPE_Q4_0: return 2;
    case RT_TYPE_Q8_0: return 7;
    case RT_TYPE_BF16: return 32;
    default: return -1;
    }
}

static rt_type_t parse_type(const char *s) {
    const rt_type_t types[] = {RT_TYPE_Q8_0, RT_TYPE_Q4_0, RT_TYPE_F16, RT_TYPE_BF16};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (strcmp(s, rt_type_name(types[i])) == 0) return types[i];
    return RT_TYPE_COUNT;
}

//===--- keys ---===//

static rt_status_t copy_keys(const rt_gguf_t *g, rt_gguf_writer_t *w, rt_type_t type) {
    rt_status_t st = RT_OK;
    for (int64_t i = 0; i < rt_gguf_n_kv(g) && st == RT_OK; i++) st = rt_gguf_copy_key(g, w, i);
    if (st == RT_OK) st = rt_gguf_writer_set_u32(w, "general.file_type", (uint32_t)file_type(type));
    return st;
}

//===--- tensors ---===//

static bool converts(const rt_gguf_tensor_info_t *ti, rt_type_t type) {
    const bool is_float = ti->type == RT_TYPE_F32 || ti->type == RT_TYPE_F16 || ti->type == RT_TYPE_BF16;
    return is_float && ti->type != type && ti->n_dims == 2 && ti->ne[0] % rt_blck_size(type) == 0;
}

/* The tensor's bytes in type, in *owned (freed by the caller), or its file
 * bytes when it stays as it is. */
static const void *tensor_bytes(const rt_gguf_tensor_info_t *ti, rt_type_t type, void **owned) {
    *owned = NULL;
    if (!converts(ti, type)) return ti->data;
    const int64_t n = ti->ne[0] * ti->ne[1];
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

static rt_status_t add_tensors(const rt_gguf_t *g, rt_gguf_writer_t *w, rt_type_t type, void **owned) {
    for (int64_t i = 0; i < rt_gguf_n_tensors(g); i++) {
        rt_gguf_tensor_info_t ti = {.struct_size = sizeof ti};
        rt_status_t st = rt_gguf_get_tensor_info(g, i, &ti);
        if (st != RT_OK) return st;
        const void *data = tensor_bytes(&ti, type, &owned[i]);
        if (data == NULL) return RT_ERR_OUT_OF_MEMORY;
        st = rt_gguf_writer_add_tensor(w, ti.name, owned[i] ? type : ti.type, ti.n_dims, ti.ne, data);
        if (st != RT_OK) return st;
        printf("  %-32s %-5s -> %s\n", ti.name, rt_type_name(ti.type), rt_type_name(owned[i] ? type : ti.type));
    }
    return RT_OK;
}

//===--- main ---===//

/* Refused before reading anything: the input mapped while the output
 * replaces it is how the input used to be destroyed. */
static bool output_is_input(const char *in, const char *out) {
    if (!rt_out_file_same(in, out)) return false;
    fprintf(stderr, "rt-quantize: %s: refusing to write over the input %s (the same file)\n", out, in);
    return true;
}

static rt_status_t quantize(const char *in, const char *out, rt_type_t type) {
    rt_gguf_t *g = NULL;
    rt_gguf_writer_t *w = NULL;
    rt_status_t st = rt_gguf_open(in, NULL, &g);
    if (st == RT_OK) st = rt_gguf_writer_create(NULL, &w);
    void **owned = st == RT_OK ? calloc((size_t)rt_gguf_n_tensors(g) + 1, sizeof *owned) : NULL;
    if (st == RT_OK && owned == NULL) st = RT_ERR_OUT_OF_MEMORY;
    if (st == RT_OK) st = copy_keys(g, w, type);
    if (st == RT_OK) st = add_tensors(g, w, type, owned);
    /* The writer replaces out atomically (abi/rt_gguf.h). */
    if (st == RT_OK) st = rt_gguf_writer_write_file(w, out);
    if (st != RT_OK) fprintf(stderr, "rt-quantize: %s: %s\n", rt_status_name(st), rt_last_error());
    for (int64_t i = 0; owned != NULL && i < rt_gguf_n_tensors(g); i++) free(owned[i]);
    free(owned);
    rt_gguf_writer_destroy(w);
    rt_gguf_destroy(g);
    return st;
}

static void usage(FILE *f) {
    fprintf(f, "usage: rt-quantize [options] IN.gguf OUT.gguf q8_0|q4_0|f16|bf16\n"
               "Writes IN's matrices in the type given, every key and other tensor as it is.\n"
               "  -h, --help      this text\n"
               "      --version   release, ABI and commit\n");
}

/* 0 to go on, 1 after --help or --version, 2 on a bad command line. */
static int parse_args(int argc, char **argv) {
    static const struct option opts[] = {
        {"help", no_argument, NULL, 'h'}, {"version", no_argument, NULL, 'V'}, {NULL, 0, NULL, 0}};
    for (int c; (c = getopt_long(argc, argv, "h", opts, NULL)) != -1;) {
        if (c == 'h') return usage(stdout), 1;
        if (c == 'V') return rt_cli_print_version(stdout, "rt-quantize"), 1;
        return rt_cli_bad_usage("rt-quantize");
    }
    if (argc - optind == 3 && parse_type(argv[optind + 2]) != RT_TYPE_COUNT) return 0;
    usage(stderr);
    return 2;
}

int main(int argc, char **argv) {
    const int parsed = parse_args(argc, argv);
    if (parsed != 0) return parsed == 1 ? 0 : 2;
    const char *in = argv[optind], *out = argv[optind + 1];
    if (output_is_input(in, out)) return 1;
    if (quantize(in, out, parse_type(argv[optind + 2])) != RT_OK) return 1;
    printf("rt-quantize: wrote %s\n", out);
    return 0;
}
