#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, under the asan preset: clang 14, AddressSanitizer, UBSan, coverage
# for libFuzzer) and runs each for SECONDS (default 60) from a seed corpus of the test fixtures, one after
# another; prints each target's executions and whether it failed, and fails if any did. A crash's input is
# kept as build/asan/fuzz/crashes/<target>/crash-* (add it to the target's regression test in tests/).
# scripts/test_asan.sh --ci (CI) runs the same for a few seconds a target (scripts/fuzz_lib.sh is shared).
#   scripts/fuzz.sh [SECONDS] [TARGET...]           e.g. scripts/fuzz.sh 600 gguf_fuzz
#   LS_FUZZ_RUNS=10000000 scripts/fuzz.sh 0 TARGET   stop after that many executions instead (0 s: no time limit)
# Needs clang-14 and libclang-rt-14-dev (Debian); scripts/test.sh's packages otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
source scripts/deps.sh
source scripts/fuzz_lib.sh
ls_install_deps clang libclang-rt-14-dev "${LS_FETCH_PACKAGES[@]+"${LS_FETCH_PACKAGES[@]}"}"
scripts/fetch_tokenizers.sh >/dev/null
scripts/glslang.sh
cmake --preset asan >/dev/null
cmake --build --preset asan --target fuzz_targets
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${LS_FUZZ_TARGETS[@]}")
ls_fuzz_run build/asan "$seconds" "${LS_FUZZ_RUNS:--1}" "${targets[@]}"
