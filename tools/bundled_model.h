/* SPDX-License-Identifier: MIT */
/* bundled_model.h: where rt-run and rt-bench model find the model they run
 * when given none: the repository's models/stories260K.gguf, or the
 * installed copy `ninja install` puts in PREFIX/share/rt. */
#ifndef RT_TOOLS_BUNDLED_MODEL_H
#define RT_TOOLS_BUNDLED_MODEL_H

#include <stddef.h>

/* The first readable of: models/stories260K.gguf of the build tree the
 * executable sits in (build/bin/../../models), the installed
 * share/rt/stories260K.gguf beside the executable's bin/ (PREFIX/bin/../
 * share/rt), else models/stories260K.gguf relative to the current
 * directory; written into buf, which is returned. */
const char *rt_tools_bundled_model(char *buf, size_t size);

#endif /* RT_TOOLS_BUNDLED_MODEL_H */
