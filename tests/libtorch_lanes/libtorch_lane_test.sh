#!/usr/bin/env bash
# dsdiag's C++ side on another LibTorch (a torch wheel's): configure dsdiag against it, build
# it, run the torch adapters' unit tests, run the reference trainer on 2 ranks (a clean run,
# then one with a gradient changed on rank 1: grad-desync names it), then the README's loop
# built against this build's installed package (tests/install/readme_loop_test.sh). The
# build directory is kept between runs; with ccache (the main build's launcher) a fresh
# clone's first run is cheap.
#
# usage: libtorch_lane_test.sh SOURCE_DIR WORK_DIR TORCH_CMAKE_PREFIX [LAUNCHER]
set -euo pipefail
source_dir=$1
work=$2
torch_prefix=$3
launcher=${4:-}
fail() { echo "FAIL: $*" >&2; exit 1; }
mkdir -p "$work"
rm -rf "$work/runs"

configure=(-G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_PREFIX_PATH=$torch_prefix"
  -DDSDIAG_WITH_PYTHON=OFF -DDSDIAG_BUILD_TESTS=ON)
[[ -z $launcher ]] || configure+=("-DCMAKE_CXX_COMPILER_LAUNCHER=$launcher"
  "-DCMAKE_C_COMPILER_LAUNCHER=$launcher")
cmake -S "$source_dir" -B "$work/build" "${configure[@]}" > "$work/configure.log" 2>&1 ||
  { tail -30 "$work/configure.log"; fail "configuring against $torch_prefix"; }
grep 'dsdiag: LibTorch ON' "$work/configure.log" ||
  fail "the configure found no LibTorch under $torch_prefix"
grep -q 'dsdiag: LibTorch ON .*, trainer ON' "$work/configure.log" ||
  fail "c10d's Gloo backend does not build against $torch_prefix (configure.log says why)"

cmake --build "$work/build" -j 2 --target dsdiag dsdiag-torch probes_torch_test \
  > "$work/build.log" 2>&1 || { tail -40 "$work/build.log"; fail "building against $torch_prefix"; }
dsdiag=$work/build/dsdiag

# 1. The torch adapters' unit tests.
"$work/build/tests/probes_torch/probes_torch_test" --gtest_brief=1 ||
  fail "probes_torch_test on $torch_prefix"

# 2. The reference trainer, 2 ranks: its header names this LibTorch; clean, then one fault.
verdict() {  # RUN_DIR KIND: no warning or error but KIND (none when KIND is empty)
  "$dsdiag" compare "$1" --format json > "$1.json" || true
  python3 - "$1.json" "$2" <<'PY'
import json, sys
out, kind = json.load(open(sys.argv[1])), sys.argv[2]
serious = sorted({(f["kind"], tuple(f["ranks"])) for f in out["findings"] if f["severity"] != "info"
                  and f["kind"] not in ("straggler", "loader-starvation")})
expected = [(kind, (1,))] if kind else []
assert serious == expected, (serious, expected)
PY
}
OMP_NUM_THREADS=1 "$dsdiag" train --nproc 2 --steps 12 --out "$work/runs/clean" > "$work/train.log" 2>&1 ||
  { tail -20 "$work/train.log"; fail "dsdiag train on $torch_prefix"; }
version=$(head -1 "$work/runs/clean/rank-00000.jsonl" | grep -o '"libtorch":"[^"]*"') ||
  fail "the trainer's header names no libtorch version"
verdict "$work/runs/clean" "" || fail "the clean trainer run on $torch_prefix has findings"
OMP_NUM_THREADS=1 "$dsdiag" train --nproc 2 --steps 12 --inject grad-desync:rank=1,step=4 \
  --out "$work/runs/desync" > "$work/train-desync.log" 2>&1 || true
verdict "$work/runs/desync" grad-desync || fail "grad-desync on rank 1 not named on $torch_prefix"
echo "trainer on $version: clean run clean, grad-desync named"

# 3. The README's loop against this build's installed package.
bash "$source_dir/tests/install/readme_loop_test.sh" "$source_dir" "$work/build" "$dsdiag"
