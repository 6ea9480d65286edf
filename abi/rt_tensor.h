/* SPDX-License-Identifier: MIT */
/* rt_tensor.h: element types, op codes with their contracts, and the tensor
 * header. Shared by applications and plugins; its layout is ABI.
 *
 * A tensor is a header that describes bytes somewhere else (docs/memory.md
 * §1): ne[i] elements along dimension i, nb[i] bytes between two
 * neighbours along it, dimension 0 innermost. Element (i0, i1, i2, i3) is at
 *
 *     (char *)data + i0*nb[0] + i1*nb[1] + i2*nb[2] + i3*nb[3]
 *
 * For a quantised type, i0 counts blocks of block_size elements. A tensor is
 * contiguous when nb[0] is the type's block size in bytes, nb[1] =
 * nb[0]*ne[0]/block_size and nb[i] = nb[i-1]*ne[i-1]. Unused trailing
 * dimensions have ne = 1.
 */
#ifndef RT_TENSOR_H
#define RT_TENSOR_H

#include "rt_base.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RT_MAX_DIMS 4
#define RT_MAX_SRC 8
#define RT_MAX_OP_PARAMS 64 /* bytes */
#define RT_MAX_NAME 64      /* bytes, including the terminating NUL */

//===--- rt_type_t ---===//

/* Element types. The numbers and block layouts are GGUF's (ggml_type), so a
 * GGUF tensor's type id is an rt_type_t as it stands. Only the types listed
 * are implemented; other GGUF ids are reserved for them. */
typedef int32_t rt_type_t;
enum {
    RT_TYPE_F32 = 0,   /* IEEE binary32 */
    RT_TYPE_F16 = 1,   /* IEEE binary16 */
    RT_TYPE_Q4_0 = 2,  /* blocks of 32: f16 scale d, 16 bytes of nibbles; x = d*(q-8);
                          byte j holds element j (low nibble) and j+16 (high) */
    RT_TYPE_Q8_0 = 8,  /* blocks of 32: f16 scale d, 32 int8 q; x = d*q */
    RT_TYPE_I32 = 26,  /* int32, for indices and positions */
    RT_TYPE_BF16 = 30, /* bfloat16: the high half of a binary32 */

    /* abi >= 1.2. A plugin of an older minor version is never asked about
       these: the core answers "unsupported" for it. Layouts: the structs
       below; codecs: abi/rt_quant.h. */
    RT_TYPE_Q4_1 = 3,    /* blocks of 32: f16 d, f16 m, nibbles as Q4_0; x = d*q + m */
    RT_TYPE_Q5_0 = 6,    /* blocks of 32: f16 d, 32 high bits, nibbles; x = d*(q-16) */
    RT_TYPE_Q5_1 = 7,    /* blocks of 32: f16 d, f16 m, 32 high bits, nibbles; x = d*q + m */
    RT_TYPE_Q2_K = 10,   /* super-blocks of 256: 16 x 16, 4-bit scale and min, 2-bit q */
    RT_TYPE_Q3_K = 11,   /* super-blocks of 256: 16 x 16, 6-bit signed scale, 3-bit q */
    RT_TYPE_Q4_K = 12,   /* super-blocks of 256: 8 x 32, 6-bit scale and min, 4-bit q */
    RT_TYPE_Q5_K = 13,   /* super-blocks of 256: 8 x 32, 6-bit scale and min, 5-bit q */
    RT_TYPE_Q6_K = 14,   /* super-blocks of 256: 16 x 16, int8 scale, 6-bit q */
    RT_TYPE_Q8_K = 15,   /* super-blocks of 256: f32 d, int8 q, int16 sums of 16
                            (activations of K-quant dot products; not in files) */
    RT_TYPE_IQ4_NL = 20, /* blocks of 32: f16 d, nibbles indexing a fixed
                            non-linear table; x = d*table[q] */
    RT_TYPE_IQ4_XS = 23, /* super-blocks of 256: 8 x 32, 6-bit scale, IQ4_NL nibbles */

    RT_TYPE_COUNT = 31 /* one past the largest id; not every id below is a type */
};

