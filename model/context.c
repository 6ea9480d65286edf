/* SPDX-License-Identifier: MIT */
/* context.c: a context runs one sequence, or up to n_seq_max sequences
 * sharing its KV cache's cells (kv_cache.c), through the model. It owns
 * the KV cache, the scheduler over the model's devices and a fixed block
 * of host memory in which the current graph's headers are built (a
 * no_alloc context over it).
 *
 * A graph is built and allocated (the scheduler's passes, the gallocr's
 * plan) only when the ubatch's shape changes: n_tokens, or n_kv, which
 * grows in steps of RTM_KV_PAD, or which tokens keep their logits. In
 * between, decoding writes the inputs (tokens, positions, the cache rows
 * written, the mask built from each cell's sequence and position, the
 * rows whose logits are kept) in place and computes the same allocated
 * graph again: nothing is planned or allocated per token. A batch of
 * several sequences is one graph: one token of each generating sequence
 * costs about what one token costs, the weights being read once.
 *
 * Compute buffers are reserved at creation the llama.cpp way (docs/memory.md §3.4):
 * the prompt graph (n_batch tokens at the end of the context, the largest
 * graph there is), then the one-token graph (its node and split counts are
 * the statistics), then the prompt graph again, because a reserve replaces
 * the plan and the plan must end up being the largest graph's. Every
 * ubatch after that has the same structure with smaller sizes, fits the
 * plan, and allocates nothing; the stats count what would say otherwise.
 *
 * A decoder's embeddings context (rtm_context_params_t.embeddings) runs
 * the same graphs with the head cut before the output projection: every
 * token's normed hidden state comes out where its logits would, and those
 * of one decode are pooled here, on the host (pool_rows). */
#include "arch.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rtm_context {
    rtm_model_t *model;
    int32_t n_ctx, n_batch;
    bool logits_all;
    bool hidden;                  /* a decoder's embeddings context: every token's final hidden
                                     state is kept instead of its logits (logits_all is set) */
    rtm_pooling_t pooling;        /* MEAN or LAST in a context that keeps embeddings, else 0 */
    int32_t n_out;                /* floats in a row of `logits`: n_vocab, or n_embd */
    float *pooled;                /* n_embd: the hidden states of the last decode pooled */
    rtm_part_t layers;            /* the layers the context runs (all, unless a part's) */
    rtm_kv_cache_t kv;
    rt_sched_t *sched;
    void *graph_mem;              /* headers of one graph at a time */
    size_t graph_mem_size;        /* bytes */
    float *logits;                /* n_logits rows of n_out */
    int32_t n_logits, logits_cap; /* rows held, rows allocated */
    int32_t *out_row;             /* the last decode's tokens: each one's row of logits, or -1 */
    int32_t n_out_row, out_row_cap; /* tokens mapped, entries allocated */
    int32_t *tok_buf, *pos_buf;   /* n_batch each: input staging (tokens, positions) */
    int32_t *rows_buf, *seq_buf;  /* n_batch each: the cache rows (cells) written, sequences */
    int32_t *out_ids_buf;         /* n_batch: the ubatch's tokens whose logits are kept */
    const float *hidden_in;       /* the current part's input, borrowed for one run */
    float *mask_buf;              /* n_ctx * n_batch */
    float *mask_swa_buf;          /* the same for sliding-window layers, when the model has them */
    float *pool_buf;              /* n_batch: 1/n each, for an embedding model's mean */
    float *rope_buf;              /* rope with factors: cos, sin (n_batch * n_rot each), the
                                     rotation (n_rot * n_rot) */
    bool no_graph_reuse;
    bool check_numerics;          /* every node kept, see numerics.c */
    struct {                      /* the allocated graph, while gctx is not NULL */
        rt_context_t *gctx;
        rtm_graph_io_t io;
        rtm_ubatch_t ub;
    } cur;
    rtm_context_stats_t stats;
};

//===--- graphs ---===//

static rt_status_t graph_context(rtm_context_t *c, rt_context_t **out) {
    const rt_context_params_t p = {.struct_size = sizeof p, .mem_size = c->graph_mem_size,
                                   .mem_buffer = c->graph_mem, .no_alloc = true};
    const rt_status_t st = rt_context_create(&p, out);
    return st == RT_OK ? RT_OK : rtm_error_core(st, "rtm_context: graph context");
}

static uint64_t compute_bytes(const rtm_context_t *c) {
    uint64_t sum = 0;
    for (int32_t i = 0; i < rt_sched_n_devices(c->sched); i++) sum += rt_sched_buffer_size(c->sched, i);
    return sum;
}

/* Plans the buffers for the graph of ub; for the one-token graph, keeps
 * its counts. */
static rt_status_t reserve(rtm_context_t *c, const rtm_ubatch_t *ub, bool keep_stats) {
    rt_context_t *gctx = NULL;
    rtm_graph_io_t io;
    rt_status_t st = graph_context(c, &gctx);
    if (st != RT_OK) return st;
    rtm_graph_build(c->model, &c->kv, gctx, ub, &io);
    if (c->check_numerics) rtm_numerics_keep_nodes(io.graph);
    st = rt_sched_reserve(c->sched, io.graph);
    if (st != RT_OK) st = rtm_error_core(st, "rtm_context_create: reserving compute buffers");
    if (st == RT_OK && keep_stats) {
        c->stats.tg_nodes = rt_graph_n_nodes(io.graph);
        c->stats.tg_splits = rt_sched_n_splits(c->sched);
    }
    c->stats.n_reserves++;
    rt_context_destroy(gctx);
    return st;
}

/* With several sequences a graph may keep every token's logits (each
 * its sequence's next): the largest graph is the prompt graph with all. */
