#!/usr/bin/env bash
# Creates (once) a Debian 13 "trixie" chroot with Open MPI 5 (ULFM built in)
# and gcc, and mounts what Open MPI needs inside it. Idempotent: a finished
# chroot is reused, mounts already in place are left alone.
#
#   bench/ompi5/setup.sh            # create if needed, then mount
#   bench/ompi5/setup.sh --mount    # only mount (fails if the chroot is missing)
#   bench/ompi5/teardown.sh         # unmount everything below the chroot
#
# Settings (environment):
#   OMPI5_ROOT    chroot directory (default /var/cache/ftmpi/trixie)
#   OMPI5_MIRROR  Debian mirror (default: the first deb.debian.org-style URI
#                 of this machine's /etc/apt/sources.list*, else
#                 http://deb.debian.org/debian)
#
# Needs root, debootstrap (installed with apt-get if missing) and about
# 1.4 GB. Never used by CI. Prints "ompi5: ..." errors and exits non-zero.
set -euo pipefail
ROOT=${OMPI5_ROOT:-/var/cache/ftmpi/trixie}
PKGS="openmpi-bin libopenmpi-dev gcc libc6-dev"
STAMP=$ROOT/.ftmpi-ompi5-ready

die() { echo "ompi5: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "must run as root (debootstrap, chroot and mount need it)"

mirror() {
  if [ -n "${OMPI5_MIRROR:-}" ]; then echo "$OMPI5_MIRROR"; return; fi
  local f u
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list; do
    [ -r "$f" ] || continue
    # deb822 "URIs: http://host/debian" or one-line "deb http://host/debian suite ...";
    # only a plain Debian archive (path ending in /debian) serves trixie.
    u=$(grep -hoE '^(URIs:[[:space:]]*|deb[[:space:]]+(\[[^]]*\][[:space:]]+)?)https?://[^[:space:]]+/debian/?([[:space:]]|$)' "$f" 2>/dev/null |
      grep -oE 'https?://[^[:space:]]+' | head -1) || true
    if [ -n "$u" ]; then echo "${u%/}"; return; fi
  done
  echo http://deb.debian.org/debian
}

# mount_one SRC DST [bind|proc|sysfs]
mount_one() {
  local src=$1 dst=$ROOT$2 kind=$3
  mkdir -p "$dst"
  if mountpoint -q "$dst"; then return; fi
  case $kind in
    proc) mount -t proc proc "$dst" ;;
    sysfs) mount -t sysfs sysfs "$dst" ;;
    bind) mount --bind "$src" "$dst" ;;
  esac || die "cannot mount $src on $dst"
  # Keep mounts made below the chroot from propagating back to the host
  # (matters where / is a shared mount, as under systemd).
  mount --make-private "$dst" 2>/dev/null || true
}

do_mounts() {
  [ -x "$ROOT/bin/sh" ] || die "no chroot at $ROOT (run bench/ompi5/setup.sh without --mount)"
  mount_one proc /proc proc
  mount_one sysfs /sys sysfs
  mount_one /dev /dev bind
  mount_one /dev/pts /dev/pts bind
  mount_one /dev/shm /dev/shm bind
  # Name resolution for apt inside (harmless afterwards).
  cp -f /etc/resolv.conf "$ROOT/etc/resolv.conf" 2>/dev/null || true
}

if [ "${1:-}" = "--mount" ]; then
  do_mounts
  exit 0
fi

if [ -f "$STAMP" ]; then
  do_mounts
  chroot "$ROOT" sh -c 'command -v mpirun && command -v mpicc' >/dev/null ||
    die "$ROOT is marked ready but mpirun/mpicc are missing; remove $STAMP and re-run"
  echo "ompi5: ready: $ROOT ($(chroot "$ROOT" mpirun --version 2>/dev/null | head -1))" >&2
  exit 0
fi

if ! command -v debootstrap >/dev/null; then
  echo "ompi5: installing debootstrap with apt-get" >&2
  apt-get install -y debootstrap >&2 || die "apt-get install debootstrap failed"
fi
[ -e /usr/share/debootstrap/scripts/trixie ] || die "this debootstrap does not know trixie (/usr/share/debootstrap/scripts/trixie missing)"

M=$(mirror)
mkdir -p "$ROOT"
if [ ! -x "$ROOT/bin/sh" ] || [ ! -f "$ROOT/var/lib/dpkg/status" ] || ! grep -q '^Package: apt$' "$ROOT/var/lib/dpkg/status"; then
  # A half-made chroot from an interrupted run: start again, after making
  # sure nothing is still mounted inside it.
  if [ -e "$ROOT/debootstrap" ]; then
    "$(dirname "$0")/teardown.sh" || die "cannot unmount the partial chroot at $ROOT"
    echo "ompi5: removing the partial chroot at $ROOT" >&2
    rm -rf --one-file-system "$ROOT"
    mkdir -p "$ROOT"
  fi
  echo "ompi5: debootstrap --variant=minbase trixie $ROOT $M (a few minutes)" >&2
  debootstrap --variant=minbase trixie "$ROOT" "$M" >&2 ||
    die "debootstrap trixie from $M failed (see $ROOT/debootstrap/debootstrap.log if present)"
fi
do_mounts
echo "ompi5: apt-get install $PKGS inside the chroot" >&2
chroot "$ROOT" env DEBIAN_FRONTEND=noninteractive LC_ALL=C apt-get update >&2 ||
  die "apt-get update inside $ROOT failed"
chroot "$ROOT" env DEBIAN_FRONTEND=noninteractive LC_ALL=C apt-get install -y --no-install-recommends $PKGS >&2 ||
  die "apt-get install $PKGS inside $ROOT failed"
chroot "$ROOT" env DEBIAN_FRONTEND=noninteractive apt-get clean >&2 || true
chroot "$ROOT" sh -c 'command -v mpirun && command -v mpicc' >/dev/null ||
  die "mpirun/mpicc missing in $ROOT after the install"
chroot "$ROOT" sh -c 'test -e "$(dirname "$(readlink -f "$(command -v mpicc)")")"' || true
touch "$STAMP"
echo "ompi5: ready: $ROOT ($(chroot "$ROOT" mpirun --version 2>/dev/null | head -1))" >&2
