/* SPDX-License-Identifier: MIT */
/* isa.c: which kernel path the CPU plugin runs. It asks the processor what
 * it implements (CPUID) and the OS which register state it saves on a
 * context switch (XGETBV: XCR0), so a CPU whose OS left AVX or AVX-512
 * state disabled never runs those instructions; composes one kernel table
 * per path that the CPU, the OS and the build all allow; and picks one when
 * the plugin starts: the path RT_CPU_ISA names (scalar, avx2, avx512,
 * avx512vnni, neon; "auto" or unset for the best), refusing one the machine
 * cannot run rather than quietly running another. */
#include "kern.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#  include <cpuid.h>
#  define RT_CPU_X86 1
#endif

static const char *const isa_names[RT_CPU_ISA_COUNT] = {
    [RT_CPU_ISA_SCALAR] = "scalar",
    [RT_CPU_ISA_AVX2] = "avx2",
    [RT_CPU_ISA_AVX512] = "avx512",
    [RT_CPU_ISA_AVX512VNNI] = "avx512vnni",
    [RT_CPU_ISA_NEON] = "neon",
};

/* Best first. */
static const rt_cpu_isa_t isa_preference[RT_CPU_ISA_COUNT] = {
    RT_CPU_ISA_AVX512VNNI, RT_CPU_ISA_AVX512, RT_CPU_ISA_AVX2, RT_CPU_ISA_NEON, RT_CPU_ISA_SCALAR,
};

//===--- what the CPU and the OS allow ---===//

typedef struct features {
    bool avx, fma, f16c, avx2;
    bool avx512f, avx512bw, avx512vl, avx512dq, avx512vnni, avx512bf16;
    bool os_ymm;   /* XCR0 has SSE and AVX state */
    bool os_zmm;   /* ... and opmask, ZMM_Hi256, Hi16_ZMM state */
    bool neon;
} features_t;

#ifdef RT_CPU_X86
static uint64_t xgetbv0(void) {
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

static void detect(features_t *f) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return;
    f->fma = c >> 12 & 1;
    f->f16c = c >> 29 & 1;
    f->avx = c >> 28 & 1;
    if (c >> 27 & 1) { /* OSXSAVE: XGETBV is there and the OS manages XCR0 */
        const uint64_t xcr0 = xgetbv0();
        f->os_ymm = (xcr0 & 0x6) == 0x6;
        f->os_zmm = (xcr0 & 0xe6) == 0xe6;
    }
    if (__get_cpuid_max(0, NULL) < 7) return;
    __cpuid_count(7, 0, a, b, c, d);
    f->avx2 = b >> 5 & 1;
    f->avx512f = b >> 16 & 1;
    f->avx512dq = b >> 17 & 1;
    f->avx512bw = b >> 30 & 1;
    f->avx512vl = b >> 31 & 1;
    f->avx512vnni = c >> 11 & 1;
    __cpuid_count(7, 1, a, b, c, d);
    f->avx512bf16 = a >> 5 & 1;
}
#else
static void detect(features_t *f) {
#if defined(__aarch64__)
    f->neon = true; /* Advanced SIMD is part of the arm64 base */
#else
    (void)f;
#endif
}
#endif

static bool cpu_has(const features_t *f, rt_cpu_isa_t isa) {
    const bool avx2 = f->avx && f->avx2 && f->fma && f->f16c && f->os_ymm;
    const bool avx512 = avx2 && f->avx512f && f->avx512bw && f->avx512vl && f->avx512dq && f->os_zmm;
    switch (isa) {
    case RT_CPU_ISA_SCALAR: return true;
    case RT_CPU_ISA_AVX2: return avx2;
    case RT_CPU_ISA_AVX512: return avx512;
    case RT_CPU_ISA_AVX512VNNI: return avx512 && f->avx512vnni;
    case RT_CPU_ISA_NEON: return f->neon;
    default: return false;
    }
}

//===--- the tables ---===//

static rt_cpu_kernels_t compose(rt_cpu_isa_t isa) {
    rt_cpu_kernels_t k = { .isa = isa, .name = isa_names[isa] };
    switch (isa) {
    case RT_CPU_ISA_SCALAR:
        k.vec = rt_cpu_kern_vec_scalar(), k.mm = rt_cpu_kern_mm_scalar();
        k.quant = rt_cpu_kern_quant_scalar(), k.blocks = rt_cpu_kern_blocks_scalar();
        k.attn = rt_cpu_kern_attn_scalar();
        break;
    case RT_CPU_ISA_AVX2:
        k.vec = rt_cpu_kern_vec_avx2(), k.mm = rt_cpu_kern_mm_avx2();
        k.quant = rt_cpu_kern_quant_avx2(), k.blocks = rt_cpu_kern_blocks_avx2();
        k.attn = rt_cpu_kern_attn_avx2();
        break;
    case RT_CPU_ISA_AVX512:
    case RT_CPU_ISA_AVX512VNNI:
        k.vec = rt_cpu_kern_vec_avx512(), k.mm = rt_cpu_kern_mm_avx512();
        k.quant = isa == RT_CPU_ISA_AVX512 ? rt_cpu_kern_quant_avx512()
                                           : rt_cpu_kern_quant_avx512vnni();
        k.blocks = isa == RT_CPU_ISA_AVX512 ? rt_cpu_kern_blocks_avx512()
                                            : rt_cpu_kern_blocks_avx512vnni();
        k.attn = rt_cpu_kern_attn_avx512();
        break;
    case RT_CPU_ISA_NEON:
        k.vec = rt_cpu_kern_vec_neon(), k.mm = rt_cpu_kern_mm_neon();
        k.quant = rt_cpu_kern_quant_neon(), k.blocks = rt_cpu_kern_blocks_neon();
        k.attn = rt_cpu_kern_attn_neon();
        break;
    default: break;
    }
    return k;
}

