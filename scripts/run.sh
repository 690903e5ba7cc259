#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine, builds lorastudio (Release) and runs the main job.
# Until the GUI and training land, the main job prints the version and the Vulkan device report, then
# generates a reply with the tiny golden Qwen2 model of the tests (random weights: the text is noise,
# identical to what transformers generates from it).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
ls_install_deps
cmake --preset release >/dev/null
cmake --build --preset release
./build/release/app/lorastudio --version --devices "$@"
echo "--- lorastudio generate on tests/fixtures/models/qwen2_tiny (greedy, 20 tokens):"
./build/release/app/lorastudio generate --model tests/fixtures/models/qwen2_tiny \
  --prompt "Write a function that reverses a list." --max-tokens 20 --ignore-eos "$@"
