#!/bin/sh
# tests/run.sh BUILD TEST...: runs each test executable (cmocka programs or
# shell scripts), shows their output, and ends with the suite's summary line
# "N passed, N failed, N skipped" counting test cases (skipped: cmocka's
# skip(), a device or a fixture outside the repository that is absent). An executable that fails
# without a cmocka count (a crash, a sanitizer report) counts as one failure.
b=$1
shift
passed=0
failed=0
skipped=0
failures=
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for t in "$@"; do
    echo "== $t"
    start=$(date +%s)
    RT_TEST_BUILD_DIR="$b" "$t" >"$log" 2>&1
    rc=$?
    cat "$log"
    echo "-- $t: $(($(date +%s) - start)) s"
    p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test(s)\..*/\1/p' "$log" | awk '{s+=$1} END {print s+0}')
    f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test(s).*/\1/p' "$log" | awk '{s+=$1} END {print s+0}')
    s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test(s).*/\1/p' "$log" | awk '{s+=$1} END {print s+0}')
    if [ "$p" = 0 ] && [ "$f" = 0 ] && [ "$s" = 0 ]; then
        if [ "$rc" = 0 ]; then p=1; else f=1; fi
    elif [ "$rc" != 0 ] && [ "$f" = 0 ]; then
        f=1
    fi
    passed=$((passed + p))
    failed=$((failed + f))
    skipped=$((skipped + s))
    [ "$rc" = 0 ] || failures="$failures $t"
done
[ -n "$failures" ] && echo "failed:$failures"
echo "$passed passed, $failed failed, $skipped skipped"
[ -z "$failures" ]
