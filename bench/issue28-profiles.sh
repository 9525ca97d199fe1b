#!/usr/bin/env bash
# Profiles of issue 28's missed goals (docs/benchmarks.md, "Issue 28: where
# the time goes, profiled"): for each case, every rank's Go CPU profile
# (ftmpi-bench -cpuprofile, FTMPI_BENCH_PROFILE_HZ samples a second, each
# timed operation labelled phase=NAME) and a system-wide perf profile and
# count of context switches, migrations and CPU time (perf stat) over the
# same launch. Writes OUT/<case>/ (rank profiles, perf.data) and the top
# lists OUT/<case>.{pprof,perf,stat}.txt, OUT/launches.txt (per launch:
# time, load, the bench's JSON).
#
#   bench/issue28-profiles.sh                 # every case
#   CASES="lat1 coll8-np2" bench/issue28-profiles.sh
#
# Cases: lat1 (1 B ping-pong, shm, np 2), coll8-np2, coll8-np16 (Barrier,
# Allreduce 8 B), coll1m-np4, coll1m-np8, coll1m-np16 (Bcast, Allreduce
# 1 MiB), ft-np8, ft-np16 (agree, shrink, no failure), detect-np8,
# detect-np16 (revoke + shrink, agree after a failure: DETECT_LAUNCHES
# launches, profiles merged), stab (10 launches of the 1 B latency as
# bench/shm-compare.sh runs it, each under perf stat: voluntary context
# switches and migrations against the launch's latency), tcpbw (bandwidth
# 1 MiB between two namespace hosts over TCP, 3 launches; not in the
# default list: it brings namespace hosts up, root only).
#
# perf: Debian's linux-perf, installed here if missing (not in CI).
# Environment: OUT (default bench/results/issue28-profiles-<date>), HZ
# (Go profile rate, default 100: measured on this VM, a raised rate loses
# samples, 1000 Hz kept 25% of the CPU time perf stat counted, 100 Hz 79%),
# DETECT_HZ (the detect cases, whose phases last milliseconds: 1000),
# PERF_HZ (perf record, default 2999), DETECT_LAUNCHES (default 6),
# NO_PERF=1 (Go profiles only).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
OUT=${OUT:-$HERE/results/issue28-profiles-$(date -u +%Y%m%d)}
HZ=${HZ:-100}
DETECT_HZ=${DETECT_HZ:-1000}
PERF_HZ=${PERF_HZ:-2999}
DETECT_LAUNCHES=${DETECT_LAUNCHES:-6}
CASES=${CASES:-"lat1 coll8-np2 coll8-np16 coll1m-np4 coll1m-np8 coll1m-np16 ft-np8 ft-np16 detect-np8 detect-np16 stab"}
BIN=$(mktemp -d)
trap 'rm -rf "$BIN"' EXIT
mkdir -p "$OUT"

if [[ ${NO_PERF:-0} != 1 ]] && ! command -v perf >/dev/null; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q linux-perf >&2
fi
(cd "$ROOT" && go build -o "$BIN/" ./cmd/ftmpirun ./cmd/ftmpi-bench)
REV=$(cd "$ROOT" && git rev-parse --short HEAD)

PREFIX=() # launch: what runs ftmpirun (a namespace host's ip netns exec)
load() { cut -d' ' -f1-3 /proc/loadavg; }

