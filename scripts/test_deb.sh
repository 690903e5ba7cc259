#!/usr/bin/env bash
# The .deb end to end, as a user gets it: builds the package (release preset, only what it holds, then
# cpack), checks its files and control fields with dpkg-deb (the exact file list; Depends has the libraries
# and runtime needs, no build-only package), then installs it with `apt install ./lorastudio_*.deb` into a
# clean Debian 12 root made by `debootstrap --variant=minbase bookworm` and runs `lorastudio --version`,
# `--devices` and `--demo --steps 5` there on lavapipe (the demo's intro, both models' answers, the run
# store and the adapter checked).
# The debootstrapped root is cached as .cache/deb-test/bookworm-minbase.tar and the .debs apt downloads in
# .cache/deb-test/archives/ (the root is made again when a month old), so a second run costs the build, an
# unpack and the install; every run starts from a fresh copy of the root, in a tmpfs. Needs root
# (debootstrap, chroot, mount) and Debian's mirror (LS_DEBIAN_MIRROR, default http://deb.debian.org/debian).
# LS_KEEP_ROOT=1 keeps the root for a look.
# Run by .ci/run after scripts/test.sh, not by ctest (minutes cold). Prints each step's time; the first
# failing step stops it with a line naming the step.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then
  echo "test_deb.sh: needs root (debootstrap, chroot and mount); run it with sudo" >&2
  exit 1
fi

