/* SPDX-License-Identifier: MIT */
/* kern_attn.c: FLASH_ATTN's arithmetic (kern.h's attend), in simd.h's
 * vocabulary, compiled per variant. A block of R query rows (the heads
 * that share a kv head, for one or a few queries) walks its key range in
 * tiles of FA_T keys (FA_NT in the narrow layout); per tile:
 *
 *   1. the mask tile, one row per query: a tile that no query of the block
 *      sees (every entry -inf: another sequence's cells, a sliding window)
 *      ends here, before its keys are read;
 *   2. the scores of the tile, keys converted to F32 (F16 on the fly) and
 *      each key row loaded once for all R rows (grouped queries);
 *   3. the online softmax of each row over the tile (running max m, sum l;
 *      the accumulator rescaled when the max moves);
 *   4. acc += P V, the values converted to F32 once per tile, an FA_PRB x
 *      FA_CV grid of accumulators over Dv.
 *
 * The wide layout converts a tile's keys and values into F32 tiles first;
 * the narrow one reads them in place from the cache (each element
 * converted once per block of rows), the next tile it attends prefetched
 * along: not the adjacent one, which in a cache shared by sequences that
 * decode together is mostly another sequence's run (kv_cache.c), whose
 * fetch would double the bytes read and leave the next one cold.
 *
 * Two layouts of the scores. Wide blocks (R >= RT_W: prompts) put the
 * rows in the lanes: q is transposed once per call, the scores of a key
 * are FMAs of the broadcast key element by vectors of q, and the softmax
 * runs on vectors of rows with no horizontal step. Narrow blocks (decode:
 * a few heads, fewer rows than lanes) put the keys in the lanes instead:
 * each row's dot products with RT_W keys accumulate along d, one vector per
 * key, and one in-register reduction (vf_sums: pairs of vectors summed
 * into each other's lanes) makes them a vector of RT_W scores (transposing
 * the key tile instead cost twice the shuffles: 1.1-1.45x slower at R = 3
 * and 4, D = 128).
 *
 * Everything is summed in F32, p included (never rounded to F16). The
 * scores never exist beyond one tile: memory is O(R * (D + Dv)). */
#include "kern.h"
#include "simd.h"

#include "../../abi/rt_quant.h"

#ifdef RT_SIMD_ON

#include <math.h>

#define FA_T RT_CPU_FA_TILE
#define FA_CV 4             /* value vectors per accumulator block */

#if defined(RT_SIMD_AVX512)
#  define FA_WTB 8 /* wide: keys per block, by FA_WRV vectors of rows: 16 accumulators */
#  define FA_WRV 2
#  define FA_PRB 4 /* P V rows per block: 16 accumulators */
#elif defined(RT_SIMD_AVX2)
#  define FA_WTB 4
#  define FA_WRV 2
#  define FA_PRB 2
#elif defined(RT_SIMD_NEON)
#  define FA_WTB 8
#  define FA_WRV 2
#  define FA_PRB 4
#else
#  define FA_WTB 4
#  define FA_WRV 1
#  define FA_PRB 1
#endif

//===--- loading a tile ---===//

RT_INLINE float fa_elem(const char *row, bool f16, int64_t e) {
    if (f16) {
        uint16_t h;
        memcpy(&h, row + e * 2, sizeof h);
        return rt_fp16_to_fp32(h);
    }
    float x;
    memcpy(&x, row + e * 4, sizeof x);
    return x;
}

RT_INLINE rt_vf fa_vec(const char *row, bool f16, int64_t e) {
    return f16 ? vf_load_f16((const uint16_t *)row + e) : vf_load((const float *)row + e);
}

/* What a tile's mask does to the block's queries. */
typedef enum { FA_HIDDEN, FA_MASKED, FA_OPEN } fa_tile_kind_t;

/* The mask tile mt[qi][t] (tl keys) for the block's queries, -inf past the range (a
 * mask of zeros when there is none). FA_HIDDEN when no entry is finite;
 * FA_OPEN when every entry is 0 (a causal mask's tiles off the diagonal):
 * the wide layout then adds nothing. */
