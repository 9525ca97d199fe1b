#!/bin/bash
# ab.sh NP N arms... ; arm = name:bindir[:ENV=V]
NP=$1; N=$2; shift 2
for i in $(seq $N); do
  for arm in "$@"; do
    IFS=: read name dir envs <<< "$arm"
    out=$(env $envs flock /tmp/lead/bench.lock $dir/ftmpirun -n $NP --transport shm --on-failure continue $dir/ftmpi-bench -bench detect 2>/dev/null | grep -o '"name":"ft_[a-z_]*","impl":"ftmpi","transport":"shm","np":[0-9]*,"size":0,"median":[0-9.]*' | sed 's/"impl.*median"://; s/"name"://' | paste -sd' ')
    echo "$name $(cut -d' ' -f1 /proc/loadavg) $out"
  done
done
