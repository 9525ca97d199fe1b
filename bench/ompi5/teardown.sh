#!/usr/bin/env bash
# Unmounts everything mounted below the Open MPI 5 chroot (the reverse of
# bench/ompi5/setup.sh's mounts, deepest first). The chroot itself stays.
#   OMPI5_ROOT  chroot directory (default /var/cache/ftmpi/trixie)
set -uo pipefail
ROOT=${OMPI5_ROOT:-/var/cache/ftmpi/trixie}
ROOT=$(readlink -f "$ROOT" 2>/dev/null || echo "$ROOT")
[ "$(id -u)" = 0 ] || { echo "ompi5: teardown must run as root" >&2; exit 1; }
rc=0
# Deepest mount points first (so /dev/pts and /dev/shm go before /dev).
for m in $(awk -v r="$ROOT" '$2 == r || index($2, r "/") == 1 { print $2 }' /proc/self/mounts | sort -r); do
  if ! umount "$m" 2>/dev/null; then
    # Something (a stray rank) still holds it: detach lazily rather than leak it.
    umount -l "$m" 2>/dev/null || { echo "ompi5: cannot unmount $m" >&2; rc=1; }
  fi
done
exit $rc
