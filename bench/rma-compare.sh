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
#   ftmpi/shm       ftmpirun --transport shm -n 2 ftmpi-bench -bench rma (shared-memory rings, the default on one host)
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

# shellcheck source=lib.sh
source "$HERE/lib.sh"

need_posint ROUNDS RUNS ITERS TIMEOUT

start_run rma

# ---------------------------------------------------------------- builds
build_mpi_bench osc
build_ftmpi
build_table_tool rmacmp

ARGS=(-runs "$RUNS" -iters "$ITERS")
LAUNCHERS=()
((HAVE_FT)) && LAUNCHERS+=(ftmpi/tcp)
((HAVE_MPI)) && LAUNCHERS+=(openmpi/tcp)
((HAVE_FT)) && LAUNCHERS+=(ftmpi/unix ftmpi/shm)
((HAVE_MPI)) && LAUNCHERS+=(openmpi/shm openmpi/osc-sm mpich/shm)
need_launchers

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
	launch_cmd "$2"
	run_tagged "$1" "$2" "r$1-${2/\//-}" "$2" rma
}

# ---------------------------------------------------------------- rounds
LOAD_BEGIN=$(cut -d' ' -f1-3 /proc/loadavg)
load_check "before the benchmarks"
log "=== rma, np 2: $ROUNDS rounds of ${LAUNCHERS[*]} (RUNS=$RUNS ITERS=$ITERS) ==="
for ((r = 1; r <= ROUNDS; r++)); do
	launch_order "$r"
	for l in "${ORDER[@]}"; do
		[[ -n ${BAD[$l]:-} ]] && continue
		run_launch "$r" "$l"
	done
done

# ---------------------------------------------------------------- report
write_table rmacmp "ftmpi vs Open MPI: one-sided communication" \
	"2 processes; size = bytes per operation. Latencies in µs per operation (fence: one operation each way and a fence after each; lock: lock, operation, unlock), bandwidth in MB/s (64 Puts per epoch). $ROUNDS rounds, RUNS=$RUNS, ITERS=$ITERS." \
	"Open MPI's tcp and shm columns use osc pt2pt (operations as messages, like ftmpi); openmpi/osc-sm and mpich/shm use shared-memory windows (no messages): reference only." \
	"$(load_line)"
if [[ -s $RESULTS ]]; then
	ROWS=${RESULTS%.jsonl}.rows.jsonl
	"$BUILD/rmacmp" -json "$RESULTS" >"$ROWS" 2>>"$LOGDIR/rmacmp.err" || fail "rows: $(tail -n 2 "$LOGDIR/rmacmp.err" | tr '\n' ' ')"
fi

report_end
