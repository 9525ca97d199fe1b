#!/bin/bash
B='PingPongInproc|Coll/^(barrier|allreduce)$/^(0|8)$/^np(2|4)$'
for i in 1 2 3 4 5; do
  echo "== round $i off load $(cut -d' ' -f1 /proc/loadavg)"
  /tmp/mpi.test -test.run XXX -test.bench "$B" -test.benchtime 100000x -test.count 1 2>&1 | grep Benchmark
  echo "== round $i on load $(cut -d' ' -f1 /proc/loadavg)"
  rm -rf /tmp/trbench/on/*
  FTMPI_TRACE=/tmp/trbench/on /tmp/mpi.test -test.run XXX -test.bench "$B" -test.benchtime 100000x -test.count 1 2>&1 | grep Benchmark
done
uptime
