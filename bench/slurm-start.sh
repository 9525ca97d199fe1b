#!/usr/bin/env bash
# slurm-start.sh - job start under Slurm: launch to exit of a program doing
# init + barrier + finalize, at NP processes over the nodes of a throw-away
# Slurm cluster (package internal/slurmtest: munged, slurmctld and NODES
# slurmd in namespace hosts on this machine). Needs root and Debian's
# slurmctld slurmd slurm-client munge (and mpich, openmpi-bin, libopenmpi-dev,
# libpmix-dev for the C programs; Open MPI 4.1 runs under srun --mpi=pmix).
#
# Usage: bench/slurm-start.sh            (as root)
#
# Inside one allocation (salloc -N NODES), RUNS rounds, each launching once,
# in turn (interleaved, so that a load change hits every line alike):
#   ftmpi/srun      srun --mpi=pmi2 -n NP examples/hello   (PMI bootstrap, no ftmpirun)
#   mpich/srun      srun --mpi=pmi2 -n NP bench/c/hello (MPICH)
#   openmpi/srun    srun --mpi=pmix -n NP bench/c/hello (Open MPI)
#   ftmpi/ftmpirun  ftmpirun -n NP examples/hello        (hosts from the allocation, agents by srun)
# Each launch is timed from the launcher's start to its exit; the median of
# RUNS is reported.
#
# Environment:
#   NP=16 NODES=3 RUNS=7   processes, nodes, launches per line
#   DETECT_RUNS=7          launches per line of the detection part (ftmpi under srun vs ftmpirun)
#   IMPLS="ftmpi/srun mpich/srun openmpi/srun ftmpi/ftmpirun"
#   TIMEOUT=120            seconds per launch
#   OUT=bench/results/slurm-start-DATE   (.jsonl: one line per launch and one
#                          median line per implementation; .md: the table)
#
# A full run (RUNS=7, 4 lines) takes about 1 minute on an idle 2-core machine
# (cluster start about 6 s, launches 0.3-1.5 s each) plus the builds.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)

# ------------------------------------------------------------ inner part
# Run by salloc on the login host: the allocation's SLURM_* are set.
if [[ ${1:-} == inner ]]; then
	shift
	BUILD=$1 RESULTS=$2
	for ((r = 1; r <= RUNS; r++)); do
		for impl in $IMPLS; do
			case $impl in
			ftmpi/srun) cmd=(srun --mpi=pmi2 -n "$NP" --overcommit "$BUILD/ftmpi/hello") ;;
			mpich/srun) cmd=(srun --mpi=pmi2 -n "$NP" --overcommit "$BUILD/mpich/hello") ;;
			openmpi/srun) cmd=(srun --mpi=pmix -n "$NP" --overcommit "$BUILD/openmpi/hello") ;;
			ftmpi/ftmpirun) cmd=("$BUILD/ftmpi/ftmpirun" -n "$NP" --oversubscribe "$BUILD/ftmpi/hello") ;;
			*) echo "# unknown implementation $impl" >&2; exit 2 ;;
			esac
			t0=$(date +%s%N) rc=0
			timeout -k 5 "$TIMEOUT" "${cmd[@]}" >"$BUILD/last.out" 2>&1 || rc=$?
			t1=$(date +%s%N)
			if ((rc != 0)); then
				echo "# FAILED $impl round $r: exit $rc: $(tail -n 3 "$BUILD/last.out" | tr '\n' ' ')" >&2
				continue
			fi
			ms=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", (b-a)/1e6}')
			echo "# $impl round $r: $ms ms" >&2
			printf '{"name":"slurm-start","impl":"%s","np":%d,"nodes":%d,"round":%d,"ms":%s}\n' \
				"$impl" "$NP" "$SLURM_JOB_NUM_NODES" "$r" "$ms" >>"$RESULTS"
		done
	done
	# Detection without a head (srun: the ranks alone) against detection
	# under ftmpirun (agents by srun): ftmpi-bench -bench detect, the last
	# rank SIGKILLs itself; when every survivor's blocked receive returned.
	for ((r = 1; r <= DETECT_RUNS; r++)); do
		for impl in ftmpi/srun ftmpi/ftmpirun; do
			case $impl in
			ftmpi/srun) cmd=(srun --mpi=pmi2 --no-kill -K0 -n "$NP" --overcommit "$BUILD/ftmpi/ftmpi-bench" -bench detect) ;;
			ftmpi/ftmpirun) cmd=("$BUILD/ftmpi/ftmpirun" -n "$NP" --oversubscribe --on-failure continue "$BUILD/ftmpi/ftmpi-bench" -bench detect) ;;
			esac
			rc=0
			timeout -k 5 "$TIMEOUT" "${cmd[@]}" >"$BUILD/last.out" 2>"$BUILD/last.err" || rc=$?
			line=$(grep '"name":"ft_detect_max"' "$BUILD/last.out" | head -1 || true)
			if [[ -z $line ]]; then
				echo "# FAILED detect $impl round $r: exit $rc: $(tail -n 3 "$BUILD/last.err" | tr '\n' ' ')" >&2
				continue
			fi
			ms=$(echo "$line" | sed 's/.*"median":\([0-9.]*\).*/\1/')
			echo "# detect $impl round $r: $ms ms" >&2
			printf '{"name":"slurm-detect","impl":"%s","np":%d,"nodes":%d,"round":%d,"ms":%s}\n' \
				"$impl" "$NP" "$SLURM_JOB_NUM_NODES" "$r" "$ms" >>"$RESULTS"
		done
	done
	exit 0
fi

