#!/usr/bin/env bash
# launch-fanout.sh - job start over 16 and 32 namespace hosts (issue 24 item 3):
# ftmpirun flat, ftmpirun through a tree (--fanout K) and Open MPI's mpirun
# over the same ssh, one rank per host, init + barrier + finalize; medians of
# interleaved launches with the load recorded (bench/launchfan does the work).
#
#   bench/launch-fanout.sh                       (root; about 5 minutes on 2 idle cores)
#   SIZES=16,32 RUNS=5 FANOUT=4 IMPLS=flat,tree,openmpi bench/launch-fanout.sh
#   SIZES=32 IMPLS=flat,tree:2,tree:4,tree:8 bench/launch-fanout.sh   (fan-outs side by side)
#   SIZES=16,32 PPN=4 IMPLS=flat,relay,tree,relaytree bench/launch-fanout.sh
#       (the star against the relay through the agents, FTMPI_RELAY=1, PPN ranks a host)
#
# Builds into bench/build/launchfan (gitignored): ftmpirun and examples/hello,
# and bench/c/hello.c with mpicc.openmpi (Open MPI is skipped if it is missing).
# stdout: one JSON line per timed launch, then the markdown table.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/sbin:/sbin
BUILD=${BUILD:-bench/build/launchfan}
SIZES=${SIZES:-16,32}
RUNS=${RUNS:-5}
FANOUT=${FANOUT:-4}
IMPLS=${IMPLS:-flat,tree,openmpi}
PPN=${PPN:-1}
mkdir -p "$BUILD"
BUILD=$(cd "$BUILD" && pwd)
go build -o "$BUILD/ftmpirun" ./cmd/ftmpirun
go build -o "$BUILD/hello" ./examples/hello
if [[ $IMPLS == *openmpi* ]]; then
	if command -v mpicc.openmpi >/dev/null && command -v mpirun.openmpi >/dev/null; then
		mpicc.openmpi -O2 -o "$BUILD/hello-openmpi" bench/c/hello.c
	else
		echo "# Open MPI (mpicc.openmpi, mpirun.openmpi) missing: skipped" >&2
		IMPLS=$(echo "$IMPLS" | tr ',' '\n' | grep -vx openmpi | paste -sd,)
	fi
fi
echo "# load at the start: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores" >&2
go run ./bench/launchfan -build "$BUILD" -sizes "$SIZES" -runs "$RUNS" -fanout "$FANOUT" -impls "$IMPLS" -ppn "$PPN"
echo "# load at the end: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
