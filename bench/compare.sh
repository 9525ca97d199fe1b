#!/usr/bin/env bash
# Side-by-side benchmarks: ftmpi against Debian's Open MPI and MPICH, same host,
# one run. See bench/README.md.
#
# Usage: bench/compare.sh            (everything, about 7 to 10 minutes on 2 cores)
#        COMPARE=p2p bench/compare.sh   (p2p | coll | start | all, or a comma list)
#
# Environment (all optional):
#   COMPARE=all           which parts to run: p2p, coll, start, all (comma list allowed)
#   RUNS=5                repetitions inside each benchmark (median reported)
#   START_RUNS=5          launches per (launcher, np) for job start (median reported)
#   COLL_NPS="2 4 8 16"   process counts for collectives
#   START_NPS="2 8 16"    process counts for job start
#   COLL_BUDGET_MS=30     target time per collective repetition (C benchmarks)
#   BUILD=bench/build     build directory (gitignored)
#   RESULTS=bench/results/<date>.jsonl   results file (tables go to the same name .md)
#   FTMPI_TRANSPORTS="tcp unix"   ftmpi transports for p2p
#   FTMPI_COLL_TRANSPORT=unix     ftmpi transport for coll (empty: ftmpirun's default)
#   FTMPI_START_TRANSPORT=        ftmpi transport for job start (empty: default)
#   SKIP_INSTALL=1        never call apt-get
#   P2P_TIMEOUT=300 COLL_TIMEOUT=300 START_TIMEOUT=60   seconds per launch
#
# stdout: the JSON result lines as they are produced, then the ratio tables.
# stderr: progress and skip/failure messages (lines starting with "#").
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)

COMPARE=${COMPARE:-all}
RUNS=${RUNS:-5}
START_RUNS=${START_RUNS:-5}
COLL_NPS=${COLL_NPS:-"2 4 8 16"}
START_NPS=${START_NPS:-"2 8 16"}
COLL_BUDGET_MS=${COLL_BUDGET_MS:-30}
BUILD=${BUILD:-$HERE/build}
STAMP=$(date +%Y%m%d-%H%M%S)
RESULTS=${RESULTS:-$HERE/results/$STAMP.jsonl}
FTMPI_TRANSPORTS=${FTMPI_TRANSPORTS:-"tcp unix"}
FTMPI_COLL_TRANSPORT=${FTMPI_COLL_TRANSPORT-unix}
FTMPI_START_TRANSPORT=${FTMPI_START_TRANSPORT-}
SKIP_INSTALL=${SKIP_INSTALL:-0}
P2P_TIMEOUT=${P2P_TIMEOUT:-300}
COLL_TIMEOUT=${COLL_TIMEOUT:-300}
START_TIMEOUT=${START_TIMEOUT:-60}

LAT_MAX=$((4 << 20))
BW_MAX=$((16 << 20))

LOGDIR=$BUILD/logs/$STAMP
mkdir -p "$BUILD" "$LOGDIR" "$(dirname "$RESULTS")"
: >"$RESULTS"

SKIPPED=()
FAILED=()
T_BEGIN=$(date +%s)

# shellcheck source=lib.sh
source "$HERE/lib.sh"

want() { # want PART: is PART selected by $COMPARE?
	local p
	for p in ${COMPARE//,/ }; do
		[[ $p == all || $p == "$1" ]] && return 0
	done
	return 1
}

for p in ${COMPARE//,/ }; do
	case $p in all | p2p | coll | start) ;; *)
		echo "unknown COMPARE part '$p' (want p2p, coll, start or all)" >&2
		exit 2
		;;
	esac
done

# ---------------------------------------------------------------- packages
HAVE_MPI=1
if ! ensure_packages; then
	HAVE_MPI=0
	skip "Open MPI and MPICH (packages missing and not installable)"
fi

# ---------------------------------------------------------------- builds
if ((HAVE_MPI)); then
	log "building C benchmarks into $BUILD/{mpich,openmpi}"
	if ! make -s -C "$HERE/c" BUILD="$BUILD" >"$LOGDIR/make.log" 2>&1; then
		cat "$LOGDIR/make.log" >&2
		fail "building the C benchmarks"
		HAVE_MPI=0
	fi
