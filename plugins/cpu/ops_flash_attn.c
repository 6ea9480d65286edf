/* SPDX-License-Identifier: MIT */
/* ops_flash_attn.c: FLASH_ATTN (abi/rt_tensor.h), attention fused into one
 * op: the shapes, the strides and the threads; the arithmetic is the
 * kernel table's attend (kern_attn.c), which never materialises the N x
 * n_kv scores.
 *
 * A work item is one block of rows sharing a kv head g of a plane i3: the
 * H / H_kv query heads of g (grouped queries: every key and value row is
 * loaded once for all of them) for FA_QUERIES_PER_BLOCK / (H / H_kv)
 * consecutive queries (at least one), against one range of keys. When the
 * (plane, kv head, query block) items alone are too few to keep threads
 * busy (decode: N = 1, a few kv heads), the keys are split too, in chunks
 * of at least FA_MIN_CHUNK keys: phase 0 computes each chunk's partial
 * online softmax (m, l, acc) into the shared scratch, phase 1 merges the
 * partials of each output row exactly (rescaling each by e^(m_c - m)).
 * The split depends on the shapes and the mask, never on the thread count,
 * so the result does not either. Items are claimed dynamically: a causal
 * prompt's later query blocks see more keys. */
#include "cpu.h"

#include <math.h>
#include <string.h>

/* Rows (queries x grouped heads) per work item: enough for the score and
 * P V register tiles, few enough that a block's queries agree on which
 * mask tiles they skip. */
#define FA_QUERIES_PER_BLOCK 32
/* Work items worth splitting the keys for, and the fewest keys per chunk
 * (below it a chunk's merge costs more than its share saves). */
#define FA_MIN_ITEMS 32
#define FA_MIN_CHUNK 128

typedef struct fa_plan {
    int64_t D, Dv, N, H, H_kv, n3, n_kv;
    int64_t rpq;        /* query heads per kv head */
    int64_t nq, n_qb;   /* queries per block, blocks */
    int64_t R;          /* rows per block: nq * rpq */
    int64_t chunk, n_chunks; /* keys per chunk; chunks */
} fa_plan_t;

/* Keys a decode tile spans (kern.h): chunks are whole spans. */
#define FA_SPAN RT_CPU_FA_NARROW_TILE
/* Queries per node up to which a plan reads the mask (fa_queries_agree). */
#define FA_AGREE_MAX_N 64

/* Whether mask row i sees some key of [t0, t1). */
static bool fa_row_sees(const rt_tensor_t *mask, int64_t i, int64_t t0, int64_t t1) {
    const char *row = (const char *)mask->data + i * mask->nb[1];
    for (int64_t t = t0; t < t1; t++) {
        float x;
        if (mask->type == RT_TYPE_F16) {
            uint16_t h;
            memcpy(&h, row + t * 2, sizeof h);
            x = rt_fp16_to_fp32(h);
        } else {
            memcpy(&x, row + t * 4, sizeof x);
        }
        if (x > -INFINITY) return true;
    }
    return false;
}

/* Whether the queries of every block of nq see the same spans of keys. A
 * block skips only a span that none of its queries sees, so queries of
 * different sequences in one block (a decode step of several) would each
 * read every sequence's keys. Read for small N only: a prompt's blocks are
 * one sequence's consecutive queries. */
static bool fa_queries_agree(const rt_tensor_t *mask, int64_t N, int64_t nq, int64_t n_kv) {
    for (int64_t i0 = 0; i0 < N; i0 += nq)
        for (int64_t t0 = 0; t0 < n_kv; t0 += FA_SPAN) {
            const int64_t t1 = t0 + FA_SPAN < n_kv ? t0 + FA_SPAN : n_kv;
            const bool first = fa_row_sees(mask, i0, t0, t1);
            for (int64_t i = i0 + 1; i < i0 + nq && i < N; i++)
                if (fa_row_sees(mask, i, t0, t1) != first) return false;
        }
    return true;
}

/* The most keys (whole spans) that the queries of one block of nq see:
 * what a split of the keys over chunks would divide. */
