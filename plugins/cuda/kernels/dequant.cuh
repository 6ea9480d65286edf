/* SPDX-License-Identifier: MIT */
/* dequant.cuh: the one decoder of every quantised type the CUDA kernels
 * read: rt_cu_dq<TYPE>(block, j) is element j of one block, a device
 * function per type (GGUF's layouts, in bytes; d and m binary16, qs the
 * low bits, qh the high bits, sc the scales):
 *
 *   Q4_0   18  d, qs[16]                 j: nibble j/16 of qs[j%16]; d*(q-8)
 *   Q4_1   20  d, m, qs[16]              d*q + m
 *   Q5_0   22  d, qh[4], qs[16]          q |= bit j of qh << 4; d*(q-16)
 *   Q5_1   24  d, m, qh[4], qs[16]       d*q + m
 *   Q8_0   34  d, qs[32] int8            d*q
 *   IQ4_NL 18  d, qs[16]                 d*KV[q], a fixed non-linear table
 *   Q2_K   84  sc[16], qs[64], d, dmin   scale and min per 16 (4 bits each)
 *   Q3_K  110  hm[32], qs[64], sc[12], d 6-bit signed scales per 16
 *   Q4_K  144  d, dmin, sc[12], qs[128]  6-bit scale and min per 32
 *   Q5_K  176  d, dmin, sc[12], qh[32], qs[128]
 *   Q6_K  210  ql[128], qh[64], sc[16] int8, d
 *   IQ4_XS 136 d, sh(u16), sl[4], qs[128]  6-bit scales per 32, KV[q]
 *
 * Kernels that read a run of elements of one block call the function for
 * each with the block pointer fixed; the scale arithmetic is then common
 * to the unrolled calls and the compiler computes it once. Blocks are
 * 2-byte aligned (every size is even), so 16-bit loads are the widest.
 * The decoders are host functions too, so that tests/test-cuda-dequant.cu
 * checks them against abi/rt_quant.h on a machine without a GPU. */
#ifndef RT_CU_DEQUANT_CUH
#define RT_CU_DEQUANT_CUH

#include <cuda_fp16.h>
#include <stdint.h>

#include "kernels.h"

__host__ __device__ __forceinline__ float rt_cu_dq_half(const uint8_t *b, int off) {
    return __half2float(__ushort_as_half(*(const uint16_t *)(b + off)));
}

__host__ __device__ __forceinline__ uint32_t rt_cu_dq_u16(const uint8_t *b, int off) {
    return *(const uint16_t *)(b + off);
}

/* Nibble j / 16 of byte j % 16 of 16 bytes at qs (the 32-element types). */
__host__ __device__ __forceinline__ int rt_cu_dq_nib32(const uint8_t *qs, int j) {
    return (qs[j % 16] >> (4 * (j / 16))) & 15;
}

/* The non-linear 4-bit code book of IQ4_NL and IQ4_XS: in constant memory
 * for kernels, an ordinary array for host code. */
#define RT_CU_KV_IQ4 { -127.0f, -104.0f, -83.0f, -65.0f, -49.0f, -35.0f, -22.0f, -10.0f, \
                       1.0f, 13.0f, 25.0f, 38.0f, 53.0f, 69.0f, 89.0f, 113.0f }
static __constant__ const float rt_cu_kv_iq4_dev[16] = RT_CU_KV_IQ4;
static const float rt_cu_kv_iq4_host[16] = RT_CU_KV_IQ4;
#ifdef __CUDA_ARCH__
#define rt_cu_kv_iq4 rt_cu_kv_iq4_dev
#else
#define rt_cu_kv_iq4 rt_cu_kv_iq4_host
#endif

/* 6-bit scale (x) and min (y) of sub-block j (0..7) of Q4_K/Q5_K, packed
 * in 12 bytes: j < 4 in the low 6 bits of bytes j and j+4, the others 4
 * bits from byte j+4 and 2 from the top of bytes j-4 and j. */
__host__ __device__ __forceinline__ float2 rt_cu_dq_scale_min_k4(const uint8_t *sc, int j) {
    if (j < 4) return make_float2((float)(sc[j] & 63), (float)(sc[j + 4] & 63));
    return make_float2((float)((sc[j + 4] & 15) | ((sc[j - 4] >> 6) << 4)),
                       (float)((sc[j + 4] >> 4) | ((sc[j] >> 6) << 4)));
}

/* 6-bit scale of group g (0..15) of Q3_K, biased by 32: low 4 bits in the
 * nibbles of bytes 0-7, high 2 in the crumbs of bytes 8-11. */
__host__ __device__ __forceinline__ float rt_cu_dq_scale_q3_k(const uint8_t *sc, int g) {
    const int lo = g < 8 ? sc[g] & 15 : sc[g - 8] >> 4;
    const int hi = (sc[8 + (g & 3)] >> (2 * (g >> 2))) & 3;
    return (float)((lo | (hi << 4)) - 32);
}

