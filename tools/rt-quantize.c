/* SPDX-License-Identifier: MIT */
/* rt-quantize: a GGUF model with its matrices in another type, as
 * llama.cpp's quantize tool makes them:
 *
 *     rt-quantize IN.gguf OUT.gguf TYPE
 *
 * TYPE is one of quant_recipe.c's recipes: one type for every matrix
 * (q4_0 .. q6_K, f16, bf16; f32 converts every tensor) or a mix (q4_K_M,
 * q5_K_M). Every key and value is copied as it is (gguf_copy.c;
 * general.file_type set to the llama.cpp number of the recipe); every
 * tensor the recipe gives a new type is read in whatever type it has
 * (rt_dequantize) and converted (rt_quantize, the GGUF block layouts); the
 * others are copied. An output that is the input (the same file through
 * any links) is refused; the writer replaces the output atomically, so a
 * failure or an interrupt at any moment leaves the input and any previous
 * output as they were. */
#include "../abi/rt.h"
#include "../abi/rt_gguf.h"
#include "gguf_copy.h"
#include "out_file.h"
#include "quant_recipe.h"

#include "tool_cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//===--- keys ---===//

static rt_status_t copy_keys(const rt_gguf_t *g, rt_gguf_writer_t *w, const rt_quant_recipe_t *r) {
    rt_status_t st = RT_OK;
    for (int64_t i = 0; i < rt_gguf_n_kv(g) && st == RT_OK; i++) st = rt_gguf_copy_key(g, w, i);
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

/* Refused before reading anything: the input mapped while the output
 * replaces it is how the input used to be destroyed. */
static bool output_is_input(const char *in, const char *out) {
    if (!rt_out_file_same(in, out)) return false;
    fprintf(stderr, "rt-quantize: %s: refusing to write over the input %s (the same file)\n", out, in);
    return true;
}

static rt_status_t quantize(const char *in, const char *out, const rt_quant_recipe_t *r) {
    rt_gguf_t *g = NULL;
    rt_gguf_writer_t *w = NULL;
    rt_status_t st = rt_gguf_open(in, NULL, &g);
    if (st == RT_OK) st = rt_gguf_writer_create(NULL, &w);
    void **owned = st == RT_OK ? calloc((size_t)rt_gguf_n_tensors(g) + 1, sizeof *owned) : NULL;
    if (st == RT_OK && owned == NULL) st = RT_ERR_OUT_OF_MEMORY;
    if (st == RT_OK) st = copy_keys(g, w, r);
    if (st == RT_OK) st = add_tensors(g, w, r, owned);
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
    fprintf(f, "usage: rt-quantize [options] IN.gguf OUT.gguf TYPE\n"
               "Writes IN's tensors in TYPE's types, every key and other tensor as it is.\n"
               "TYPE: %s\n"
               "  -h, --help      this text\n"
               "      --version   release, ABI and commit\n", rt_quant_recipe_names());
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
    if (argc - optind == 3 && rt_quant_recipe_find(argv[optind + 2]) != NULL) return 0;
    usage(stderr);
    return 2;
}

int main(int argc, char **argv) {
    const int parsed = parse_args(argc, argv);
    if (parsed != 0) return parsed == 1 ? 0 : 2;
    const char *in = argv[optind], *out = argv[optind + 1];
    if (output_is_input(in, out)) return 1;
    if (quantize(in, out, rt_quant_recipe_find(argv[optind + 2])) != RT_OK) return 1;
    printf("rt-quantize: wrote %s\n", out);
    return 0;
}
