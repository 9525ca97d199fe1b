#!/bin/bash
# usage: run.sh ROUNDS NP
revs="ae00aa3 b894923 02144ca dcd10ae 39c6cc4 4f0ea47 HEAD"
for r in $(seq 1 $1); do
  for rev in $revs; do
    echo "# load $(cut -d' ' -f1 /proc/loadavg)"
    timeout 60 $rev/ftmpirun -n $2 $rev/ftmpi-bench -bench coll -runs 3 -max 8 2>/dev/null | sed "s/^/$rev /"
  done
done