fi

HAVE_FTMPIRUN=0 HAVE_FTBENCH=0 HAVE_FTHELLO=0
mkdir -p "$BUILD/ftmpi"
go_build "$BUILD/ftmpi/ftmpirun" ./cmd/ftmpirun && HAVE_FTMPIRUN=1
go_build "$BUILD/ftmpi/ftmpi-bench" ./cmd/ftmpi-bench && HAVE_FTBENCH=1
go_build "$BUILD/ftmpi/hello" ./examples/hello && HAVE_FTHELLO=1
RATIOS_OK=0
if (cd "$ROOT" && go build -o "$BUILD/ratios" ./bench/ratios) >"$LOGDIR/go-build-ratios.log" 2>&1; then
	RATIOS_OK=1
else
	fail "go build ./bench/ratios: $(head -n 3 "$LOGDIR/go-build-ratios.log" | tr '\n' ' ')"
fi

FTRUN=$BUILD/ftmpi/ftmpirun
FTBENCH=$BUILD/ftmpi/ftmpi-bench

# ---------------------------------------------------------------- launchers
# run_json LABEL TIMEOUT CMD...: run one benchmark launch; its JSON lines go to
# stdout and the results file, everything else to a log. Returns 1 on failure,
# 2 (a skip, not a failure) if the program says it does not know the benchmark.
N_LAUNCH=0
run_json() {
	local label=$1 to=$2
	shift 2
	N_LAUNCH=$((N_LAUNCH + 1))
	local out="$LOGDIR/$N_LAUNCH.out" err="$LOGDIR/$N_LAUNCH.err" rc=0
	log "run $label: $*"
	timeout -k 10 "$to" "$@" >"$out" 2>"$err" || rc=$?
	grep '^{' "$out" | tee -a "$RESULTS" || true
	if ((rc != 0)); then
		if ! grep -q '^{' "$out" && grep -qi 'unknown benchmark' "$err"; then
			skip "$label: not implemented yet ($(grep -i -m1 'unknown benchmark' "$err"))"
			return 2
		fi
		if ((rc == 124 || rc == 137)); then
			fail "$label: timed out after ${to}s (partial results kept; log $err)"
		else
			fail "$label: exit $rc: $(tail -n 3 "$err" | tr '\n' ' ')"
		fi
		return 1
	fi
	if ! grep -q '^{' "$out"; then
		fail "$label: no JSON output ($(tail -n 3 "$err" | tr '\n' ' '))"
		return 1
	fi
	return 0
}

# ---------------------------------------------------------------- MPICH over TCP
# Debian 12's MPICH 4.0.2 is built with the ch4:ucx device, so intra-node
# traffic goes through UCX shared memory (sysv/cma) by default. UCX_TLS=tcp,self
# restricts UCX to TCP sockets. We verify that instead of assuming it: UCX's info
# log must show TCP endpoints and no shared-memory transport.
MPICH_TCP=0
check_mpich_tcp() {
	local probe=$LOGDIR/mpich-tcp-probe.txt
	if ! UCX_TLS=tcp,self UCX_LOG_LEVEL=info timeout -k 5 60 \
		mpirun.mpich -n 2 "$BUILD/mpich/latency" -impl mpich -transport tcp -max 1 -runs 1 >"$probe" 2>&1; then
		log "MPICH over TCP: probe failed: $(tail -n 2 "$probe" | tr '\n' ' ')"
		return 1
	fi
	if ! grep 'ep_cfg' "$probe" | grep -q 'tcp/'; then
		log "MPICH over TCP: UCX shows no TCP endpoint; not available"
		return 1
	fi
	if grep 'ep_cfg' "$probe" | grep -Eq '(sysv|posix|cma|xpmem|knem)/memory'; then
		log "MPICH over TCP: UCX still uses shared memory with UCX_TLS=tcp,self; not available"
		return 1
	fi
	log "MPICH over TCP: verified (UCX_TLS=tcp,self: endpoints $(grep -o 'tag([^)]*)' "$probe" | sort -u | tr '\n' ' '))"
	return 0
}

