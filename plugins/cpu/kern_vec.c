/* SPDX-License-Identifier: MIT */
/* kern_vec.c: the row kernels of the kernel table (kern.h), written once in
 * simd.h's vocabulary and compiled per variant: type conversions (bit-exact
 * with abi/rt_quant.h), elementwise binary and unary ops, NORM, RMS_NORM,
 * SOFT_MAX and ROPE rows, and the sine and cosine ROPE's angles need. Every loop runs over RT_W-lane blocks, the last
 * one partial, so rows of any length and any alignment work. Reductions
 * keep several vector accumulators: independent chains for the pipeline,
 * and shorter sums for accuracy. */
#include "kern.h"
#include "simd.h"

#include "../../abi/rt_quant.h"

#ifdef RT_SIMD_ON

#include <math.h>

//===--- conversions ---===//

static void cv_f16_to_f32(const uint16_t *s, float *d, int64_t n) {
    int64_t i = 0;
#if RT_W > 1
    for (; i + RT_W <= n; i += RT_W) vf_store(d + i, vf_load_f16(s + i));
#endif
    for (; i < n; i++) d[i] = rt_fp16_to_fp32(s[i]);
}

static void cv_f32_to_f16(const float *s, uint16_t *d, int64_t n) {
    int64_t i = 0;
#if RT_W > 1
    for (; i + RT_W <= n; i += RT_W) vi_store_u16(d + i, vf_to_f16_bits_ref(vf_load(s + i)));
#endif
    for (; i < n; i++) d[i] = rt_fp32_to_fp16(s[i]);
}

static void cv_bf16_to_f32(const uint16_t *s, float *d, int64_t n) {
    int64_t i = 0;
    for (; i + RT_W <= n; i += RT_W) vf_store(d + i, vf_load_bf16(s + i));
    for (; i < n; i++) d[i] = rt_bf16_to_fp32(s[i]);
}

static void cv_f32_to_bf16(const float *s, uint16_t *d, int64_t n) {
    int64_t i = 0;
    for (; i + RT_W <= n; i += RT_W) vi_store_u16(d + i, vf_to_bf16_bits(vf_load(s + i)));
    for (; i < n; i++) d[i] = rt_fp32_to_bf16(s[i]);
}

static void cv_q8_0_to_f32(const void *src, float *d, int64_t n) {
    const rt_block_q8_0_t *b = src;
    for (int64_t k = 0; k < n / RT_QK8_0; k++, d += RT_QK8_0) {
        const rt_vf s = vf_set1(rt_fp16_to_fp32(b[k].d));
        for (int i = 0; i < RT_QK8_0; i += RT_W)
            vf_store(d + i, vf_mul(s, vf_from_vi(vi_load_i8(b[k].qs + i))));
    }
}

/* Byte j holds element j (low nibble) and j + 16 (high nibble). */
static void cv_q4_0_to_f32(const void *src, float *d, int64_t n) {
    const rt_block_q4_0_t *b = src;
    const rt_vi m4 = vi_set1(15), eight = vi_set1(-8);
    for (int64_t k = 0; k < n / RT_QK4_0; k++, d += RT_QK4_0) {
        const rt_vf s = vf_set1(rt_fp16_to_fp32(b[k].d));
        for (int i = 0; i < RT_QK4_0 / 2; i += RT_W) {
            const rt_vi q = vi_load_u8(b[k].qs + i);
            vf_store(d + i, vf_mul(s, vf_from_vi(vi_add(vi_and(q, m4), eight))));
            vf_store(d + i + 16, vf_mul(s, vf_from_vi(vi_add(vi_srli(q, 4), eight))));
        }
    }
}

/* rt_quantize_block_q8_0, lane-parallel: the same divisions and the same
 * round-half-away of x/d, so the bytes match. */
