// SPDX-License-Identifier: MIT
// common.glsl: what every rt compute shader includes. The specialisation
// constants every pipeline gets (workgroup size, op, the rt_type_t of each
// binding, one extra), the four storage buffers (bindings 0-2 sources, 3 the
// destination), each seen through 32-bit float, 16-bit and 32-bit int views
// (and 16-byte vec4/uvec4 ones for wide loads) so one module serves every
// element type, typed loads and stores at byte
// offsets, the block sizes of every type (dequant.glsl decodes the
// quantised ones), and the flat index of a thread across a 3-D dispatch.
//
// Addresses are bytes throughout: push constants carry ne[] in elements and
// nb[] and offsets in bytes, so any strides work as on the CPU. The plugin
// checks that every offset and stride is a multiple of the element's size.
#extension GL_EXT_shader_16bit_storage : require

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint OP = 0;
layout(constant_id = 2) const uint TYPE0 = 0;
layout(constant_id = 3) const uint TYPE1 = 0;
layout(constant_id = 4) const uint TYPE2 = 0;
layout(constant_id = 5) const uint TYPE3 = 0;
layout(constant_id = 6) const uint EXTRA = 0;
// Rows of the output one workgroup computes (mul_mat), chosen per device.
layout(constant_id = 7) const uint ROWS = 1;

// rt_type_t values (abi/rt_tensor.h, GGUF's ids).
#define T_F32 0u
#define T_F16 1u
#define T_Q4_0 2u
#define T_Q4_1 3u
#define T_Q5_0 6u
#define T_Q5_1 7u
#define T_Q8_0 8u
#define T_Q2_K 10u
#define T_Q3_K 11u
#define T_Q4_K 12u
#define T_Q5_K 13u
#define T_Q6_K 14u
#define T_IQ4_NL 20u
#define T_IQ4_XS 23u
#define T_I32 26u
#define T_BF16 30u

// Bytes per block and elements per block of a type (1 element for the
// float and integer types).
uint type_bytes(uint t) {
    switch (t) {
    case T_Q4_0: case T_IQ4_NL: return 18u;
    case T_Q4_1: return 20u;
    case T_Q5_0: return 22u;
    case T_Q5_1: return 24u;
    case T_Q8_0: return 34u;
    case T_Q2_K: return 84u;
    case T_Q3_K: return 110u;
    case T_Q4_K: return 144u;
    case T_Q5_K: return 176u;
    case T_Q6_K: return 210u;
    case T_IQ4_XS: return 136u;
    case T_F16: case T_BF16: return 2u;
    default: return 4u;
    }
}
uint type_block(uint t) {
    switch (t) {
    case T_Q4_0: case T_Q4_1: case T_Q5_0: case T_Q5_1: case T_Q8_0: case T_IQ4_NL: return 32u;
    case T_Q2_K: case T_Q3_K: case T_Q4_K: case T_Q5_K: case T_Q6_K: case T_IQ4_XS: return 256u;
    default: return 1u;
    }
}
// The same as expressions of a specialisation constant (a global const may
// not call a function): a super-block of 256 ("K-quant" layouts), any block.
#define TYPE_IS_K(t) ((t) == T_Q2_K || (t) == T_Q3_K || (t) == T_Q4_K || (t) == T_Q5_K || \
                      (t) == T_Q6_K || (t) == T_IQ4_XS)
#define TYPE_IS_QUANT(t) (TYPE_IS_K(t) || (t) == T_Q4_0 || (t) == T_Q4_1 || (t) == T_Q5_0 || \
                          (t) == T_Q5_1 || (t) == T_Q8_0 || (t) == T_IQ4_NL)

