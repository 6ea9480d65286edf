/* SPDX-License-Identifier: MIT */
/* vocab_impl.h: the vocabulary's layout, shared by vocab.c (loading,
 * special tokens, decoding), the two tokenizers and the merge engine they
 * share (merge.c).
 *
 * Token texts live in one blob, each NUL-terminated at offs[i], so a token
 * id maps to its text without a pointer per token. token_map finds an id
 * from a text (the later id wins on duplicates, as in llama.cpp). For BPE,
 * merge_map finds the rank of "left right" (the earlier rank wins). */
#ifndef RTM_VOCAB_IMPL_H
#define RTM_VOCAB_IMPL_H

#include "strmap.h"

typedef struct rtm_pretok rtm_pretok_t;

struct rtm_vocab {
    rtm_vocab_type_t type;
    int32_t n_tokens;
    char *blob;               /* every token's text, NUL-terminated */
    uint32_t *offs;           /* n_tokens: where each text starts in blob */
    uint32_t *lens;           /* n_tokens: its bytes */
    float *scores;            /* n_tokens: SPM merge priority (0 when absent) */
    int32_t *types;           /* n_tokens: RTM_TOKEN_TYPE_* */
    rtm_strmap_t token_map;   /* text -> id */
    char *merges;             /* BPE: every merge "left right", NUL-terminated */
    rtm_strmap_t merge_map;   /* BPE: "left right" -> rank */
    rtm_token_t byte_token[256]; /* the token of each byte: <0xXX> (SPM) or its
                                    GPT-2 character (BPE); RTM_TOKEN_NULL if none */
    uint32_t byte_cpt[256];   /* BPE: GPT-2's printable stand-in for each byte */
    rtm_token_t *special;     /* ids of CONTROL, USER_DEFINED and UNKNOWN tokens,
                                 longest text first: the partition order */
    int32_t n_special;
    rtm_token_t bos, eos, unk; /* RTM_TOKEN_NULL when the file sets none */
    bool add_bos;
    bool add_eos;
    bool add_space_prefix;    /* SPM: a space before text that follows BOS or a special */
    const rtm_pretok_t *pretok; /* BPE: the pre-tokenizer tokenizer.ggml.pre names */
};

static inline const char *rtm_vocab_text(const rtm_vocab_t *v, rtm_token_t t) {
    return v->blob + v->offs[t];
}

/* Where tokenizers write: up to n_max ids, counting all. */
typedef struct rtm_tok_out {
    rtm_token_t *tokens;
    int32_t n_max;
    int32_t n;                /* tokens produced, possibly more than n_max */
} rtm_tok_out_t;

static inline void rtm_tok_push(rtm_tok_out_t *out, rtm_token_t t) {
    if (out->n < out->n_max) out->tokens[out->n] = t;
    out->n++;
}

//===--- merge.c: the merge loop both tokenizers run ---===//

/* A symbol: a run of bytes of the text being merged, in a linked chain. */
typedef struct rtm_sym {
    const char *text;
    uint32_t n;               /* bytes; 0 once merged into its left neighbour */
    int32_t prev, next;       /* neighbours in the chain; -1 at the ends */
} rtm_sym_t;

/* A pair's priority: false when the two symbols (n_left then n_right bytes
 * at text) may not merge, else true with *out_key (higher merges first). */
typedef bool (*rtm_pair_key_fn)(const void *user, const char *text, size_t n_left,
                                size_t n_right, double *out_key);

typedef struct rtm_bigram {
    int32_t left, right;      /* symbol indices */
    double key;
    uint32_t size;            /* bytes of the pair when it was queued */
} rtm_bigram_t;

/* Scratch for rtm_merge, sized for the longest text it will see. */
typedef struct rtm_merge_ws {
    rtm_sym_t *syms;
    rtm_bigram_t *heap;
    size_t cap;               /* bytes of text it can take */
} rtm_merge_ws_t;

RTM_INTERNAL rt_status_t rtm_merge_ws_init(rtm_merge_ws_t *ws, size_t max_len);
RTM_INTERNAL void rtm_merge_ws_deinit(rtm_merge_ws_t *ws);
/* Splits text[0..len) (len <= ws->cap, > 0) into UTF-8 characters (by the
 * lead byte), then merges adjacent symbols, the pair with the highest key
 * first and the leftmost on ties, while any pair has a key. The result is
 * the chain from ws->syms[0] following next. */
RTM_INTERNAL void rtm_merge(rtm_merge_ws_t *ws, const char *text, size_t len, rtm_pair_key_fn key,
                            const void *user);

//===--- the tokenizers ---===//

