/* SPDX-License-Identifier: MIT */
/* fuzz-model.c: the libFuzzer target for the model library (librtmodel).
 * Each input is the metadata of a GGUF model (header, keys, tensor infos:
 * the bytes before the tensor data); behind it go the real weights of
 * stories260K, placed where the input's own layout says the data section
 * starts. The file (in memory, through a memfd) then goes through what a
 * user's run does: rtm_model_load (vocabulary, hyperparameters, tensor
 * shapes, placement on the CPU plugin), tokenizing a prompt, a context,
 * a short decode and sampling. A refusal must come with a message;
 * nothing may crash, leak, abort or hang.
 *
 * The model library is built with the fuzzer's instrumentation; the
 * runtime is the build's librtcore, and the CPU plugin is loaded from the
 * build next to this program. The seeds are tests/fuzz/corpus/model: the
 * headers of stories260K and of each malformed model of
 * tests/model_corpus.c (written by build/tests/make-model-corpus). */
#include "../../abi/rt_gguf.h"
#include "../../model/rt_model.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                         \
    do {                                                                                    \
        if (!(cond)) {                                                                      \
            fprintf(stderr, "fuzz-model: %s:%d: %s (%s)\n", __FILE__, __LINE__, #cond,      \
                    rtm_last_error());                                                      \
            abort();                                                                        \
        }                                                                                   \
    } while (0)

static rt_registry_t *registry;
static uint8_t *weights; /* stories260K's data section */
static size_t n_weights;
static int memfd = -1;

//===--- setup: the weights and the CPU plugin ---===//

static void load_weights(void) {
    char path[PATH_MAX];
    const char *dir = getenv("RT_TEST_MODELS_DIR");
    snprintf(path, sizeof path, "%s/stories260K.gguf", dir ? dir : "models"); /* bundled */
    rt_gguf_t *g = NULL;
    if (rt_gguf_open(path, NULL, &g) != RT_OK) {
        fprintf(stderr, "fuzz-model: %s: %s (run from the repository root)\n", path, rt_last_error());
        exit(1);
    }
    n_weights = rt_gguf_file_size(g) - rt_gguf_data_offset(g);
    weights = malloc(n_weights);
    CHECK(weights != NULL);
    memcpy(weights, (const uint8_t *)rt_gguf_file_data(g) + rt_gguf_data_offset(g), n_weights);
    rt_gguf_destroy(g);
}

static void open_registry(void) {
    char exe[PATH_MAX], plugins[PATH_MAX + 32];
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    CHECK(n > 0);
    exe[n] = '\0';
    *strrchr(exe, '/') = '\0';
    snprintf(plugins, sizeof plugins, "%s/../lib/rt-plugins", exe);
    char *real = realpath(plugins, NULL);
    CHECK(real != NULL);
    setenv("RT_PLUGINS", "cpu", 1);
    const rt_registry_options_t o = {.struct_size = sizeof o, .plugin_path = real};
    CHECK(rt_registry_create(&o, &registry) == RT_OK);
    CHECK(rt_registry_device_by_name(registry, "cpu0") != NULL);
    free(real);
}

static void quiet(rt_log_level_t level, const char *message, void *user_data) {
    (void)level, (void)message, (void)user_data;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    rt_log_set(quiet, NULL);
    load_weights();
    open_registry();
    memfd = memfd_create("fuzz-model.gguf", 0);
    CHECK(memfd >= 0);
    return 0;
}

//===--- one input ---===//

/* The file: the input's first data_offset bytes (zero-padded when the
 * input is shorter), then the weights. False when the input is not a GGUF
 * header the reader accepts with weights behind it. */
static bool write_file(const uint8_t *data, size_t size) {
    uint8_t *buf = malloc(size + n_weights);
    CHECK(buf != NULL);
    memcpy(buf, data, size);
    memcpy(buf + size, weights, n_weights);
    rt_gguf_t *g = NULL;
    /* The layout the input declares says where its data section starts. */
    bool ok = rt_gguf_parse(buf, size + n_weights, "input", NULL, &g) == RT_OK;
    const uint64_t start = ok ? rt_gguf_data_offset(g) : 0;
    rt_gguf_destroy(g);
    ok = ok && start <= size + n_weights && ftruncate(memfd, 0) == 0;
    if (ok) {
        const size_t head = start < size ? (size_t)start : size;
        uint8_t *file = calloc(1, (size_t)start + n_weights);
        CHECK(file != NULL);
        memcpy(file, data, head);
        memcpy(file + start, weights, n_weights);
        ok = pwrite(memfd, file, (size_t)start + n_weights, 0) == (ssize_t)(start + n_weights);
        free(file);
    }
    free(buf);
    return ok;
}

/* A prompt, a context of 8, two tokens decoded, one sampled. */
static void run(rtm_model_t *m) {
    rtm_token_t tok[16];
    int32_t n = 0;
    const rtm_vocab_t *v = rtm_model_vocab(m);
    if (rtm_vocab_tokenize(v, "Once upon", 9, true, false, tok, 16, &n) != RT_OK || n < 1) return;
    const rtm_context_params_t cp = {.struct_size = sizeof cp, .n_ctx = 8, .n_batch = 4, .n_threads = 1};
    rtm_context_t *c = NULL;
    rtm_sampler_t *s = NULL;
    const rtm_sampler_params_t sp = {.struct_size = sizeof sp, .temp = 0.8f, .top_k = 8, .top_p = 0.9f};
    if (rtm_context_create(m, &cp, &c) == RT_OK && rtm_sampler_create(&sp, &s) == RT_OK &&
        rtm_decode(c, tok, n < 2 ? n : 2) == RT_OK) {
        const rtm_token_t t = rtm_sampler_sample(s, rtm_get_logits(c), rtm_model_n_vocab(m));
        CHECK(t >= 0 && t < rtm_model_n_vocab(m));
    } else {
        CHECK(rtm_last_error()[0] != '\0');
    }
    rtm_sampler_destroy(s);
    rtm_context_destroy(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!write_file(data, size)) return 0;
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", memfd);
    const rtm_model_params_t mp = {.struct_size = sizeof mp, .registry = registry, .no_progress = true};
    rtm_model_t *m = NULL;
    if (rtm_model_load(path, &mp, &m) != RT_OK) {
        CHECK(m == NULL && rtm_last_error()[0] != '\0');
        return 0;
    }
    run(m);
    rtm_model_destroy(m);
    return 0;
}
