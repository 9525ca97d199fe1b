#!/usr/bin/env bash
# The same C source against three libraries: bench/c's programs compiled
# once with ftmpicc (ftmpi's libmpi), once with Open MPI's and once with
# MPICH's mpicc, run interleaved on this host (one launch of each per
# round), and ftmpi's Go API (ftmpi-bench) beside them, so that the cost of
# entering the library from C shows as C minus Go.
#
# Usage: bench/c-compare.sh
# Environment (all optional):
#   ROUNDS=5        interleaved rounds (the median over rounds is reported)
#   RUNS=5          repetitions inside each launch (the program's own median)
#   MAX=4096        largest message for latency (bytes)
#   PROGS="latency coll"   which bench/c programs (latency, coll)
#   COLL_NPS="2 4"  process counts for coll
#   BUILD=bench/build  SKIP_INSTALL=1  RESULTS=bench/results/c-<date>.jsonl
# stdout: JSON lines, then tables (bench/ratios) and the C-Go difference.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
ROUNDS=${ROUNDS:-5}
RUNS=${RUNS:-5}
MAX=${MAX:-4096}
PROGS=${PROGS:-"latency coll"}
COLL_NPS=${COLL_NPS:-"2 4"}
BUILD=${BUILD:-$HERE/build}
SKIP_INSTALL=${SKIP_INSTALL:-0}
STAMP=$(date +%Y%m%d-%H%M%S)
RESULTS=${RESULTS:-$HERE/results/c-$STAMP.jsonl}
TIMEOUT=${TIMEOUT:-300}
SKIPPED=()
FAILED=()
LOGDIR=$BUILD/logs/c-$STAMP
# shellcheck source=lib.sh
source "$HERE/lib.sh"
start_run c "$BUILD/ftmpic" "$BUILD/openmpi" "$BUILD/mpich"
LOAD_BEGIN=$(cut -d' ' -f1-3 /proc/loadavg)

HAVE_MPI=1
ensure_packages || { HAVE_MPI=0; skip "Open MPI and MPICH (packages missing)"; }

(cd "$ROOT" && go build -o "$BUILD/ftmpi/ftmpirun" ./cmd/ftmpirun && go build -o "$BUILD/ftmpi/ftmpi-bench" ./cmd/ftmpi-bench &&
	go build -o "$BUILD/ftmpi/ftmpicc" ./cmd/ftmpicc && go build -o "$BUILD/ratios" ./bench/ratios) >"$LOGDIR/go-build.log" 2>&1 ||
	{ cat "$LOGDIR/go-build.log" >&2; exit 1; }
CFLAGS=(-O2 -Wall -Wextra -Wno-stringop-overflow)
for p in $PROGS; do
	(cd "$HERE/c" && "$BUILD/ftmpi/ftmpicc" "${CFLAGS[@]}" -o "$BUILD/ftmpic/$p" "$p.c") >"$LOGDIR/cc-ftmpi-$p.log" 2>&1 ||
		{ cat "$LOGDIR/cc-ftmpi-$p.log" >&2; exit 1; }
	if ((HAVE_MPI)); then
		(cd "$HERE/c" && mpicc.openmpi "${CFLAGS[@]}" -o "$BUILD/openmpi/$p" "$p.c" && mpicc.mpich "${CFLAGS[@]}" -o "$BUILD/mpich/$p" "$p.c") \
			>"$LOGDIR/cc-$p.log" 2>&1 || { cat "$LOGDIR/cc-$p.log" >&2; exit 1; }
	fi
done
FTRUN=$BUILD/ftmpi/ftmpirun

# one LABEL CMD...: one launch; its JSON lines go to stdout and RESULTS.
N=0
one() {
	local label=$1 out rc=0
	shift
	N=$((N + 1))
	out=$LOGDIR/$N.out
	log "run $label: $*"
	timeout -k 10 "$TIMEOUT" "$@" >"$out" 2>"$LOGDIR/$N.err" || rc=$?
	grep '^{' "$out" | tee -a "$RESULTS" || true
	((rc == 0)) || fail "$label: exit $rc: $(tail -n 3 "$LOGDIR/$N.err" | tr '\n' ' ')"
}

for ((r = 1; r <= ROUNDS; r++)); do
	log "=== round $r of $ROUNDS (load $(cut -d' ' -f1 /proc/loadavg)) ==="
	for p in $PROGS; do
		nps=2
		[[ $p == coll ]] && nps=$COLL_NPS
		for np in $nps; do
			args=(-runs "$RUNS" -min 1 -max "$MAX")
			[[ $p == coll ]] && args=(-runs "$RUNS" -min 8 -max 8)
			one "ftmpi C $p np $np" "$FTRUN" -n "$np" "$BUILD/ftmpic/$p" -impl ftmpi -transport c-api "${args[@]}"
			gob=$p
			[[ $p == coll ]] && gob=coll
			one "ftmpi Go $p np $np" "$FTRUN" -n "$np" "$BUILD/ftmpi/ftmpi-bench" -bench "$gob" "${args[@]}"
			if ((HAVE_MPI)); then
				ompi_cmd "$np" -- "$BUILD/openmpi/$p" -impl openmpi -transport shm "${args[@]}"
				one "openmpi $p np $np" "${CMD[@]}"
				mpich_cmd "$np" "$BUILD/mpich/$p" -impl mpich -transport shm "${args[@]}"
				one "mpich $p np $np" "${CMD[@]}"
			fi
		done
	done
done

echo
echo "## bench/c through ftmpi's C library against Open MPI and MPICH ($ROUNDS interleaved rounds, medians; load at start $LOAD_BEGIN, at end $(cut -d' ' -f1-3 /proc/loadavg))"
"$BUILD/ratios" "$RESULTS" || true
echo
echo "## entering the library from C: ftmpi C (libmpi) minus ftmpi Go API, latency, medians over rounds"
awk -F'[:,]' '
	/"name":"latency"/ {
		impl = ""; tr = ""; size = ""; med = ""
		for (i = 1; i < NF; i++) {
			if ($i ~ /"impl"/) impl = $(i + 1)
			if ($i ~ /"transport"/) tr = $(i + 1)
			if ($i ~ /"size"/) size = $(i + 1)
			if ($i ~ /"median"/) med = $(i + 1)
		}
		if (impl != "\"ftmpi\"") next
		k = (tr == "\"c-api\"") ? "c" : "go"
		v[k, size] = v[k, size] " " med
		sizes[size] = 1
	}
	function median(s,   a, n, i, j, t) {
		n = split(s, a, " ")
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	END {
		print "| size (B) | C (us) | Go (us) | C - Go (us) |"
		print "|---|---|---|---|"
		for (s in sizes) if (v["c", s] != "" && v["go", s] != "") printf "| %s | %.3f | %.3f | %+.3f |\n", s, median(v["c", s]), median(v["go", s]), median(v["c", s]) - median(v["go", s])
	}' "$RESULTS" | sort -t'|' -k2 -n
report_end 2>/dev/null || true
((${#FAILED[@]} == 0))
