/* SPDX-License-Identifier: MIT */
/* fuzz-chat.c: the libFuzzer target for the chat template interpreter
 * (model/chat_*.c), which runs the Jinja text a GGUF file brings
 * (tokenizer.chat_template): whoever wrote the file wrote the program.
 * Each input is a template. A hash of it picks the conversation (0 to 5
 * messages of every role, their contents with quotes, braces, newlines and
 * UTF-8), add_generation_prompt and whether bos_token and eos_token are
 * defined, so that one input always renders the same way. A refused
 * template or a failed rendering must come with a message; a rendering
 * must be NUL-terminated at its length, and one too large for a small
 * buffer must fit the size it asked for; nothing may crash,
 * leak, abort or hang. Built by `ninja fuzz` from the interpreter's
 * sources with the fuzzer's instrumentation, over the build's librtcore
 * (for the status names). The seeds are tests/fuzz/corpus/chat and the
 * real templates of tests/chat (tests/fuzz/run.sh). */
#include "../../model/rt_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                        \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "fuzz-chat: %s:%d: %s (%s)\n", __FILE__, __LINE__, #cond,      \
                    rtm_last_error());                                                     \
            abort();                                                                       \
        }                                                                                  \
    } while (0)

/* A rendering larger than this is refused by the buffer, which is fine. */
#define MAX_OUT (1 << 20)

static const rtm_chat_message_t conversation[] = {
    {"system", "You are \"helpful\".\n{{ not a tag }}"},
    {"user", "Hi <|im_end|> {% if %}"},
    {"assistant", "Hello! \xc3\xa9\xe2\x82\xac\xf0\x9f\x99\x82"},
    {"user", "  spaces  \n\ttabs\n"},
    {"tool", ""},
};

static uint64_t fnv1a(const uint8_t *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

/* Renders into a buffer of exactly the size asked: the length on success,
 * SIZE_MAX on a failure (with its message), the length needed in *need
 * when it does not fit. */
static size_t render(const rtm_chat_template_t *t, int32_t n, const rtm_chat_render_params_t *p, char *buf,
                     size_t size, size_t *need) {
    size_t len = 0;
    const rt_status_t st = rtm_chat_template_apply(t, conversation, n, p, buf, size, &len);
    *need = len;
    if (st == RT_ERR_DOES_NOT_FIT) {
        CHECK(len + 1 > size);
        return SIZE_MAX - 1;
    }
    if (st != RT_OK) {
        CHECK(rtm_last_error()[0] != 0);
        return SIZE_MAX;
    }
    CHECK(len < size && buf[len] == 0);
    return len;
}

static void check_rendering(const rtm_chat_template_t *t, uint64_t h) {
    const int32_t n = (int32_t)(h % 6);
    const bool special = (h >> 4) & 1;
    const rtm_chat_render_params_t p = {.struct_size = sizeof p, .add_generation_prompt = (h >> 3) & 1,
                                        .bos_token = special ? "<s>" : NULL,
                                        .eos_token = special ? "</s>" : NULL};
    char small[256];
    size_t need = 0;
    if (render(t, n, &p, small, sizeof small, &need) != SIZE_MAX - 1 || need >= MAX_OUT) return;
    /* too large for the small buffer: the length it asked for must do */
    char *big = malloc(need + 1);
    CHECK(big != NULL);
    size_t again = 0;
    CHECK(render(t, n, &p, big, need + 1, &again) == need);
    free(big);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *src = malloc(size + 1);
    CHECK(src != NULL);
    memcpy(src, data, size);
    src[size] = 0;
    rtm_chat_template_t *t = NULL;
    const rt_status_t st = rtm_chat_template_create(src, &t);
    free(src); /* the template keeps its own copy */
    if (st != RT_OK) {
        CHECK(t == NULL && rtm_last_error()[0] != 0);
        return 0;
    }
    check_rendering(t, fnv1a(data, size));
    rtm_chat_template_destroy(t);
    return 0;
}
