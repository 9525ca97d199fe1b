#!/bin/bash
# split.sh N DIRS...: one rank pinned on each CPU, a busy loop pinned on CPU 1 (beside one rank): the split mode
N=$1; shift
taskset -c 1 bash -c 'while :; do :; done' & BP=$!
for i in $(seq 1 $N); do
  for d in "$@"; do
    rmdir /tmp/H107/lock0 2>/dev/null
    perf stat -e context-switches,task-clock -x, -o /tmp/H107/perf.sp $d/ftmpirun -n 2 --transport shm /tmp/H107/wrap.sh $d/ftmpi-bench -bench latency -runs 5 -min 1 -max 1 >/tmp/H107/out.sp 2>/dev/null
    med=$(sed -n 's/.*"median":\([0-9.]*\).*/\1/p' /tmp/H107/out.sp)
    cs=$(grep context-switches /tmp/H107/perf.sp | cut -d, -f1); tc=$(grep task-clock /tmp/H107/perf.sp | cut -d, -f1)
    printf "%s %d %s med=%.3f cs=%s taskms=%s load=%s\n" "$(date +%T)" $i $(basename $d) $med $cs ${tc%.*} $(cut -d' ' -f1 /proc/loadavg)
  done
done
kill $BP; rmdir /tmp/H107/lock0 2>/dev/null
