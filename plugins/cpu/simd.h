/* SPDX-License-Identifier: MIT */
/* simd.h: the vector vocabulary the kernel files (kern_*.c) are written in,
 * so that one source compiles into every instruction-set variant. The build
 * compiles each kernel file once per variant, defining RT_CPU_KERN_<NAME>
 * and passing that variant's -m flags; this header maps the variant onto
 * a vector type of RT_W floats (rt_vf), its int32 lanes (rt_vi), its lane
 * mask (rt_vm) and a few dozen inline operations, and RT_KS(name) appends
 * the variant's suffix to the symbols the file exports. When the compiler
 * lacks the variant's instructions (an x86 variant on arm64 and the other
 * way round), RT_SIMD_ON stays undefined and the kernel files compile to a
 * stub that reports the variant as absent.
 *
 * Variants: scalar (RT_W 1, plain C: the reference every other path is
 * tested against), avx2 (AVX2 + FMA + F16C, RT_W 8), avx512 and avx512vnni
 * (F, BW, VL, DQ, + VNNI for the latter; RT_W 16) and neon (arm64, RT_W 4).
 * Conversions here are bit-exact with abi/rt_quant.h: RNE for F16 and BF16,
 * NaN kept quiet as the reference does. */
#ifndef RT_CPU_SIMD_H
#define RT_CPU_SIMD_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#if defined(RT_CPU_KERN_AVX512) || defined(RT_CPU_KERN_AVX512VNNI)
#  if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
      defined(__AVX512DQ__) && defined(__FMA__) && defined(__F16C__)
#    define RT_SIMD_AVX512 1
#  endif
#  if defined(RT_CPU_KERN_AVX512VNNI) && !defined(__AVX512VNNI__)
#    undef RT_SIMD_AVX512
#  endif
#elif defined(RT_CPU_KERN_AVX2)
#  if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#    define RT_SIMD_AVX2 1
#  endif
#elif defined(RT_CPU_KERN_NEON)
#  if defined(__aarch64__) && defined(__ARM_NEON)
#    define RT_SIMD_NEON 1
#  endif
#elif defined(RT_CPU_KERN_SCALAR)
#  define RT_SIMD_SCALAR 1
#else
#  error "compile kernel files with one RT_CPU_KERN_<variant> defined"
#endif

#if defined(RT_SIMD_AVX512) || defined(RT_SIMD_AVX2) || defined(RT_SIMD_NEON) || \
    defined(RT_SIMD_SCALAR)
#  define RT_SIMD_ON 1
#endif

/* The suffix of the variant's exported symbols. */
#if defined(RT_CPU_KERN_AVX512VNNI)
#  define RT_KS(name) name##_avx512vnni
#elif defined(RT_CPU_KERN_AVX512)
#  define RT_KS(name) name##_avx512
#elif defined(RT_CPU_KERN_AVX2)
#  define RT_KS(name) name##_avx2
#elif defined(RT_CPU_KERN_NEON)
#  define RT_KS(name) name##_neon
#else
#  define RT_KS(name) name##_scalar
#endif

/* Helpers the compiler must inline so that constant arguments (tile sizes,
 * weight types) specialise them, and loops it must unroll fully so that
 * arrays of accumulators live in registers. */
#define RT_INLINE static inline __attribute__((always_inline))
#define RT_PRAGMA(x) _Pragma(#x)
#if defined(__clang__)
#  define RT_UNROLL(n) RT_PRAGMA(unroll n)
#else
#  define RT_UNROLL(n) RT_PRAGMA(GCC unroll n)
#endif

#ifdef RT_SIMD_ON

//===--- AVX-512 ---===//
#if defined(RT_SIMD_AVX512)
#include <immintrin.h>

#define RT_W 16
typedef __m512 rt_vf;
typedef __m512i rt_vi;
typedef __mmask16 rt_vm;

