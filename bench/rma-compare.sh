#!/usr/bin/env bash
# One-sided communication (MPI RMA): ftmpi against Debian's Open MPI (and
# MPICH for reference), same host, one interleaved run (issue 16 item 8: at
# most 1.5x Open MPI's one-sided latency over the same kind of transport).
# See bench/README.md.
#
# Usage: bench/rma-compare.sh              (ROUNDS=5: about 10 to 20 minutes on 2 idle cores)
#        ROUNDS=1 RUNS=1 ITERS=20 bench/rma-compare.sh   (a smoke run)
#
# Every round launches, in turn (the order reversed every other round, so
# drift hits every launcher alike):
#   ftmpi/tcp       ftmpirun --transport tcp -n 2 ftmpi-bench -bench rma
#   openmpi/tcp     mpirun.openmpi --mca pml ob1 --mca btl tcp,self --mca osc pt2pt -n 2 osc
#                   (one-sided operations as messages over TCP: the same kind of transport)
#   ftmpi/unix      ftmpirun --transport unix -n 2 ftmpi-bench -bench rma
#   openmpi/shm     mpirun.openmpi --mca pml ob1 --mca btl vader,self --mca osc pt2pt -n 2 osc
#                   (messages over shared memory)
#   openmpi/osc-sm  mpirun.openmpi -n 2 osc   (reference: Open MPI's default for MPI_Win_allocate on
#                   one host, osc sm: loads and stores in shared memory, no messages)
#   mpich/shm       mpirun.mpich -n 2 osc     (reference: default device)
# Each launch prints one line per case and size (the median of RUNS
# repetitions; bench/c/osc.c and cmd/ftmpi-bench/rma.go say what is timed);
# the script tags it with the round and the 1-minute load read just before
# the launch. The table (bench/rmacmp) holds, per case and size, the median
# over the launches and the time ratios ftmpi/tcp ÷ openmpi/tcp and
# ftmpi/unix ÷ openmpi/shm, latency ratios checked against 1.5.
#
# Environment (all optional):
#   ROUNDS=5            launches of every launcher
#   RUNS=5              repetitions inside each launch (median reported)
#   ITERS=500           timed iterations per repetition at small sizes (64 KiB and up: ITERS/10, 1 MiB: ITERS/50;
#                       bandwidth epochs of 64 Puts: a tenth of that)
#   BUILD=bench/build   build directory (gitignored)
#   RESULTS=bench/results/rma-<date>.jsonl   results file (the table goes to the same name .md,
#                       the rows as JSON to .rows.jsonl)
#   SKIP_INSTALL=1      never call apt-get
#   TIMEOUT=600         seconds per launch
#
# stdout: the table. stderr: progress, skip and failure lines (starting with "#").
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)

ROUNDS=${ROUNDS:-5}
RUNS=${RUNS:-5}
ITERS=${ITERS:-500}
BUILD=${BUILD:-$HERE/build}
STAMP=$(date +%Y%m%d-%H%M%S)
RESULTS=${RESULTS:-$HERE/results/rma-$STAMP.jsonl}
SKIP_INSTALL=${SKIP_INSTALL:-0}
TIMEOUT=${TIMEOUT:-600}

for v in ROUNDS RUNS ITERS TIMEOUT; do
	if ! [[ ${!v} =~ ^[1-9][0-9]*$ ]]; then
		echo "$v=${!v}: want a positive integer" >&2
		exit 2
	fi
done

LOGDIR=$BUILD/logs/rma-$STAMP
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
	log "building bench/c/osc.c into $BUILD/{mpich,openmpi}/osc"
	if ! make -s -C "$HERE/c" BUILD="$BUILD" "$BUILD/openmpi/osc" "$BUILD/mpich/osc" >"$LOGDIR/make.log" 2>&1; then
		cat "$LOGDIR/make.log" >&2
		fail "building bench/c/osc.c"
		HAVE_MPI=0
	fi
fi
HAVE_FT=1
go_build "$BUILD/ftmpi/ftmpirun" ./cmd/ftmpirun || HAVE_FT=0
go_build "$BUILD/ftmpi/ftmpi-bench" ./cmd/ftmpi-bench || HAVE_FT=0
go_build "$BUILD/rmacmp" ./bench/rmacmp || {
	echo "cannot build bench/rmacmp: no table possible" >&2
	exit 1
}

