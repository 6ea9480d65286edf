/* SPDX-License-Identifier: MIT */
/* neon_stubs.c: the x86 variants of the CPU plugin's kernel getters, absent
 * (NULL) in the arm64 build of tests/test-neon.c: isa.c names every
 * variant, and compiling the kernel files four more times only to get the
 * same stubs would cost the emulated build minutes for nothing. */
#include "../plugins/cpu/kern.h"

#include <stddef.h>

const rt_cpu_kern_vec_t *rt_cpu_kern_vec_avx512vnni(void);
const rt_cpu_kern_mm_t *rt_cpu_kern_mm_avx512vnni(void);
const rt_cpu_kern_attn_t *rt_cpu_kern_attn_avx512vnni(void);

#define STUBS(sfx)                                                                      \
    const rt_cpu_kern_vec_t *rt_cpu_kern_vec_##sfx(void) { return NULL; }               \
    const rt_cpu_kern_mm_t *rt_cpu_kern_mm_##sfx(void) { return NULL; }                 \
    const rt_cpu_kern_quant_t *rt_cpu_kern_quant_##sfx(void) { return NULL; }           \
    const rt_cpu_kern_blocks_t *rt_cpu_kern_blocks_##sfx(void) { return NULL; }         \
    const rt_cpu_kern_attn_t *rt_cpu_kern_attn_##sfx(void) { return NULL; }
STUBS(avx2)
STUBS(avx512)
STUBS(avx512vnni)
