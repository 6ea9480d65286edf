/* SPDX-License-Identifier: MIT */
/* layout.c: see layout.h. */
#include "layout.h"

#include <stdio.h>
#include <string.h>

#include "types.h"

static const cf_type_t *type_of(rt_type_t t) {
    static const cf_type_t unknown = {RT_TYPE_COUNT, "?", 1, 4, 0, NULL, NULL};
    const cf_type_t *ty = cf_type(t);
    return ty != NULL ? ty : &unknown;
}

bool lay_is_quant(rt_type_t t) { return type_of(t)->blck > 1; }
int64_t lay_blck(rt_type_t t) { return type_of(t)->blck; }
size_t lay_type_bytes(rt_type_t t) { return type_of(t)->bytes; }
const char *lay_type_str(rt_type_t t) { return type_of(t)->name; }

void lay_norm_ne(const int64_t in[4], int64_t out[4]) {
    for (int i = 0; i < 4; i++) out[i] = in[i] > 0 ? in[i] : 1;
}

int lay_ne_dims(const int64_t ne[4]) {
    int n = 1;
    for (int i = 1; i < 4; i++)
        if (ne[i] > 1) n = i + 1;
    return n;
}

layout_t lay_contig(rt_type_t type, const int64_t ne[4]) {
    layout_t l = {.type = type};
    lay_norm_ne(ne, l.ne);
    l.nb[0] = lay_type_bytes(type);
    l.nb[1] = l.nb[0] * (size_t)(l.ne[0] / lay_blck(type));
    for (int i = 2; i < 4; i++) l.nb[i] = l.nb[i - 1] * (size_t)l.ne[i - 1];
    return l;
}

int64_t lay_nelem(const layout_t *l) { return l->ne[0] * l->ne[1] * l->ne[2] * l->ne[3]; }

/* Bytes from the base's start to one past the layout's last byte. */
size_t lay_span(const layout_t *l) {
    size_t end = l->offs + l->nb[0] * (size_t)((l->ne[0] - 1) / lay_blck(l->type) + 1);
    for (int i = 1; i < 4; i++) end += (size_t)(l->ne[i] - 1) * l->nb[i];
    return end;
}

/* rt_permute's rule: dimension i goes to position axes[i]. */
layout_t lay_permute(const layout_t *l, const int axes[4]) {
    layout_t r = *l;
    for (int i = 0; i < 4; i++) {
        r.ne[axes[i]] = l->ne[i];
        r.nb[axes[i]] = l->nb[i];
    }
    return r;
}

void lay_unravel(int64_t flat, const int64_t ne[4], int64_t idx[4]) {
    for (int i = 0; i < 4; i++) {
        idx[i] = flat % ne[i];
        flat /= ne[i];
    }
}

size_t lay_addr(const layout_t *l, const int64_t idx[4]) {
    return l->offs + (size_t)(idx[0] / lay_blck(l->type)) * l->nb[0] + (size_t)idx[1] * l->nb[1] +
           (size_t)idx[2] * l->nb[2] + (size_t)idx[3] * l->nb[3];
}

double lay_decode(rt_type_t type, const uint8_t *p, int64_t in_block) {
    float blk[CF_MAX_BLCK];
    type_of(type)->decode(p, blk);
    return blk[in_block];
}

/* Writes one element of a plain type with the contract's conversions (RNE);
 * false for a block type, whose elements are not separately stored. */
bool lay_encode(rt_type_t type, uint8_t *p, float v) {
    if (lay_is_quant(type)) return false;
    type_of(type)->encode(&v, p);
    return true;
}

double lay_get(const layout_t *l, const uint8_t *base, const int64_t idx[4]) {
    return lay_decode(l->type, base + lay_addr(l, idx), idx[0] % lay_blck(l->type));
}

/* Any type back as doubles, in logical order (i0 fastest). */
void lay_read(const layout_t *l, const uint8_t *base, double *out) {
    int64_t idx[4];
    for (int64_t k = 0; k < lay_nelem(l); k++) {
        lay_unravel(k, l->ne, idx);
        out[k] = lay_get(l, base, idx);
    }
}

/* Writes n floats, in logical order, into a layout (plain types, or a
 * contiguous quantised one, block by block through its codec). */
void lay_write(const layout_t *l, uint8_t *base, const float *v) {
    const int64_t n = lay_nelem(l);
    const cf_type_t *ty = type_of(l->type);
    if (ty->blck > 1) {
        for (int64_t k = 0; k < n; k += ty->blck) ty->encode(v + k, base + l->offs + (size_t)(k / ty->blck) * ty->bytes);
        return;
    }
    int64_t idx[4];
    for (int64_t k = 0; k < n; k++) {
        lay_unravel(k, l->ne, idx);
        lay_encode(l->type, base + lay_addr(l, idx), v[k]);
    }
}

const char *lay_str(const layout_t *l, char *buf, size_t size) {
    const layout_t c = lay_contig(l->type, l->ne);
    int n = snprintf(buf, size, "%s{%lld,%lld,%lld,%lld}", lay_type_str(l->type), (long long)l->ne[0],
                     (long long)l->ne[1], (long long)l->ne[2], (long long)l->ne[3]);
    if (n >= 0 && (size_t)n < size && (memcmp(c.nb, l->nb, sizeof c.nb) != 0 || l->offs != 0))
        snprintf(buf + n, size - (size_t)n, "nb{%zu,%zu,%zu,%zu}+%zu", l->nb[0], l->nb[1], l->nb[2],
                 l->nb[3], l->offs);
    return buf;
}
