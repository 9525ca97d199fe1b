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

# shellcheck source=lib.sh
source "$HERE/lib.sh"

need_posint ROUNDS RUNS ITERS TIMEOUT

start_run dtype

# ---------------------------------------------------------------- builds
build_mpi_bench dtype
build_ftmpi
build_table_tool dtypecmp

ARGS=(-runs "$RUNS" -iters "$ITERS")
LAUNCHERS=()
((HAVE_FT)) && LAUNCHERS+=(ftmpi/tcp)
((HAVE_MPI)) && LAUNCHERS+=(openmpi/tcp)
((HAVE_FT)) && LAUNCHERS+=(ftmpi/unix)
((HAVE_MPI)) && LAUNCHERS+=(openmpi/shm mpich/shm)
need_launchers

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
	launch_cmd "$2"
	run_tagged "$1" "$2" "r$1-${2/\//-}" "$2" dtype
}

# ---------------------------------------------------------------- rounds
LOAD_BEGIN=$(cut -d' ' -f1-3 /proc/loadavg)
load_check "before the benchmarks"
log "=== dtype, np 2: $ROUNDS rounds of ${LAUNCHERS[*]} (RUNS=$RUNS ITERS=$ITERS) ==="
for ((r = 1; r <= ROUNDS; r++)); do
	launch_order "$r"
	for l in "${ORDER[@]}"; do
		[[ -n ${BAD[$l]:-} ]] && continue
		run_launch "$r" "$l"
	done
done

# ---------------------------------------------------------------- report
write_table dtypecmp "ftmpi vs Open MPI: derived datatypes" \
	"Half round trip of a ping-pong between 2 processes; size = bytes of data. $ROUNDS rounds, RUNS=$RUNS, ITERS=$ITERS." \
	"$(load_line)" \
	"Open MPI and MPICH run dtype-struct and dtype-structdt as one measurement (the same MPI struct datatype; see bench/c/dtype.c)."

report_end
