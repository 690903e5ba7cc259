# Sourced by scripts/fuzz.sh and scripts/test_asan.sh: the libFuzzer targets of tests/fuzz (built by the asan
# preset), their seed corpora (the test fixtures) and how a run of them goes.
LS_FUZZ_TARGETS=(adapter_config_fuzz chat_template_fuzz config_fuzz gguf_fuzz jsonl_fuzz safetensors_fuzz
                 tokenizer_encode_fuzz tokenizer_json_fuzz toml_config_fuzz)

# The seed files of a target (from the repository root; the tokenizers come from scripts/fetch_tokenizers.sh).
ls_fuzz_seeds() {
  local fx=tests/fixtures
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

# ls_fuzz_run BUILD_DIR SECONDS RUNS TARGET...
# Runs each target of BUILD_DIR/tests/fuzz, one after another, until SECONDS have passed (0: no limit) or it
# has made RUNS executions (-1: no limit), from the corpus BUILD_DIR/fuzz/corpus/TARGET: the target's seeds
# copied in, and what earlier runs added. Prints each target's executions, seconds and result. A target fails
# on a crash, a sanitizer report, a hang or an exception other than ls::Error; then this prints its log's
# report (the log is BUILD_DIR/fuzz/TARGET.log) and the input that did it is kept in
# BUILD_DIR/fuzz/crashes/TARGET/ (add it to the parser's regression test in tests/). Returns 1 if any failed.
ls_fuzz_run() {
  local dir=$1 seconds=$2 runs=$3
  shift 3
  local failed=0 t f corpus crashes log rc start took execs
  printf '%-24s %12s %8s %8s %s\n' target executions seconds exec/s result
  for t in "$@"; do
    corpus=$dir/fuzz/corpus/$t crashes=$dir/fuzz/crashes/$t log=$dir/fuzz/$t.log
    mkdir -p "$corpus" "$crashes"
    for f in $(ls_fuzz_seeds "$t"); do
      if [ -f "$f" ]; then cp "$f" "$corpus/seed-$(basename "$(dirname "$f")")-$(basename "$f")"; fi
    done
    start=$(date +%s)
    rc=0
    # -rss_limit_mb: the real tokenizer and ASan's shadow need more than libFuzzer's default 2 GB.
    "$dir/tests/fuzz/$t" -max_total_time="$seconds" -runs="$runs" -rss_limit_mb=4096 -max_len=65536 -timeout=30 \
        -artifact_prefix="$crashes/" -print_final_stats=1 "$corpus" >"$log" 2>&1 || rc=$?
    took=$(( $(date +%s) - start ))
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)
    if [ $rc -eq 0 ]; then
      printf '%-24s %12s %8s %8s %s\n' "$t" "${execs:-0}" "$took" "$(( ${execs:-0} / (took > 0 ? took : 1) ))" ok
    else
      failed=1
      printf '%-24s %12s %8s %8s %s\n' "$t" "${execs:-?}" "$took" - "FAILED (exit $rc), log $log"
      # The report: from the sanitizer's or libFuzzer's first line to the file the input was written to and
      # the input in base64 (for a small one), less libFuzzer's closing statistics.
      sed -n '/ERROR\|terminate called\|deadly signal/,$p' "$log" | grep -v '^stat::' | head -60 | sed 's/^/    /'
      echo "    the input is kept in $crashes/ (add it to the parser's regression test in tests/)"
    fi
  done
  return $failed
}