static rt_status_t reserve_all(rtm_context_t *c) {
    const bool pp_all = c->logits_all || c->kv.n_seq_max > 1;
    const rtm_ubatch_t pp = {c->n_batch, c->n_ctx, c->n_ctx - c->n_batch, pp_all, c->layers, 0, c->hidden};
    const rtm_ubatch_t tg = {1, c->n_ctx, c->n_ctx - 1, c->logits_all, c->layers, 0, c->hidden};
    rt_status_t st = reserve(c, &pp, false);
    if (st == RT_OK) st = reserve(c, &tg, true);
    if (st == RT_OK) st = reserve(c, &pp, false);
    c->stats.compute_bytes = compute_bytes(c);
    return st;
}

//===--- creation ---===//

static rt_status_t make_sched(rtm_context_t *c, int32_t n_threads) {
    const rtm_model_t *m = c->model;
    const rt_sched_options_t o = {.struct_size = sizeof o, .devices = m->devices,
                                  .n_devices = m->n_devices,
                                  .graph_size = rtm_graph_size(&m->hp),
                                  .n_threads = n_threads};
    const rt_status_t st = rt_sched_create(&o, &c->sched);
    return st == RT_OK ? RT_OK : rtm_error_core(st, "rtm_context_create: scheduler");
}

static rt_status_t alloc_host(rtm_context_t *c) {
    const size_t graph_size = (size_t)rtm_graph_size(&c->model->hp);
    size_t graph_bytes = 0;
    const rt_status_t st = rt_graph_overhead_v2(graph_size, &graph_bytes);
    if (st != RT_OK) return rtm_error_core(st, "rtm_context_create: %d layers", c->model->hp.n_layer);
    c->graph_mem_size = 2 * graph_size * rt_tensor_overhead() + graph_bytes;
    c->graph_mem = malloc(c->graph_mem_size);
    c->tok_buf = malloc((size_t)c->n_batch * sizeof c->tok_buf[0]);
    c->pos_buf = malloc((size_t)c->n_batch * sizeof c->pos_buf[0]);
    c->rows_buf = malloc((size_t)c->n_batch * sizeof c->rows_buf[0]);
    c->seq_buf = malloc((size_t)c->n_batch * sizeof c->seq_buf[0]);
    c->out_ids_buf = malloc((size_t)c->n_batch * sizeof c->out_ids_buf[0]);
    const size_t mask_bytes = (size_t)c->n_batch * (size_t)c->n_ctx * sizeof c->mask_buf[0];
    c->mask_buf = malloc(mask_bytes);
    const bool swa = c->model->hp.n_swa > 0;
    if (swa) c->mask_swa_buf = malloc(mask_bytes);
    c->pool_buf = malloc((size_t)c->n_batch * sizeof c->pool_buf[0]);
    if (c->hidden) c->pooled = malloc((size_t)c->model->hp.n_embd * sizeof c->pooled[0]);
    const size_t n_rot = (size_t)c->model->hp.n_rot;
    if (c->model->hp.rope_factors)
        c->rope_buf = calloc(2 * (size_t)c->n_batch * n_rot + n_rot * n_rot, sizeof c->rope_buf[0]);
    if (c->graph_mem && c->tok_buf && c->pos_buf && c->rows_buf && c->seq_buf && c->out_ids_buf &&
        c->mask_buf && (!swa || c->mask_swa_buf) &&
        c->pool_buf && (!c->model->hp.rope_factors || c->rope_buf) && (!c->hidden || c->pooled))
        return RT_OK;
    return rtm_error(RT_ERR_OUT_OF_MEMORY, "rtm_context_create: no host memory for n_ctx %d, "
                     "n_batch %d", c->n_ctx, c->n_batch);
}

static bool same_part(const rtm_part_t *a, const rtm_part_t *b) {
    return a->layer_begin == b->layer_begin && a->layer_end == b->layer_end && a->block == b->block;
}

static rt_status_t set_layers(rtm_context_t *c, const rtm_context_params_t *p) {
    const int32_t n_layer = c->model->hp.n_layer;
    const bool all = p->layer_begin == 0 && p->layer_end == 0;
    c->layers = (rtm_part_t){sizeof c->layers, all ? 0 : p->layer_begin, all ? n_layer : p->layer_end,
                             RTM_BLOCK_LAYERS};
    const rtm_model_t *m = c->model;
    if (all && (m->layer_begin > 0 || m->layer_end < n_layer))
        c->layers = (rtm_part_t){sizeof c->layers, m->layer_begin, m->layer_end, RTM_BLOCK_LAYERS};
    if (c->layers.layer_begin >= m->layer_begin && c->layers.layer_begin < c->layers.layer_end &&
        c->layers.layer_end <= m->layer_end)
        return RT_OK;
    return rtm_error(RT_ERR_INVALID_ARGUMENT, "rtm_context_create: layers [%d, %d) are not a "
                     "range of the model's [%d, %d)", p->layer_begin, p->layer_end,
                     m->layer_begin, m->layer_end);
}

/* Several sequences put their tokens in cells anywhere in the cache: the
 * rows must be written by index. */
static rt_status_t check_seq_max(const rtm_context_t *c) {
    if (c->kv.n_seq_max == 1 || c->kv.by_rows) return RT_OK;
    return rtm_error(RT_ERR_UNSUPPORTED, "rtm_context_create: %d sequences need every device to "
                     "write cache rows by index (SET_ROWS), and one cannot", c->kv.n_seq_max);
}