static int64_t fa_most_seen(const rt_tensor_t *mask, int64_t N, int64_t nq, int64_t n_kv) {
    int64_t most = 0;
    for (int64_t i0 = 0; i0 < N; i0 += nq) {
        int64_t seen = 0;
        for (int64_t t0 = 0; t0 < n_kv; t0 += FA_SPAN) {
            const int64_t t1 = t0 + FA_SPAN < n_kv ? t0 + FA_SPAN : n_kv;
            for (int64_t i = i0; i < i0 + nq && i < N; i++)
                if (fa_row_sees(mask, i, t0, t1)) {
                    seen += t1 - t0;
                    break;
                }
        }
        if (seen > most) most = seen;
    }
    return most;
}

/* The node's plan by its shapes alone (sizes and phases: an upper bound
 * of the one it runs), or with look, by its mask too: one query per block
 * where the queries of a block would not agree, and keys split only as
 * far as the keys a block sees allow (several sequences' decode: each
 * query sees its own sequence's rows only, too few to split; a split's
 * merge phase cost rt-server's 4 clients on SmolLM2 ~20% of attention). */
static fa_plan_t fa_plan(const rt_tensor_t *node, bool look) {
    const rt_tensor_t *q = node->src[0], *k = node->src[1], *v = node->src[2], *mask = node->src[3];
    fa_plan_t pl = {
        .D = q->ne[0], .Dv = v->ne[0], .N = q->ne[1], .H = q->ne[2], .H_kv = k->ne[2],
        .n3 = q->ne[3], .n_kv = k->ne[1],
    };
    pl.rpq = pl.H / pl.H_kv;
    pl.nq = pl.rpq >= FA_QUERIES_PER_BLOCK ? 1 : FA_QUERIES_PER_BLOCK / pl.rpq;
    if (pl.nq > pl.N) pl.nq = pl.N;
    if (look && mask != NULL && pl.nq > 1 && pl.N <= FA_AGREE_MAX_N &&
        !fa_queries_agree(mask, pl.N, pl.nq, pl.n_kv))
        pl.nq = 1;
    pl.n_qb = (pl.N + pl.nq - 1) / pl.nq;
    pl.R = pl.nq * pl.rpq;
    const int64_t items = pl.n3 * pl.H_kv * pl.n_qb;
    int64_t want = items >= FA_MIN_ITEMS ? 1 : (FA_MIN_ITEMS + items - 1) / items;
    int64_t most = pl.n_kv / FA_MIN_CHUNK;
    if (want > 1 && most > 1 && look && mask != NULL && pl.N <= FA_AGREE_MAX_N) /* the mask read only for a split */
        most = fa_most_seen(mask, pl.N, pl.nq, pl.n_kv) / FA_MIN_CHUNK;
    if (want > most) want = most;
    if (want < 1) want = 1;
    const int64_t spans = (pl.n_kv + FA_SPAN - 1) / FA_SPAN;
    pl.chunk = (spans + want - 1) / want * FA_SPAN;
    pl.n_chunks = pl.n_kv > 0 ? (pl.n_kv + pl.chunk - 1) / pl.chunk : 1;
    return pl;
}

static bool fa_is_kv_type(rt_type_t t) { return t == RT_TYPE_F32 || t == RT_TYPE_F16; }

static size_t fa_elsize(rt_type_t t) { return t == RT_TYPE_F16 ? 2 : 4; }

bool rt_cpu_supports_flash_attn(const rt_tensor_t *node) {
    const rt_tensor_t *q = node->src[0], *k = node->src[1], *v = node->src[2], *m = node->src[3];
    if (!q || !k || !v || q->type != RT_TYPE_F32 || q->nb[0] != sizeof(float)) return false;
    if (!fa_is_kv_type(k->type) || k->type != v->type || k->nb[0] != fa_elsize(k->type) ||
        v->nb[0] != fa_elsize(v->type))
        return false;
    if (q->ne[0] != k->ne[0] || k->ne[1] != v->ne[1] || k->ne[2] != v->ne[2] || q->ne[3] != k->ne[3] ||
        k->ne[3] != v->ne[3] || k->ne[2] <= 0 || q->ne[2] % k->ne[2] != 0)
        return false;
    if (node->type != RT_TYPE_F32 || node->nb[0] != sizeof(float) || node->ne[0] != v->ne[0] ||
        node->ne[1] != q->ne[2] || node->ne[2] != q->ne[1] || node->ne[3] != q->ne[3])
        return false;
    if (!m) return true;
    return fa_is_kv_type(m->type) && m->nb[0] == fa_elsize(m->type) && m->ne[0] == k->ne[1] &&
           m->ne[1] >= q->ne[1] && m->ne[2] == 1 && m->ne[3] == 1;
}

