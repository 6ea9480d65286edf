/* SPDX-License-Identifier: MIT */
/* kern.h: the CPU plugin's kernel table, the seam between the op files
 * (ops_*.c: shapes, strides, threads) and the arithmetic, which exists in
 * one variant per instruction set. Each kernel file (kern_vec.c, kern_mm.c,
 * kern_quant.c, kern_attn.c) is compiled once per variant (simd.h) and exports a getter
 * for its part of the table, NULL when the variant was not compiled in;
 * isa.c checks what the CPU and the OS allow, composes one table per
 * runnable path and picks the best (or the one RT_CPU_ISA names) when the
 * plugin starts (kern_blocks.c: the block types of ABI 1.2). Kernels read and write contiguous F32 rows; whatever else
 * a layout needs happens in the op files. */
#ifndef RT_CPU_KERN_H
#define RT_CPU_KERN_H

#include "../../abi/rt_tensor.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

//===--- paths ---===//

typedef enum rt_cpu_isa {
    RT_CPU_ISA_SCALAR,     /* plain C, the reference */
    RT_CPU_ISA_AVX2,       /* AVX2 + FMA + F16C */
    RT_CPU_ISA_AVX512,     /* AVX-512 F, BW, VL, DQ */
    RT_CPU_ISA_AVX512VNNI, /* the above + VNNI for the quantised dot products */
    RT_CPU_ISA_NEON,       /* arm64 Advanced SIMD */
    RT_CPU_ISA_COUNT
} rt_cpu_isa_t;

//===--- elementwise and row kernels (kern_vec.c) ---===//

enum {
    RT_CPU_BIN_ADD,
    RT_CPU_BIN_SUB,
    RT_CPU_BIN_MUL,
    RT_CPU_BIN_DIV,
    RT_CPU_BIN_SWIGLU, /* silu(x) * y */
    RT_CPU_BIN_COUNT
};

typedef void (*rt_cpu_vv_fn)(float *d, const float *x, const float *y, int64_t n);
typedef void (*rt_cpu_vs_fn)(float *d, const float *x, float y, int64_t n);

/* n elements, contiguous; d may be x in every row kernel. Conversions are
 * bit-exact with abi/rt_quant.h; n is a multiple of 32 for Q8_0/Q4_0. */
typedef struct rt_cpu_kern_vec {
    void (*f16_to_f32)(const uint16_t *src, float *dst, int64_t n);
    void (*bf16_to_f32)(const uint16_t *src, float *dst, int64_t n);
    void (*f32_to_f16)(const float *src, uint16_t *dst, int64_t n);
    void (*f32_to_bf16)(const float *src, uint16_t *dst, int64_t n);
    void (*q8_0_to_f32)(const void *src, float *dst, int64_t n);
    void (*q4_0_to_f32)(const void *src, float *dst, int64_t n);
    void (*f32_to_q8_0)(const float *src, void *dst, int64_t n);
    rt_cpu_vv_fn vv[RT_CPU_BIN_COUNT];  /* d = x op y */
    rt_cpu_vs_fn vs[RT_CPU_BIN_COUNT];  /* d = x op y for one y */
    void (*gelu)(float *d, const float *x, int64_t n);
    void (*silu)(float *d, const float *x, int64_t n);
    void (*tanh)(float *d, const float *x, int64_t n);
    void (*norm)(float *d, const float *x, int64_t n, float eps);
    void (*rms_norm)(float *d, const float *x, int64_t n, float eps);
    /* softmax(x*scale + mask); mask NULL for none. A row with no finite
     * entry becomes zeros (see ops_norm.c). */
    void (*soft_max)(float *d, const float *x, const float *mask, float scale, int64_t n);
    /* Rotates the first n_dims of each of n_rows rows of n elements by one
     * table from rt_cpu_rope_table (ops_rope.c): NORMAL: cs[0..n_dims)
     * cosines, cs[n_dims..2n_dims) signed sines, both per element of the
     * pair; NEOX: cs[0..h) cosines, cs[h..2h) sines, h = n_dims/2. Elements
     * from n_dims to n are copied. Row r is x + r*x_stride and d + r*d_stride
     * (floats); d is x (in place) or does not overlap it. */
    void (*rope)(float *d, int64_t d_stride, const float *x, int64_t x_stride, int64_t n_rows,
                 const float *cs, int64_t n_dims, bool neox, int64_t n);
    /* s = sin(x), c = cos(x) to about 1 ulp for |x| <= pi/4 (the caller
     * reduces the angle). */
    void (*sincos)(const float *x, float *s, float *c, int64_t n);
} rt_cpu_kern_vec_t;