static void set_sizes(rtm_context_t *c, const rtm_context_params_t *p) {
    const rtm_hparams_t *hp = &c->model->hp;
    const int32_t n_train = hp->n_ctx_train;
    c->n_ctx = p->n_ctx > 0 ? p->n_ctx : (n_train < RTM_DEFAULT_N_CTX ? n_train : RTM_DEFAULT_N_CTX);
    c->n_batch = p->n_batch > 0 ? p->n_batch : RTM_DEFAULT_N_BATCH;
    if (c->n_batch > c->n_ctx) c->n_batch = c->n_ctx;
    /* pooling needs every token's state, as logits_all keeps every token's logits */
    c->hidden = p->embeddings && !hp->embeddings;
    c->logits_all = p->logits_all || c->hidden;
    c->n_out = c->hidden || hp->embeddings ? hp->n_embd : hp->n_vocab;
    c->pooling = !c->hidden && !hp->embeddings ? RTM_POOLING_DEFAULT
               : p->pooling == RTM_POOLING_DEFAULT ? RTM_POOLING_MEAN : p->pooling;
    c->no_graph_reuse = p->no_graph_reuse;
    c->check_numerics = p->check_numerics;
}

//===--- the current graph ---===//

static void drop_graph(rtm_context_t *c) {
    if (c->cur.gctx == NULL) return;
    rt_sched_reset(c->sched);
    rt_context_destroy(c->cur.gctx);
    c->cur.gctx = NULL;
}

/* Whether the graph built for a serves b. */
static bool serves(const rtm_context_t *c, const rtm_ubatch_t *a, const rtm_ubatch_t *b) {
    return a->n_tokens == b->n_tokens && a->n_kv == b->n_kv && a->all_logits == b->all_logits &&
           a->hidden == b->hidden &&
           a->n_out_ids == b->n_out_ids &&
           same_part(&a->part, &b->part) && (c->kv.by_rows || a->n_past == b->n_past);
}

/* The allocated graph for ub: the current one when it serves ub. */
static rt_status_t prepare_graph(rtm_context_t *c, const rtm_ubatch_t *ub) {
    if (c->cur.gctx != NULL && !c->no_graph_reuse && serves(c, &c->cur.ub, ub)) return RT_OK;
    drop_graph(c);
    rt_status_t st = graph_context(c, &c->cur.gctx);
    if (st != RT_OK) return st;
    c->cur.ub = *ub;
    rtm_graph_build(c->model, &c->kv, c->cur.gctx, ub, &c->cur.io);
    if (c->check_numerics) rtm_numerics_keep_nodes(c->cur.io.graph);
    st = rt_sched_alloc_graph(c->sched, c->cur.io.graph);
    if (st != RT_OK) {
        rt_context_destroy(c->cur.gctx);
        c->cur.gctx = NULL;
        return st;
    }
    c->stats.n_builds++;
    return RT_OK;
}

void rtm_context_destroy(rtm_context_t *c) {
    if (c == NULL) return;
    drop_graph(c);
    rt_sched_destroy(c->sched);
    rtm_kv_cache_deinit(&c->kv);
    free(c->graph_mem);
    free(c->tok_buf);
    free(c->pos_buf);
    free(c->rows_buf);
    free(c->seq_buf);
    free(c->out_ids_buf);
    free(c->out_row);
    free(c->mask_buf);
    free(c->mask_swa_buf);
    free(c->pool_buf);
    free(c->rope_buf);
    free(c->pooled);
    free(c->logits);
    free(c);
}

rt_status_t rtm_context_create(rtm_model_t *m, const rtm_context_params_t *params,
                               rtm_context_t **out_ctx) {
    if (out_ctx) *out_ctx = NULL;
    if (m == NULL || out_ctx == NULL)
        return rtm_error(RT_ERR_INVALID_ARGUMENT, "rtm_context_create: NULL model or out_ctx");
    rtm_context_params_t pc;
    rtm_params_copy(&pc, sizeof pc, params);
    const rtm_context_params_t *p = &pc;
    if (p->n_ctx < 0 || p->n_batch < 0 || p->n_threads < 0 || p->n_seq_max < 0)
        return rtm_error(RT_ERR_INVALID_ARGUMENT, "rtm_context_create: negative n_ctx %d, n_batch "
                         "%d, n_threads %d or n_seq_max %d", p->n_ctx, p->n_batch, p->n_threads,
                         p->n_seq_max);
    if (p->flash_attn < RTM_FLASH_ATTN_AUTO || p->flash_attn > RTM_FLASH_ATTN_OFF)
        return rtm_error(RT_ERR_INVALID_ARGUMENT, "rtm_context_create: flash_attn %d is none of "
                         "auto (0), on (1), off (2)", p->flash_attn);
    if (p->pooling < RTM_POOLING_DEFAULT || p->pooling > RTM_POOLING_LAST)
        return rtm_error(RT_ERR_INVALID_ARGUMENT, "rtm_context_create: pooling %d is none of "
                         "default (0), mean (1), last (2)", p->pooling);
    if (m->hp.embeddings && p->pooling == RTM_POOLING_LAST)
        return rtm_error(RT_ERR_UNSUPPORTED, "rtm_context_create: %s is an embedding model, which "
                         "pools as it was trained (the mean), not the last token", m->arch);
    rtm_context_t *c = calloc(1, sizeof *c);
    if (c == NULL) return rtm_error(RT_ERR_OUT_OF_MEMORY, "rtm_context_create: no memory");
    c->model = m;
    c->stats.struct_size = sizeof c->stats;
    set_sizes(c, p);
    rt_status_t st = set_layers(c, p);
    if (st == RT_OK) st = alloc_host(c);
    const rtm_kv_config_t kc = {.n_ctx = c->n_ctx, .n_seq_max = p->n_seq_max > 0 ? p->n_seq_max : 1,
                                .n_batch = c->n_batch, .layer_begin = c->layers.layer_begin,
                                .layer_end = c->layers.layer_end, .type_k = p->type_k,
                                .type_v = p->type_v, .flash_attn = (rtm_flash_attn_t)p->flash_attn};
    if (st == RT_OK) st = rtm_kv_cache_init(&c->kv, m, &kc);
    if (st == RT_OK) st = check_seq_max(c);
    if (st == RT_OK) st = make_sched(c, p->n_threads);
    if (st == RT_OK) st = reserve_all(c);
    if (st != RT_OK) {
        rtm_context_destroy(c);
        return st;
    }
    c->stats.kv_bytes = c->kv.bytes;
    c->stats.n_devices = rt_sched_n_devices(c->sched);
    *out_ctx = c;
    return RT_OK;
}