static void q8_block(const float *x, rt_block_q8_0_t *b) {
    rt_vf amax = vf_zero();
    for (int i = 0; i < RT_QK8_0; i += RT_W) amax = vf_max(amax, vf_abs(vf_load(x + i)));
    const float d = vf_hmax(amax) / 127.0f;
    const rt_vf id = vf_set1(d != 0.0f ? 1.0f / d : 0.0f), half = vf_set1(0.5f);
    b->d = rt_fp32_to_fp16(d);
    for (int i = 0; i < RT_QK8_0; i += RT_W) {
        const rt_vf v = vf_mul(vf_load(x + i), id);
        const rt_vf t = vf_trunc(vf_add(vf_abs(v), half));
        vi_store_i8(b->qs + i, vi_cvtt(vf_select(vf_gt(vf_zero(), v), vf_sub(vf_zero(), t), t)));
    }
}

static void cv_f32_to_q8_0(const float *s, void *dst, int64_t n) {
    rt_block_q8_0_t *b = dst;
    for (int64_t k = 0; k < n / RT_QK8_0; k++) q8_block(s + k * RT_QK8_0, &b[k]);
}

//===--- binary ops ---===//

RT_INLINE rt_vf v_silu(rt_vf x) {
    return vf_div(x, vf_add(vf_set1(1.0f), vf_exp(vf_sub(vf_zero(), x))));
}

RT_INLINE rt_vf v_add(rt_vf x, rt_vf y) { return vf_add(x, y); }
RT_INLINE rt_vf v_sub(rt_vf x, rt_vf y) { return vf_sub(x, y); }
RT_INLINE rt_vf v_mul(rt_vf x, rt_vf y) { return vf_mul(x, y); }
RT_INLINE rt_vf v_div(rt_vf x, rt_vf y) { return vf_div(x, y); }
RT_INLINE rt_vf v_swiglu(rt_vf x, rt_vf y) { return vf_mul(v_silu(x), y); }

/* Lanes past n are computed on zeros and never stored. */
#define RT_BINARY(name)                                                              \
    static void vv_##name(float *d, const float *x, const float *y, int64_t n) {     \
        for (int64_t i = 0; i < n; i += RT_W)                                        \
            vf_store_n(d, i, n, v_##name(vf_load_n(x, i, n), vf_load_n(y, i, n)));   \
    }                                                                                \
    static void vs_##name(float *d, const float *x, float y, int64_t n) {            \
        const rt_vf yv = vf_set1(y);                                                 \
        for (int64_t i = 0; i < n; i += RT_W)                                        \
            vf_store_n(d, i, n, v_##name(vf_load_n(x, i, n), yv));                   \
    }

RT_BINARY(add)
RT_BINARY(sub)
RT_BINARY(mul)
RT_BINARY(div)
RT_BINARY(swiglu)

//===--- unary ops ---===//

static void row_silu(float *d, const float *x, int64_t n) {
    for (int64_t i = 0; i < n; i += RT_W) vf_store_n(d, i, n, v_silu(vf_load_n(x, i, n)));
}

/* 0.5x(1 + tanh(u)) = x / (1 + e^(-2u)), u = sqrt(2/pi)(x + 0.044715x^3):
 * one exp and no cancellation; e^(-2u) = inf gives the -0 the limit has. */
static void row_gelu(float *d, const float *x, int64_t n) {
    const rt_vf c = vf_set1(-2.0f * 0.7978845608028654f), c3 = vf_set1(0.044715f);
    const rt_vf one = vf_set1(1.0f);
    for (int64_t i = 0; i < n; i += RT_W) {
        const rt_vf v = vf_load_n(x, i, n);
        const rt_vf u = vf_mul(c, vf_fma(vf_mul(c3, v), vf_mul(v, v), v));
        vf_store_n(d, i, n, vf_div(v, vf_add(one, vf_exp(u))));
    }
}

/* libm's tanhf, element by element: the peer computes TANH so, and its
 * one use (soft-capping) is a row of logits per token, where an
 * approximation's error would show and speed would not. */
