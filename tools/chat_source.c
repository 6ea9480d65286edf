/* SPDX-License-Identifier: MIT */
/* chat_source.c: see chat_source.h. */
#include "chat_source.h"
#include "../abi/rt.h"
#include "../model/rt_model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TEMPLATE (1 << 20)

static char *read_file(const char *tool, const char *path) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        char names[128];
        fprintf(stderr, "%s: --chat-template %s is neither a format (%s) nor a file it can read: %s\n", tool, path,
                rt_chat_source_names(names, sizeof names), strerror(errno));
        return NULL;
    }
    char *text = malloc(MAX_TEMPLATE + 1);
    const size_t n = text ? fread(text, 1, MAX_TEMPLATE + 1, f) : 0;
    const bool bad = text == NULL || ferror(f) || n > MAX_TEMPLATE;
    fclose(f);
    if (bad) {
        fprintf(stderr, "%s: --chat-template %s: %s\n", tool, path,
                text == NULL ? "no memory" : n > MAX_TEMPLATE ? "larger than 1 MiB" : "cannot be read");
        free(text);
        return NULL;
    }
    text[n] = 0;
    return text;
}

bool rt_chat_source(const char *tool, const char *option, const char *model_file, char **out, char *origin,
                    size_t origin_size) {
    *out = NULL;
    const char *builtin = rtm_chat_template_builtin(option);
    if (builtin) {
        snprintf(origin, origin_size, "the built-in %s format", option);
        return (*out = strdup(builtin)) != NULL || (fprintf(stderr, "%s: no memory\n", tool), false);
    }
    if (option) {
        snprintf(origin, origin_size, "%s", option);
        return (*out = read_file(tool, option)) != NULL;
    }
    rt_gguf_t *g = NULL;
    const char *src = NULL;
    if (rt_gguf_open(model_file, NULL, &g) != RT_OK) {
        fprintf(stderr, "%s: %s\n", tool, rt_last_error());
        return false;
    }
    if (rt_gguf_get_str(g, "tokenizer.chat_template", &src) == RT_OK) {
        snprintf(origin, origin_size, "the model's tokenizer.chat_template");
        *out = strdup(src);
    }
    rt_gguf_destroy(g);
    return src == NULL || *out != NULL || (fprintf(stderr, "%s: no memory\n", tool), false);
}

const char *rt_chat_source_names(char *buf, size_t size) {
    size_t at = 0;
    buf[0] = 0;
    for (int32_t i = 0; rtm_chat_template_builtin_name(i) && at < size; i++)
        at += (size_t)snprintf(buf + at, size - at, "%s%s", i ? ", " : "", rtm_chat_template_builtin_name(i));
    return buf;
}
