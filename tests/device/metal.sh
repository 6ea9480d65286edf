#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/device/metal.sh: the Metal plugin's checks, for a Mac user with a
# Metal GPU (Apple silicon, or an Intel Mac's GPU), from the repository
# root. The plugin has never run on Apple hardware when this script is
# first run: it is how its author learns whether it works. Needs Homebrew's
# ninja, pkg-config, shaderc (glslc), spirv-cross and vulkan-headers
# (`.ci/deps` installs them). It checks, in order:
#
#   tools          glslc and spirv-cross are on PATH
#   configure      ./configure finds Metal ("metal  yes")
#   build          ninja: the whole project, the Metal plugin
#                  (build/lib/rt-plugins/rt-plugin-metal.dylib) included:
#                  every shader translated to MSL at build time
#   rt-devices     metal0 is listed (every MSL library compiled by Metal
#                  at start-up, or the device is left out with the reason)
#   ops table      rt-devices --ops for metal0
#   rt-test-ops    every op case on metal0 against the CPU plugin (pipelines
#                  made, bindings and push constants as the shaders expect)
#   stories260K    greedy, 32 tokens: CPU alone, Metal (every layer), Metal
#                  and CPU split; the texts must be the CPU's
#
# Every step's failure is recorded and the script goes on. Output: the
# summary on stdout and in $OUT/summary.md (default build/device-out), every
# step's output in $OUT/log.txt; exit status 1 when any step failed. Send
# both files with a bug report. The model comes from RT_MODEL, else
# ../shared/models/stories260K.gguf or build/models/stories260K.gguf.
set -u
OUT=${OUT:-build/device-out}
mkdir -p "$OUT" build/device
log=$OUT/log.txt
: >"$log"
failed=0
rows=

# run NAME COMMAND: runs the command (output to the log) and records a row
# with its last output line.
run() {
    name=$1
    shift
    printf '\n===== %s: %s\n' "$name" "$*" >>"$log"
    out=$(sh -c "$*" 2>&1)
    rc=$?
    printf '%s\n' "$out" >>"$log"
    last=$(printf '%s\n' "$out" | grep -v '^[[:space:]]*$' | tail -n 1 | cut -c1-120 | tr '|' '/')
    verdict "$name" "$rc" "$last"
    return "$rc"
}

# verdict NAME RC TEXT: a row; RC 0 passes.
verdict() {
    res=PASS
    [ "$2" = 0 ] || { res=FAIL; failed=$((failed + 1)); }
    rows="$rows| $1 | $res | $3 |
"
}

run "tools" "command -v glslc && command -v spirv-cross && sw_vers 2>/dev/null | tr '\n' ' '"
run "configure" "./configure > build/device/configure.txt; rc=\$?; cat build/device/configure.txt; \
    grep -E '^metal +yes' build/device/configure.txt || exit 1; exit \$rc"
run "build" "ninja && ls -l build/lib/rt-plugins/rt-plugin-metal.dylib"
run "rt-devices" "RT_LOG=info build/bin/rt-devices && build/bin/rt-devices | grep -E '^  \[[0-9]+\] metal0 '"
run "ops table" "build/bin/rt-devices --ops | sed -n '/\] metal0 /,/^  \[[0-9]/p' > build/device/ops.txt; \
    cat build/device/ops.txt; grep -q 'ops (x' build/device/ops.txt"
# rt-test-ops passes when no device matches: the output must show metal0 tested.
run "rt-test-ops metal0" "build/bin/rt-test-ops --device metal0 > build/device/test-ops.txt; \
    rc=\$?; cat build/device/test-ops.txt; grep -q '^metal0 (metal):' build/device/test-ops.txt \
    || { echo 'metal0 was not tested'; exit 1; }; exit \$rc"

model=
for m in "${RT_MODEL:-}" ../shared/models/stories260K.gguf build/models/stories260K.gguf; do
    if [ -n "$m" ] && [ -f "$m" ]; then model=$m; break; fi
done
# story NAME DEVICE-OPTIONS: greedy text into build/device/NAME.txt, then
# (but for the CPU's own) a row saying whether it is the CPU's text.
story() {
    run "stories260K $1" "build/bin/rt-run -m $model --temp 0 -n 32 $2 > build/device/$1.txt \
        && tr '\n' ' ' < build/device/$1.txt"
    [ "$1" = cpu ] && return 0
    cmp -s build/device/cpu.txt "build/device/$1.txt" && [ -s build/device/cpu.txt ]
    verdict "text $1 = cpu" $? "$(tr '\n' ' ' <"build/device/$1.txt" | cut -c1-80)"
}
if [ -z "$model" ]; then
    verdict "stories260K" 1 "no model: set RT_MODEL to stories260K.gguf"
else
    story cpu "--devices cpu0"
    story metal "--devices metal0 --n-gpu-layers -1"
    story split "--devices metal0,cpu0 --n-gpu-layers 2"
fi

{
    echo "# Metal plugin device check"
    echo
    echo "$(sysctl -n machdep.cpu.brand_string 2>/dev/null); $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo
    echo "| step | result | last line |"
    echo "| --- | --- | --- |"
    printf '%s' "$rows"
    echo
    echo "$failed step(s) failed; every step's output is in $log."
} >"$OUT/summary.md"
cat "$OUT/summary.md"
[ "$failed" = 0 ]