#define RT_QK4_0 32
#define RT_QK8_0 32
#define RT_QK4_1 32          /* abi >= 1.2 */
#define RT_QK5_0 32          /* abi >= 1.2 */
#define RT_QK5_1 32          /* abi >= 1.2 */
#define RT_QK4_NL 32         /* abi >= 1.2 */
#define RT_QK_K 256          /* abi >= 1.2: the K-quants' super-block */
#define RT_K_SCALE_SIZE 12   /* abi >= 1.2: Q4_K/Q5_K's packed 6-bit scales and mins */

/* The block layouts, for plugins that read quantised data. d is binary16. */
typedef struct rt_block_q4_0 {
    uint16_t d;
    uint8_t qs[RT_QK4_0 / 2];
} rt_block_q4_0_t;

typedef struct rt_block_q8_0 {
    uint16_t d;
    int8_t qs[RT_QK8_0];
} rt_block_q8_0_t;

RT_STATIC_ASSERT(sizeof(rt_block_q4_0_t) == 18, "Q4_0 block is GGUF's 18 bytes");
RT_STATIC_ASSERT(sizeof(rt_block_q8_0_t) == 34, "Q8_0 block is GGUF's 34 bytes");

/* abi >= 1.2: the blocks of the types above, field for field GGUF's. In
 * every 32-element block of nibbles, byte j holds element j (low nibble)
 * and j+16 (high). A 5-bit q takes its fifth bit from bit j of qh (qh read
 * as a little-endian uint32). The K-quants' element order inside a
 * super-block is the one their dequantisers in rt_quant.h produce. */
typedef struct rt_block_q4_1 {
    uint16_t d, m;               /* f16 scale and offset */
    uint8_t qs[RT_QK4_1 / 2];
} rt_block_q4_1_t;

typedef struct rt_block_q5_0 {
    uint16_t d;                  /* f16 scale */
    uint8_t qh[4];               /* fifth bit of element j at bit j */
    uint8_t qs[RT_QK5_0 / 2];
} rt_block_q5_0_t;

typedef struct rt_block_q5_1 {
    uint16_t d, m;               /* f16 scale and offset */
    uint8_t qh[4];
    uint8_t qs[RT_QK5_1 / 2];
} rt_block_q5_1_t;

typedef struct rt_block_q2_k {
    uint8_t scales[RT_QK_K / 16]; /* per 16: scale (low nibble), min (high) */
    uint8_t qs[RT_QK_K / 4];      /* 2-bit q, four to a byte */
    uint16_t d, dmin;             /* f16 super-scales of the scales and mins */
} rt_block_q2_k_t;

typedef struct rt_block_q3_k {
    uint8_t hmask[RT_QK_K / 8];   /* third bit of q (set: q as stored, clear: q-4) */
    uint8_t qs[RT_QK_K / 4];      /* low 2 bits of q */
    uint8_t scales[12];           /* 16 six-bit scales, biased by 32 */
    uint16_t d;                   /* f16 super-scale */
} rt_block_q3_k_t;

typedef struct rt_block_q4_k {
    uint16_t d, dmin;             /* f16 super-scales of the scales and mins */
    uint8_t scales[RT_K_SCALE_SIZE]; /* 8 six-bit scales and 8 six-bit mins */
    uint8_t qs[RT_QK_K / 2];
} rt_block_q4_k_t;

typedef struct rt_block_q5_k {
    uint16_t d, dmin;
    uint8_t scales[RT_K_SCALE_SIZE]; /* as Q4_K */
    uint8_t qh[RT_QK_K / 8];      /* fifth bits */
    uint8_t qs[RT_QK_K / 2];
} rt_block_q5_k_t;

typedef struct rt_block_q6_k {
    uint8_t ql[RT_QK_K / 2];      /* low 4 bits of q */
    uint8_t qh[RT_QK_K / 4];      /* high 2 bits of q */
    int8_t scales[RT_QK_K / 16];  /* per 16 elements */
    uint16_t d;                   /* f16 super-scale */
} rt_block_q6_k_t;

