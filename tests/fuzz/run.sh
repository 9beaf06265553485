#!/usr/bin/env bash
# run.sh CLANG OUTDIR SECONDS — build the libFuzzer targets for the CSV/JSON readers and run each
# for SECONDS. Exit 77 (skipped) when clang cannot build fuzzers here.
set -u
clang=$1; out=$2; secs=$3
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
targets=$(ls "$root"/tests/fuzz/fuzz_*.c 2>/dev/null)
[ -n "$targets" ] || { echo "SKIPPED: no fuzz targets"; exit 77; }
core=$(ls "$root"/src/core/*.c "$root"/src/model/*.c)
for t in $targets; do
  name=$(basename "$t" .c)
  if ! "$clang" -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
      -I"$root/include" -I"$root/src" "$t" $core -lm -o "$out/$name" 2>"$out/$name.build.log"; then
    if grep -q "fuzzer" "$out/$name.build.log" && grep -qi "cannot find\|not found\|unsupported" "$out/$name.build.log"; then
      echo "SKIPPED: clang cannot build libFuzzer targets here"; cat "$out/$name.build.log"; exit 77
    fi
    echo "FAIL: building $name"; cat "$out/$name.build.log"; exit 1
  fi
  mkdir -p "$out/$name.corpus"
  cp "$root"/tests/fuzz/corpus/"${name#fuzz_}"/* "$out/$name.corpus/" 2>/dev/null || true
  echo "fuzzing $name for ${secs}s"
  if ! "$out/$name" -max_total_time="$secs" -max_len=65536 -rss_limit_mb=2048 \
      -artifact_prefix="$out/$name-" "$out/$name.corpus" >"$out/$name.log" 2>&1; then
    echo "FAIL: $name found a crash:"; tail -50 "$out/$name.log"; exit 1
  fi
  grep -E "^#[0-9]+.*DONE|Done [0-9]+ runs" "$out/$name.log" | tail -1
done
echo "fuzz: all targets ran clean"