mirror=${LS_DEBIAN_MIRROR:-http://deb.debian.org/debian}
cache=$PWD/.cache/deb-test
root_tar=$cache/bookworm-minbase.tar
work=$PWD/build/deb-test
root=$work/root
build=build/release
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
unmount_under() {  # every mount below $1, deepest first
  awk -v d="$1/" 'index($2 "/", d) == 1 { print $2 }' /proc/mounts | sort -r | while read -r m; do
    umount "$m" 2>/dev/null || umount -l "$m"
  done
}
cleanup() {
  local rc=$?
  if [ "${LS_KEEP_ROOT:-0}" = 1 ]; then
    echo "test_deb.sh: the root is kept in $root (a tmpfs; \`umount -R $root\` when done)"
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
in_root() { chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"; }

step "the test's packages (scripts/deps.sh)"
source scripts/deps.sh
ls_install_deps "${LS_DEB_TEST_PACKAGES[@]}"

step "build the package (release preset: lorastudio, icon, man page; cpack)"
cmake --preset release >/dev/null
cmake --build --preset release --target package_files
rm -f "$build"/lorastudio_*.deb
(cd "$build" && cpack -G DEB >/dev/null)
debs=("$build"/lorastudio_*.deb)
[ ${#debs[@]} -eq 1 ] && [ -f "${debs[0]}" ] || fail "cpack wrote no lorastudio_*.deb in $build"
deb=${debs[0]}
version=$(sed -n 's/^project(lorastudio VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
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

step "a clean Debian 12 root (debootstrap --variant=minbase bookworm; cached in $root_tar)"
unmount_under "$work"
rm -rf --one-file-system "$root" && mkdir -p "$root" "$cache/archives"
# The root lives in memory (about 600 MB once installed): unpacking is quicker, and cleaning up is an umount.
mount -t tmpfs -o size=4g,mode=0755 tmpfs "$root"
# A month-old root is made again, so that the test keeps starting from a current Debian 12.
[ -f "$root_tar" ] && [ -n "$(find "$root_tar" -mtime +30)" ] && rm -f "$root_tar"
if [ ! -f "$root_tar" ]; then
  echo "debootstrap --variant=minbase bookworm from $mirror (once; the next runs unpack $root_tar)"
  debootstrap --variant=minbase bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1 ||
    { tail -20 "$work/debootstrap.log"; fail "debootstrap (log above)"; }
  # As an installed Debian 12 has them: point releases and security updates.
  security=${mirror%/debian}/debian-security
  [ "$security" = "$mirror/debian-security" ] && security=http://deb.debian.org/debian-security
  printf '%s\n' "deb $mirror bookworm main" "deb $mirror bookworm-updates main" \
    "deb $security bookworm-security main" >"$root/etc/apt/sources.list"
  mount -t proc proc "$root/proc"
  in_root apt-get update -q || fail "apt-get update in the new root"
  umount "$root/proc"
  rm -f "$root"/var/cache/apt/archives/*.deb
  tar -C "$root" -cf "$root_tar.tmp" . && mv "$root_tar.tmp" "$root_tar"
else
  tar -C "$root" -xf "$root_tar"
fi
du -sh "$root" | cut -f1

step "apt install ./$(basename "$deb") in the root"
cp /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc"
mount -t sysfs -o ro sysfs "$root/sys"
mount -t devpts -o newinstance,ptmxmode=0666 devpts "$root/dev/pts"  # a private one: apt's log wants a pty
mount --bind "$cache/archives" "$root/var/cache/apt/archives"
cp "$deb" "$root/tmp/"
in_root apt-get update -q || fail "apt-get update in the root"
# `apt install` as the README says; the options only keep the downloaded .debs for the next run, skip
# dpkg's fsyncs (a throw-away root) and silence apt's warning about scripts.
in_root sh -c "cd /tmp && DEBIAN_FRONTEND=noninteractive apt install -y -q ./$(basename "$deb") \
  -o APT::Keep-Downloaded-Packages=true -o Dpkg::Options::=--force-unsafe-io -o Apt::Cmd::Disable-Script-Warning=1" ||
  fail "apt install ./$(basename "$deb")"
in_root apt-get autoclean -q >/dev/null  # the archive cache keeps only what can still be installed
installed() { [ "$(in_root dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]; }
installed lorastudio || fail "lorastudio is not installed"
installed mesa-vulkan-drivers || fail "mesa-vulkan-drivers did not come in with the package"
installed fonts-dejavu-core && echo "note: fonts-dejavu-core came in with another package (lorastudio does not need it)"
[ -x "$root/usr/bin/lorastudio" ] || fail "/usr/bin/lorastudio is missing after the install"
# What a menu needs: the entry where menus look, its Exec on the PATH, its icon in the hicolor theme.
exec_line=$(sed -n 's/^Exec=//p' "$root/usr/share/applications/lorastudio.desktop")
in_root sh -c "command -v ${exec_line%% *}" >/dev/null || fail "the desktop entry's Exec=$exec_line is not on the PATH"
[ -f "$root/usr/share/icons/hicolor/48x48/apps/lorastudio.png" ] || fail "no hicolor icon after the install"
echo "installed: $(in_root dpkg-query -W -f='${binary:Package} ${Version}\n' lorastudio);" \
  "$(in_root dpkg-query -W -f='${db:Status-Abbrev}\n' | grep -c '^ii') packages in the root"

step "lorastudio --version in the root"
out=$(in_root lorastudio --version) || fail "lorastudio --version exited $?"
echo "$out"
re="^lorastudio ${version//./\\.} \\(commit ([0-9a-f]{7,}(-dirty)?|unknown), Release build\\)$"
[[ "$out" =~ $re ]] || fail "--version printed \"$out\""
[ "$out" = "$("$build/app/lorastudio" --version)" ] || fail "--version differs from the build's"

step "lorastudio --devices in the root (lavapipe)"
out=$(in_root lorastudio --devices) || fail "lorastudio --devices exited $?"
echo "$out"
grep -qi 'llvmpipe' <<<"$out" || fail "--devices lists no lavapipe (llvmpipe) device"

step "lorastudio --demo --steps 5 in the root (lavapipe)"
out=$(in_root timeout 900 lorastudio --demo --steps 5) || fail "lorastudio --demo --steps 5 exited $?"
echo "$out"
grep -q "tiny and untrained" <<<"$out" || fail "--demo did not say that its model is tiny and untrained"
[ "$(grep -c '^  with adapter: ' <<<"$out")" -eq 3 ] || fail "--demo did not print the adapter's 3 answers"
[ "$(grep -c '^  base model: ' <<<"$out")" -eq 3 ] || fail "--demo did not print the base model's 3 answers"
[ -f "$root/root/.local/share/lorastudio/runs.sqlite" ] || fail "--demo wrote no run store in ~/.local/share"
ls "$root"/root/.local/share/lorastudio/runs/demo-*/adapter/adapter_model.safetensors >/dev/null 2>&1 ||
  fail "--demo wrote no adapter under ~/.local/share/lorastudio/runs"

step "clean up"
