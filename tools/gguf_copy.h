/* SPDX-License-Identifier: MIT */
/* gguf_copy.h: one key of an open GGUF file copied into a writer as it is
 * (scalars by their type, arrays by their element type). rt-quantize
 * copies every key this way; the tests' model variants copy all but the
 * one they change. */
#ifndef RT_TOOLS_GGUF_COPY_H
#define RT_TOOLS_GGUF_COPY_H

#include "../abi/rt_gguf.h"

/* Copies key number kv of g into w. RT_ERR_FORMAT for a type the writer
 * does not know; the writer's status otherwise. */
rt_status_t rt_gguf_copy_key(const rt_gguf_t *g, rt_gguf_writer_t *w, int64_t kv);

#endif
