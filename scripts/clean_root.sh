# Sourced by scripts/test_deb.sh: clean Debian 12 roots (debootstrap --variant=minbase bookworm), each a
# fresh copy of one cached root, in a tmpfs, and commands run inside them with nothing of this machine's
# environment. Needs root (debootstrap, chroot, mount) and Debian's mirror (LS_DEBIAN_MIRROR, default
# http://deb.debian.org/debian).
# The debootstrapped root is cached as .cache/deb-test/bookworm-minbase.tar (made again when a month old)
# and the .debs apt downloads in .cache/deb-test/archives/, shared by every root.

ls_mirror=${LS_DEBIAN_MIRROR:-http://deb.debian.org/debian}
ls_root_cache=$PWD/.cache/deb-test
ls_root_tar=$ls_root_cache/bookworm-minbase.tar

# Every mount below $1, deepest first.
unmount_under() {
  awk -v d="$1/" 'index($2 "/", d) == 1 { print $2 }' /proc/mounts | sort -r | while read -r m; do
    umount "$m" 2>/dev/null || umount -l "$m"
  done
}

# make_clean_root DIR SIZE: a fresh Debian 12 minbase root in a new tmpfs of SIZE at DIR, with /proc, /sys,
# a private /dev/pts, the host's resolv.conf and the shared apt archive cache mounted, ready for in_root.
make_clean_root() {
  local root=$1 size=$2
  unmount_under "$root"
  rm -rf --one-file-system "$root" && mkdir -p "$root" "$ls_root_cache/archives"
  # In memory: unpacking is quicker, and cleaning up is an umount.
  mount -t tmpfs -o "size=$size,mode=0755" tmpfs "$root"
  # A month-old root is made again, so that the tests keep starting from a current Debian 12.
  [ -f "$ls_root_tar" ] && [ -n "$(find "$ls_root_tar" -mtime +30)" ] && rm -f "$ls_root_tar"
  if [ ! -f "$ls_root_tar" ]; then
    echo "debootstrap --variant=minbase bookworm from $ls_mirror (once; the next roots unpack $ls_root_tar)"
    debootstrap --variant=minbase bookworm "$root" "$ls_mirror" >"$root.debootstrap.log" 2>&1 ||
      { tail -20 "$root.debootstrap.log"; echo "debootstrap failed (log above)" >&2; return 1; }
    # As an installed Debian 12 has them: point releases and security updates.
    local security=${ls_mirror%/debian}/debian-security
    [ "$security" = "$ls_mirror/debian-security" ] && security=http://deb.debian.org/debian-security
    printf '%s\n' "deb $ls_mirror bookworm main" "deb $ls_mirror bookworm-updates main" \
      "deb $security bookworm-security main" >"$root/etc/apt/sources.list"
    rm -f "$root"/var/cache/apt/archives/*.deb
    tar -C "$root" -cf "$ls_root_tar.tmp" . && mv "$ls_root_tar.tmp" "$ls_root_tar"
  else
    tar -C "$root" -xf "$ls_root_tar"
  fi
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  mount -t proc proc "$root/proc"
  mount -t sysfs -o ro sysfs "$root/sys"
  mount -t devpts -o newinstance,ptmxmode=0666 devpts "$root/dev/pts"  # a private one: apt's log wants a pty
  mount --bind "$ls_root_cache/archives" "$root/var/cache/apt/archives"
  du -shx "$root" | cut -f1
}

# in_root DIR COMMAND...: COMMAND as root in DIR, with a minimal environment (no DISPLAY, no proxies, no
# compiler or package manager settings of this machine).
in_root() {
  local root=$1
  shift
  chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"
}

# copy_checkout DEST: the checkout as a fresh clone of it has it (tracked files as they are in the work
# tree, untracked files that git does not ignore, and .git so the build can name its commit); nothing
# ignored, so no build folder and no cache.
copy_checkout() {
  local dest=$1
  mkdir -p "$dest"
  git ls-files -z --cached --others --exclude-standard |
    tar --null --files-from=- --ignore-failed-read -cf - 2>/dev/null | tar -C "$dest" -xf -
  cp -a .git "$dest/"
}
