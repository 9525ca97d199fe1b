#!/bin/bash
# interleaved launches of three builds (order rotating): latency 1 B..64 KiB and coll at 64 KiB, np 2
N=${N:-8}
B=(old new fix)
for i in $(seq $N); do
  for j in 0 1 2; do
    b=${B[$(( (i+j) % 3 ))]}
    l=$(cut -d' ' -f1 /proc/loadavg)
    timeout 120 /tmp/h55/$b/ftmpirun -n 2 /tmp/h55/$b/ftmpi-bench -bench latency -runs 5 -min 1 -max 65536 2>/dev/null | sed -n "s/^{/$b $l {/p"
    timeout 120 /tmp/h55/$b/ftmpirun -n 2 /tmp/h55/$b/ftmpi-bench -bench coll -runs 5 -min 65536 -max 65536 2>/dev/null | sed -n "s/^{/$b $l {/p"
  done
done
