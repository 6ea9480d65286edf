/* SPDX-License-Identifier: MIT */
/* peer_logits.c: records llama.cpp's outputs for a model as a fixture of
 * tests/test-model-arch.c: the logits of the last of a fixed token
 * sequence (the first decode step) and 32 greedy tokens after it; or, with
 * a prompt, the prompt's tokens as llama.cpp tokenizes it (special tokens
 * added as the file says) and the 32 greedy tokens after it, without the
 * logits (a real model's vocabulary is too large for a fixture) but with
 * the N_TOP largest first-step logits and their ids ("top N: id logit ..."
 * after the greedy line); or, with
 * --embed, an embedding model's mean-pooled unit embedding of the fixed
 * sequence ("embedding N: ..."). Built
 * against a llama.cpp build outside this repository by tests/arch/peer.sh
 * (never part of rt's build); the fixture format is in tests/arch/README.md. */
#include "llama.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_GREEDY 32
#define N_TOP 64

static const llama_token prompt[] = {259, 40, 101, 72, 108, 257, 111, 44, 258, 3, 97, 200};
enum { N_PROMPT = sizeof prompt / sizeof prompt[0] };

static int argmax(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

/* The ids of the n largest of x (n_vocab of them), largest first. */
static void top_n(const float *x, int n_vocab, int n, int *ids) {
    for (int k = 0; k < n; k++) {
        int best = -1;
        for (int i = 0; i < n_vocab; i++) {
            bool taken = false;
            for (int j = 0; j < k && !taken; j++) taken = ids[j] == i;
            if (!taken && (best < 0 || x[i] > x[best])) best = i;
        }
        ids[k] = best;
    }
}

static int record(struct llama_context *ctx, const llama_token *in, int n_in, int n_vocab, bool logits_too,
                  FILE *f) {
    llama_token toks[256];
    int top[N_TOP];
    float top_logits[N_TOP];
    memcpy(toks, in, (size_t)n_in * sizeof toks[0]);
    if (llama_decode(ctx, llama_batch_get_one(toks, n_in)) != 0) return 1;
    const float *logits = llama_get_logits_ith(ctx, -1);
    top_n(logits, n_vocab, N_TOP, top);
    for (int k = 0; k < N_TOP; k++) top_logits[k] = logits[top[k]];
    fprintf(f, "tokens %d:", n_in);
    for (int i = 0; i < n_in; i++) fprintf(f, " %d", in[i]);
    fprintf(f, "\nlogits %d:", logits_too ? n_vocab : 0);
    for (int i = 0; logits_too && i < n_vocab; i++) fprintf(f, " %.9g", logits[i]);
    fprintf(f, "\ngreedy %d:", N_GREEDY);
    for (int i = 0; i < N_GREEDY; i++) {
        llama_token t = argmax(llama_get_logits_ith(ctx, -1), n_vocab);
        fprintf(f, " %d", t);
        if (llama_decode(ctx, llama_batch_get_one(&t, 1)) != 0) return 1;
    }
    fprintf(f, "\n");
    if (logits_too) return 0;
    fprintf(f, "top %d:", N_TOP);
    for (int k = 0; k < N_TOP; k++) fprintf(f, " %d %.9g", top[k], top_logits[k]);
    fprintf(f, "\n");
    return 0;
}

/* The pooled embedding of the fixed sequence, normalised to unit length
 * (llama.cpp pools; rt also normalises). */
static int record_embedding(struct llama_context *ctx, int n_embd, FILE *f) {
    llama_token toks[N_PROMPT];
    memcpy(toks, prompt, sizeof toks);
    if (llama_decode(ctx, llama_batch_get_one(toks, N_PROMPT)) != 0) return 1;
    const float *e = llama_get_embeddings_seq(ctx, 0);
    if (e == NULL) return 1;
    double norm = 0;
    for (int i = 0; i < n_embd; i++) norm += (double)e[i] * e[i];
    fprintf(f, "tokens %d:", N_PROMPT);
    for (int i = 0; i < N_PROMPT; i++) fprintf(f, " %d", prompt[i]);
    fprintf(f, "\nembedding %d:", n_embd);
    for (int i = 0; i < n_embd; i++) fprintf(f, " %.9g", e[i] / sqrt(norm));
    fprintf(f, "\n");
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: %s MODEL.gguf OUT.ref [PROMPT | --embed]\n", argv[0]);
        return 2;
    }
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    struct llama_model *model = llama_model_load_from_file(argv[1], mp);
    if (model == NULL) return 1;
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 64;
    cp.n_batch = cp.n_ubatch = 64;
    cp.n_threads = cp.n_threads_batch = 1;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.type_k = cp.type_v = GGML_TYPE_F32; /* rt's cache is F32 */
    cp.swa_full = true;
    const bool embed = argc == 4 && strcmp(argv[3], "--embed") == 0;
    if (embed) {
        cp.embeddings = true;
        cp.pooling_type = LLAMA_POOLING_TYPE_MEAN;
    }
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (ctx == NULL) return 1;
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", argv[2]);
    FILE *f = fopen(tmp, "w");
    const struct llama_vocab *vocab = llama_model_get_vocab(model);
    llama_token in[256];
    int n_in = N_PROMPT;
    memcpy(in, prompt, sizeof prompt);
    if (argc == 4 && !embed) n_in = llama_tokenize(vocab, argv[3], (int32_t)strlen(argv[3]), in, 256, true, false);
    int rc = f == NULL || n_in <= 0;
    if (!rc) rc = embed ? record_embedding(ctx, llama_model_n_embd(model), f)
                        : record(ctx, in, n_in, llama_vocab_n_tokens(vocab), argc == 3, f);
    if (f != NULL && fclose(f) != 0) rc = 1;
    if (rc == 0 && rename(tmp, argv[2]) != 0) rc = 1;
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return rc;
}
