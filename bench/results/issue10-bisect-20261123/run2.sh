#!/bin/bash
for r in $(seq 1 $1); do
  if [ $((r%2)) = 0 ]; then revs="ae00aa3 HEAD"; else revs="HEAD ae00aa3"; fi
  for np in 2 4 8 16; do
  for rev in $revs; do
    echo "# load $(cut -d' ' -f1 /proc/loadavg)"
    timeout 120 $rev/ftmpirun -n $np $rev/ftmpi-bench -bench coll -runs 3 2>/dev/null | sed "s/^/$rev /;s/\"size\"/\"np$np\":0,\"size\"/"
  done; done
done
