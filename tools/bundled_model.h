/* SPDX-License-Identifier: MIT */
/* bundled_model.h: where rt-run and rt-bench model find the model they run
 * when given none. */
#ifndef RT_TOOLS_BUNDLED_MODEL_H
#define RT_TOOLS_BUNDLED_MODEL_H

#include <stddef.h>

/* The path of ../shared/models/stories260K.gguf next to the build tree the
 * executable sits in (build/bin/../../../shared), else the same relative
 * to the current directory; written into buf, which is returned. */
const char *rt_tools_bundled_model(char *buf, size_t size);

#endif /* RT_TOOLS_BUNDLED_MODEL_H */