# ---------------------------------------------------------------- p2p
run_p2p() {
	log "=== point to point, np 2 (RUNS=$RUNS) ==="
	if ((HAVE_MPI)); then
		if check_mpich_tcp; then
			MPICH_TCP=1
		else
			skip "MPICH over TCP (UCX_TLS=tcp,self did not take effect; see above)"
		fi
	fi
	if ((!HAVE_FTMPIRUN || !HAVE_FTBENCH)); then
		skip "ftmpi p2p (ftmpirun or ftmpi-bench not built)"
	fi
	local b max t
	for b in latency bw bibw; do
		max=$BW_MAX
		[[ $b == latency ]] && max=$LAT_MAX
		local args=(-runs "$RUNS" -min 1 -max "$max")
		if ((HAVE_FTMPIRUN && HAVE_FTBENCH)); then
			for t in $FTMPI_TRANSPORTS; do
				run_json "ftmpi/$t $b" "$P2P_TIMEOUT" "$FTRUN" -n 2 --transport "$t" "$FTBENCH" -bench "$b" "${args[@]}" || true
			done
		fi
		if ((HAVE_MPI)); then
			ompi_cmd 2 -- "$BUILD/openmpi/$b" -impl openmpi -transport shm "${args[@]}"
			run_json "openmpi/shm $b" "$P2P_TIMEOUT" "${CMD[@]}" || true
			ompi_cmd 2 --mca pml ob1 --mca btl tcp,self -- "$BUILD/openmpi/$b" -impl openmpi -transport tcp "${args[@]}"
			run_json "openmpi/tcp $b" "$P2P_TIMEOUT" "${CMD[@]}" || true
			mpich_cmd 2 "$BUILD/mpich/$b" -impl mpich -transport shm "${args[@]}"
			run_json "mpich/shm $b" "$P2P_TIMEOUT" "${CMD[@]}" || true
			if ((MPICH_TCP)); then
				run_json "mpich/tcp $b" "$P2P_TIMEOUT" env UCX_TLS=tcp,self \
					mpirun.mpich -n 2 "$BUILD/mpich/$b" -impl mpich -transport tcp "${args[@]}" || true
			fi
		fi
	done
}

# ---------------------------------------------------------------- collectives
run_coll() {
	log "=== collectives, np $COLL_NPS (RUNS=$RUNS) ==="
	local ft=0 np
	if ((HAVE_FTMPIRUN && HAVE_FTBENCH)); then
		ft=1
	else
		skip "ftmpi collectives (ftmpirun or ftmpi-bench not built)"
	fi
	local fttr=()
	[[ -n $FTMPI_COLL_TRANSPORT ]] && fttr=(--transport "$FTMPI_COLL_TRANSPORT")
	for np in $COLL_NPS; do
		local args=(-runs "$RUNS")
		if ((ft)); then
			local rc=0
			run_json "ftmpi coll np $np" "$COLL_TIMEOUT" "$FTRUN" -n "$np" "${fttr[@]}" "$FTBENCH" -bench coll "${args[@]}" || rc=$?
			((rc == 2)) && ft=0
		fi
		if ((HAVE_MPI)); then
			ompi_cmd "$np" -- "$BUILD/openmpi/coll" -impl openmpi -transport shm -budget "$COLL_BUDGET_MS" "${args[@]}"
			run_json "openmpi coll np $np" "$COLL_TIMEOUT" "${CMD[@]}" || true
			mpich_cmd "$np" "$BUILD/mpich/coll" -impl mpich -transport shm -budget "$COLL_BUDGET_MS" "${args[@]}"
			run_json "mpich coll np $np" "$COLL_TIMEOUT" "${CMD[@]}" || true
		fi
	done
}

