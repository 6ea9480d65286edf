/* SPDX-License-Identifier: MIT */
/* run_chat.c: rt-run -cnv, a chat on stdin through the model's template. */
#include "run.h"

int run_chat(run_t *r) {
    (void)r;
    return run_fail("-cnv: chat is not built yet");
}