RT_INLINE rt_vf vf_zero(void) { return _mm512_setzero_ps(); }
RT_INLINE rt_vf vf_set1(float x) { return _mm512_set1_ps(x); }
RT_INLINE rt_vf vf_load(const float *p) { return _mm512_loadu_ps(p); }
RT_INLINE void vf_store(float *p, rt_vf v) { _mm512_storeu_ps(p, v); }
RT_INLINE rt_vm vm_first(int64_t n) { return (rt_vm)((1u << n) - 1u); }
RT_INLINE rt_vf vf_load_part(const float *p, int64_t n) { return _mm512_maskz_loadu_ps(vm_first(n), p); }
RT_INLINE void vf_store_part(float *p, rt_vf v, int64_t n) { _mm512_mask_storeu_ps(p, vm_first(n), v); }
RT_INLINE rt_vf vf_add(rt_vf a, rt_vf b) { return _mm512_add_ps(a, b); }
RT_INLINE rt_vf vf_sub(rt_vf a, rt_vf b) { return _mm512_sub_ps(a, b); }
RT_INLINE rt_vf vf_mul(rt_vf a, rt_vf b) { return _mm512_mul_ps(a, b); }
RT_INLINE rt_vf vf_div(rt_vf a, rt_vf b) { return _mm512_div_ps(a, b); }
RT_INLINE rt_vf vf_fma(rt_vf a, rt_vf b, rt_vf c) { return _mm512_fmadd_ps(a, b, c); }
RT_INLINE rt_vf vf_max(rt_vf a, rt_vf b) { return _mm512_max_ps(a, b); }
RT_INLINE rt_vf vf_min(rt_vf a, rt_vf b) { return _mm512_min_ps(a, b); }
RT_INLINE rt_vf vf_abs(rt_vf a) { return _mm512_abs_ps(a); }
RT_INLINE float vf_hsum(rt_vf v) { return _mm512_reduce_add_ps(v); }
RT_INLINE float vf_hmax(rt_vf v) { return _mm512_reduce_max_ps(v); }
RT_INLINE rt_vf vf_round(rt_vf v) {
    return _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
RT_INLINE rt_vf vf_trunc(rt_vf v) { return _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC); }
RT_INLINE rt_vm vf_gt(rt_vf a, rt_vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
RT_INLINE rt_vm vf_isnan(rt_vf a) { return _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q); }
RT_INLINE rt_vf vf_select(rt_vm m, rt_vf yes, rt_vf no) { return _mm512_mask_blend_ps(m, no, yes); }
RT_INLINE rt_vi vi_set1(int32_t x) { return _mm512_set1_epi32(x); }
RT_INLINE rt_vi vi_cvt(rt_vf v) { return _mm512_cvtps_epi32(v); } /* nearest, ties even */
RT_INLINE rt_vi vi_cvtt(rt_vf v) { return _mm512_cvttps_epi32(v); }
RT_INLINE rt_vf vf_from_vi(rt_vi v) { return _mm512_cvtepi32_ps(v); }
RT_INLINE rt_vi vi_add(rt_vi a, rt_vi b) { return _mm512_add_epi32(a, b); }
RT_INLINE rt_vi vi_and(rt_vi a, rt_vi b) { return _mm512_and_si512(a, b); }
RT_INLINE rt_vi vi_or(rt_vi a, rt_vi b) { return _mm512_or_si512(a, b); }
RT_INLINE rt_vi vi_slli(rt_vi a, int n) { return _mm512_slli_epi32(a, (unsigned)n); }
RT_INLINE rt_vi vi_srli(rt_vi a, int n) { return _mm512_srli_epi32(a, (unsigned)n); }
RT_INLINE rt_vi vf_bits(rt_vf v) { return _mm512_castps_si512(v); }
RT_INLINE rt_vf vf_from_bits(rt_vi v) { return _mm512_castsi512_ps(v); }
RT_INLINE rt_vm vi_gt(rt_vi a, rt_vi b) { return _mm512_cmpgt_epi32_mask(a, b); }
RT_INLINE rt_vi vi_select(rt_vm m, rt_vi yes, rt_vi no) { return _mm512_mask_blend_epi32(m, no, yes); }
/* 16-bit halves of the lanes, to and from memory. */
RT_INLINE rt_vi vi_load_u16(const uint16_t *p) {
    return _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p));
}
RT_INLINE void vi_store_u16(uint16_t *p, rt_vi v) {
    _mm256_storeu_si256((__m256i *)p, _mm512_cvtepi32_epi16(v));
}
RT_INLINE rt_vf vf_load_f16(const uint16_t *p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
}
RT_INLINE rt_vi vf_to_f16_bits(rt_vf v) {
    return _mm512_cvtepu16_epi32(_mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
/* Adjacent pairs swapped: (x1, x0, x3, x2, ...), for rope. */
RT_INLINE rt_vf vf_swap_pairs(rt_vf v) { return _mm512_permute_ps(v, 0xb1); }
RT_INLINE rt_vm vm_n(int64_t n) { return vm_first(n); }
/* RT_W bytes widened to int32 lanes, and int32 lanes (in range) narrowed to bytes. */
RT_INLINE rt_vi vi_load_i8(const int8_t *p) { return _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)p)); }
RT_INLINE rt_vi vi_load_u8(const uint8_t *p) { return _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)p)); }
RT_INLINE void vi_store_i8(int8_t *p, rt_vi v) { _mm_storeu_si128((__m128i *)p, _mm512_cvtepi32_epi8(v)); }

