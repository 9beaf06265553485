#!/bin/sh
# test_nvcc_guard.sh — scripts/nvcc-guard.sh (the CUDA compiler launcher) against fake compilers:
# a compile whose ptxas serializes wgmmas fails and leaves no object; any other compile passes
# through with its output and exit status.
set -u
here=$(cd "$(dirname "$0")" && pwd)
guard="$here/../../scripts/nvcc-guard.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
check() { # NAME CONDITION...
  name=$1
  shift
  if "$@"; then echo "ok   $name"; else echo "FAIL $name"; fails=$((fails + 1)); fi
}
# fake compiler: prints $FAKE_MSG to stderr, writes the file after -o, exits $FAKE_RC
cat >"$tmp/fakecc" <<'EOS'
#!/bin/sh
prev=""
for a in "$@"; do
  [ "$prev" = "-o" ] && echo object >"$a"
  prev=$a
done
printf '%s\n' "$FAKE_MSG" >&2
exit "$FAKE_RC"
EOS
chmod +x "$tmp/fakecc"

C7511="ptxas info    : (C7511) Potential Performance Loss: wgmma.mma_async instructions are serialized due to insufficient register resources for the wgmma pipeline in the function 'k'"

FAKE_MSG=$C7511 FAKE_RC=0 sh "$guard" "$tmp/fakecc" -c x.cu -o "$tmp/a.o" >"$tmp/out1" 2>&1
rc=$?
check "serialized wgmma: the compile fails" test "$rc" -ne 0
check "serialized wgmma: no object is left" test ! -e "$tmp/a.o"
check "serialized wgmma: ptxas's message is shown" grep -q C7511 "$tmp/out1"
check "serialized wgmma: the guard says why" grep -q "nvcc-guard" "$tmp/out1"

FAKE_MSG="ptxas info    : Used 168 registers" FAKE_RC=0 sh "$guard" "$tmp/fakecc" -c x.cu -o "$tmp/b.o" >"$tmp/out2" 2>&1
rc=$?
check "clean compile: passes" test "$rc" -eq 0
check "clean compile: the object stays" test -e "$tmp/b.o"
check "clean compile: its output is shown" grep -q "Used 168 registers" "$tmp/out2"

FAKE_MSG="x.cu(3): error: something" FAKE_RC=2 sh "$guard" "$tmp/fakecc" -c x.cu -o "$tmp/c.o" >"$tmp/out3" 2>&1
rc=$?
check "failing compile: its exit status is kept" test "$rc" -eq 2
check "failing compile: its error is shown" grep -q "error: something" "$tmp/out3"

echo "$fails failed"
[ "$fails" -eq 0 ]
