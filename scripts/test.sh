#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine, builds the Release preset (the build scripts/run.sh makes: app, benchmark
# and tests; one build serves both commands) and runs every test with ctest's test preset.
# Tests run on the default Vulkan device (lavapipe on a machine without a GPU; LORASTUDIO_DEVICE
# picks another) with the Khronos validation layer on: any validation message fails a test.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
ls_install_deps "${LS_TEST_PACKAGES[@]+"${LS_TEST_PACKAGES[@]}"}"
scripts/fetch_tokenizers.sh
scripts/fetch_llamacpp.sh  # llama.cpp's CPU build, which reads our GGUF files in gguf_llamacpp_test
scripts/glslang.sh  # the cooperative-matrix-2 kernels compile in every test build (they run only on GPUs that have them)
cmake --preset release >/dev/null
cmake --build --preset release
ctest --preset test -j "$(nproc)" "$@"