/* In-register transpose of a 16x16 block: r[i] lane j <-> r[j] lane i. */
RT_INLINE void vf_transpose(rt_vf r[16]) {
    __m512 t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
        r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xee);
        r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xee);
    }
    for (int i = 0; i < 4; i++) {
        t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
        t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xdd);
        t[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
        t[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xdd);
    }
    for (int i = 0; i < 4; i++) {
        r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
        r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
        r[i + 4] = _mm512_shuffle_f32x4(t[i + 4], t[i + 12], 0x88);
        r[i + 12] = _mm512_shuffle_f32x4(t[i + 4], t[i + 12], 0xdd);
    }
}

/* Lane i of the result: r[i]'s lanes summed (what a transpose and a sum
 * of the 16 rows give, in 45 instead of 79 operations: pairs of rows
 * summed into each other's lanes, then pairs of those, then across the
 * 128-bit lanes). */
RT_INLINE rt_vf vf_sums(const rt_vf r[16]) {
    __m512 s[8], t[4];
    RT_UNROLL(8)
    for (int i = 0; i < 8; i++)
        s[i] = _mm512_add_ps(_mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]), _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]));
    RT_UNROLL(4)
    for (int i = 0; i < 4; i++)
        t[i] = _mm512_add_ps(_mm512_shuffle_ps(s[2 * i], s[2 * i + 1], 0x44),
                             _mm512_shuffle_ps(s[2 * i], s[2 * i + 1], 0xee));
    const __m512 u0 = _mm512_add_ps(_mm512_shuffle_f32x4(t[0], t[1], 0x88), _mm512_shuffle_f32x4(t[0], t[1], 0xdd));
    const __m512 u1 = _mm512_add_ps(_mm512_shuffle_f32x4(t[2], t[3], 0x88), _mm512_shuffle_f32x4(t[2], t[3], 0xdd));
    return _mm512_add_ps(_mm512_shuffle_f32x4(u0, u1, 0x88), _mm512_shuffle_f32x4(u0, u1, 0xdd));
}

//===--- AVX2 ---===//
#elif defined(RT_SIMD_AVX2)
#include <immintrin.h>

#define RT_W 8
typedef __m256 rt_vf;
typedef __m256i rt_vi;
typedef __m256 rt_vm; /* all-ones lanes where true */