template <int TYPE>
__host__ __device__ __forceinline__ float rt_cu_dq(const uint8_t *b, int j) {
    if constexpr (TYPE == RT_TYPE_Q4_0) {
        return rt_cu_dq_half(b, 0) * (float)(rt_cu_dq_nib32(b + 2, j) - 8);
    } else if constexpr (TYPE == RT_TYPE_Q4_1) {
        return rt_cu_dq_half(b, 0) * (float)rt_cu_dq_nib32(b + 4, j) + rt_cu_dq_half(b, 2);
    } else if constexpr (TYPE == RT_TYPE_Q5_0 || TYPE == RT_TYPE_Q5_1) {
        const int o = TYPE == RT_TYPE_Q5_1 ? 4 : 2; /* qh follows d (and m) */
        const uint32_t qh = rt_cu_dq_u16(b, o) | (rt_cu_dq_u16(b, o + 2) << 16);
        const int q = rt_cu_dq_nib32(b + o + 4, j) | (int)(((qh >> j) & 1u) << 4);
        if constexpr (TYPE == RT_TYPE_Q5_0) return rt_cu_dq_half(b, 0) * (float)(q - 16);
        else return rt_cu_dq_half(b, 0) * (float)q + rt_cu_dq_half(b, 2);
    } else if constexpr (TYPE == RT_TYPE_Q8_0) {
        return rt_cu_dq_half(b, 0) * (float)(int8_t)b[2 + j];
    } else if constexpr (TYPE == RT_TYPE_IQ4_NL) {
        return rt_cu_dq_half(b, 0) * rt_cu_kv_iq4[rt_cu_dq_nib32(b + 2, j)];
    } else if constexpr (TYPE == RT_TYPE_Q2_K) {
        const int sc = b[j / 16], shift = 2 * ((j % 128) / 32);
        const int q = (b[16 + 32 * (j / 128) + j % 32] >> shift) & 3;
        return rt_cu_dq_half(b, 80) * (float)(sc & 15) * (float)q - rt_cu_dq_half(b, 82) * (float)(sc >> 4);
    } else if constexpr (TYPE == RT_TYPE_Q3_K) {
        const int h = j / 128, k = (j % 128) / 32, l = j % 32;
        const int q = (b[32 + 32 * h + l] >> (2 * k)) & 3;
        const int hb = (b[l] >> (4 * h + k)) & 1;
        return rt_cu_dq_half(b, 108) * rt_cu_dq_scale_q3_k(b + 96, j / 16) * (float)(q - (hb ? 0 : 4));
    } else if constexpr (TYPE == RT_TYPE_Q4_K || TYPE == RT_TYPE_Q5_K) {
        const int is = j / 32, qs = TYPE == RT_TYPE_Q5_K ? 48 : 16;
        int q = (b[qs + 32 * (j / 64) + j % 32] >> (4 * (is & 1))) & 15;
        if constexpr (TYPE == RT_TYPE_Q5_K) q |= ((b[16 + j % 32] >> is) & 1) << 4;
        const float2 sm = rt_cu_dq_scale_min_k4(b + 4, is);
        return rt_cu_dq_half(b, 0) * sm.x * (float)q - rt_cu_dq_half(b, 2) * sm.y;
    } else if constexpr (TYPE == RT_TYPE_Q6_K) {
        const int h = j / 128, k = (j % 128) / 32, l = j % 32;
        const int lo = (b[64 * h + 32 * (k & 1) + l] >> (4 * (k >> 1))) & 15;
        const int hi = (b[128 + 32 * h + l] >> (2 * k)) & 3;
        return rt_cu_dq_half(b, 208) * (float)(int8_t)b[192 + j / 16] * (float)((lo | (hi << 4)) - 32);
    } else { /* IQ4_XS */
        const int ib = j / 32;
        const int ls = ((b[4 + ib / 2] >> (4 * (ib & 1))) & 15) |
                       (int)(((rt_cu_dq_u16(b, 2) >> (2 * ib)) & 3u) << 4);
        const int q = (b[8 + 16 * ib + j % 16] >> (4 * ((j % 32) / 16))) & 15;
        return rt_cu_dq_half(b, 0) * (float)(ls - 32) * rt_cu_kv_iq4[q];
    }
}

/* Element i0 of a row of quantised type at row (blocks contiguous). */
__host__ __device__ __forceinline__ float rt_cu_dq_row(int32_t type, const char *row, int64_t i0) {
    const int qk = rt_cu_block_elems(type);
    const uint8_t *b = (const uint8_t *)row + (i0 / qk) * rt_cu_block_bytes(type);
    const int j = (int)(i0 % qk);
    switch (type) {
    case RT_TYPE_Q4_0: return rt_cu_dq<RT_TYPE_Q4_0>(b, j);
    case RT_TYPE_Q4_1: return rt_cu_dq<RT_TYPE_Q4_1>(b, j);
    case RT_TYPE_Q5_0: return rt_cu_dq<RT_TYPE_Q5_0>(b, j);
    case RT_TYPE_Q5_1: return rt_cu_dq<RT_TYPE_Q5_1>(b, j);
    case RT_TYPE_Q8_0: return rt_cu_dq<RT_TYPE_Q8_0>(b, j);
    case RT_TYPE_IQ4_NL: return rt_cu_dq<RT_TYPE_IQ4_NL>(b, j);
    case RT_TYPE_Q2_K: return rt_cu_dq<RT_TYPE_Q2_K>(b, j);
    case RT_TYPE_Q3_K: return rt_cu_dq<RT_TYPE_Q3_K>(b, j);
    case RT_TYPE_Q4_K: return rt_cu_dq<RT_TYPE_Q4_K>(b, j);
    case RT_TYPE_Q5_K: return rt_cu_dq<RT_TYPE_Q5_K>(b, j);
    case RT_TYPE_Q6_K: return rt_cu_dq<RT_TYPE_Q6_K>(b, j);
    case RT_TYPE_IQ4_XS: return rt_cu_dq<RT_TYPE_IQ4_XS>(b, j);
    default: return 0.0f;
    }
}

#endif /* RT_CU_DEQUANT_CUH */