typedef struct rt_block_q8_k {
    float d;                      /* f32 scale */
    int8_t qs[RT_QK_K];
    int16_t bsums[RT_QK_K / 16];  /* sum of each 16 q, for the K-quants' mins */
} rt_block_q8_k_t;

typedef struct rt_block_iq4_nl {
    uint16_t d;                   /* f16 scale */
    uint8_t qs[RT_QK4_NL / 2];    /* indices into rt_iq4nl_values (rt_quant.h) */
} rt_block_iq4_nl_t;

typedef struct rt_block_iq4_xs {
    uint16_t d;                   /* f16 super-scale */
    uint16_t scales_h;            /* high 2 bits of the 8 six-bit scales */
    uint8_t scales_l[RT_QK_K / 64]; /* low 4 bits, two to a byte */
    uint8_t qs[RT_QK_K / 2];
} rt_block_iq4_xs_t;

RT_STATIC_ASSERT(sizeof(rt_block_q4_1_t) == 20, "Q4_1 block is GGUF's 20 bytes");
RT_STATIC_ASSERT(sizeof(rt_block_q5_0_t) == 22, "Q5_0 block is GGUF's 22 bytes");
RT_STATIC_ASSERT(sizeof(rt_block_q5_1_t) == 24, "Q5_1 block is GGUF's 24 bytes");
RT_STATIC_ASSERT(sizeof(rt_block_q2_k_t) == 84, "Q2_K block is GGUF's 84 bytes");
RT_STATIC_ASSERT(sizeof(rt_block_q3_k_t) == 110, "Q3_K block is GGUF's 110 bytes");
RT_STATIC_ASSERT(sizeof(rt_block_q4_k_t) == 144, "Q4_K block is GGUF's 144 bytes");
RT_STATIC_ASSERT(sizeof(rt_block_q5_k_t) == 176, "Q5_K block is GGUF's 176 bytes");
RT_STATIC_ASSERT(sizeof(rt_block_q6_k_t) == 210, "Q6_K block is GGUF's 210 bytes");
RT_STATIC_ASSERT(sizeof(rt_block_q8_k_t) == 292, "Q8_K block is GGUF's 292 bytes");
RT_STATIC_ASSERT(sizeof(rt_block_iq4_nl_t) == 18, "IQ4_NL block is GGUF's 18 bytes");
RT_STATIC_ASSERT(sizeof(rt_block_iq4_xs_t) == 136, "IQ4_XS block is GGUF's 136 bytes");

/* What a type is, as rt_type_traits() reports it. */
typedef struct rt_type_traits {
    uint32_t struct_size;
    uint32_t is_quantized;  /* 1 when elements come in scaled blocks */
    const char *name;       /* "f32", "q8_0", ... as GGUF tools print them */
    int64_t block_size;     /* elements per block (1 for plain types) */
    size_t type_size;       /* bytes per block */
} rt_type_traits_t;

//===--- rt_op_t ---===//

/* Op codes. Numbers are ABI and append-only. Each entry states the op's
 * contract: sources, op_params layout (int32 slots; floats are stored by
 * their bits), result shape and types, and what the graph builder checks.
 * "a" is src[0], "b" src[1], "c" src[2]. Elementwise ops work on any strides
 * unless said otherwise; "rows" are runs along dimension 0. Plugins must say
 * true in supports_op for the view family (they compute nothing). */
typedef int32_t rt_op_t;
enum {
    RT_OP_NONE = 0,      /* a leaf: weights, inputs, constants */

    /* The view family: the result shares a's bytes (view_src = a's base). */
    RT_OP_VIEW = 1,      /* caller-chosen ne, nb and byte offset into a */
    RT_OP_RESHAPE = 2,   /* a contiguous; same element count, contiguous strides */
    RT_OP_PERMUTE = 3,   /* op_params[0..3]: the axis each dimension of a goes to */
    RT_OP_TRANSPOSE = 4, /* permute(1, 0, 2, 3) */

