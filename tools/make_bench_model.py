#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""make_bench_model.py: writes a random-weight GGUF of TinyLlama 1.1B's shape
(llama architecture, n_embd 2048, 32 query heads of 64 over 4 KV heads,
n_ff 5632, a 32000-token vocabulary), F16, for whole-model benchmarks that
rt-bench model and llama-bench both run (README, "attention at depth"). The
text means nothing: only the shapes and the bytes matter to a timing.
--layers cuts the 22 blocks to fewer, for a shorter run on a small machine.

    python3 tools/make_bench_model.py OUT.gguf [--layers 8]
"""
import argparse
import os
import sys

import numpy as np
import gguf

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "arch"))
from make_models import byte_chars  # noqa: E402  (GPT-2's byte stand-ins, one definition)

N_VOCAB, EMBD, FF, N_HEAD, N_HEAD_KV, N_CTX = 32000, 2048, 5632, 32, 4, 4096


def vocab(w):
    """A byte-level BPE vocabulary of N_VOCAB tokens: the bytes, one merge, fillers."""
    tokens = byte_chars() + ["\u0120t"] + ["t%d" % i for i in range(N_VOCAB - 258)] + ["</s>"]
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-2")
    w.add_token_list(tokens)
    w.add_token_types([gguf.TokenType.NORMAL] * (N_VOCAB - 1) + [gguf.TokenType.CONTROL])
    w.add_token_merges(["\u0120 t"])
    w.add_bos_token_id(N_VOCAB - 1)
    w.add_eos_token_id(N_VOCAB - 1)
    w.add_add_bos_token(False)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=22)
    a = ap.parse_args()
    rs = np.random.RandomState(1)

    def matrix(rows, cols):
        return (rs.standard_normal((rows, cols)).astype(np.float32) / np.sqrt(cols)).astype(np.float16)

    tmp = a.out + ".tmp"
    w = gguf.GGUFWriter(tmp, "llama")
    w.add_name("tinyllama-shape-%dl" % a.layers)
    vocab(w)
    hd = EMBD // N_HEAD
    w.add_context_length(N_CTX)
    w.add_embedding_length(EMBD)
    w.add_block_count(a.layers)
    w.add_feed_forward_length(FF)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_HEAD_KV)
    w.add_rope_dimension_count(hd)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    ones = np.ones(EMBD, dtype=np.float32)
    w.add_tensor("token_embd.weight", matrix(N_VOCAB, EMBD))
    w.add_tensor("output_norm.weight", ones)
    w.add_tensor("output.weight", matrix(N_VOCAB, EMBD))
    for il in range(a.layers):
        p = "blk.%d." % il
        w.add_tensor(p + "attn_norm.weight", ones)
        w.add_tensor(p + "attn_q.weight", matrix(EMBD, EMBD))
        w.add_tensor(p + "attn_k.weight", matrix(N_HEAD_KV * hd, EMBD))
        w.add_tensor(p + "attn_v.weight", matrix(N_HEAD_KV * hd, EMBD))
        w.add_tensor(p + "attn_output.weight", matrix(EMBD, EMBD))
        w.add_tensor(p + "ffn_norm.weight", ones)
        w.add_tensor(p + "ffn_gate.weight", matrix(FF, EMBD))
        w.add_tensor(p + "ffn_up.weight", matrix(FF, EMBD))
        w.add_tensor(p + "ffn_down.weight", matrix(EMBD, FF))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    os.replace(tmp, a.out)
    print(a.out)


if __name__ == "__main__":
    main()