RT_INLINE fa_tile_kind_t fa_mask_tile(const rt_cpu_fa_t *a, int64_t nq, int64_t t0, int64_t nt, const int tl,
                                      float *mt) {
    const rt_vf ninf = vf_set1(-INFINITY);
    rt_vf seen = ninf, mag = vf_zero();
    for (int64_t qi = 0; qi < nq; qi++) {
        float *row = mt + qi * tl;
        const char *m = a->mask ? a->mask + (size_t)qi * a->ldm : NULL;
        int64_t t = 0;
        if (m && nt == tl)
            for (; t < tl; t += RT_W) vf_store(row + t, fa_vec(m, a->mask_f16, t0 + t));
        for (; t < tl; t++) row[t] = t >= nt ? -INFINITY : m ? fa_elem(m, a->mask_f16, t0 + t) : 0.0f;
        for (t = 0; t < tl; t += RT_W) {
            const rt_vf x = vf_load(row + t);
            seen = vf_max(seen, x);
            mag = vf_max(mag, vf_abs(x));
        }
    }
    if (!(vf_hmax(seen) > -INFINITY)) return FA_HIDDEN;
    return vf_hmax(mag) == 0.0f ? FA_OPEN : FA_MASKED;
}

/* Rows [t0, t0 + nt) of n elements as dst[t * RT_CPU_FA_PAD(n) + e], zeros
 * past n and past nt: the value tile, and the wide layout's key tile. The
 * same rows of the next tile (n_next of them) are prefetched meanwhile: a
 * tile of a cache is 32 rows in a stream of 4 KiB pages, which the
 * hardware prefetchers stop at, and decode reads each row once (without
 * it 45% of decode's time was these loads waiting on memory). */
RT_INLINE void fa_load_rows_as(const char *base, size_t ld, int64_t n, int64_t t0, int64_t nt, int64_t n_next,
                               float *dst, const bool f16) {
    const int64_t np = RT_CPU_FA_PAD(n);
    const size_t row_bytes = (size_t)n * (f16 ? 2 : 4);
    for (int64_t t = 0; t < nt; t++) {
        const char *row = base + (size_t)(t0 + t) * ld;
        if (t < n_next)
            for (size_t b = 0; b < row_bytes; b += 64) __builtin_prefetch(row + FA_T * ld + b, 0, 3);
        float *d = dst + t * np;
        int64_t e = 0;
        for (; e + RT_W <= n; e += RT_W) vf_store(d + e, fa_vec(row, f16, e));
        for (; e < n; e++) d[e] = fa_elem(row, f16, e);
        for (; e < np; e++) d[e] = 0.0f;
    }
    memset(dst + nt * np, 0, (size_t)((FA_T - nt) * np) * sizeof dst[0]);
}

//===--- narrow blocks: keys in the lanes ---===//

/* Bytes [b0, b0 + n) of rows [0, nr) of base, ld apart, prefetched: the
 * narrow layout reads the cache in place, and the next tile's rows are
 * fetched a few at a time along the current one's (all at once, they
 * would overrun the fill buffers and be dropped). A cache's rows of one
 * head are another head's rows apart, each 4 KiB page holding few of
 * them: the hardware prefetchers see no stream. */
RT_INLINE void fa_prefetch_rows(const char *base, size_t ld, int64_t n, int64_t b0, int64_t nr) {
    for (int64_t t = 0; t < nr; t++)
        for (int64_t b = b0; b < b0 + n; b += 64) __builtin_prefetch(base + (size_t)t * ld + b, 0, 3);
}

/* Elements [e, e + RT_W) of a raw k or v row of n, zeros past n. */
RT_INLINE rt_vf fa_vec_n(const char *row, bool f16, int64_t e, int64_t n) {
    if (n - e >= RT_W) return fa_vec(row, f16, e);
    float x[RT_W];
    for (int i = 0; i < RT_W; i++) x[i] = e + i < n ? fa_elem(row, f16, e + i) : 0.0f;
    return vf_load(x);
}

/* Rows per score block of the narrow layout: rg rows by kg keys fill the
 * RT_W accumulators that one vf_sums reduces. */
#define FA_KR (RT_W < 4 ? RT_W : 4)
/* Keys per narrow tile: two of the wide layout's, halving the tile's
 * fixed costs (the mask, each row's softmax steps and horizontal max and
 * sum, the accumulators' loads and stores in P V), 10-15% of decode at
 * D = 128; the wide layout measured better at FA_T. The narrow layout
 * needs only s and two mask tiles (this one and the next attended),
 * rt_cpu_fa_scratch's narrow part. */
#define FA_NT RT_CPU_FA_NARROW_TILE

