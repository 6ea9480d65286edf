// SPDX-License-Identifier: MIT
// mul_mat_sg.comp: mat-vec (n <= 8) reduced with subgroupAdd, one row per
// subgroup at a time (mul_mat.glsl), for devices with subgroup arithmetic
// in compute shaders.
#version 450
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#define RT_MV_SUBGROUP 1
#include "mul_mat.glsl"
