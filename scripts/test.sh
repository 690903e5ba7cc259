#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine, builds the test preset and runs every test with ctest.
# Tests run on the default Vulkan device (lavapipe on a machine without a GPU; LORASTUDIO_DEVICE
# picks another) with the Khronos validation layer on: any validation message fails a test.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
ls_install_deps "${LS_TEST_PACKAGES[@]+"${LS_TEST_PACKAGES[@]}"}"
scripts/fetch_tokenizers.sh
scripts/fetch_llamacpp.sh  # llama.cpp's CPU build, which reads our GGUF files in gguf_llamacpp_test
scripts/glslang.sh  # the cooperative-matrix-2 kernels compile in every test build (they run only on GPUs that have them)
cmake --preset test >/dev/null
cmake --build --preset test
ctest --preset test -j "$(nproc)" "$@"
