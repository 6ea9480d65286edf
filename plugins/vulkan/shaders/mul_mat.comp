// SPDX-License-Identifier: MIT
// mul_mat.comp: mat-vec (n <= 8) for any device, the rows reduced through
// shared memory (mul_mat.glsl). Devices with subgroup arithmetic get
// mul_mat_sg.comp instead.
#version 450
#include "mul_mat.glsl"
