/* SPDX-License-Identifier: MIT */
/* model_corpus.h: the malformed models of rt's own making. Each variant is
 * stories260K with one thing changed (a key set to an impossible value, a
 * weight made NaN, a token's text) and the message rt must give for it; a bug found in the
 * model library adds its variant here. test-model-faults loads every one
 * and checks the message; tools/../tests/fuzz/make-model-corpus writes
 * them (headers only) as the seeds of fuzz-model.
 *
 *     for (int i = 0; i < mc_n_variants; i++)
 *         mc_write(src, dst, &mc_variants[i]);   // then rtm_model_load(dst)
 */
#ifndef RT_TESTS_MODEL_CORPUS_H
#define RT_TESTS_MODEL_CORPUS_H

#include <stdbool.h>
#include <stdint.h>

#include "../abi/rt.h"

typedef enum mc_kind {
    MC_SAME,   /* nothing changed: the source as it is */
    MC_U32,    /* key set to u32 */
    MC_F32,    /* key set to f32 */
    MC_STR,    /* key set to str */
    MC_NAN,    /* element 0 of the f32 tensor named by key made NaN */
    MC_TOKEN,  /* the text of token u32 of the string array key set to str */
} mc_kind_t;

typedef enum mc_stage {
    MC_LOAD,   /* rtm_model_load must fail */
    MC_DECODE, /* the load succeeds; the first decode must fail */
    MC_RUNS,   /* a valid model that once broke a tool (expect: what it must print) */
} mc_stage_t;

typedef struct mc_variant {
    const char *name;   /* file name stem */
    mc_kind_t kind;
    const char *key;    /* key, or tensor name for MC_NAN */
    uint32_t u32;
    float f32;
    const char *str;
    mc_stage_t stage;
    const char *expect; /* a substring of the error message */
} mc_variant_t;

extern const mc_variant_t mc_variants[];
extern const int mc_n_variants;

/* Writes src with v's change to dst; headers_only stops before the tensor
 * data (a fuzz seed). RT_OK or the GGUF call's status. */
rt_status_t mc_write(const char *src, const char *dst, const mc_variant_t *v, bool headers_only);

#endif
