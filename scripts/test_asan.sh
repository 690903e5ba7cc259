#!/usr/bin/env bash
# The test suite under AddressSanitizer and UBSan: the asan preset (clang 14, -O1, the app, the engine and
# every test compiled with -fsanitize=address,undefined; UBSan findings are errors), run by ctest's asan
# test preset, which sets ASAN_OPTIONS, UBSAN_OPTIONS and LSAN_OPTIONS (the leak suppressions of
# tests/sanitizers/lsan.supp: Mesa's, LLVM's and the Vulkan loader's own allocations, each named there).
# Lavapipe and the validation layer run uninstrumented inside the instrumented tests. A sanitizer report
# fails the test it happens in. The preset also builds the libFuzzer targets (tests/fuzz; the whole build is
# compiled with libFuzzer's coverage instrumentation, -fsanitize=fuzzer-no-link).
#   scripts/test_asan.sh            the whole suite (docs/reliability.md says how long it takes)
#   scripts/test_asan.sh --ci       what CI runs in its time budget: LS_ASAN_CI_TESTS below (and every other
#                                   source of the preset compiled syntax only: scripts/syntax_check.py), then each fuzz
#                                   target for LS_ASAN_CI_FUZZ_SECONDS from its seeds (scripts/fuzz_lib.sh,
#                                   as scripts/fuzz.sh runs them); a crash fails it, printing the target, its
#                                   log's report and where the input is kept
#   scripts/test_asan.sh -R NAME    any other ctest arguments: a part of the suite (builds everything)
# Prints the build's and the tests' times (with --ci, the fuzz targets' too). Needs clang-14 and
# libclang-rt-14-dev (installed when missing).
set -euo pipefail
cd "$(dirname "$0")/.."

# The CI part: the tests of the code that reads files from strangers or writes the user's files (parsers,
# tokenizers, datasets, checkpoints, exports, the run store) and a short training run end to end; only their
# executables are built. The whole suite does not fit CI's time (docs/reliability.md "Sanitizers").
LS_ASAN_CI_TESTS=(safetensors_test config_test tokenizer_test jinja_engine_test chat_template_test dataset_test
                  batcher_test gguf_file_test peft_save_test merge_test export_disk_full_test config_from_json_test
                  run_store_test trainer_test sample_test)
# The fuzz targets' share of CI: seconds a target (9 targets, one after another).
LS_ASAN_CI_FUZZ_SECONDS=10

source scripts/deps.sh
source scripts/fuzz_lib.sh
ls_install_deps clang libclang-rt-14-dev "${LS_TEST_PACKAGES[@]+"${LS_TEST_PACKAGES[@]}"}"
scripts/fetch_tokenizers.sh >/dev/null
scripts/fetch_llamacpp.sh >/dev/null
scripts/glslang.sh
seconds_since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }'; }

ci=0
if [ "${1:-}" = "--ci" ]; then
  ci=1
  shift
fi
start=$(date +%s.%N)
cmake --preset asan >/dev/null
if [ $ci = 1 ]; then
  # (app/train_trl_py.h, and build_info.cpp with it: the app's generated files, for the syntax check below)
  cmake --build --preset asan --target "${LS_ASAN_CI_TESTS[@]}" fuzz_targets app/train_trl_py.h
  # The rest of the preset (the other tests, the app, the UI, the benchmark) through its compiler without code
  # generation, so that the whole run by hand still builds (clang 14 refuses some code gcc takes).
  python3 scripts/syntax_check.py build/asan
else
  cmake --build --preset asan
fi
echo "test_asan.sh: build: $(seconds_since "$start") s"
start=$(date +%s.%N)
rc=0
if [ $ci = 1 ]; then
  regex="^($(IFS='|'; echo "${LS_ASAN_CI_TESTS[*]}"))\$"
  ctest --preset asan -j "$(nproc)" -R "$regex" "$@" || rc=$?
else
  ctest --preset asan -j "$(nproc)" "$@" || rc=$?
fi
echo "test_asan.sh: tests: $(seconds_since "$start") s"
if [ $ci = 1 ]; then
  start=$(date +%s.%N)
  ls_fuzz_run build/asan "$LS_ASAN_CI_FUZZ_SECONDS" -1 "${LS_FUZZ_TARGETS[@]}" || rc=1
  echo "test_asan.sh: fuzz targets: $(seconds_since "$start") s"
fi
exit $rc
