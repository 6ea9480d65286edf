#!/bin/sh
# tests/test-configure-darwin.sh: what a Mac's ./configure and ninja would
# do, as far as Linux can tell. Runs ./configure in a scratch directory
# (the tree linked in, build.ninja copied) with `uname` answering Darwin,
# then asks ninja for the commands of `all` and the Metal plugin without
# running them (ninja -n), and checks:
#
#   darwin-1  configure writes macOS's linking: .dylib plugins, ld64 flags
#             (no version scripts), @loader_path run paths, the OS files
#             (os_darwin.c, tools_os_darwin.c), Metal.framework
#   darwin-2  every input of `all` and of the Metal plugin exists or has a
#             rule (ninja -n succeeds), and the plugin's link command
#             names Metal and Foundation and exports only rt_plugin_query
#   darwin-3  no command of the macOS build uses a GNU-ld-only flag
#
# What this cannot check: that Apple's compiler, linker and SDK accept it
# (tests/device/metal.sh does, on a Mac). Runs from the repository root.
set -u
command -v ninja >/dev/null 2>&1 || { echo "test-configure-darwin: no ninja"; exit 1; }
root=$(pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for d in abi runtime model dist plugins tools tests; do ln -s "$root/$d" "$tmp/$d"; done
cp configure build.ninja "$tmp/"
mkdir "$tmp/bin"
printf '#!/bin/sh\necho Darwin\n' > "$tmp/bin/uname"
chmod +x "$tmp/bin/uname"
failed=0
check() { # check ID WHAT COMMAND...: one line per check
    id=$1
    what=$2
    shift 2
    if "$@" >/dev/null 2>&1; then echo "ok   $id $what"; else echo "FAIL $id $what"; failed=$((failed + 1)); fi
}
(cd "$tmp" && PATH="$tmp/bin:$PATH" sh ./configure > configure.txt 2>&1) ||
    { echo "FAIL darwin-1: configure failed:"; cat "$tmp/configure.txt"; exit 1; }
cfg=$tmp/build/config.ninja
has() { grep -q -- "$1" "$cfg"; }
check darwin-1.1 "plugins end in .dylib" has '^dso = .dylib$'
check darwin-1.2 "ld64: install names, an exported-symbol list, no version script" \
    sh -c "grep -q '^soname_flag = -Wl,-install_name,@rpath/' '$cfg' &&
           grep -q '^plugin_exports = -Wl,-exported_symbol,_rt_plugin_query$' '$cfg' &&
           grep -q '^core_vscript = $' '$cfg'"
check darwin-1.3 "run paths from @loader_path" has '^origin = @loader_path$'
check darwin-1.4 "the OS files" sh -c "grep -q '^cpu_os_impl = os_darwin.c$' '$cfg' &&
                                        grep -q '^tools_os_impl = tools_os_darwin.c$' '$cfg'"
if grep -q '^metal  *yes' "$tmp/configure.txt"; then
    check darwin-1.5 "Metal.framework" has '^metal_libs = -framework Metal -framework Foundation -lobjc$'
    plugin=build/lib/rt-plugins/rt-plugin-metal.dylib
    check darwin-2.1 "ninja -n all and the Metal plugin" ninja -C "$tmp" -n all "$plugin"
    ninja -C "$tmp" -t commands all "$plugin" > "$tmp/commands.txt" 2>&1
    check darwin-2.2 "the plugin links Metal and exports rt_plugin_query" \
        sh -c "grep -- '-o $plugin ' '$tmp/commands.txt' | grep -- '-framework Metal' | grep -q -- '-exported_symbol,_rt_plugin_query'"
else
    echo "ok   darwin-1.5 (no Metal here: $(grep '^metal' "$tmp/configure.txt"))"
    check darwin-2.1 "ninja -n all" ninja -C "$tmp" -n all
    ninja -C "$tmp" -t commands all > "$tmp/commands.txt" 2>&1
fi
check darwin-3 "no --version-script, -soname or \$ORIGIN in the macOS build" \
    sh -c "! grep -E -- '--version-script|-soname|ORIGIN' '$tmp/commands.txt'"
echo "test-configure-darwin: $failed failure(s)"
[ "$failed" = 0 ]
