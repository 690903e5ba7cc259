#!/usr/bin/env bash
# Fetches llama.cpp for the GGUF checker test (tests/model/gguf_llamacpp_test.cpp), from npm:
#   @node-llama-cpp/linux-x64@3.22.1  llama.cpp "v0.5.0" prebuilt for the CPU (libllama, libggml*, a CPU
#                                     backend per x86 level, loaded at run time)
#   node-llama-cpp@3.22.1             its source as a git bundle (package/llama/gitRelease.bundle), of which
#                                     we keep the headers: include/llama.h and ggml/include/
# into .cache/llamacpp/{lib,include} (git-ignored), and builds llama.cpp's llama-completion from that source
# into lib/, beside the CPU backends it loads (the docs test runs the documented llama-completion command
# with it). Both packages' sha256 are pinned below; a second run does nothing when .cache/llamacpp/READY
# names the same pins and build.
set -euo pipefail
cd "$(dirname "$0")/.."

version=3.22.1
dest=.cache/llamacpp
declare -A sha256=(
  [node-llama-cpp-linux-x64-$version.tgz]=0d953e1503d5ab4608d8ed5b739132308c81ac05ffeb760d2a7f30e08a9f90e0
  [node-llama-cpp-$version.tgz]=a0d9dd80eacd2ab1cfe71aee57ac8a806487fd70b3d2a38fbec637752d9e5c5f
)
stamp="${sha256[node-llama-cpp-linux-x64-$version.tgz]} ${sha256[node-llama-cpp-$version.tgz]} llama-completion"
if [ -f "$dest/READY" ] && [ "$(cat "$dest/READY")" = "$stamp" ]; then
  echo "llama.cpp in $dest (sha256 verified)"
  exit 0
fi
for tool in npm git g++; do
  if ! command -v $tool >/dev/null; then
    echo "fetch_llamacpp.sh: $tool is missing (apt-get install npm git g++, or run scripts/test.sh which installs them)" >&2
    exit 1
  fi
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "fetching @node-llama-cpp/linux-x64@$version and node-llama-cpp@$version"
(cd "$tmp" && npm pack --silent "@node-llama-cpp/linux-x64@$version" "node-llama-cpp@$version" >/dev/null)
for f in "${!sha256[@]}"; do
  got=$(sha256sum "$tmp/$f" | cut -d' ' -f1)
  if [ "$got" != "${sha256[$f]}" ]; then
    echo "fetch_llamacpp.sh: $f has sha256 $got, expected ${sha256[$f]}" >&2
    exit 1
  fi
done
mkdir -p "$tmp/bin" "$tmp/nlc"
tar -xzf "$tmp/node-llama-cpp-linux-x64-$version.tgz" -C "$tmp/bin" package/bins/linux-x64
tar -xzf "$tmp/node-llama-cpp-$version.tgz" -C "$tmp/nlc" package/llama/gitRelease.bundle
git -c advice.detachedHead=false clone -q "$tmp/nlc/package/llama/gitRelease.bundle" "$tmp/src"

rm -rf "$dest"
mkdir -p "$dest/lib" "$dest/include"
cp "$tmp"/bin/package/bins/linux-x64/*.so "$dest/lib/"
cp "$tmp/src/include/llama.h" "$tmp"/src/ggml/include/*.h "$dest/include/"
cp "$tmp/src/LICENSE" "$dest/LICENSE"
echo "building llama-completion"
lib=$(pwd)/$dest/lib
(cd "$tmp/src" && g++ -O1 -DNDEBUG -std=c++17 -I include -I ggml/include -I common -I vendor \
  tools/completion/completion.cpp tools/completion/main.cpp -o "$lib/llama-completion" \
  -L "$lib" -l:libllama-common.so -l:libllama.v0.5.0.so -l:libggml.v0.5.0.so -l:libggml-base.so \
  '-Wl,-rpath,$ORIGIN' -lpthread)
echo "$stamp" > "$dest/READY"
echo "llama.cpp in $dest (sha256 verified)"
