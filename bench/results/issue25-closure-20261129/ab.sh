#!/bin/bash
# interleaved launches, builds A and B: latency 32-128 KiB and coll at 64 KiB, np 2
A=$1 B=$2 N=${N:-10}
for i in $(seq $N); do
  if [ $((i%2)) = 1 ]; then order="$A $B"; else order="$B $A"; fi
  for b in $order; do
    l=$(cut -d' ' -f1 /proc/loadavg)
    timeout 120 /tmp/h55/$b/ftmpirun -n 2 /tmp/h55/$b/ftmpi-bench -bench latency -runs 5 -min 32768 -max 131072 2>/dev/null | sed -n "s/^{/$b $l {/p"
    timeout 120 /tmp/h55/$b/ftmpirun -n 2 /tmp/h55/$b/ftmpi-bench -bench coll -runs 5 -min 65536 -max 65536 2>/dev/null | sed -n "s/^{/$b $l {/p"
  done
done
