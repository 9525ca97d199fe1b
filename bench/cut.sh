#!/usr/bin/env bash
# Cut messages (issue 10): RUNS jobs per message size in which the sender
# (rank 1 of 2) SIGKILLs itself inside a message, after it wrote a given
# number of bytes (internal/e2e/testdata/cutcheck; the same offsets as
# TestSenderKilledInsideMessage), under --on-failure continue. The
# receiver's Recv must return ErrProcFailed with every earlier message
# intact; a hang (exit 124, --timeout) or a leftover process is a failure.
#
# Usage: bench/cut.sh [RUNS=200] [TIMEOUT=30s]   (environment variables)
set -uo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-200}
TIMEOUT=${TIMEOUT:-30s}
B=${BUILD:-bench/build}/cut
mkdir -p "$B"
go build -o "$B/ftmpirun" ./cmd/ftmpirun || exit 1
go build -o "$B/cutcheck" ./internal/e2e/testdata/cutcheck || exit 1

total_fail=0
for mode in large medium; do
  ok=0 hangs=0 wrong=0 orphans=0
  for i in $(seq 0 $((RUNS-1))); do
    if [ "$mode" = large ]; then off=$(( (4<<20) + i*9876543 % (120<<20) ))
    else off=$(( 100000 + i*777777 % (8<<20) )); fi
    mark="cut-$$-$mode-$i"
    out=$(FTMPI_TESTMARK=$mark "$B/ftmpirun" -n 2 --on-failure continue --timeout "$TIMEOUT" \
          "$B/cutcheck" "$mode" "$off" 2>"$B/last.err")
    code=$?
    got=$(printf '%s\n' "$out" | grep '^result:' | tail -1)
    left=$(grep -l "FTMPI_TESTMARK=$mark" /proc/[0-9]*/environ 2>/dev/null | wc -l)
    if [ "$left" -gt 0 ]; then orphans=$((orphans+1)); fi
    if [ "$code" -eq 124 ]; then
      hangs=$((hangs+1)); echo "# $mode run $i (kill after $off bytes): HANG" >&2
      cp "$B/last.err" "$B/$mode-$i.err"
    elif [ "$code" -eq 0 ] && [[ "$got" == "result: cut procfailed=true intact=true "* ]]; then
      ok=$((ok+1))
    else
      wrong=$((wrong+1)); echo "# $mode run $i (kill after $off bytes): exit $code: $got" >&2
      cp "$B/last.err" "$B/$mode-$i.err"
    fi
  done
  echo "$mode: runs=$RUNS ok=$ok hangs=$hangs wrong=$wrong orphans=$orphans"
  total_fail=$((total_fail + hangs + wrong + orphans))
done
[ "$total_fail" -eq 0 ]
