#!/usr/bin/env bash
# Spare processes (issue 14, item 7): kill -> restored communicator with one
# call, Comm.Replace (MPIX_Comm_replace), from a spare (ftmpirun --spares 1)
# against the same call with no spare (it spawns). One SIGKILL per launch
# (the last rank); the launches of the two modes are interleaved. JSON lines
# on stdout: per np and mode, the median over LAUNCHES launches of the
# slowest survivor's Replace call (ft_replace_call_max_{spares,spawn}) and
# of kill -> restored communicator (ft_replace_call_total_max_{spares,spawn}).
# The goal: spares at most half of spawn.
#
# Usage: bench/spares.sh       NPS="4 16" LAUNCHES=7
set -euo pipefail
cd "$(dirname "$0")/.."
NPS=${NPS:-"16"}
LAUNCHES=${LAUNCHES:-7}
B=${BUILD:-bench/build}/ftmpi
mkdir -p "$B"
go build -o "$B/ftmpirun" ./cmd/ftmpirun
go build -o "$B/ftmpi-bench" ./cmd/ftmpi-bench
for np in $NPS; do
  tmp=$(mktemp)
  for i in $(seq "$LAUNCHES"); do
    for spares in 1 0; do
      timeout 60 "$B/ftmpirun" -n "$np" --spares "$spares" --on-failure continue "$B/ftmpi-bench" -bench replace-call 2>/dev/null >>"$tmp" || true
    done
  done
  go run ./bench/ftmedian <"$tmp"
  rm -f "$tmp"
done