//===--- decoding ---===//

/* What one decode asks for: n tokens, token i of sequence seq[i] (NULL:
 * all of sequence 0), its logits kept where want[i] (NULL: the last
 * token's, or every token's with all). */
typedef struct decode_req {
    const rtm_token_t *tokens;
    const int32_t *seq;
    const bool *want;
    int32_t n;
    bool all;
} decode_req_t;

static int32_t req_seq(const decode_req_t *q, int32_t i) { return q->seq ? q->seq[i] : 0; }
static bool req_wants(const decode_req_t *q, int32_t i) {
    return q->want ? q->want[i] : q->all || i == q->n - 1;
}

/* Tokens [i0, i0 + n) of q into the staging buffers, each in a free cell
 * of its sequence (its row and its position there); the caller checked
 * that enough cells are free. */
static void take_cells(rtm_context_t *c, const decode_req_t *q, int32_t i0, int32_t n) {
    for (int32_t i = 0; i < n; i++) {
        const int32_t seq = req_seq(q, i0 + i), row = rtm_kv_cell_take(&c->kv, seq);
        c->tok_buf[i] = q->tokens ? q->tokens[i0 + i] : 0;
        c->seq_buf[i] = seq;
        c->rows_buf[i] = row;
        c->pos_buf[i] = c->kv.cell_pos[row];
    }
}

/* Undoes take_cells (a run that failed, or a part, whose cells
 * rtm_context_advance takes). */
static void untake_cells(rtm_context_t *c, int32_t n) {
    for (int32_t i = n - 1; i >= 0; i--) rtm_kv_cell_untake(&c->kv, c->rows_buf[i]);
}

/* The masks of the n staged tokens over n_kv rows (rtm_kv_mask_row: its
 * own sequence, causal or not, the window on sliding-window layers) and
 * the pooling weights. */
static void fill_masks(rtm_context_t *c, int32_t n, int32_t n_kv) {
    const int32_t n_swa = c->model->hp.n_swa;
    const bool causal = c->model->hp.causal;
    for (int32_t i = 0; i < n; i++) {
        c->pool_buf[i] = 1.0f / (float)n;
        rtm_kv_mask_row(&c->kv, c->seq_buf[i], c->pos_buf[i], causal, 0, n_kv,
                        c->mask_buf + (size_t)i * (size_t)n_kv);
        if (n_swa > 0)
            rtm_kv_mask_row(&c->kv, c->seq_buf[i], c->pos_buf[i], true, n_swa, n_kv,
                            c->mask_swa_buf + (size_t)i * (size_t)n_kv);
    }
}

/* Rope with factors (blocks.c): per token the cos and sin of each pair's
 * angle p * freq_scale * base^(-2i/n_rot) / factor_i, on both elements of
 * the pair (adjacent in NORMAL mode, n_rot/2 apart in NEOX), and the
 * rotation that turns each pair a quarter. */
static void fill_rope(rtm_context_t *c, int32_t n) {
    const rtm_hparams_t *hp = &c->model->hp;
    const int32_t nr = hp->n_rot, half = nr / 2;
    const bool neox = hp->rope_mode == RT_ROPE_MODE_NEOX;
    float *cs = c->rope_buf, *sn = cs + (size_t)c->n_batch * nr, *rot = sn + (size_t)c->n_batch * nr;
    for (int32_t t = 0; t < n; t++)
        for (int32_t i = 0; i < half; i++) {
            const double theta = (double)c->pos_buf[t] * hp->rope_freq_scale *
                                 pow(hp->rope_freq_base, -2.0 * i / nr) / c->model->rope_freqs[i];
            const int32_t d0 = neox ? i : 2 * i, d1 = neox ? i + half : 2 * i + 1;
            cs[t * nr + d0] = cs[t * nr + d1] = (float)cos(theta);
            sn[t * nr + d0] = sn[t * nr + d1] = (float)sin(theta);
        }
    for (int32_t i = 0; i < half; i++) { /* row m of rot: turned[m] = sum_k rot[m][k] x[k] */
        const int32_t d0 = neox ? i : 2 * i, d1 = neox ? i + half : 2 * i + 1;
        rot[(size_t)d0 * nr + d1] = -1.0f;
        rot[(size_t)d1 * nr + d0] = 1.0f;
    }
}

static rt_status_t set_rope_inputs(rtm_context_t *c, const rtm_graph_io_t *io) {
    const size_t nr = (size_t)c->model->hp.n_rot;
    const float *sn = c->rope_buf + (size_t)c->n_batch * nr;
    rt_status_t st = rt_tensor_set(io->rope_cos, c->rope_buf, 0, rt_nbytes(io->rope_cos));
    if (st == RT_OK) st = rt_tensor_set(io->rope_sin, sn, 0, rt_nbytes(io->rope_sin));
    if (st == RT_OK) st = rt_tensor_set(io->rope_rot, sn + (size_t)c->n_batch * nr, 0, rt_nbytes(io->rope_rot));
    return st;
}

/* Writes the inputs the graph has (a part has only some). */
/* Writes the inputs the graph has (a part has only some). */
static rt_status_t set_input(rt_tensor_t *t, const void *data) {
    return t == NULL ? RT_OK : rt_tensor_set(t, data, 0, rt_nbytes(t));
}

