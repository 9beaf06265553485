#!/usr/bin/env bash
# pack-build.sh [BUILD] — copy the runnable part of a build tree (executables, shared libraries)
# into .carry/build, small enough to send to the GPU machine (the device tool's 64 MiB limit).
# There: `rm -rf build && cp -r .carry/build build` (scripts/gpu/all.sh does it).
set -euo pipefail
src=${1:-build}
dst=.carry/build
rm -rf "$dst"
mkdir -p "$dst"
find "$src" -maxdepth 1 -type f \( -perm -u+x -o -name '*.so*' \) -exec cp -p {} "$dst"/ \;
du -sh "$dst"
