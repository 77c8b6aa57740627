#!/usr/bin/env bash
# vocabulary_check.py can fail: on a copy of the vocabularies' headers beside a C++ and a
# Python source that spell values again, it names each of them and exits 1; on the same
# sources written with the constants, and with literals only in comments, docstrings and
# unrelated strings, it passes.
# usage: vocabulary_check_test.sh SOURCE_DIR
set -uo pipefail
src=$1
check="$src/tests/docs/vocabulary_check.py"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

for header in $(sed -n 's/^ *("[a-z_]*", "\([^"]*\.h\)".*/\1/p' "$check" | sort -u); do
  mkdir -p "$tmp/$(dirname "$header")"
  cp "$src/$header" "$tmp/$header"
done
mkdir -p "$tmp/analyzers" "$tmp/python/dsdiag/torch"

cat >"$tmp/analyzers/spelled_again.cc" <<'EOF'
// A comment may quote "pre-step" and why == "init".
bool PreStep(std::string_view why) { return why == "pre-step"; }
bool Init(const Fp& fp) { return fp.why != "init"; }
void Stop(Session* s) { s->End("error", 1, "collective timeout"); }
const char* kKnown[] = {"data", "forward", "backward"};
bool Watchdog(const Dump& d) { return d.reason == "timeout"; }
std::string log = "step 3 pre-step fingerprints";
EOF
cat >"$tmp/python/dsdiag/torch/spelled_again.py" <<'EOF'
"""A docstring may say `with phase("forward"):` and "after-sync"."""


def record(session, hashes):
    _core.write_fingerprints(session, "param", "init", True, hashes)  # "pre-step" here is fine
    with phase('forward'):
        pass
    if reason == "ok":
        RUNTIME.end("peer-failure", 1)
    PATCHES.replace(torch.Tensor, "backward", _backward)  # a patched name, not a phase
EOF
out=$(python3 "$check" "$tmp" 2>&1)
status=$?
[[ $status -eq 1 ]] || fail "the check exited $status on spelled-again values (expected 1):"$'\n'"$out"
for expected in \
  'analyzers/spelled_again.cc:2: "pre-step" (fp_why)' \
  'analyzers/spelled_again.cc:3: "init" (fp_why)' \
  'analyzers/spelled_again.cc:4: "error" (end_reason)' \
  'analyzers/spelled_again.cc:5: "backward" (phase)' \
  'analyzers/spelled_again.cc:5: "data" (phase)' \
  'analyzers/spelled_again.cc:6: "timeout" (flight_dump_reason)' \
  'python/dsdiag/torch/spelled_again.py:5: "init" (fp_why)' \
  'python/dsdiag/torch/spelled_again.py:5: "param" (fp_what)' \
  'python/dsdiag/torch/spelled_again.py:6: "forward" (phase)' \
  'python/dsdiag/torch/spelled_again.py:8: "ok" (end_reason)' \
  'python/dsdiag/torch/spelled_again.py:9: "peer-failure" (end_reason)'; do
  grep -qF "$expected" <<<"$out" || fail "not reported: $expected"$'\n'"$out"
done
for quiet in 'spelled_again.cc:1:' 'spelled_again.cc:7:' 'spelled_again.py:1:' 'spelled_again.py:10:'; do
  grep -qF "$quiet" <<<"$out" && fail "reported a comment, docstring or unrelated string: $quiet"$'\n'"$out"
done

cat >"$tmp/analyzers/spelled_again.cc" <<'EOF'
// A comment may quote "pre-step" and why == "init".
bool PreStep(std::string_view why) { return why == fp_why::kPreStep; }
void Stop(Session* s) { s->End(end_reason::kError, 1, "collective timeout"); }
EOF
cat >"$tmp/python/dsdiag/torch/spelled_again.py" <<'EOF'
"""A docstring may say `with phase("forward"):` and "after-sync"."""


def record(session, hashes):
    _core.write_fingerprints(session, fp_what.PARAM, fp_why.INIT, True, hashes)
    PATCHES.replace(torch.Tensor, "backward", _backward)
EOF
out=$(python3 "$check" "$tmp" 2>&1) || fail "the check failed on sources that use the constants:"$'\n'"$out"

((failures == 0)) && echo "the vocabulary check fails on a value spelled again, and only then" || exit 1
