#!/bin/sh
# bench/bigmsg.sh: one message of 1, 2 and 4 GiB between two ranks, over
# Unix sockets (ftmpirun -n 2) and in process (mpi.Run), receive buffers
# warm and fresh (see bench/bigmsg/main.go). One result line per case on
# stdout (median of RUNS messages), per-message times and the load average
# on stderr. Needs about 9 GiB of free memory for 4 GiB (two 4 GiB
# buffers, plus the fresh one); set SIZES to measure less.
#
#   bench/bigmsg.sh                 # SIZES=1024,2048,4096 RUNS=3
#   SIZES=1024 RUNS=5 bench/bigmsg.sh
set -eu
cd "$(dirname "$0")/.."
SIZES=${SIZES:-1024,2048,4096}
RUNS=${RUNS:-3}
out=${BUILD:-bench/build}
mkdir -p "$out"
go build -o "$out/ftmpirun" ./cmd/ftmpirun
go build -o "$out/bigmsg" ./bench/bigmsg
for fresh in false true; do
	echo "load: $(cat /proc/loadavg)" >&2
	"$out/ftmpirun" -n 2 --transport unix "$out/bigmsg" -sizes "$SIZES" -runs "$RUNS" -fresh=$fresh
	echo "load: $(cat /proc/loadavg)" >&2
	"$out/bigmsg" -inproc -sizes "$SIZES" -runs "$RUNS" -fresh=$fresh
done
echo "load: $(cat /proc/loadavg)" >&2