static struct {
    pthread_once_t once;
    features_t cpu;
    rt_cpu_kernels_t tables[RT_CPU_ISA_COUNT];
    bool runnable[RT_CPU_ISA_COUNT];
    bool ok;
    char why[160];
} isa_state = { .once = PTHREAD_ONCE_INIT };

const rt_cpu_kernels_t *rt_cpu_k;

/* RT_CPU_ISA, or the best runnable path. */
static void isa_choose(void) {
    const char *want = getenv("RT_CPU_ISA");
    if (!want || !*want || strcmp(want, "auto") == 0) {
        for (int i = 0; i < RT_CPU_ISA_COUNT && !rt_cpu_k; i++)
            if (isa_state.runnable[isa_preference[i]])
                rt_cpu_k = &isa_state.tables[isa_preference[i]];
        isa_state.ok = rt_cpu_k != NULL;
        return;
    }
    for (int i = 0; i < RT_CPU_ISA_COUNT; i++) {
        if (strcmp(want, isa_names[i]) != 0) continue;
        if (isa_state.runnable[i]) {
            rt_cpu_k = &isa_state.tables[i];
            isa_state.ok = true;
        } else {
            snprintf(isa_state.why, sizeof isa_state.why,
                     "RT_CPU_ISA=%s: this %s cannot run that path", want,
                     cpu_has(&isa_state.cpu, (rt_cpu_isa_t)i) ? "build" : "CPU (or its OS)");
        }
        return;
    }
    snprintf(isa_state.why, sizeof isa_state.why,
             "RT_CPU_ISA=%s: unknown (scalar, avx2, avx512, avx512vnni, neon or auto)", want);
}

static void isa_setup(void) {
    detect(&isa_state.cpu);
    for (int i = 0; i < RT_CPU_ISA_COUNT; i++) {
        isa_state.tables[i] = compose((rt_cpu_isa_t)i);
        const rt_cpu_kernels_t *k = &isa_state.tables[i];
        isa_state.runnable[i] = cpu_has(&isa_state.cpu, (rt_cpu_isa_t)i) && k->vec && k->mm &&
                                k->quant && k->blocks && k->attn;
    }
    isa_choose();
}

bool rt_cpu_isa_init(char *out_why, size_t why_size) {
    pthread_once(&isa_state.once, isa_setup);
    if (!isa_state.ok && out_why && why_size) snprintf(out_why, why_size, "%s", isa_state.why);
    return isa_state.ok;
}

bool rt_cpu_isa_runnable(rt_cpu_isa_t isa) {
    pthread_once(&isa_state.once, isa_setup);
    return isa >= 0 && isa < RT_CPU_ISA_COUNT && isa_state.runnable[isa];
}

const rt_cpu_kernels_t *rt_cpu_kernels_for(rt_cpu_isa_t isa) {
    return rt_cpu_isa_runnable(isa) ? &isa_state.tables[isa] : NULL;
}

const char *rt_cpu_isa_name(rt_cpu_isa_t isa) {
    return isa >= 0 && isa < RT_CPU_ISA_COUNT ? isa_names[isa] : "?";
}

/* Appends " name" for each flag that is set. */
static size_t put_flags(char *out, size_t size, size_t n, const features_t *f) {
    const struct { bool on; const char *name; } flags[] = {
        { f->avx2, "avx2" }, { f->fma, "fma" }, { f->f16c, "f16c" }, { f->avx512f, "avx512f" },
        { f->avx512bw, "bw" }, { f->avx512vl, "vl" }, { f->avx512dq, "dq" },
        { f->avx512vnni, "vnni" }, { f->avx512bf16, "bf16" }, { f->neon, "neon" },
    };
    for (size_t i = 0; i < sizeof flags / sizeof flags[0] && n < size; i++)
        if (flags[i].on) n += (size_t)snprintf(out + n, size - n, " %s", flags[i].name);
    return n;
}

void rt_cpu_isa_describe(char *out, size_t size) {
    pthread_once(&isa_state.once, isa_setup);
    size_t n = (size_t)snprintf(out, size, "%s (runnable:", rt_cpu_k ? rt_cpu_k->name : "none");
    for (int i = 0; i < RT_CPU_ISA_COUNT && n < size; i++)
        if (isa_state.runnable[i]) n += (size_t)snprintf(out + n, size - n, " %s", isa_names[i]);
    if (n < size) n += (size_t)snprintf(out + n, size - n, "; cpu:");
    n = put_flags(out, size, n, &isa_state.cpu);
    if (n < size)
        snprintf(out + n, size - n, "%s)",
                 isa_state.cpu.avx512f && !isa_state.cpu.os_zmm ? "; OS: no AVX-512 state" : "");
}