/* Tokenizes one fragment of plain text (no special tokens in it). */
RTM_INTERNAL rt_status_t rtm_tokenize_spm(const rtm_vocab_t *v, const char *text, size_t len,
                                          bool space_prefix, rtm_tok_out_t *out);
RTM_INTERNAL rt_status_t rtm_tokenize_bpe(const rtm_vocab_t *v, const char *text, size_t len,
                                          rtm_tok_out_t *out);
RTM_INTERNAL rt_status_t rtm_tokenize_wpm(const rtm_vocab_t *v, const char *text, size_t len,
                                          rtm_tok_out_t *out);
/* BPE: fills byte_cpt (GPT-2's bytes_to_unicode). */
RTM_INTERNAL void rtm_bpe_byte_map(uint32_t byte_cpt[256]);

//===--- pre-tokenizers (pretok*.c, pretokenize.c) ---===//

/* One split of a pre-tokenizer's chain (pretok.c). */
typedef enum rtm_pre {
    RTM_PRE_GPT2,           /* GPT-2's regex (pretokenize.c) */
    RTM_PRE_LLAMA3,         /* Llama 3's regex (pretok_llama3.c) */
    RTM_PRE_QWEN2,          /* Llama 3's with single digits */
    RTM_PRE_QWEN35,         /* Qwen 2's with marks as letters */
    RTM_PRE_NEWLINE,        /* [\r\n]: the patterns of pretok_match.c */
    RTM_PRE_DIGIT,          /* \p{N} */
    RTM_PRE_DIGITS,         /* \p{N}+ */
    RTM_PRE_DIGITS3,        /* \p{N}{1,3} */
    RTM_PRE_ASCII_DIGITS3,  /* [0-9][0-9][0-9] */
    RTM_PRE_FALCON_PUNCT,   /* [\p{P}\$\+<=>\^~\|`]+ */
    RTM_PRE_SPACE_LETTERS,  /* \s?\p{L}+ */
    RTM_PRE_SPACE_PUNCT,    /* \s?\p{P}+ */
    RTM_PRE_CJK,            /* [一-龥ࠀ-一가-퟿]+ */
    RTM_PRE_TRAILING_SPACE, /* \s+$ */
    RTM_PRE_DSLLM_LETTERS,  /* \s?[A-Za-zµÀ-Ö...]+ (Deepseek LLM's cased scripts) */
    RTM_PRE_DSLLM_PUNCT,    /* \s?[!-/:-~！-／：-～‘-‟　-。]+ */
    RTM_PRE_COUNT
} rtm_pre_t;

/* A named pre-tokenizer: its splits in order; ignore_merges: a word that
 * is a token as a whole is that token (Llama 3), merges or not. */
struct rtm_pretok {
    const char *name;       /* tokenizer.ggml.pre */
    uint8_t splits[6];      /* rtm_pre_t */
    int n_splits;
    bool ignore_merges;
};

/* The pre-tokenizer tokenizer.ggml.pre names, or NULL. */
RTM_INTERNAL const rtm_pretok_t *rtm_pretok_find(const char *name);
/* Cuts n code points into words by p's chain: their lengths into word_len
 * (room for n), scratch the same size; returns the count. */
RTM_INTERNAL size_t rtm_pretokenize(const rtm_pretok_t *p, const uint32_t *cpts, size_t n,
                                    uint32_t *word_len, uint32_t *scratch);
/* The length of the contraction ('s 't 're 've 'm 'll 'd) at pos, 0 if
 * none; any_case: the letters in either case (Llama 3's (?i:...)). */
RTM_INTERNAL size_t rtm_pretok_contraction(const uint32_t *cpts, size_t n, size_t pos, bool any_case);
/* The splits, each over one piece of n code points, writing its words'
 * lengths and returning their count. */
RTM_INTERNAL size_t rtm_pretokenize_llama3(const uint32_t *cpts, size_t n, uint32_t *word_len);
RTM_INTERNAL size_t rtm_pretokenize_qwen2(const uint32_t *cpts, size_t n, uint32_t *word_len);
RTM_INTERNAL size_t rtm_pretokenize_qwen35(const uint32_t *cpts, size_t n, uint32_t *word_len);
RTM_INTERNAL size_t rtm_pretokenize_match(rtm_pre_t pattern, const uint32_t *cpts, size_t n,
                                          uint32_t *word_len);

/* GPT-2's pre-tokenizer ('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+|
 * ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+) over n code points: writes the length,
 * in code points, of each word into word_len (room for n) and returns the
 * count. (pretokenize.c) */
RTM_INTERNAL size_t rtm_pretokenize_gpt2(const uint32_t *cpts, size_t n, uint32_t *word_len);

#endif /* RTM_VOCAB_IMPL_H */