# ------------------------------------------------------------ outer part
NP=${NP:-16} NODES=${NODES:-3} RUNS=${RUNS:-7} TIMEOUT=${TIMEOUT:-120} DETECT_RUNS=${DETECT_RUNS:-7}
IMPLS=${IMPLS:-"ftmpi/srun mpich/srun openmpi/srun ftmpi/ftmpirun"}
export NP RUNS TIMEOUT IMPLS DETECT_RUNS
log() { echo "# $*" >&2; }
((EUID == 0)) || { log "needs root (namespace hosts, Slurm daemons)"; exit 1; }
for tool in slurmctld slurmd srun salloc munged; do
	command -v "$tool" >/dev/null || [[ -x /usr/sbin/$tool ]] || {
		log "$tool missing: apt-get install --no-install-recommends slurmctld slurmd slurm-client munge"
		exit 1
	}
done
STAMP=$(date -u +%Y%m%d-%H%M%S)
OUT=${OUT:-$ROOT/bench/results/slurm-start-$STAMP}
mkdir -p "$(dirname "$OUT")"
WORK=$(mktemp -d /tmp/slurmstart-XXXXXX)
chmod 755 "$WORK"
BUILD=$WORK/build DIR=$WORK/cluster
mkdir -p "$BUILD/ftmpi"
cleanup() {
	[[ -x $BUILD/slurmtestctl && -d $DIR ]] && "$BUILD/slurmtestctl" down "$DIR" || true
	rm -rf "$WORK"
}
trap cleanup EXIT

log "building into $BUILD"
(cd "$ROOT" && go build -o "$BUILD/slurmtestctl" ./internal/slurmtest/slurmtestctl &&
	go build -o "$BUILD/ftmpi/ftmpirun" ./cmd/ftmpirun && go build -o "$BUILD/ftmpi/hello" ./examples/hello &&
	go build -o "$BUILD/ftmpi/ftmpi-bench" ./cmd/ftmpi-bench)
want_c=()
for impl in $IMPLS; do
	case $impl in mpich/*) want_c+=("$BUILD/mpich/hello") ;; openmpi/*) want_c+=("$BUILD/openmpi/hello") ;; esac
done
if ((${#want_c[@]})) && ! make -s -C "$HERE/c" BUILD="$BUILD" "${want_c[@]}" >"$WORK/make.log" 2>&1; then
	log "building the C hello failed (mpich, libopenmpi-dev installed?):"
	cat "$WORK/make.log" >&2
	exit 1
fi

T0=$(date +%s)
"$BUILD/slurmtestctl" up "$NODES" "$DIR" >"$WORK/cluster.env"
# shellcheck disable=SC1091
. "$WORK/cluster.env"
export SLURM_CONF
log "cluster up in $(($(date +%s) - T0)) s: nodes $SLURM_NODES, login namespace $SLURM_LOGIN_NS"
if [[ " $IMPLS " == *" openmpi/srun "* ]] && ! ip netns exec "$SLURM_LOGIN_NS" srun --mpi=list 2>&1 | grep -qw pmix; then
	log "srun has no pmix plugin (apt-get install libpmix-dev): Open MPI will fail"
fi
load=$(cut -d' ' -f1 /proc/loadavg)
log "load average $load (anything else running skews the numbers)"

RESULTS=$OUT.jsonl
: >"$RESULTS"
per=$(((NP + NODES - 1) / NODES))
# One allocation for every launch: the steps start inside it, as in a batch job.
(cd "$WORK" && ip netns exec "$SLURM_LOGIN_NS" salloc -N "$NODES" --ntasks-per-node="$per" --overcommit --no-kill \
	"$HERE/slurm-start.sh" inner "$BUILD" "$RESULTS")

# Medians and the tables. rows NAME IMPL...: one median line per
# implementation (appended to RESULTS) and one table row each (to OUT.md).
rows() {
	local name=$1 impl vals n med
	shift
	for impl in "$@"; do
		vals=$(grep "\"name\":\"$name\"" "$RESULTS" | grep "\"impl\":\"$impl\"" | sed 's/.*"ms":\([0-9.]*\).*/\1/' | sort -n || true)
		n=$(echo "$vals" | grep -c . || true)
		if ((n == 0)); then
			echo "| $impl | failed | | | 0 |" >>"$OUT.md"
			continue
		fi
		med=$(echo "$vals" | awk '{v[NR]=$1} END{if (NR%2) print v[(NR+1)/2]; else printf "%.2f\n", (v[NR/2]+v[NR/2+1])/2}')
		printf '{"name":"%s","impl":"%s","np":%d,"nodes":%d,"median":%s,"unit":"ms","runs":%d}\n' \
			"$name" "$impl" "$NP" "$NODES" "$med" "$n" >>"$RESULTS"
		echo "| $impl | $med | $(echo "$vals" | head -1) | $(echo "$vals" | tail -1) | $n |" >>"$OUT.md"
	done
}
header="| launch | median (ms) | min | max | launches |
|---|---|---|---|---|"
{
	echo "Job start under Slurm (launch to exit of init + barrier + finalize), np $NP over $NODES nodes,"
	echo "median of $RUNS interleaved launches, $(date -u +%Y-%m-%d), load average $load at start."
	echo
	echo "$header"
} >"$OUT.md"
# shellcheck disable=SC2086
rows slurm-start $IMPLS
{
	echo
	echo "Detection of a SIGKILLed rank (the last one kills itself; when every survivor's blocked receive"
	echo "returned), np $NP over $NODES nodes, median of $DETECT_RUNS interleaved launches: without a head under srun"
	echo "(the ranks' own heartbeat ring, broken connections, reliable broadcast) and under ftmpirun (agents by srun)."
	echo
	echo "$header"
} >>"$OUT.md"
rows slurm-detect ftmpi/srun ftmpi/ftmpirun
cat "$OUT.md"
log "results: $RESULTS and $OUT.md; total $(($(date +%s) - T0)) s after the builds"