/* s[r0 + i][t + j] for rg rows and kg keys, the keys read raw from the
 * cache (each converted once for the rg rows, not once per row): one
 * accumulator per (row, key) along d, whose lanes vf_sums adds up into
 * one vector of the rg * kg dot products. Keys past nt
 * read the tile's first row; the mask's -inf drops their scores. */
RT_INLINE void fa_kq_block(const rt_cpu_fa_t *a, int64_t r0, int64_t t0, int64_t t, int64_t nt, int64_t dn,
                           int64_t n_next, float *s, const bool f16, const int rg, const int kg) {
    const char *krow[RT_W];
    rt_vf acc[RT_W];
    RT_UNROLL(16)
    for (int i = 0; i < RT_W; i++) acc[i] = vf_zero();
    RT_UNROLL(16)
    for (int j = 0; j < kg; j++) krow[j] = a->k + (size_t)(t0 + (t + j < nt ? t + j : 0)) * a->ldk;
    if (r0 == 0) fa_prefetch_rows(a->k + (size_t)(t0 + dn + t) * a->ldk, a->ldk, a->D * (f16 ? 2 : 4), 0,
                                  n_next - t < kg ? n_next - t : kg);
    const float *q = a->q + r0 * a->D;
    for (int64_t d = 0; d < a->D; d += RT_W) {
        rt_vf kv[RT_W];
        RT_UNROLL(16)
        for (int j = 0; j < kg; j++) kv[j] = fa_vec_n(krow[j], f16, d, a->D);
        RT_UNROLL(4)
        for (int i = 0; i < rg; i++) {
            const rt_vf qv = vf_load_n(q + i * a->D, d, a->D);
            RT_UNROLL(16)
            for (int j = 0; j < kg; j++) acc[i * kg + j] = vf_fma(qv, kv[j], acc[i * kg + j]);
        }
    }
    float x[RT_W];
    vf_store(x, vf_sums(acc));
    for (int i = 0; i < rg; i++)
        for (int j = 0; j < kg; j++) s[(r0 + i) * FA_NT + t + j] = x[i * kg + j];
}

RT_INLINE void fa_kq_rows(const rt_cpu_fa_t *a, int64_t r0, int64_t t0, int64_t nt, int64_t dn, int64_t n_next,
                          float *s, const bool f16, const int rg, const int kg) {
    for (int64_t t = 0; t < FA_NT; t += kg) fa_kq_block(a, r0, t0, t, nt, dn, n_next, s, f16, rg, kg);
}

/* s[r][t] for every row against the tile's keys [t0, t0 + nt); the n_next
 * keys from t0 + dn (the next tile attended) prefetched. */
RT_INLINE void fa_scores_as(const rt_cpu_fa_t *a, int64_t t0, int64_t nt, int64_t dn, int64_t n_next, float *s,
                            const bool f16) {
    for (int64_t r0 = 0; r0 < a->R; r0 += FA_KR) {
        const int64_t rg = a->R - r0 < FA_KR ? a->R - r0 : FA_KR;
        if (rg >= 4)
            fa_kq_rows(a, r0, t0, nt, dn, n_next, s, f16, FA_KR, RT_W / FA_KR);
        else if (rg == 3)
            fa_kq_rows(a, r0, t0, nt, dn, n_next, s, f16, 3, RT_W / FA_KR);
        else if (rg == 2)
            fa_kq_rows(a, r0, t0, nt, dn, n_next, s, f16, 2, RT_W / 2);
        else
            fa_kq_rows(a, r0, t0, nt, dn, n_next, s, f16, 1, RT_W);
    }
}

static void fa_scores(const rt_cpu_fa_t *a, int64_t t0, int64_t nt, int64_t dn, int64_t n_next, float *s) {
    if (a->f16)
        fa_scores_as(a, t0, nt, dn, n_next, s, true);
    else
        fa_scores_as(a, t0, nt, dn, n_next, s, false);
}

//===--- the online softmax ---===//

/* c * tanh(x) as c * sign(x) * (1 - 2 / (e^(2|x|) + 1)): no cancellation
 * that matters in a score (an absolute error of c ulps of 1), and e^(2|x|)
 * = inf gives exactly 1. */
