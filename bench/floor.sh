#!/usr/bin/env bash
# floor.sh: the 1-byte hop's floor on this machine against Open MPI 4.1 and
# ftmpi in one run (issue 28 item 1; docs/benchmarks.md "Session 17: the
# 1-byte path"). ROUNDS rounds, each: bench/floor in its modes (one line a
# hop, a record polled by its sequence word, ftmpi's ring's tail + record;
# pinned and not; a sleeping hand-off by futex across CPUs and on one),
# Open MPI 4.1's latency (bench/c/latency.c, vader, bound
# to cores as mpirun does at np 2), and ftmpi's np2batch -op latency over
# shared memory (unbound, as ftmpirun's default, and --bind-to core).
# One line per launch with the 1-minute load; OUT names the result file.
# FTBIN: a directory holding ftmpirun and np2batch (default: built here).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROUNDS=${ROUNDS:-8}
OUT=${OUT:-$HERE/results/floor-$(date -u +%Y%m%d-%H%M%S).txt}
TMP=$(mktemp -d /tmp/ftmpi-floor.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
(cd "$HERE/.." && go build -o "$TMP/" ./bench/floor)
FTBIN=${FTBIN:-}
if [[ -z $FTBIN ]]; then
	FTBIN=$TMP
	(cd "$HERE/.." && go build -o "$TMP/" ./cmd/ftmpirun ./bench/np2batch)
fi
OMPI=$HERE/build/openmpi/latency
[[ -x $OMPI ]] || make -s -C "$HERE/c" BUILD="$HERE/build" "$OMPI"
root=()
((EUID == 0)) && root=(--allow-run-as-root)
load() { cut -d' ' -f1 /proc/loadavg; }
mkdir -p "$(dirname "$OUT")"
echo "# floor.sh $(date -u +%FT%TZ) $(git -C "$HERE" rev-parse --short HEAD) ROUNDS=$ROUNDS; ns a hop (half a round trip); Open MPI: median of 10 runs of 2000 round trips" | tee "$OUT"
for r in $(seq "$ROUNDS"); do
	for m in one seq ring; do
		for pin in false true; do
			echo "round $r load $(load) $("$TMP/floor" -mode "$m" -pin="$pin")" | tee -a "$OUT"
		done
	done
	echo "round $r load $(load) floor $("$TMP/floor" -mode ring -store mov -pin)" | tee -a "$OUT"
	# The sleeping hand-off (a wake-up and a context switch a hop): across
	# the two CPUs and on one.
	for w in -pin -onecpu; do
		echo "round $r load $(load) $("$TMP/floor" -mode wake -batches 100 "$w")" | tee -a "$OUT"
	done
	o=$(mpirun.openmpi "${root[@]}" -n 2 "$OMPI" -impl openmpi -transport shm -runs 10 -min 1 -max 1 | sed -n 's/.*"median":\([0-9.]*\).*/\1/p')
	echo "round $r load $(load) openmpi median $(awk -v u="$o" 'BEGIN{printf "%.1f", u*1000}') ns" | tee -a "$OUT"
	for bind in none core; do
		echo "round $r load $(load) ftmpi bind $bind $("$FTBIN/ftmpirun" -n 2 --bind-to "$bind" --transport shm "$FTBIN/np2batch" -op latency)" | tee -a "$OUT"
	done
done
