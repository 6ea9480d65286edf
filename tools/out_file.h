/* SPDX-License-Identifier: MIT */
/* out_file.h: the tools' atomic output files. The helper is the runtime's
 * own (runtime/out_file.h, which the GGUF writer uses too); librtcore does
 * not export it, so each tool links runtime/out_file_posix.c itself. */
#ifndef RT_TOOLS_OUT_FILE_H
#define RT_TOOLS_OUT_FILE_H

#include "../runtime/out_file.h"

#endif
