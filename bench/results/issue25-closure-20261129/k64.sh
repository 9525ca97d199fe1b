#!/bin/bash
# interleaved launches of coll at 64 KiB only, np 2
N=${N:-20}
for i in $(seq $N); do
  if [ $((i%2)) = 1 ]; then order="old new"; else order="new old"; fi
  for b in $order; do
    l=$(cut -d' ' -f1 /proc/loadavg)
    timeout 120 /tmp/h55/$b/ftmpirun -n 2 /tmp/h55/$b/ftmpi-bench -bench coll -runs 5 -min 65536 -max 65536 2>/dev/null | sed -n "s/^{/$b $l {/p"
  done
done