ARGS=(-runs "$RUNS" -iters "$ITERS")
LAUNCHERS=()
((HAVE_FT)) && LAUNCHERS+=(ftmpi/tcp)
((HAVE_MPI)) && LAUNCHERS+=(openmpi/tcp)
((HAVE_FT)) && LAUNCHERS+=(ftmpi/unix)
((HAVE_MPI)) && LAUNCHERS+=(openmpi/shm openmpi/osc-sm mpich/shm)
if ((${#LAUNCHERS[@]} == 0)); then
	echo "nothing to run (see the skips above)" >&2
	exit 1
fi

# launch_cmd LAUNCHER: set CMD.
launch_cmd() {
	case $1 in
	ftmpi/*) CMD=("$BUILD/ftmpi/ftmpirun" --transport "${1#ftmpi/}" -n 2 "$BUILD/ftmpi/ftmpi-bench" -bench rma "${ARGS[@]}") ;;
	openmpi/tcp) ompi_cmd 2 --mca pml ob1 --mca btl tcp,self --mca osc pt2pt -- "$BUILD/openmpi/osc" -impl openmpi -transport tcp "${ARGS[@]}" ;;
	openmpi/shm) ompi_cmd 2 --mca pml ob1 --mca btl vader,self --mca osc pt2pt -- "$BUILD/openmpi/osc" -impl openmpi -transport shm "${ARGS[@]}" ;;
	openmpi/osc-sm) ompi_cmd 2 -- "$BUILD/openmpi/osc" -impl openmpi -transport osc-sm "${ARGS[@]}" ;;
	mpich/shm) mpich_cmd 2 "$BUILD/mpich/osc" -impl mpich -transport shm "${ARGS[@]}" ;;
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
	if ! grep -q '^{"name":"rma-' "$out"; then
		BAD[$l]=1
		fail "$l round $round: no rma result lines ($(tail -n 3 "$err" | tr '\n' ' '))"
		return
	fi
	grep '^{"name":"rma-' "$out" | sed "s/}\$/,\"round\":$round,\"load1\":$load1}/" >>"$RESULTS"
}

# ---------------------------------------------------------------- rounds
LOAD_BEGIN=$(cut -d' ' -f1-3 /proc/loadavg)
load_check "before the benchmarks"
log "=== rma, np 2: $ROUNDS rounds of ${LAUNCHERS[*]} (RUNS=$RUNS ITERS=$ITERS) ==="
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
ROWS=${RESULTS%.jsonl}.rows.jsonl
if [[ -s $RESULTS ]]; then
	{
		echo "# ftmpi vs Open MPI: one-sided communication ($(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(hostname))"
		echo
		echo "2 processes; size = bytes per operation. Latencies in µs per operation (fence: one operation each way and a fence after each; lock: lock, operation, unlock), bandwidth in MB/s (64 Puts per epoch). $ROUNDS rounds, RUNS=$RUNS, ITERS=$ITERS."
		echo "Open MPI's tcp and shm columns use osc pt2pt (operations as messages, like ftmpi); openmpi/osc-sm and mpich/shm use shared-memory windows (no messages): reference only."
		echo "Load average before: $LOAD_BEGIN, after: $(cut -d' ' -f1-3 /proc/loadavg)."
		echo
		"$BUILD/rmacmp" "$RESULTS"
	} >"$TABLE" 2>>"$LOGDIR/rmacmp.err" || fail "table: $(tail -n 2 "$LOGDIR/rmacmp.err" | tr '\n' ' ')"
	"$BUILD/rmacmp" -json "$RESULTS" >"$ROWS" 2>>"$LOGDIR/rmacmp.err" || fail "rows: $(tail -n 2 "$LOGDIR/rmacmp.err" | tr '\n' ' ')"
	[[ -s $TABLE ]] && cat "$TABLE"
else
	fail "no results at all"
fi

log "results: $RESULTS"
[[ -s ${TABLE:-} ]] && log "table:   $TABLE"
[[ -s ${ROWS:-} ]] && log "rows:    $ROWS"
log "logs:    $LOGDIR"
for s in "${SKIPPED[@]+"${SKIPPED[@]}"}"; do log "skipped: $s"; done
for s in "${FAILED[@]+"${FAILED[@]}"}"; do log "failed:  $s"; done
log "elapsed: $(($(date +%s) - T_BEGIN)) s"
((${#FAILED[@]} == 0))