/* Per thread: the block's scaled q rows, its m, l and accumulators, and
 * attend's tiles. */
static int64_t fa_thread_floats(const fa_plan_t *pl) {
    return pl->R * (pl->D + RT_CPU_FA_PAD(pl->Dv)) + 2 * RT_CPU_FA_PAD(pl->R) +
           rt_cpu_fa_scratch(pl->R, pl->rpq, pl->D, pl->Dv);
}

size_t rt_cpu_wsize_flash_attn(const rt_tensor_t *node) {
    const fa_plan_t pl = fa_plan(node, false);
    return (size_t)fa_thread_floats(&pl) * sizeof(float) + RT_CPU_ALIGN;
}

/* One partial is m, l and Dv accumulators. */
static int64_t fa_partial_floats(const fa_plan_t *pl) { return 2 + pl->Dv; }

size_t rt_cpu_shared_wsize_flash_attn(const rt_tensor_t *node) {
    const fa_plan_t pl = fa_plan(node, false);
    if (pl.n_chunks == 1) return 0;
    return (size_t)(pl.n3 * pl.N * pl.H * pl.n_chunks * fa_partial_floats(&pl)) * sizeof(float);
}

int32_t rt_cpu_phases_flash_attn(const rt_tensor_t *node) {
    return fa_plan(node, false).n_chunks > 1 ? 2 : 1;
}

//===--- phase 0: a block of rows over a range of keys ---===//

/* Output row (query i, head h, plane i3) in the flat order of dst's rows. */
static int64_t fa_out_row(const fa_plan_t *pl, int64_t i3, int64_t i, int64_t h) {
    return (i3 * pl->N + i) * pl->H + h;
}

static float *fa_out(const rt_tensor_t *dst, int64_t i3, int64_t i, int64_t h) {
    return (float *)((char *)dst->data + h * dst->nb[1] + i * dst->nb[2] + i3 * dst->nb[3]);
}

/* out = acc / l, zeros for a row that saw no key. */
static void fa_finish(float *out, const float *acc, float l, int64_t Dv) {
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
    for (int64_t e = 0; e < Dv; e++) out[e] = acc[e] * inv;
}

