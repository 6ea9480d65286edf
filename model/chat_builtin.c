/* SPDX-License-Identifier: MIT */
/* chat_builtin.c: the chat formats rt knows by name, for a model whose
 * GGUF has no tokenizer.chat_template (or one to override it): each a
 * small template in the subset chat_parse.c reads, written for rt after
 * the formats' published descriptions. A system message goes where the
 * format puts it; a format without a system turn (Gemma, Mistral) puts it
 * before the first user message. */
#include "internal.h"

#include <string.h>

/* The system message, when first, as `sys`; the others as `turns`. */
#define SPLIT_SYSTEM                                                                              \
    "{% if messages[0]['role'] == 'system' %}{% set sys = messages[0]['content'] %}"              \
    "{% set turns = messages[1:] %}{% else %}{% set sys = '' %}{% set turns = messages %}{% endif %}"

static const struct builtin {
    const char *name, *source;
} builtins[] = {
    {"chatml",
     "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
     "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"},
    {"qwen", /* ChatML with Qwen 2.5's system message when none is given */
     "{% if messages[0]['role'] != 'system' %}<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. "
     "You are a helpful assistant.<|im_end|>\n{% endif %}"
     "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
     "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"},
    {"llama3",
     "{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>\n\n"
     "{{ m['content'] | trim }}<|eot_id|>{% endfor %}"
     "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"},
    {"gemma", /* turns of "user" and "model"; the system message opens the first user turn */
     SPLIT_SYSTEM "{{ bos_token }}{% for m in turns %}<start_of_turn>"
     "{{ 'model' if m['role'] == 'assistant' else m['role'] }}\n"
     "{% if loop.first and sys %}{{ sys | trim }}\n\n{% endif %}{{ m['content'] | trim }}<end_of_turn>\n"
     "{% endfor %}{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"},
    {"phi3",
     "{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}<|end|>\n{% endfor %}"
     "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"},
    {"mistral", /* [INST] turns; the system message opens the first */
     SPLIT_SYSTEM "{{ bos_token }}{% for m in turns %}{% if m['role'] == 'user' %}[INST] "
     "{% if loop.first and sys %}{{ sys }}\n\n{% endif %}{{ m['content'] }}[/INST]"
     "{% else %}{{ m['content'] }}{{ eos_token }}{% endif %}{% endfor %}"},
};

const char *rtm_chat_template_builtin(const char *name) {
    for (size_t i = 0; name && i < sizeof builtins / sizeof builtins[0]; i++)
        if (strcmp(builtins[i].name, name) == 0) return builtins[i].source;
    return NULL;
}

const char *rtm_chat_template_builtin_name(int32_t i) {
    return i >= 0 && (size_t)i < sizeof builtins / sizeof builtins[0] ? builtins[i].name : NULL;
}
