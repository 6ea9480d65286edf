/* SPDX-License-Identifier: MIT */
/* fuzz-embed.c: the libFuzzer target for rt-server's /v1/embeddings body
 * parser (tools/server_embed.c), which reads what any client sends. Each
 * input is a body, read for a vocabulary of 1000 tokens and vectors of 8.
 * A refused body must say why and name its field in text a JSON error can
 * carry (whole UTF-8 characters); an accepted one must hold 1 to 2048
 * inputs, each a non-empty text or ids inside the vocabulary, and its
 * answer, built from made-up vectors, must be the encoding it asked for
 * (8 numbers, or the 44 base64 characters of 32 bytes). Nothing may
 * crash, leak, abort or hang. Built by `ninja fuzz` when rt-server is
 * (jansson); the seeds are tests/fuzz/corpus/embed (tests/fuzz/run.sh). */
#include "../../tools/server_embed.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define N_VOCAB 1000
#define N_EMBD 8

#define CHECK(cond)                                                                    \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "fuzz-embed: %s:%d: %s\n", __FILE__, __LINE__, #cond);     \
            abort();                                                                   \
        }                                                                              \
    } while (0)

static void check_input(const srv_embed_input_t *in) {
    if (in->text) {
        CHECK(in->len > 0 && in->tokens == NULL);
        return;
    }
    CHECK(in->n_tokens > 0 && in->tokens != NULL);
    for (int32_t k = 0; k < in->n_tokens; k++) CHECK(in->tokens[k] >= 0 && in->tokens[k] < N_VOCAB);
}

static void check_answer(const srv_embed_request_t *q) {
    float *v = malloc((size_t)q->n_inputs * N_EMBD * sizeof v[0]);
    CHECK(v != NULL);
    for (size_t i = 0; i < (size_t)q->n_inputs * N_EMBD; i++) v[i] = (float)i * 0.25f - 1.0f;
    json_t *a = srv_embed_answer(q, v, N_EMBD, "m");
    CHECK(a != NULL);
    json_t *data = json_object_get(a, "data");
    CHECK(json_array_size(data) == (size_t)q->n_inputs);
    json_t *e = json_object_get(json_array_get(data, 0), "embedding");
    CHECK(q->base64 ? json_string_length(e) == 44 : json_array_size(e) == N_EMBD);
    char *text = json_dumps(a, JSON_COMPACT);
    CHECK(text != NULL);
    free(text);
    json_decref(a);
    free(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    srv_embed_request_t q;
    if (srv_embed_parse(&q, N_VOCAB, N_EMBD, (const char *)data, size)) {
        CHECK(q.n_inputs >= 1 && q.n_inputs <= SRV_EMBED_MAX_INPUTS);
        for (int32_t i = 0; i < q.n_inputs; i++) check_input(&q.inputs[i]);
        check_answer(&q);
    } else {
        CHECK(q.error[0] != 0);
        json_t *err = json_pack("{s:s,s:s}", "message", q.error, "param", q.param); /* NULL: not UTF-8 */
        CHECK(err != NULL);
        json_decref(err);
    }
    srv_embed_deinit(&q);
    return 0;
}
