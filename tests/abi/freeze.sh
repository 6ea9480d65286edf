#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/abi/freeze.sh [--force]: keeps a copy of abi/ as it is when an ABI
# version is declared, in tests/abi/vMAJOR.MINOR/ (the version read from
# abi/rt_version.h). tests/abi/oldplugin.c is built against that copy
# alone, so every later runtime is tested with a plugin that never saw a
# newer header. Run it once per declared version, from the repository root;
# a frozen copy is never touched again, so the script refuses to overwrite
# one unless --force is given (only before the version ships).
set -eu
cd "$(dirname "$0")/../.."
force=0
[ "${1:-}" = --force ] && force=1
major=$(sed -n 's/^#define RT_ABI_VERSION_MAJOR \([0-9]*\)$/\1/p' abi/rt_version.h)
minor=$(sed -n 's/^#define RT_ABI_VERSION_MINOR \([0-9]*\)$/\1/p' abi/rt_version.h)
if [ -z "$major" ] || [ -z "$minor" ]; then
    echo "freeze.sh: cannot read the ABI version from abi/rt_version.h" >&2
    exit 1
fi
dir=tests/abi/v$major.$minor
if [ -e "$dir" ] && [ "$force" = 0 ]; then
    echo "freeze.sh: $dir exists: ABI $major.$minor is frozen already (--force replaces it)" >&2
    exit 1
fi
rm -rf "$dir"
mkdir -p "$dir"
cp abi/*.h "$dir/"
printf 'Frozen copy of abi/ for ABI %s.%s, made by tests/abi/freeze.sh.\nNever edit: tests/abi/oldplugin.c is built against it.\n' \
    "$major" "$minor" > "$dir/README"
echo "froze abi/ as $dir ($(ls abi/*.h | wc -l) headers)"
