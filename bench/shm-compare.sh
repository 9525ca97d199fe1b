#!/usr/bin/env bash
# Issue 15's goals for the shared-memory transport, side by side with Debian's
# Open MPI (vader) and MPICH (ch4:ucx, shared memory) on this host, in one run.
# See bench/README.md.
#
# Usage: bench/shm-compare.sh                 (every part; about 8 minutes on 2 idle cores)
#        PARTS="stab ftcost" bench/shm-compare.sh
#
# Parts (PARTS, default "stab coll ftcost mem"):
#   stab    1 B latency, np 2, LAUNCHES launches per impl with the machine as
#           it is ("quiet"), then LAUNCHES more with a busy process (a shell
#           loop started and stopped by this script, "busy"); ftmpi, Open MPI
#           and MPICH interleaved. Goals: ftmpi's slowest launch at most 1.5x
#           its median; ftmpi's median at most 1.5x Open MPI's.
#   coll    Barrier and Allreduce 8 B, Bcast and Allreduce 1 MiB at np
#           COLL_NPS (oversubscribed above 2), ROUNDS interleaved rounds of
#           ftmpi/shm, Open MPI and MPICH. Goals: ftmpi at most 1.5x Open
#           MPI at 8 B, at most 1x at 1 MiB.
#   ftcost  the failure detector on (the default) vs off (FTMPI_HB_TIMEOUT=off):
#           1 B latency at np 2 and Allreduce 8 B at np FTCOST_NPS,
#           FTCOST_ROUNDS interleaved launches each. Goal: on ÷ off <= 1.02.
#   mem     PSS (private + share of shared memory) and RSS per rank while
#           every rank talks to every other one (the collectives at 8 B,
#           Alltoall included), at np MEM_NPS, ftmpi/shm and Open MPI;
#           sampled from /proc/PID/smaps_rollup every 0.2 s, largest sample.
#
# Environment (all optional):
#   PARTS="stab coll ftcost mem"   LAUNCHES=10   ROUNDS=3   COLL_NPS="2 4 8 16"
#   FTCOST_ROUNDS=6   FTCOST_NPS="2 4"   MEM_NPS="16 64"   MEM_RUNS=20   RUNS=5 (repetitions inside a launch)
#   BUSY=1   (0: skip the busy half of stab)   NO_MPICH=1 (leave MPICH out)
#   BUILD=bench/build   RESULTS=bench/results/shm-<date>.jsonl   SKIP_INSTALL=1   TIMEOUT=120
#
# stdout: every result line as produced (tagged with part, variant, round and
# the 1-minute load before the launch), then the tables (bench/shmcmp, also in
# RESULTS with .md). stderr: progress, skips, failures, the time taken.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
cd "$ROOT"

PARTS=${PARTS:-"stab coll ftcost mem"}
LAUNCHES=${LAUNCHES:-10}
ROUNDS=${ROUNDS:-3}
COLL_NPS=${COLL_NPS:-"2 4 8 16"}
FTCOST_ROUNDS=${FTCOST_ROUNDS:-6}
FTCOST_NPS=${FTCOST_NPS:-"2 4"}
MEM_NPS=${MEM_NPS:-"16 64"}
MEM_RUNS=${MEM_RUNS:-20} # repetitions of the collectives while memory is sampled (about 4 s a launch)
RUNS=${RUNS:-5}
BUSY=${BUSY:-1}
NO_MPICH=${NO_MPICH:-0}
TIMEOUT=${TIMEOUT:-120}
BUILD=${BUILD:-$HERE/build}
SKIP_INSTALL=${SKIP_INSTALL:-0}
STAMP=$(date +%Y%m%d-%H%M%S)
RESULTS=${RESULTS:-$HERE/results/shm-$STAMP.jsonl}
# shellcheck source=lib.sh
source "$HERE/lib.sh"
need_posint LAUNCHES ROUNDS FTCOST_ROUNDS RUNS TIMEOUT
for p in $PARTS; do
	case $p in stab | coll | ftcost | mem) ;; *)
		echo "unknown part '$p' (want stab, coll, ftcost or mem)" >&2
		exit 2
		;;
	esac
done
want() { [[ " $PARTS " == *" $1 "* ]]; }

start_run shm
LOAD_BEGIN=$(cut -d' ' -f1-3 /proc/loadavg)
load_check "at the start"

