#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""make_models.py: writes the random-weight models that tests/test-model-arch.c
runs against llama.cpp's outputs (tests/arch/README.md): one small GGUF per
architecture (F32, a few layers, a 260-token byte-level BPE vocabulary), its
weights drawn from numpy's RandomState, whose stream is frozen, so the same
seed gives the same file on every machine.

    python3 tests/arch/make_models.py tests/arch/models
"""
import os
import sys

import numpy as np
import gguf

N_VOCAB = 260
EMBD, FF, N_HEAD, N_HEAD_KV, N_CTX = 32, 64, 4, 2, 128


def byte_chars():
    """GPT-2's printable stand-in for each byte (bytes_to_unicode)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for _, c in sorted(zip(bs, cs))]


def write_vocab(w):
    merges = ["Ġ t", "h e", "Ġt he"]
    tokens = byte_chars() + ["Ġt", "he", "Ġthe", "<|endoftext|>"]
    assert len(tokens) == N_VOCAB
    types = [gguf.TokenType.NORMAL] * (N_VOCAB - 1) + [gguf.TokenType.CONTROL]
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-2")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(N_VOCAB - 1)
    w.add_eos_token_id(N_VOCAB - 1)
    w.add_add_bos_token(False)


class Rand:
    def __init__(self, seed):
        self.rs = np.random.RandomState(seed)

    def matrix(self, rows, cols):
        """rows outputs of cols inputs: GGUF {cols, rows}."""
        return (self.rs.standard_normal((rows, cols)) / np.sqrt(cols)).astype(np.float32)

    def norm(self, n):
        return (1.0 + 0.1 * self.rs.standard_normal(n)).astype(np.float32)

    def bias(self, n):
        return (0.1 * self.rs.standard_normal(n)).astype(np.float32)


def common_keys(w, arch, n_layer, head_dim, rope_base=10000.0):
    w.add_context_length(N_CTX)
    w.add_embedding_length(EMBD)
    w.add_block_count(n_layer)
    w.add_feed_forward_length(FF)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_HEAD_KV)
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    w.add_rope_dimension_count(head_dim)
    w.add_rope_freq_base(rope_base)


def llama_like(w, r, n_layer, head_dim, tied, extra):
    """llama's tensors, and per layer what extra(il) adds."""
    q, kv = N_HEAD * head_dim, N_HEAD_KV * head_dim
    w.add_tensor("token_embd.weight", r.matrix(N_VOCAB, EMBD) * float(np.sqrt(EMBD) * 0.5))
    w.add_tensor("output_norm.weight", r.norm(EMBD))
    if not tied:
        w.add_tensor("output.weight", r.matrix(N_VOCAB, EMBD))
    for il in range(n_layer):
        p = "blk.%d." % il
        w.add_tensor(p + "attn_norm.weight", r.norm(EMBD))
        w.add_tensor(p + "attn_q.weight", r.matrix(q, EMBD))
        w.add_tensor(p + "attn_k.weight", r.matrix(kv, EMBD))
        w.add_tensor(p + "attn_v.weight", r.matrix(kv, EMBD))
        w.add_tensor(p + "attn_output.weight", r.matrix(EMBD, q))
        w.add_tensor(p + "ffn_norm.weight", r.norm(EMBD))
        w.add_tensor(p + "ffn_gate.weight", r.matrix(FF, EMBD))
        w.add_tensor(p + "ffn_up.weight", r.matrix(FF, EMBD))
        w.add_tensor(p + "ffn_down.weight", r.matrix(EMBD, FF))
        for name, t in extra(il):
            w.add_tensor(p + name, t)


