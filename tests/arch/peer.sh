#!/bin/sh
# SPDX-License-Identifier: MIT
# peer.sh: records llama.cpp's outputs on tests/arch/models/*.gguf as
# tests/arch/*.ref (see README.md). LLAMA_SRC is a llama.cpp source tree,
# LLAMA_BUILD its CMake build (with bin/libllama.so); neither is part of rt.
#
#     LLAMA_SRC=... LLAMA_BUILD=... sh tests/arch/peer.sh
set -eu
here=$(cd "$(dirname "$0")" && pwd)
: "${LLAMA_SRC:?a llama.cpp source tree}" "${LLAMA_BUILD:?its build}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -o "$tmp/peer_logits" "$here/peer_logits.c" -I"$LLAMA_SRC/include" -I"$LLAMA_SRC/ggml/include" \
    -L"$LLAMA_BUILD/bin" -lllama -lggml -lggml-base -Wl,-rpath,"$LLAMA_BUILD/bin" -lm
# The real models, where their pip packages are installed (tests/pip_models.py).
prompt="Once upon a time"
i=0
python3 "$here/../pip_models.py" 2>/dev/null | while read -r real; do
    i=$((i + 1))
    name=$(if [ $i = 1 ]; then echo smollm2; else echo gemma3-270m; fi)
    [ -n "$real" ] || { echo "$name: not installed, not recorded"; continue; }
    "$tmp/peer_logits" "$real" "$here/$name.ref" "$prompt" 2>"$tmp/$name.log" || { tail -5 "$tmp/$name.log"; exit 1; }
    echo "$here/$name.ref"
done
for m in "$here"/models/*.gguf; do
    name=$(basename "$m" .gguf)
    mode=$(if [ "$name" = random-bert ]; then echo --embed; fi)
    "$tmp/peer_logits" "$m" "$here/$name.ref" $mode 2>"$tmp/$name.log" || { tail -5 "$tmp/$name.log"; exit 1; }
    echo "$here/$name.ref"
done
