#!/bin/bash
# co.sh N DIRS...: both ranks pinned on CPU 0 (taskset), a busy loop pinned on CPU 1: the co-located mode's hop
N=$1; shift
taskset -c 1 bash -c 'while :; do :; done' & BP=$!
for i in $(seq 1 $N); do
  for d in "$@"; do
    perf stat -e context-switches,task-clock -x, -o /tmp/H107/perf.co taskset -c 0 $d/ftmpirun -n 2 --transport shm $d/ftmpi-bench -bench latency -runs 5 -min 1 -max 1 >/tmp/H107/out.co 2>/dev/null
    med=$(sed -n 's/.*"median":\([0-9.]*\).*/\1/p' /tmp/H107/out.co)
    cs=$(grep context-switches /tmp/H107/perf.co | cut -d, -f1); tc=$(grep task-clock /tmp/H107/perf.co | cut -d, -f1)
    printf "%s %d %s med=%.3f cs=%s taskms=%s load=%s\n" "$(date +%T)" $i $(basename $d) $med $cs ${tc%.*} $(cut -d' ' -f1 /proc/loadavg)
  done
done
kill $BP