def llama(w, r):
    common_keys(w, "llama", 2, EMBD // N_HEAD)
    w.add_layer_norm_rms_eps(1e-5)
    llama_like(w, r, 2, EMBD // N_HEAD, False, lambda il: [])


def llama3(w, r):
    """Llama 3.1's frequency factors: rope_freqs.weight divides each pair's."""
    hd = EMBD // N_HEAD
    common_keys(w, "llama", 2, hd, rope_base=500000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_tensor("rope_freqs.weight", (1.0 + 7.0 * r.rs.random_sample(hd // 2)).astype(np.float32))
    llama_like(w, r, 2, hd, False, lambda il: [])


def qwen2(w, r):
    hd = EMBD // N_HEAD
    common_keys(w, "qwen2", 2, hd)
    w.add_layer_norm_rms_eps(1e-6)
    llama_like(w, r, 2, hd, True, lambda il: [("attn_q.bias", r.bias(N_HEAD * hd)),
                                                ("attn_k.bias", r.bias(N_HEAD_KV * hd)),
                                                ("attn_v.bias", r.bias(N_HEAD_KV * hd))])


def qwen3(w, r):
    hd = 16  # not EMBD / N_HEAD: heads of attention.key_length
    common_keys(w, "qwen3", 2, hd)
    w.add_layer_norm_rms_eps(1e-6)
    llama_like(w, r, 2, hd, False, lambda il: [("attn_q_norm.weight", r.norm(hd)),
                                                 ("attn_k_norm.weight", r.norm(hd))])


def gemma_like(w, r, arch, keys, qk_norm):
    """Gemma's 4 layers, sliding-window ones of 4 between global ones, the
    keys keys() adds, and per layer post norms (and q/k norms)."""
    hd = 16
    common_keys(w, arch, 4, hd)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_sliding_window(4)
    keys()

    def extra(il):
        qk = [("attn_q_norm.weight", r.norm(hd)), ("attn_k_norm.weight", r.norm(hd))] if qk_norm else []
        return qk + [("post_attention_norm.weight", r.norm(EMBD)), ("post_ffw_norm.weight", r.norm(EMBD))]
    llama_like(w, r, 4, hd, True, extra)


def gemma3(w, r):
    def keys():
        w.add_uint32("gemma3.attention.sliding_window_pattern", 2)
        w.add_float32("gemma3.rope.freq_base_swa", 1000.0)
    gemma_like(w, r, "gemma3", keys, True)


def gemma2(w, r):
    """Soft-capping small enough to bend the random model's logits."""
    def keys():
        w.add_float32("gemma2.attn_logit_softcapping", 1.5)
        w.add_float32("gemma2.final_logit_softcapping", 4.0)
    gemma_like(w, r, "gemma2", keys, False)


def gpt2(w, r):
    hd = EMBD // N_HEAD
    w.add_context_length(N_CTX)
    w.add_embedding_length(EMBD)
    w.add_block_count(2)
    w.add_feed_forward_length(FF)
    w.add_head_count(N_HEAD)
    w.add_layer_norm_eps(1e-5)
    w.add_tensor("token_embd.weight", r.matrix(N_VOCAB, EMBD) * float(np.sqrt(EMBD) * 0.5))
    w.add_tensor("position_embd.weight", r.matrix(N_CTX, EMBD) * float(np.sqrt(EMBD) * 0.2))
    w.add_tensor("output_norm.weight", r.norm(EMBD))
    w.add_tensor("output_norm.bias", r.bias(EMBD))
    for il in range(2):
        p = "blk.%d." % il
        w.add_tensor(p + "attn_norm.weight", r.norm(EMBD))
        w.add_tensor(p + "attn_norm.bias", r.bias(EMBD))
        w.add_tensor(p + "attn_qkv.weight", r.matrix(3 * EMBD, EMBD))
        w.add_tensor(p + "attn_qkv.bias", r.bias(3 * EMBD))
        w.add_tensor(p + "attn_output.weight", r.matrix(EMBD, EMBD))
        w.add_tensor(p + "attn_output.bias", r.bias(EMBD))
        w.add_tensor(p + "ffn_norm.weight", r.norm(EMBD))
        w.add_tensor(p + "ffn_norm.bias", r.bias(EMBD))
        w.add_tensor(p + "ffn_up.weight", r.matrix(FF, EMBD))
        w.add_tensor(p + "ffn_up.bias", r.bias(FF))
        w.add_tensor(p + "ffn_down.weight", r.matrix(EMBD, FF))
        w.add_tensor(p + "ffn_down.bias", r.bias(EMBD))


def bert_vocab(w):
    """A WordPiece vocabulary: the five specials, then word pieces."""
    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tokens = special + ["\u2581w%d" % i for i in range(N_VOCAB - len(special))]
    w.add_tokenizer_model("bert")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_types([gguf.TokenType.CONTROL] * len(special) + [gguf.TokenType.NORMAL] * (N_VOCAB - len(special)))
    w.add_unk_token_id(1)
    w.add_uint32("tokenizer.ggml.cls_token_id", 2)
    w.add_sep_token_id(3)
    w.add_pad_token_id(0)
    w.add_mask_token_id(4)


def bert(w, r):
    w.add_context_length(N_CTX)
    w.add_embedding_length(EMBD)
    w.add_block_count(2)
    w.add_feed_forward_length(FF)
    w.add_head_count(N_HEAD)
    w.add_layer_norm_eps(1e-12)
    w.add_causal_attention(False)
    w.add_pooling_type(gguf.PoolingType.MEAN)
    w.add_token_type_count(2)
    w.add_tensor("token_embd.weight", r.matrix(N_VOCAB, EMBD) * float(np.sqrt(EMBD) * 0.5))
    w.add_tensor("token_types.weight", r.matrix(2, EMBD) * float(np.sqrt(EMBD) * 0.2))
    w.add_tensor("position_embd.weight", r.matrix(N_CTX, EMBD) * float(np.sqrt(EMBD) * 0.2))
    w.add_tensor("token_embd_norm.weight", r.norm(EMBD))
    w.add_tensor("token_embd_norm.bias", r.bias(EMBD))
    for il in range(2):
        p = "blk.%d." % il
        for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
            w.add_tensor(p + name + ".weight", r.matrix(EMBD, EMBD))
            w.add_tensor(p + name + ".bias", r.bias(EMBD))
        w.add_tensor(p + "attn_output_norm.weight", r.norm(EMBD))
        w.add_tensor(p + "attn_output_norm.bias", r.bias(EMBD))
        w.add_tensor(p + "ffn_up.weight", r.matrix(FF, EMBD))
        w.add_tensor(p + "ffn_up.bias", r.bias(FF))
        w.add_tensor(p + "ffn_down.weight", r.matrix(EMBD, FF))
        w.add_tensor(p + "ffn_down.bias", r.bias(EMBD))
        w.add_tensor(p + "layer_output_norm.weight", r.norm(EMBD))
        w.add_tensor(p + "layer_output_norm.bias", r.bias(EMBD))


SEEDS = {"gemma3": 1000, "gpt2": 1001, "llama": 1002, "qwen2": 1003, "qwen3": 1004, "bert": 1005,
         "llama3": 1006, "gemma2": 1007}
ARCHS = {"llama": llama, "llama3": llama3, "qwen2": qwen2, "qwen3": qwen3, "gemma2": gemma2, "gemma3": gemma3,
         "gpt2": gpt2, "bert": bert}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "models")
    os.makedirs(out, exist_ok=True)
    for arch, make in sorted(ARCHS.items()):
        path = os.path.join(out, "random-%s.gguf" % arch)
        tmp = path + ".tmp"
        w = gguf.GGUFWriter(tmp, "llama" if arch == "llama3" else arch)
        w.add_name("random-" + arch)
        bert_vocab(w) if arch == "bert" else write_vocab(w)
        make(w, Rand(SEEDS[arch]))
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        os.replace(tmp, path)
        print(path)


if __name__ == "__main__":
    main()
