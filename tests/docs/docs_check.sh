#!/usr/bin/env bash
# The docs against the code, for the drift a reader would meet first:
#   - no user-facing text (README, docs/, the sources of the commands and the package, every
#     `--help`) sends the reader outside the repository (../shared/...);
#   - every `dsdiag <command> --help` and `dsdiag help` points to docs/contract.md;
#   - README and docs/contract.md name the trace format version trace/record_types.h writes;
#   - every finding kind of analyzers/framework/finding_kinds.h is in docs/contract.md and
#     has its section in docs/findings.md; every --inject kind of inject/inject_spec.cc is in
#     docs/contract.md;
#   - the layers docs/architecture.md promises: report/ does not link timeline/, python/
#     links probes and trace only;
#   - a record's fields are spelled in its home, trace/records/ (docs/trace-format.md): no
#     reader in analyzers/, timeline/, report/ or trace/ looks a field up by a string literal;
#   - a closed vocabulary's value ("pre-step", an end reason, a phase name) is spelled once,
#     beside its record's fields, and nowhere else in C++ or python/dsdiag (vocabulary_check.py).
# usage: docs_check.sh SOURCE_DIR DSDIAG_BINARY
set -uo pipefail
src=$1
dsdiag=$2
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
cd "$src" || exit 2

outside=$(git grep -n '\.\./shared' -- README.md docs cli python analyzers trace probes \
  timeline report synth trainer launch inject bench 2>/dev/null)
[[ -z $outside ]] || fail "user-facing text names a path outside the repository:"$'\n'"$outside"

for command in "" train compare timeline report loader-sweep synth run; do
  if [[ -z $command ]]; then help=$("$dsdiag" help 2>&1); else help=$("$dsdiag" "$command" --help 2>&1); fi
  grep -q 'docs/contract.md' <<<"$help" || fail "'dsdiag ${command:-help} --help' does not point to docs/contract.md"
  ! grep -q '\.\./shared\|CONTRACT\.md' <<<"$help" || fail "'dsdiag ${command:-help} --help' names a file outside the repository"
done

major=$(sed -n 's/.*kSchema = "dsdiag\.trace\/\([0-9]*\)".*/\1/p' trace/record_types.h)
[[ -n $major ]] || fail "no kSchema in trace/record_types.h"
grep -q "traces v$major" README.md || fail "README.md does not say 'traces v$major' (trace/record_types.h writes dsdiag.trace/$major)"
grep -q "trace format v$major" docs/contract.md || fail "docs/contract.md does not say 'trace format v$major'"
grep -n 'format v[0-9]' README.md docs/architecture.md docs/contract.md | grep -v "v$major" &&
  fail "README.md / docs name another trace format version than v$major (above)"

for kind in $(sed -n 's/^inline constexpr std::string_view k[A-Za-z]* = "\([a-z-]*\)";/\1/p' \
    analyzers/framework/finding_kinds.h); do
  grep -q "\`$kind\`" docs/contract.md || fail "finding kind $kind is not in docs/contract.md"
  grep -q "^### $kind\$" docs/findings.md || fail "finding kind $kind has no '### $kind' in docs/findings.md"
done
for kind in $(grep -o '^ *"[a-z-]*",$' inject/inject_spec.cc | tr -d ' ",'); do
  grep -q "| \`$kind\` |" docs/contract.md || fail "--inject $kind is not in docs/contract.md's table"
done

grep -q 'dsdiag_timeline' report/CMakeLists.txt && fail "report/ links timeline/ (docs/architecture.md: it does not)"
python_links=$(grep -o 'dsdiag_[a-z_]*' python/CMakeLists.txt | sort -u | grep -v '^dsdiag_core_py\|^dsdiag_python_sources\|^dsdiag_py_\|^dsdiag_built\|^dsdiag_core_sources\|^dsdiag_ddp_hook_')
for lib in $python_links; do
  [[ $lib == dsdiag_probes || $lib == dsdiag_trace ]] || fail "python/ links $lib (docs/architecture.md: probes and trace only)"
done

by_name=$(git grep -nE '\.(Int|Double|Bool|Str|Hex|HexArray|IntArray|StrArray|NumberMembers|Has|Value)\("' \
  -- analyzers timeline report 'trace/*.cc' 2>/dev/null | grep -v '^trace/records/\|^trace/torch_fr/\|header_parser.cc')
[[ -z $by_name ]] || fail "a record field read by name outside trace/records/:"$'\n'"$by_name"
vocabulary=$(python3 tests/docs/vocabulary_check.py . 2>&1) ||
  fail "a vocabulary's value spelled again outside its header (tests/docs/vocabulary_check.py):"$'\n'"$vocabulary"
((failures == 0)) && echo "docs agree with the code" || exit 1
