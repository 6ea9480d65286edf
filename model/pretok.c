/* SPDX-License-Identifier: MIT */
/* pretok.c: which pre-tokenizer a BPE vocabulary's tokenizer.ggml.pre
 * names, and running it. A pre-tokenizer is a short chain of splits
 * (llama.cpp's regex lists, in its order): each cuts every piece the
 * previous ones left into smaller pieces, and BPE merges inside the final
 * pieces only. A name not in the table is refused by name, never guessed:
 * the wrong split gives plausible but wrong tokens. */
#include "vocab_impl.h"

#include <string.h>

/* Each name llama.cpp's converter writes, with the chain it stands for. */
static const rtm_pretok_t table[] = {
    {"default", {RTM_PRE_GPT2}, 1, false},
    {"gpt-2", {RTM_PRE_GPT2}, 1, false},
    {"mpt", {RTM_PRE_GPT2}, 1, false},
    {"olmo", {RTM_PRE_GPT2}, 1, false},
    {"llama-bpe", {RTM_PRE_LLAMA3}, 1, true},
    {"llama3", {RTM_PRE_LLAMA3}, 1, true},
    {"qwen2", {RTM_PRE_QWEN2}, 1, false},
    {"deepseek-r1-qwen", {RTM_PRE_QWEN2}, 1, false},
    {"qwen35", {RTM_PRE_QWEN35}, 1, false},
    {"starcoder", {RTM_PRE_DIGIT, RTM_PRE_GPT2}, 2, false},
    {"refact", {RTM_PRE_DIGIT, RTM_PRE_GPT2}, 2, false},
    {"command-r", {RTM_PRE_DIGIT, RTM_PRE_GPT2}, 2, false},
    {"smollm", {RTM_PRE_DIGIT, RTM_PRE_GPT2}, 2, false},
    {"falcon", {RTM_PRE_FALCON_PUNCT, RTM_PRE_GPT2, RTM_PRE_ASCII_DIGITS3}, 3, false},
    {"deepseek-coder", {RTM_PRE_NEWLINE, RTM_PRE_SPACE_LETTERS, RTM_PRE_SPACE_PUNCT, RTM_PRE_CJK,
                        RTM_PRE_DIGIT}, 5, false},
    {"deepseek-llm", {RTM_PRE_NEWLINE, RTM_PRE_DSLLM_LETTERS, RTM_PRE_DSLLM_PUNCT,
                      RTM_PRE_TRAILING_SPACE, RTM_PRE_CJK, RTM_PRE_DIGITS}, 6, false},
};

const rtm_pretok_t *rtm_pretok_find(const char *name) {
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(table[i].name, name) == 0) return &table[i];
    return NULL;
}

static size_t split(rtm_pre_t pre, const uint32_t *cpts, size_t n, uint32_t *word_len) {
    switch (pre) {
    case RTM_PRE_GPT2: return rtm_pretokenize_gpt2(cpts, n, word_len);
    case RTM_PRE_LLAMA3: return rtm_pretokenize_llama3(cpts, n, word_len);
    case RTM_PRE_QWEN2: return rtm_pretokenize_qwen2(cpts, n, word_len);
    case RTM_PRE_QWEN35: return rtm_pretokenize_qwen35(cpts, n, word_len);
    default: return rtm_pretokenize_match(pre, cpts, n, word_len);
    }
}

size_t rtm_pretokenize(const rtm_pretok_t *p, const uint32_t *cpts, size_t n, uint32_t *word_len,
                       uint32_t *scratch) {
    if (n == 0) return 0;
    uint32_t *cur = word_len, *next = scratch;
    size_t n_cur = 1;
    cur[0] = (uint32_t)n;
    for (int s = 0; s < p->n_splits; s++) {
        size_t n_next = 0;
        for (size_t w = 0, at = 0; w < n_cur; at += cur[w++])
            n_next += split(p->splits[s], cpts + at, cur[w], next + n_next);
        uint32_t *t = cur;
        cur = next;
        next = t;
        n_cur = n_next;
    }
    if (cur != word_len) memcpy(word_len, cur, n_cur * sizeof word_len[0]);
    return n_cur;
}
