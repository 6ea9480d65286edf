/* SPDX-License-Identifier: MIT */
/* quant_recipe.c: the recipes of rt-quantize (quant_recipe.h).
 *
 * Single-type recipes convert every 2-D tensor (the matrices; norms and
 * biases stay as they are, they are tiny and sensitive) whose rows hold
 * whole blocks of the type; f32/f16/bf16 convert every tensor.
 *
 * The K-quant mixes, Q4_K_M and Q5_K_M, are the well-known recipe GGUF
 * files on the hub are made with, so that our files are the ones people
 * compare against:
 *
 *   - the output projection (and the token embedding when it doubles as
 *     the output, tied embeddings): Q6_K. Its errors go straight into the
 *     logits, and it is read once per token, so its size costs little.
 *   - attn_v and ffn_down: Q6_K in the first and last eighth of the layers
 *     and in every third layer between, the base type elsewhere. These two
 *     write into the residual stream directly (no normalisation after
 *     them), and the layers at both ends are the least redundant, so that
 *     is where quantisation error measurably raises perplexity most.
 *   - every other matrix: the base type (Q4_K or Q5_K).
 *
 * A K-quant needs rows of whole super-blocks of 256. A matrix whose rows
 * do not divide (small models: SmolLM2's 576, Gemma 3 270M's 640) takes
 * the 32-block type of about as many bits instead: Q2_K/Q3_K -> IQ4_NL,
 * Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0 (more bits, never fewer, so the
 * mix's quality does not drop where the layout does not fit). */
#include "quant_recipe.h"

#include "../abi/rt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const rt_quant_recipe_t recipes[] = {
    {"q4_0", RT_TYPE_Q4_0, RT_TYPE_Q4_0, 2},     {"q4_1", RT_TYPE_Q4_1, RT_TYPE_Q4_1, 3},
    {"q5_0", RT_TYPE_Q5_0, RT_TYPE_Q5_0, 8},     {"q5_1", RT_TYPE_Q5_1, RT_TYPE_Q5_1, 9},
    {"q8_0", RT_TYPE_Q8_0, RT_TYPE_Q8_0, 7},     {"q2_K", RT_TYPE_Q2_K, RT_TYPE_Q2_K, 10},
    {"q3_K", RT_TYPE_Q3_K, RT_TYPE_Q3_K, 11},    {"q4_K", RT_TYPE_Q4_K, RT_TYPE_Q4_K, 14},
    {"q5_K", RT_TYPE_Q5_K, RT_TYPE_Q5_K, 16},    {"q6_K", RT_TYPE_Q6_K, RT_TYPE_Q6_K, 18},
    {"q4_K_M", RT_TYPE_Q4_K, RT_TYPE_Q6_K, 15},  {"q5_K_M", RT_TYPE_Q5_K, RT_TYPE_Q6_K, 17},
    {"f32", RT_TYPE_F32, RT_TYPE_F32, 0},        {"f16", RT_TYPE_F16, RT_TYPE_F16, 1},
    {"bf16", RT_TYPE_BF16, RT_TYPE_BF16, 32},
};
#define N_RECIPES (sizeof recipes / sizeof recipes[0])

const rt_quant_recipe_t *rt_quant_recipe_find(const char *name) {
    for (size_t i = 0; i < N_RECIPES; i++)
        if (strcasecmp(name, recipes[i].name) == 0) return &recipes[i];
    return NULL;
}

const char *rt_quant_recipe_names(void) {
    static char buf[256];
    size_t n = 0;
    for (size_t i = 0; i < N_RECIPES && n < sizeof buf; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s", i ? "|" : "", recipes[i].name);
    return buf;
}

static bool is_float(rt_type_t t) { return t == RT_TYPE_F32 || t == RT_TYPE_F16 || t == RT_TYPE_BF16; }

/* The 32-block stand-in of a K-quant for rows that are not whole
 * super-blocks (see the top of the file). */
static rt_type_t fallback(rt_type_t t) {
    switch (t) {
    case RT_TYPE_Q2_K: case RT_TYPE_Q3_K: case RT_TYPE_IQ4_XS: return RT_TYPE_IQ4_NL;
    case RT_TYPE_Q4_K: return RT_TYPE_Q5_0;
    case RT_TYPE_Q5_K: return RT_TYPE_Q5_1;
    case RT_TYPE_Q6_K: return RT_TYPE_Q8_0;
    default: return t;
    }
}

/* ".block_count" of the file's architecture: the layers, 0 when unknown. */
static int n_layers(const rt_gguf_t *g) {
    const char *arch = NULL;
    char key[128];
    uint32_t n = 0;
    if (rt_gguf_get_str(g, "general.architecture", &arch) != RT_OK) return 0;
    snprintf(key, sizeof key, "%s.block_count", arch);
    return rt_gguf_get_u32(g, key, &n) == RT_OK ? (int)n : 0;
}

/* The layers that get the larger type: the first and last eighth, and
 * every third one between. */
static bool more_bits_layer(int i, int n) {
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

static bool ends_with(const char *s, const char *suffix) {
    const size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* The mix's choice for a matrix: the larger type or the base. */
static rt_type_t mix_type(const rt_quant_recipe_t *r, const rt_gguf_t *g, const char *name) {
    const bool tied = rt_gguf_find_tensor(g, "output.weight") < 0;
    if (strcmp(name, "output.weight") == 0 || (tied && strcmp(name, "token_embd.weight") == 0))
        return r->more;
    int layer = -1;
    if (sscanf(name, "blk.%d.", &layer) == 1 &&
        (ends_with(name, ".attn_v.weight") || ends_with(name, ".ffn_down.weight")) &&
        more_bits_layer(layer, n_layers(g)))
        return r->more;
    return r->base;
}

rt_type_t rt_quant_recipe_type(const rt_quant_recipe_t *r, const rt_gguf_t *g,
                               const rt_gguf_tensor_info_t *ti) {
    if (rt_type_traits(ti->type) == NULL) return ti->type; /* unknown: copied as it is */
    if (r->base == RT_TYPE_F32) return RT_TYPE_F32; /* every tensor, for reference copies */
    if (ti->n_dims != 2) return ti->type;
    if (is_float(r->base)) return r->base;
    rt_type_t t = r->more != r->base ? mix_type(r, g, ti->name) : r->base;
    if (ti->ne[0] % rt_blck_size(t) != 0) t = fallback(t);
    return ti->ne[0] % rt_blck_size(t) == 0 ? t : ti->type;
}