RT_INLINE rt_vf vf_zero(void) { return _mm256_setzero_ps(); }
RT_INLINE rt_vf vf_set1(float x) { return _mm256_set1_ps(x); }
RT_INLINE rt_vf vf_load(const float *p) { return _mm256_loadu_ps(p); }
RT_INLINE void vf_store(float *p, rt_vf v) { _mm256_storeu_ps(p, v); }
RT_INLINE __m256i vm_first(int64_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
RT_INLINE rt_vf vf_load_part(const float *p, int64_t n) { return _mm256_maskload_ps(p, vm_first(n)); }
RT_INLINE void vf_store_part(float *p, rt_vf v, int64_t n) { _mm256_maskstore_ps(p, vm_first(n), v); }
RT_INLINE rt_vf vf_add(rt_vf a, rt_vf b) { return _mm256_add_ps(a, b); }
RT_INLINE rt_vf vf_sub(rt_vf a, rt_vf b) { return _mm256_sub_ps(a, b); }
RT_INLINE rt_vf vf_mul(rt_vf a, rt_vf b) { return _mm256_mul_ps(a, b); }
RT_INLINE rt_vf vf_div(rt_vf a, rt_vf b) { return _mm256_div_ps(a, b); }
RT_INLINE rt_vf vf_fma(rt_vf a, rt_vf b, rt_vf c) { return _mm256_fmadd_ps(a, b, c); }
RT_INLINE rt_vf vf_max(rt_vf a, rt_vf b) { return _mm256_max_ps(a, b); }
RT_INLINE rt_vf vf_min(rt_vf a, rt_vf b) { return _mm256_min_ps(a, b); }
RT_INLINE rt_vf vf_abs(rt_vf a) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a); }
RT_INLINE float vf_hsum(rt_vf v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
RT_INLINE float vf_hmax(rt_vf v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
RT_INLINE rt_vf vf_round(rt_vf v) { return _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
RT_INLINE rt_vf vf_trunc(rt_vf v) { return _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC); }
RT_INLINE rt_vm vf_gt(rt_vf a, rt_vf b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
RT_INLINE rt_vm vf_isnan(rt_vf a) { return _mm256_cmp_ps(a, a, _CMP_UNORD_Q); }
RT_INLINE rt_vf vf_select(rt_vm m, rt_vf yes, rt_vf no) { return _mm256_blendv_ps(no, yes, m); }
RT_INLINE rt_vi vi_set1(int32_t x) { return _mm256_set1_epi32(x); }
RT_INLINE rt_vi vi_cvt(rt_vf v) { return _mm256_cvtps_epi32(v); }
RT_INLINE rt_vi vi_cvtt(rt_vf v) { return _mm256_cvttps_epi32(v); }
RT_INLINE rt_vf vf_from_vi(rt_vi v) { return _mm256_cvtepi32_ps(v); }
RT_INLINE rt_vi vi_add(rt_vi a, rt_vi b) { return _mm256_add_epi32(a, b); }
RT_INLINE rt_vi vi_and(rt_vi a, rt_vi b) { return _mm256_and_si256(a, b); }
RT_INLINE rt_vi vi_or(rt_vi a, rt_vi b) { return _mm256_or_si256(a, b); }
RT_INLINE rt_vi vi_slli(rt_vi a, int n) { return _mm256_slli_epi32(a, n); }
RT_INLINE rt_vi vi_srli(rt_vi a, int n) { return _mm256_srli_epi32(a, n); }
RT_INLINE rt_vi vf_bits(rt_vf v) { return _mm256_castps_si256(v); }
RT_INLINE rt_vf vf_from_bits(rt_vi v) { return _mm256_castsi256_ps(v); }
RT_INLINE rt_vm vi_gt(rt_vi a, rt_vi b) { return _mm256_castsi256_ps(_mm256_cmpgt_epi32(a, b)); }
RT_INLINE rt_vi vi_select(rt_vm m, rt_vi yes, rt_vi no) {
    return _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(no), _mm256_castsi256_ps(yes), m));
}
RT_INLINE rt_vi vi_load_u16(const uint16_t *p) {
    return _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
}
/* Lanes hold values < 2^16: packus keeps them, then the two halves meet. */
RT_INLINE void vi_store_u16(uint16_t *p, rt_vi v) {
    const __m128i lo = _mm256_castsi256_si128(v), hi = _mm256_extracti128_si256(v, 1);
    _mm_storeu_si128((__m128i *)p, _mm_packus_epi32(lo, hi));
}
RT_INLINE rt_vf vf_load_f16(const uint16_t *p) {
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}
RT_INLINE rt_vi vf_to_f16_bits(rt_vf v) {
    return _mm256_cvtepu16_epi32(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
RT_INLINE rt_vf vf_swap_pairs(rt_vf v) { return _mm256_permute_ps(v, 0xb1); }
RT_INLINE rt_vm vm_n(int64_t n) { return _mm256_castsi256_ps(vm_first(n)); }
RT_INLINE rt_vi vi_load_i8(const int8_t *p) { return _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)p)); }
RT_INLINE rt_vi vi_load_u8(const uint8_t *p) { return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p)); }
RT_INLINE void vi_store_i8(int8_t *p, rt_vi v) {
    const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    _mm_storel_epi64((__m128i *)p, _mm_packs_epi16(w, w));
}

RT_INLINE void vf_transpose(rt_vf r[8]) {
    __m256 t[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
        r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
    }
    for (int i = 0; i < 4; i++) {
        t[i] = _mm256_permute2f128_ps(r[i], r[i + 4], 0x20);
        t[i + 4] = _mm256_permute2f128_ps(r[i], r[i + 4], 0x31);
    }
    for (int i = 0; i < 8; i++) r[i] = t[i];
}