# launch CASE NP LAUNCHER_ARGS... -- BENCH_ARGS...: one profiled launch into
# OUT/CASE (rank profiles CASE/cpu.<launch>.<rank>).
launch() {
	local c=$1 np=$2 k=$3
	shift 3
	local largs=() bargs=()
	while [[ $1 != -- ]]; do largs+=("$1"); shift; done
	shift
	bargs=("$@")
	mkdir -p "$OUT/$c"
	local cmd=("${PREFIX[@]}" "$BIN/ftmpirun" -n "$np" "${largs[@]}" -x FTMPI_BENCH_PROFILE_HZ="$HZ"
		"$BIN/ftmpi-bench" "${bargs[@]}" -cpuprofile "$OUT/$c/cpu.$k")
	local l0 t0 res
	l0=$(load)
	t0=$(date -u +%H:%M:%S)
	if [[ ${NO_PERF:-0} == 1 ]]; then
		res=$("${cmd[@]}" 2>"$OUT/$c/stderr.$k" || true)
	else
		res=$(perf stat -a -x, -o "$OUT/$c/stat.$k" -e task-clock,context-switches,cpu-migrations,page-faults \
			perf record -a -g -F "$PERF_HZ" -o "$OUT/$c/perf.$k.data" -q -- "${cmd[@]}" 2>"$OUT/$c/stderr.$k" || true)
	fi
	printf '%s %s launch %s at %s load %s -> %s: %s\n' "$REV" "$c" "$k" "$t0" "$l0" "$(load)" "$(echo "$res" | tr '\n' ' ')" >>"$OUT/launches.txt"
}

# report CASE [FOCUS...]: top lists of the merged Go profiles (all, and per
# phase label FOCUS) and of perf.
report() (
	set +e +o pipefail # head closes the pipes early
	local c=$1
	shift
	local profs=("$OUT/$c"/cpu.*)
	{
		echo "# $c: go tool pprof -top over ${#profs[@]} rank profiles ($REV, $HZ Hz; read the shares, not the seconds)"
		go tool pprof -top -nodecount=35 "$BIN/ftmpi-bench" "${profs[@]}" 2>/dev/null
		for f in "$@"; do
			echo
			echo "# phase=$f, flat"
			go tool pprof -top -nodecount=30 -tagfocus "phase=$f" "$BIN/ftmpi-bench" "${profs[@]}" 2>/dev/null
			echo
			echo "# phase=$f, cumulative"
			go tool pprof -top -cum -nodecount=30 -tagfocus "phase=$f" "$BIN/ftmpi-bench" "${profs[@]}" 2>/dev/null
		done
	} >"$OUT/$c.pprof.txt"
	{
		echo "# $c: shares of the ranks' CPU time (bench/issue28-shares.py)"
		"$HERE/issue28-shares.py" "" "${profs[@]}"
		for f in "$@"; do "$HERE/issue28-shares.py" "$f" "${profs[@]}"; done
	} >"$OUT/$c.shares.txt"
	[[ ${NO_PERF:-0} == 1 ]] && return 0
	{
		for d in "$OUT/$c"/perf.*.data; do
			echo "# $d: perf report, system-wide, by command and shared object"
			perf report -i "$d" --no-children --sort comm,dso --stdio -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -20
			echo "# $d: ftmpi-bench's processes (and ftmpirun's) only, by symbol (shares of all samples)"
			perf report -i "$d" --no-children --comm ftmpi-bench,ftmpirun --sort dso,sym --stdio -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -45
		done
	} >"$OUT/$c.perf.txt"
	cat "$OUT/$c"/stat.* >"$OUT/$c.stat.txt"
)

