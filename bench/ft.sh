#!/usr/bin/env bash
# Fault-tolerance benchmarks of ftmpi (issue 4, item 8): failure-free Agree
# vs Allreduce 8 B and Shrink; and, one SIGKILL per launch, the time until
# every survivor knows, Revoke + Shrink after the failure, and the first
# Agree after it. JSON lines on stdout (medians over LAUNCHES launches for
# the failure measurements: each launch prints one value per metric).
#
# Usage: bench/ft.sh            NPS="4 8 16" LAUNCHES=5
set -euo pipefail
cd "$(dirname "$0")/.."
NPS=${NPS:-"4 8 16"}
LAUNCHES=${LAUNCHES:-5}
B=${BUILD:-bench/build}/ftmpi
mkdir -p "$B"
go build -o "$B/ftmpirun" ./cmd/ftmpirun
go build -o "$B/ftmpi-bench" ./cmd/ftmpi-bench
for np in $NPS; do
  timeout 300 "$B/ftmpirun" -n "$np" "$B/ftmpi-bench" -bench ft -runs 5 -iters 300
  tmp=$(mktemp)
  for i in $(seq "$LAUNCHES"); do
    timeout 60 "$B/ftmpirun" -n "$np" --on-failure continue "$B/ftmpi-bench" -bench detect 2>/dev/null >>"$tmp" || true
  done
  # Median over launches of each metric (values are per-launch maxima over survivors).
  go run ./bench/ftmedian <"$tmp"
  rm -f "$tmp"
done
