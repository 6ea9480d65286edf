/* SPDX-License-Identifier: MIT */
/* merge.c: the merge loop of both tokenizers (llama.cpp's
 * llm_tokenizer_spm_session and llm_tokenizer_bpe_session share it). The
 * text starts as one symbol per UTF-8 character; a max-heap holds every
 * adjacent pair that may merge, keyed by the tokenizer (SentencePiece: the
 * merged piece's score; BPE: minus the merge's rank), the leftmost first on
 * equal keys. Popping a pair whose symbols have changed since it was
 * queued is skipped: a symbol only grows to the right, so a pair is stale
 * exactly when its byte count no longer matches. */
#include "vocab_impl.h"
#include "unicode.h"

#include <stdlib.h>

rt_status_t rtm_merge_ws_init(rtm_merge_ws_t *ws, size_t max_len) {
    const size_t n = max_len > 0 ? max_len : 1;
    ws->syms = malloc(n * sizeof ws->syms[0]);
    /* n - 1 pairs at first, at most two more per merge, n - 1 merges. */
    ws->heap = malloc(3 * n * sizeof ws->heap[0]);
    ws->cap = n;
    if (ws->syms == NULL || ws->heap == NULL) {
        rtm_merge_ws_deinit(ws);
        return rtm_error(RT_ERR_OUT_OF_MEMORY, "rtm_merge_ws_init: no memory for %zu bytes of text",
                         max_len);
    }
    return RT_OK;
}

void rtm_merge_ws_deinit(rtm_merge_ws_t *ws) {
    free(ws->syms);
    free(ws->heap);
    ws->syms = NULL;
    ws->heap = NULL;
    ws->cap = 0;
}

/* a comes out of the heap before b. */
static bool bigram_before(const rtm_bigram_t *a, const rtm_bigram_t *b) {
    return a->key > b->key || (a->key == b->key && a->left < b->left);
}

static void heap_swap(rtm_bigram_t *h, size_t i, size_t j) {
    const rtm_bigram_t t = h[i];
    h[i] = h[j];
    h[j] = t;
}

static void heap_push(rtm_bigram_t *h, size_t *n, rtm_bigram_t b) {
    size_t i = (*n)++;
    h[i] = b;
    while (i > 0 && bigram_before(&h[i], &h[(i - 1) / 2])) {
        heap_swap(h, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static rtm_bigram_t heap_pop(rtm_bigram_t *h, size_t *n) {
    const rtm_bigram_t top = h[0];
    h[0] = h[--(*n)];
    for (size_t i = 0;;) {
        const size_t l = 2 * i + 1, r = l + 1;
        size_t best = i;
        if (l < *n && bigram_before(&h[l], &h[best])) best = l;
        if (r < *n && bigram_before(&h[r], &h[best])) best = r;
        if (best == i) break;
        heap_swap(h, i, best);
        i = best;
    }
    return top;
}

typedef struct merge_run {
    rtm_merge_ws_t *ws;
    size_t n_heap;
    rtm_pair_key_fn key;
    const void *user;
} merge_run_t;

static void try_pair(merge_run_t *r, int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const rtm_sym_t *l = &r->ws->syms[left], *rs = &r->ws->syms[right];
    double key;
    if (!r->key(r->user, l->text, l->n, rs->n, &key)) return;
    const rtm_bigram_t b = {left, right, key, l->n + rs->n};
    heap_push(r->ws->heap, &r->n_heap, b);
}

static int32_t split_chars(rtm_sym_t *syms, const char *text, size_t len) {
    int32_t n = 0;
    for (size_t off = 0; off < len; n++) {
        size_t cl = rtm_utf8_len((unsigned char)text[off]);
        if (cl > len - off) cl = len - off;
        syms[n] = (rtm_sym_t){text + off, (uint32_t)cl, n - 1, -1};
        if (n > 0) syms[n - 1].next = n;
        off += cl;
    }
    return n;
}

void rtm_merge(rtm_merge_ws_t *ws, const char *text, size_t len, rtm_pair_key_fn key,
               const void *user) {
    merge_run_t r = {ws, 0, key, user};
    const int32_t n = split_chars(ws->syms, text, len);
    for (int32_t i = 1; i < n; i++) try_pair(&r, i - 1, i);
    while (r.n_heap > 0) {
        const rtm_bigram_t b = heap_pop(ws->heap, &r.n_heap);
        rtm_sym_t *l = &ws->syms[b.left], *rs = &ws->syms[b.right];
        if (l->n == 0 || rs->n == 0 || l->n + rs->n != b.size) continue;
        l->n += rs->n;
        rs->n = 0;
        l->next = rs->next;
        if (rs->next >= 0) ws->syms[rs->next].prev = b.left;
        try_pair(&r, l->prev, b.left);
        try_pair(&r, b.left, l->next);
    }
}
