/* SPDX-License-Identifier: MIT */
/* quant_recipe.h: which type rt-quantize gives each tensor of a model. A
 * recipe is a named target ("q4_0", "q4_K_M", "f32", ...): one type for
 * every matrix, or a mix that gives the tensors that matter most a larger
 * type (quant_recipe.c writes the mixes down with their reasoning), with
 * GGUF's general.file_type number for the result. */
#ifndef RT_TOOLS_QUANT_RECIPE_H
#define RT_TOOLS_QUANT_RECIPE_H

#include "../abi/rt_gguf.h"

#include <stdbool.h>

typedef struct rt_quant_recipe {
    const char *name;  /* as the command line spells it */
    rt_type_t base;    /* the type of most matrices */
    rt_type_t more;    /* the larger type of a mix (base when none) */
    int file_type;     /* general.file_type (llama.cpp's LLAMA_FTYPE_* numbers) */
} rt_quant_recipe_t;

/* The recipe called name (case-insensitive), or NULL. */
const rt_quant_recipe_t *rt_quant_recipe_find(const char *name);
/* "q4_0|q4_1|...": every recipe's name, for usage lines. */
const char *rt_quant_recipe_names(void);
/* The type tensor ti of file g becomes under r: its own type when it stays
 * as it is (a norm, a vector, a matrix already in that type). */
rt_type_t rt_quant_recipe_type(const rt_quant_recipe_t *r, const rt_gguf_t *g,
                               const rt_gguf_tensor_info_t *ti);

#endif /* RT_TOOLS_QUANT_RECIPE_H */
