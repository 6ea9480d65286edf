#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/abi/check-exports.sh: what the built objects export, and whether the
# abi/ headers keep their own rules. Run by tests/run.sh from the
# repository root (RT_TEST_BUILD_DIR names the build directory).
#
#   exports-1  every plugin built here (build/lib/rt-plugins and
#              build/tests/plugins, all depths) exports exactly one defined
#              dynamic symbol, rt_plugin_query; rt-plugin-nosym.so, built to
#              lack it, exports nothing.
#   exports-2  librtcore exports only rt_ symbols, every one in an RT_1.x
#              version node, and its soname carries RT_ABI_VERSION_MAJOR.
#   exports-3  every abi/*.h is compiled alone by the headers target (C99,
#              C11, C++17) and includes nothing but <stdbool.h>,
#              <stddef.h>, <stdint.h> and other abi/ headers.
set -u
b=${RT_TEST_BUILD_DIR:-build}
failed=0
checked=0

fail() {
    echo "FAIL $*"
    failed=$((failed + 1))
}

defined_symbols() { nm -D --defined-only "$1" | awk 'NF >= 3 { print $3 }'; }

check_plugin() {
    syms=$(defined_symbols "$1" | tr '\n' ' ')
    want="rt_plugin_query "
    case $1 in */rt-plugin-nosym.so) want="" ;; esac
    checked=$((checked + 1))
    [ "$syms" = "$want" ] || fail "exports-1: $1 exports '$syms', not '$want'"
}

check_plugins() {
    n=0
    for so in $(find "$b/lib/rt-plugins" "$b/tests/plugins" -name 'rt-plugin-*.so' | sort); do
        check_plugin "$so"
        n=$((n + 1))
    done
    [ "$n" -ge 2 ] || fail "exports-1: found $n plugins under $b (run ninja first)"
}

check_core() {
    lib=$b/lib/librtcore.so.1
    major=$(sed -n 's/^#define RT_ABI_VERSION_MAJOR \([0-9]*\)$/\1/p' abi/rt_version.h)
    checked=$((checked + 1))
    [ -f "$lib" ] || { fail "exports-2: $lib is missing"; return; }
    soname=$(objdump -p "$lib" | awk '$1 == "SONAME" { print $2 }')
    [ "$soname" = "librtcore.so.$major" ] || fail "exports-2: soname '$soname', not librtcore.so.$major"
    others=$(defined_symbols "$lib" | grep -v '^rt_' | grep -v '^RT_1\.[0-9]*$' | tr '\n' ' ')
    [ -z "$others" ] || fail "exports-2: $lib exports non-rt_ symbols: $others"
    # objdump -T: ... section ... version name; defined functions and objects only.
    unversioned=$(objdump -T "$lib" | awk 'NF >= 2 && $4 != "*UND*" && $NF ~ /^rt_/ && $(NF-1) !~ /^RT_1\.[0-9]+$/ { print $NF }' |
                  tr '\n' ' ')
    [ -z "$unversioned" ] || fail "exports-2: symbols outside an RT_1.x node: $unversioned"
    n=$(objdump -T "$lib" | awk 'NF >= 2 && $(NF-1) ~ /^RT_1\.[0-9]+$/ && $NF ~ /^rt_/' | wc -l)
    [ "$n" -ge 100 ] || fail "exports-2: only $n symbols carry an RT_1.x version"
}

check_headers() {
    for h in abi/*.h; do
        name=${h#abi/}
        checked=$((checked + 1))
        grep -q "^build \$b/stamp/abi/$name: header_check abi/$name\$" build.ninja ||
            fail "exports-3: $h has no header_check line in build.ninja"
        [ -f "$b/stamp/abi/$name" ] || fail "exports-3: $h was not checked (ninja headers)"
        bad=$(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*\([<"][^>"]*[>"]\).*$/\1/p' "$h" |
              grep -v '^<std\(bool\|def\|int\)\.h>$' | grep -v '^"rt[a-z_]*\.h"$' | tr '\n' ' ')
        [ -z "$bad" ] || fail "exports-3: $h includes $bad"
    done
}

check_plugins
check_core
check_headers
echo "check-exports: $checked objects and headers checked, $failed failures"
[ "$failed" = 0 ]
