#!/usr/bin/env bash
# The README's LibTorch loop, as a user gets it: `cmake --install` this build, build the
# loop README.md shows (the block after the "readme-loop" marker, as it stands) against the
# installed package with find_package(dsdiag), run it on 2 ranks (TCPStore + Gloo), and read
# the run with `dsdiag compare`. Then SIGTERM one rank of a longer run: its trace must end
# with the flight dump and an `end` record, and compare must name it, the other rank's
# death a follow-on. Also: the loop with its `// dsdiag` lines taken out still builds (they
# are all the lines dsdiag needs; README counts them), and a project that vendors dsdiag
# with add_subdirectory gets the same dsdiag:: targets.
#
# usage: readme_loop_test.sh SOURCE_DIR BUILD_DIR DSDIAG_BINARY
set -euo pipefail
source_dir=$1
build_dir=$2
dsdiag=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/dsdiag-readme-loop-XXXXXX")
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# 1. The loop, from README.md.
awk '/<!-- readme-loop:/ {marked = 1; next}
     marked && /^```cpp$/ {inside = 1; next}
     inside && /^```$/ {exit}
     inside {print}' "$source_dir/README.md" > "$work/readme_loop.cc"
[ -s "$work/readme_loop.cc" ] || fail "no \`\`\`cpp block after the readme-loop marker in README.md"
grep -v '// dsdiag$' "$work/readme_loop.cc" > "$work/readme_loop_without_dsdiag.cc"
marked=$(grep -c '// dsdiag$' "$work/readme_loop.cc")
echo "README loop: $(wc -l < "$work/readme_loop.cc") lines, $marked marked // dsdiag"
[ "$marked" -le 20 ] || fail "the README loop needs $marked dsdiag lines (goal: at most 20)"
tr '\n' ' ' < "$source_dir/README.md" | grep -q "the $marked lines marked" ||
  fail "README.md does not say the loop takes $marked dsdiag lines"

# 2. Install, and build the loop as a user's project would.
cmake --install "$build_dir" --prefix "$work/prefix" > "$work/install.log" ||
  fail "cmake --install: $(tail -5 "$work/install.log")"
generator=()
command -v ninja > /dev/null && generator=(-G Ninja)
# The LibTorch this build of dsdiag was made with (Debian's, or a torch wheel's), its install
# root first on the prefix path: a wheel's TorchConfig.cmake finds its libraries with
# find_library, which would otherwise take Debian's /usr/lib ones beside a wheel's headers.
torch_dir=$(sed -n 's/^Torch_DIR:[A-Z]*=//p' "$build_dir/CMakeCache.txt")
torch_root=$(cd "$torch_dir/../../.." && pwd)
cmake -S "$source_dir/tests/install/consumer" -B "$work/build" "${generator[@]}" \
  -DCMAKE_PREFIX_PATH="$torch_root;$work/prefix" -DTorch_DIR="$torch_dir" -DLOOP_DIR="$work" \
  -DCMAKE_BUILD_TYPE=Release \
  > "$work/configure.log" 2>&1 || { cat "$work/configure.log"; fail "configuring the consumer"; }
cmake --build "$work/build" -j 2 > "$work/build.log" 2>&1 ||
  { tail -40 "$work/build.log"; fail "building the README loop against the installed package"; }

# 3. Two ranks, 30 steps: a clean run, read by compare.
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
start_ranks() {  # STEPS RUN_DIR: starts rank 0 and 1 in the background, pids in `pids`
  local port
  port=$(free_port)
  pids=()
  for rank in 0 1; do
    RANK=$rank WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port DSDIAG_OUT=$2 \
      OMP_NUM_THREADS=1 "$work/build/readme_loop" "$1" > "$work/rank$rank.log" 2>&1 &
    pids+=($!)
  done
}
start_ranks 30 "$work/clean"
for rank in 0 1; do
  wait "${pids[$rank]}" || fail "rank $rank exited $?: $(tail -5 "$work/rank$rank.log")"
done
pids=()
"$dsdiag" compare "$work/clean" > "$work/compare-clean.txt" ||
  { cat "$work/compare-clean.txt"; fail "compare of the clean README loop run exited $?"; }
grep -q "0 errors, 0 warnings" "$work/compare-clean.txt" || fail "clean run has findings"
for rank in 0 1; do
  trace=$work/clean/rank-0000$rank.jsonl
  # A pre-step fingerprint equal to the after-sync one is the step record's flag (trace v2).
  for record in '"type":"header"' '"type":"coll"' '"why":"pre-step"\|"pre_step_fp":"grad' '"type":"grad"' \
                '"when":"end"' '"reason":"ok"'; do
    grep -q "$record" "$trace" || fail "rank $rank's trace has no $record"
  done
done

# 4. SIGTERM to rank 1 of a long run: rank 1 leaves its dump and end record, rank 0's
# death (its collective loses the peer) is a follow-on.
start_ranks 1000000 "$work/stopped"
for _ in $(seq 100); do
  grep -q '"type":"step"' "$work/stopped/rank-00001.jsonl" 2> /dev/null && break
  sleep 0.1
done
echo "SIGTERM to rank 1; rank 0 then loses its peer and aborts (expected)"
kill -TERM "${pids[1]}"
status=0
wait "${pids[1]}" || status=$?
[ "$status" -eq 143 ] || fail "rank 1 exited $status after SIGTERM, expected 143 (killed by it)"
# Rank 0 ends on its own once its collective finds the peer gone; on a loaded machine it may
# reach that collective only seconds later: a kill before then would leave it silent, and the
# run would read as rank 0's death with rank 1's SIGTERM as the teardown after it.
for _ in $(seq 600); do kill -0 "${pids[0]}" 2> /dev/null || break; sleep 0.1; done
kill -KILL "${pids[0]}" 2> /dev/null || true
wait "${pids[0]}" 2> /dev/null || true
pids=()
tail -1 "$work/stopped/rank-00001.jsonl" | grep -q '"reason":"signal","status":143' ||
  fail "rank 1's trace does not end with a signal end record: $(tail -1 "$work/stopped/rank-00001.jsonl")"
grep -q '"reason":"SIGTERM"' "$work/stopped/flight-rank-00001.json" || fail "no SIGTERM flight dump"
status=0
"$dsdiag" compare "$work/stopped" --format json > "$work/compare-stopped.json" || status=$?
[ "$status" -eq 1 ] || fail "compare of the stopped run exited $status, expected 1"
python3 - "$work/compare-stopped.json" << 'PY' || fail "compare of the stopped run: wrong verdict"
import json, sys
findings = json.load(open(sys.argv[1]))["findings"]
errors = [f for f in findings if f["severity"] == "error"]
assert len(errors) == 1, errors
assert errors[0]["kind"] == "rank-died" and errors[0]["ranks"] == [1], errors[0]
assert "SIGTERM" in errors[0]["summary"], errors[0]
PY

# 5. add_subdirectory: the same names, resolved at generate time.
cmake -S "$source_dir/tests/install/subdirectory_consumer" -B "$work/subdirectory" \
  "${generator[@]}" -DDSDIAG_SOURCE_DIR="$source_dir" > "$work/subdirectory.log" 2>&1 ||
  { tail -20 "$work/subdirectory.log"; fail "add_subdirectory(dsdiag) with dsdiag::probes"; }
echo "PASS"
