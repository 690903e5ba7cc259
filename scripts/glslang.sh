#!/usr/bin/env bash
# Builds, once, a glslang that compiles GL_NV_cooperative_matrix2 and GL_KHR_cooperative_matrix (>= 14;
# Debian 12's glslang-tools is 12.0), for the tensor-core kernels that need it (shaders/*.kernels.cmake
# rows made with ls_kernel_cm2). Source: Debian 13's glslang source package, fetched with apt-get through
# a private apt configuration (never the system's sources), checked by apt against Debian's signed
# release files. Built with the machine's cmake and g++ (about 2 minutes on 2 cores) into
#   ${XDG_CACHE_HOME:-$HOME/.cache}/lorastudio/glslang-15/bin/glslang
# where CMake finds it (LS_GLSLANG_CM2). A second run costs nothing. Called by scripts/run.sh and
# scripts/test.sh; without it the build still works and those kernels are left out (a CMake warning says
# so, and devices use the other tensor-core path).
# LS_DEBIAN_MIRROR overrides the mirror (default http://deb.debian.org/debian).
set -euo pipefail
cache="${XDG_CACHE_HOME:-$HOME/.cache}/lorastudio"
dest="$cache/glslang-15"
if [ -x "$dest/bin/glslang" ] && "$dest/bin/glslang" --version 2>/dev/null | grep -q "Glslang Version: 11:1[4-9]"; then
  exit 0
fi
mirror="${LS_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
work=$(mktemp -d "${TMPDIR:-/tmp}/ls-glslang.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/apt/lists/partial" "$work/apt/cache/archives/partial" "$work/src"
echo "deb-src $mirror trixie main" > "$work/apt/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$work/apt/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
          -o "Dir::State::Lists=$work/apt/lists" -o "Dir::Cache=$work/apt/cache" -o "APT::Sandbox::User=root")
echo "scripts/glslang.sh: fetching Debian 13's glslang source (once; into $dest)"
apt-get -q "${apt_opts[@]}" update >/dev/null
(cd "$work/src" && apt-get -q "${apt_opts[@]}" source --download-only glslang >/dev/null)
orig=$(ls "$work"/src/glslang_*.orig.tar.* | head -1)
tar xf "$orig" -C "$work/src"
srcdir=$(find "$work/src" -mindepth 1 -maxdepth 1 -type d -name 'glslang*' | head -1)
cmake -S "$srcdir" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DENABLE_OPT=OFF -DGLSLANG_TESTS=OFF \
      -DBUILD_SHARED_LIBS=OFF -DENABLE_HLSL=OFF -DCMAKE_INSTALL_PREFIX="$work/install" >/dev/null
cmake --build "$work/build" --target glslang-standalone
"$work/build/StandAlone/glslang" --version | grep -q "Glslang Version: 11:1[4-9]" ||
  { echo "scripts/glslang.sh: the fetched glslang is not version 14 to 19" >&2; exit 1; }
mkdir -p "$dest/bin"
cp "$work/build/StandAlone/glslang" "$dest/bin/glslang.tmp"
mv "$dest/bin/glslang.tmp" "$dest/bin/glslang"
echo "scripts/glslang.sh: $("$dest/bin/glslang" --version | head -1) in $dest/bin"
