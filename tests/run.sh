#!/bin/sh
# tests/run.sh BUILD TEST...: runs each test executable, prints its output,
# and ends with the suite's summary line "N passed, N failed".
b=$1
shift
passed=0
failed=0
failures=
for t in "$@"; do
    echo "== $t"
    if RT_TEST_BUILD_DIR="$b" "$t"; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        failures="$failures $t"
    fi
done
[ -n "$failures" ] && echo "failed:$failures"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