/* Lane i: r[i]'s lanes summed (as the AVX-512 one: 21 operations). */
RT_INLINE rt_vf vf_sums(const rt_vf r[8]) {
    __m256 s[4];
    RT_UNROLL(4)
    for (int i = 0; i < 4; i++)
        s[i] = _mm256_add_ps(_mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]), _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]));
    const __m256 t0 = _mm256_add_ps(_mm256_shuffle_ps(s[0], s[1], 0x44), _mm256_shuffle_ps(s[0], s[1], 0xee));
    const __m256 t1 = _mm256_add_ps(_mm256_shuffle_ps(s[2], s[3], 0x44), _mm256_shuffle_ps(s[2], s[3], 0xee));
    return _mm256_add_ps(_mm256_permute2f128_ps(t0, t1, 0x20), _mm256_permute2f128_ps(t0, t1, 0x31));
}

//===--- NEON (arm64) ---===//
#elif defined(RT_SIMD_NEON)
#include <arm_neon.h>

#define RT_W 4
typedef float32x4_t rt_vf;
typedef int32x4_t rt_vi;
typedef uint32x4_t rt_vm;

RT_INLINE rt_vf vf_zero(void) { return vdupq_n_f32(0.0f); }
RT_INLINE rt_vf vf_set1(float x) { return vdupq_n_f32(x); }
RT_INLINE rt_vf vf_load(const float *p) { return vld1q_f32(p); }
RT_INLINE void vf_store(float *p, rt_vf v) { vst1q_f32(p, v); }
RT_INLINE rt_vf vf_load_part(const float *p, int64_t n) {
    float t[4] = {0, 0, 0, 0};
    memcpy(t, p, (size_t)n * sizeof t[0]);
    return vld1q_f32(t);
}
RT_INLINE void vf_store_part(float *p, rt_vf v, int64_t n) {
    float t[4];
    vst1q_f32(t, v);
    memcpy(p, t, (size_t)n * sizeof t[0]);
}
RT_INLINE rt_vf vf_add(rt_vf a, rt_vf b) { return vaddq_f32(a, b); }
RT_INLINE rt_vf vf_sub(rt_vf a, rt_vf b) { return vsubq_f32(a, b); }
RT_INLINE rt_vf vf_mul(rt_vf a, rt_vf b) { return vmulq_f32(a, b); }
RT_INLINE rt_vf vf_div(rt_vf a, rt_vf b) { return vdivq_f32(a, b); }
RT_INLINE rt_vf vf_fma(rt_vf a, rt_vf b, rt_vf c) { return vfmaq_f32(c, a, b); }
RT_INLINE rt_vf vf_max(rt_vf a, rt_vf b) { return vmaxq_f32(a, b); }
RT_INLINE rt_vf vf_min(rt_vf a, rt_vf b) { return vminq_f32(a, b); }
RT_INLINE rt_vf vf_abs(rt_vf a) { return vabsq_f32(a); }
RT_INLINE float vf_hsum(rt_vf v) { return vaddvq_f32(v); }
RT_INLINE float vf_hmax(rt_vf v) { return vmaxvq_f32(v); }
RT_INLINE rt_vf vf_round(rt_vf v) { return vrndnq_f32(v); }
RT_INLINE rt_vf vf_trunc(rt_vf v) { return vrndq_f32(v); }
RT_INLINE rt_vm vf_gt(rt_vf a, rt_vf b) { return vcgtq_f32(a, b); }
RT_INLINE rt_vm vf_isnan(rt_vf a) { return vmvnq_u32(vceqq_f32(a, a)); }
RT_INLINE rt_vf vf_select(rt_vm m, rt_vf yes, rt_vf no) { return vbslq_f32(m, yes, no); }
RT_INLINE rt_vi vi_set1(int32_t x) { return vdupq_n_s32(x); }
RT_INLINE rt_vi vi_cvt(rt_vf v) { return vcvtnq_s32_f32(v); }
RT_INLINE rt_vi vi_cvtt(rt_vf v) { return vcvtq_s32_f32(v); }
RT_INLINE rt_vf vf_from_vi(rt_vi v) { return vcvtq_f32_s32(v); }
RT_INLINE rt_vi vi_add(rt_vi a, rt_vi b) { return vaddq_s32(a, b); }
RT_INLINE rt_vi vi_and(rt_vi a, rt_vi b) { return vandq_s32(a, b); }
RT_INLINE rt_vi vi_or(rt_vi a, rt_vi b) { return vorrq_s32(a, b); }
/* NEON shifts take a vector count: a constant n folds into the immediate form. */
RT_INLINE rt_vi vi_slli(rt_vi a, int n) { return vshlq_s32(a, vdupq_n_s32(n)); }
RT_INLINE rt_vi vi_srli(rt_vi a, int n) {
    return vreinterpretq_s32_u32(vshlq_u32(vreinterpretq_u32_s32(a), vdupq_n_s32(-n)));
}
RT_INLINE rt_vi vf_bits(rt_vf v) { return vreinterpretq_s32_f32(v); }
RT_INLINE rt_vf vf_from_bits(rt_vi v) { return vreinterpretq_f32_s32(v); }
RT_INLINE rt_vm vi_gt(rt_vi a, rt_vi b) { return vcgtq_s32(a, b); }
RT_INLINE rt_vi vi_select(rt_vm m, rt_vi yes, rt_vi no) { return vbslq_s32(m, yes, no); }
RT_INLINE rt_vi vi_load_u16(const uint16_t *p) { return vreinterpretq_s32_u32(vmovl_u16(vld1_u16(p))); }
RT_INLINE void vi_store_u16(uint16_t *p, rt_vi v) { vst1_u16(p, vmovn_u32(vreinterpretq_u32_s32(v))); }
RT_INLINE rt_vf vf_load_f16(const uint16_t *p) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p))); }
/* vcvt_f16_f32 rounds to nearest even, as the reference does. */
RT_INLINE rt_vi vf_to_f16_bits(rt_vf v) {
    return vreinterpretq_s32_u32(vmovl_u16(vreinterpret_u16_f16(vcvt_f16_f32(v))));
}
RT_INLINE rt_vf vf_swap_pairs(rt_vf v) { return vrev64q_f32(v); }
RT_INLINE rt_vm vm_n(int64_t n) {
    static const uint32_t idx[4] = {0, 1, 2, 3};
    return vcltq_u32(vld1q_u32(idx), vdupq_n_u32((uint32_t)n));
}
RT_INLINE uint32x2_t rt_neon_load4(const void *p) {
    uint32_t u;
    memcpy(&u, p, sizeof u);
    return vdup_n_u32(u);
}
RT_INLINE rt_vi vi_load_i8(const int8_t *p) {
    return vmovl_s16(vget_low_s16(vmovl_s8(vreinterpret_s8_u32(rt_neon_load4(p)))));
}
RT_INLINE rt_vi vi_load_u8(const uint8_t *p) {
    return vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(vmovl_u8(vreinterpret_u8_u32(rt_neon_load4(p))))));
}
RT_INLINE void vi_store_i8(int8_t *p, rt_vi v) {
    const int8x8_t b = vmovn_s16(vcombine_s16(vmovn_s32(v), vdup_n_s16(0)));
    const uint32_t u = vget_lane_u32(vreinterpret_u32_s8(b), 0);
    memcpy(p, &u, sizeof u);
}

