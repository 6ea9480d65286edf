/* SPDX-License-Identifier: MIT */
/* chat_source.h: which chat template rt-run -cnv and rt-server use:
 * --chat-template NAME|FILE (a format rt knows by name,
 * rtm_chat_template_builtin, else a file holding a template), else the
 * model file's own tokenizer.chat_template. A model with neither is not
 * an error here: each tool says what it then does. */
#ifndef RT_TOOLS_CHAT_SOURCE_H
#define RT_TOOLS_CHAT_SOURCE_H

#include <stdbool.h>
#include <stddef.h>

#define RT_CLI_CHAT_TEMPLATE_HELP                                                                 \
    "      --chat-template NAME|FILE  the chat format: chatml, qwen, llama3, gemma, phi3,\n"     \
    "                            mistral, or a file holding a Jinja template (default:\n"        \
    "                            the model's tokenizer.chat_template)\n"

/* The template's source, malloc'd, into *out (NULL: none anywhere), and
 * where it came from into origin. False after a message on stderr naming
 * the tool and what could not be read. */
bool rt_chat_source(const char *tool, const char *option, const char *model_file, char **out,
                    char *origin, size_t origin_size);
/* "chatml, qwen, ...": the names for messages, into buf; returns buf. */
const char *rt_chat_source_names(char *buf, size_t size);

#endif /* RT_TOOLS_CHAT_SOURCE_H */
