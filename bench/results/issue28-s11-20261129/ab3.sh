#!/usr/bin/env bash
# Interleaved launches of three builds (old: 791057d, new: 4a9c962, new2: + publish stores the call's words on change),
# np 2 Barrier and Allreduce 8 B; ROUNDS rounds, the order rotating; load before each launch.
B=/tmp/h63/bin
ROUNDS=${ROUNDS:-15}
load() { cut -d' ' -f1 /proc/loadavg; }
one() { # build np args...
  local b=$1 np=$2; shift 2
  echo "# $b np $np load $(load) $(date -u +%H:%M:%S)"
  timeout 120 $B/$b/ftmpirun -n $np --transport shm $B/$b/ftmpi-bench "$@" 2>/dev/null | sed -n "s/^{/$b {/p" || echo "# $b FAILED"
}
for r in $(seq 1 $ROUNDS); do
  case $((r % 3)) in 0) order="old new new2";; 1) order="new new2 old";; 2) order="new2 old new";; esac
  for b in $order; do
    one $b 2 -bench coll -ops barrier,allreduce -min 8 -max 8 -runs 5
  done
done