static rt_status_t set_inputs(rtm_context_t *c, const rtm_graph_io_t *io) {
    rt_status_t st = set_input(io->tokens, c->tok_buf);
    if (st == RT_OK) st = set_input(io->pos, c->pos_buf);
    if (st == RT_OK) st = set_input(io->rows, c->rows_buf);
    if (st == RT_OK) st = set_input(io->out_ids, c->out_ids_buf);
    if (st == RT_OK) st = set_input(io->mask, c->mask_buf);
    if (st == RT_OK) st = set_input(io->mask_swa, c->mask_swa_buf);
    if (st == RT_OK) st = set_input(io->pool, c->pool_buf);
    if (st == RT_OK) st = set_input(io->hidden_in, c->hidden_in);
    if (st == RT_OK && io->rope_cos != NULL) st = set_rope_inputs(c, io);
    return st;
}

/* Cache rows the attention reads: past the highest row held (the staged
 * tokens' included), in steps of RTM_KV_PAD. */
static int32_t kv_rows(const rtm_context_t *c) {
    const int32_t need = rtm_kv_rows_used(&c->kv), padded = (need + RTM_KV_PAD - 1) / RTM_KV_PAD * RTM_KV_PAD;
    return padded < c->n_ctx ? padded : c->n_ctx;
}

static void count_run(rtm_context_t *c) {
    c->stats.n_graphs++;
    c->stats.n_splits = rt_sched_n_splits(c->sched);
    c->stats.n_copies = rt_sched_n_copies(c->sched);
    const uint64_t bytes = compute_bytes(c);
    if (bytes != c->stats.compute_bytes) c->stats.compute_bytes_changes++;
    c->stats.compute_bytes = bytes;
}

/* Logits that are not finite stop the decode: sampling from them gives a
 * token that means nothing. */
static rt_status_t check_logits(const rtm_context_t *c, const float *out, size_t n) {
    const int64_t bad = rtm_numerics_first_bad(out, n);
    if (bad < 0) return RT_OK;
    const rtm_graph_io_t *io = &c->cur.io;
    const int32_t n_out = c->n_out;
    char where[RT_MAX_NAME + 64] = "check numerics (rt-run --check-numerics) to find the node";
    if (c->check_numerics) {
        const int32_t i = rtm_numerics_first_bad_node(io->graph);
        const rt_tensor_t *node = i >= 0 ? rt_graph_node(io->graph, i) : NULL;
        if (node == NULL) snprintf(where, sizeof where, "the first node not finite is none");
        else snprintf(where, sizeof where, "the first node not finite is node %d of %d, %s %s", i,
                      rt_graph_n_nodes(io->graph), rt_op_name(node->op),
                      rt_get_name(node)[0] ? rt_get_name(node) : "(unnamed)");
    }
    return rtm_error(RT_ERR_FORMAT, "rtm_decode: step %llu (positions %d..%d): %s %lld of row "
                     "%lld is %g; %s", (unsigned long long)c->stats.n_graphs + 1, c->pos_buf[0],
                     c->pos_buf[c->cur.ub.n_tokens - 1], c->hidden ? "hidden-state value" : "logit",
                     (long long)(bad % n_out), (long long)(bad / n_out), (double)out[bad], where);
}

/* The graph's output (logits or hidden state) into out when not NULL. */
static rt_status_t get_output(const rtm_graph_io_t *io, float *out) {
    const rt_tensor_t *t = io->logits ? io->logits : io->hidden_out;
    return out == NULL ? RT_OK : rt_tensor_get(t, out, 0, rt_nbytes(t));
}

/* Runs the graph of ub over the staged tokens (or the hidden states in
 * c->hidden_in), whose cells are taken; their output into out when not
 * NULL. */
static rt_status_t run_graph(rtm_context_t *c, const rtm_ubatch_t *ub, float *out) {
    rt_status_t st = prepare_graph(c, ub);
    const rtm_graph_io_t *io = &c->cur.io;
    fill_masks(c, ub->n_tokens, ub->n_kv);
    if (c->model->hp.rope_factors) fill_rope(c, ub->n_tokens);
    if (st == RT_OK) st = set_inputs(c, io);
    if (st == RT_OK) st = rt_sched_graph_compute(c->sched, io->graph);
    if (st == RT_OK) st = get_output(io, out);
    if (st == RT_OK && out != NULL && io->logits != NULL) {
        st = check_logits(c, out, rt_nbytes(io->logits) / sizeof out[0]);
        if (st != RT_OK) return st;
    }
    if (st == RT_OK) {
        count_run(c);
        return RT_OK;
    }
    drop_graph(c); /* a failed run may leave it half done: plan again next time */
    return rtm_error_core(st, "rtm_decode");
}

/* The graph of n staged tokens of which n_out (listed in out_ids_buf) keep
 * their logits: the last token's (also when none does), every token's, or
 * those the out_ids input names. */
static rtm_ubatch_t ubatch_of(const rtm_context_t *c, const rtm_part_t *part, int32_t n, int32_t n_out) {
    const bool all = n_out == n && (n > 1 || c->logits_all);
    const bool last = n_out == 0 || (n_out == 1 && c->out_ids_buf[0] == n - 1);
    return (rtm_ubatch_t){.n_tokens = n, .n_kv = kv_rows(c), .n_past = c->rows_buf[0],
                          .all_logits = all, .part = *part,
                          .n_out_ids = all || last ? 0 : n_out, .hidden = c->hidden};
}

/* Tokens [i0, i0 + n) of q, one graph; the logits kept go to rows *row..
 * of c->logits, *row advanced past them. */
static rt_status_t run_ubatch(rtm_context_t *c, const decode_req_t *q, int32_t i0, int32_t n,
                              int32_t *row) {
    int32_t n_out = 0;
    for (int32_t i = 0; i < n; i++)
        if (req_wants(q, i0 + i)) c->out_ids_buf[n_out++] = i;
    take_cells(c, q, i0, n);
    const rtm_ubatch_t ub = ubatch_of(c, &c->layers, n, n_out);
    float *out = n_out ? c->logits + (size_t)*row * (size_t)c->n_out : NULL;
    const rt_status_t st = run_graph(c, &ub, out);
    if (st != RT_OK) untake_cells(c, n);
    *row += n_out;
    return st;
}

