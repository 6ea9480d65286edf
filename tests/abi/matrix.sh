#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/abi/matrix.sh BUILD: the release matrix. For each earlier release
# in tests/abi/releases, builds the parts the matrix needs from the
# project's history (git archive of the commit; core, model library, the CPU
# and Vulkan plugins, rt-run, rt-devices, rt-test-ops; no CUDA), then checks
# the ABI promise in both directions with the real binaries:
#
#   old plugins, today's core:  they load and say the old version,
#                               today's rt-test-ops passes on them, and
#                               stories260K gives today's greedy text;
#   today's plugins, old core:  they load and say the old version, the old
#                               rt-test-ops passes on them, the old rt-run
#                               gives the same greedy text;
#   old application, today's core: the old tools (and their model library)
#                               over today's librtcore and plugins list no
#                               weights buffer type, pass their rt-test-ops
#                               and give the same greedy text;
#   today's application built for the old ABI, old core: rt-demo compiled
#                               from today's sources with RT_TARGET_ABI set
#                               to the release binds no later symbol and
#                               runs its MLP right on the old core.
#
# The releases are built once under BUILD/releases (git must be there: a
# plain clone has the history). Ends with "matrix: N checks, M failed";
# exit status 1 when any check failed.
set -eu
build=${1:-build}
root=$(pwd)
case $build in /*) ;; *) build=$root/$build ;; esac
work=$build/releases
model=${RT_MATRIX_MODEL:-}
for m in "$root/models/stories260K.gguf" "$root/../shared/models/stories260K.gguf"; do
    [ -z "$model" ] && [ -f "$m" ] && model=$m
done
[ -n "$model" ] || { echo "matrix: no stories260K.gguf (models/ or ../shared/models)" >&2; exit 1; }
command -v git >/dev/null && git rev-parse --git-dir >/dev/null 2>&1 ||
    { echo "matrix: needs the project's git history (a clone)" >&2; exit 1; }

checks=0
failed=0
pass() { checks=$((checks + 1)); echo "ok   $1"; }
fail() { checks=$((checks + 1)); failed=$((failed + 1)); echo "FAIL $1"; }
check() { # name, then a command whose exit status is the verdict
    name=$1
    shift
    if "$@" > "$work/last.log" 2>&1; then pass "$name"; else fail "$name"; sed 's/^/     /' "$work/last.log" | tail -20; fi
}

# Greedy text of rt-run (the tool at $1) on device $2; the rest is env.
greedy() {
    tool=$1 dev=$2
    "$tool" -m "$model" -p "Once upon a time" -n 32 --temp 0 --devices "$dev" 2>/dev/null
}

same_text() { # expected file, tool, device
    got=$(greedy "$2" "$3") || return 1
    [ "$got" = "$(cat "$1")" ] || { echo "expected: $(cat "$1")"; echo "got:      $got"; return 1; }
}

loaded_as() { # rt-devices tool, plugin name, version: the plugin line says it
    "$1" | grep -E "^  $2 +ABI $3 +loaded" >/dev/null || { "$1" | head -8; return 1; }
}

no_weights() { # rt-devices tool: no weights buffer type listed
    out=$("$1") || return 1
    ! printf '%s\n' "$out" | grep -q "CPU_Weights" || { printf '%s\n' "$out" | grep Weights; return 1; }
}

has_weights() { # rt-devices tool: the CPU's weights buffer type is listed
    "$1" | grep -q "buffer type 1: CPU_Weights"
}

runs_on_today() { # rt-devices tool: it reports today's core
    "$1" | head -1 | grep -F "(ABI $today_abi)" >/dev/null
}

tests_pass() { # rt-test-ops tool: exit status 0 and "0 failed"
    "$1" > "$work/ops.log" 2>&1 || { tail -5 "$work/ops.log"; return 1; }
    grep -E "^[0-9]+ passed, 0 failed" "$work/ops.log" >/dev/null
}

# Today's rt-demo compiled for ABI $1 (RT_TARGET_ABI) into $2, linked
# against today's core.
build_targeting() {
    major=${1%%.*} minor=${1#*.}
    ${CC:-cc} -std=c11 -D_GNU_SOURCE -O1 "-DRT_TARGET_ABI=RT_ABI($major, $minor)" -I"$build/gen" \
        "$root/tools/rt-demo.c" "$root/tools/tool_cli.c" -o "$2" -L"$build/lib" -lrtcore -lm \
        > "$work/target.log" 2>&1 || { cat "$work/target.log"; return 1; }
}

binds_at_most() { # binary, version: every RT_x.y it needs is at most that version
    need=$(objdump -T "$1" | grep -o 'RT_1\.[0-9]*' | sort -u | tr '\n' ' ')
    for v in $need; do
        [ "${v#RT_1.}" -le "${2#1.}" ] || { echo "binds $v (needs: $need)"; return 1; }
    done
}

build_release() { # version, commit
    dir=$work/$1
    [ -x "$dir/build/bin/rt-run" ] && [ "$(cat "$dir/commit" 2>/dev/null)" = "$2" ] && return 0
    rm -rf "$dir"
    mkdir -p "$dir"
    git archive "$2" | tar -x -C "$dir"
    (cd "$dir" && ./configure --without-cuda > configure.log 2>&1 &&
        ninja build/lib/librtcore.so.1 build/lib/librtmodel.so.0 build/lib/rt-plugins/rt-plugin-cpu.so \
            $vk_target build/bin/rt-run build/bin/rt-devices build/bin/rt-test-ops > ninja.log 2>&1) ||
        { tail -20 "$dir/configure.log" "$dir/ninja.log" 2>/dev/null; return 1; }
    echo "$2" > "$dir/commit"
}

mkdir -p "$work"
devices=cpu0
vk_target=
if "$build/bin/rt-devices" 2>/dev/null | grep -q "^  \[[0-9]*\] vulkan0 "; then
    devices="cpu0 vulkan0"
    vk_target=build/lib/rt-plugins/rt-plugin-vulkan.so
fi
for d in $devices; do greedy "$build/bin/rt-run" "$d" > "$work/ref-$d.txt"; done
today_abi=$("$build/bin/rt-devices" | sed -n '1s/.*(ABI \(.*\))$/\1/p')

grep -v '^#' "$root/tests/abi/releases" | while read -r ver commit; do
    [ -n "$ver" ] || continue
    dir=$work/$ver
    echo "== release $ver ($commit)"
    if ! build_release "$ver" "$commit"; then fail "matrix-$ver build"; continue; fi
    old=$dir/build
    # today's core and plugins under the old application, found before its
    # own through LD_LIBRARY_PATH (its run path is a RUNPATH); its model
    # library stays the old one
    mix=$dir/today-core
    rm -rf "$mix" && mkdir -p "$mix"
    cp "$build/lib/librtcore.so.1" "$mix/" && cp -r "$build/lib/rt-plugins" "$mix/"

    export RT_PLUGIN_PATH="$old/lib/rt-plugins"
    check "matrix-$ver.1 old cpu plugin loads in today's core as $ver" loaded_as "$build/bin/rt-devices" cpu "$ver"
    for d in $devices; do
        check "matrix-$ver.2 today's rt-run on the old $d: same greedy text" same_text "$work/ref-$d.txt" "$build/bin/rt-run" "$d"
    done
    check "matrix-$ver.3 today's rt-test-ops on the old plugins" tests_pass "$build/bin/rt-test-ops"

    export RT_PLUGIN_PATH="$build/lib/rt-plugins"
    check "matrix-$ver.4 today's cpu plugin loads in the $ver core as $ver" loaded_as "$old/bin/rt-devices" cpu "$ver"
    [ -n "$vk_target" ] && check "matrix-$ver.4 today's vulkan plugin loads in the $ver core as $ver" loaded_as "$old/bin/rt-devices" vulkan "$ver"
    if [ "$ver" = 1.0 ]; then
        check "matrix-$ver.5 today's plugins in the 1.0 core: no weights buffer type" no_weights "$old/bin/rt-devices"
    elif [ "${RT_CPU_WEIGHTS:-1}" != 0 ]; then
        check "matrix-$ver.5 today's cpu plugin in the $ver core offers its weights buffer type" has_weights "$old/bin/rt-devices"
    fi
    for d in $devices; do
        check "matrix-$ver.6 the $ver rt-run on today's $d plugin: same greedy text" same_text "$work/ref-$d.txt" "$old/bin/rt-run" "$d"
    done
    check "matrix-$ver.7 the $ver rt-test-ops on today's plugins" tests_pass "$old/bin/rt-test-ops"
    unset RT_PLUGIN_PATH

    export LD_LIBRARY_PATH="$mix"
    check "matrix-$ver.8 the $ver application runs on today's core" runs_on_today "$old/bin/rt-devices"
    # Applications could not declare their version before 1.2: every older
    # one is served as 1.0 (rt.h, rt_registry_create). From 1.2 on an
    # application says its version and is served as that.
    case $ver in
    1.0 | 1.1)
        check "matrix-$ver.9 a $ver application on today's core sees no weights buffer type" no_weights "$old/bin/rt-devices" ;;
    *)
        [ "${RT_CPU_WEIGHTS:-1}" != 0 ] &&
            check "matrix-$ver.9 a $ver application on today's core sees the cpu plugin's weights buffer type" has_weights "$old/bin/rt-devices" ;;
    esac
    for d in $devices; do
        check "matrix-$ver.10 the $ver rt-run on today's core, $d: same greedy text" same_text "$work/ref-$d.txt" "$old/bin/rt-run" "$d"
    done
    check "matrix-$ver.11 the $ver rt-test-ops on today's core" tests_pass "$old/bin/rt-test-ops"
    unset LD_LIBRARY_PATH

    if build_targeting "$ver" "$dir/demo-$ver"; then
        check "matrix-$ver.12 today's rt-demo built for $ver binds no later symbol" binds_at_most "$dir/demo-$ver" "$ver"
        export LD_LIBRARY_PATH="$old/lib" RT_PLUGIN_PATH="$old/lib/rt-plugins"
        check "matrix-$ver.13 today's rt-demo built for $ver runs on the $ver core" "$dir/demo-$ver"
        unset LD_LIBRARY_PATH RT_PLUGIN_PATH
    else
        fail "matrix-$ver.12 today's rt-demo builds for $ver"
    fi
    echo "$checks $failed" > "$work/count"
done
read -r checks failed < "$work/count"
echo "matrix: $checks checks, $failed failed"
[ "$failed" = 0 ]
