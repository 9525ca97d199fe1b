#!/bin/bash
# interleaved A/B of ftmpi-bench -bench detect: old and new builds
N=${N:-9}; NPS=${NPS:-"8 16"}
out=${OUT:-/tmp/h108/ab.jsonl}
for np in $NPS; do
 for i in $(seq $N); do
  for v in old new; do
   l=$(cat /proc/loadavg | cut -d' ' -f1)
   timeout 20 /tmp/h108/$v/bin/ftmpirun -n $np --transport shm --on-failure continue /tmp/h108/$v/bin/ftmpi-bench -bench detect 2>/dev/null | sed "s/^{/{\"v\":\"$v\",\"load\":$l,/" >> $out
  done
 done
done