static rt_status_t check_tokens(const rtm_context_t *c, const rtm_token_t *tokens, int32_t n) {
    if (tokens == NULL || n < 1)
        return rtm_error(RT_ERR_INVALID_ARGUMENT, "rtm_decode: no tokens (n = %d)", n);
    for (int32_t i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= c->model->hp.n_vocab)
            return rtm_error(RT_ERR_INVALID_ARGUMENT, "rtm_decode: token %d (at %d) is not in "
                             "0..%d", tokens[i], i, c->model->hp.n_vocab - 1);
    if (n > c->n_ctx - c->kv.n_used)
        return rtm_error(RT_ERR_DOES_NOT_FIT, "rtm_decode: %d tokens do not fit the %d free cells "
                         "of a context of %d", n, c->n_ctx - c->kv.n_used, c->n_ctx);
    return RT_OK;
}

static rt_status_t check_decode(const rtm_context_t *c, const rtm_token_t *tokens, int32_t n) {
    const rt_status_t st = check_tokens(c, tokens, n);
    if (st != RT_OK) return st;
    if (c->model->hp.embeddings && (c->kv.n_used > 0 || n > c->n_batch))
        return rtm_error(RT_ERR_INVALID_ARGUMENT, "rtm_decode: an embedding model takes its whole "
                         "input in one decode of at most n_batch (%d) tokens, after "
                         "rtm_context_clear (%d tokens, %d before)", c->n_batch, n, c->kv.n_used);
    return RT_OK;
}

static rt_status_t reserve_logits(rtm_context_t *c, int32_t rows) {
    if (rows <= c->logits_cap) return RT_OK;
    float *l = realloc(c->logits, (size_t)rows * (size_t)c->n_out * sizeof l[0]);
    if (l == NULL) return rtm_error(RT_ERR_OUT_OF_MEMORY, "rtm_decode: no memory for logits");
    c->logits = l;
    c->logits_cap = rows;
    return RT_OK;
}

/* Which row of c->logits each token of q will have (-1: none), room for
 * them; the count into *out_rows. */
static rt_status_t map_outputs(rtm_context_t *c, const decode_req_t *q, int32_t *out_rows) {
    *out_rows = 0;
    if (q->n > c->out_row_cap) {
        int32_t *r = realloc(c->out_row, (size_t)q->n * sizeof r[0]);
        if (r == NULL) return rtm_error(RT_ERR_OUT_OF_MEMORY, "rtm_decode: no memory for %d tokens", q->n);
        c->out_row = r;
        c->out_row_cap = q->n;
    }
    c->n_out_row = 0;
    for (int32_t i = 0; i < q->n; i++) c->out_row[i] = req_wants(q, i) ? (*out_rows)++ : -1;
    const rt_status_t st = reserve_logits(c, *out_rows);
    if (st == RT_OK) c->n_out_row = q->n;
    return st;
}

/* An embeddings context's rows (every token's hidden state) pooled into
 * c->pooled, of unit length (a zero vector stays zero). */
static void pool_rows(rtm_context_t *c) {
    const int32_t n_embd = c->n_out, n = c->n_logits, first = c->pooling == RTM_POOLING_LAST ? n - 1 : 0;
    double norm = 0;
    for (int32_t k = 0; k < n_embd; k++) {
        double sum = 0; /* in double: a mean over thousands of tokens */
        for (int32_t r = first; r < n; r++) sum += c->logits[(size_t)r * (size_t)n_embd + (size_t)k];
        c->pooled[k] = (float)(sum / (n - first));
        norm += (double)c->pooled[k] * c->pooled[k];
    }
    const double scale = norm > 0 ? 1.0 / sqrt(norm) : 0.0;
    for (int32_t k = 0; k < n_embd; k++) c->pooled[k] = (float)(c->pooled[k] * scale);
}

/* q in ubatches of at most n_batch tokens, in order (a token sees the
 * earlier ones of its sequence, cached by the ubatches before). */
static rt_status_t decode(rtm_context_t *c, const decode_req_t *q) {
    int32_t rows = 0, row = 0;
    rt_status_t st = map_outputs(c, q, &rows);
    c->n_logits = 0;
    for (int32_t i = 0; st == RT_OK && i < q->n; i += c->n_batch)
        st = run_ubatch(c, q, i, q->n - i < c->n_batch ? q->n - i : c->n_batch, &row);
    if (st == RT_OK) c->n_logits = rows;
    else c->n_out_row = 0;
    if (st == RT_OK && c->hidden && rows > 0) pool_rows(c);
    return st;
}

static rt_status_t check_whole(const rtm_context_t *c, const char *fn) {
    if (c == NULL) return rtm_error(RT_ERR_INVALID_ARGUMENT, "%s: NULL context", fn);
    if (!rtm_part_embeds(&c->layers) || !rtm_part_heads(&c->layers, c->model->hp.n_layer))
        return rtm_error(RT_ERR_INVALID_ARGUMENT, "%s: the context runs layers [%d, %d) "
                         "only: use rtm_decode_part", fn, c->layers.layer_begin, c->layers.layer_end);
    return RT_OK;
}

rt_status_t rtm_decode(rtm_context_t *c, const rtm_token_t *tokens, int32_t n) {
    rt_status_t st = check_whole(c, "rtm_decode");
    if (st == RT_OK) st = check_decode(c, tokens, n);
    if (st != RT_OK) return st;
    const decode_req_t q = {tokens, NULL, NULL, n, c->logits_all};
    return decode(c, &q);
}

