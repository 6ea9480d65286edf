/* SPDX-License-Identifier: MIT */
/* graph_model.h: the built-in llama graph (graphs.h) sized as a given GGUF
 * model, from its hyperparameters alone (no weights are read), so that
 * rt-plan draws the plan of that model's decode step. */
#ifndef RT_TOOLS_GRAPH_MODEL_H
#define RT_TOOLS_GRAPH_MODEL_H

#include "graphs.h"

/* Sets p's graph to "llama" with the model's layers, embedding width,
 * heads, feed-forward width and vocabulary (`<arch>.block_count`,
 * `.embedding_length`, `.attention.head_count`, `.feed_forward_length`,
 * the tokenizer's token count), and caps p->n_ctx at the model's context
 * length. False with a message on stderr when the file cannot be read or
 * lacks a key. */
bool tool_graph_params_from_model(tool_graph_params_t *p, const char *path);

#endif /* RT_TOOLS_GRAPH_MODEL_H */