HAVE_FT=0 HAVE_MPI=0 HAVE_MPICH=0
build_ftmpi
build_table_tool shmcmp
build_mpi_bench latency
if ((HAVE_MPI)); then
	make -s -C "$HERE/c" BUILD="$BUILD" "$BUILD/openmpi/coll" "$BUILD/mpich/coll" >>"$LOGDIR/make.log" 2>&1 || {
		fail "building bench/c/coll.c"
		HAVE_MPI=0
	}
fi
((HAVE_MPI && !NO_MPICH)) && HAVE_MPICH=1
((HAVE_FT)) || fail "building ftmpi (nothing of ftmpi can run)"
FT=$BUILD/ftmpi

BUSY_PID=
cleanup() {
	if [[ -n $BUSY_PID ]]; then kill "$BUSY_PID" 2>/dev/null || true; fi
}
trap cleanup EXIT

# launch PART VARIANT ROUND WHAT CMD...: one launch under TIMEOUT; its result
# lines go to stdout and RESULTS, tagged. A failed launch is a failure (the
# run goes on).
N=0
launch() {
	local part=$1 variant=$2 round=$3 what=$4 rc=0 load1 out
	shift 4
	N=$((N + 1))
	out=$LOGDIR/$N-${what//[^a-zA-Z0-9]/_}
	load1=$(cut -d' ' -f1 /proc/loadavg)
	log "$part $variant round $round $what (load $load1)"
	timeout -k 10 "$TIMEOUT" "$@" >"$out.out" 2>"$out.err" || rc=$?
	if ((rc != 0)); then
		fail "$what ($part $variant round $round): exit $rc: $(tail -n 2 "$out.err" | tr '\n' ' ')"
	fi
	grep '^{"name":' "$out.out" | sed "s/}\$/,\"part\":\"$part\",\"variant\":\"$variant\",\"round\":$round,\"load1\":$load1}/" |
		tee -a "$RESULTS" || true
}

# impls: ftmpi, openmpi, mpich as available, reversed in even rounds.
impls() {
	local l=()
	((HAVE_FT)) && l+=(ftmpi)
	((HAVE_MPI)) && l+=(openmpi)
	((HAVE_MPICH)) && l+=(mpich)
	if (($1 % 2 == 0)); then
		local i r=()
		for ((i = ${#l[@]} - 1; i >= 0; i--)); do r+=("${l[i]}"); done
		l=("${r[@]}")
	fi
	echo "${l[@]}"
}

lat_cmd() { # impl: CMD = a 1 B ping-pong launch, np 2
	case $1 in
	ftmpi) CMD=("$FT/ftmpirun" -n 2 --transport shm "$FT/ftmpi-bench" -bench latency -runs "$RUNS" -min 1 -max 1) ;;
	openmpi) ompi_cmd 2 -- "$BUILD/openmpi/latency" -impl openmpi -transport shm -runs "$RUNS" -min 1 -max 1 ;;
	mpich) mpich_cmd 2 "$BUILD/mpich/latency" -impl mpich -transport shm -runs "$RUNS" -min 1 -max 1 ;;
	esac
}
coll_cmd() { # impl np min max budget-ms runs
	case $1 in
	ftmpi) CMD=("$FT/ftmpirun" -n "$2" --transport shm "$FT/ftmpi-bench" -bench coll -runs "$6" -min "$3" -max "$4" -budget "${5}ms") ;;
	openmpi) ompi_cmd "$2" -- "$BUILD/openmpi/coll" -impl openmpi -transport shm -budget "$5" -runs "$6" -min "$3" -max "$4" ;;
	mpich) mpich_cmd "$2" "$BUILD/mpich/coll" -impl mpich -transport shm -budget "$5" -runs "$6" -min "$3" -max "$4" ;;
	esac
}

run_stab() {
	local variant i impl
	for variant in quiet busy; do
		if [[ $variant == busy ]]; then
			((BUSY)) || continue
			bash -c 'while :; do :; done' &
			BUSY_PID=$!
			log "busy process $BUSY_PID started (a shell loop)"
		fi
		for ((i = 1; i <= LAUNCHES; i++)); do
			for impl in $(impls "$i"); do
				lat_cmd "$impl"
				launch stab "$variant" "$i" "$impl latency" "${CMD[@]}"
			done
		done
		if [[ -n $BUSY_PID ]]; then
			kill "$BUSY_PID" 2>/dev/null || true
			wait "$BUSY_PID" 2>/dev/null || true
			log "busy process $BUSY_PID stopped"
			BUSY_PID=
		fi
	done
}

