#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/test-neon-qemu.sh: the CPU plugin's NEON path, cross-built for arm64
# (build/arm64/test-neon, tests/test-neon.c) and run under qemu-aarch64. In
# the test list only when ./configure found the cross compiler and qemu (its
# optional_tests), so a missing binary is a failure here. Build directory:
# RT_TEST_BUILD_DIR (set by tests/run.sh), else build.
b=${RT_TEST_BUILD_DIR:-build}
bin=$b/arm64/test-neon
[ -x "$bin" ] || { echo "test-neon-qemu: $bin is missing (ninja arm64_tests)"; exit 1; }
exec qemu-aarch64 -L /usr/aarch64-linux-gnu "$bin"
