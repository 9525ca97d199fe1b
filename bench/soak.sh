#!/usr/bin/env bash
# Soak (issue 11 item 15, "tests that never flake"): the whole test suite N
# times in a row with a CPU hog busy on every core beside it, alternately
# with and without the race detector; one line per run (pass or FAIL, how
# long, the log), a summary, and exit status 0 only if every run passed.
#
# Usage: bench/soak.sh [N=10] [MODE=alt|race|plain] [HOGS=<cores>] [PKGS=./...] [TIMEOUT=30m] [LOGS=bench/build/soak]
#   N        number of runs
#   MODE     alt: runs 1, 3, 5, ... with -race, 2, 4, ... without; race or
#            plain: every run the same
#   HOGS     busy loops beside the tests (default: the number of cores; 0: none)
#   PKGS     packages to test
#   TIMEOUT  go test -timeout of each run (a hang fails the run, it does not
#            stop the soak)
#   LOGS     where each run's output goes (run-K.log)
#
# The hogs are this script's own children (a shell busy loop each), killed
# by their process ids when the script exits, however it exits (with the
# go test of an interrupted run).
set -uo pipefail
cd "$(dirname "$0")/.."
N=${N:-${1:-10}}
MODE=${MODE:-alt}
HOGS=${HOGS:-$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)}
PKGS=${PKGS:-./...}
TIMEOUT=${TIMEOUT:-30m}
LOGS=${LOGS:-bench/build/soak}

case $MODE in alt|race|plain) ;; *) echo "soak: MODE=$MODE: want alt, race or plain" >&2; exit 2 ;; esac
case $N in ''|*[!0-9]*) echo "soak: N=$N: want a number of runs" >&2; exit 2 ;; esac
case $HOGS in ''|*[!0-9]*) echo "soak: HOGS=$HOGS: want a number of busy loops" >&2; exit 2 ;; esac
mkdir -p "$LOGS" || exit 2

hogs=() tpid=
stop_hogs() {
  local p
  if [[ -n $tpid ]]; then kill "$tpid" 2>/dev/null; fi # an interrupted run's go test
  for p in "${hogs[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${hogs[@]}"; do wait "$p" 2>/dev/null; done
  hogs=()
}
trap stop_hogs EXIT
trap 'exit 130' INT TERM
for ((h = 0; h < HOGS; h++)); do
  ( trap - INT TERM; while :; do :; done ) &
  hogs+=("$!")
done
echo "# soak: $N runs of go test $PKGS (mode $MODE), $HOGS CPU hogs (pids ${hogs[*]:-none}), logs in $LOGS"

passed=0
for ((k = 1; k <= N; k++)); do
  race=
  if [[ $MODE == race || ( $MODE == alt && $((k % 2)) == 1 ) ]]; then race=-race; fi
  log="$LOGS/run-$k.log"
  start=$(date +%s)
  go test $race -count=1 -timeout "$TIMEOUT" $PKGS >"$log" 2>&1 &
  tpid=$!
  wait "$tpid"
  code=$?
  tpid=
  took=$(( $(date +%s) - start ))
  if [[ $code == 0 ]]; then
    passed=$((passed + 1))
    printf 'run %d/%d %-6s pass  %4ds  %s\n' "$k" "$N" "${race:-plain}" "$took" "$log"
  else
    failed=$(grep -E '^(--- FAIL|FAIL|panic:)' "$log" | head -5 | tr '\n' ' ')
    printf 'run %d/%d %-6s FAIL  %4ds  %s  %s\n' "$k" "$N" "${race:-plain}" "$took" "$log" "$failed"
  fi
done
echo "# soak: $passed of $N runs passed"
[[ $passed == "$N" ]]