static void row_tanh(float *d, const float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) d[i] = tanhf(x[i]);
}

//===--- NORM, RMS_NORM ---===//

/* The sums below keep four accumulators: a row of 4096 is only 256 AVX-512
 * blocks, and with fewer the adds wait on each other instead of on memory. */
RT_INLINE rt_vf vf_sum4(rt_vf s[4]) { return vf_add(vf_add(s[0], s[1]), vf_add(s[2], s[3])); }

static float row_sum(const float *x, int64_t n) {
    rt_vf s[4] = {vf_zero(), vf_zero(), vf_zero(), vf_zero()};
    int64_t i = 0;
    for (; i + 4 * RT_W <= n; i += 4 * RT_W) {
        RT_UNROLL(4)
        for (int k = 0; k < 4; k++) s[k] = vf_add(s[k], vf_load(x + i + k * RT_W));
    }
    for (; i < n; i += RT_W) s[0] = vf_add(s[0], vf_load_n(x, i, n)); /* zeros past n */
    return vf_hsum(vf_sum4(s));
}

/* Sum of (x - m)^2; the lanes past n, which would add m^2, are dropped. */
static float row_sum_sq(const float *x, int64_t n, float m) {
    const rt_vf mv = vf_set1(m);
    rt_vf s[4] = {vf_zero(), vf_zero(), vf_zero(), vf_zero()};
    int64_t i = 0;
    for (; i + 4 * RT_W <= n; i += 4 * RT_W) {
        RT_UNROLL(4)
        for (int k = 0; k < 4; k++) {
            const rt_vf c = vf_sub(vf_load(x + i + k * RT_W), mv);
            s[k] = vf_fma(c, c, s[k]);
        }
    }
    for (; i < n; i += RT_W) {
        const rt_vf c = vf_select(vm_n(n - i < RT_W ? n - i : RT_W), vf_sub(vf_load_n(x, i, n), mv),
                                  vf_zero());
        s[0] = vf_fma(c, c, s[0]);
    }
    return vf_hsum(vf_sum4(s));
}

static void row_scale_shift(float *d, const float *x, int64_t n, float shift, float scale) {
    const rt_vf m = vf_set1(shift), s = vf_set1(scale);
    for (int64_t i = 0; i < n; i += RT_W)
        vf_store_n(d, i, n, vf_mul(vf_sub(vf_load_n(x, i, n), m), s));
}

/* Sum of the F32 squares x*x in double: near-exact, so that its rounding
 * to F32 does not depend on the order of the sums. */
