#!/usr/bin/env bash
# pmi-start.sh - time to MPI_Init under srun (PMI-2, no ftmpirun) at a few
# sizes, several builds interleaved (issue 24 item 2: before, every process
# read every endpoint through PMI at start; after, none until it first
# talks to a peer). A throw-away Slurm cluster of NODES namespace hosts on
# this machine (internal/slurmtest); bench/pmistart measures, in every rank,
# the launch to Init's return and to the end of a barrier, and rank 0
# prints the largest over the ranks. Needs root and Debian's slurmctld
# slurmd slurm-client munge.
#
#   BUILDS="old=/tmp/old new=." SIZES="250 500" RUNS=3 bench/pmi-start.sh   (source trees)
#
# The failure detector's timeout is HB_TIMEOUT (default 60s): hundreds of
# processes on two cores starve each other's heartbeats for seconds, and a
# process of another node whose heartbeats stop is declared failed at once
# without a head; start-up, not detection, is measured here.
#
# stdout: one JSON line per launch (build, np, round, launch to exit, the
# ranks' largest time to Init and to the barrier, the load before it).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)

if [[ ${1:-} == inner ]]; then
	BIN=$2
	for ((r = 1; r <= RUNS; r++)); do
		for np in $SIZES; do
			for b in $NAMES; do
				load=$(cut -d' ' -f1 /proc/loadavg)
				t0=$(date +%s%N) rc=0
				PMISTART_T0=$t0 timeout -k 5 "$TIMEOUT" srun --mpi=pmi2 -n "$np" --overcommit "$BIN/$b/pmistart" >"$BIN/last.out" 2>&1 || rc=$?
				t1=$(date +%s%N)
				line=$(grep '"name":"pmi_start"' "$BIN/last.out" | head -1 || true)
				if ((rc != 0)) || [[ -z $line ]]; then
					echo "# FAILED $b np $np round $r: exit $rc: $(tail -n 3 "$BIN/last.out" | tr '\n' ' ')" >&2
					continue
				fi
				printf '{"name":"pmi_start","build":"%s","np":%d,"round":%d,"exit_ms":%.1f,%s,"load":%s}\n' "$b" "$np" "$r" \
					"$(awk -v a="$t0" -v b="$t1" 'BEGIN{print (b-a)/1e6}')" "$(echo "$line" | sed 's/^{"name":"pmi_start","np":[0-9]*,//; s/}$//')" "$load"
			done
		done
	done
	exit 0
fi

SIZES=${SIZES:-"250 500"} RUNS=${RUNS:-3} NODES=${NODES:-2} TIMEOUT=${TIMEOUT:-300}
BUILDS=${BUILDS:-"cur=."}
((EUID == 0)) || { echo "# needs root (namespace hosts, Slurm daemons)" >&2; exit 1; }
WORK=$(mktemp -d /tmp/pmistart-XXXXXX)
chmod 755 "$WORK"
BIN=$WORK/bin DIR=$WORK/cluster
cleanup() {
	[[ -x $BIN/slurmtestctl && -d $DIR ]] && "$BIN/slurmtestctl" down "$DIR" >/dev/null 2>&1 || true
	rm -rf "$WORK"
}
trap cleanup EXIT
mkdir -p "$BIN"
(cd "$ROOT" && go build -o "$BIN/slurmtestctl" ./internal/slurmtest/slurmtestctl)
NAMES=""
for b in $BUILDS; do
	name=${b%%=*} src=${b#*=}
	mkdir -p "$BIN/$name"
	if [[ ! -d $src/bench/pmistart ]]; then # an older tree: the same program, its mpi package
		mkdir -p "$src/bench/pmistart" && cp "$ROOT/bench/pmistart/main.go" "$src/bench/pmistart/"
	fi
	(cd "$src" && go build -o "$BIN/$name/pmistart" ./bench/pmistart)
	NAMES="$NAMES $name"
done
FTMPI_HB_TIMEOUT=${HB_TIMEOUT:-60s}
export SIZES RUNS TIMEOUT NAMES FTMPI_HB_TIMEOUT
SLURMTEST_CPUS=${SLURMTEST_CPUS:-1024} "$BIN/slurmtestctl" up "$NODES" "$DIR" >"$WORK/cluster.env"
# shellcheck disable=SC1091
. "$WORK/cluster.env"
export SLURM_CONF
max=0
for np in $SIZES; do ((np > max)) && max=$np; done
(cd "$WORK" && ip netns exec "$SLURM_LOGIN_NS" salloc -N "$NODES" --ntasks-per-node=$(((max + NODES - 1) / NODES)) --overcommit --no-kill \
	"$HERE/pmi-start.sh" inner "$BIN")
