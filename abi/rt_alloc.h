/* SPDX-License-Identifier: MIT */
/* rt_alloc.h: (being written) */
#ifndef RT_ALLOC_H
#define RT_ALLOC_H

#include "rt.h"

#endif
