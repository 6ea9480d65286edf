/* SPDX-License-Identifier: MIT */
/* ops_mul_mat.c: MUL_MAT, c[m, n] = dot(row m of a, row n of b) for every
 * matrix of b's dims 2 and 3 (c = b . a^T), a broadcast over them as ggml
 * does (b's matrix i2 reads a's matrix i2 / (b2 / a2)). The output is cut
 * into tiles of RT_CPU_MM_ROWS rows of a by RT_CPU_MM_COLS rows of b, and
 * each thread takes a contiguous run of tiles, ordered so that consecutive
 * tiles share their rows of a: those are converted to F32 (or dequantised)
 * once into the thread's scratch and dotted with every b row of the run.
 * F32 rows of a are used in place. Accumulation is in F32. */
#include "cpu.h"

#define RT_CPU_MM_ROWS 16 /* rows of a per tile, converted together */
#define RT_CPU_MM_COLS 64 /* rows of b per tile */

bool rt_cpu_supports_mul_mat(const rt_tensor_t *node) {
    const rt_tensor_t *a = node->src[0], *b = node->src[1];
    if (!a || !b || node->type != RT_TYPE_F32 || b->type != RT_TYPE_F32) return false;
    const rt_cpu_type_t *ta = rt_cpu_type(a->type);
    if (!ta->to_f32 || a->nb[0] != ta->size || a->ne[0] % ta->blck != 0) return false;
    if (b->nb[0] != sizeof(float) || a->ne[0] != b->ne[0]) return false;
    if (a->ne[2] <= 0 || a->ne[3] <= 0 || b->ne[2] % a->ne[2] || b->ne[3] % a->ne[3]) return false;
    return node->ne[0] == a->ne[1] && node->ne[1] == b->ne[1] && node->ne[2] == b->ne[2] &&
           node->ne[3] == b->ne[3];
}

size_t rt_cpu_wsize_mul_mat(const rt_tensor_t *node) {
    const rt_tensor_t *a = node->src[0];
    return a->type == RT_TYPE_F32 ? 0 : rt_cpu_wsize_rows(1, RT_CPU_MM_ROWS * a->ne[0]);
}

/* Sixteen independent sums so the compiler can keep them in vector lanes
 * (float addition is not associative, so it will not reorder one sum). */
static float rt_cpu_dot(const float *x, const float *y, int64_t n) {
    float acc[16] = { 0 };
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
#pragma GCC unroll 16
        for (int k = 0; k < 16; k++) acc[k] += x[i + k] * y[i + k];
    }
    float s = 0.0f;
    for (; i < n; i++) s += x[i] * y[i];
    for (int k = 0; k < 16; k++) s += acc[k];
    return s;
}

/* One tile's position: which matrix, which rows of a, which rows of b. */
typedef struct rt_cpu_mm_tile {
    int64_t i2, i3;         /* b's (and c's) matrix */
    int64_t m0, m1;         /* rows of a */
    int64_t n0, n1;         /* rows of b */
    int64_t a_key;          /* equal for tiles that share rows of a */
} rt_cpu_mm_tile_t;

static rt_cpu_mm_tile_t rt_cpu_mm_tile(const rt_tensor_t *a, const rt_tensor_t *b, int64_t t) {
    const int64_t n_mt = (a->ne[1] + RT_CPU_MM_ROWS - 1) / RT_CPU_MM_ROWS;
    const int64_t n_nt = (b->ne[1] + RT_CPU_MM_COLS - 1) / RT_CPU_MM_COLS;
    rt_cpu_mm_tile_t tile;
    const int64_t nt = t % n_nt;
    tile.a_key = t / n_nt;
    const int64_t mt = tile.a_key % n_mt, batch = tile.a_key / n_mt;
    tile.i2 = batch % b->ne[2];
    tile.i3 = batch / b->ne[2];
    tile.m0 = mt * RT_CPU_MM_ROWS;
    tile.m1 = tile.m0 + RT_CPU_MM_ROWS < a->ne[1] ? tile.m0 + RT_CPU_MM_ROWS : a->ne[1];
    tile.n0 = nt * RT_CPU_MM_COLS;
    tile.n1 = tile.n0 + RT_CPU_MM_COLS < b->ne[1] ? tile.n0 + RT_CPU_MM_COLS : b->ne[1];
    return tile;
}

/* Points rows[] at the tile's rows of a as F32: in place, or converted into buf. */
static void rt_cpu_mm_load_a(const rt_tensor_t *a, const rt_tensor_t *b,
                             const rt_cpu_mm_tile_t *tile, float *buf, const float **rows) {
    const int64_t K = a->ne[0];
    const int64_t i2 = tile->i2 / (b->ne[2] / a->ne[2]), i3 = tile->i3 / (b->ne[3] / a->ne[3]);
    const rt_cpu_type_t *ta = rt_cpu_type(a->type);
    for (int64_t m = tile->m0; m < tile->m1; m++) {
        const void *row = rt_cpu_row(a, m, i2, i3);
        if (a->type == RT_TYPE_F32) {
            rows[m - tile->m0] = row;
        } else {
            float *dst = buf + (m - tile->m0) * K;
            ta->to_f32(row, dst, K);
            rows[m - tile->m0] = dst;
        }
    }
}

static void rt_cpu_mm_tile_compute(const rt_tensor_t *a, const rt_tensor_t *b, rt_tensor_t *c,
                                   const rt_cpu_mm_tile_t *tile, const float *const *rows) {
    const int64_t K = a->ne[0];
    for (int64_t n = tile->n0; n < tile->n1; n++) {
        const float *y = rt_cpu_row(b, n, tile->i2, tile->i3);
        char *out = rt_cpu_row(c, n, tile->i2, tile->i3);
        for (int64_t m = tile->m0; m < tile->m1; m++)
            *(float *)(out + m * c->nb[0]) = rt_cpu_dot(rows[m - tile->m0], y, K);
    }
}

void rt_cpu_compute_mul_mat(const rt_cpu_params_t *p, rt_tensor_t *dst) {
    const rt_tensor_t *a = dst->src[0], *b = dst->src[1];
    const int64_t n_tiles = ((a->ne[1] + RT_CPU_MM_ROWS - 1) / RT_CPU_MM_ROWS) *
                            ((b->ne[1] + RT_CPU_MM_COLS - 1) / RT_CPU_MM_COLS) * b->ne[2] *
                            b->ne[3];
    int64_t begin, end;
    rt_cpu_split(n_tiles, p->ith, p->nth, &begin, &end);
    float *buf = a->type == RT_TYPE_F32 ? NULL : rt_cpu_scratch(p, 0, RT_CPU_MM_ROWS * a->ne[0]);
    const float *rows[RT_CPU_MM_ROWS];
    int64_t loaded = -1;
    for (int64_t t = begin; t < end; t++) {
        const rt_cpu_mm_tile_t tile = rt_cpu_mm_tile(a, b, t);
        if (tile.a_key != loaded) {
            rt_cpu_mm_load_a(a, b, &tile, buf, rows);
            loaded = tile.a_key;
        }
        rt_cpu_mm_tile_compute(a, b, dst, &tile, rows);
    }
}