//===--- matrix products (kern_mm.c, kern_quant.c) ---===//

/* One matrix product c[n][m] = dot(row m of a, row n of b), m < M, n < N,
 * over K. Rows of a are of type atype, lda bytes apart, or with packed set
 * in the r16 layout of repack.h (Q8_0/Q4_0/Q4_1), lda then the bytes from one
 * group of 16 rows to the next; b's rows are F32 (or, for matvec_q and
 * matvec_r, activation rows of rt_cpu_q8a_size(K) / rt_cpu_q8r_size(K)
 * bytes), ldb bytes apart; c's rows are F32, ldc bytes apart, element m at
 * m*4. */
typedef struct rt_cpu_mm {
    const char *a;
    size_t lda;
    rt_type_t atype;
    int64_t M, K;
    const char *b;
    size_t ldb;
    int64_t N;
    char *c;
    size_t ldc;
    bool packed;    /* a in the r16 layout (repack.h): for matvec_r only */
} rt_cpu_mm_t;

typedef struct rt_cpu_kern_mm {
    int64_t gemm_rows;   /* rows of a per gemm call: work items are multiples of it */
    size_t gemm_wsize;   /* scratch bytes per thread for gemm */
    /* Rows [m0, m1) of c, every n; m0 a multiple of gemm_rows; any a type
     * (not packed). */
    void (*gemm)(const rt_cpu_mm_t *g, int64_t m0, int64_t m1, void *scratch);
    /* The same for small N (bandwidth-bound, no packing); F32/F16/BF16 a. */
    void (*matvec)(const rt_cpu_mm_t *g, int64_t m0, int64_t m1);
} rt_cpu_kern_mm_t;

/* Activations quantised for the integer dot products: a row of K (a
 * multiple of 32) elements becomes K/32 blocks of 32 int8 with Q8_0's
 * rounding (so d*q is what rt_quantize + rt_dequantize give), each with its
 * F16-rounded scale d and two sets of int32 lane corrections, -8 and -128
 * times sums of 4 of its bytes: an unsigned-by-signed dot product (x86's)
 * of Q4_0's nibbles q, or of Q8_0's w + 128, started from them ends as
 * sum((q - 8)*a), or sum(w*a). Where each part sits is the kernel variant's
 * business (kern_quant.c), within rt_cpu_q8a_size bytes per row: 128 bytes
 * a block, rounded up to four (the widest step). */
static inline size_t rt_cpu_q8a_size(int64_t K) {
    return (size_t)((K / 32 + 3) / 4) * 512;
}

typedef struct rt_cpu_kern_quant {
    /* atype: the weights' type the row will meet (a kernel may order the
     * bytes for it). */
    void (*quantize_q8a)(const float *x, int64_t K, rt_type_t atype, void *row);
    /* x rounded through Q8_0 and back: what the integer path multiplies by. */
    void (*roundtrip_q8)(const float *x, int64_t K, float *out);
    /* matvec for Q8_0/Q4_0 a with activation rows from quantize_q8a. */
    void (*matvec_q)(const rt_cpu_mm_t *g, int64_t m0, int64_t m1);
    /* The same for packed a (repack.h), at any N (it beats converting
     * the weights for the F32 gemm: integer products, and the weights
     * stay in the layout they are read in): activation rows of
     * rt_cpu_q8r_size(K) bytes from quantize_q8r (for weights of type
     * atype); m0 a multiple of 16. */
    void (*quantize_q8r)(const float *x, int64_t K, rt_type_t atype, void *row);
    void (*matvec_r)(const rt_cpu_mm_t *g, int64_t m0, int64_t m1);
} rt_cpu_kern_quant_t;

/* The block types of ABI 1.2 (kern_blocks.c): Q4_1, Q5_0, Q5_1, IQ4_NL
 * (blocks of 32) and Q2_K..Q6_K, IQ4_XS (super-blocks of 256). */