RT_INLINE rt_vf fa_cap(rt_vf x, rt_vf c) {
    const rt_vf e = vf_exp(vf_mul(vf_set1(2.0f), vf_abs(x)));
    const rt_vf t = vf_sub(vf_set1(1.0f), vf_div(vf_set1(2.0f), vf_add(e, vf_set1(1.0f))));
    return vf_mul(c, vf_select(vf_gt(vf_zero(), x), vf_sub(vf_zero(), t), t));
}

static void fa_rescale(float *acc, int64_t dvp, float alpha) {
    const rt_vf av = vf_set1(alpha);
    for (int64_t e = 0; e < dvp; e += RT_W) vf_store(acc + e, vf_mul(av, vf_load(acc + e)));
}

/* Row r's scores become its weights p = exp(s - m) for the new max m; l
 * and the accumulator are rescaled to it. A row that has seen no finite
 * score yet keeps m = -inf and gets zero weights. */
static void fa_softmax_row(const rt_cpu_fa_t *a, float *s, const float *mrow, float *m, float *l,
                           float *acc) {
    const int tl = FA_NT;
    const rt_vf ninf = vf_set1(-INFINITY), cap = vf_set1(a->softcap);
    rt_vf mx = ninf;
    for (int t = 0; t < tl; t += RT_W) {
        rt_vf x = vf_load(s + t);
        if (a->softcap != 0.0f) x = fa_cap(x, cap);
        x = vf_add(x, vf_load(mrow + t));
        vf_store(s + t, x);
        mx = vf_max(mx, x);
    }
    const float mnew = fmaxf(*m, vf_hmax(mx));
    if (mnew == -INFINITY) {
        memset(s, 0, tl * sizeof s[0]);
        return;
    }
    const rt_vf mv = vf_set1(mnew);
    rt_vf sum = vf_zero();
    for (int t = 0; t < tl; t += RT_W) {
        const rt_vf p = vf_exp(vf_sub(vf_load(s + t), mv));
        vf_store(s + t, p);
        sum = vf_add(sum, p);
    }
    const float alpha = *m == -INFINITY ? 0.0f : expf(*m - mnew);
    *l = *l * alpha + vf_hsum(sum);
    *m = mnew;
    if (alpha != 1.0f) fa_rescale(acc, RT_CPU_FA_PAD(a->Dv), alpha);
}

//===--- wide blocks: rows in the lanes ---===//

/* q's rows as qt[d * rp + r], zeros in the lanes past R. */
static void fa_transpose_q(const rt_cpu_fa_t *a, int64_t rp, float *qt) {
    for (int64_t d = 0; d < a->D; d++) {
        for (int64_t r = 0; r < a->R; r++) qt[d * rp + r] = a->q[r * a->D + d];
        for (int64_t r = a->R; r < rp; r++) qt[d * rp + r] = 0.0f;
    }
}

/* The narrow mask tile mq[qi][t] spread to mt[t * rp + r] over the rows of
 * each query. */
static void fa_spread_mask(const rt_cpu_fa_t *a, int64_t rp, const float *mq, float *mt) {
    for (int64_t t = 0; t < FA_T; t++)
        for (int64_t r = 0; r < rp; r++) mt[t * rp + r] = r < a->R ? mq[r / a->rpq * FA_T + t] : -INFINITY;
}

/* s[t][r0 + lanes] for tb keys and rv vectors of rows. */
RT_INLINE void fa_wide_block(const float *qt, int64_t rp, int64_t D, const float *kf, int64_t ldk, float *s,
                             int64_t r0, const int tb, const int rv) {
    rt_vf acc[FA_WTB][FA_WRV];
    RT_UNROLL(8)
    for (int i = 0; i < tb; i++)
        RT_UNROLL(2)
        for (int j = 0; j < rv; j++) acc[i][j] = vf_zero();
    for (int64_t d = 0; d < D; d++) {
        rt_vf qv[FA_WRV];
        RT_UNROLL(2)
        for (int j = 0; j < rv; j++) qv[j] = vf_load(qt + d * rp + r0 + j * RT_W);
        RT_UNROLL(8)
        for (int i = 0; i < tb; i++) {
            const rt_vf kb = vf_set1(kf[i * ldk + d]);
            RT_UNROLL(2)
            for (int j = 0; j < rv; j++) acc[i][j] = vf_fma(kb, qv[j], acc[i][j]);
        }
    }
    RT_UNROLL(8)
    for (int i = 0; i < tb; i++)
        RT_UNROLL(2)
        for (int j = 0; j < rv; j++) vf_store(s + i * rp + r0 + j * RT_W, acc[i][j]);
}