    /* Copies. */
    RT_OP_CONT = 5,      /* a any strides -> contiguous copy, same type, any shape
                            with a's element count (cont_2d..4d reshape in the copy) */
    RT_OP_CPY = 6,       /* a -> b: writes a's elements, in logical order, into b's
                            layout; result is a view of b. b (src[1]) is NULL for
                            rt_cast, whose result is a new contiguous tensor that is
                            itself the destination: kernels write into the node with
                            its own type and strides. Same element count.
                            Types: F32, F16, BF16 to any of them; F32 to Q8_0/Q4_0
                            (b contiguous, b->ne[0] a multiple of 32). */

    /* Compute. F32 throughout; "or F16" where the op says so (then a, b and
       the result share the type). */
    RT_OP_GET_ROWS = 7,  /* a {n0, n1, n2, n3} F32/F16/BF16/Q8_0/Q4_0 (abi >= 1.2: and
                            every block type but Q8_K), b I32 {m, n2, n3'}
                            with b->ne[1] == a->ne[2] (b->ne[2] == a->ne[3]) ->
                            F32 {n0, m, n2, n3}: row b[i] of a, converted to F32 */
    RT_OP_ADD = 8,       /* a + b; b repeats into a: a->ne[i] % b->ne[i] == 0; shape of a; F32 or F16 */
    RT_OP_SUB = 9,       /* a - b; as ADD */
    RT_OP_MUL = 10,      /* a * b; as ADD */
    RT_OP_DIV = 11,      /* a / b; as ADD */
    RT_OP_SCALE = 12,    /* a * s; op_params[0] = float s; F32 or F16 */
    RT_OP_NORM = 13,     /* per row: (x - mean) / sqrt(var + eps); op_params[0] = float eps */
    RT_OP_RMS_NORM = 14, /* per row: x / sqrt(mean(x^2) + eps); op_params[0] = float eps */
    RT_OP_MUL_MAT = 15,  /* a {K, M, a2, a3}, b {K, N, b2, b3} -> F32 {M, N, b2, b3};
                            c[m, n] = dot(row m of a, row n of b) (c = b . a^T);
                            b2 % a2 == 0 and b3 % a3 == 0 (a broadcasts: b's
                            (i2, i3) reads a's (i2 / (b2/a2), i3 / (b3/a3)));
                            a: F32/F16/BF16/Q8_0/Q4_0 (abi >= 1.2: and every block
                            type but Q8_K, whose b a plugin may round through Q8_K
                            per 256-block, or per 32-block for the types of 32),
                            rows contiguous (nb[0] = block bytes),
                            not transposed (nb[0] <= nb[1]); b: F32, nb[0] = 4;
                            with Q8_0/Q4_0 weights a plugin may round b through
                            Q8_0 per 32-block first (as ggml does: integer dots);
                            dims 1-3 of both may have any strides. */
    RT_OP_SOFT_MAX = 16, /* per row: softmax(a*scale + mask); b = mask or NULL, F32 or F16,
                            b->ne[0] == a->ne[0], b->ne[1] >= a->ne[1], b broadcasts
                            over dims 2, 3; op_params[0] = float scale */
    RT_OP_DIAG_MASK_INF = 17, /* a with (i0, i1) set to -inf where i0 > n_past + i1;
                            op_params[0] = int32 n_past */
    RT_OP_GELU = 18,     /* 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))); F32 or F16 */
    RT_OP_SILU = 19,     /* x / (1 + e^-x); F32 or F16 */
    RT_OP_SWIGLU = 20,   /* silu(a) * b, a and b the same shape; F32 or F16 */
    RT_OP_ROPE = 21,     /* rotary embedding. a {head_dim, n_head, n_tok, a3}, b I32 {n_tok}
                            positions. op_params: [0] int32 n_dims (even, <= head_dim;
                            dims past it pass through), [1] int32 mode (RT_ROPE_MODE_*),
                            [2] float freq_base, [3] float freq_scale.
                            theta_i = p * freq_scale * freq_base^(-2i/n_dims) rotates
                            pair i: (x[2i], x[2i+1]) in NORMAL mode, (x[i], x[i+n_dims/2])
                            in NEOX mode. F32 or F16. */
    RT_OP_ARGMAX = 22,   /* a F32 {n0, n1, n2, n3} -> I32 {n1, n2, n3}: index of the
                            largest element of each row (the first one on ties) */