static rt_status_t check_batch(const rtm_context_t *c, const rtm_batch_t *b) {
    if (c->model->hp.embeddings || c->hidden)
        return rtm_error(RT_ERR_INVALID_ARGUMENT, "rtm_decode_batch: %s decodes with rtm_decode",
                         c->hidden ? "an embeddings context (its pooling is over one decode)"
                                   : "an embedding model");
    for (int32_t i = 0; b->seq != NULL && i < b->n_tokens; i++)
        if (b->seq[i] < 0 || b->seq[i] >= c->kv.n_seq_max)
            return rtm_error(RT_ERR_INVALID_ARGUMENT, "rtm_decode_batch: sequence %d (token %d) is "
                             "not in 0..%d", b->seq[i], i, c->kv.n_seq_max - 1);
    return check_tokens(c, b->tokens, b->n_tokens);
}

rt_status_t rtm_decode_batch(rtm_context_t *c, const rtm_batch_t *batch) {
    rt_status_t st = check_whole(c, "rtm_decode_batch");
    if (st == RT_OK && batch == NULL) st = rtm_error(RT_ERR_INVALID_ARGUMENT, "rtm_decode_batch: NULL batch");
    if (st != RT_OK) return st;
    rtm_batch_t b = {sizeof b, 0, NULL, NULL, NULL};
    rtm_params_copy(&b, sizeof b, batch);
    st = check_batch(c, &b);
    if (st != RT_OK) return st;
    const decode_req_t q = {b.tokens, b.seq, b.logits, b.n_tokens, false};
    return decode(c, &q);
}

//===--- parts ---===//

/* A part of the context's layers: a range, or one block of one layer; a
 * range of no layers only to embed or to run the head. */
static rt_status_t check_part(const rtm_context_t *c, const rtm_part_t *p) {
    const int32_t n_layer = c->model->hp.n_layer, b = p->layer_begin, e = p->layer_end;
    const bool inside = b >= c->layers.layer_begin && e <= c->layers.layer_end && b <= e;
    const bool shape = p->block == RTM_BLOCK_LAYERS
                     ? (b < e || ((b == 0) != (e == n_layer)))
                     : (p->block == RTM_BLOCK_ATTN || p->block == RTM_BLOCK_FFN) && e == b + 1;
    if (c->kv.n_seq_max > 1)
        return rtm_error(RT_ERR_INVALID_ARGUMENT, "rtm_decode_part: the context holds %d sequences; "
                         "parts run one", c->kv.n_seq_max);
    if (inside && shape) return RT_OK;
    return rtm_error(RT_ERR_INVALID_ARGUMENT, "rtm_decode_part: block %d of layers [%d, %d) is not "
                     "a part of the context's layers [%d, %d)", p->block, b, e,
                     c->layers.layer_begin, c->layers.layer_end);
}

static rt_status_t check_part_inputs(const rtm_context_t *c, const rtm_part_t *p,
                                     const rtm_token_t *tokens, const float *hidden_in, int32_t n) {
    if (rtm_part_embeds(p)) return check_decode(c, tokens, n);
    if (hidden_in == NULL || n < 1)
        return rtm_error(RT_ERR_INVALID_ARGUMENT, "rtm_decode_part: no hidden state (n = %d)", n);
    if (n > c->n_ctx - c->kv.n_used)
        return rtm_error(RT_ERR_DOES_NOT_FIT, "rtm_decode_part: %d positions after %d do not fit a "
                         "context of %d", n, c->kv.n_used, c->n_ctx);
    return RT_OK;
}

/* One graph of part over n positions after seq 0's; the cells are taken
 * for the run only (rtm_context_advance keeps them). */
static rt_status_t run_part(rtm_context_t *c, const rtm_part_t *part, const rtm_token_t *tokens,
                            int32_t n, float *out) {
    const decode_req_t q = {tokens, NULL, NULL, n, c->logits_all};
    take_cells(c, &q, 0, n);
    const rtm_ubatch_t ub = {n, kv_rows(c), c->rows_buf[0], c->logits_all, *part, 0, c->hidden};
    const rt_status_t st = run_graph(c, &ub, out);
    untake_cells(c, n);
    return st;
}

rt_status_t rtm_decode_part(rtm_context_t *c, const rtm_part_t *part, const rtm_token_t *tokens,
                            const float *hidden_in, int32_t n, float *hidden_out) {
    if (c == NULL || part == NULL)
        return rtm_error(RT_ERR_INVALID_ARGUMENT, "rtm_decode_part: NULL context or part");
    rtm_part_t p = {sizeof p, 0, 0, RTM_BLOCK_LAYERS};
    rtm_params_copy(&p, sizeof p, part);
    rt_status_t st = c->model->desc->parts ? check_part(c, &p)
                   : rtm_error(RT_ERR_UNSUPPORTED, "rtm_decode_part: architecture %s does not run "
                               "in parts", c->model->arch);
    if (st == RT_OK) st = check_part_inputs(c, &p, tokens, hidden_in, n);
    if (st == RT_OK && n > c->n_batch)
        st = rtm_error(RT_ERR_INVALID_ARGUMENT, "rtm_decode_part: %d positions, n_batch is %d", n,
                       c->n_batch);
    const bool heads = rtm_part_heads(&p, c->model->hp.n_layer);
    int32_t rows = 0;
    const decode_req_t q = {tokens, NULL, NULL, n, c->logits_all};
    if (st == RT_OK && heads) st = map_outputs(c, &q, &rows);
    if (st != RT_OK) return st;
    c->hidden_in = hidden_in;
    c->n_logits = 0;
    st = run_part(c, &p, tokens, n, heads ? c->logits : hidden_out);
    c->hidden_in = NULL;
    if (st == RT_OK && heads) c->n_logits = rows;
    if (st == RT_OK && heads && c->hidden && rows > 0) pool_rows(c);
    return st;
}