static void fa_wide_scores(const rt_cpu_fa_t *a, int64_t rp, const float *qt, const float *kf, float *s) {
    const int64_t ldk = RT_CPU_FA_PAD(a->D);
    for (int64_t t = 0; t < FA_T; t += FA_WTB) {
        int64_t r0 = 0;
        for (; r0 + FA_WRV * RT_W <= rp; r0 += FA_WRV * RT_W)
            fa_wide_block(qt, rp, a->D, kf + t * ldk, ldk, s + t * rp, r0, FA_WTB, FA_WRV);
        for (; r0 < rp; r0 += RT_W) fa_wide_block(qt, rp, a->D, kf + t * ldk, ldk, s + t * rp, r0, FA_WTB, 1);
    }
}

/* The online softmax of every row at once, lanes r0.. of each key's
 * scores: m, l and the rescaling factors (alpha) as vectors. A lane whose
 * max is still -inf subtracts 0 instead, so that its weights and alpha
 * come out 0, not NaN. mt NULL: the tile's mask is all zeros. */
static void fa_wide_softmax(const rt_cpu_fa_t *a, int64_t rp, float *s, const float *mt, float *m, float *l,
                            float *alpha) {
    const rt_vf ninf = vf_set1(-INFINITY), cap = vf_set1(a->softcap);
    for (int64_t r0 = 0; r0 < rp; r0 += RT_W) {
        rt_vf mx = ninf;
        for (int64_t t = 0; t < FA_T; t++) {
            rt_vf x = vf_load(s + t * rp + r0);
            if (a->softcap != 0.0f) x = fa_cap(x, cap);
            if (mt) x = vf_add(x, vf_load(mt + t * rp + r0));
            vf_store(s + t * rp + r0, x);
            mx = vf_max(mx, x);
        }
        const rt_vf mold = vf_load(m + r0), mnew = vf_max(mold, mx);
        const rt_vf msafe = vf_select(vf_gt(mnew, ninf), mnew, vf_zero());
        rt_vf sum = vf_zero();
        for (int64_t t = 0; t < FA_T; t++) {
            const rt_vf p = vf_exp(vf_sub(vf_load(s + t * rp + r0), msafe));
            vf_store(s + t * rp + r0, p);
            sum = vf_add(sum, p);
        }
        const rt_vf al = vf_exp(vf_sub(mold, msafe));
        vf_store(l + r0, vf_fma(vf_load(l + r0), al, sum));
        vf_store(m + r0, mnew);
        vf_store(alpha + r0, al);
    }
}

//===--- acc += P V ---===//

/* Rows [0, rb) of acc, vectors [e, e + cv * RT_W), over the tile's nt keys;
 * row i's weight of key t is p[i * pr + t * pt]. The values are rows of n
 * elements ldv bytes apart (the F32 value tile, or the cache itself, each
 * element converted once for the rb rows), zeros past n; the n_next rows
 * from dn on (the next tile attended) prefetched. */
RT_INLINE void fa_pv_block(const float *p, int64_t pr, int64_t pt, const char *v, size_t ldv, int64_t n,
                           int64_t dvp, float *acc, int64_t e, int64_t nt, int64_t dn, int64_t n_next,
                           const bool f16, const int rb, const int cv) {
    const int64_t es = f16 ? 2 : 4, b1 = (e + cv * RT_W < n ? e + cv * RT_W : n) * es;
    const bool full = e + cv * RT_W <= n; /* no partial vector: the branch out of the key loop */
    rt_vf c[FA_PRB][FA_CV];
    RT_UNROLL(4)
    for (int i = 0; i < rb; i++)
        RT_UNROLL(4)
        for (int j = 0; j < cv; j++) c[i][j] = vf_load(acc + i * dvp + e + j * RT_W);
    for (int64_t t = 0; t < nt; t++) {
        if (t < n_next && e * es < b1) fa_prefetch_rows(v + (size_t)(t + dn) * ldv, ldv, b1 - e * es, e * es, 1);
        rt_vf vv[FA_CV];
        RT_UNROLL(4)
        for (int j = 0; j < cv; j++)
            vv[j] = full ? fa_vec(v + (size_t)t * ldv, f16, e + j * RT_W) : fa_vec_n(v + (size_t)t * ldv, f16, e + j * RT_W, n);
        RT_UNROLL(4)
        for (int i = 0; i < rb; i++) {
            const rt_vf pv = vf_set1(p[i * pr + t * pt]);
            RT_UNROLL(4)
            for (int j = 0; j < cv; j++) c[i][j] = vf_fma(pv, vv[j], c[i][j]);
        }
    }
    RT_UNROLL(4)
    for (int i = 0; i < rb; i++)
        RT_UNROLL(4)
        for (int j = 0; j < cv; j++) vf_store(acc + i * dvp + e + j * RT_W, c[i][j]);
}

