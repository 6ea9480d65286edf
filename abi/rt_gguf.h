/* SPDX-License-Identifier: MIT */
/* rt_gguf.h: (being written) */
#ifndef RT_GGUF_H
#define RT_GGUF_H

#include "rt.h"

#endif
