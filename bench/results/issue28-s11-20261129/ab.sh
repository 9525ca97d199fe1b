#!/usr/bin/env bash
# Interleaved old/new launches: ROUNDS rounds, order alternating, load before each launch.
B=/tmp/h63/bin
ROUNDS=${ROUNDS:-8}
load() { cut -d' ' -f1 /proc/loadavg; }
one() { # build np args...
  local b=$1 np=$2; shift 2
  echo "# $b np $np load $(load) $(date -u +%H:%M:%S)"
  timeout 120 $B/$b/ftmpirun -n $np --transport shm $B/$b/ftmpi-bench "$@" 2>/dev/null | sed -n "s/^{/$b {/p" || echo "# $b FAILED"
}
for r in $(seq 1 $ROUNDS); do
  if (( r % 2 )); then order="old new"; else order="new old"; fi
  for b in $order; do
    one $b 2 -bench coll -ops barrier,allreduce -min 8 -max 8 -runs 5
    one $b 8 -bench coll -ops allreduce -min 1048576 -max 1048576 -runs 3
    one $b 16 -bench coll -ops allreduce -min 1048576 -max 1048576 -runs 3
  done
done
