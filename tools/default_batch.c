/* SPDX-License-Identifier: MIT */
/* default_batch.c: the prompt ubatch a tool runs with when it is not told
 * one (rt-run, rt-bench model), so that a benchmark without -b measures
 * what a plain rt-run does. */
#include "default_batch.h"

#include "../abi/rt.h"

/* The default prompt ubatch (rt_tool_default_n_batch): the batch at
 * which the CPU's packed gemm and the GPUs' tiled kernels reach their
 * prompt speed (F16 TinyLlama-shaped, 8 layers, pp512 on 2 Zen 4 cores:
 * 145 tokens/s at 32, 254 at 512), halved while the prompt graph would
 * not fit, never under the batch rt ran with before (32). */
#define DEFAULT_N_BATCH_MAX 512
#define DEFAULT_N_BATCH_MIN 32
#define DEFAULT_N_CTX_MAX 2048 /* what rtm_context_create takes for n_ctx 0 */

/* Bytes the prompt graph of n_batch tokens holds at once beyond the
 * weights and the KV cache, over-estimated: the attention scores and
 * their softmax (2 x heads x n_ctx x n_batch floats, heads taken as
 * n_embd / 64, more than any model with heads of 64 or more has) and the
 * activations (32 rows of n_embd floats per token: the FFN's widest
 * tensors and the norms' outputs). Only the products with n_batch grow. */
static double prompt_graph_bytes(const rtm_model_t *m, int32_t n_ctx, int32_t n_batch) {
    const double n_embd = rtm_model_n_embd(m), heads = n_embd / 64.0 < 1.0 ? 1.0 : n_embd / 64.0;
    return 4.0 * (double)n_batch * (2.0 * heads * (double)n_ctx + 32.0 * n_embd);
}

/* The least free memory of the devices that hold a part of the model
 * (0: none says). */
static uint64_t least_free_memory(const rtm_model_t *m) {
    uint64_t least = 0;
    for (int32_t il = -1; il <= rtm_model_n_layer(m); il++) {
        const rt_device_t *dev = rtm_model_layer_device(m, il);
        rt_device_props_t props = {.struct_size = sizeof props};
        if (dev == NULL || rt_device_get_props(dev, &props) != RT_OK || props.memory_free == 0)
            continue;
        if (least == 0 || props.memory_free < least) least = props.memory_free;
    }
    return least;
}

int32_t rt_tool_default_n_batch(const rtm_model_t *m, int32_t n_ctx) {
    if (n_ctx <= 0) {
        const int32_t train = rtm_model_n_ctx_train(m);
        n_ctx = train > 0 && train < DEFAULT_N_CTX_MAX ? train : DEFAULT_N_CTX_MAX;
    }
    const double budget = (double)least_free_memory(m) / 4.0;
    int32_t n_batch = DEFAULT_N_BATCH_MAX;
    while (n_batch > DEFAULT_N_BATCH_MIN && budget > 0.0 &&
           prompt_graph_bytes(m, n_ctx, n_batch) > budget)
        n_batch /= 2;
    return n_batch < n_ctx ? n_batch : n_ctx;
}