static void fa_block(const rt_cpu_params_t *p, const rt_tensor_t *dst, const fa_plan_t *pl, int64_t item) {
    const rt_tensor_t *q = dst->src[0], *k = dst->src[1], *v = dst->src[2], *mask = dst->src[3];
    const int64_t c = item % pl->n_chunks, qb = item / pl->n_chunks % pl->n_qb;
    const int64_t g = item / (pl->n_chunks * pl->n_qb) % pl->H_kv;
    const int64_t i3 = item / (pl->n_chunks * pl->n_qb * pl->H_kv);
    const int64_t i0 = qb * pl->nq, nq = pl->N - i0 < pl->nq ? pl->N - i0 : pl->nq;
    const int64_t R = nq * pl->rpq, dvp = RT_CPU_FA_PAD(pl->Dv);
    const float scale = rt_cpu_param_f32(dst, 0), cap = rt_cpu_param_f32(dst, 1);
    const float qscale = cap != 0.0f ? scale / cap : scale;

    float *qs = (float *)(((uintptr_t)p->wdata + RT_CPU_ALIGN - 1) / RT_CPU_ALIGN * RT_CPU_ALIGN);
    const int64_t rp = RT_CPU_FA_PAD(pl->R);
    float *m = qs + pl->R * pl->D, *l = m + rp, *acc = l + rp, *scratch = acc + pl->R * dvp;
    for (int64_t qi = 0; qi < nq; qi++)
        for (int64_t hh = 0; hh < pl->rpq; hh++) {
            const float *src = (const float *)rt_cpu_row(q, i0 + qi, g * pl->rpq + hh, i3);
            float *d = qs + (qi * pl->rpq + hh) * pl->D;
            for (int64_t e = 0; e < pl->D; e++) d[e] = src[e] * qscale;
        }
    for (int64_t r = 0; r < rp; r++) {
        m[r] = -INFINITY;
        l[r] = 0.0f;
    }
    memset(acc, 0, (size_t)(R * dvp) * sizeof acc[0]);

    const rt_cpu_fa_t a = {
        .q = qs, .R = R, .rpq = pl->rpq, .D = pl->D, .Dv = pl->Dv,
        .k = (const char *)k->data + g * k->nb[2] + i3 * k->nb[3], .ldk = k->nb[1],
        .v = (const char *)v->data + g * v->nb[2] + i3 * v->nb[3], .ldv = v->nb[1],
        .f16 = k->type == RT_TYPE_F16,
        .mask = mask ? (const char *)mask->data + i0 * mask->nb[1] : NULL,
        .ldm = mask ? mask->nb[1] : 0,
        .mask_f16 = mask && mask->type == RT_TYPE_F16,
        .softcap = cap,
    };
    const int64_t j0 = c * pl->chunk, j1 = j0 + pl->chunk < pl->n_kv ? j0 + pl->chunk : pl->n_kv;
    rt_cpu_k->attn->attend(&a, j0, j1, m, l, acc, scratch);

    for (int64_t r = 0; r < R; r++) {
        const int64_t i = i0 + r / pl->rpq, h = g * pl->rpq + r % pl->rpq;
        if (pl->n_chunks == 1) {
            fa_finish(fa_out(dst, i3, i, h), acc + r * dvp, l[r], pl->Dv);
            continue;
        }
        float *part = (float *)p->shared + (fa_out_row(pl, i3, i, h) * pl->n_chunks + c) * fa_partial_floats(pl);
        part[0] = m[r];
        part[1] = l[r];
        memcpy(part + 2, acc + r * dvp, (size_t)pl->Dv * sizeof acc[0]);
    }
}

//===--- phase 1: the partials of each row, merged ---===//

/* The chunks' (m_c, l_c, acc_c) of each row become (m, sum e^(m_c - m) l_c,
 * sum e^(m_c - m) acc_c) for m = max m_c: the softmax over all the keys. */
static void fa_merge(const rt_cpu_params_t *p, const rt_tensor_t *dst, const fa_plan_t *pl) {
    const int64_t n_rows = pl->n3 * pl->N * pl->H, stride = fa_partial_floats(pl);
    for (int64_t row = rt_cpu_claim(p); row < n_rows; row = rt_cpu_claim(p)) {
        const float *part = (const float *)p->shared + row * pl->n_chunks * stride;
        float mx = -INFINITY;
        for (int64_t c = 0; c < pl->n_chunks; c++) mx = fmaxf(mx, part[c * stride]);
        float *out = fa_out(dst, row / (pl->H * pl->N), row / pl->H % pl->N, row % pl->H);
        memset(out, 0, (size_t)pl->Dv * sizeof out[0]);
        if (mx == -INFINITY) continue;
        float l = 0.0f;
        for (int64_t c = 0; c < pl->n_chunks; c++) {
            const float *pc = part + c * stride;
            if (pc[0] == -INFINITY) continue;
            const float w = expf(pc[0] - mx);
            l += w * pc[1];
            for (int64_t e = 0; e < pl->Dv; e++) out[e] += w * pc[2 + e];
        }
        for (int64_t e = 0; e < pl->Dv; e++) out[e] /= l;
    }
}

void rt_cpu_compute_flash_attn(const rt_cpu_params_t *p, rt_tensor_t *dst) {
    const fa_plan_t pl = fa_plan(dst, true);
    if (p->phase == 1) { /* none when this plan has one chunk where the shapes' had several */
        if (pl.n_chunks > 1) fa_merge(p, dst, &pl);
        return;
    }
    const int64_t n_items = pl.n3 * pl.H_kv * pl.n_qb * pl.n_chunks;
    for (int64_t item = rt_cpu_claim(p); item < n_items; item = rt_cpu_claim(p)) fa_block(p, dst, &pl, item);
}
