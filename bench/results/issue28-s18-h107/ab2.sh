#!/bin/bash
# ab2.sh N BUSY SPEC...: SPEC = dir[:ENV=VAL]; N interleaved rounds
N=$1; BUSY=$2; shift 2
BP=
if [[ $BUSY == 1 ]]; then nice -n ${NICE:-0} bash -c 'while :; do :; done' & BP=$!; fi
for i in $(seq 1 $N); do
  for spec in "$@"; do
    d=${spec%%:*}; e=; [[ $spec == *:* ]] && e=${spec#*:}
    env $e perf stat -e context-switches,task-clock -x, -o /tmp/H107/perf.ab2 nice -n ${NICE:-0} $d/ftmpirun -n 2 --transport shm $d/ftmpi-bench -bench latency -runs 5 -min 1 -max 1 >/tmp/H107/out.ab2 2>/dev/null
    med=$(sed -n 's/.*"median":\([0-9.]*\).*/\1/p' /tmp/H107/out.ab2)
    cs=$(grep context-switches /tmp/H107/perf.ab2 | cut -d, -f1); tc=$(grep task-clock /tmp/H107/perf.ab2 | cut -d, -f1)
    printf "%s %d %-28s med=%7.3f cs=%s taskms=%s load=%s\n" "$(date +%T)" $i "$(basename $d)$e" $med $cs ${tc%.*} $(cut -d' ' -f1 /proc/loadavg)
  done
done
[[ -n $BP ]] && kill $BP
