#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine, builds lorastudio (Release) and runs the main job.
# With a display (DISPLAY or WAYLAND_DISPLAY) the main job is the desktop app: drop
# tests/fixtures/models/qwen2_tiny on its window (or File > Open model folder), open
# assets/demo/tiny_chat.jsonl, Start training, then chat with the adapter.
# Without one it prints the version and the Vulkan device report, then trains a LoRA adapter headless on
# the tiny golden Qwen2 model of the tests (random weights) with two chat examples, and asks the adapted
# model one of the training questions: it has memorised the answer.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
ls_install_deps
cmake --preset release >/dev/null
cmake --build --preset release
if [ -n "${DISPLAY:-}" ] || [ -n "${WAYLAND_DISPLAY:-}" ]; then
  echo "--- lorastudio: the desktop app (drop tests/fixtures/models/qwen2_tiny on the window, open assets/demo/tiny_chat.jsonl)"
  exec ./build/release/app/lorastudio "$@"
fi
echo "--- no display (DISPLAY and WAYLAND_DISPLAY are unset): running the headless demo instead of the desktop app"
./build/release/app/lorastudio --version --devices "$@"
echo "--- lorastudio --batch: 25 steps on tests/fixtures/models/qwen2_tiny with assets/demo/tiny_chat.jsonl"
./build/release/app/lorastudio --batch --model tests/fixtures/models/qwen2_tiny --data assets/demo/tiny_chat.jsonl \
  --out build/demo-run --steps 25 --lr 1e-2 --batch-size 2 --rank 4 --targets q_proj,v_proj,o_proj,up_proj,down_proj \
  --store build/demo-run/runs.sqlite "$@"
echo "--- lorastudio generate --adapter build/demo-run/adapter --prompt \"What is the capital of France?\""
./build/release/app/lorastudio generate --model tests/fixtures/models/qwen2_tiny --adapter build/demo-run/adapter \
  --prompt "What is the capital of France?" --max-tokens 10 "$@"
