#!/bin/sh
# tests/test-embed-msl.sh: tools/embed_msl.sh keeps the Metal plugin's
# binding convention (plugins/metal/mtl_impl.h) or fails the build. Runs the
# script on a one-shader Vulkan table with a stand-in for spirv-cross that
# prints a given MSL, and checks:
#
#   embed-msl-1  a kernel in the convention is embedded, its push constants
#                moved from buffer 0 to buffer 4, the binding-0 buffer kept
#   embed-msl-2  a buffer index outside 0-4 fails
#   embed-msl-3  a function constant that is not a uint (or has an id of
#                RT_VK_N_SPEC or more) fails
#   embed-msl-4  MSL without the entry point main0 fails
#   embed-msl-5  a Vulkan table that lists no shader fails
#   embed-msl-6  a second constant-space argument (a uniform buffer) fails
#
# Runs from the repository root (tests/run.sh does); POSIX sh.
set -u
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/vk"
echo '    { "k", spv_k, sizeof spv_k },' > "$tmp/vk/shaders.c"
: > "$tmp/vk/k.spv"
# The stand-in: writes $FAKE_MSL to the path after --output.
cat > "$tmp/cross" <<'EOS'
#!/bin/sh
while [ $# -gt 0 ]; do
    [ "$1" = --output ] && printf '%s\n' "$FAKE_MSL" > "$2"
    shift
done
EOS
chmod +x "$tmp/cross"
failed=0
head='#include <metal_stdlib>
using namespace metal;
struct P { uint4 ne; };'
good="$head
constant uint W_tmp [[function_constant(0)]];
kernel void main0(device void* b0 [[buffer(0)]], constant P& pc [[buffer(0)]], device void* b3 [[buffer(3)]])
{
}"

# embed ID WANT(ok|fail) MSL [TABLE]: runs the script, checks its verdict.
embed() {
    table=${4:-$tmp/vk/shaders.c}
    FAKE_MSL=$3 SPIRV_CROSS=$tmp/cross sh tools/embed_msl.sh "$tmp/out.c" "$table" > "$tmp/log" 2>&1
    rc=$?
    if { [ "$2" = ok ] && [ "$rc" = 0 ]; } || { [ "$2" = fail ] && [ "$rc" != 0 ]; }; then
        echo "ok   $1 ($(head -n 1 "$tmp/log"))"
        return 0
    fi
    echo "FAIL $1: expected $2, exit status $rc: $(cat "$tmp/log")"
    failed=$((failed + 1))
    return 1
}

if embed embed-msl-1 ok "$good"; then
    if grep -q 'constant P& pc \[\[buffer(4)\]\]' "$tmp/out.c" &&
       grep -q 'device void\* b0 \[\[buffer(0)\]\]' "$tmp/out.c" &&
       grep -q '{ "k", msl_k, sizeof msl_k - 1 }' "$tmp/out.c"; then
        echo "ok   embed-msl-1.1 push constants at buffer 4, binding 0 at buffer 0, table entry"
    else
        echo "FAIL embed-msl-1.1: $(grep -n 'kernel\|msl_k' "$tmp/out.c")"
        failed=$((failed + 1))
    fi
fi
embed embed-msl-2 fail "$head
kernel void main0(device void* b0 [[buffer(0)]], device void* b7 [[buffer(7)]])
{
}"
embed embed-msl-3 fail "$head
constant int X_tmp [[function_constant(1)]];
kernel void main0(device void* b0 [[buffer(0)]])
{
}"
embed embed-msl-3.1 fail "$head
constant uint X_tmp [[function_constant($(sed -n 's/^#define RT_VK_N_SPEC \([0-9]*\).*/\1/p' plugins/vulkan/vk_impl.h))]];
kernel void main0(device void* b0 [[buffer(0)]])
{
}"
embed embed-msl-4 fail "$head
kernel void other(device void* b0 [[buffer(0)]])
{
}"
: > "$tmp/vk/empty.c"
embed embed-msl-5 fail "$good" "$tmp/vk/empty.c"
embed embed-msl-6 fail "$head
kernel void main0(constant P& pc [[buffer(0)]], constant P& u [[buffer(2)]])
{
}"
echo "test-embed-msl: $failed failure(s)"
[ "$failed" = 0 ]