RT_INLINE void vf_transpose(rt_vf r[4]) {
    const float32x4x2_t a = vtrnq_f32(r[0], r[1]), b = vtrnq_f32(r[2], r[3]);
    r[0] = vcombine_f32(vget_low_f32(a.val[0]), vget_low_f32(b.val[0]));
    r[1] = vcombine_f32(vget_low_f32(a.val[1]), vget_low_f32(b.val[1]));
    r[2] = vcombine_f32(vget_high_f32(a.val[0]), vget_high_f32(b.val[0]));
    r[3] = vcombine_f32(vget_high_f32(a.val[1]), vget_high_f32(b.val[1]));
}

/* Lane i: r[i]'s lanes summed. */
RT_INLINE rt_vf vf_sums(const rt_vf r[4]) {
    return vpaddq_f32(vpaddq_f32(r[0], r[1]), vpaddq_f32(r[2], r[3]));
}

//===--- scalar: one lane ---===//
#else
#include "../../abi/rt_quant.h"

#define RT_W 1
typedef float rt_vf;
typedef int32_t rt_vi;
typedef bool rt_vm;

RT_INLINE uint32_t rt_bits_u(float f) { uint32_t u; memcpy(&u, &f, sizeof u); return u; }
RT_INLINE float rt_u_bits(uint32_t u) { float f; memcpy(&f, &u, sizeof f); return f; }

