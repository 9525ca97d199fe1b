#!/usr/bin/env bash
# Collective file bandwidth: ftmpi against Debian's Open MPI and MPICH, same
# host, one interleaved run (issue 16 item 8: file bandwidth at least Open
# MPI's, at np 4 and 8, to the local disk). See bench/README.md.
#
# Usage: bench/io-compare.sh              (ROUNDS=5)
#        ROUNDS=1 MAX=65536 bench/io-compare.sh   (a smoke run: 64 KiB per rank only)
#
# Every round launches, for every process count of NPS, in turn (the order
# reversed every other round, so drift hits every launcher alike):
#   ftmpi/unix    ftmpirun --transport unix -n NP ftmpi-bench -bench io -dir DIR
#   openmpi/shm   mpirun.openmpi -n NP io -dir DIR   (ROMIO/OMPIO as Debian ships it)
#   mpich/shm     mpirun.mpich -n NP io -dir DIR     (ROMIO)
# Each launch prints one line per case and size per rank (the median of RUNS
# repetitions, aggregate MB/s): io-write (WriteAtAll of a block per rank +
# Sync), io-read (ReadAtAll of the blocks), io-strided-write (4 KiB blocks
# of every rank interleaved, through a view). The script tags each line with
# the round and the 1-minute load read just before the launch. The table
# (bench/iocmp) holds the median over the launches and the ratio
# ftmpi/unix ÷ openmpi/shm, checked against 1.0 (higher is better).
#
# Environment (all optional):
#   ROUNDS=5            launches of every launcher per process count
#   RUNS=5              repetitions inside each launch (median reported)
#   NPS="4 8"           process counts
#   MIN=1 MAX=16777216  bytes per rank: the sizes 64 KiB, 1 MiB, 16 MiB within MIN..MAX
#   DIR=$BUILD/iodir    directory of the benchmark files (a local disk; removed at the end)
#   BUILD=bench/build   build directory (gitignored)
#   RESULTS=bench/results/io-<date>.jsonl   results file (the table goes to the same name .md)
#   SKIP_INSTALL=1      never call apt-get
#   TIMEOUT=300         seconds per launch
#
# stdout: the table. stderr: progress, skip and failure lines (starting with "#").
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)

ROUNDS=${ROUNDS:-5}
RUNS=${RUNS:-5}
NPS=${NPS:-4 8}
MIN=${MIN:-1}
MAX=${MAX:-16777216}
BUILD=${BUILD:-$HERE/build}
DIR=${DIR:-$BUILD/iodir}
STAMP=$(date +%Y%m%d-%H%M%S)
RESULTS=${RESULTS:-$HERE/results/io-$STAMP.jsonl}
SKIP_INSTALL=${SKIP_INSTALL:-0}
TIMEOUT=${TIMEOUT:-300}

# shellcheck source=lib.sh
source "$HERE/lib.sh"

need_posint ROUNDS RUNS MIN MAX TIMEOUT
for np in $NPS; do
	if ! [[ $np =~ ^[1-9][0-9]*$ ]]; then
		echo "NPS=$NPS: want positive integers" >&2
		exit 2
	fi
done

start_run io "$DIR"

# ---------------------------------------------------------------- builds
build_mpi_bench io
build_ftmpi
build_table_tool iocmp

ARGS=(-runs "$RUNS" -min "$MIN" -max "$MAX" -dir "$DIR")
LAUNCHERS=()
((HAVE_FT)) && LAUNCHERS+=(ftmpi/unix)
((HAVE_MPI)) && LAUNCHERS+=(openmpi/shm mpich/shm)
need_launchers

# launch_cmd LAUNCHER NP: set CMD.
launch_cmd() {
	case $1 in
	ftmpi/*) CMD=("$BUILD/ftmpi/ftmpirun" --transport "${1#ftmpi/}" -n "$2" "$BUILD/ftmpi/ftmpi-bench" -bench io "${ARGS[@]}") ;;
	openmpi/shm) ompi_cmd "$2" -- "$BUILD/openmpi/io" -impl openmpi -transport shm "${ARGS[@]}" ;;
	mpich/shm) mpich_cmd "$2" "$BUILD/mpich/io" -impl mpich -transport shm "${ARGS[@]}" ;;
	esac
}

# run_launch ROUND LAUNCHER NP: one launch; its JSON lines, tagged with the
# round and the 1-minute load before the launch, go to the results file. A
# launcher that fails is not launched again at that process count.
declare -A BAD=()
run_launch() {
	local round=$1 l=$2 np=$3
	launch_cmd "$l" "$np"
	run_tagged "$round" "$l np $np" "r$round-np$np-${l/\//-}" "$l/$np" io
}

# ---------------------------------------------------------------- rounds
LOAD_BEGIN=$(cut -d' ' -f1-3 /proc/loadavg)
load_check "before the benchmarks"
log "=== io, np $NPS: $ROUNDS rounds of ${LAUNCHERS[*]} (RUNS=$RUNS, bytes per rank $MIN..$MAX, dir $DIR) ==="
for ((r = 1; r <= ROUNDS; r++)); do
	for np in $NPS; do
		launch_order "$r"
		for l in "${ORDER[@]}"; do
			[[ -n ${BAD[$l/$np]:-} ]] && continue
			run_launch "$r" "$l" "$np"
		done
	done
done
rm -rf "$DIR"

# ---------------------------------------------------------------- report
write_table iocmp "ftmpi vs Open MPI and MPICH: collective file bandwidth" \
	"Aggregate MB/s of np processes, each S bytes of one file in $DIR ($(df -T "$BUILD" | awk 'NR==2 {print $2}')). $ROUNDS rounds, RUNS=$RUNS." \
	"$(load_line)"

report_end
