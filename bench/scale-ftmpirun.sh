#!/usr/bin/env bash
# scale-ftmpirun.sh - ftmpirun -n N of bench/scaleulfm on this host with one
# rank killed after the first round (issue 24 item 4): the start-up's time
# (launch to every rank past Init and a Barrier; and to the last rank's return
# from Init), the survivors' count and the
# repair's time (kill -> the shrunk communicator's result), wall, user and
# system CPU of the whole job, the largest process's resident memory; each
# run under a timeout, anything left behind killed.
#
#   bench/scale-ftmpirun.sh                     (SIZES=500; a minute on 2 cores)
#   SIZES=500,1000,2000 RUNS=1 TIMEOUT=600 bench/scale-ftmpirun.sh
#   BUILDS="old=/tmp/old new=." SIZES=500 RUNS=2 bench/scale-ftmpirun.sh   (source trees, interleaved)
#
# n >= 1000 on 2 cores starves everything else on the host for minutes.
# stdout: one JSON line per run, with the load before it.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
SIZES=${SIZES:-500}
RUNS=${RUNS:-1}
TIMEOUT=${TIMEOUT:-600}
VICTIM=${VICTIM:-7}
BUILDS=${BUILDS:-cur=.}
# PROG: the scaleulfm source every build runs (default: each tree's own;
# bench/scaleulfm of this tree measures Init in older trees too).
PROG=${PROG:-}
BUILD=${BUILD:-bench/build/scale}
mkdir -p "$BUILD"
BUILD=$(cd "$BUILD" && pwd)
names=()
for b in $BUILDS; do
	name=${b%%=*} src=${b#*=}
	(cd "$src" && go build -o "$BUILD/$name/" ./cmd/ftmpirun ./bench/scaleulfm)
	if [[ -n $PROG && $(cd "$src" && pwd) != "$ROOT" ]]; then # PROG's program, built against that tree's mpi
		mkdir -p "$src/bench/scaleulfm-cur" && cp "$PROG"/*.go "$src/bench/scaleulfm-cur/"
		(cd "$src" && go build -o "$BUILD/$name/scaleulfm" ./bench/scaleulfm-cur)
	fi
	names+=("$name")
done
IFS=, read -r -a sizes <<<"$SIZES"
for n in "${sizes[@]}"; do
	for ((r = 0; r < RUNS; r++)); do
		order=("${names[@]}")
		if ((r % 2 == 1)); then # swap the order every other round
			mapfile -t order < <(printf '%s\n' "${names[@]}" | tac)
		fi
		for name in "${order[@]}"; do
			load=$(cut -d' ' -f1 /proc/loadavg)
			out=$(mktemp)
			export SCALEULFM_T0=$(date +%s%N)
			set +e
			/usr/bin/time -f "time: wall=%e user=%U sys=%S maxrss_kb=%M" timeout "$TIMEOUT" \
				"$BUILD/$name/ftmpirun" -n "$n" --on-failure continue "$BUILD/$name/scaleulfm" -victim "$VICTIM" >"$out" 2>&1
			rc=$?
			set -e
			# Ranks a timeout left behind: this build's binary, killed by id.
			left=0
			for pid in $(pgrep -f "^$BUILD/$name/scaleulfm" || true); do
				kill -KILL "$pid" 2>/dev/null && left=$((left + 1))
			done
			startup=$(sed -n 's/^startup: .*startup_ms=\([0-9.]*\).*/\1/p' "$out")
			initms=$(sed -n 's/^startup: .*init_ms=\([0-9.]*\).*/\1/p' "$out")
			res=$(sed -n 's/^result: ranks=[0-9]* survivors=\([0-9]*\) .*repair_ms=\([0-9.]*\).*/\1 \2/p' "$out")
			read -r survivors repair <<<"${res:-null null}"
			read -r wall user sys rss < <(sed -n 's/^time: wall=\([0-9.]*\) user=\([0-9.]*\) sys=\([0-9.]*\) maxrss_kb=\([0-9]*\).*/\1 \2 \3 \4/p' "$out")
			printf '{"name":"scaleulfm","build":"%s","n":%d,"rc":%d,"init_ms":%s,"startup_ms":%s,"survivors":%s,"repair_ms":%s,"wall_s":%s,"user_s":%s,"sys_s":%s,"maxrss_kb":%s,"left_behind":%d,"load":%s}\n' \
				"$name" "$n" "$rc" "${initms:-null}" "${startup:-null}" "$survivors" "$repair" "${wall:-null}" "${user:-null}" "${sys:-null}" "${rss:-null}" "$left" "$load"
			rm -f "$out"
		done
	done
done