static double row_sum_sq_f64(const float *x, int64_t n) {
    double s[4] = {0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (int k = 0; k < 4; k++) {
            const float q = x[i + k] * x[i + k];
            s[k] += (double)q;
        }
    for (; i < n; i++) {
        const float q = x[i] * x[i];
        s[0] += (double)q;
    }
    return (s[0] + s[1]) + (s[2] + s[3]);
}

/* The scale rounded as llama.cpp's CPU RMS_NORM rounds it: the mean square
 * (summed in double) to F32, then 1 / sqrtf(mean + eps) in F32. An ulp of
 * the scale moves an activation by an ulp, which moves a level of the next
 * product's Q8 rounding now and then: with the scale of a float sum and
 * double sqrt, SmolLM2-135M's logits after "," were 0.2 from the peer's. */
static void row_rms_norm(float *d, const float *x, int64_t n, float eps) {
    const float mean = (float)(row_sum_sq_f64(x, n) / (double)n);
    row_scale_shift(d, x, n, 0.0f, 1.0f / sqrtf(mean + eps));
}

/* Variance about the mean (two passes, no cancellation). */
static void row_norm(float *d, const float *x, int64_t n, float eps) {
    const float mean = (float)((double)row_sum(x, n) / (double)n);
    const double var = (double)row_sum_sq(x, n, mean) / (double)n;
    row_scale_shift(d, x, n, mean, (float)(1.0 / sqrt(var + (double)eps)));
}

//===--- SOFT_MAX ---===//

/* The logits x*scale + mask of the block at i. Both passes recompute them
 * rather than store them: a load and two operations cost less than a
 * store and a load, and the row is in L1 for the second pass. */
RT_INLINE rt_vf sm_logits(const float *x, const float *mask, rt_vf sc, int64_t i, int64_t n) {
    const rt_vf v = vf_mul(vf_load_n(x, i, n), sc);
    return mask ? vf_add(v, vf_load_n(mask, i, n)) : v;
}

RT_INLINE rt_vf sm_exp(float *d, const float *x, const float *mask, rt_vf sc, rt_vf m, int64_t i,
                       int64_t n) {
    const rt_vf e = vf_exp(vf_sub(sm_logits(x, mask, sc, i, n), m));
    vf_store_n(d, i, n, e);
    return e;
}

/* Whole blocks go without lane masks; only the partial one (from full on)
 * drops the lanes past n. */
static void row_soft_max(float *d, const float *x, const float *mask, float scale, int64_t n) {
    const rt_vf sc = vf_set1(scale), ninf = vf_set1(-__builtin_inff());
    const int64_t full = n - n % RT_W;
    rt_vf mx = ninf;
    for (int64_t i = 0; i < full; i += RT_W) mx = vf_max(mx, sm_logits(x, mask, sc, i, n));
    if (full < n) mx = vf_max(mx, vf_select(vm_n(n - full), sm_logits(x, mask, sc, full, n), ninf));
    const float max = vf_hmax(mx);
    if (max == -__builtin_inff()) {
        memset(d, 0, (size_t)n * sizeof d[0]);
        return;
    }
    const rt_vf m = vf_set1(max);
    rt_vf sum = vf_zero();
    for (int64_t i = 0; i < full; i += RT_W) sum = vf_add(sum, sm_exp(d, x, mask, sc, m, i, n));
    if (full < n)
        sum = vf_add(sum, vf_select(vm_n(n - full), sm_exp(d, x, mask, sc, m, full, n), vf_zero()));
    const rt_vf inv = vf_set1((float)(1.0 / (double)vf_hsum(sum)));
    for (int64_t i = 0; i < n; i += RT_W) vf_store_n(d, i, n, vf_mul(vf_load_n(d, i, n), inv));
}

//===--- ROPE ---===//

/* A call takes every row of one position: a row of 128 is only 8 blocks,
 * and per-row calls cost as much as the rotation. The rows go one after
 * the other, the table read again (from L1) for each: taking a block of the
 * table across all rows instead would load x rows 4 KiB past stores to d
 * still in flight (8 rows of 128), and stall on 4K aliasing. Pairs
 * (2i, 2i+1) never straddle a block: RT_W and n_dims are even. */
#if RT_W == 1
static void rope_normal(float *d, int64_t dd, const float *x, int64_t dx, int64_t n_rows,
                        const float *cs, int64_t n_dims) {
    for (int64_t r = 0; r < n_rows; r++) {
        const float *xr = x + r * dx;
        float *dr = d + r * dd;
        for (int64_t j = 0; j < n_dims; j += 2) {
            const float x0 = xr[j], x1 = xr[j + 1];
            dr[j] = x0 * cs[j] + x1 * cs[n_dims + j];
            dr[j + 1] = x1 * cs[j + 1] + x0 * cs[n_dims + j + 1];
        }
    }
}
#else
static void rope_normal(float *d, int64_t dd, const float *x, int64_t dx, int64_t n_rows,
                        const float *cs, int64_t n_dims) {
    for (int64_t r = 0; r < n_rows; r++) {
        for (int64_t j = 0; j < n_dims; j += RT_W) {
            const rt_vf c = vf_load_n(cs, j, n_dims), s = vf_load_n(cs + n_dims, j, n_dims);
            const rt_vf v = vf_load_n(x + r * dx, j, n_dims);
            vf_store_n(d + r * dd, j, n_dims, vf_fma(vf_swap_pairs(v), s, vf_mul(v, c)));
        }
    }
}
#endif

static void rope_neox(float *d, int64_t dd, const float *x, int64_t dx, int64_t n_rows,
                      const float *cs, int64_t n_dims) {
    const int64_t h = n_dims / 2;
    for (int64_t r = 0; r < n_rows; r++) {
        const float *xr = x + r * dx;
        float *dr = d + r * dd;
        for (int64_t i = 0; i < h; i += RT_W) {
            const rt_vf c = vf_load_n(cs, i, h), s = vf_load_n(cs + h, i, h);
            const rt_vf x0 = vf_load_n(xr, i, h), x1 = vf_load_n(xr + h, i, h);
            vf_store_n(dr, i, h, vf_sub(vf_mul(x0, c), vf_mul(x1, s)));
            vf_store_n(dr + h, i, h, vf_fma(x0, s, vf_mul(x1, c)));
        }
    }
}

static void row_rope(float *d, int64_t dd, const float *x, int64_t dx, int64_t n_rows,
                     const float *cs, int64_t n_dims, bool neox, int64_t n) {
    if (neox)
        rope_neox(d, dd, x, dx, n_rows, cs, n_dims);
    else
        rope_normal(d, dd, x, dx, n_rows, cs, n_dims);
    if (d == x || n == n_dims) return;
    for (int64_t r = 0; r < n_rows; r++)
        memcpy(d + r * dd + n_dims, x + r * dx + n_dims, (size_t)(n - n_dims) * sizeof d[0]);
}

/* Cephes' sinf and cosf polynomials on [-pi/4, pi/4]. */
static void row_sincos(const float *x, float *s, float *c, int64_t n) {
    for (int64_t i = 0; i < n; i += RT_W) {
        const rt_vf v = vf_load_n(x, i, n), z = vf_mul(v, v);
        rt_vf ps = vf_fma(vf_set1(-1.9515295891e-4f), z, vf_set1(8.3321608736e-3f));
        ps = vf_fma(ps, z, vf_set1(-1.6666654611e-1f));
        vf_store_n(s, i, n, vf_fma(vf_mul(ps, z), v, v));
        rt_vf pc = vf_fma(vf_set1(2.443315711809948e-5f), z, vf_set1(-1.388731625493765e-3f));
        pc = vf_fma(pc, z, vf_set1(4.166664568298827e-2f));
        const rt_vf zz = vf_mul(z, z);
        vf_store_n(c, i, n, vf_add(vf_fma(pc, zz, vf_mul(vf_set1(-0.5f), z)), vf_set1(1.0f)));
    }
}

//===--- the table ---===//

static const rt_cpu_kern_vec_t kern_vec = {
    .f16_to_f32 = cv_f16_to_f32,
    .bf16_to_f32 = cv_bf16_to_f32,
    .f32_to_f16 = cv_f32_to_f16,
    .f32_to_bf16 = cv_f32_to_bf16,
    .q8_0_to_f32 = cv_q8_0_to_f32,
    .q4_0_to_f32 = cv_q4_0_to_f32,
    .f32_to_q8_0 = cv_f32_to_q8_0,
    .vv = { vv_add, vv_sub, vv_mul, vv_div, vv_swiglu },
    .vs = { vs_add, vs_sub, vs_mul, vs_div, vs_swiglu },
    .gelu = row_gelu,
    .silu = row_silu,
    .tanh = row_tanh,
    .norm = row_norm,
    .rms_norm = row_rms_norm,
    .soft_max = row_soft_max,
    .rope = row_rope,
    .sincos = row_sincos,
};

const rt_cpu_kern_vec_t *RT_KS(rt_cpu_kern_vec)(void) {
    return &kern_vec;
}

#else /* the variant's instructions are not available to this compiler */

const rt_cpu_kern_vec_t *RT_KS(rt_cpu_kern_vec)(void) {
    return NULL;
}

#endif
