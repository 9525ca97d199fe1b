#!/usr/bin/env bash
# Three-way recovery benchmark (issue 5, item 6; the Reinit++ comparison):
# bench/recovery (one checkpointed Allreduce iteration; rank VICTIM SIGKILLs
# itself before iteration FAIL_AT) recovered by
#   (a) reinit    ftmpirun --on-failure reinit       (global restart, mpi.Reinit)
#   (b) ulfm      ftmpirun --on-failure continue     (revoke, shrink, spawn, merge, split)
#   (c) relaunch  ftmpirun --restart-on-failure=1    (the whole job again)
# Builds once, then RUNS rounds; each round runs every NP and, per NP, the
# three modes in an order that rotates from round to round (interleaved, so
# that the machine's noise falls on all three alike). Every run must end
# with the failure-free "result:" line of its NP.
#
# Output:
#   stdout                          every JSON line (with "run" and "same_result"), then the tables
#   bench/results/recovery-<date>.jsonl, .md   the lines; the median tables and ratios
#   bench/build/recovery/logs/<date>/          stdout and stderr of every launch
#
# Usage: bench/recovery.sh   [NPS="4 8 16 32"] [RUNS=9] [M=4096] [ITERS=60]
#                            [EVERY=10] [FAIL_AT=35] [VICTIM=1] [TAG=name]
set -uo pipefail
cd "$(dirname "$0")/.."
NPS=${NPS:-4 8 16 32}
RUNS=${RUNS:-9}
M=${M:-4096}
ITERS=${ITERS:-60}
EVERY=${EVERY:-10}
FAIL_AT=${FAIL_AT:-35}
VICTIM=${VICTIM:-1}
LIMIT=${LIMIT:-60s}
B=${BUILD:-bench/build}/recovery
DATE=$(date +%Y%m%d-%H%M%S)
TAG=${TAG:-recovery-$DATE}
OUT=bench/results/$TAG
LOGS=$B/logs/$DATE
mkdir -p "$B" "$LOGS" bench/results
echo "building into $B" >&2
go build -o "$B/ftmpirun" ./cmd/ftmpirun || exit 1
go build -o "$B/recovery" ./bench/recovery || exit 1
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT

# ms converts a Go duration (850µs, 15.394ms, 1.2s) to milliseconds.
ms() { awk -v d="$1" 'BEGIN {
  if (d ~ /µs$/) { sub(/µs$/, "", d); printf "%.3f", d / 1000 }
  else if (d ~ /ms$/) { sub(/ms$/, "", d); printf "%.3f", d }
  else if (d ~ /s$/) { sub(/s$/, "", d); printf "%.3f", d * 1000 }
  else print "null" }'; }

launchflags() {
  case $1 in
    reinit) echo "--on-failure reinit" ;;
    ulfm) echo "--on-failure continue" ;;
    relaunch) echo "--restart-on-failure=1" ;;
  esac
}

APP=(-m "$M" -iters "$ITERS" -every "$EVERY" -victim "$VICTIM")
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
status=0
declare -A want
for np in $NPS; do
  want[$np]=$("$B/ftmpirun" -n "$np" --timeout "$LIMIT" "$B/recovery" "${APP[@]}" -mode relaunch -fail-at 0 \
             -dir "$D/ref-$np" 2>"$LOGS/ref-np$np.err" | grep '^result:')
  if [ -z "${want[$np]}" ]; then echo "FAILED: failure-free reference run at np $np" >&2; status=1; fi
done

: > "$OUT.jsonl"
MODES=(reinit ulfm relaunch)
for run in $(seq "$RUNS"); do
  for np in $NPS; do
    for k in 0 1 2; do
      mode=${MODES[$(( (run + k) % 3 ))]}
      dir=$D/$mode-np$np-run$run
      log=$LOGS/$mode-np$np-run$run
      # shellcheck disable=SC2046
      timeout 120 "$B/ftmpirun" -n "$np" --timeout "$LIMIT" $(launchflags "$mode") \
        "$B/recovery" "${APP[@]}" -mode "$mode" -fail-at "$FAIL_AT" -dir "$dir" >"$log.out" 2>"$log.err"
      code=$?
      rm -rf "$dir"
      got=$(grep '^result:' "$log.out")
      line=$(grep '^{' "$log.out" | head -1)
      ok=false
      if [ "$code" -eq 0 ] && [ -n "$got" ] && [ "$got" = "${want[$np]}" ]; then ok=true; fi
      if [ "$ok" != true ] || [ -z "$line" ]; then
        echo "FAILED: $mode np $np run $run: exit $code (logs $log.out, $log.err)" >&2
        status=1
        [ -z "$line" ] && continue
      fi
      extra=""
      if [ "$mode" = relaunch ]; then
        # The launcher's view: first failure reported -> every rank gone, -> new ranks started.
        rl=$(grep 'relaunched the job' "$log.err")
        ex=$(ms "$(printf '%s' "$rl" | sed -n 's/.*every rank had exited \([^ ]*\) after the failure.*/\1/p')")
        st=$(ms "$(printf '%s' "$rl" | sed -n 's/.*new ranks started \([^ ]*\) after it.*/\1/p')")
        extra=",\"launcher_exited_ms\":$ex,\"launcher_started_ms\":$st"
      fi
      line=$(printf '%s' "$line" | sed "s/}\$/,\"run\":$run,\"same_result\":$ok$extra}/")
      echo "$line" | tee -a "$OUT.jsonl"
    done
  done
done
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)

{
  echo "# Recovery: Reinit vs ULFM replacement vs relaunch ($TAG)"
  echo
  echo "bench/recovery.sh, NPS=\"$NPS\" RUNS=$RUNS M=$M ITERS=$ITERS EVERY=$EVERY FAIL_AT=$FAIL_AT VICTIM=$VICTIM;"
  echo "$(nproc) cores, load average before $LOAD0, after $LOAD1; $(go version | cut -d' ' -f3-)."
  echo
  "$B/recovery" -summarize "$OUT.jsonl"
} > "$OUT.md" || status=1
echo
cat "$OUT.md"
echo >&2
echo "results: $OUT.jsonl $OUT.md; logs: $LOGS" >&2
exit $status