static inline size_t rt_cpu_block_bytes(rt_type_t t);
static inline bool rt_cpu_is_blocks_type(rt_type_t t) { return rt_cpu_block_bytes(t) != 0; }

/* Their activations: Q8_K for super-blocks, else one rt_cpu_q8s_t per 32. */
typedef struct rt_cpu_q8s {
    float d;         /* scale, an F16 value (kern_blocks.c: q8s_quantize) */
    float s;         /* d * the sum of qs: carries the weights' offsets */
    int8_t qs[32];
} rt_cpu_q8s_t;

static inline bool rt_cpu_act_is_q8k(rt_type_t atype) {
    return atype >= RT_TYPE_Q2_K && atype <= RT_TYPE_Q6_K ? true : atype == RT_TYPE_IQ4_XS;
}

/* Bytes of an activation row of K elements for weights of type atype. */
static inline size_t rt_cpu_act_size(rt_type_t atype, int64_t K) {
    return rt_cpu_act_is_q8k(atype) ? (size_t)(K / RT_QK_K) * sizeof(rt_block_q8_k_t)
                                    : (size_t)(K / 32) * sizeof(rt_cpu_q8s_t);
}

/* Bytes of one block of such a type (0 for any other). */
static inline size_t rt_cpu_block_bytes(rt_type_t t) {
    switch (t) {
    case RT_TYPE_Q4_1: return sizeof(rt_block_q4_1_t);
    case RT_TYPE_Q5_0: return sizeof(rt_block_q5_0_t);
    case RT_TYPE_Q5_1: return sizeof(rt_block_q5_1_t);
    case RT_TYPE_IQ4_NL: return sizeof(rt_block_iq4_nl_t);
    case RT_TYPE_Q2_K: return sizeof(rt_block_q2_k_t);
    case RT_TYPE_Q3_K: return sizeof(rt_block_q3_k_t);
    case RT_TYPE_Q4_K: return sizeof(rt_block_q4_k_t);
    case RT_TYPE_Q5_K: return sizeof(rt_block_q5_k_t);
    case RT_TYPE_Q6_K: return sizeof(rt_block_q6_k_t);
    case RT_TYPE_IQ4_XS: return sizeof(rt_block_iq4_xs_t);
    default: return 0;
    }
}

typedef struct rt_cpu_kern_blocks {
    /* n elements (whole blocks) of a row of type t to F32. */
    void (*to_f32)(rt_type_t t, const void *src, float *dst, int64_t n);
    /* x as an activation row for weights of type atype. */
    void (*quantize_act)(const float *x, int64_t K, rt_type_t atype, void *row);
    /* x through that format and back: what matvec multiplies by. */
    void (*roundtrip_act)(const float *x, int64_t K, rt_type_t atype, float *out);
    /* rows [m0, m1) of c, every n, with b's rows from quantize_act. */
    void (*matvec)(const rt_cpu_mm_t *g, int64_t m0, int64_t m1);
} rt_cpu_kern_blocks_t;

//===--- attention (kern_attn.c) ---===//

/* FLASH_ATTN's inner loop: a block of R query rows that share one kv head
 * against keys [j0, j1), in tiles of RT_CPU_FA_TILE keys, with the online
 * softmax: each row keeps its running max m, its running sum l and an F32
 * accumulator of Dv (acc, rows RT_CPU_FA_PAD(Dv) floats apart), which
 * attend updates; the caller starts them at -inf, 0 and 0 (m and l have
 * room for RT_CPU_FA_PAD(R) floats, all of them started so) and divides acc
 * by l at the end (0 where l is 0: no key seen). The rows are queries
 * times heads, the heads of one query side by side (row r is query
 * r / rpq); q is already multiplied by the scale (divided by the cap when
 * soft-capping: s = cap * tanh(q.k)). A tile whose mask is -inf for every
 * query of the block is skipped before its keys are read. */
#define RT_CPU_FA_TILE 32
/* Keys per tile of the narrow (decode) layout, kern_attn.c's FA_NT: the
 * plan's chunks of keys are whole ones, so that the tiles of a chunk line
 * up with the runs of 64 rows a fused cache keeps a sequence's cells in. */
