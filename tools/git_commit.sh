#!/bin/sh
# git_commit.sh OUT: writes OUT, a header defining RT_GIT_COMMIT as the
# `git describe --always --dirty` of the source tree ("unknown" outside
# git), and leaves OUT untouched when it already says that, so that ninja
# (restat) rebuilds nothing when the commit is the same.
set -eu
out=$1
src=$(dirname "$0")/..
commit=$(git -C "$src" describe --always --dirty 2>/dev/null || echo unknown)
line="#define RT_GIT_COMMIT \"$commit\""
if [ -f "$out" ] && [ "$(cat "$out")" = "$line" ]; then exit 0; fi
mkdir -p "$(dirname "$out")"
printf '%s\n' "$line" > "$out.tmp"
mv "$out.tmp" "$out"