for c in $CASES; do
	echo "# $c at $(date -u +%H:%M:%S), load $(load)" >&2
	case $c in
	lat1)
		launch "$c" 2 1 --transport shm -- -bench latency -min 1 -max 1 -runs 3 -iters 50000
		report "$c"
		;;
	coll8-np*)
		np=${c#coll8-np}
		launch "$c" "$np" 1 --transport shm -- -bench coll -ops barrier,allreduce -min 8 -max 8 -runs 5 -budget 300ms
		report "$c" barrier-0 allreduce-8
		;;
	coll1m-np*)
		np=${c#coll1m-np}
		launch "$c" "$np" 1 --transport shm -- -bench coll -ops bcast,allreduce -min 1048576 -max 1048576 -runs 3 -budget 500ms
		report "$c" bcast-1048576 allreduce-1048576
		;;
	ft-np*)
		np=${c#ft-np}
		launch "$c" "$np" 1 --transport shm -- -bench ft -runs 3 -iters 3000
		report "$c" agree shrink
		;;
	sched-ft-np* | sched-coll8-np*)
		# The scheduler's view: how long the ranks wait runnable for a
		# core (perf sched latency), over -bench ft or -bench coll 8 B.
		np=${c##*-np}
		b=(-bench ft -runs 3 -iters 1000)
		[[ $c == sched-coll8-* ]] && b=(-bench coll -ops barrier,allreduce -min 8 -max 8 -runs 5 -budget 100ms)
		mkdir -p "$OUT/$c"
		l0=$(load)
		res=$(perf sched record -a -o "$OUT/$c/sched.data" -- "$BIN/ftmpirun" -n "$np" --transport shm "$BIN/ftmpi-bench" "${b[@]}" 2>"$OUT/$c/stderr.1" || true)
		printf '%s %s launch 1 load %s -> %s: %s\n' "$REV" "$c" "$l0" "$(load)" "$(echo "$res" | tr '\n' ' ')" >>"$OUT/launches.txt"
		{
			echo "# $c: perf sched latency (every task; ftmpi-bench's ranks are the ftmpi-bench:PID rows)"
			perf sched latency -i "$OUT/$c/sched.data" --sort runtime 2>/dev/null | grep -E 'Task|---|ftmpi-bench|TOTAL' | head -40
			echo "# the busiest other tasks"
			perf sched latency -i "$OUT/$c/sched.data" --sort runtime 2>/dev/null | grep -vE 'ftmpi-bench' | head -16
		} >"$OUT/$c.sched.txt" || true
		rm -f "$OUT/$c/sched.data"
		;;
	detect-np*)
		np=${c#detect-np}
		for k in $(seq 1 "$DETECT_LAUNCHES"); do
			HZ=$DETECT_HZ launch "$c" "$np" "$k" --transport shm --on-failure continue -- -bench detect
		done
		HZ=$DETECT_HZ report "$c" revoke-shrink agree-new-comm agree-failed-comm
		;;
	stab)
		for k in $(seq 1 10); do
			mkdir -p "$OUT/$c"
			l0=$(load)
			res=$(perf stat -x, -o "$OUT/$c/stat.$k" -e task-clock,context-switches,cpu-migrations \
				"$BIN/ftmpirun" -n 2 --transport shm "$BIN/ftmpi-bench" -bench latency -runs 5 -min 1 -max 1 2>"$OUT/$c/stderr.$k" || true)
			printf '%s stab launch %s load %s: %s\n' "$REV" "$k" "$l0" "$res" >>"$OUT/launches.txt"
			{
				echo "# launch $k: $res"
				grep -v '^#' "$OUT/$c/stat.$k" | grep -v '^$'
			} >>"$OUT/$c.stat.txt"
		done
		;;
	tcpbw)
		# Two namespace hosts (internal/nshosts), one rank each: TCP between
		# them, as bench/xhost-compare.sh's p2p part.
		for p in nft:nftables sshd:openssh-server; do
			command -v "${p%%:*}" >/dev/null || [[ -x /usr/sbin/${p%%:*} ]] ||
				DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${p#*:}" >&2
		done
		nsdir=$(mktemp -d)
		up=$(cd "$ROOT" && go run ./internal/nshosts/nshostsctl up 2 "$nsdir/h")
		subnet=$(echo "$up" | sed -n 's/^hosts h1..h2 on \([^ ]*\) and.*/\1/p')
		ns1=$(echo "$up" | sed -n 's/^run on h1: *ip netns exec \([^ ]*\) .*/\1/p')
		sshcmd=$(echo "$up" | sed -n "s/.*--launch-agent '\\([^']*\\)'.*/\\1/p")
		for k in 1 2 3; do
			PREFIX=(ip netns exec "$ns1" env "FTMPI_SSH=$sshcmd")
			launch "$c" 2 "$k" --host h1:1,h2:1 --interface "$subnet" -- -bench bw -min 1048576 -max 1048576 -runs 5 -bytes 134217728
			PREFIX=()
		done
		(cd "$ROOT" && go run ./internal/nshosts/nshostsctl down "$nsdir/h") || true
		rm -rf "$nsdir"
		report "$c"
		;;
	*)
		echo "unknown case $c" >&2
		exit 2
		;;
	esac
done
echo "# done at $(date -u +%H:%M:%S), load $(load); results in $OUT" >&2
