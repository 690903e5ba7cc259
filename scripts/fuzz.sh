#!/usr/bin/env bash
# Builds the libFuzzer targets (the fuzz preset: clang, AddressSanitizer, UBSan; tests/fuzz) and runs each
# for SECONDS (default 60) from a seed corpus of the test fixtures, one after another; prints each
# target's executions and whether it crashed, and fails if any did. A crash's input is kept as
# build/fuzz/crashes/<target>/crash-* (add it to the target's regression test in tests/).
#   scripts/fuzz.sh [SECONDS] [TARGET...]     e.g. scripts/fuzz.sh 600 gguf_fuzz
# Needs clang-14 and libclang-rt-14-dev (Debian); scripts/test.sh's packages otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
source scripts/deps.sh
ls_install_deps clang libclang-rt-14-dev "${LS_FETCH_PACKAGES[@]+"${LS_FETCH_PACKAGES[@]}"}"
scripts/fetch_tokenizers.sh >/dev/null
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz
out=build/fuzz
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(adapter_config_fuzz chat_template_fuzz config_fuzz gguf_fuzz jsonl_fuzz
                                     safetensors_fuzz tokenizer_encode_fuzz tokenizer_json_fuzz toml_config_fuzz)
fx=tests/fixtures
seeds() {  # the seed files of a target
  case $1 in
    adapter_config_fuzz) echo $fx/models/*/adapter/adapter_config.json $fx/models/*/train_adapter/adapter_config.json ;;
    chat_template_fuzz) echo $fx/models/*/tokenizer_config.json .cache/tokenizers/*/tokenizer_config.json ;;
    config_fuzz) echo $fx/models/*/config.json ;;
    gguf_fuzz) echo ;;
    jsonl_fuzz) echo assets/demo/*.jsonl ;;
    safetensors_fuzz) echo $fx/models/*/expected_train.safetensors $fx/models/llama_tiny/model.safetensors ;;
    tokenizer_encode_fuzz) echo $fx/tokenizer_strings.json $fx/jinja_snippets.txt ;;
    tokenizer_json_fuzz) echo $fx/models/*/tokenizer.json ;;
    toml_config_fuzz) echo ;;
  esac
}
failed=0
printf '%-24s %12s %10s %s\n' target executions exec/s result
for t in "${targets[@]}"; do
  corpus=$out/corpus/$t crashes=$out/crashes/$t
  mkdir -p "$corpus" "$crashes"
  for f in $(seeds $t); do [ -f "$f" ] && cp "$f" "$corpus/seed-$(basename "$(dirname "$f")")-$(basename "$f")"; done
  log=$out/$t.log
  rc=0
  # -rss_limit_mb: the real tokenizer and ASan's shadow need more than libFuzzer's default 2 GB.
  "$out/tests/fuzz/$t" -max_total_time="$seconds" -rss_limit_mb=4096 -max_len=65536 -timeout=30 \
      -artifact_prefix="$crashes/" -print_final_stats=1 "$corpus" >"$log" 2>&1 || rc=$?
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
  per_s=$(( seconds > 0 ? ${runs:-0} / seconds : 0 ))
  if [ $rc -ne 0 ]; then
    failed=1
    printf '%-24s %12s %10s %s\n' "$t" "${runs:-?}" "$per_s" "CRASH (rc $rc): $log, inputs in $crashes"
    grep -m3 -E 'ERROR|SUMMARY|terminate|uncaught' "$log" | sed 's/^/    /'
  else
    printf '%-24s %12s %10s %s\n' "$t" "$runs" "$per_s" ok
  fi
done
exit $failed
