#!/usr/bin/env bash
# Derived-datatype messages: ftmpi against Debian's Open MPI (and MPICH for
# reference), same host, one run (issue 12 item 9: at most 1.2x Open MPI's
# time at 1 KiB and 1 MiB over the same transport). See bench/README.md.
#
# Usage: bench/dtype-compare.sh         (ROUNDS=5: about 3 to 5 minutes on 2 idle cores)
#        ROUNDS=1 bench/dtype-compare.sh   (a smoke run)
#
# Every round launches, in turn (the order reversed every other round, so
# drift hits every launcher alike):
#   ftmpi/tcp     ftmpirun --transport tcp -n 2 ftmpi-bench -bench dtype
#   openmpi/tcp   mpirun.openmpi --mca pml ob1 --mca btl tcp,self -n 2 dtype
#   ftmpi/unix    ftmpirun --transport unix -n 2 ftmpi-bench -bench dtype
#   openmpi/shm   mpirun.openmpi -n 2 dtype   (shared memory, vader BTL)
#   mpich/shm     mpirun.mpich -n 2 dtype     (reference: default device, ch4:ucx on Debian 12)
# Each launch prints one line per case and size (the median of RUNS
# repetitions); the script tags it with the round and the 1-minute load read
# just before the launch. The table (bench/dtypecmp) holds, per case and size,
# the median over the launches and the ratios ftmpi/tcp ÷ openmpi/tcp and
# ftmpi/unix ÷ openmpi/shm, each checked against 1.2.
#
# Environment (all optional):
#   ROUNDS=5            launches of every launcher
#   RUNS=5              repetitions inside each launch (median reported)
#   ITERS=1000          timed ping-pongs per repetition at 1 KiB (1 MiB: ITERS/50, at least 10)
#   BUILD=bench/build   build directory (gitignored)
#   RESULTS=bench/results/dtype-<date>.jsonl   results file (the table goes to the same name .md)
#   SKIP_INSTALL=1      never call apt-get
#   TIMEOUT=120         seconds per launch
#
# stdout: the table. stderr: progress, skip and failure lines (starting with "#").
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)

ROUNDS=${ROUNDS:-5}
RUNS=${RUNS:-5}
ITERS=${ITERS:-1000}
BUILD=${BUILD:-$HERE/build}
STAMP=$(date +%Y%m%d-%H%M%S)
RESULTS=${RESULTS:-$HERE/results/dtype-$STAMP.jsonl}
SKIP_INSTALL=${SKIP_INSTALL:-0}
TIMEOUT=${TIMEOUT:-120}

for v in ROUNDS RUNS ITERS TIMEOUT; do
	if ! [[ ${!v} =~ ^[1-9][0-9]*$ ]]; then
		echo "$v=${!v}: want a positive integer" >&2
		exit 2
	fi
done

LOGDIR=$BUILD/logs/dtype-$STAMP
mkdir -p "$BUILD/ftmpi" "$LOGDIR" "$(dirname "$RESULTS")"
: >"$RESULTS"

SKIPPED=()
FAILED=()
T_BEGIN=$(date +%s)

# shellcheck source=lib.sh
source "$HERE/lib.sh"

# ---------------------------------------------------------------- builds
HAVE_MPI=1
if ! ensure_packages; then
	HAVE_MPI=0
	skip "Open MPI and MPICH (packages missing and not installable)"
fi
if ((HAVE_MPI)); then
	log "building bench/c/dtype.c into $BUILD/{mpich,openmpi}/dtype"
	if ! make -s -C "$HERE/c" BUILD="$BUILD" "$BUILD/openmpi/dtype" "$BUILD/mpich/dtype" >"$LOGDIR/make.log" 2>&1; then
		cat "$LOGDIR/make.log" >&2
		fail "building bench/c/dtype.c"
		HAVE_MPI=0
	fi
fi
HAVE_FT=1
go_build "$BUILD/ftmpi/ftmpirun" ./cmd/ftmpirun || HAVE_FT=0
go_build "$BUILD/ftmpi/ftmpi-bench" ./cmd/ftmpi-bench || HAVE_FT=0
go_build "$BUILD/dtypecmp" ./bench/dtypecmp || {
	echo "cannot build bench/dtypecmp: no table possible" >&2
	exit 1
}