run_coll() {
	local r np impl
	for ((r = 1; r <= ROUNDS; r++)); do
		for np in $COLL_NPS; do
			for impl in $(impls "$r"); do
				coll_cmd "$impl" "$np" 8 8 30 "$RUNS"
				launch coll - "$r" "$impl coll 8 B np $np" "${CMD[@]}"
				coll_cmd "$impl" "$np" 1048576 1048576 30 "$RUNS"
				launch coll - "$r" "$impl coll 1 MiB np $np" "${CMD[@]}"
			done
		done
	done
}

run_ftcost() {
	((HAVE_FT)) || return 0
	local r v np order
	for ((r = 1; r <= FTCOST_ROUNDS; r++)); do
		order="ft-on ft-off"
		((r % 2 == 0)) && order="ft-off ft-on"
		for v in $order; do
			local env=(env)
			[[ $v == ft-off ]] && env=(env FTMPI_HB_TIMEOUT=off)
			lat_cmd ftmpi
			launch ftcost "$v" "$r" "ftmpi latency $v" "${env[@]}" "${CMD[@]}"
			for np in $FTCOST_NPS; do
				coll_cmd ftmpi "$np" 8 8 30 "$RUNS"
				launch ftcost "$v" "$r" "ftmpi coll 8 B np $np $v" "${env[@]}" "${CMD[@]}"
			done
		done
	done
}

# mem_sample BIN NP: while a job runs, print the largest per-rank PSS and RSS
# (KiB) of the processes running BIN, over samples with all NP ranks alive.
mem_sample() {
	local bin=$1 np=$2 best_pss=0 best_rss=0
	while :; do
		local pids=() p
		# Reading only: the processes whose command line starts with BIN.
		for p in $(pgrep -f "^$bin( |\$)" || true); do pids+=("/proc/$p/smaps_rollup"); done
		if ((${#pids[@]} == np)); then
			local s ps rs
			# A rank may end while it is read (cat fails): that sample is partial, and smaller.
			s=$(cat "${pids[@]}" 2>/dev/null | awk '/^Pss:/ {p += $2} /^Rss:/ {r += $2} END {printf "%d %d", p, r}' || true)
			ps=${s% *} rs=${s#* }
			((ps > best_pss)) && best_pss=$ps
			((rs > best_rss)) && best_rss=$rs
		fi
		[[ -e $MEM_STOP ]] && break
		sleep 0.1
	done
	echo "$((best_pss / np)) $((best_rss / np))"
}

run_mem() {
	local np impl bin r=1
	for np in $MEM_NPS; do
		for impl in ftmpi openmpi; do
			case $impl in
			ftmpi) ((HAVE_FT)) || continue; bin=$FT/ftmpi-bench ;;
			openmpi) ((HAVE_MPI)) || continue; bin=$BUILD/openmpi/coll ;;
			esac
			coll_cmd "$impl" "$np" 8 8 30 "$MEM_RUNS"
			MEM_STOP=$LOGDIR/mem-stop
			rm -f "$MEM_STOP"
			local res=$LOGDIR/mem-$impl-$np
			mem_sample "$bin" "$np" >"$res" &
			local sp=$!
			local load1 rc=0
			load1=$(cut -d' ' -f1 /proc/loadavg)
			log "mem $impl np $np (load $load1)"
			timeout -k 10 "$TIMEOUT" "${CMD[@]}" >"$res.out" 2>"$res.err" || rc=$?
			touch "$MEM_STOP"
			wait "$sp" || true
			((rc == 0)) || fail "mem $impl np $np: exit $rc: $(tail -n 2 "$res.err" | tr '\n' ' ')"
			local pss=0 rss=0
			read -r pss rss <"$res" || true
			if ((pss == 0)); then
				fail "mem $impl np $np: never saw $np ranks running"
				continue
			fi
			echo "{\"name\":\"mem\",\"impl\":\"$impl\",\"transport\":\"shm\",\"np\":$np,\"pss_kib\":$pss,\"rss_kib\":$rss,\"unit\":\"KiB\",\"part\":\"mem\",\"variant\":\"-\",\"round\":$r,\"load1\":$load1}" |
				tee -a "$RESULTS"
		done
	done
}

want stab && run_stab
want coll && run_coll
want ftcost && run_ftcost
want mem && run_mem

write_table shmcmp "Shared memory: ftmpi against Open MPI and MPICH (issue 15)" "$(load_line)"
report_end