// float -> binary16 bits, rounding to nearest even in integer arithmetic
// (a conversion instruction may round otherwise), as abi/rt_quant.h does.
uint f32_to_f16(float x) {
    const uint u = floatBitsToUint(x), sign = (u >> 16) & 0x8000u, au = u & 0x7fffffffu;
    if (au >= 0x7f800000u) return sign | 0x7c00u | (au > 0x7f800000u ? 0x200u : 0u);
    if (au >= 0x477ff000u) return sign | 0x7c00u; // rounds past 65504
    if (au >= 0x38800000u) return sign | ((au - 0x38000000u + 0xfffu + ((au >> 13) & 1u)) >> 13);
    const uint e = au >> 23; // below the smallest normal half: a subnormal or zero
    if (e < 102u) return sign;
    const uint m = (au & 0x7fffffu) | 0x800000u, shift = 126u - e;
    const uint rem = m & ((1u << shift) - 1u), half_ulp = 1u << (shift - 1u);
    uint q = m >> shift;
    if (rem > half_ulp || (rem == half_ulp && (q & 1u) != 0u)) q++;
    return sign | q;
}

// float -> bfloat16 bits, rounding to nearest even (quiet NaN kept).
uint f32_to_bf16(float x) {
    uint u = floatBitsToUint(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (u >> 16) | 0x40u;
    return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
}

// One binding: its typed views and accessors, named by the binding number.
#define RT_BINDING(n, TYPE)                                                          \
layout(binding = n) buffer Buf##n##F32 { float v[]; } b##n##_f32;                    \
layout(binding = n) buffer Buf##n##F16 { float16_t v[]; } b##n##_f16;                \
layout(binding = n) buffer Buf##n##U16 { uint16_t v[]; } b##n##_u16;                 \
layout(binding = n) buffer Buf##n##I32 { int v[]; } b##n##_i32;                      \
layout(binding = n) buffer Buf##n##V4 { vec4 v[]; } b##n##_v4;                       \
layout(binding = n) buffer Buf##n##U4 { uvec4 v[]; } b##n##_u4;                      \
float load##n(uint off) {                                                            \
    if (TYPE == T_F16) return float(b##n##_f16.v[off >> 1]);                         \
    if (TYPE == T_BF16) return uintBitsToFloat(uint(b##n##_u16.v[off >> 1]) << 16);  \
    return b##n##_f32.v[off >> 2];                                                   \
}                                                                                    \
void store##n(uint off, float x) {                                                   \
    if (TYPE == T_F16) b##n##_u16.v[off >> 1] = uint16_t(f32_to_f16(x));             \
    else if (TYPE == T_BF16) b##n##_u16.v[off >> 1] = uint16_t(f32_to_bf16(x));      \
    else b##n##_f32.v[off >> 2] = x;                                                 \
}                                                                                    \
int loadi##n(uint off) { return b##n##_i32.v[off >> 2]; }                            \
void storei##n(uint off, int x) { b##n##_i32.v[off >> 2] = x; }                      \
void store16_##n(uint off, uint x) { b##n##_u16.v[off >> 1] = uint16_t(x); }         \
uint byte##n(uint off) { return (uint(b##n##_u16.v[off >> 1]) >> ((off & 1u) * 8u)) & 0xffu; } \
float half##n(uint off) { return unpackHalf2x16(uint(b##n##_u16.v[off >> 1])).x; }

RT_BINDING(0, TYPE0)
RT_BINDING(1, TYPE1)
RT_BINDING(2, TYPE2)
RT_BINDING(3, TYPE3)

// Workgroups are laid out over x, then y, then z (the plugin splits large
// counts across dimensions); this is the workgroup's index in that order.
uint group_flat() {
    return gl_WorkGroupID.x + gl_NumWorkGroups.x * (gl_WorkGroupID.y + gl_NumWorkGroups.y * gl_WorkGroupID.z);
}
uint thread_flat() { return group_flat() * gl_WorkGroupSize.x + gl_LocalInvocationID.x; }

// Index i of a tensor with ne, dimension 0 fastest.
uvec4 unravel(uint i, uvec4 ne) {
    uvec4 r;
    r.x = i % ne.x; i /= ne.x;
    r.y = i % ne.y; i /= ne.y;
    r.z = i % ne.z;
    r.w = i / ne.z;
    return r;
}
// Row r (over dims 1-3) of a tensor with ne, as a 4-index with i0 = 0.
uvec4 unravel_row(uint r, uvec4 ne) { return unravel(r * ne.x, ne); }
uint offset4(uvec4 i, uvec4 nb) { return i.x * nb.x + i.y * nb.y + i.z * nb.z + i.w * nb.w; }

#define NEG_INF uintBitsToFloat(0xff800000u)