RT_INLINE rt_vf vf_zero(void) { return 0.0f; }
RT_INLINE rt_vf vf_set1(float x) { return x; }
RT_INLINE rt_vf vf_load(const float *p) { return *p; }
RT_INLINE void vf_store(float *p, rt_vf v) { *p = v; }
RT_INLINE rt_vf vf_load_part(const float *p, int64_t n) { return n > 0 ? *p : 0.0f; }
RT_INLINE void vf_store_part(float *p, rt_vf v, int64_t n) { if (n > 0) *p = v; }
RT_INLINE rt_vf vf_add(rt_vf a, rt_vf b) { return a + b; }
RT_INLINE rt_vf vf_sub(rt_vf a, rt_vf b) { return a - b; }
RT_INLINE rt_vf vf_mul(rt_vf a, rt_vf b) { return a * b; }
RT_INLINE rt_vf vf_div(rt_vf a, rt_vf b) { return a / b; }
RT_INLINE rt_vf vf_fma(rt_vf a, rt_vf b, rt_vf c) { return __builtin_fmaf(a, b, c); }
RT_INLINE rt_vf vf_max(rt_vf a, rt_vf b) { return a > b ? a : b; }
RT_INLINE rt_vf vf_min(rt_vf a, rt_vf b) { return a < b ? a : b; }
RT_INLINE rt_vf vf_abs(rt_vf a) { return __builtin_fabsf(a); }
RT_INLINE float vf_hsum(rt_vf v) { return v; }
RT_INLINE float vf_hmax(rt_vf v) { return v; }
RT_INLINE rt_vf vf_round(rt_vf v) { return __builtin_nearbyintf(v); }
RT_INLINE rt_vf vf_trunc(rt_vf v) { return __builtin_truncf(v); }
RT_INLINE rt_vm vf_gt(rt_vf a, rt_vf b) { return a > b; }
RT_INLINE rt_vm vf_isnan(rt_vf a) { return a != a; }
RT_INLINE rt_vf vf_select(rt_vm m, rt_vf yes, rt_vf no) { return m ? yes : no; }
RT_INLINE rt_vi vi_set1(int32_t x) { return x; }
RT_INLINE rt_vi vi_cvt(rt_vf v) { return (int32_t)__builtin_nearbyintf(v); }
RT_INLINE rt_vi vi_cvtt(rt_vf v) { return (int32_t)v; }
RT_INLINE rt_vf vf_from_vi(rt_vi v) { return (float)v; }
RT_INLINE rt_vi vi_add(rt_vi a, rt_vi b) { return (int32_t)((uint32_t)a + (uint32_t)b); }
RT_INLINE rt_vi vi_and(rt_vi a, rt_vi b) { return a & b; }
RT_INLINE rt_vi vi_or(rt_vi a, rt_vi b) { return a | b; }
RT_INLINE rt_vi vi_slli(rt_vi a, int n) { return (int32_t)((uint32_t)a << n); }
RT_INLINE rt_vi vi_srli(rt_vi a, int n) { return (int32_t)((uint32_t)a >> n); }
RT_INLINE rt_vi vf_bits(rt_vf v) { return (int32_t)rt_bits_u(v); }
RT_INLINE rt_vf vf_from_bits(rt_vi v) { return rt_u_bits((uint32_t)v); }
RT_INLINE rt_vm vi_gt(rt_vi a, rt_vi b) { return a > b; }
RT_INLINE rt_vi vi_select(rt_vm m, rt_vi yes, rt_vi no) { return m ? yes : no; }
RT_INLINE rt_vi vi_load_u16(const uint16_t *p) { return *p; }
RT_INLINE void vi_store_u16(uint16_t *p, rt_vi v) { *p = (uint16_t)v; }
RT_INLINE rt_vf vf_load_f16(const uint16_t *p) { return rt_fp16_to_fp32(*p); }
RT_INLINE rt_vf vf_swap_pairs(rt_vf v) { return v; } /* unused at one lane */
RT_INLINE rt_vm vm_n(int64_t n) { return n > 0; }
RT_INLINE rt_vi vi_load_i8(const int8_t *p) { return *p; }
RT_INLINE rt_vi vi_load_u8(const uint8_t *p) { return *p; }
RT_INLINE void vi_store_i8(int8_t *p, rt_vi v) { *p = (int8_t)v; }
RT_INLINE void vf_transpose(rt_vf r[1]) { (void)r; }
RT_INLINE rt_vf vf_sums(const rt_vf r[1]) { return r[0]; }

#endif

//===--- built on the above, for every variant ---===//

