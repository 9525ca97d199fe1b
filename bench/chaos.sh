#!/usr/bin/env bash
# Chaos run (issue 4): RUNS consecutive runs of a fault-tolerant example
# under random SIGKILLs (`ftmpirun --chaos`), each bounded by --timeout.
# Every run must end with the failure-free answer or a clean reported
# error; a hang (exit 124) or a leftover process is counted as a failure.
#
# Usage: bench/chaos.sh [RUNS=200] [NP=4] [EXAMPLE=refinement] [MTTF=300ms] [MAXKILLS=2] [POLICY=continue|reinit] [ARGS=...]
set -uo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-200}
NP=${NP:-4}
EXAMPLE=${EXAMPLE:-refinement}
MTTF=${MTTF:-300ms}
MAXKILLS=${MAXKILLS:-2}
POLICY=${POLICY:-continue}
ARGS=${ARGS:-}
B=${BUILD:-bench/build}/chaos
mkdir -p "$B"
go build -o "$B/ftmpirun" ./cmd/ftmpirun || exit 1
go build -o "$B/$EXAMPLE" "./examples/$EXAMPLE" || exit 1

want=$("$B/ftmpirun" -n "$NP" --timeout 60s "$B/$EXAMPLE" $ARGS 2>/dev/null | grep '^result:')
echo "# failure-free: $want" >&2
correct=0 clean=0 wrong=0 hangs=0 orphans=0
for i in $(seq "$RUNS"); do
  mark="chaos-$$-$i"
  out=$(FTMPI_TESTMARK=$mark "$B/ftmpirun" -n "$NP" --on-failure "$POLICY" --timeout 60s \
        --chaos "seed=$i,mttf=$MTTF,max=$MAXKILLS" "$B/$EXAMPLE" $ARGS 2>/tmp/chaos-$$.err)
  code=$?
  got=$(printf '%s\n' "$out" | grep '^result:' | tail -1)
  left=$(grep -l "FTMPI_TESTMARK=$mark" /proc/[0-9]*/environ 2>/dev/null | wc -l)
  if [ "$left" -gt 0 ]; then orphans=$((orphans+1)); fi
  if [ "$code" -eq 124 ]; then
    hangs=$((hangs+1)); echo "# run $i (seed $i): HANG" >&2
  elif [ "$code" -eq 0 ] && [ "$got" = "$want" ]; then
    correct=$((correct+1))
  elif [ "$code" -ne 0 ] && [ -s /tmp/chaos-$$.err ]; then
    clean=$((clean+1)); echo "# run $i (seed $i): exit $code: $(tail -1 /tmp/chaos-$$.err)" >&2
    cp /tmp/chaos-$$.err "$B/run-$i.err" # kept for diagnosis
  else
    wrong=$((wrong+1)); echo "# run $i (seed $i): WRONG exit $code: $got" >&2
  fi
done
rm -f /tmp/chaos-$$.err
printf '{"name":"chaos","example":"%s","np":%d,"runs":%d,"mttf":"%s","max_kills":%d,"correct":%d,"clean_error":%d,"wrong":%d,"hangs":%d,"orphans":%d}\n' \
  "$EXAMPLE" "$NP" "$RUNS" "$MTTF" "$MAXKILLS" "$correct" "$clean" "$wrong" "$hangs" "$orphans"
[ "$wrong" -eq 0 ] && [ "$hangs" -eq 0 ] && [ "$orphans" -eq 0 ]
