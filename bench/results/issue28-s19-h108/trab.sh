#!/bin/bash
N=${N:-6}; NPS=${NPS:-"8 16"}
for np in $NPS; do for i in $(seq $N); do for v in old new; do
  timeout 30 /tmp/h108/$v/bin/ftmpirun -n $np --transport shm --on-failure continue --trace /tmp/h108/tr/$v-$np-$i.json /tmp/h108/$v/bin/ftmpi-bench -bench detect >/dev/null 2>&1
done; done; done