RT_INLINE void fa_pv_rows(const float *p, int64_t pr, int64_t pt, const char *v, size_t ldv, int64_t n,
                          int64_t dvp, float *acc, int64_t nt, int64_t dn, int64_t n_next, const bool f16,
                          const int rb) {
    int64_t e = 0;
    for (; e + FA_CV * RT_W <= dvp; e += FA_CV * RT_W)
        fa_pv_block(p, pr, pt, v, ldv, n, dvp, acc, e, nt, dn, n_next, f16, rb, FA_CV);
    for (; e < dvp; e += RT_W) fa_pv_block(p, pr, pt, v, ldv, n, dvp, acc, e, nt, dn, n_next, f16, rb, 1);
}

RT_INLINE void fa_pv_as(const rt_cpu_fa_t *a, const float *p, int64_t pr, int64_t pt, const char *v, size_t ldv,
                        int64_t n, float *acc, int64_t nt, int64_t dn, int64_t n_next, const bool f16) {
    const int64_t dvp = RT_CPU_FA_PAD(a->Dv);
    int64_t r = 0;
    /* Only the first rows' pass prefetches the next tile's values. */
    for (; r + FA_PRB <= a->R; r += FA_PRB)
        fa_pv_rows(p + r * pr, pr, pt, v, ldv, n, dvp, acc + r * dvp, nt, dn, r == 0 ? n_next : 0, f16, FA_PRB);
    for (; r < a->R; r++)
        fa_pv_rows(p + r * pr, pr, pt, v, ldv, n, dvp, acc + r * dvp, nt, dn, r == 0 ? n_next : 0, f16, 1);
}

/* acc += P V over the tile's nt keys: v rows of n elements, ldv bytes
 * apart, F16 when f16; the n_next rows from dn on prefetched. */
static void fa_pv(const rt_cpu_fa_t *a, const float *p, int64_t pr, int64_t pt, const char *v, size_t ldv,
                  int64_t n, float *acc, int64_t nt, int64_t dn, int64_t n_next, bool f16) {
    if (f16)
        fa_pv_as(a, p, pr, pt, v, ldv, n, acc, nt, dn, n_next, true);
    else
        fa_pv_as(a, p, pr, pt, v, ldv, n, acc, nt, dn, n_next, false);
}

//===--- the key walk ---===//

typedef struct fa_tiles {
    float *qt, *kt, *vt, *s, *mq, *mt, *alpha;
} fa_tiles_t;

static fa_tiles_t fa_carve(const rt_cpu_fa_t *a, float *scratch) {
    const int64_t rp = RT_CPU_FA_PAD(a->R), nq = (a->R + a->rpq - 1) / a->rpq;
    fa_tiles_t b;
    b.qt = scratch;
    b.kt = b.qt + a->D * rp;
    b.vt = b.kt + FA_T * RT_CPU_FA_PAD(a->D);
    b.s = b.vt + FA_T * RT_CPU_FA_PAD(a->Dv);
    b.mt = b.s + FA_T * rp;
    b.mq = b.mt + FA_T * rp;
    b.alpha = b.mq + FA_T * nq;
    return b;
}

RT_INLINE void fa_load_tile(const rt_cpu_fa_t *a, const fa_tiles_t *b, int64_t t0, int64_t nt, int64_t n_next,
                            const bool f16) {
    fa_load_rows_as(a->k, a->ldk, a->D, t0, nt, n_next, b->kt, f16);
    fa_load_rows_as(a->v, a->ldv, a->Dv, t0, nt, n_next, b->vt, f16);
}

