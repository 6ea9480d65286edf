#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/fuzz/run.sh BUILD SECONDS NAME...: runs each libFuzzer target
# BUILD/fuzz/fuzz-NAME for SECONDS, over its seed corpus
# (tests/fuzz/corpus/NAME, read only; for chat also tests/chat) and its working corpus
# (BUILD/fuzz/corpus/NAME, where new inputs go). The seeds run first, so
# every crash once found and added there is a regression test. A crash
# stops the run with the fuzzer's report (the last lines of
# BUILD/fuzz/NAME.log); the input is kept as BUILD/fuzz/NAME-crash-*: add
# it to tests/fuzz/corpus/NAME with the fix.
# `ninja fuzz-smoke` (CI) and `ninja fuzz-run` (longer) call it.
set -eu
b=$1
seconds=$2
shift 2
for name in "$@"; do
    mkdir -p "$b/fuzz/corpus/$name"
    log=$b/fuzz/$name.log
    echo "== fuzz-$name for ${seconds}s"
    rc=0
    # A model's metadata (its vocabulary) is longer than the other inputs;
    # the chat templates' seeds are also the real ones of tests/chat.
    max_len=4096
    [ "$name" = model ] && max_len=65536
    more=
    [ "$name" = chat ] && more=tests/chat
    # shellcheck disable=SC2086 # $more is one directory or none
    "$b/fuzz/fuzz-$name" -max_total_time="$seconds" -max_len="$max_len" -timeout=10 \
        -print_final_stats=1 -artifact_prefix="$b/fuzz/$name-" \
        "$b/fuzz/corpus/$name" "tests/fuzz/corpus/$name" $more > "$log" 2>&1 || rc=$?
    grep -v '^#[0-9]*[[:space:]]*\(NEW\|REDUCE\|pulse\)' "$log" | tail -n 60
    if [ "$rc" != 0 ]; then
        echo "fuzz-$name: FAILED (status $rc; the input is in $b/fuzz/, the log in $log)"
        exit 1
    fi
done
