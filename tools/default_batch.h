/* SPDX-License-Identifier: MIT */
/* default_batch.h: the tools' default prompt ubatch (default_batch.c). */
#ifndef RT_TOOLS_DEFAULT_BATCH_H
#define RT_TOOLS_DEFAULT_BATCH_H

#include "../model/rt_model.h"

/* Tokens per graph run for a context of n_ctx (0: the model's, at most
 * 2048) of model m: 512, halved while the prompt graph's estimate exceeds
 * a quarter of the least free memory of the devices holding the model, at
 * least 32 (and at most n_ctx). */
int32_t rt_tool_default_n_batch(const rtm_model_t *m, int32_t n_ctx);

#endif
