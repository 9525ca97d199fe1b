#!/usr/bin/env bash
# Process replacement (issue 4, item 8): one SIGKILL per launch; the
# survivors revoke, shrink, spawn one process, merge and split back to the
# old ranks. JSON lines on stdout: per np, the median over LAUNCHES launches
# of each phase's slowest survivor and of kill -> restored communicator
# (the Open MPI 5 figures in shared/anchors.md were taken the same way).
#
# Usage: bench/replace.sh       NPS="4 8 16 32" LAUNCHES=7
set -euo pipefail
cd "$(dirname "$0")/.."
NPS=${NPS:-"4 8 16 32"}
LAUNCHES=${LAUNCHES:-7}
B=${BUILD:-bench/build}/ftmpi
mkdir -p "$B"
go build -o "$B/ftmpirun" ./cmd/ftmpirun
go build -o "$B/ftmpi-bench" ./cmd/ftmpi-bench
for np in $NPS; do
  tmp=$(mktemp)
  for i in $(seq "$LAUNCHES"); do
    timeout 60 "$B/ftmpirun" -n "$np" --on-failure continue "$B/ftmpi-bench" -bench replace 2>/dev/null >>"$tmp" || true
  done
  go run ./bench/ftmedian <"$tmp"
  rm -f "$tmp"
done
