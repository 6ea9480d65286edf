/* SPDX-License-Identifier: MIT */
/* fuzz-json-schema.c: the libFuzzer target for the JSON Schema to GBNF
 * converter (model/json_schema*.c), which reads schemas that API clients
 * send (response_format, tools' parameters). Each input is a schema's
 * text. A refusal must come with a message that starts "json schema" and
 * no grammar; a grammar must be at most 1 MiB (the limit rt_model.h
 * states), NUL-terminated, made of lines "name ::= body" whose names are
 * GBNF's ([a-zA-Z0-9-]+), the first of them root, and the same on a
 * second conversion; nothing may crash, leak, abort or hang. Built by
 * `ninja fuzz` from the converter's sources with the fuzzer's
 * instrumentation, with jansson and the build's librtcore (for the status
 * names). The seeds are tests/fuzz/corpus/json-schema. */
#include "../../model/rt_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz-json-schema: %s:%d: %s (%s)\n", __FILE__, __LINE__, #cond,       \
                    rtm_last_error());                                                             \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

#define MAX_GRAMMAR ((size_t)1 << 20)

/* Every line is "name ::= body" with a GBNF name and a body. */
static void check_lines(const char *g, size_t len) {
    CHECK(len > 0 && g[len - 1] == '\n');
    CHECK(strncmp(g, "root ::= ", 9) == 0);
    for (const char *line = g; line < g + len;) {
        const char *end = strchr(line, '\n');
        CHECK(end != NULL);
        const size_t name =
            strspn(line, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-");
        CHECK(name > 0 && line + name + 5 < end && strncmp(line + name, " ::= ", 5) == 0);
        line = end + 1;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *g = (char *)1;
    const rt_status_t st = rtm_json_schema_to_grammar((const char *)data, size, &g);
    if (st != RT_OK) {
        CHECK(g == NULL && strncmp(rtm_last_error(), "json schema", 11) == 0);
        return 0;
    }
    CHECK(g != NULL);
    const size_t len = strlen(g);
    CHECK(len <= MAX_GRAMMAR);
    check_lines(g, len);
    char *again = NULL;
    CHECK(rtm_json_schema_to_grammar((const char *)data, size, &again) == RT_OK);
    CHECK(strcmp(g, again) == 0);
    rtm_string_free(again);
    rtm_string_free(g);
    return 0;
}
