#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/test-cuda-nodevice.sh: the CUDA plugin as users without a GPU get
# it. In the test list only when ./configure found nvcc (its
# optional_tests), so a missing plugin is a failure here. Run by
# tests/run.sh from the repository root (RT_TEST_BUILD_DIR names the build
# directory). On a machine with a GPU the device checks are
# tests/device/cuda.sh's; here a GPU only turns cuda-1.5 into "devices
# listed".
#
#   cuda-1.1  build/lib/rt-plugins/rt-plugin-cuda.so exists
#   cuda-1.2  it needs no CUDA runtime or cuBLAS library (ldd): the runtime
#             is static and cuBLAS is opened at run time
#   cuda-1.3  it exports rt_plugin_query alone (nm -D)
#   cuda-1.4  rt-devices lists plugin cuda as loaded
#   cuda-1.5  with 0 devices, rt-devices says why beside them, without
#             RT_LOG ("cuda: no devices: no driver ..." without libcuda.so.1,
#             else the runtime's words, "cuda: no devices:
#             cudaGetDeviceCount: ..."); with some, it lists them under
#             plugin cuda
#   cuda-1.6  with 0 devices, rt-devices --json gives the same "reason"
set -u
b=${RT_TEST_BUILD_DIR:-build}
so=$b/lib/rt-plugins/rt-plugin-cuda.so
failed=0
checked=0
out=$(mktemp)
err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT

check() { # check ID CONDITION-STATUS MESSAGE
    checked=$((checked + 1))
    if [ "$2" = 0 ]; then echo "ok   $1"; else echo "FAIL $1: $3"; failed=$((failed + 1)); fi
}

[ -f "$so" ]
check cuda-1.1 $? "$so is missing (configure found nvcc: run ninja)"
if [ -f "$so" ]; then
    libs=$(ldd "$so" 2>&1 | grep -E 'libcudart|libcublas' | tr '\n' ' ')
    [ -z "$libs" ]
    check cuda-1.2 $? "links $libs"
    syms=$(nm -D --defined-only "$so" | awk 'NF >= 3 { print $3 }' | tr '\n' ' ')
    [ "$syms" = "rt_plugin_query " ]
    check cuda-1.3 $? "exports '$syms'"
fi

"$b/bin/rt-devices" >"$out" 2>"$err" # no RT_LOG: the listing itself must say why
line=$(grep -E '^  cuda +ABI [0-9.]+ +loaded, ' "$out")
[ -n "$line" ]
check cuda-1.4 $? "rt-devices does not list cuda as loaded: $(grep -E '^  cuda ' "$out")"
if printf '%s\n' "$line" | grep -q 'loaded, 0 devices'; then
    printf '%s\n' "$line" | grep -q 'loaded, 0 devices: cuda: no devices: '
    check cuda-1.5 $? "no reason beside 0 devices: $line"
    "$b/bin/rt-devices" --json 2>/dev/null | grep -q '"name": "cuda", [^}]*"reason": "cuda: no devices: '
    check cuda-1.6 $? "rt-devices --json gives no reason for cuda's 0 devices"
    printf '%s\n' "$line"
else
    grep -qE '^  \[[0-9]+\] cuda[0-9]+ +\(plugin cuda' "$out"
    check cuda-1.5 $? "cuda reports devices but rt-devices lists none"
fi

echo "test-cuda-nodevice: $checked checks, $failed failures"
[ "$failed" = 0 ]