# ---------------------------------------------------------------- job start
run_start() {
	log "=== job start (launcher + init + barrier + finalize), np $START_NPS, $START_RUNS launches each ==="
	local launchers=()
	if ((HAVE_MPI)); then launchers+=(openmpi mpich); fi
	if ((HAVE_FTMPIRUN && HAVE_FTHELLO)); then
		launchers+=(ftmpi)
	else
		skip "ftmpi job start (ftmpirun or examples/hello not built)"
	fi
	((${#launchers[@]} == 0)) && return 0
	local fttr=()
	[[ -n $FTMPI_START_TRANSPORT ]] && fttr=(--transport "$FTMPI_START_TRANSPORT")
	local np l i
	for np in $START_NPS; do
		declare -A times=()
		declare -A bad=()
		# One untimed launch each to warm caches, then interleave the timed
		# launches so slow drift hits every launcher alike.
		for ((i = 0; i <= START_RUNS; i++)); do
			for l in "${launchers[@]}"; do
				[[ -n ${bad[$l]:-} ]] && continue
				case $l in
				openmpi) ompi_cmd "$np" -- "$BUILD/openmpi/hello" ;;
				mpich) mpich_cmd "$np" "$BUILD/mpich/hello" ;;
				ftmpi) CMD=("$FTRUN" -n "$np" "${fttr[@]}" "$BUILD/ftmpi/hello") ;;
				esac
				local t0 t1 rc=0
				t0=$(now_ns)
				timeout -k 5 "$START_TIMEOUT" "${CMD[@]}" >"$LOGDIR/start-$l-$np.out" 2>"$LOGDIR/start-$l-$np.err" || rc=$?
				t1=$(now_ns)
				if ((rc != 0)); then
					bad[$l]=1
					fail "$l job start np $np: exit $rc: $(tail -n 2 "$LOGDIR/start-$l-$np.err" | tr '\n' ' ')"
					continue
				fi
				((i == 0)) && continue
				times[$l]="${times[$l]:-} $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", (b - a) / 1e6}')"
			done
		done
		for l in "${launchers[@]}"; do
			[[ -n ${bad[$l]:-} || -z ${times[$l]:-} ]] && continue
			local med ts
			read -r -a ts <<<"${times[$l]}"
			med=$(median_of "${ts[@]}")
			log "start $l np $np: launches (ms):${times[$l]}"
			printf '{"name":"start","impl":"%s","transport":"default","np":%d,"size":0,"median":%.3f,"unit":"ms","runs":%d}\n' \
				"$l" "$np" "$med" "$START_RUNS" | tee -a "$RESULTS"
		done
		unset times bad
	done
}

LOAD_BEGIN=$(cut -d' ' -f1-3 /proc/loadavg)
load_check "before the benchmarks"
want p2p && run_p2p
want start && run_start
want coll && run_coll

# ---------------------------------------------------------------- report
TABLES=${RESULTS%.jsonl}.md
if ((RATIOS_OK)) && [[ -s $RESULTS ]]; then
	{
		echo "# ftmpi vs Open MPI vs MPICH ($(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(hostname))"
		echo
		echo "Medians; see bench/README.md for what each number is. Load average before: $LOAD_BEGIN, after: $(cut -d' ' -f1-3 /proc/loadavg)."
		echo
		"$BUILD/ratios" "$RESULTS"
	} >"$TABLES" 2>>"$LOGDIR/ratios.err" || fail "ratio tables"
	echo
	cat "$TABLES"
fi

log "results: $RESULTS"
[[ -f $TABLES ]] && log "tables:  $TABLES"
log "logs:    $LOGDIR"
if ((MPICH_TCP)); then
	log "MPICH over TCP: measured with UCX_TLS=tcp,self (verified from UCX's endpoint log)"
elif want p2p && ((HAVE_MPI)); then
	log "MPICH over TCP: NOT measured (UCX_TLS=tcp,self could not be verified)"
fi
for s in "${SKIPPED[@]+"${SKIPPED[@]}"}"; do log "skipped: $s"; done
for s in "${FAILED[@]+"${FAILED[@]}"}"; do log "failed:  $s"; done
log "elapsed: $(($(date +%s) - T_BEGIN)) s"
((${#FAILED[@]} == 0))