#define RT_CPU_FA_NARROW_TILE (2 * RT_CPU_FA_TILE)
#define RT_CPU_FA_PAD(n) (((n) + 15) / 16 * 16) /* whole vectors of any path */

typedef struct rt_cpu_fa {
    const float *q;        /* R rows of D floats, contiguous */
    int64_t R, rpq, D, Dv;
    const char *k, *v;     /* key j's rows at k + j*ldk and v + j*ldv */
    size_t ldk, ldv;
    bool f16;              /* k and v F16, else F32 */
    const char *mask;      /* the block's first query's mask row, NULL for none */
    size_t ldm;            /* bytes from one query's mask row to the next */
    bool mask_f16;
    float softcap;         /* 0: none */
} rt_cpu_fa_t;

/* Floats of scratch attend needs: q transposed, the key and value tiles,
 * the scores, the mask tile in both layouts and the rescaling factors; or
 * (decode) the scores and two mask tiles of twice as many keys. */
static inline int64_t rt_cpu_fa_scratch(int64_t R, int64_t rpq, int64_t D, int64_t Dv) {
    const int64_t nq = (R + rpq - 1) / rpq, rp = RT_CPU_FA_PAD(R);
    const int64_t wide = D * rp + RT_CPU_FA_TILE * (RT_CPU_FA_PAD(D) + RT_CPU_FA_PAD(Dv) + 2 * rp + nq) + rp;
    const int64_t narrow = 2 * RT_CPU_FA_TILE * (rp + 2 * nq);
    return wide > narrow ? wide : narrow;
}

typedef struct rt_cpu_kern_attn {
    void (*attend)(const rt_cpu_fa_t *a, int64_t j0, int64_t j1, float *m, float *l, float *acc,
                   float *scratch);
} rt_cpu_kern_attn_t;

//===--- the table ---===//

typedef struct rt_cpu_kernels {
    rt_cpu_isa_t isa;
    const char *name;   /* "avx512vnni", as RT_CPU_ISA spells it */
    const rt_cpu_kern_vec_t *vec;
    const rt_cpu_kern_mm_t *mm;
    const rt_cpu_kern_quant_t *quant;
    const rt_cpu_kern_blocks_t *blocks;
    const rt_cpu_kern_attn_t *attn;
} rt_cpu_kernels_t;

/* The parts, one getter per kernel file and variant; NULL when not built. */
#define RT_CPU_KERN_PARTS(sfx)                                  \
    const rt_cpu_kern_vec_t *rt_cpu_kern_vec_##sfx(void);       \
    const rt_cpu_kern_mm_t *rt_cpu_kern_mm_##sfx(void);         \
    const rt_cpu_kern_quant_t *rt_cpu_kern_quant_##sfx(void);   \
    const rt_cpu_kern_blocks_t *rt_cpu_kern_blocks_##sfx(void); \
    const rt_cpu_kern_attn_t *rt_cpu_kern_attn_##sfx(void)
RT_CPU_KERN_PARTS(scalar);
RT_CPU_KERN_PARTS(avx2);
RT_CPU_KERN_PARTS(avx512);
RT_CPU_KERN_PARTS(neon);
const rt_cpu_kern_quant_t *rt_cpu_kern_quant_avx512vnni(void);
const rt_cpu_kern_blocks_t *rt_cpu_kern_blocks_avx512vnni(void);

/* isa.c. The path the plugin runs, chosen once per process by
 * rt_cpu_isa_init: RT_CPU_ISA when set, else the best runnable one. */
extern const rt_cpu_kernels_t *rt_cpu_k;
/* false (and a message in out_why) when RT_CPU_ISA names a path this
 * machine cannot run or one that does not exist. */
bool rt_cpu_isa_init(char *out_why, size_t why_size);
bool rt_cpu_isa_runnable(rt_cpu_isa_t isa);         /* CPU, OS and build all allow it */
const rt_cpu_kernels_t *rt_cpu_kernels_for(rt_cpu_isa_t isa); /* NULL unless runnable */
const char *rt_cpu_isa_name(rt_cpu_isa_t isa);
/* "avx512vnni (of scalar avx2 avx512 avx512vnni; cpu: avx2 fma f16c ...)". */
void rt_cpu_isa_describe(char *out, size_t size);

#endif /* RT_CPU_KERN_H */