rt_status_t rtm_context_advance(rtm_context_t *c, int32_t n) {
    if (c == NULL || n < 0 || n > c->n_ctx - c->kv.n_used || c->kv.n_seq_max > 1)
        return rtm_error(RT_ERR_DOES_NOT_FIT, "rtm_context_advance: %d positions after %d do not "
                         "fit the context (or it holds several sequences)", n, c ? c->kv.n_used : 0);
    for (int32_t i = 0; i < n; i++) rtm_kv_cell_take(&c->kv, 0);
    return RT_OK;
}

//===--- the graph, for tools that draw it ---===//

rt_status_t rtm_context_graph(const rtm_context_t *c, int32_t n_tokens, int32_t n_past,
                              rt_context_t **out_gctx, rt_graph_t **out_graph) {
    if (out_gctx) *out_gctx = NULL;
    if (out_graph) *out_graph = NULL;
    if (c == NULL || out_gctx == NULL || out_graph == NULL || n_tokens < 1 || n_tokens > c->n_batch ||
        n_past < 0)
        return rtm_error(RT_ERR_INVALID_ARGUMENT, "rtm_context_graph: %d tokens after %d (n_batch %d), "
                         "or a NULL argument", n_tokens, n_past, c ? c->n_batch : 0);
    if (n_tokens > c->n_ctx - n_past)
        return rtm_error(RT_ERR_DOES_NOT_FIT, "rtm_context_graph: %d tokens after %d do not fit a "
                         "context of %d", n_tokens, n_past, c->n_ctx);
    /* its own memory, not graph_mem: the graph being run stays allocated */
    const rt_context_params_t p = {.struct_size = sizeof p, .mem_size = c->graph_mem_size, .no_alloc = true};
    const rt_status_t st = rt_context_create(&p, out_gctx);
    if (st != RT_OK) return rtm_error_core(st, "rtm_context_graph: graph context");
    /* the cache rows a decode at n_past reads, as kv_rows counts them */
    const int32_t padded = (n_past + n_tokens + RTM_KV_PAD - 1) / RTM_KV_PAD * RTM_KV_PAD;
    const rtm_ubatch_t ub = {.n_tokens = n_tokens, .n_kv = padded < c->n_ctx ? padded : c->n_ctx,
                             .n_past = n_past, .all_logits = c->logits_all, .part = c->layers,
                             .hidden = c->hidden};
    rtm_graph_io_t io;
    rtm_graph_build(c->model, &c->kv, *out_gctx, &ub, &io);
    if (c->check_numerics) rtm_numerics_keep_nodes(io.graph);
    *out_graph = io.graph;
    return RT_OK;
}

//===--- getters ---===//

const float *rtm_get_embeddings(const rtm_context_t *c) {
    if (c == NULL || c->n_logits == 0 || c->pooling == RTM_POOLING_DEFAULT) return NULL;
    return c->hidden ? c->pooled : c->logits;
}

/* Token i's row of the last decode, when it kept one. */
static const float *row_ith(const rtm_context_t *c, int32_t i) {
    if (c->n_logits == 0 || i < 0 || i >= c->n_out_row || c->out_row[i] < 0) return NULL;
    return c->logits + (size_t)c->out_row[i] * (size_t)c->n_out;
}

const float *rtm_get_embeddings_ith(const rtm_context_t *c, int32_t i) {
    return c != NULL && c->hidden ? row_ith(c, i) : NULL;
}

const float *rtm_get_logits(const rtm_context_t *c) {
    if (c == NULL || c->n_logits == 0 || c->pooling != RTM_POOLING_DEFAULT) return NULL;
    return c->logits + (size_t)(c->n_logits - 1) * (size_t)c->n_out;
}

const float *rtm_get_logits_ith(const rtm_context_t *c, int32_t i) {
    return c != NULL && c->pooling == RTM_POOLING_DEFAULT ? row_ith(c, i) : NULL;
}

rtm_pooling_t rtm_context_pooling(const rtm_context_t *c) {
    return c != NULL ? c->pooling : RTM_POOLING_DEFAULT;
}

int32_t rtm_context_n_past(const rtm_context_t *c) { return c->kv.seq_n_past[0]; }
int32_t rtm_context_n_ctx(const rtm_context_t *c) { return c->n_ctx; }
int32_t rtm_context_n_batch(const rtm_context_t *c) { return c->n_batch; }
int32_t rtm_context_n_seq_max(const rtm_context_t *c) { return c->kv.n_seq_max; }
bool rtm_context_flash_attn(const rtm_context_t *c) { return c != NULL && c->kv.fused; }

int32_t rtm_seq_n_past(const rtm_context_t *c, int32_t seq) {
    return c != NULL && seq >= 0 && seq < c->kv.n_seq_max ? c->kv.seq_n_past[seq] : -1;
}

void rtm_seq_clear(rtm_context_t *c, int32_t seq) {
    if (c == NULL || seq < 0 || seq >= c->kv.n_seq_max) return;
    rtm_kv_seq_clear(&c->kv, seq);
}

void rtm_seq_keep(rtm_context_t *c, int32_t seq, int32_t n_keep) {
    if (c == NULL || seq < 0 || seq >= c->kv.n_seq_max || n_keep < 0) return;
    rtm_kv_seq_keep(&c->kv, seq, n_keep);
}

rt_sched_t *rtm_context_sched(const rtm_context_t *c) { return c != NULL ? c->sched : NULL; }

void rtm_context_clear(rtm_context_t *c) {
    rtm_kv_seq_clear(&c->kv, -1);
    c->n_logits = 0;
    c->n_out_row = 0;
}

rt_status_t rtm_context_get_stats(const rtm_context_t *c, rtm_context_stats_t *out) {
    return rtm_stats_copy(out, c ? &c->stats : NULL, sizeof c->stats, "rtm_context_get_stats");
}