/* Wide blocks (prompts): the tiles in order, each loaded and converted. */
static void fa_attend_wide(const rt_cpu_fa_t *a, int64_t j0, int64_t j1, float *m, float *l, float *acc,
                           float *scratch) {
    const int64_t nq = (a->R + a->rpq - 1) / a->rpq, dvp = RT_CPU_FA_PAD(a->Dv), rp = RT_CPU_FA_PAD(a->R);
    fa_tiles_t b = fa_carve(a, scratch);
    fa_transpose_q(a, rp, b.qt);
    for (int64_t t0 = j0; t0 < j1; t0 += FA_T) {
        const int64_t nt = j1 - t0 < FA_T ? j1 - t0 : FA_T;
        const fa_tile_kind_t kind = fa_mask_tile(a, nq, t0, nt, FA_T, b.mq);
        if (kind == FA_HIDDEN) continue;
        const int64_t n_next = j1 - t0 - FA_T < FA_T ? j1 - t0 - FA_T : FA_T; /* <= 0 on the last */
        if (a->f16)
            fa_load_tile(a, &b, t0, nt, n_next, true);
        else
            fa_load_tile(a, &b, t0, nt, n_next, false);
        const bool masked = kind == FA_MASKED;
        if (masked) fa_spread_mask(a, rp, b.mq, b.mt);
        fa_wide_scores(a, rp, b.qt, b.kt, b.s);
        fa_wide_softmax(a, rp, b.s, masked ? b.mt : NULL, m, l, b.alpha);
        for (int64_t r = 0; r < a->R; r++)
            if (b.alpha[r] != 1.0f) fa_rescale(acc + r * dvp, dvp, b.alpha[r]);
        fa_pv(a, b.s, 1, rp, (const char *)b.vt, (size_t)dvp * sizeof b.vt[0], dvp, acc, nt, 0, 0, false);
    }
}

/* The first tile from t0 on that the block sees (j1 if none), its mask
 * tile in mq. */
static int64_t fa_next_seen(const rt_cpu_fa_t *a, int64_t nq, int64_t t0, int64_t j1, float *mq) {
    for (; t0 < j1; t0 += FA_NT)
        if (fa_mask_tile(a, nq, t0, j1 - t0 < FA_NT ? j1 - t0 : FA_NT, FA_NT, mq) != FA_HIDDEN) return t0;
    return j1;
}

/* Narrow blocks (decode): only the tiles the block sees, each read in
 * place while the next one seen is prefetched. */
static void fa_attend_narrow(const rt_cpu_fa_t *a, int64_t j0, int64_t j1, float *m, float *l, float *acc,
                             float *scratch) {
    const int64_t nq = (a->R + a->rpq - 1) / a->rpq, dvp = RT_CPU_FA_PAD(a->Dv), rp = RT_CPU_FA_PAD(a->R);
    float *s = scratch, *mq = s + FA_NT * rp, *mq_next = mq + FA_NT * nq;
    for (int64_t t0 = fa_next_seen(a, nq, j0, j1, mq); t0 < j1;) {
        const int64_t nt = j1 - t0 < FA_NT ? j1 - t0 : FA_NT;
        const int64_t t1 = fa_next_seen(a, nq, t0 + FA_NT, j1, mq_next);
        const int64_t n_next = t1 < j1 ? (j1 - t1 < FA_NT ? j1 - t1 : FA_NT) : 0;
        fa_scores(a, t0, nt, t1 - t0, n_next, s);
        for (int64_t r = 0; r < a->R; r++)
            fa_softmax_row(a, s + r * FA_NT, mq + r / a->rpq * FA_NT, &m[r], &l[r], acc + r * dvp);
        fa_pv(a, s, FA_NT, 1, a->v + (size_t)t0 * a->ldv, a->ldv, a->Dv, acc, nt, t1 - t0, n_next, a->f16);
        float *swap = mq;
        mq = mq_next;
        mq_next = swap;
        t0 = t1;
    }
}

static void fa_attend(const rt_cpu_fa_t *a, int64_t j0, int64_t j1, float *m, float *l, float *acc,
                      float *scratch) {
    if (a->R >= RT_W)
        fa_attend_wide(a, j0, j1, m, l, acc, scratch);
    else
        fa_attend_narrow(a, j0, j1, m, l, acc, scratch);
}

static const rt_cpu_kern_attn_t kern_attn = {
    .attend = fa_attend,
};

const rt_cpu_kern_attn_t *RT_KS(rt_cpu_kern_attn)(void) {
    return &kern_attn;
}

#else /* the variant's instructions are not available to this compiler */

const rt_cpu_kern_attn_t *RT_KS(rt_cpu_kern_attn)(void) {
    return NULL;
}

#endif