ARGS=(-runs "$RUNS" -iters "$ITERS")
LAUNCHERS=()
((HAVE_FT)) && LAUNCHERS+=(ftmpi/tcp)
((HAVE_MPI)) && LAUNCHERS+=(openmpi/tcp)
((HAVE_FT)) && LAUNCHERS+=(ftmpi/unix)
((HAVE_MPI)) && LAUNCHERS+=(openmpi/shm mpich/shm)
if ((${#LAUNCHERS[@]} == 0)); then
	echo "nothing to run (see the skips above)" >&2
	exit 1
fi

# launch_cmd LAUNCHER: set CMD.
launch_cmd() {
	case $1 in
	ftmpi/*) CMD=("$BUILD/ftmpi/ftmpirun" --transport "${1#ftmpi/}" -n 2 "$BUILD/ftmpi/ftmpi-bench" -bench dtype "${ARGS[@]}") ;;
	openmpi/tcp) ompi_cmd 2 --mca pml ob1 --mca btl tcp,self -- "$BUILD/openmpi/dtype" -impl openmpi -transport tcp "${ARGS[@]}" ;;
	openmpi/shm) ompi_cmd 2 -- "$BUILD/openmpi/dtype" -impl openmpi -transport shm "${ARGS[@]}" ;;
	mpich/shm) mpich_cmd 2 "$BUILD/mpich/dtype" -impl mpich -transport shm "${ARGS[@]}" ;;
	esac
}

# run_launch ROUND LAUNCHER: one launch; its JSON lines, tagged with the round
# and the 1-minute load before the launch, go to the results file. A launcher
# that fails is not launched again.
declare -A BAD=()
run_launch() {
	local round=$1 l=$2 rc=0 load1 out err
	out="$LOGDIR/r$round-${l/\//-}.out" err="$LOGDIR/r$round-${l/\//-}.err"
	launch_cmd "$l"
	load1=$(cut -d' ' -f1 /proc/loadavg)
	log "round $round $l (load $load1): ${CMD[*]}"
	timeout -k 10 "$TIMEOUT" "${CMD[@]}" >"$out" 2>"$err" || rc=$?
	if ((rc != 0)); then
		BAD[$l]=1
		if ((rc == 124 || rc == 137)); then
			fail "$l round $round: timed out after ${TIMEOUT}s (log $err)"
		else
			fail "$l round $round: exit $rc: $(tail -n 3 "$err" | tr '\n' ' ')"
		fi
		return
	fi
	if ! grep -q '^{"name":"dtype-' "$out"; then
		BAD[$l]=1
		fail "$l round $round: no dtype result lines ($(tail -n 3 "$err" | tr '\n' ' '))"
		return
	fi
	grep '^{"name":"dtype-' "$out" | sed "s/}\$/,\"round\":$round,\"load1\":$load1}/" >>"$RESULTS"
}

# ---------------------------------------------------------------- rounds
LOAD_BEGIN=$(cut -d' ' -f1-3 /proc/loadavg)
load_check "before the benchmarks"
log "=== dtype, np 2: $ROUNDS rounds of ${LAUNCHERS[*]} (RUNS=$RUNS ITERS=$ITERS) ==="
for ((r = 1; r <= ROUNDS; r++)); do
	order=("${LAUNCHERS[@]}")
	if ((r % 2 == 0)); then
		order=()
		for ((i = ${#LAUNCHERS[@]} - 1; i >= 0; i--)); do order+=("${LAUNCHERS[i]}"); done
	fi
	for l in "${order[@]}"; do
		[[ -n ${BAD[$l]:-} ]] && continue
		run_launch "$r" "$l"
	done
done

# ---------------------------------------------------------------- report
TABLE=${RESULTS%.jsonl}.md
if [[ -s $RESULTS ]]; then
	{
		echo "# ftmpi vs Open MPI: derived datatypes ($(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(hostname))"
		echo
		echo "Half round trip of a ping-pong between 2 processes; size = bytes of data. $ROUNDS rounds, RUNS=$RUNS, ITERS=$ITERS."
		echo "Load average before: $LOAD_BEGIN, after: $(cut -d' ' -f1-3 /proc/loadavg)."
		echo "Open MPI and MPICH run dtype-struct and dtype-structdt as one measurement (the same MPI struct datatype; see bench/c/dtype.c)."
		echo
		"$BUILD/dtypecmp" "$RESULTS"
	} >"$TABLE" 2>>"$LOGDIR/dtypecmp.err" || fail "table: $(tail -n 2 "$LOGDIR/dtypecmp.err" | tr '\n' ' ')"
	[[ -s $TABLE ]] && cat "$TABLE"
else
	fail "no results at all"
fi

log "results: $RESULTS"
[[ -s ${TABLE:-} ]] && log "table:   $TABLE"
log "logs:    $LOGDIR"
for s in "${SKIPPED[@]+"${SKIPPED[@]}"}"; do log "skipped: $s"; done
for s in "${FAILED[@]+"${FAILED[@]}"}"; do log "failed:  $s"; done
log "elapsed: $(($(date +%s) - T_BEGIN)) s"
((${#FAILED[@]} == 0))