    /* abi >= 1.1. A plugin of an older minor version is never asked about
       these: the core answers "unsupported" for it. */
    RT_OP_SET_ROWS = 23, /* a {n0, n1, n2, n3} F32/F16/BF16, b F32 {n0, m, n2, n3},
                            c I32 {m, n2, n3}: row b[:, i, i2, i3] is written,
                            converted to a's type, over row c[i, i2, i3] of a's
                            matrix (i2, i3); the other rows of a keep their bytes.
                            The result is a view of a (like CPY): the scatter
                            counterpart of GET_ROWS, which lets a graph write at
                            positions chosen by an input, so the same graph serves
                            every step (a KV cache written at the step's rows).
                            a may have any strides: a transposed a takes columns
                            (the transposed V cache). With indices repeated, which
                            of their rows lands is unspecified; an index outside a
                            fails the graph. */
    RT_OP_TANH = 24,     /* abi >= 1.2: tanh(x); F32 or F16 (soft-capping:
                            c * tanh(x / c) bounds attention and output logits) */

    /* abi >= 1.3. */
    RT_OP_FLASH_ATTN = 25, /* attention fused into one op, softmax(s) V, without
                            materialising s for the whole context:
                            a = q F32 {D, N, H, n3}, b = k {D, n_kv, H_kv, n3},
                            c = v {Dv, n_kv, H_kv, n3} (k and v F32 or F16, one
                            type; rows contiguous: nb[0] = element size; dims 1-3
                            any strides), src[3] = mask F32/F16 {n_kv, >= N} or
                            NULL (one mask for every head and n3) ->
                            F32 {Dv, H, N, n3}, heads side by side per query:
                            out[:, h, i] = sum_j p_j v[:, j, g], g = h / (H / H_kv),
                            p = softmax_j(s_j), s_j = cap(scale * dot(q[:, i, h],
                            k[:, j, g])) + mask[j, i], cap(x) = c * tanh(x / c)
                            where op_params[1] = c != 0, else x.
                            op_params: [0] float scale, [1] float c.
                            H % H_kv == 0 (grouped queries). A query whose every
                            s_j is -inf gets zeros. A plugin may round q, and p,
                            to the cache's type before the products (as ggml does),
                            and is free in its order of summation. */
    RT_OP_COUNT          /* not ABI: grows with new ops */
};

//===--- which ABI version defined an op or a type ---===//

/* The ABI version that defined op or type; UINT32_MAX for a value no
 * version defines. A plugin that speaks an older version has never heard of
 * it: the core never hands it one (not at supports_op, not at
 * graph_compute, not when placing a tensor in its buffers), and a plugin
 * that negotiated an older version (rt_plugin.h) never claims one. Both
 * sides read these two functions, so the rule has one definition. Every
 * minor version that adds ops or types extends them. */
static inline uint32_t rt_op_abi_version(rt_op_t op) {
    if (op < 0) return UINT32_MAX;
    if (op <= RT_OP_ARGMAX) return RT_ABI_MAKE_VERSION(1, 0);
    if (op <= RT_OP_SET_ROWS) return RT_ABI_MAKE_VERSION(1, 1);
    if (op <= RT_OP_TANH) return RT_ABI_MAKE_VERSION(1, 2);
    if (op <= RT_OP_FLASH_ATTN) return RT_ABI_MAKE_VERSION(1, 3);
    return UINT32_MAX;
}

static inline uint32_t rt_type_abi_version(rt_type_t type) {
    switch (type) {
    case RT_TYPE_F32:
    case RT_TYPE_F16:
    case RT_TYPE_Q4_0:
    case RT_TYPE_Q8_0:
    case RT_TYPE_I32:
    case RT_TYPE_BF16: return RT_ABI_MAKE_VERSION(1, 0);
    case RT_TYPE_Q4_1:
    case RT_TYPE_Q5_0:
    case RT_TYPE_Q5_1:
    case RT_TYPE_Q2_K:
    case RT_TYPE_Q3_K:
    case RT_TYPE_Q4_K:
    case RT_TYPE_Q5_K:
    case RT_TYPE_Q6_K:
    case RT_TYPE_Q8_K:
    case RT_TYPE_IQ4_NL:
    case RT_TYPE_IQ4_XS: return RT_ABI_MAKE_VERSION(1, 2);
    default: return UINT32_MAX;
    }
}