/* An RT_W-lane block of a row of n elements from i on, zero past n. */
RT_INLINE rt_vf vf_load_n(const float *p, int64_t i, int64_t n) {
    return n - i >= RT_W ? vf_load(p + i) : vf_load_part(p + i, n - i);
}
RT_INLINE void vf_store_n(float *p, int64_t i, int64_t n, rt_vf v) {
    if (n - i >= RT_W)
        vf_store(p + i, v);
    else
        vf_store_part(p + i, v, n - i);
}

/* BF16 is the high half of a binary32. */
RT_INLINE rt_vf vf_load_bf16(const uint16_t *p) { return vf_from_bits(vi_slli(vi_load_u16(p), 16)); }

/* Round to nearest even on the bits, NaN made quiet (rt_fp32_to_bf16). */
RT_INLINE rt_vi vf_to_bf16_bits(rt_vf v) {
    const rt_vi u = vf_bits(v);
    const rt_vi odd = vi_and(vi_srli(u, 16), vi_set1(1));
    const rt_vi r = vi_srli(vi_add(vi_add(u, vi_set1(0x7fff)), odd), 16);
    const rt_vi nan = vi_or(vi_srli(u, 16), vi_set1(0x40));
    return vi_select(vf_isnan(v), nan, r);
}

#if !defined(RT_SIMD_SCALAR)
/* F16 with the reference's NaN: sign, all-ones exponent and only the top
 * mantissa bit (hardware keeps the payload). */
RT_INLINE rt_vi vf_to_f16_bits_ref(rt_vf v) {
    const rt_vi h = vf_to_f16_bits(v);
    const rt_vi nan = vi_or(vi_and(vi_srli(vf_bits(v), 16), vi_set1(0x8000)), vi_set1(0x7e00));
    return vi_select(vf_isnan(v), nan, h);
}
#endif

/* 2^n for an integral n in [-126, 127], from the exponent bits. */
RT_INLINE rt_vf vf_pow2i(rt_vf n) {
    return vf_from_bits(vi_slli(vi_add(vi_cvt(n), vi_set1(127)), 23));
}

/* e * 2^n for e in [0.5, 2] and an integral n in [-126, 128]: one scalef
 * on AVX-512; elsewhere 2^n in two halves so that n = 128 stays finite
 * until the last product, which overflows to inf as it must. */
RT_INLINE rt_vf vf_ldexp(rt_vf e, rt_vf n) {
#if defined(RT_SIMD_AVX512)
    return _mm512_scalef_ps(e, n);
#else
    const rt_vf n1 = vf_trunc(vf_mul(n, vf_set1(0.5f))), n2 = vf_sub(n, n1);
    return vf_mul(vf_mul(e, vf_pow2i(n1)), vf_pow2i(n2));
#endif
}

/* exp(x) to about 1 ulp (Cody-Waite reduction by ln 2, Cephes' expf
 * polynomial). x is clamped to [-87.34, 89]: below, where the true values
 * are subnormal, the result is 0; above 88.72 the scaling overflows to
 * +inf. NaN stays NaN. */
RT_INLINE rt_vf vf_exp(rt_vf x) {
    const rt_vf lo = vf_set1(-87.33654f);
    const rt_vm small = vf_gt(lo, x), nan = vf_isnan(x);
    const rt_vf xc = vf_max(vf_min(x, vf_set1(89.0f)), lo);
    const rt_vf n = vf_round(vf_mul(xc, vf_set1(1.44269504088896341f)));
    rt_vf r = vf_fma(n, vf_set1(-0.693359375f), xc);
    r = vf_fma(n, vf_set1(2.12194440e-4f), r);
    rt_vf p = vf_set1(1.9875691500e-4f);
    p = vf_fma(p, r, vf_set1(1.3981999507e-3f));
    p = vf_fma(p, r, vf_set1(8.3334519073e-3f));
    p = vf_fma(p, r, vf_set1(4.1665795894e-2f));
    p = vf_fma(p, r, vf_set1(1.6666665459e-1f));
    p = vf_fma(p, r, vf_set1(5.0000001201e-1f));
    const rt_vf e = vf_add(vf_fma(p, vf_mul(r, r), r), vf_set1(1.0f));
    const rt_vf y = vf_select(small, vf_zero(), vf_ldexp(e, n));
    return vf_select(nan, x, y);
}

#endif /* RT_SIMD_ON */

#endif /* RT_CPU_SIMD_H */
