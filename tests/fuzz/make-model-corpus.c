/* SPDX-License-Identifier: MIT */
/* make-model-corpus.c: writes the malformed models of tests/model_corpus.c
 * into a directory, as fuzz-model's seeds (headers only: the fuzzer puts
 * the real weights behind them) or whole (to try them by hand):
 *
 *     make-model-corpus [--whole] SOURCE.gguf DIR
 *
 * DIR/stories260K.gguf is the source unchanged, DIR/NAME.gguf each variant.
 * tests/fuzz/corpus/model holds its output; regenerate it when a variant
 * is added. */
#include "../model_corpus.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    const bool whole = argc == 4 && strcmp(argv[1], "--whole") == 0;
    if (argc != 3 + whole) {
        fprintf(stderr, "usage: make-model-corpus [--whole] SOURCE.gguf DIR\n");
        return 2;
    }
    const char *src = argv[1 + whole], *dir = argv[2 + whole];
    const mc_variant_t same = {.name = "stories260K", .kind = MC_SAME, .key = ""};
    char path[4096];
    for (int i = -1; i < mc_n_variants; i++) {
        const mc_variant_t *v = i < 0 ? &same : &mc_variants[i];
        snprintf(path, sizeof path, "%s/%s.gguf", dir, v->name);
        if (mc_write(src, path, v, !whole) != RT_OK) {
            fprintf(stderr, "make-model-corpus: %s: %s\n", path, rt_last_error());
            return 1;
        }
    }
    printf("make-model-corpus: %d files in %s\n", mc_n_variants + 1, dir);
    return 0;
}
