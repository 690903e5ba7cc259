#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine, builds lorastudio (Release) and runs the main job.
# Until the GUI and training land, the main job prints the version and the Vulkan device report.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
ls_install_deps
cmake --preset release >/dev/null
cmake --build --preset release
./build/release/app/lorastudio --version --devices "$@"