enum {
    RT_ROPE_MODE_NORMAL = 0,
    RT_ROPE_MODE_NEOX = 2
};

//===--- rt_tensor_t ---===//

/* Tensor flags. */
enum {
    RT_TENSOR_FLAG_INPUT = 1u << 0,  /* written by the application before each run */
    RT_TENSOR_FLAG_OUTPUT = 1u << 1, /* read after the run: never freed early or overwritten */
    RT_TENSOR_FLAG_PARAM = 1u << 2   /* a trainable parameter */
};

struct rt_buffer;

/* The tensor header. Its layout is ABI (pinned by the assertions below and
 * by tests/test-abi-layout.c); it grows only into `reserved`.
 *
 * Invariants: a view (view_src != NULL) owns no bytes; its data is
 * view_src->data + view_offs and its buffer is view_src's; view_src is
 * always a base tensor, never a view. `data` is an address in the buffer's
 * address space, which for a device buffer need not be a host address:
 * only a buffer type flagged host gives host-readable data. `extra` belongs
 * to the plugin that owns `buffer`; the core never reads or writes it. */
typedef struct rt_tensor {
    rt_type_t type;                          /* element type, RT_TYPE_* */
    rt_op_t op;                              /* the op that computes it; RT_OP_NONE for leafs */
    uint32_t flags;                          /* RT_TENSOR_FLAG_* */
    uint32_t reserved0;                      /* zero */
    int64_t ne[RT_MAX_DIMS];                 /* elements per dimension */
    size_t nb[RT_MAX_DIMS];                  /* stride in bytes per dimension */
    int32_t op_params[RT_MAX_OP_PARAMS / 4]; /* op-specific parameters, see rt_op_t */
    struct rt_tensor *src[RT_MAX_SRC];       /* inputs of op, unused slots NULL */
    struct rt_tensor *view_src;              /* the base tensor viewed, or NULL */
    size_t view_offs;                        /* bytes from view_src->data */
    void *data;                              /* first element, NULL until allocated */
    struct rt_buffer *buffer;                /* buffer holding data, NULL for context memory */
    void *extra;                             /* plugin-private, see above */
    char name[RT_MAX_NAME];                  /* NUL-terminated */
    uint64_t reserved[8];                    /* zero; room for later minor versions */
} rt_tensor_t;

RT_STATIC_ASSERT(offsetof(rt_tensor_t, ne) == 16, "rt_tensor_t layout is ABI");
RT_STATIC_ASSERT(offsetof(rt_tensor_t, op_params) == 80, "rt_tensor_t layout is ABI");
RT_STATIC_ASSERT(offsetof(rt_tensor_t, src) == 144, "rt_tensor_t layout is ABI");
RT_STATIC_ASSERT(offsetof(rt_tensor_t, data) == 224, "rt_tensor_t layout is ABI");
RT_STATIC_ASSERT(offsetof(rt_tensor_t, name) == 248, "rt_tensor_t layout is ABI");
RT_STATIC_ASSERT(sizeof(rt_tensor_t) == 376, "rt_tensor_t layout is ABI (1.0)");

/* Whether ABI version abi defines node's op, its type and its sources'
 * types: what a plugin speaking abi may be handed (rt_op_abi_version). */
static inline bool rt_abi_defines_node(uint32_t abi, const rt_tensor_t *node) {
    if (rt_op_abi_version(node->op) > abi || rt_type_abi_version(node->type) > abi) return false;
    for (int i = 0; i < RT_MAX_SRC; i++)
        if (node->src[i] != NULL && rt_type_abi_version(node->src[i]->type) > abi) return false;
    return true;
}

#ifdef __cplusplus
}
#endif

#endif /* RT_TENSOR_H */
