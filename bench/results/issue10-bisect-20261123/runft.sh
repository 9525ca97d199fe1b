#!/bin/bash
revs="ae00aa3 dcd10ae 39c6cc4 HEAD"
for r in $(seq 1 $1); do
  for rev in $revs; do
    echo "# load $(cut -d' ' -f1 /proc/loadavg)"
    timeout 120 $rev/ftmpirun -n $2 $rev/ftmpi-bench -bench ft -runs 3 -iters 200 2>/dev/null | sed "s/^/$rev /"
  done
done
